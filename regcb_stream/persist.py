"""Model files: the whole learner state, saved atomically, loaded back without running code.

A model file is a numpy ``.npz`` archive read with ``allow_pickle=False``: a JSON header
(``format``, ``version``, the stream ``settings``, and the learner as a tree of plain values)
and the learner's numpy arrays beside it. The tree names each object by a class from a fixed
list of this package's own (the learner, its model and explorer, the ridge, bounded and VW
oracles, the feature encoder, the budgets; numpy's random generator by its state), each
with the state its class says it saves (`regcb_stream.state`: ``SAVED``, by names of the
format's own), so loading builds only those, and nothing in the file is ever imported or
called. A stream split in two with a save
and a resume in between gives the same output as one uninterrupted run.

Objects outside that list (a River pipeline, LightGBM trees) are stored only with
``allow_pickle=True``, as pickles inside the archive, with a warning; loading them needs
``allow_pickle=True`` too, and runs their code. A model file of version 6 is refused with
the command that converts it (`regcb_stream.convert`): ``python -m regcb_stream.persist
convert OLD NEW``.

>>> import tempfile, pathlib
>>> from regcb_stream import RegCB
>>> path = pathlib.Path(tempfile.mkdtemp()) / "model.regcb"
>>> save_model(path, RegCB(beta=0.1), {"adf": True})
>>> learner, settings = load_model(path)
>>> learner.beta, settings
(0.1, {'adf': True})

"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import warnings
import zipfile

import numpy as np

FORMAT = "regcb-stream model"
VERSION = 7  # 7: each class's state by its own names (`regcb_stream.state`); 6: no pickle (a
# JSON tree and numpy arrays); 5: hashed features (-b), the bounded ridge oracle
PICKLE_MAGIC = b"\x80"  # how every pickle of protocol 2 and later starts: versions <= 5
CONVERT = "python -m regcb_stream.persist convert"


def _classes() -> dict[str, type]:
    """The classes a model file may name, by name: the only ones loading builds."""
    from regcb_stream.adapt.change import ChangeDetector
    from regcb_stream.adapt.events import DelayedRewards, PendingDecisions
    from regcb_stream.adapt.selection import Losses, ModelSelection
    from regcb_stream.explore.budget import AutoBudget, BudgetSelector, FixedBudget
    from regcb_stream.explore.explorer import Explorer
    from regcb_stream.features.encoder import FeatureEncoder
    from regcb_stream.features.random_features import RandomFeatures
    from regcb_stream.features.rows import ActionRegistry, Rows
    from regcb_stream.features.slot_columns import SlotColumns
    from regcb_stream.learner import RegCB
    from regcb_stream.model import Model, Spec
    from regcb_stream.oracles.base import Capabilities
    from regcb_stream.oracles.blocks import ArrowheadBlocks
    from regcb_stream.oracles.bounded import BoundedRidgeOracle
    from regcb_stream.oracles.ridge import RidgeOracle
    from regcb_stream.oracles.vw import VWOracle, VWState

    classes = (RegCB, Model, Spec, ModelSelection, Losses, Rows, ActionRegistry,
               FeatureEncoder, SlotColumns, RandomFeatures, Explorer, FixedBudget, AutoBudget,
               BudgetSelector, ChangeDetector, DelayedRewards, PendingDecisions, Capabilities,
               RidgeOracle, BoundedRidgeOracle, ArrowheadBlocks, VWOracle, VWState)
    return {cls.__qualname__: cls for cls in classes}


_TYPES = {t.__name__: t for t in (int, float, str, bool, bytes, type(None), np.int8, np.int16,
                                  np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
                                  np.float32, np.float64, np.bool_, np.str_)}


class _Writer:
    """A learner as a JSON tree plus arrays (and, if allowed, pickles of foreign objects)."""

    def __init__(self, allow_pickle: bool):
        self.arrays: list[np.ndarray] = []
        self.allow_pickle = allow_pickle
        self.classes = {cls: name for name, cls in _classes().items()}
        self.refs: dict[int, int] = {}  # id of an object or array -> its number
        self.kept: list = []  # (those objects, alive while writing)

    def tree(self, obj):
        if obj is None or isinstance(obj, (bool, str)) or type(obj) in (int, float):
            return obj
        if id(obj) in self.refs:  # the same object again: a reference to it
            return {"$ref": self.refs[id(obj)]}
        if isinstance(obj, np.ndarray) and not obj.dtype.hasobject:
            self._number(obj)
            self.arrays.append(obj)
            return {"$array": len(self.arrays) - 1}
        if isinstance(obj, np.generic):
            return {"$scalar": type(obj).__name__, "value": obj.item()}
        if isinstance(obj, (list, tuple, set, frozenset)):
            items = [self.tree(v) for v in obj]
            return items if type(obj) is list else {f"${type(obj).__name__}": items}
        if type(obj) is dict:
            return {"$dict": [[self.tree(k), self.tree(v)] for k, v in obj.items()]}
        if isinstance(obj, type) and obj.__name__ in _TYPES and _TYPES[obj.__name__] is obj:
            return {"$type": obj.__name__}
        if isinstance(obj, np.random.Generator):
            return {"$generator": self.tree(obj.bit_generator.state)}
        if type(obj) in self.classes:
            self._number(obj)
            return {"$object": self.classes[type(obj)], "state": self.tree(obj.state())}
        return self.foreign(obj)

    def _number(self, obj) -> None:
        """Number an array or object as the reader will (in the order they are met)."""
        self.refs[id(obj)] = len(self.refs)
        self.kept.append(obj)

    def foreign(self, obj):
        """An object no model file may name: a pickle inside the archive, if allowed."""
        name = f"{type(obj).__module__}.{type(obj).__qualname__}"
        if not self.allow_pickle:
            raise ValueError(f"a {name} cannot be stored without pickle: pass allow_pickle=True "
                             "to store it as one (loading it then needs allow_pickle=True "
                             "too, and runs its code)")
        import pickle

        warnings.warn(f"model file: {name} stored as a pickle; loading it runs its code",
                      stacklevel=4)
        self.arrays.append(np.frombuffer(pickle.dumps(obj), np.uint8))
        return {"$pickle": len(self.arrays) - 1, "class": name}


class _Refused(ValueError):
    """A model file refused by what it names (a class, a pickle), said as it is."""


class _Reader:
    """The inverse of `_Writer`: builds only the listed classes."""

    def __init__(self, arrays, allow_pickle: bool, path):
        self.arrays, self.allow_pickle, self.path = arrays, allow_pickle, path
        self.classes = _classes()
        self.refs: list = []  # the objects and arrays built, in the writer's numbering

    def value(self, tree):
        if not isinstance(tree, (dict, list)):
            return tree
        if isinstance(tree, list):
            return [self.value(v) for v in tree]
        (key, *_), get = tree, tree.get
        if key == "$ref":
            return self.refs[get("$ref")]
        if key == "$array":
            self.refs.append(self.arrays[f"a{get('$array')}"])
            return self.refs[-1]
        if key == "$scalar":
            return self._named(_TYPES, get("$scalar"), "type")(get("value"))
        if key in ("$tuple", "$set", "$frozenset"):
            return {"$tuple": tuple, "$set": set, "$frozenset": frozenset}[key](
                self.value(v) for v in tree[key])
        if key == "$dict":
            return {self.value(k): self.value(v) for k, v in tree[key]}
        if key == "$type":
            return self._named(_TYPES, get("$type"), "type")
        if key == "$generator":
            state = self.value(get("$generator"))
            generator = np.random.Generator(self._named(
                {"PCG64": np.random.PCG64}, state["bit_generator"], "generator")())
            generator.bit_generator.state = state
            return generator
        if key == "$object":
            cls = self._named(self.classes, get("$object"), "class")
            number = len(self.refs)
            self.refs.append(None)  # (numbered as the writer did: before what it holds)
            state = self.value(get("state"))
            if not isinstance(state, dict):
                raise TypeError(f"the state of a {cls.__name__} is not a table")
            self.refs[number] = obj = cls.from_state(state)
            return obj
        if key == "$pickle":
            if not self.allow_pickle:
                raise _Refused(f"{self.path} holds a pickled {get('class')}, which runs code "
                                 "when loaded: load it with allow_pickle=True if you trust it")
            import pickle

            return pickle.loads(self.arrays[f"a{get('$pickle')}"].tobytes())
        raise _Refused(f"{self.path}: unknown entry {key!r} in the model")

    def _named(self, table: dict, name, what: str):
        if name not in table:
            raise _Refused(f"{self.path}: the model names {what} {name!r}, which is not one "
                             "this regcb-stream builds")
        return table[name]


def save_model(path: str | os.PathLike, learner, settings: dict,
               allow_pickle: bool = False) -> None:
    """Write the model to a temporary file beside ``path``, then rename it over ``path``:
    a crash mid-write leaves the old file (or none), never a truncated one; the file gets
    the permissions of the user's umask. Processes saving to one path at once each rename
    a whole file of their own: the last rename wins. The temporary files that killed saves
    left are removed (`remove_stale_temporaries`). Objects outside this package's own need
    ``allow_pickle`` (see the module docstring)."""
    data = dumps(learner, settings, allow_pickle)
    fd, tmp = _locked_temporary(os.fspath(path))
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        view = memoryview(data)
        while view:  # (a write may take part of it)
            view = view[os.write(fd, view):]
        os.fsync(fd)
        os.replace(tmp, path)  # (still locked: no other save takes it for a stale one)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    finally:
        os.close(fd)
    remove_stale_temporaries(path)


def _locked_temporary(path: str) -> tuple[int, str]:
    """A new file ``NAME.XXXXXXXX.tmp`` beside ``path``, open and locked (``flock``) while
    this process writes it. (A save that removes stale temporaries may have taken it in the
    moment between its creation and the lock: then it is gone, and another is made.)"""
    import fcntl
    import tempfile  # here: it costs the command's start-up a few milliseconds

    folder, name = os.path.split(path)
    while True:
        fd, tmp = tempfile.mkstemp(prefix=name + ".", suffix=".tmp", dir=folder or ".")
        fcntl.flock(fd, fcntl.LOCK_EX)
        with contextlib.suppress(OSError):
            if os.stat(tmp).st_ino == os.fstat(fd).st_ino:
                return fd, tmp
        os.close(fd)


def remove_stale_temporaries(path: str | os.PathLike) -> None:
    """Remove the temporary files ``NAME.*.tmp`` that saves of ``path`` killed before their
    rename left behind: those no process holds locked (a save in flight holds its own)."""
    import fcntl
    import glob

    folder, name = os.path.split(os.path.abspath(path))
    for stale in glob.glob(os.path.join(glob.escape(folder), glob.escape(name) + ".*.tmp")):
        try:
            fd = os.open(stale, os.O_RDONLY)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if os.stat(stale).st_ino == os.fstat(fd).st_ino:  # (still that file)
                os.unlink(stale)
        except OSError:  # locked: a save in flight
            pass
        finally:
            os.close(fd)


def dumps(learner, settings: dict, allow_pickle: bool = False) -> bytes:
    """A model file's bytes (what `save_model` writes)."""
    writer = _Writer(allow_pickle)
    header = {"format": FORMAT, "version": VERSION, "settings": writer.tree(settings),
              "learner": writer.tree(learner)}
    buffer = io.BytesIO()
    np.savez(buffer, header=np.frombuffer(json.dumps(header).encode(), np.uint8),
             **{f"a{i}": array for i, array in enumerate(writer.arrays)})
    return buffer.getvalue()


