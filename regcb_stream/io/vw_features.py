"""Feature part of Vowpal Wabbit text lines: parsing namespaces, flattening, ``-q`` crosses.

A line's features are a tuple of namespaces ``(name, ((feature, value), ...))``. The default
namespace (a bare ``|``) is named ``" "``; a namespace scale (``|ns:2``) is already multiplied
into the values; zero-valued features are dropped and empty namespaces omitted, as VW does.
A feature written ``:v`` (no name) is VW's anonymous feature; the *k*-th one in a namespace is
named ``str(k)``, which VW hashes identically (``--hash strings``: digit names hash to their
number plus the namespace hash).

Keys made by `flatten` / `flatten_adf` follow VW's ``--audit`` names: ``"ns^feature"``, just
``"feature"`` in the default namespace, ``"a^x*b^y"`` for a quadratic cross, and ``"constant"``
for VW's constant feature (``Constant`` in VW's audit). Duplicate keys are summed. The scheme is
not injective when names contain ``^`` or ``*``, which only merges such features. With
``keys=HashKeys()`` the keys are VW's own unmasked hashes instead (`regcb_stream.io.hashing`:
a feature's ``feature_hash``, a cross's ``cross_hash``), which ``-b`` bits then mask.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from itertools import combinations_with_replacement
from typing import NamedTuple

from regcb_stream.io.hashing import cross_hash, feature_hash, namespace_hash

Feature = tuple[str, float]
Namespace = tuple[str, tuple[Feature, ...]]
Features = tuple[Namespace, ...]

DEFAULT_NS = " "
CONSTANT_KEY = "constant"
_NAN = float("nan")
FLOAT32_MIN, FLOAT32_MAX = 1.1754943508222875e-38, 3.4028234663852886e38  # VW stores float32


class HashKeys:
    """`flatten`'s keys as VW's unmasked hashes: a feature ``feature_hash(namespace_hash(ns),
    name)``, a ``-q`` cross ``cross_hash(first, second)``, the constant VW's 11650396.

    >>> hashed = flatten((("a", (("x", 1.0),)), ("b", (("y", 2.0),))), ["ab"], False, HashKeys())
    >>> [(key & (2**18 - 1), value) for key, value in hashed.items()]  # VW's -b 18 slots
    [(55432, 1.0), (152274, 2.0), (167114, 2.0)]
    """

    constant = 11650396  # VW's constant feature (constant.h)

    def __init__(self):
        self._namespaces: dict[str, int] = {}

    def features(self, namespace: str, feats: tuple[Feature, ...]) -> tuple:
        """A namespace's features keyed by their hashes."""
        seed = self._namespaces.get(namespace)
        if seed is None:
            seed = self._namespaces[namespace] = namespace_hash(namespace)
        return tuple([(feature_hash(seed, name), value) for name, value in feats])

    cross = staticmethod(cross_hash)


class Namespaces(NamedTuple):
    """VW's namespace filters, by a namespace's first character, as `flatten` applies them:
    ``ignore`` (``--ignore``: its features are dropped), ``keep`` (``--keep``: every other
    namespace is dropped; None: no such filter), ``ignore_linear`` (``--ignore_linear``:
    its features are crossed by ``-q``, not features of their own). VW's constant feature
    is in none of them.

    >>> flatten((("a", (("x", 1.0),)), ("b", (("y", 2.0),))), ["ab"], False,
    ...         filters=Namespaces(ignore_linear="a"))
    {'b^y': 2.0, 'a^x*b^y': 2.0}
    """

    ignore: str = ""
    keep: str | None = None
    ignore_linear: str = ""

    def drops(self, initial: str) -> bool:
        """Whether a namespace of this first character is dropped."""
        return initial in self.ignore or (self.keep is not None and initial not in self.keep)


class FieldError(Exception):
    """A malformed field inside one line (turned into ``VWParseError`` by the line parser)."""

    def __init__(self, rule: str, detail: str) -> None:
        super().__init__(detail)
        self.rule = rule
        self.detail = detail


