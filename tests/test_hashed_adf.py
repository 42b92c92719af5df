"""Hashed ADF examples (``-b``): the compiled, layout-by-layout path against the reference
flattening, and the command's output with and without it."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regcb_stream.command.main import main
from regcb_stream.io import adf_encode, vw_blocks, vw_encode
from regcb_stream.io.adf_encode import AdfEncoder
from regcb_stream.io.hashing import mask
from regcb_stream.io.vw_features import HashKeys, flatten_adf
from regcb_stream.io.vw_text import iter_adf

pytest.importorskip("regcb_stream.io._scan")
BITS = 12  # few slots: features share them, which the rows must sum


def slots(keys) -> np.ndarray:
    return np.asarray(keys, np.uint64) & np.uint64(mask(BITS))


def row_dicts(block, n: int, k: int) -> list[list[dict]]:
    out, encoded = [], block.rows.without_intercept()
    for i in range(n):
        rows = []
        for a in range(k):
            row: dict[int, float] = {}
            for column, value in zip(encoded.index[i, a].tolist(),
                                     encoded.value[i, a].tolist()):
                if value:
                    row[column] = row.get(column, 0.0) + value
            rows.append(row)
        out.append(rows)
    return out


def reference_rows(text: str, interactions) -> list[list[dict]]:
    out = []
    for ex in iter_adf(text.splitlines()):
        rows = []
        for row in flatten_adf(ex.shared, ex.actions, interactions, False, HashKeys()):
            summed: dict[int, float] = {}
            for key, value in row.items():
                slot = int(slots([key])[0])
                summed[slot] = summed.get(slot, 0.0) + value
            rows.append({s: v for s, v in summed.items() if v})
        out.append(rows)
    return out


NAME = st.sampled_from(["a", "b", "x1", "007", "w", "zz", "k9"])
VALUE = st.sampled_from(["", ":2", ":-0.5", ":3e-1"])


@st.composite
def shared_lines(draw) -> str:
    parts = []
    for namespace in draw(st.lists(st.sampled_from(["s", "t", "", "sx", "u"]), min_size=1,
                                   max_size=3)):
        feats = [draw(NAME) + draw(VALUE) for _ in range(draw(st.integers(0, 4)))]
        parts.append(namespace + " " + " ".join(feats))
    return "shared |" + "|".join(parts)


@settings(max_examples=60, deadline=None)
@given(shared=st.lists(shared_lines(), min_size=1, max_size=6),
       interactions=st.sampled_from([(), ("sa",), ("sa", "ta"), ("ss",), ("::",), ("s:",)]))
def test_the_layouts_give_the_reference_rows(shared, interactions):
    actions = ["|a x y:2", "|a z |b q", "|a x"]
    text = "".join(line + "\n" + "\n".join(actions) + "\n\n" for line in shared)
    examples = list(iter_adf(text.splitlines(), shared_text=True))
    encoder = AdfEncoder(slots, interactions, hash_bits=BITS)
    block = encoder.encode_block([ex.shared for ex in examples], [ex.actions for ex in examples])
    assert not block.errors
    got, want = row_dicts(block, len(examples), 3), reference_rows(text, interactions)
    assert [[sorted(row) for row in ex] for ex in got] == [[sorted(row) for row in ex]
                                                           for ex in want]
    for ex_got, ex_want in zip(got, want):  # sums of repeated features, in another order
        for row_got, row_want in zip(ex_got, ex_want):
            assert row_got == pytest.approx(row_want, rel=1e-12)


ACTION_POOL = ["|a x y:2", "|a z |b q", "|a x", "|b w:0.5 x", "|a k9 |c x1"]


@settings(max_examples=60, deadline=None)
@given(examples=st.lists(st.tuples(shared_lines(), st.permutations(range(len(ACTION_POOL)))),
                         min_size=1, max_size=8),
       interactions=st.sampled_from([(), ("sa",), ("sa", "ta", "sb"), ("::",)]),
       repeat=st.booleans())
def test_changing_action_sets_give_the_reference_rows(examples, interactions, repeat):
    """Action sets met once go row by row (layouts of one action); repeated sets (and
    a second block, which finds their layouts cached) by the set's layout."""
    text = "".join(line + "\n" + "\n".join(ACTION_POOL[a] for a in order[:3]) + "\n\n"
                   for line, order in examples)
    parsed = list(iter_adf(text.splitlines(), shared_text=True))
    encoder = AdfEncoder(slots, interactions, hash_bits=BITS)
    for _ in range(1 + repeat):
        block = encoder.encode_block([ex.shared for ex in parsed],
                                     [ex.actions for ex in parsed])
        got, want = row_dicts(block, len(parsed), 3), reference_rows(text, interactions)
        for ex_got, ex_want in zip(got, want, strict=True):
            for row_got, row_want in zip(ex_got, ex_want, strict=True):
                assert row_got == pytest.approx(row_want, rel=1e-12)


