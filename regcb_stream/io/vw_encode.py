"""VW feature text to a learner's feature columns, a block of lines at a time.

The reference parser (`vw_features.parse_namespaces`, then `flatten`) builds a tuple and a
dict key per feature: ~25 us for a line of 16 features, more than the learner spends on it.
Streams repeat their feature names line after line with new values, so `TextEncoder`
tokenizes a whole block with one ``split`` and numpy string functions, matches each line's
sequence of names against *templates* (name sequences resolved to columns once), and parses
every value in one numpy call. A line it does not handle this way (namespace scales,
anonymous features, tabs or non-ASCII text, a value numpy and VW would read differently, a
feature repeated in the line, too many distinct templates in one block) goes through the
reference parser, so the result is always the reference's (the tests compare the two on
fuzzed input); zero-valued features only differ in that a template registers their column.

>>> keys = {}
>>> encoder = TextEncoder(lambda names: [keys.setdefault(k, len(keys) + 1) for k in names])
>>> block = encoder.encode(["s a:2 b:0.5", "s a:1 b:4 |t c", "s :3"])
>>> block.rows.index.tolist()
[[1, 2, 0], [1, 2, 3], [4, 0, 0]]
>>> block.rows.value.tolist()
[[2.0, 0.5, 0.0], [1.0, 4.0, 1.0], [3.0, 0.0, 0.0]]
>>> sorted(keys), block.n_features.tolist(), block.errors
(['s^0', 's^a', 's^b', 't^c'], [2, 3, 1], {})
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from regcb_stream.features import EncodedRows
from regcb_stream.io.vw_features import (
    FLOAT32_MAX,
    FLOAT32_MIN,
    FieldError,
    flatten,
    flatten_adf,
    parse_namespaces,
)

STRING = np.dtypes.StringDType()
_COLON = np.array(":", dtype=STRING)
MAX_TEMPLATES = 16  # distinct name sequences tried per token count and block
MIN_BLOCK = 8  # smaller blocks take the reference path: numpy's calls cost more
Columns = Callable[[list[str]], list[int]]


@dataclass(frozen=True)
class EncodedBlock:
    """Encoded lines: feature rows, nonzero features per line, and the lines that are not
    valid VW features (line index -> the error; their rows are empty)."""

    rows: EncodedRows
    n_features: np.ndarray
    errors: dict[int, FieldError]


class TextEncoder:
    """Feature text of VW lines (the text after the first ``|``) to ``EncodedRows``.

    Parameters
    ----------
    columns
        Maps flat feature keys (``"ns^name"``, ``"name"`` in the default namespace, as
        `vw_features.flatten` makes them) to columns, registering new keys.
    interactions
        VW's ``-q`` crosses: lines with crosses take the reference path.
    """

    def __init__(self, columns: Columns, interactions: Iterable[str] = ()):
        self._columns = columns
        self.interactions = tuple(interactions)
        self._templates: dict[tuple[str, ...], tuple | None] = {}

    def encode(self, bodies: list[str]) -> EncodedBlock:
        """Encode the feature text of a block of lines."""
        n = len(bodies)
        if self.interactions or n < MIN_BLOCK:
            return self._finish(n, [], np.ones(n, bool), bodies)
        lines = ["|" + body.replace("|", " |") for body in bodies]
        counts = np.fromiter((line.count(" ") + 1 for line in lines), np.intp, n)
        text = " ".join(lines)
        tokens = np.array(text.split(" "), dtype=STRING)
        names, separator, numbers = np.strings.partition(tokens, _COLON)
        line_of = np.repeat(np.arange(n), counts)
        slow = np.zeros(n, bool)
        if not (text.isascii() and text.isprintable()):
            slow[[i for i, body in enumerate(bodies)
                  if not (body.isascii() and body.isprintable())]] = True
        valued = separator == ":"
        # a scaled namespace (``|ns:2``) or an anonymous feature (``:3``)
        slow[line_of[valued & (np.strings.startswith(tokens, "|") | (names == ""))]] = True
        values = np.ones(len(tokens))
        valued &= ~slow[line_of]
        parsed, bad = _numbers(numbers[valued], "_" in text)
        values[valued] = parsed
        slow[line_of[valued][bad]] = True
        groups = []
        if (counts == counts[0]).all():  # one token count: the rows are a reshape away
            shape = (n, int(counts[0]))
            groups = self._match(np.arange(n), names.reshape(shape), values.reshape(shape), slow)
        else:
            starts = np.cumsum(counts) - counts
            for count in np.unique(counts).tolist():
                rows = np.flatnonzero(counts == count)
                at = starts[rows, None] + np.arange(count)
                groups += self._match(rows, names[at], values[at], slow)
        return self._finish(n, groups, slow, bodies)

    def _match(self, rows, names, values, slow) -> list:
        """Assign templates to lines of one token count; unmatched lines become slow."""
        groups, left = [], np.flatnonzero(~slow[rows])
        for _ in range(MAX_TEMPLATES):
            if not left.size:
                break
            first = names[left[0]]
            same = left[(names[left] == first).all(axis=1)]
            left = np.setdiff1d(left, same, assume_unique=True)
            template = self._template(tuple(first.tolist()))
            if template is None:
                slow[rows[same]] = True
            else:
                positions, columns = template
                groups.append((rows[same], columns, values[same][:, positions]))
        slow[rows[left]] = True
        return groups

    def _template(self, names: tuple[str, ...]) -> tuple | None:
        """Positions of a line's feature tokens and their columns, or None when a feature
        repeats (the reference path sums it)."""
        if names in self._templates:
            return self._templates[names]
        keys, positions, namespace = [], [], ""
        for position, name in enumerate(names):
            if name.startswith("|"):
                namespace = name[1:]
            elif name:
                keys.append(f"{namespace}^{name}" if namespace else name)
                positions.append(position)
        template = None
        if len(set(keys)) == len(keys):
            template = np.array(positions, np.intp), np.array(self._columns(keys), np.intp)
        if len(self._templates) >= 4096:
            self._templates.clear()
        self._templates[names] = template
        return template

    def _finish(self, n: int, groups: list, slow: np.ndarray, bodies=None) -> EncodedBlock:
        """Padded rows from the template groups, plus the slow lines by the reference."""
        reference, errors = {}, {}
        for i in np.flatnonzero(slow).tolist():
            try:
                features = flatten(parse_namespaces(bodies[i]), self.interactions, False)
            except FieldError as error:
                errors[i] = error
                continue
            reference[i] = (self._columns(list(features)), list(features.values()))
        width = max([g[1].size for g in groups] + [len(c) for c, _ in reference.values()] + [1])
        rows = _pad(reference, n, width)
        for lines, columns, values in groups:
            rows.index[lines, : columns.size], rows.value[lines, : columns.size] = columns, values
        return EncodedBlock(rows, (rows.value != 0).sum(axis=1), errors)


def _numbers(texts: np.ndarray, underscores: bool) -> tuple[np.ndarray, np.ndarray]:
    """Values of number tokens and a mask of those VW's rules refuse (not finite, outside
    float32's range, ``1_0``, or anything numpy does not read as a number)."""
    try:
        values = texts.astype(np.float64)
    except ValueError:  # some token is not a number: find which, one by one
        values = np.array([_float(t) for t in texts.tolist()])
    bad = ~np.isfinite(values)
    magnitude = np.abs(np.where(bad, 0.0, values))
    bad |= (magnitude != 0) & ((magnitude < FLOAT32_MIN) | (magnitude > FLOAT32_MAX))
    if underscores:
        bad |= np.strings.find(texts, "_") >= 0
    return np.where(bad, 0.0, values), bad


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return float("nan")