def loads(data: bytes, allow_pickle: bool = False, name: str = "the model"):
    """``(learner, settings)`` from a model file's bytes (`load_model`)."""
    return _load(io.BytesIO(data), data[:2], allow_pickle, name)


def load_model(path: str | os.PathLike, allow_pickle: bool = False):
    """Return ``(learner, settings)`` from a model file, or raise ``ValueError`` saying why
    the file is not one that loads (a pickle of an earlier version is never unpickled)."""
    with open(path, "rb") as source:
        head = source.read(2)
    return _load(path, head, allow_pickle, path)


def _load(source, head: bytes, allow_pickle: bool, label):
    if head[:1] == PICKLE_MAGIC:
        raise ValueError(f"{label} is a model file of an earlier regcb-stream (a pickle, which "
                         f"can run code when loaded): it does not load")
    try:
        with np.load(source, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
        header = json.loads(arrays.pop("header").tobytes())
    except RecursionError:
        raise ValueError(f"{label} is not a regcb-stream model file (its header is nested "
                         "too deeply)") from None
    except (OSError, ValueError, KeyError, EOFError, UnicodeDecodeError, MemoryError,
            zipfile.BadZipFile) as error:
        raise ValueError(f"{label} is not a regcb-stream model file ({error})") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise ValueError(f"{label} is not a regcb-stream model file")
    if header.get("version") == VERSION - 1:
        raise ValueError(f"{label} has model format version {VERSION - 1}: convert it once "
                         f"with `{CONVERT} {label} NEW`")
    if header.get("version") != VERSION:
        raise ValueError(f"{label} has model format version {header.get('version')}, "
                         f"this regcb-stream reads version {VERSION}")
    return _build(header, _Reader(arrays, allow_pickle, label), label)


def _build(header: dict, reader: _Reader, label):
    """The learner and settings of a model file's header: refused (one ``ValueError``) when
    any part of them does not build (a file damaged, or written by hand: loading must not
    fail in any other way), or the learner is not a ``RegCB``."""
    try:
        settings = reader.value(header["settings"])  # (in the order they were written)
        learner = reader.value(header["learner"])
    except _Refused:
        raise
    except RecursionError:
        raise ValueError(f"{label} is not a regcb-stream model file (its header is nested "
                         "too deeply)") from None
    except Exception as error:  # noqa: BLE001 (whatever a damaged state raises)
        raise ValueError(f"{label} is a damaged regcb-stream model file "
                         f"({type(error).__name__}: {error})") from None
    if type(learner) is not reader.classes["RegCB"] or not isinstance(settings, dict):
        raise ValueError(f"{label} is a damaged regcb-stream model file (it holds no RegCB "
                         "learner and its settings)")
    return learner, settings


def convert(old: str, new: str) -> None:
    """Save a model file of format 6 in this format (`regcb_stream.convert`)."""
    from regcb_stream import convert as format6

    with open(old, "rb") as source:
        data = source.read()
    if data[:1] == PICKLE_MAGIC:
        raise ValueError(f"{old} is a model file of format 5 or before (a pickle): not "
                         "converted")
    learner, settings = format6.read(data, old)
    save_model(new, format6.learner(learner), settings)


def main(argv: list[str] | None = None) -> int:
    """``python -m regcb_stream.persist convert OLD NEW``."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 3 or args[0] != "convert":
        print(f"usage: {CONVERT} OLD NEW  (OLD: a model file of format 6)", file=sys.stderr)
        return 2
    try:
        convert(args[1], args[2])
    except (OSError, ValueError, KeyError, TypeError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