def number(text: str, what: str, rule: str) -> float:
    """Parse a finite decimal number that VW's 32-bit floats can hold.

    Parameters
    ----------
    text : str
        The field, e.g. ``"0.5"``, ``"-2"``, ``"1e-3"``.
    what, rule : str
        Name of the field and rule for the error message.

    Raises
    ------
    FieldError
        If `text` is not a finite number (``nan``, ``inf``, ``1_0``, ``""``, non-ASCII digits
        and control characters are refused) or is outside float32's range (0 is fine).

    Examples
    --------
    >>> number("1e-3", "cost", "cost")
    0.001
    >>> number("abc", "cost", "cost")
    Traceback (most recent call last):
    regcb_stream.io.vw_features.FieldError: cost 'abc' is not a number
    """
    try:
        value = float(text)
    except ValueError:
        value = _NAN
    if value - value != 0.0 or not text.isascii() or "_" in text or not text.isprintable():
        raise FieldError(rule, f"{what} {text!r} is not a number")
    if value and not FLOAT32_MIN <= abs(value) <= FLOAT32_MAX:
        raise FieldError(rule, f"{what} {text!r} is outside the range of VW's 32-bit floats")
    return value


def parse_namespaces(body: str) -> Features:
    """Parse the features of a line: the text after its first ``|``.

    Parameters
    ----------
    body : str
        E.g. ``"User a b:2 |Item:0.5 c"`` (without the leading ``|``).

    Returns
    -------
    tuple of (str, tuple of (str, float))
        Namespaces in line order, values scaled, zero values and empty namespaces dropped.

    Raises
    ------
    FieldError
        On a namespace without a name (``|:2``), a scale or feature value that is not a
        finite number (VW would hash ``f:abc`` as a string feature; this parser refuses it).

    Examples
    --------
    >>> parse_namespaces("User a b:2 |Item:0.5 c :3 | d")
    (('User', (('a', 1.0), ('b', 2.0))), ('Item', (('c', 0.5), ('0', 1.5))), (' ', (('d', 1.0),)))
    """
    out = []
    for seg in body.split("|"):
        if "\t" in seg:
            seg = seg.replace("\t", " ")
        toks = seg.split(" ")
        head = toks[0]
        scale = 1.0
        if not head:
            name = DEFAULT_NS
        else:
            name, colon, scale_text = head.partition(":")
            if not name:
                raise FieldError("namespace", f"namespace {head!r} has no name before ':'")
            if colon:
                scale = number(scale_text, "namespace scale", "namespace")
        feats = _namespace_features(toks, scale)
        if feats:
            out.append((name, feats))
    return tuple(out)


def _namespace_features(toks: list[str], scale: float) -> tuple[Feature, ...]:
    feats = []
    append = feats.append
    anon = 0
    for i in range(1, len(toks)):
        tok = toks[i]
        if ":" not in tok:
            if tok and scale:
                append((tok, scale))
            continue
        name, _, text = tok.partition(":")
        try:  # `number` inlined: this loop is the parser's hot path
            value = float(text)
        except ValueError:
            value = _NAN
        if value - value != 0.0 or not text.isascii() or "_" in text or not text.isprintable():
            number(text, f"feature {tok!r}: value", "feature_value")  # raises
        if not name:
            name = str(anon)
            anon += 1
        value *= scale
        if value:
            if not FLOAT32_MIN <= abs(value) <= FLOAT32_MAX:
                scaled = f" times namespace scale {scale}" if scale != 1.0 else ""
                raise FieldError("feature_value", f"feature {tok!r}{scaled} is outside the "
                                 "range of VW's 32-bit floats")
            append((name, value))
    return tuple(feats)


def merge_shared(shared: Features | None, action: Features) -> Features:
    """Features VW learns from for one ADF action: the action line's, then the shared ones.

    Examples
    --------
    >>> merge_shared((("U", (("u", 1.0),)),), (("A", (("a", 1.0),)),))
    (('A', (('a', 1.0),)), ('U', (('u', 1.0),)))
    """
    return action + shared if shared else action


def flatten(
    namespaces: Features, interactions: Iterable[str] = (), constant: bool = True,
    keys: HashKeys | None = None, *, filters: Namespaces | None = None,
) -> dict:
    """Flatten namespaces to ``{key: value}`` with VW's ``-q`` crosses and constant feature.

    Parameters
    ----------
    namespaces : tuple
        Parsed namespaces (for ADF, first merge the shared ones with `merge_shared`).
    interactions : iterable of str
        Two-character ``-q`` specs such as ``"UA"``: cross every namespace whose name starts
        with ``U`` with every one starting with ``A`` (``"UU"`` pairs each feature with itself
        and the later ones only). ``:`` is VW's wildcard (``"::"`` = all pairs). A pair given
        twice in either order is crossed once, keys in sorted character order.
    constant : bool
        Add VW's constant feature (key ``"constant"``, value 1); False for ``--noconstant``.
    keys : HashKeys, optional
        Key features by VW's hashes instead of their names.
    filters : Namespaces, optional
        VW's ``--ignore``, ``--keep`` and ``--ignore_linear``.

    Returns
    -------
    dict of str (or int) to float
        Keys as described in the module docstring; values of repeated keys are summed.

    Examples
    --------
    >>> flatten((("User", (("u", 2.0),)), ("Ad", (("a", 0.5),)), (" ", (("x", 1.0),))), ["UA"])
    {'User^u': 2.0, 'Ad^a': 0.5, 'x': 1.0, 'constant': 1.0, 'User^u*Ad^a': 1.0}
    """
    groups: dict[str, list[Feature]] | None = {} if interactions else None
    out = _collect({}, namespaces, groups, constant, keys, filters)
    if groups:
        _interact(out, groups, interactions, keys)
    return out


