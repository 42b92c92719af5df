"""Tests of the VW text parser and ``-p`` writer against the real ``vowpalwabbit`` package."""

from __future__ import annotations

import io
import math
import os
import random
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from regcb_stream.io import vw_blocks, vw_predictions
from regcb_stream.io.vw_features import flatten, flatten_adf, merge_shared, parse_namespaces
from regcb_stream.io.vw_predictions import (
    format_block,
    format_legacy,
    format_legacy_block,
    format_pmf,
    format_prob,
    format_slots,
)
from regcb_stream.io.vw_text import (
    ADFExample,
    CBExample,
    Label,
    VWParseError,
    iter_adf,
    iter_cb,
    iter_cb_lines,
    parse_line,
    read_cb_block,
)
from regcb_stream.slots import SlotDecision

vw = pytest.importorskip("vowpalwabbit")
VW_TESTS = Path(__file__).resolve().parents[1].parent / "shared" / "vw_tests"  # ../shared
TRAIN, REF = VW_TESTS / "train-sets", VW_TESTS / "pred-sets" / "ref"
MASK = (1 << 18) - 1
FLT_MAX = float(np.finfo(np.float32).max)
WS_CB = vw.Workspace("--cb_explore 3 --quiet")  # shared by the generated single-line tests
N_FUZZ = int(os.environ.get("VW_TEXT_FUZZ_EXAMPLES", "300"))  # raise it for a long fuzz run
FUZZ = settings(max_examples=N_FUZZ, deadline=None, suppress_health_check=[HealthCheck.too_slow])
VS_VW = settings(FUZZ, max_examples=max(N_FUZZ // 2, 10))


def need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"{path} not available")
    return path


def blocks(text: str) -> list[list[str]]:
    """Raw lines of each ADF example (examples end at empty lines or EOF)."""
    out, cur = [], []
    for line in text.split("\n"):
        if line:
            cur.append(line)
        elif cur:
            out.append(cur)
            cur = []
    return out + [cur] if cur else out


def multiclass_as_cb(seed: int = 1, tags: bool = True) -> str:
    """VW's ``multiclass`` file as a logged 10-action CB stream (uniform logging policy)."""
    rng = random.Random(seed)
    lines = []
    for i, row in enumerate(need(TRAIN / "multiclass").read_text().splitlines()):
        y, feats = row.split(" ", 1)
        a = rng.randint(1, 10)
        tag = f"'r{i} " if tags and i % 3 == 0 else ""
        lines.append(f"{a}:{0 if a == int(y) else 1}:0.1 {tag}{feats}")
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------- features vs VW
def vw_groups(ex) -> dict[str, list[tuple[int, float]]]:
    groups = {}
    for i in range(ex.num_namespaces()):
        ns = ex.get_ns(i)
        groups[ns.ns] = [(ex.feature(ns, j) & MASK, ex.feature_weight(ns, j))
                         for j in range(ex.num_features_in(ns))]
    return groups


def our_groups(ws, namespaces, constant=True) -> dict[str, list[tuple[int, float]]]:
    groups: dict[str, list[tuple[int, float]]] = {}
    for name, feats in namespaces:
        seed = ws.hash_space(name)
        groups.setdefault(name.encode()[:1].decode("latin-1"), []).extend(
            (ws.hash_feature(f, seed) & MASK, v) for f, v in feats)
    if constant:
        groups["\x80"] = [(11650396 & MASK, 1.0)]
    return groups


def assert_same_features(ws, vw_ex, namespaces, constant=True):
    theirs, ours = vw_groups(vw_ex), our_groups(ws, namespaces, constant)
    assert sorted(theirs) == sorted(ours)
    for key, feats in ours.items():
        assert [h for h, _ in feats] == [h for h, _ in theirs[key]], key
        np.testing.assert_allclose([v for _, v in feats], [v for _, v in theirs[key]], rtol=2e-6)


def assert_same_label(vw_ex, label: Label | None, action: int | None = None):
    n = vw_ex.get_cbandits_num_costs()
    labelled = n and vw_ex.get_cbandits_cost(0) != FLT_MAX
    if label is None:
        assert not labelled
        return
    assert n == 1 and labelled
    assert vw_ex.get_cbandits_cost(0) == pytest.approx(label.cost, rel=1e-6)
    prob = vw_ex.get_cbandits_probability(0)
    assert prob == (0.0 if label.prob is None else pytest.approx(label.prob, rel=1e-6))
    if action is not None:
        assert vw_ex.get_cbandits_class(0) == action


def check_adf_stream(text: str, args: str = "--cb_explore_adf") -> int:
    ws = vw.Workspace(args + " --quiet")
    examples = list(iter_adf(io.StringIO(text)))
    raw = blocks(text)
    assert len(examples) == len(raw)
    for ex, lines in zip(examples, raw, strict=True):
        vw_exs = ws.parse(lines)
        assert vw_exs[0].get_tag() == (ex.tag or "")
        if ex.shared is not None:
            assert_same_features(ws, vw_exs[0], ex.shared, "--noconstant" not in args)
        acts = vw_exs[1:] if ex.shared is not None else vw_exs
        assert len(acts) == len(ex.actions)
        for i, (vw_ex, feats) in enumerate(zip(acts, ex.actions, strict=True)):
            assert_same_features(ws, vw_ex, feats, "--noconstant" not in args)
            assert_same_label(vw_ex, ex.label if ex.label and ex.label.action == i else None)
        ws.finish_example(vw_exs)
    ws.finish()
    return len(examples)


@pytest.mark.parametrize("args", ["--cb_explore_adf", "--cb_explore_adf --noconstant"])
def test_cb_load_features_match_vw(args):
    assert check_adf_stream(need(TRAIN / "cb_load.dat").read_text(), args) == 113


def test_cb_test_ldf_features_match_vw():
    assert check_adf_stream(need(TRAIN / "cb_test.ldf").read_text()) == 3


def test_single_line_multiclass_as_cb_match_vw():
    text = multiclass_as_cb()
    ws = vw.Workspace("--cb_explore 10 --quiet")
    examples = list(iter_cb(io.StringIO(text), 10))
    assert len(examples) == len(text.splitlines())
    for ex, line in zip(examples, text.splitlines(), strict=True):
        vw_ex = ws.parse(line)
        assert_same_features(ws, vw_ex, ex.features)
        assert_same_label(vw_ex, ex.label, ex.label.action)
        assert vw_ex.get_tag() == (ex.tag or "")
        ws.finish_example(vw_ex)
    ws.finish()


NAME = st.text("abcxyzABUZ019_=-.^*#é", min_size=1, max_size=6)
NUMBER = st.one_of(st.integers(-999, 999).map(str),
                   st.floats(-1e4, 1e4).filter(lambda x: abs(x) > 1e-6).map(lambda x: f"{x:.5g}"),
                   st.sampled_from(["0", "1e-3", ".5", "2.", "-0", "+3", "1E2"]))
FEATURE = st.one_of(NAME, st.tuples(NAME, NUMBER).map(":".join),
                    NUMBER.map(lambda v: ":" + v))
SEP = st.sampled_from([" ", "  ", "\t", " \t "])


@st.composite
def vw_line(draw, label=True):
    parts = []
    for _ in range(draw(st.integers(1, 4))):
        head = draw(st.one_of(st.just(""), NAME, st.tuples(NAME, NUMBER).map(":".join)))
        feats = draw(st.lists(FEATURE, max_size=5))
        parts.append("|" + head + "".join(draw(SEP) + f for f in feats))
    lab = ""
    if label and draw(st.booleans()):
        lab = f"{draw(st.integers(1, 3))}:{draw(NUMBER)}:{draw(st.sampled_from(['0.5', '1']))} "
    tag = draw(st.sampled_from(["", "'t1 ", "'x:y ", "tg"]))
    return lab + tag + "".join(parts)


@VS_VW
@given(st.lists(vw_line(), min_size=1, max_size=4))
def test_generated_single_lines_match_vw(lines):
    ws = WS_CB
    examples = list(iter_cb(lines, 3))
    for ex, line in zip(examples, lines, strict=True):
        vw_ex = ws.parse(line)
        assert_same_features(ws, vw_ex, ex.features)
        assert_same_label(vw_ex, ex.label, ex.label.action if ex.label else None)
        assert vw_ex.get_tag() == (ex.tag or "")
        ws.finish_example(vw_ex)


@VS_VW
@given(st.lists(vw_line(label=False), min_size=1, max_size=5), st.booleans(),
       st.integers(0, 4), st.data())
def test_generated_adf_examples_match_vw(lines, shared, labelled, data):
    if labelled < len(lines):
        lines[labelled] = f"0:{data.draw(NUMBER)}:0.25 " + lines[labelled]
    if shared:
        lines.insert(0, "shared " + data.draw(vw_line(label=False)))
    check_adf_stream("\n".join(lines) + "\n\n")


# ------------------------------------------------------------- flatten vs VW's --audit
def vw_audit(args: str, lines: list[str], capfd) -> list[dict[str, float]]:
    """VW's ``--audit`` features of each action line (VW writes them to the C++ stdout)."""
    capfd.readouterr()
    ws = vw.Workspace(args + " --audit --quiet")
    exs = ws.parse(lines)
    ws.predict(exs)
    ws.finish_example(exs)
    ws.finish()
    out = []
    for row in capfd.readouterr().out.split("\n"):
        if row.startswith("\t"):
            acc: dict[str, float] = {}
            for item in row.strip("\t").split("\t"):
                name, _, value = item.split(":")[:3]
                name = "constant" if name == "Constant" else name
                acc[name] = acc.get(name, 0.0) + float(value)
            out.append(acc)
    return out


def assert_flatten_matches(args, lines, interactions, capfd, constant=True):
    ex, = iter_adf(lines)
    ours = [flatten(merge_shared(ex.shared, a), interactions, constant) for a in ex.actions]
    assert flatten_adf(ex.shared, ex.actions, interactions, constant) == ours
    theirs = vw_audit(args, lines, capfd)
    assert len(ours) == len(theirs)
    for mine, vws in zip(ours, theirs, strict=True):
        assert sorted(mine) == sorted(vws)
        for key, value in mine.items():
            assert value == pytest.approx(vws[key], rel=1e-5), key


@pytest.mark.parametrize("q", [(), ("UA",), ("UA", "AU"), ("AA",), ("U:",), (":U",), ("::",),
                               ("::", "UA"), ("Ux",)])
def test_flatten_interactions_match_vw_audit(q, capfd):
    lines = ["shared 'a |User user=Tom t:2 |Uz:0.5 w", "|Action a b:0.5 |Up p | x y:3",
             "0:1:0.5 |Action c | x"]
    args = "--cb_explore_adf " + " ".join(f"-q {s}" for s in q)
    assert_flatten_matches(args, lines, q, capfd)
    assert_flatten_matches(args + " --noconstant", lines, q, capfd, constant=False)


def test_flatten_cb_load_with_q_ua(capfd):
    for lines in blocks(need(TRAIN / "cb_load.dat").read_text())[:5]:
        assert_flatten_matches("--cb_explore_adf -q UA", lines, ("UA",), capfd)


def test_flatten_rejects_cubic_and_sums_duplicates():
    with pytest.raises(ValueError, match="2-namespace"):
        flatten((("a", (("x", 1.0),)),), ["abc"])
    assert flatten(((" ", (("x", 1.0), ("x", 2.0))),), constant=False) == {"x": 3.0}


# ------------------------------------------------------------------ -p byte identity
def run_adf(args: str, text: str, tmp_path: Path) -> tuple[str, list]:
    pred = tmp_path / "vw.predict"
    ws = vw.Workspace(f"{args} --quiet -p {pred}")
    probs = []
    for lines in blocks(text):
        exs = ws.parse(lines)
        ws.learn(exs)
        probs.append(exs[0].get_action_scores())
        ws.finish_example(exs)
    ws.finish()
    return pred.read_text(), probs


def orders(predict_text: str, sep: str = "\n\n") -> list[list[int]]:
    recs = predict_text.split(sep)[:-1]
    return [[int(p.split(":")[0]) for p in r.split(" ")[0].split(",") if p] for r in recs]


@pytest.mark.parametrize("name,args", [
    ("cb_load.dat", "--cb_explore_adf -q UA --regcb --mellowness .001"),
    ("cb_load.dat", "--cb_explore_adf -q UA --squarecb"),
    ("cb_test.ldf", "--cb_explore_adf --regcb --noconstant"),
    ("cb_test.ldf", "--cb_explore_adf --epsilon 0.3"),
    ("tagged", "--cb_explore_adf --softmax --lambda 1"),
])
def test_adf_predictions_byte_identical(name, args, tmp_path):
    if name == "tagged":  # tags on shared and first action lines, a shared-only example
        text = "shared 'u1 |s a\n|x 1\n0:1:0.5 'ignored |x 2\n\n\n'a2 |x 1\n|x 3\n\nshared |s b\n"
    else:
        text = need(TRAIN / name).read_text()
    expected, probs = run_adf(args, text, tmp_path)
    examples = list(iter_adf(io.StringIO(text)))
    ours = "".join(format_pmf([(a, p[a]) for a in order], ex.tag)
                   for ex, p, order in zip(examples, probs, orders(expected), strict=True))
    assert ours == expected
    if "mellowness .001" in args:
        assert ours == (REF / "regcb_pred.predict").read_text()


@pytest.mark.parametrize("legacy", [False, True])
def test_single_line_predictions_byte_identical(legacy, tmp_path):
    text = multiclass_as_cb(seed=2) + "\n"  # trailing empty line: no output for it
    pred = tmp_path / "vw.predict"
    ws = vw.Workspace(f"--cb_explore 10 --quiet -p {pred}" + (" --cb_force_legacy" * legacy))
    probs = []
    for ex in iter_cb(io.StringIO(text), 10):
        vw_ex = ws.parse(text.splitlines()[ex.line_no - 1])
        ws.learn(vw_ex)
        probs.append((vw_ex.get_action_scores(), ex.tag))
        ws.finish_example(vw_ex)
    ws.finish()
    expected = pred.read_text()
    if legacy:
        ours = "".join(format_legacy(p, tag) for p, tag in probs)
    else:
        ours = "".join(format_pmf([(a, p[a]) for a in order], tag)
                       for (p, tag), order in zip(probs, orders(expected), strict=True))
    assert ours == expected


def test_stream_shape_matches_vw_driver(tmp_path):
    """Blank-line runs, a shared-only example and EOF without blank line, via VW's own reader."""
    text = "shared 't |s a\n|a x\n |\n\n\n\nshared |s b\n\n|a x\n|a y\n\n\n|a z"
    data, pred = tmp_path / "in.dat", tmp_path / "vw.predict"
    data.write_text(text)
    ws = vw.Workspace(f"--cb_explore_adf --quiet -d {data} -p {pred}")
    ws.run_parser()
    ws.finish()
    ours = list(iter_adf(io.StringIO(text)))
    assert [len(ex.actions) for ex in ours] == [2, 0, 2, 1]
    assert pred.read_text() == "".join(
        format_pmf([(i, 1 / len(ex.actions)) for i in range(len(ex.actions))], ex.tag)
        for ex in ours)


def test_format_prob_edge_values():
    assert [format_prob(p) for p in (1, 0.5, 0.0142857, 1e-05, 4e-7, 6e-7, 0, 0.9999996, 1 / 3)] \
        == ["1", "0.5", "0.014286", "0.00001", "0", "0.000001", "0", "1", "0.333333"]
    assert format_pmf([]) == "\n\n"
    assert format_legacy([1.0, 0.0]) == "1.000000 0.000000 \n"


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 40), k=st.integers(1, 30))
def test_a_block_of_predictions_is_its_lines_one_by_one(seed, n, k):
    """The command writes a block's ``-p`` text at once (each distinct probability formatted
    once): the text of `format_pmf` and `format_legacy` line by line."""
    rng = np.random.default_rng(seed)
    pmfs = rng.choice([0.0, 1.0, 1 / k, 0.5, 1 / 3, 4e-7, 6e-7, 2**-7, 5e-7, 0.9999995],
                      size=(n, k))  # (2**-7 = 0.0078125: a tie at six decimals)
    pmfs[rng.random((n, k)) < 0.3] = rng.random()
    orders = np.argsort(rng.random((n, k)), axis=1)
    tags = [None if t % 3 else ["", f"t{t}", "é\u20ac", "x\udcff"][t % 4] for t in range(n)]
    lines = "".join(
        format_pmf([(a, pmfs[i, a]) for a in orders[i].tolist()], tags[i]) for i in range(n))
    assert format_block(pmfs, orders, tags) == lines  # (compiled, but a tag not UTF-8)
    assert vw_predictions.format_block_reference(pmfs, orders, tags) == lines
    assert format_legacy_block(pmfs, tags) == "".join(
        format_legacy(pmfs[i].tolist(), tags[i]) for i in range(n))