class AdfEncoder:
    """The action lines of an ADF example, merged with its shared line and crossed as VW's
    ``-q`` says, to ``EncodedRows`` (one row per action).

    An example's row layout depends only on its shared feature *names* and its action
    lines, which a stream repeats: the layout is built once per such pair (a template) by
    running the reference `flatten_adf` on symbolic shared values, so each value of the
    rows is ``coef * s[i] * s[j]`` of the shared values ``s`` (``s[0] = 1``), and later
    examples cost one vectorized product. Examples whose flattening sums two features into
    one key take the reference path.

    >>> keys = {}
    >>> encoder = AdfEncoder(lambda names: [keys.setdefault(k, len(keys) + 1) for k in names],
    ...                      ["sa"])
    >>> rows, n_features = encoder.encode((("s", (("x", 2.0),)),), [(("a", (("i", 3.0),)),)])
    >>> rows.index.tolist(), rows.value.tolist(), n_features, sorted(keys)
    ([[1, 2, 3]], [[2.0, 3.0, 6.0]], 4, ['a^i', 's^x', 's^x*a^i'])
    """

    def __init__(self, columns: Columns, interactions: Iterable[str] = (),
                 constant: bool = True):
        self._columns = columns
        self.interactions = tuple(interactions)
        self.constant = constant
        self._templates: dict[tuple, tuple | None] = {}

    def encode(self, shared, actions) -> tuple[EncodedRows, int]:
        """Rows of the (shared, action) features and VW's feature count of the example."""
        shared, actions = shared or (), tuple(actions)
        key = (tuple((name, tuple([f for f, _ in feats])) for name, feats in shared), actions)
        template = self._templates.get(key, False)
        if template is False:
            if len(self._templates) >= 1024:
                self._templates.clear()
            template = self._templates[key] = self._template(shared, actions)
        if template is None:
            return self._reference(shared, actions)
        index, coef, first, second, n_features = template
        s = np.array([1.0, *[v for _, feats in shared for _, v in feats]])
        return EncodedRows(index, coef * s[first] * s[second]), n_features

    def _reference(self, shared, actions) -> tuple[EncodedRows, int]:
        rows = flatten_adf(shared, actions, self.interactions, constant=False)
        n_features = sum(map(len, rows)) + self.constant * len(rows)
        encoded = {i: (self._columns(list(row)), list(row.values())) for i, row in enumerate(rows)}
        return _pad(encoded, len(rows)), n_features

    def _template(self, shared, actions) -> tuple | None:
        """Columns and ``(coef, i, j)`` per entry of the rows, or None (reference path)."""
        slots, count = [], 0
        for name, feats in shared:
            slots.append((name, tuple((f, _Slot(1.0, count + k + 1)) for k, (f, _) in
                                      enumerate(feats))))
            count += len(feats)
        try:
            rows = flatten_adf(tuple(slots), actions, self.interactions, constant=False)
            terms = [[_Slot.of(v) for v in row.values()] for row in rows]
        except _NotAMonomial:
            return None
        encoded = _pad({i: (self._columns(list(row)), [1.0] * len(row))
                        for i, row in enumerate(rows)}, len(rows))
        coef, first, second = (np.zeros(encoded.index.shape, t) for t in (float, np.intp, np.intp))
        for r, row in enumerate(terms):
            for c, term in enumerate(row):
                coef[r, c], first[r, c], second[r, c] = term.coef, term.first, term.second
        n_features = sum(map(len, rows)) + self.constant * len(rows)
        return encoded.index, coef, first, second, n_features


