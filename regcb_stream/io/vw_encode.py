"""VW feature text to a learner's feature columns, a block of lines at a time.

The reference parser (`vw_features.parse_namespaces`, then `flatten`) builds a tuple and a
dict key per feature: ~25 us for a line of 16 features, more than the learner spends on it.
Streams repeat their feature names line after line with new values, so the compiled
tokenizer (``_scan.c``) groups a block's lines by their sequence of names and parses every
value; each group's names are resolved to columns once (a *template*). A line it does not
handle this way (namespace scales, anonymous features, tabs or non-ASCII text, a value that
is not a plain decimal number, a feature repeated in the line) goes through the reference
parser, so the result is always the reference's (the tests compare the two on fuzzed
input); zero-valued features only differ in that a template registers their column.
`AdfEncoder.encode_block` does the same for the shared lines of a block of ADF examples.

With ``hash_bits`` (VW's ``-b``), features are keyed by VW's hashes (`vw_features.HashKeys`)
and ``columns`` maps hashes to columns; `TextEncoder` then reads lines without crosses in one
compiled pass (``_scan.hashes``), whatever their names, with no templates to build. Features
whose hashes share a slot share a column: their values add up, as in VW.

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

from collections.abc import Iterable

import numpy as np

from regcb_stream.io.vw_features import (
    DEFAULT_NS,
    FieldError,
    HashKeys,
    Namespaces,
    flatten,
    parse_namespaces,
)

try:
    from regcb_stream.io import _scan
except ImportError:  # not built (a source tree without `pip install`): the reference parser
    _scan = None
from regcb_stream.io.vw_blocks import (
    Columns,
    EncodedBlock,
    layout_of,
    memo,
    merge_repeats,
    pad_rows,
    scan_groups,
)


class TextEncoder:
    """Feature text of VW lines (the text after the first ``|``) to ``EncodedRows``.

    Parameters
    ----------
    columns
        Maps flat feature keys (``"ns^name"``, ``"name"`` in the default namespace, as
        `vw_features.flatten` makes them) to columns, registering new keys.
    interactions
        VW's ``-q`` crosses: lines with crosses take the reference path.
    hash_bits
        Key features by VW's hashes (``columns`` then maps hashes), read ``-b`` bits.
    filters
        VW's namespace filters (``--ignore``, ``--keep``, ``--ignore_linear``): with
        ``hash_bits``, the compiled pass's tokens of the namespaces they drop are dropped
        (by their initials, in numpy); without, lines take the reference path.
    """

    def __init__(self, columns: Columns, interactions: Iterable[str] = (),
                 hash_bits: int | None = None, filters: Namespaces | None = None):
        self._columns = columns
        self.interactions = tuple(interactions)
        self.filters = filters
        self._kept = None if filters is None else np.array(  # by a namespace's initial
            [not filters.drops(chr(c)) and chr(c) not in filters.ignore_linear
             for c in range(256)])
        self.hash_bits = hash_bits
        self._keys = None if hash_bits is None else HashKeys()
        self._templates: dict[tuple[str, ...], tuple | None] = {}

    @property
    def n_templates(self) -> int:
        """The name sequences resolved to columns so far (one template each)."""
        return len(self._templates)

    def encode(self, bodies: list[str]) -> EncodedBlock:
        """Encode the feature text of a block of lines."""
        if self.interactions or (self._keys and _scan is None) or (
                self.filters and not self._keys):
            return self._finish(len(bodies), [], np.ones(len(bodies), bool), bodies)
        if self._keys:
            return self._encode_hashed(bodies)
        groups, slow = scan_groups(bodies)
        parts = []
        for lines, names, values in groups:
            template = self._template(names)
            if template is None:
                slow[lines] = True
            else:
                parts.append((lines, template, values))
        return self._finish(len(bodies), parts, slow, bodies)

    def _template(self, names: tuple[str, ...]) -> np.ndarray | None:
        """The columns of a line's features, from its tokens' names, or None when a
        feature repeats (the reference path sums it)."""
        def make():
            keys = [name if namespace == DEFAULT_NS else f"{namespace}^{name}"
                    for namespace, feats in layout_of(names) for name in feats]
            if len(set(keys)) < len(keys):
                return None
            return np.array(self._columns(keys), np.intp)
        return memo(self._templates, names, make)

    def _encode_hashed(self, bodies: list[str]) -> EncodedBlock:
        """Every line's hashes in one compiled pass (those the filters keep); the slow
        lines by the reference."""
        offsets, initials, hashes, values, slow = _scan.hashes(list(bodies))
        offsets, values = np.frombuffer(offsets, np.int64), np.frombuffer(values, float)
        hashes, slow = np.frombuffer(hashes, np.uint32), np.frombuffer(slow, bool).copy()
        line = np.repeat(np.arange(len(bodies)), np.diff(offsets))
        if self._kept is not None:
            kept = self._kept[np.frombuffer(initials, np.uint8)]
            hashes, values, line = hashes[kept], values[kept], line[kept]
            counts = np.bincount(line, minlength=len(bodies))
            offsets = np.r_[0, np.cumsum(counts)]
        columns = np.asarray(self._columns(hashes), np.intp)
        position = np.arange(len(line)) - offsets[line]
        return self._finish(len(bodies), [(line, position, columns, values)], slow, bodies)

    def _finish(self, n: int, groups: list, slow: np.ndarray, bodies=None) -> EncodedBlock:
        """Padded rows from the template groups (or the hashed lines' entries), plus the
        slow lines by the reference."""
        reference, errors = {}, {}
        for i in np.flatnonzero(slow).tolist():
            try:
                features = flatten(parse_namespaces(bodies[i]), self.interactions, False,
                                   self._keys, filters=self.filters)
            except FieldError as error:
                errors[i] = error
                continue
            reference[i] = (self._columns(list(features)), list(features.values()))
        widths = [int(g[1].max(initial=-1)) + 1 if len(g) == 4 else g[1].size for g in groups]
        width = max(widths + [len(c) for c, _ in reference.values()] + [1])
        rows = pad_rows(reference, n, width)
        for group in groups:
            if len(group) == 4:  # hashed entries: (line, position, column, value)
                line, position, columns, values = group
                rows.index[line, position], rows.value[line, position] = columns, values
            else:
                lines, columns, values = group
                rows.index[lines, : columns.size] = columns
                rows.value[lines, : columns.size] = values
        n_features = (rows.value != 0).sum(axis=1)  # (VW counts features sharing a slot)
        if self._keys is not None:
            merge_repeats(rows)
        return EncodedBlock(rows, n_features, errors)