@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(0, 12), k=st.integers(1, 12))
def test_multi_slot_predictions_are_each_slots_pairs_drawn_first(seed, n, k):
    """The ``-p`` text of multi-slot examples: a line per slot, its offered actions with
    the drawn one first (`SlotDecision.drawn_first`), an empty line for a slot left
    without actions, an empty line after each example; compiled and reference alike."""
    rng = np.random.default_rng(seed)
    examples = []
    for _ in range(n):
        slots = []
        for _ in range(int(rng.integers(1, 4))):
            offered = tuple(sorted(rng.choice(3 * k, int(rng.integers(1, k + 1)),
                                              replace=False).tolist()))
            pmf = rng.choice([0.0, 1.0, 1 / 3, 0.5, 4e-7, 2**-7, rng.random()], len(offered))
            index = offered[int(rng.integers(len(offered)))]
            slots.append(None if rng.random() < 0.1 else SlotDecision(
                index, float(pmf[offered.index(index)]), pmf, offered, {}))
        examples.append(slots)
    lines = "".join("".join("\n" if slot is None else ",".join(
        f"{a}:{format_prob(p)}" for a, p in slot.drawn_first()) + "\n" for slot in slots)
        + "\n" for slots in examples)
    assert format_slots(examples) == lines
    assert vw_predictions.format_slots_reference(examples) == lines

