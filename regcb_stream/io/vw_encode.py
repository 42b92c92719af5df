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
`AdfEncoder.encode_block` does the same for the shared lines of a block of ADF examples.

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
    DEFAULT_NS,
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
    """Encoded lines (or ADF examples): feature rows, VW's feature count of each, and the
    lines that are not valid VW features (line index -> the error; their rows are
    empty)."""

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
        if self.interactions:
            return self._finish(n, [], np.ones(n, bool), bodies)
        if n >= MIN_BLOCK:
            groups, slow = _tokenize(bodies, self._template)
            return self._finish(n, groups, slow, bodies)
        lines = [self._line(body) for body in bodies]  # a few (interactive use): one by one
        if n == 1 and lines[0] is not None:
            columns, values = lines[0]
            value = np.array([values])
            return EncodedBlock(EncodedRows(columns[None].copy(), value),
                                np.array([len(values) - values.count(0.0)]), {})
        groups = [([i], line[0], np.array([line[1]])) for i, line in enumerate(lines)
                  if line is not None]
        return self._finish(n, groups, np.array([line is None for line in lines]), bodies)

    def _line(self, body: str) -> tuple[np.ndarray, list[float]] | None:
        """Columns and values of one line by its template, or None where the reference
        parser must decide (the same cases `_tokenize` leaves to it)."""
        if not (body.isascii() and body.isprintable()):
            return None
        names, values = [], []
        for token in ("|" + body.replace("|", " |")).split(" "):
            name, colon, text = token.partition(":")
            names.append(name)
            if colon:
                if not name or name[0] == "|" or "_" in text:
                    return None  # anonymous feature, namespace scale, or VW would refuse
                try:
                    value = float(text)
                except ValueError:
                    return None
                if value - value != 0.0 or (value and not FLOAT32_MIN <= abs(value)
                                            <= FLOAT32_MAX):
                    return None
                values.append(value)
            elif name and name[0] != "|":
                values.append(1.0)
        template = self._template(tuple(names))
        return None if template is None else (template[1], values)

    def _template(self, names: tuple[str, ...]) -> tuple | None:
        """Positions of a line's feature tokens and their columns, or None when a feature
        repeats (the reference path sums it)."""
        def make():
            positions, namespaces = _layout(names)
            keys = [name if namespace == DEFAULT_NS else f"{namespace}^{name}"
                    for namespace, feats in namespaces for name in feats]
            if len(set(keys)) < len(keys):
                return None
            return positions, np.array(self._columns(keys), np.intp)
        return _memo(self._templates, names, make)

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


def _tokenize(bodies: list[str], template) -> tuple[list, np.ndarray]:
    """Tokenize a block of feature texts with one ``split``, parse every value in one numpy
    call, and group the lines by their sequence of names.

    ``template(names)`` maps a line's name tokens (``"|ns"`` for a namespace, a feature
    name, ``""`` between two spaces) to ``(positions of its feature tokens, payload)``, or
    None. Returns the groups ``(lines, payload, values at the positions)`` and a mask of
    the lines left to the reference parser: namespace scales, anonymous features, tabs or
    non-ASCII text, a value numpy and VW would read differently, no template, or too many
    distinct name sequences in the block.
    """
    n = len(bodies)
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
        groups = _match(np.arange(n), names.reshape(shape), values.reshape(shape), slow,
                        template)
    else:
        starts = np.cumsum(counts) - counts
        for count in np.unique(counts).tolist():
            rows = np.flatnonzero(counts == count)
            at = starts[rows, None] + np.arange(count)
            groups += _match(rows, names[at], values[at], slow, template)
    return groups, slow


def _match(rows, names, values, slow, template) -> list:
    """Group lines of one token count by their names; unmatched lines become slow."""
    groups, left = [], np.flatnonzero(~slow[rows])
    for _ in range(MAX_TEMPLATES):
        if not left.size:
            break
        first = names[left[0]]
        same = left[(names[left] == first).all(axis=1)]
        left = np.setdiff1d(left, same, assume_unique=True)
        found = template(tuple(first.tolist()))
        if found is None:
            slow[rows[same]] = True
        else:
            positions, payload = found
            groups.append((rows[same], payload, values[same][:, positions]))
    slow[rows[left]] = True
    return groups


def _layout(names: tuple[str, ...]) -> tuple[np.ndarray, tuple]:
    """Positions of a tokenized line's features, and its namespaces as ``(name, feature
    names)`` (as `vw_features.parse_namespaces` names them, empty ones omitted)."""
    positions, namespaces, feats = [], [], []
    for position, name in enumerate(names):
        if name.startswith("|"):
            feats = []
            namespaces.append((name[1:] or DEFAULT_NS, feats))
        elif name:
            feats.append(name)
            positions.append(position)
    return (np.array(positions, np.intp),
            tuple((namespace, tuple(feats)) for namespace, feats in namespaces if feats))


