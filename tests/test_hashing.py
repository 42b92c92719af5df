"""VW's feature hashing (``regcb_stream.io.hashing`` and the compiled ``_scan.hashes``) against
the real ``vowpalwabbit`` package, and the compiled hashes against the Python reference."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regcb_stream.io.hashing import (
    DEFAULT_BITS,
    anonymous_hash,
    cross_hash,
    feature_hash,
    hashstring,
    mask,
    murmurhash3_32,
    namespace_hash,
)

vw = pytest.importorskip("vowpalwabbit")
_scan = pytest.importorskip("regcb_stream.io._scan")

LONG_DIGITS = "9" * 5000  # beyond Python's default limit of digits per int()
NAMES = ["x", "a", "hello", "Price", "f_1", "abcd", "abcde", "a.b-c", "0", "1", "123", "007",
         "4294967295", "4294967296", "99999999999999999999", LONG_DIGITS, "12a", "-1", "+1",
         "1.5", "é", "naïve", "日本語", "x😀", "", " ", " 12 ", "\tx\n", "a b"]
NAMESPACES = [" ", "", "a", "abc", "User", "Ü", "123", "x😀"]
SEEDS = [0, 1, 12345, 2**31, 2**32 - 1]
FAST_NAMES = st.text("ab019", max_size=6)
ODD_NAMES = st.sampled_from(["é", ":", "a:b", "a\tb"])  # slow lines
VALUES = st.sampled_from([None, None, "1", "0", "-2.5", "1e3", ".5", "007", "1e40", "abc", "",
                          "nan"])  # None: a token without value


@pytest.mark.parametrize("bits", [10, DEFAULT_BITS, 24])
def test_namespace_and_feature_hashes_are_vws(bits):
    ws = vw.Workspace(f"--quiet -b {bits}")
    for ns in NAMESPACES:
        assert namespace_hash(ns) == ws.hash_space(ns)  # VW does not mask namespace hashes
        for name in NAMES:
            want = ws.hash_feature(name, ws.hash_space(ns))  # masked to -b bits by VW
            assert feature_hash(namespace_hash(ns), name) & mask(bits) == want, (ns, name)


@pytest.mark.parametrize("seed", SEEDS)
def test_unmasked_hashes_are_vws(seed):
    """VW's hash_space is its hasher with the seed ``--hash_seed``, unmasked."""
    strings = vw.Workspace(f"--quiet -b 1 --hash_seed {seed}")
    murmur = vw.Workspace(f"--quiet -b 1 --hash all --hash_seed {seed}")
    for name in NAMES + ["abcdefghijklm"[:n] for n in range(14)]:
        assert hashstring(name, seed) == strings.hash_space(name), name
        assert murmurhash3_32(name.encode(), seed) == murmur.hash_space(name), name


def test_digit_names_are_their_number_plus_the_seed_mod_2_32():
    assert hashstring("007", 0) == 7
    assert hashstring("4294967296", 5) == 5
    assert hashstring("99999999999999999999", 0) == 99999999999999999999 % 2**32
    assert hashstring(LONG_DIGITS, 3) == (int(LONG_DIGITS[:4000]) * 10**1000 + int("9" * 1000)
                                          + 3) % 2**32
    assert hashstring("", 9) == hashstring(" ", 9) == 9  # nothing left: the seed


def audit(options: str, lines: list[str]) -> list[tuple[str, int]]:
    """The ``(name, index)`` pairs of VW's ``--audit`` of predictions on ``lines``.

    VW writes the audit from C++ to the process's stdout, hence the subprocess. A feature's
    stored index is its hash times ``2**stride_shift`` (one learner), a cross's is
    ``(h2 * s) ^ (FNV_PRIME * h1 * s)`` (``s`` that power of 2, so the cross of the hashes
    shifted) and the audit prints ``(index & weight_mask) >> stride_shift``: the hash, or
    `cross_hash`, masked to ``-b`` bits.
    """
    script = ("import sys\nfrom vowpalwabbit import Workspace\n"
              f"ws = Workspace({options!r})\n"
              "for line in sys.stdin.read().splitlines():\n    ws.predict(line)\n"
              "ws.finish()\n")
    out = subprocess.run([sys.executable, "-c", script], input="\n".join(lines), check=True,
                         capture_output=True, text=True, encoding="utf-8").stdout
    pairs = []
    for token in out.split("\t")[1:]:
        name, index, _value, _weight = token.strip().rsplit(":", 3)
        pairs.append((name, int(index)))
    return pairs


def audited_hash(name: str) -> int:
    """The unmasked hash of an audit name ``"ns^f"``, ``"f"`` or ``"a^x*b^y"``."""
    hashes = []
    for term in name.split("*"):
        ns, _, feature = term.rpartition("^")
        hashes.append(feature_hash(namespace_hash(ns), feature))
    return hashes[0] if len(hashes) == 1 else cross_hash(*hashes)