# ------------------------------------------------------------------------ errors
ERRORS = [
    ("cb", "|a x\n1:2:3:4 |a b\n", 2, "label", "not action:cost:probability"),
    ("cb", "1:0:1.5 |a b\n", 1, "probability", "(0, 1]"),
    ("cb", "1:0:0 |a b\n", 1, "probability", "(0, 1]"),
    ("cb", "1:0:abc |a b\n", 1, "probability", "'abc'"),
    ("cb", "\n\n1:abc:0.5 |a b\n", 3, "cost", "cost 'abc' is not a number"),
    ("adf", "|a\nx:abc:0.5 |a b\n", 2, "cost", "cost 'abc' is not a number"),
    ("cb", "0:1:0.5 |a b\n", 1, "action_range", "outside 1..3"),
    ("cb", "4:1:0.5 |a b\n", 1, "action_range", "outside 1..3"),
    ("cb", "x:1:0.5 |a b\n", 1, "label", "not an integer"),
    ("cb", "1:1:0.5 2:1:0.5 |a b\n", 1, "label", "more than one label"),
    ("adf", "|a x\n0:1:0.5 |a y\n0:1:0.5 |a z\n\n", 3, "two_labels", "second labelled"),
    ("cb", "|a x:abc\n", 1, "feature_value", "'abc'"),
    ("cb", "|a x:nan\n", 1, "feature_value", "'nan'"),
    ("cb", "|a x:inf\n", 1, "feature_value", "'inf'"),
    ("cb", "|a x:\n", 1, "feature_value", "''"),
    ("cb", "|a x:1_0\n", 1, "feature_value", "'1_0'"),
    ("cb", "|a:zz x\n", 1, "namespace", "scale 'zz'"),
    ("cb", "|:2 x\n", 1, "namespace", "no name"),
    ("cb", "1:0:0.5 a b\n", 1, "no_bar", "no '|'"),
    ("cb", "shared |a x\n", 1, "shared", "multi-line"),
    ("adf", "|a x\nshared |s y\n", 2, "shared", "first line"),
    ("adf", "shared 1:0:0.5 |s y\n", 1, "label", "shared line cannot carry"),
    ("adf", "0:1:0.5|a x\n", 1, "tag", "reads it as a tag"),
    ("adf", "|a x\r y\n", 1, "control", "carriage return"),
    ("adf", "|a\n" * 5 + "\n", 4, "too_long", "more than 3 action lines"),
]