def _memo(cache: dict, key, make):
    """``cache[key]``, made by ``make()`` if missing (the cache is cleared when full)."""
    if key in cache:
        return cache[key]
    if len(cache) >= 4096:
        cache.clear()
    value = cache[key] = make()
    return value


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
        names = tuple((name, tuple([f for f, _ in feats])) for name, feats in shared)
        template = self._template(names, actions)
        if template is None:
            return self._reference(shared, actions)
        index, coef, first, second, n_features = template
        s = np.array([1.0, *[v for _, feats in shared for _, v in feats]])
        return EncodedRows(index, coef * s[first] * s[second]), n_features

    def encode_block(self, shared: list, actions: list[tuple]) -> EncodedBlock:
        """Rows ``(n, K, L)`` of a block of examples with K action lines each, whose shared
        lines are feature text (``iter_adf(..., shared_text=True)``; None: no shared
        line). The shared lines are tokenized together (as `TextEncoder` does); then each
        (shared names, action lines) layout costs one vectorized product. Examples whose
        shared text is not valid VW features are in ``errors``.

        >>> keys = {}
        >>> encoder = AdfEncoder(lambda names: [keys.setdefault(k, len(keys) + 1)
        ...                                     for k in names], ["sa"])
        >>> actions = ((("a", (("i", 1.0),)),), (("a", (("j", 1.0),)),))
        >>> block = encoder.encode_block(["s x:2", "s x:3 |t y", "s :1"], [actions] * 3)
        >>> block.rows.value[1].tolist(), block.n_features.tolist()
        ([[3.0, 1.0, 1.0, 3.0], [3.0, 1.0, 1.0, 3.0]], [8, 10, 8])
        """
        n, k = len(actions), len(actions[0])
        bodies = ["" if body is None else body for body in shared]
        groups, slow = (_tokenize(bodies, _layout) if n >= MIN_BLOCK
                        else ([], np.ones(n, bool)))
        parts, errors, counts = [], {}, {}
        for lines, names, values in groups:
            by_actions: dict[tuple, list[int]] = {}
            for position, line in enumerate(lines.tolist()):
                by_actions.setdefault(actions[line], []).append(position)
            for acts, positions in by_actions.items():
                members = lines[positions]
                template = self._template(names, acts)
                if template is None:
                    slow[members] = True
                    continue
                index, coef, first, second, _ = template
                s = np.hstack([np.ones((len(members), 1)), values[positions]])
                parts.append((members, index, coef * s[:, first] * s[:, second]))
        for i in np.flatnonzero(slow).tolist():
            try:
                features = parse_namespaces(bodies[i]) if shared[i] is not None else None
            except FieldError as error:
                errors[i] = error
                continue
            rows, counts[i] = self.encode(features, actions[i])
            parts.append(([i], rows.index, rows.value[None]))
        width = max([index.shape[-1] for _, index, _ in parts] + [1])
        index, value = np.zeros((n, k, width), np.intp), np.zeros((n, k, width))
        for members, columns, values in parts:
            index[members, :, : columns.shape[-1]] = columns
            value[members, :, : columns.shape[-1]] = values
        n_features = (value != 0).sum(axis=(1, 2)) + self.constant * k
        n_features[list(counts)] = list(counts.values())
        return EncodedBlock(EncodedRows(index, value), n_features, errors)

    def _reference(self, shared, actions) -> tuple[EncodedRows, int]:
        rows = flatten_adf(shared, actions, self.interactions, constant=False)
        n_features = sum(map(len, rows)) + self.constant * len(rows)
        encoded = {i: (self._columns(list(row)), list(row.values())) for i, row in enumerate(rows)}
        return _pad(encoded, len(rows)), n_features

    def _template(self, names: tuple, actions: tuple) -> tuple | None:
        """Columns and ``(coef, i, j)`` per entry of the rows of examples whose shared line
        has the namespaces and feature ``names`` given (``((namespace, (name, ...)),
        ...)``), or None (the reference path)."""
        return _memo(self._templates, (names, actions), lambda: self._make(names, actions))

    def _make(self, names: tuple, actions: tuple) -> tuple | None:
        slots, count = [], 0
        for name, feats in names:
            slots.append((name, tuple((f, _Slot(1.0, count + k + 1)) for k, f in
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
