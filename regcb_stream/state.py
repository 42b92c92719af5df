"""What a model file saves of an object: each class states it, by names of its own.

A class that model files hold lists its saved state in ``SAVED``: each name the file uses,
with the attribute that holds it (the file's names are the format; the attributes may
change). ``state()`` gives that state as a dict (also a diagnostic: the tests compare two
oracles by it), and ``from_state`` builds the object back from one, without running its
constructor or any code of the file (``restored`` derives what the state does not
hold); ``TRANSIENT`` gives the attributes that are not
saved (caches) their value in an object built back (a copy of it, for each object), and
``ADDED`` the value of a name added to ``SAVED`` after model files of the format were
written, in an object built back from one of those files.

>>> class Counter(Stateful):
...     SAVED = {"count": "_n"}
...     def __init__(self):
...         self._n = 0
>>> counter = Counter()
>>> counter._n = 3
>>> counter.state(), Counter.from_state({"count": 3})._n
({'count': 3}, 3)
"""

from __future__ import annotations

import copy
from typing import ClassVar


class Stateful:
    """``state`` and ``from_state`` by ``SAVED`` (see the module docstring)."""

    SAVED: ClassVar[dict[str, str]] = {}
    TRANSIENT: ClassVar[dict[str, object]] = {}
    ADDED: ClassVar[dict[str, object]] = {}

    def state(self) -> dict:
        """The saved state: each of ``SAVED``'s names and its value."""
        attributes = vars(self)
        return {name: attributes[attribute] for name, attribute in self.SAVED.items()}

    @classmethod
    def from_state(cls, state: dict):
        """The object a ``state`` describes (a ``KeyError`` for a name it lacks, unless
        the name is in ``ADDED``)."""
        obj = cls.__new__(cls)
        attributes = vars(obj)
        for name, attribute in cls.SAVED.items():
            attributes[attribute] = (copy.copy(cls.ADDED[name])
                                     if name in cls.ADDED and name not in state else state[name])
        attributes.update({name: copy.copy(value) for name, value in cls.TRANSIENT.items()})
        obj.restored()
        return obj

    def restored(self) -> None:
        """Derive what the state does not hold, in an object built back from it."""