@pytest.mark.parametrize("mode,text,line_no,rule,detail", ERRORS)
def test_errors_name_line_and_problem(mode, text, line_no, rule, detail):
    with pytest.raises(VWParseError) as info:
        if mode == "cb":
            list(iter_cb(io.StringIO(text), 3))
        else:
            list(iter_adf(io.StringIO(text), max_lines=3))
    err = info.value
    assert isinstance(err, ValueError)
    assert (err.line_no, err.rule) == (line_no, rule)
    assert str(err).startswith(f"line {line_no}: {err.text!r} - ") and detail in str(err)


def test_error_message_format_and_pickle():
    import pickle

    with pytest.raises(VWParseError) as info:
        list(iter_adf(["|a", "x:abc:0.5 |a b"]))
    assert str(info.value) == "line 2: 'x:abc:0.5 |a b' - cost 'abc' is not a number"
    again = pickle.loads(pickle.dumps(info.value))
    assert (str(again), again.rule) == (str(info.value), "cost")


def test_strict_eof():
    text = "|a x\n|a y\n\n|a z\n|a w\n"
    assert len(list(iter_adf(io.StringIO(text)))) == 2
    with pytest.raises(VWParseError) as info:
        list(iter_adf(io.StringIO(text), strict_eof=True))
    assert (info.value.line_no, info.value.rule) == (4, "eof")