def test_the_command_is_the_same_with_and_without_the_compiled_path(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    lines = []
    for i in range(300):
        names = " ".join(f"f{j}" for j in rng.integers(0, 5000, 20))
        action = rng.integers(4)
        lines.append(f"shared |s {names} |t c{i % 7}:0.5\n")
        lines += [(f"0:{rng.integers(2)}:0.25 " if a == action else "") + f"|a a{a}\n"
                  for a in range(4)]
        lines.append("\n")
    data = tmp_path / "adf.dat"
    data.write_text("".join(lines))
    flags = ["--cb_explore_adf", "-q", "sa", "-q", "ta", "--quiet", "-d", str(data), "-p"]
    assert main([*flags, str(tmp_path / "fast.p")]) == 0
    for module in (vw_encode, vw_blocks, adf_encode):  # the reference parser everywhere
        monkeypatch.setattr(module, "_scan", None)
    assert main([*flags, str(tmp_path / "reference.p")]) == 0
    fast = (tmp_path / "fast.p").read_text()
    assert fast == (tmp_path / "reference.p").read_text() and fast.count("\n\n") == 300


@pytest.mark.parametrize("text, status", [
    ("sha2red | ", 0),  # a line that is an action without features: an empty layout
    ("2:0:0.25 |x f0:-0.", 0),
    ("shared |s f0:0.5\n0:0:0.3 |a act1 w:0.6 act2 w:1.1\n|a act2 w:1.1 act2\n\n", 0),
    ("shared |s x\n\nshared |s y\n\nshared |s z\n|a a\n\n", 0),  # lone shared lines
    ("|\n\n x\n|a ac", 1),
    ("shared |s f0:0.5 f1\x000.25\n\n|a act2 w:1.1\n|a act3", 0),  # a lone shared line,
    ("shared |s f0:-0.6 \x0cf2:0.75", 0),  # slow: its rows (none) by the reference
    ("shared |s f0:0.5 f1:-1\n|a act0 w:0.1\n0:0:0.3333 |a act1 w:0.6\n|a act2\n\n"
     "shared |s f2\n\nshared |s f0:0.25 f1:0.18 f2:0.94\n", 0),  # lone lines, two layouts
])
def test_inputs_the_fuzzer_found_end_with_a_status_not_a_traceback(tmp_path, text, status):
    """Found by bench/experiments/reliability.py: each raised from the hashed ADF path (an empty
    layout, a feature summed into one key, several examples without actions, a slow lone
    shared line)."""
    data = tmp_path / "fuzz.dat"
    data.write_text(text)
    assert main(["--cb_explore_adf", "-q", "sa", "-d", str(data), "-p",
                 str(tmp_path / "p.txt"), "--quiet"]) == status


@settings(max_examples=40, deadline=None)
@given(initials=st.lists(st.sampled_from("sst u"), min_size=0, max_size=6),
       interactions=st.sampled_from([(), ("sa",), ("sa", "ta"), ("ss",)]),
       m=st.integers(1, 5), pad=st.integers(0, 3), seed=st.integers(0, 2**16))
def test_the_compiled_fill_writes_the_reference_rows(initials, interactions, m, pad, seed):
    """``_scan.layout_fill`` against `hashed_adf.layout_rows`, into wider padded rows, for
    examples whose tokens lie anywhere in the block's arrays."""
    from regcb_stream.io import _scan
    from regcb_stream.io.hashed_adf import layout_rows, make_layout
    actions = next(iter(iter_adf(["shared |s x", "|a x y:2", "|a z |b q", ""]))).actions
    layout = make_layout("".join(initials).encode(), actions, interactions,
                         adf_encode.Slot)
    rng = np.random.default_rng(seed)
    n, (k, width) = len(initials), layout.source1.shape
    offsets = rng.permutation(m) * n + 3  # (three tokens of another line first)
    hashes = rng.integers(0, 2**32, m * n + 3, dtype=np.uint64).astype(np.uint32)
    values = rng.normal(size=m * n + 3)
    keys, value = np.zeros((m, k, width + pad), np.uint64), np.zeros((m, k, width + pad))
    present = np.zeros(keys.shape, bool)
    rows = np.tile(np.arange(k), m)
    _scan.layout_fill(keys, value, present, k, width + pad, np.repeat(np.arange(m), k), rows,
                      rows, layout, k, width, n, offsets, hashes, values)
    at = offsets[:, None] + np.arange(n)
    want_keys, want_values = layout_rows(layout, hashes[at], values[at])
    assert (present[:, :, :width] == layout.present).all() and not present[:, :, width:].any()
    assert (keys[present] == np.broadcast_to(want_keys, present.shape[:2] + (width,))[
        layout.present[None].repeat(m, 0)]).all()
    assert value[:, :, :width][present[:, :, :width]].tolist() == want_values[
        np.broadcast_to(layout.present, want_values.shape)].tolist()


@settings(max_examples=40, deadline=None)
@given(initials=st.lists(st.sampled_from("sst u"), min_size=0, max_size=6),
       interactions=st.sampled_from([(), ("sa",), ("sa", "ta"), ("ss",)]),
       m=st.integers(1, 5), seed=st.integers(0, 2**16))
def test_the_compiled_values_of_a_layout_are_numpys(initials, interactions, m, seed):
    """`hashed_adf.layout_rows`'s values from ``_scan.layout_values`` and from numpy (the
    module without the kernels): the same rows, bit for bit."""
    from regcb_stream.io import hashed_adf
    actions = next(iter(iter_adf(["shared |s x", "|a x y:2", "|a z |b q", ""]))).actions
    layout = hashed_adf.make_layout("".join(initials).encode(), actions, interactions,
                                    adf_encode.Slot)
    rng = np.random.default_rng(seed)
    hashes = rng.integers(0, 2**32, (m, len(initials)), dtype=np.uint64).astype(np.uint32)
    values = rng.normal(size=(m, len(initials))) * rng.choice([1e-300, 1.0, 1e150])
    compiled = hashed_adf.layout_rows(layout, hashes, values)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(hashed_adf, "_scan", None)
        reference = hashed_adf.layout_rows(layout, hashes, values)
    for got, want in zip(compiled, reference):
        assert got.shape == want.shape and got.tobytes() == want.tobytes()


def test_the_compiled_fill_refuses_indices_outside_its_arrays():
    from regcb_stream.io import _scan
    from regcb_stream.io.hashed_adf import make_layout
    actions = next(iter(iter_adf(["shared |s x", "|a x", ""]))).actions
    layout = make_layout(b"s", actions, ("sa",), adf_encode.Slot)
    k, width = layout.source1.shape
    keys, value = np.zeros((2, k, width), np.uint64), np.zeros((2, k, width))
    present = np.zeros(keys.shape, bool)
    one = np.zeros(1, np.int64)
    tokens = (np.array([0, 1]), np.zeros(2, np.uint32), np.zeros(2))
    for examples, offsets in ((np.array([2]), tokens[0]), (one, np.array([5, 0]))):
        with pytest.raises(ValueError, match="out of range"):
            _scan.layout_fill(keys, value, present, k, width, examples, one, one, layout, k,
                              width, 1, offsets, *tokens[1:])


@settings(max_examples=40, deadline=None)
@given(examples=st.lists(st.tuples(shared_lines(), st.permutations(range(len(ACTION_POOL)))),
                         min_size=1, max_size=8),
       interactions=st.sampled_from([(), ("sa",), ("sa", "ta", "sb")]))
def test_a_block_of_action_sets_met_once_is_the_grouped_blocks(examples, interactions):
    """A block whose every example has an action tuple of its own (`lone_examples`: row by
    row, without keying the sets) gives the rows of the grouping by action set (which puts
    tuples of the same actions together), byte for byte but for the intercept."""
    text = "".join(line + "\n" + "\n".join(ACTION_POOL[a] for a in order[:3]) + "\n\n"
                   for line, order in examples)
    parsed = list(iter_adf(text.splitlines(), shared_text=True))
    actions = [tuple(list(ex.actions)) for ex in parsed]  # (tuples of their own)
    if len(actions) > 1:
        actions[-1] = tuple(list(actions[0]))  # (the first's actions: one set, two tuples)
    assert vw_blocks.lone_examples(b"", np.zeros(len(actions) + 1, np.int64), actions,
                                   list(range(len(actions)))) is not None
    blocks = []
    for lone in (vw_blocks.lone_examples, lambda *_: None):
        adf_encode.lone_examples = lone
        try:
            encoder = AdfEncoder(slots, interactions, hash_bits=BITS)
            blocks.append(encoder.encode_block([ex.shared for ex in parsed], actions))
        finally:
            adf_encode.lone_examples = vw_blocks.lone_examples
    (fast, grouped) = (block.rows.without_intercept() for block in blocks)  # (one
    # layout's rows carry the intercept: the same rows)
    assert fast.index.tobytes() == grouped.index.tobytes()
    assert fast.value.tobytes() == grouped.value.tobytes()
    assert blocks[0].n_features.tolist() == blocks[1].n_features.tolist()