class _NotAMonomial(Exception):
    """A symbolic value left the form ``coef * s[i] * s[j]``."""


class _Slot:
    """A symbolic feature value ``coef * s[first] * s[second]`` (``s[0] = 1``): the
    reference flattening only adds a value to 0.0 and multiplies two values."""

    __slots__ = ("coef", "first", "second")

    def __init__(self, coef: float, first: int, second: int = 0):
        self.coef, self.first, self.second = coef, first, second

    @staticmethod
    def of(value) -> _Slot:
        return value if isinstance(value, _Slot) else _Slot(float(value), 0)

    def __mul__(self, other) -> _Slot:
        if not isinstance(other, _Slot):
            return _Slot(self.coef * other, self.first, self.second)
        if self.second or other.second:
            raise _NotAMonomial
        return _Slot(self.coef * other.coef, self.first, other.first)

    __rmul__ = __mul__

    def __radd__(self, other) -> _Slot:
        if other != 0.0:
            raise _NotAMonomial  # two features summed into one key
        return self

    __add__ = __radd__


def _pad(rows: dict[int, tuple[list[int], list[float]]], n: int, width: int = 1) -> EncodedRows:
    """``n`` padded rows, at least ``width`` wide, filled from (columns, values) by row."""
    width = max([len(columns) for columns, _ in rows.values()] + [width])
    index, value = np.zeros((n, width), np.intp), np.zeros((n, width))
    for i, (columns, values) in rows.items():
        index[i, : len(columns)], value[i, : len(values)] = columns, values
    return EncodedRows(index, value)