def test_lenient_mode_skips_and_resynchronises():
    text = ("|a 1\n0:1:0.5 |a 2\n\n|a x:bad\n|a 3\n\n0:1:0.5 |a 4\n0:1:0.5 |a 5\n|a 6\n\n"
            "|a 7\n\n|a 8")
    errors: list[VWParseError] = []
    got = list(iter_adf(io.StringIO(text), on_error=errors.append, strict_eof=True))
    assert [ex.line_no for ex in got] == [1, 11]
    assert [(e.line_no, e.rule) for e in errors] == [(4, "feature_value"), (8, "two_labels"),
                                                      (13, "eof")]
    errors.clear()
    got = list(iter_adf(["|a 1", "0:1:0.5 |a 2", "  ", "|a 3", "", "|a 4"], errors.append))
    assert [ex.line_no for ex in got] == [1, 6] and not errors  # "  ": an action, as in VW
    assert got[0].actions[2] == ()
    errors.clear()
    cb = list(iter_cb(["1:0:0.5 |a x", "7:0:0.5 |a x", "|a y"], 3, on_error=errors.append))
    assert [ex.line_no for ex in cb] == [1, 3] and errors[0].rule == "action_range"


def test_max_lines_recovers_after_separator():
    errors: list[VWParseError] = []
    got = list(iter_adf(["|a"] * 50 + ["", "|b", ""], on_error=errors.append, max_lines=10))
    assert len(errors) == 1 and [ex.line_no for ex in got] == [52]