@pytest.mark.parametrize("bits", [10, DEFAULT_BITS])
def test_features_and_q_crosses_are_vws_audit_indices(bits):
    lines = ["|a x:1 |b y:2", "| x 12 |abc 007 u:0.5 |b z é 99999999999999999999 |a v",
             "|a 4294967296 |bx naïve:2 y:-1 |c q"]
    pairs = audit(f"--quiet --audit -b {bits} -q ab -q aa", lines)
    # ab crosses and aa pairs (with itself, in order): 1 + 1, 3 * 3 + 3 * 4 / 2, 1 * 2 + 1
    assert sum("*" in name for name, _ in pairs) == 2 + 15 + 3
    for name, index in pairs:
        if name != "Constant":
            assert audited_hash(name) & mask(bits) == index, name


def test_anonymous_features_are_vws_audit_indices():
    """VW counts a ``|`` segment's anonymous features from 0, zero-valued ones included."""
    pairs = audit("--quiet --audit -b 18", ["|c 123 :3 :4 |c :0 :5 | :2"])
    h = namespace_hash("c")
    want = [("c^123", feature_hash(h, "123")), ("c^", anonymous_hash(h, 0)),
            ("c^", anonymous_hash(h, 1)), ("c^", anonymous_hash(h, 1)), ("", anonymous_hash(0, 0))]
    got = sorted(pairs[:-1])  # the last one is Constant
    assert got == sorted((name, hash_ & mask(18)) for name, hash_ in want)
    for k in range(3):
        assert anonymous_hash(h, k) & mask(18) == feature_hash(h, str(k)) & mask(18)


def compiled(bodies: list[str]) -> tuple:
    offsets, initials, hashes, values, slow = _scan.hashes(bodies)
    return (np.frombuffer(offsets, np.int64), initials, np.frombuffer(hashes, np.uint32),
            np.frombuffer(values), np.frombuffer(slow, bool))


def reference(body: str) -> tuple[list[int], bytes]:
    """`feature_hash` of each feature token of a fast line (printable ASCII, no tab), and
    the first character of its namespace."""
    hashes, initials = [], b""
    for segment in body.split("|"):
        ns, *tokens = segment.split(" ")
        names = [t.partition(":")[0] for t in tokens if t]
        hashes += [feature_hash(namespace_hash(ns), name) for name in names]
        initials += (ns[:1] or " ").encode() * len(names)
    return hashes, initials


def check_compiled(bodies: list[str]) -> None:
    offsets, initials, hashes, values, slow = compiled(bodies)
    _group, _first, count, scan_values, scan_slow = _scan.scan(bodies)
    np.testing.assert_array_equal(slow, np.frombuffer(scan_slow, bool))
    np.testing.assert_array_equal(np.diff(offsets), np.frombuffer(count, np.int64))
    np.testing.assert_array_equal(values, np.frombuffer(scan_values))
    for i, body in enumerate(bodies):
        want, starts = ([], b"") if slow[i] else reference(body)
        assert hashes[offsets[i]:offsets[i + 1]].tolist() == want, body
        assert initials[offsets[i]:offsets[i + 1]] == starts, body


def test_compiled_hashes_equal_the_reference():
    bodies = ["a x:1 |b y:2", " x 007 |abc 12345678901234567890 zz:0", "", "|", "  |  a ",
              "User price:1.5 id_4 |Item 0 abcd abcde abcdefg:-3", f"n {LONG_DIGITS[:60]}",
              "a :3", "é x", "a:2 x", "a x:abc", "a\tx", "a x:1e39"]
    check_compiled(bodies)
    assert compiled(bodies)[4].tolist()[-6:] == [True] * 6


@st.composite
def lines(draw) -> str:
    """A feature text: mostly well-formed namespaces, or random characters."""
    if draw(st.booleans()):
        return draw(st.text("ab09 |:.-eé\t", max_size=30))
    names = st.integers(0, 39).flatmap(lambda odd: ODD_NAMES if odd == 0 else FAST_NAMES)
    namespaces = []
    for _ in range(draw(st.integers(1, 3))):
        tokens = [draw(names)]
        for name in draw(st.lists(names, max_size=4)):
            value = draw(VALUES)
            tokens.append(name if value is None else f"{name}:{value}")
        namespaces.append(" " * draw(st.integers(0, 2)) + " ".join(tokens))
    return "|".join(namespaces)


@settings(max_examples=150, deadline=None)
@given(st.lists(lines(), max_size=8))
def test_compiled_hashes_equal_the_reference_on_random_lines(bodies):
    check_compiled(bodies)


