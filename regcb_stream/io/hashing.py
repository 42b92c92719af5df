"""VW's feature hashing (``--hash strings``, ``-b bits``, hash seed 0), bit-exact.

VW maps a feature to a weight slot in three steps: the namespace name hashes to a 32-bit
``namespace_hash``; the feature name hashes to 32 bits with it as the seed
(`feature_hash`); the slot is that hash masked to the low ``bits`` bits (`mask`). A ``-q``
cross of two features has the slot ``cross_hash(h1, h2) & mask(bits)``. Masking commutes
with these steps: ``cross_hash(h1, h2) & m == cross_hash(h1 & m, h2 & m) & m``, so unmasked
hashes can be kept and masked last.

VW's hasher (``hashstring`` in ``vowpalwabbit/core/include/vw/core/hashstring.h``) strips
leading and trailing bytes ``0x00``-``0x20``; a name of decimal digits (or an empty one) is
its number plus the seed, modulo 2**32; any other name is the MurmurHash3 (x86, 32 bits) of
its UTF-8 bytes with the seed (``vowpalwabbit/common/include/vw/common/hash.h``). So the
feature ``"7"`` is slot 7 of the default namespace, and the ``k``-th anonymous feature of a
namespace (``:3``, VW's ``channel_hash + anon``) hashes like a feature named ``str(k)``.
The compiled ``_scan.hashes`` computes `feature_hash` for whole lines of VW text.
"""

from __future__ import annotations

import struct

DEFAULT_BITS = 18
FNV_PRIME = 16777619  # VW's interaction multiplier (constant.h)
_U32 = 0xFFFFFFFF
_C1, _C2 = 0xCC9E2D51, 0x1B873593
_BLANKS = bytes(range(0x21))  # what hashstring strips: bytes 0x00..0x20
_DIGIT_CHUNK = 4000  # below Python's limit on digits per int() conversion


def mask(bits: int) -> int:
    """The mask of a ``bits``-bit weight table (VW's ``parse_mask``), 1 <= bits <= 32.

    Examples
    --------
    >>> mask(DEFAULT_BITS) == 2**18 - 1
    True
    """
    if not 1 <= bits <= 32:
        raise ValueError(f"bits must be in 1..32, not {bits}")
    return (1 << bits) - 1


def _mix(k: int) -> int:
    k = (k * _C1) & _U32
    return ((k << 15 | k >> 17) * _C2) & _U32


def murmurhash3_32(data: bytes, seed: int) -> int:
    """MurmurHash3 x86_32 of ``data`` (VW's ``uniform_hash``); ``seed`` is taken mod 2**32.

    Examples
    --------
    >>> murmurhash3_32(b"", 0), murmurhash3_32(b"hello", 0), murmurhash3_32(b"hello", 1)
    (0, 613153351, 3142237357)
    """
    h = seed & _U32
    n = len(data) // 4
    for k in struct.unpack_from(f"<{n}I", data):
        h ^= _mix(k)
        h = ((h << 13 | h >> 19) * 5 + 0xE6546B64) & _U32
    tail = data[4 * n:]
    if tail:
        h ^= _mix(int.from_bytes(tail, "little"))
    h ^= len(data) & _U32
    h = ((h ^ h >> 16) * 0x85EBCA6B) & _U32
    h = ((h ^ h >> 13) * 0xC2B2AE35) & _U32
    return h ^ h >> 16


def hashstring(name: str, seed: int) -> int:
    """VW's default hasher (``--hash strings``): a 32-bit hash of ``name`` with ``seed``.

    Bytes ``0x00``-``0x20`` are stripped from both ends of the UTF-8 encoding; what is left,
    if only ASCII digits (or nothing), hashes to its number plus ``seed`` modulo 2**32
    (``"007"`` is 7, a 20-digit number wraps); otherwise to its MurmurHash3 with ``seed``.

    Examples
    --------
    >>> hashstring("007", 5), hashstring(" 12 ", 0), hashstring(str(2**32 + 3), 0)
    (12, 12, 3)
    >>> hashstring("x", 0) == murmurhash3_32(b"x", 0)
    True
    """
    data = name.encode().strip(_BLANKS)
    if data and not data.isdigit():
        return murmurhash3_32(data, seed)
    value = 0
    for i in range(0, len(data), _DIGIT_CHUNK):
        chunk = data[i:i + _DIGIT_CHUNK]
        value = (value * 10 ** len(chunk) + int(chunk)) & _U32
    return (value + seed) & _U32


def namespace_hash(namespace: str) -> int:
    """The 32-bit hash of a namespace by its full name (VW's ``hash_space``, seed 0).

    The default namespace (a bare ``|``, named ``" "`` here, or ``""``) hashes to 0.

    Examples
    --------
    >>> namespace_hash(" "), namespace_hash("a"), namespace_hash("abc")
    (0, 1009084850, 3017643002)
    """
    return hashstring(namespace, 0)


def feature_hash(namespace_hash: int, name: str) -> int:
    """The unmasked 32-bit hash of feature ``name`` in a namespace; its slot is ``& mask(bits)``.

    Examples
    --------
    >>> feature_hash(namespace_hash("a"), "x") & mask(18)  # VW's audit: a^x:55432
    55432
    >>> feature_hash(0, "123")
    123
    """
    return hashstring(name, namespace_hash)


def anonymous_hash(namespace_hash: int, k: int) -> int:
    """The hash of a namespace's ``k``-th anonymous feature (``:v``, counting from 0).

    VW counts them in each ``|`` segment (a namespace written twice counts twice from 0),
    including zero-valued ones, which it then drops; it adds without wrapping, which the
    mask makes irrelevant: ``anonymous_hash(h, k) & mask(b) == feature_hash(h, str(k)) &
    mask(b)``.

    Examples
    --------
    >>> anonymous_hash(namespace_hash("c"), 1) & mask(18)  # of :4 in "|c :3 :4" (VW's audit)
    185952
    """
    return namespace_hash + k


def cross_hash(h1: int, h2: int) -> int:
    """The hash of a ``-q`` cross of features hashed ``h1`` (first namespace) and ``h2``.

    VW computes ``(FNV_PRIME * h1) ^ h2`` in 64 bits (``interactions_predict.h``; exact for
    32-bit inputs) on hashes already masked, which gives the same slot ``& mask(bits)``.

    Examples
    --------
    >>> x, y = feature_hash(namespace_hash("a"), "x"), feature_hash(namespace_hash("b"), "y")
    >>> cross_hash(x, y) & mask(18)  # VW's audit of -q ab: a^x*b^y:167114
    167114
    """
    return (FNV_PRIME * h1 ^ h2) & 0xFFFFFFFFFFFFFFFF