# ------------------------------------------------------------- semantics and laziness
def test_examples_are_yielded_without_read_ahead():
    consumed = []

    def source():
        for line in ["shared |s a", "|a 1", "0:0:0.5 |a 2", "", "|a 3"]:
            consumed.append(line)
            yield line
        raise AssertionError("read past the end")

    it = iter_adf(source())
    first = next(it)
    assert len(consumed) == 4 and isinstance(first, ADFExample)
    assert first.label == Label(1, 0.0, 0.5) and len(first.actions) == 2


def test_vw_label_and_tag_rules():
    assert parse_line("1:2 |a x", 3).label == Label(1, 2.0, None)  # VW test label
    assert parse_line("2 |a x", 3).label is None
    assert parse_line("tg|a x", 3).tag == "tg"
    assert parse_line("junk\t1:0:0.5 't |a x", 3)[1:3] == (Label(1, 0.0, 0.5), "t")
    assert next(iter_cb(["\ufeff1:0:1 |a x\r\n"], 1)) == CBExample(
        (("a", (("x", 1.0),)),), Label(1, 0.0, 1.0), None, 1)
    assert parse_namespaces("a:0 x y| z:0 w :2 :0 :5") == (
        (" ", (("w", 1.0), ("0", 2.0), ("2", 5.0))),)


def test_memoised_lines_keep_labels_tags_and_positions():
    text = "|a 1\n|a 2\n\n0:1:0.5 |a 2\n|a 1\n\n'tg |a 1\n0:2:0.5 |a 1\n\n"
    got = list(iter_adf(io.StringIO(text * 3)))
    assert [(ex.label, ex.tag) for ex in got[:3]] == [
        (None, None), (Label(0, 1.0, 0.5), None), (Label(1, 2.0, 0.5), "tg")]
    assert got[:3] * 3 == [ex._replace(line_no=got[i % 3].line_no) for i, ex in enumerate(got)]