@pytest.mark.parametrize("bits", [18, 24])  # (a table of slots; a dict beyond 22 bits)
def test_hashed_joint_rows_take_the_columns_of_their_features_one_kind_at_a_time(bits):
    """The hashed crosses of context and action features, found in one pass, get the
    columns the features and crosses got one kind after another (the context's, then each
    action's own and its crosses)."""
    from regcb_stream.features.encoder import FeatureEncoder

    context, actions = {"u": 1.0, "v": 2.0}, [{"a": 1.0}, {"b": 0.5, "u": 1.0}, {}]
    fast, slow = FeatureEncoder(hash_bits=bits), FeatureEncoder(hash_bits=bits)
    rows = fast.joint_items(context, actions)
    shared = slow._columns("x", list(context))
    for (columns, values), action in zip(rows, actions):
        keys = list(action)
        assert columns == shared + slow._columns("a", keys) + slow._columns(
            "xa", [(s, a) for s in context for a in keys])
        assert values == [*context.values(), *action.values(), *(
            sv * av for sv in context.values() for av in action.values())]


@pytest.mark.parametrize("compiled", [True, False])
def test_slot_columns_are_numbered_in_order_and_saved_as_columns(compiled, monkeypatch):
    """Hashed slots get columns in order of first appearance (a slot a key shares, its
    column), compiled or not; the saved table holds each slot's column, -1 for a slot not
    seen, and a table built back from it numbers on from where it stopped."""
    from regcb_stream.features import slot_columns
    from regcb_stream.features.slot_columns import SlotColumns

    if not compiled:
        monkeypatch.setattr(slot_columns, "_scan", None)
    slots = SlotColumns(bits=4)
    columns, fresh = slots(np.array([21, 3, 5, 21, 19], np.uint64), first=1)
    assert (columns.tolist(), fresh) == ([1, 2, 1, 1, 2], 2)  # (21 & 15 = 5, 19 & 15 = 3)
    table = slots.state()["table"]
    assert table.tolist() == [-1, -1, -1, 2, -1, 1] + [-1] * 10
    back = SlotColumns.from_state(slots.state())
    columns, fresh = back(np.array([7, 5], np.uint64), first=3)
    assert (columns.tolist(), fresh) == ([3, 1], 1)
    columns, fresh = SlotColumns.from_state(back.state())(np.array([7, 8, 3], np.uint64), 4)
    assert (columns.tolist(), fresh) == ([3, 4, 2], 1)


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 10_000), bits=st.sampled_from([3, 8, 18]))
def test_joint_rows_of_a_block_are_each_contexts_rows_in_turn(seed, bits):
    """A block of rounds' joint rows (`crosses.hashed_rounds`: contexts of as many
    features built at once, their keys numbered in one pass) are the rows `hashed_items`
    gives one context at a time, and `layout_rows` one round at a time, numbered in turn:
    the same columns (hash collisions included), values and padding, whatever the
    contexts' widths, names and pools (none included), and with rounds that must go one
    at a time (an int value, actions of unequal widths)."""
    from regcb_stream.features.crosses import hashed_items, hashed_rounds, layout_rows
    from regcb_stream.features.slot_columns import SlotColumns

    rng = np.random.default_rng(seed)
    names = [f"n{i}" for i in range(10)] + [0, 1, 2]

    def features(pool: list, most: int) -> dict:
        keys = rng.choice(len(pool), int(rng.integers(0, most + 1)), replace=False)
        return {pool[i]: float(rng.choice([1.0, -0.5, 2.25])) if rng.random() < 0.95 else 3
                for i in keys}

    k = int(rng.integers(1, 4))
    pools = [[features([f"a{i}" for i in range(6)] + ["n0"], 2) for _ in range(k)]
             for _ in range(3)]
    rounds = [([features(names, 5) for _ in range(int(rng.integers(1, 4)))],
               pools[int(rng.integers(3))]) for _ in range(int(rng.integers(1, 8)))]
    out = []
    for way in ("block", "one context at a time", "one round at a time"):
        slots, first = SlotColumns(bits), [1]

        def register(keys):
            columns, fresh = slots(keys, first[0])
            first[0] += fresh
            return columns

        def rows_of(contexts, actions):
            rows = []
            for context in contexts:
                made, fresh = hashed_items(slots, first[0], list(context), [
                    float(v) for v in context.values()], [
                    (list(a), [float(v) for v in a.values()]) for a in actions])
                first[0] += fresh
                rows += made
            index = np.zeros((len(rows), 1 + max(len(c) for c, _ in rows)), np.intp)
            value = np.zeros(index.shape)
            for row, (columns, values) in enumerate(rows):
                index[row, 1:1 + len(columns)], value[row, 1:1 + len(values)] = columns, values
            return index, value

        def by_layout(contexts, actions):  # (the encoder's joint_rows)
            rows = layout_rows(register, [(list(c), list(c.values())) for c in contexts],
                               [(list(a), list(a.values())) for a in actions], 0.0)
            return rows_of(contexts, actions) if rows is None else rows

        out.append((*hashed_rounds(register if way == "block" else None, by_layout if
                                   way == "one round at a time" else rows_of, rounds), first[0]))
    (index, value, n), *others = out
    for index_other, value_other, n_other in others:
        assert index.shape == index_other.shape and n == n_other
        assert np.array_equal(index, index_other) and np.array_equal(value, value_other)