def flatten_adf(shared: Features | None, actions: Iterable[Features],
                interactions: Iterable[str] = (), constant: bool = True,
                keys: HashKeys | None = None, *, filters: Namespaces | None = None
                ) -> list[dict]:
    """`flatten` of each action merged with the shared features, doing the shared part once.

    Examples
    --------
    >>> shared, actions = (("U", (("u", 2.0),)),), [(("A", (("a", 1.0),)),), ()]
    >>> flatten_adf(shared, actions, ["UA"], constant=False)
    [{'U^u': 2.0, 'A^a': 1.0, 'U^u*A^a': 2.0}, {'U^u': 2.0}]
    """
    interactions = tuple(interactions)
    shared_groups: dict[str, list[Feature]] = {}
    base = _collect({}, shared or (), shared_groups, constant, keys, filters)
    result = []
    for action in actions:
        groups: dict[str, list[Feature]] | None = {} if interactions else None
        out = _collect(base.copy(), action, groups, False, keys, filters)
        if groups is not None:
            for c, feats in shared_groups.items():
                groups[c] = groups[c] + feats if c in groups else feats
            _interact(out, groups, interactions, keys)
        result.append(out)
    return result


def _collect(out: dict, namespaces: Features, groups: dict[str, list[Feature]] | None,
             constant: bool, keys: HashKeys | None = None,
             filters: Namespaces | None = None) -> dict:
    """Add keyed features (and the constant) to `out`; group them by first letter if asked;
    drop what the ``filters`` drop."""
    get = out.get
    for name, feats in namespaces:
        linear = True
        if filters is not None:
            if filters.drops(name[0]):
                continue
            linear = name[0] not in filters.ignore_linear
            if not linear and groups is None:
                continue
        if keys is not None:
            feats = keys.features(name, feats)
        elif name != DEFAULT_NS:
            prefix = name + "^"
            feats = tuple([(prefix + f, v) for f, v in feats])
        if linear:
            for key, value in feats:
                out[key] = get(key, 0.0) + value
        if groups is not None:
            groups.setdefault(name[0], []).extend(feats)
    if constant:
        key = CONSTANT_KEY if keys is None else keys.constant
        out[key] = get(key, 0.0) + 1.0
    return out


def _interact(out: dict, groups: dict[str, list[Feature]], specs,
              keys: HashKeys | None = None) -> None:
    for a, b in _expand(tuple(specs), tuple(sorted(groups))):
        _cross(out, groups[a], groups[b], a == b, keys)


def _cross(out: dict, left: list[Feature], right: list[Feature], same: bool,
           keys: HashKeys | None) -> None:
    get = out.get
    for i, (k1, v1) in enumerate(left):
        for k2, v2 in right[i:] if same else right:
            key = k1 + "*" + k2 if keys is None else keys.cross(k1, k2)
            out[key] = get(key, 0.0) + v1 * v2


@lru_cache(maxsize=4096)
def _expand(specs: tuple[str, ...], present: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """Namespace-character pairs to cross for the characters `present` in one example."""
    pairs: list[tuple[str, str]] = []
    for spec in specs:
        if not isinstance(spec, str) or len(spec) != 2:
            raise ValueError(f"interaction {spec!r}: only 2-namespace (-q) crosses are supported")
        a, b = spec
        if a == ":" and b == ":":
            pairs.extend(combinations_with_replacement(present, 2))
        else:
            pairs.extend((x, y) for x in (present if a == ":" else a)
                         for y in (present if b == ":" else b))
    keys = [(a, b) if a <= b else (b, a) for a, b in pairs]
    result: list[tuple[str, str]] = []
    for pair, key in zip(pairs, keys, strict=True):  # a pair given twice: once, sorted (as VW)
        if key not in result and pair not in result:
            result.append(key if keys.count(key) > 1 else pair)
    return tuple((a, b) for a, b in result if a in present and b in present)