# ------------------------------------------------------------------------ fuzzing
def only_examples_or_parse_errors(lines: list[str]) -> None:
    """Strict runs may stop at a VWParseError; lenient runs must not raise at all."""
    for make in (lambda report: iter_adf(lines, report, strict_eof=True, max_lines=20),
                 lambda report: iter_cb(lines, 3, report)):
        try:
            for ex in make(None):
                check_example(ex)
        except VWParseError as err:
            assert err.line_no >= 1 and err.rule
        errors: list[VWParseError] = []
        for ex in make(errors.append):
            check_example(ex)
        assert all(isinstance(err, VWParseError) for err in errors)


def check_example(ex: ADFExample | CBExample) -> None:
    if isinstance(ex, ADFExample):
        groups = list(ex.actions) + ([ex.shared] if ex.shared is not None else [])
        assert ex.label is None or 0 <= ex.label.action < len(ex.actions)
    else:
        groups = [ex.features]
        assert ex.label is None or 1 <= ex.label.action <= 3
    for namespaces in groups:
        for name, feats in namespaces:
            assert name == " " or (name and not set(name) & set(" \t|:\r\n"))
            for f, v in feats:
                assert f and not set(f) & set(" \t|:\r\n") and math.isfinite(v) and v != 0
    if ex.label is not None:
        assert math.isfinite(ex.label.cost)
        assert ex.label.prob is None or 0 < ex.label.prob <= 1


@FUZZ
@given(st.binary(max_size=400))
def test_fuzz_random_bytes(data):
    text = data.decode("utf-8", errors="replace")
    only_examples_or_parse_errors(text.split("\n"))
    only_examples_or_parse_errors(io.StringIO(text).readlines())


CB_LOAD = (TRAIN / "cb_load.dat").read_text().split("\n") if (TRAIN / "cb_load.dat").exists() \
    else ["shared |User a", "0:0:0.5 |Action b", "|Action c", ""]


@FUZZ
@given(st.integers(0, len(CB_LOAD) - 12), st.lists(st.tuples(
    st.sampled_from(["ins", "del", "rep"]), st.integers(0, 11), st.integers(0, 80),
    st.sampled_from(list("|: '\t\r\n\ufeff0.5e-+x_") + ["shared", "nan", "inf", "1e999"])),
    min_size=1, max_size=6))
def test_fuzz_mutated_cb_load(start, edits):
    window = CB_LOAD[start:start + 12]
    for op, row, col, chars in edits:
        line = window[row]
        col = min(col, len(line))
        if op == "ins":
            line = line[:col] + chars + line[col:]
        elif op == "del":
            line = line[:col] + line[col + len(chars):]
        else:
            line = line[:col] + chars + line[col + 1:]
        window[row] = line
    only_examples_or_parse_errors(window)
    only_examples_or_parse_errors("\n".join(window).split("\n"))


LABEL_HEAD = st.one_of(
    st.just(""),
    st.tuples(st.sampled_from(["1", "2", "3", "4", "0", "01", "x", ""]),
              st.sampled_from(["", ":0", ":1", ":-2.5", ":1e40", ":nan", ":", ":1_0"]),
              st.sampled_from(["", ":0.5", ":1", ":0", ":2", ":1e-3", ":0.5:1"]),
              st.sampled_from([" ", "  ", "\t", ""]),
              st.sampled_from(["", "'t ", "tag ", "shared "])).map("".join),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(LABEL_HEAD, vw_line(label=False)), min_size=1, max_size=6))
def test_block_label_reader_equals_the_line_by_line_reader(lines):
    """`read_cb_block` (compiled scanner for plain labels) reads labels, tags, bodies and
    errors as `iter_cb_lines` does line by line."""
    texts = [head + body for head, body in lines]
    block = read_cb_block(texts, 3)
    for i, text in enumerate(texts):
        errors = []
        reference = list(iter_cb_lines([text], 3, errors.append))
        if errors:
            assert block.errors[i].detail == errors[0].detail
            continue
        assert i not in block.errors
        line, = reference
        learnable = line.label is not None and line.label.prob is not None
        assert block.action[i] == (line.label.action if learnable else 0)
        if learnable:
            assert (block.cost[i], block.prob[i]) == (line.label.cost, line.label.prob)
        assert (block.tags[i], block.bodies[i]) == (line.tag, line.body)


# -- whole ADF examples taken by the compiled reader ------------------------------------

ADF_LINES = ["shared |s a:1 b:2", "shared 't9 |s a:1", "|a x", "|a y:0.5", "0:1:0.5 |a x",
             "0:0:0.25 |a y:0.5", "'tag |a x", "0:1:0.5 'tag |a x", "", "", "   ", "|a x\r",
             "\ufeff|a x", "0:2 |a x", "shared |s é:1", "|a é", "oops", "1:2:0 |a x",
             "shared |a x"]


def _read_adf(text: str, fast: bool, chunk: int, max_lines: int, lenient: bool):
    from regcb_stream.io.read_ahead import ReadAhead

    with tempfile.TemporaryFile() as f:
        f.write(text.encode("utf-8"))
        f.seek(0)
        lines = ReadAhead(f.fileno(), chunk=chunk)
        if not fast:
            lines.take_adf = None
        errors = []
        try:
            examples = list(iter_adf(lines, errors.append if lenient else None,
                                     shared_text=True, max_lines=max_lines))
        except VWParseError as error:
            return "raised", str(error)
        return examples, [str(e) for e in errors]


#: lines the compiled reader takes (after the first of each kind), with a few it does not
ADF_COMMON = ["shared |s a:1 b:2", "|a x", "|a y:0.5", "0:1:0.5 |a x", "0:0:0.25 |a y:0.5",
              "0:1:0.5 'tag |a x", "'tag |a x", "", "", "", "0:2 |a x", "oops"]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([ADF_LINES, ADF_COMMON]).flatmap(
           lambda kinds: st.lists(st.sampled_from(kinds), max_size=80)),
       st.sampled_from([16, 64, 4096]), st.sampled_from([2, 10_000]), st.booleans())
def test_compiled_adf_examples_read_as_line_by_line(lines, chunk, max_lines, lenient):
    """The compiled reader of whole ADF examples (`ReadAhead.take_adf`) gives the examples,
    line numbers and errors of the line-by-line reader, across chunk boundaries."""
    text = "\n".join(lines) + "\n"
    assert (_read_adf(text, True, chunk, max_lines, lenient)
            == _read_adf(text, False, chunk, max_lines, lenient))


def test_the_compiled_reader_gives_a_repeated_action_set_one_tuple():
    """Examples whose action lines repeat those of the example before share its actions
    tuple once the compiled reader takes them (a block then groups by action set at once:
    `vw_blocks.groups_of`); another action set gets its own."""
    same, other = "shared |s a:1\n|a x\n|a y\n\n", "shared |s a:2\n|a x\n|a z\n\n"
    examples, _ = _read_adf(same * 5 + other * 5, True, 4096, 10_000, False)
    assert len(examples) == 10 and len({id(example.actions) for example in examples}) < 8
    assert examples[3].actions is examples[4].actions
    assert examples[8].actions is examples[9].actions is not examples[4].actions


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([b"", b"s", b"ss", b"st", b"ts"]),
                          st.integers(0, 2)), min_size=1, max_size=30),
       st.data())
def test_a_block_groups_by_initials_and_action_set(rows, data):
    """`vw_blocks.groups_of` (its one group found at once where every example shares
    both) groups the examples by their namespace initials and action objects, in order."""
    sets = [(("a",),), (("a",),), (("b",),)]  # (0 and 1: equal sets, other objects)
    initials = b"".join(letters for letters, _ in rows)
    offsets = np.cumsum([0] + [len(letters) for letters, _ in rows])
    actions = [sets[s] for _, s in rows]
    examples = sorted(data.draw(st.sets(st.integers(0, len(rows) - 1), min_size=1)))
    want: dict = {}
    for i in examples:
        key = (rows[i][0], *map(id, actions[i]))
        want.setdefault(key, []).append(i)
    assert vw_blocks.groups_of(initials, offsets, actions, examples) == want
