"""The compiled DSJSON reader (``_dsjson.events``) against the reference (`parse_event`):
the same examples, features, labels and weights, or the same error, whatever the line."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_cli import TRAIN, needs
from test_dsjson import FILES
from vowpalwabbit import Workspace

from regcb_stream.io import dsjson
from regcb_stream.io.vw_text import VWParseError

pytestmark = pytest.mark.skipif(dsjson._dsjson is None, reason="the reader is not built")


def read(lines, compiled: bool) -> list:
    """Every example (or error) of the lines, without the line's text."""
    with pytest.MonkeyPatch.context() as patch:
        if not compiled:
            patch.setattr(dsjson, "_dsjson", None)
        errors: list[VWParseError] = []
        examples = list(dsjson.iter_dsjson_adf(lines, errors.append))
    return ([ex._replace(text="") for ex in examples],
            [(e.line_no, e.rule, e.detail) for e in errors])


@pytest.mark.parametrize("name", FILES)
def test_the_compiled_reader_reads_vws_files_as_the_reference(name):
    lines = needs(TRAIN / name).read_text().splitlines(keepends=True)
    compiled = read(lines, True)
    assert compiled == read(lines, False)
    assert len(compiled[0]) > 0
    assert all(dsjson._dsjson.events([line]) != [None] for line in lines if line.strip())


def test_pdrop_weights_are_vws():
    """VW divides the example's weight by 1 - pdrop in float32; its Python binding gives
    the weight truncated to an int."""
    ws = Workspace("--cb_explore_adf --dsjson --quiet")
    event = json.loads(needs(TRAIN / "dsjson_cb.json").read_text().splitlines()[0])
    for pdrop in [0, 0.1, 0.2, 0.25, 0.5, 0.75, 0.8, 0.9, 0.95, 0.99]:
        line = json.dumps({**event, "pdrop": pdrop})
        ours, = dsjson.iter_dsjson_adf([line])
        reference = dsjson.parse_event(line)
        examples = ws.parse(line)
        assert int(ours.weight) == examples[0].get_cbandits_weight(), pdrop
        assert ours.weight == reference.weight == np.float32(1) / (1 - np.float32(pdrop))
        ws.finish_example(examples)
    ws.finish()


GOOD_KEY = st.sampled_from(["a", "b", "_c", "7", "x1", "User", "tier", "q-r.s"])
ODD_KEY = st.sampled_from(["", "x y", "x:y", "x|y", "é", "a\tb", "t\u00e9", "a\\b", "_text",
                          "_multi", "_slots", "_label_cost", "_tag"])
GOOD_PLAIN = st.one_of(
    st.sampled_from([0, 1, -2, 0.5, -0.0, 3e38, 12345678901234567890, True, False, None]),
    st.floats(-1e6, 1e6), st.text(alphabet="ab |:1-", max_size=4))
ODD_PLAIN = st.one_of(
    st.sampled_from([1e-40, 1e39, float("nan"), float("inf")]),
    st.floats(), st.text(alphabet="ab\t\"\\é1", max_size=4))


def namespaces(key, plain):
    return st.one_of(
        st.dictionaries(key, plain, max_size=4),
        st.lists(st.dictionaries(key, plain, max_size=3), max_size=2),
        st.lists(st.one_of(st.integers(-3, 3), st.floats(-2, 2)), max_size=4),
        st.lists(st.one_of(plain, st.dictionaries(key, plain, max_size=2)), max_size=3),
        st.lists(st.one_of(st.none(), st.integers(-3, 3), st.dictionaries(key, plain,
                                                                         max_size=2))),
        st.dictionaries(key, st.dictionaries(key, plain, max_size=2), max_size=2))


@st.composite
def events(draw) -> str:
    """A DSJSON line: mostly well formed, with plain names and a valid label; one in four
    with odd names and values; one in ten cut off."""
    odd = draw(st.integers(0, 3)) == 0
    key = st.one_of(GOOD_KEY, ODD_KEY) if odd else GOOD_KEY
    plain = st.one_of(GOOD_PLAIN, ODD_PLAIN) if odd else GOOD_PLAIN
    simple = st.one_of(plain, st.dictionaries(key, plain, max_size=4),
                       st.lists(st.dictionaries(key, plain, max_size=3), max_size=2))
    value = st.one_of(plain, namespaces(key, plain)) if odd else simple
    context = draw(st.dictionaries(key, value, max_size=4))
    actions = draw(st.lists(st.dictionaries(key, value, max_size=3),
                            min_size=0 if odd else 1, max_size=4))
    if not odd or draw(st.booleans()):
        context["_multi"] = actions
    n = max(len(actions), 1)
    event = {"c": context}
    for name, field in [
            ("_labelIndex", st.one_of(st.integers(-1, n), st.just(1.0)) if odd else
             st.integers(0, n - 1)),
            ("_label_cost", st.one_of(st.floats(-2, 2), st.just("x")) if odd else
             st.floats(-2, 2)),
            ("_label_probability", st.floats(-0.5, 1.5) if odd else st.floats(0.01, 1)),
            ("a", st.lists(st.integers(1, 4), max_size=4, min_size=0 if odd else 1)),
            ("p", st.lists(st.floats(0, 1), max_size=4)),
            ("pdrop", st.floats(-0.5, 1.5) if odd else st.floats(0, 0.9)),
            ("_skipLearn", st.one_of(st.booleans(), st.none()) if odd else st.just(False)),
            ("_label_Action", st.one_of(st.integers(1, n), st.just("x")) if odd else
             st.integers(1, n)),
            ("_label_Cost" if odd else "Timestamp", st.one_of(st.floats(-2, 2), st.none(),
                                                               st.text(max_size=3))),
            ("_ba", st.lists(st.integers(1, 4), max_size=2) if odd else st.just([1])),
            ("_original_label_cost", st.one_of(st.floats(-1, 1), st.just("x")) if odd else
             st.floats(-1, 1)),
            ("EventId", st.one_of(st.text(alphabet="ab\\\"é", max_size=3), st.integers(),
                                  st.none()) if odd else st.text(alphabet="ab-01", max_size=8)),
            ("o", st.just([{"v": 1.0, "EventId": "e\"x\u00e9", "ActionTaken": False}]))]:
        if draw(st.integers(0, 3)):
            event[name] = draw(field)
    keys = draw(st.permutations(list(event)))
    text = json.dumps({k: event[k] for k in keys}, ensure_ascii=draw(st.booleans()))
    text = draw(st.sampled_from(["", "", "", " ", "\ufeff"])) + text if odd else text
    return text if draw(st.integers(0, 9)) else text[: draw(st.integers(0, len(text)))]


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(events(), min_size=1, max_size=5))
def test_any_line_reads_as_the_reference(lines):
    """Generated lines (odd keys, escapes, non-ASCII, nested and mixed arrays, bad labels,
    cut-off JSON): the compiled path gives the reference's examples and errors."""
    assert read(lines, True) == read(lines, False)


def test_repeated_keys_and_odd_lines_go_to_the_reference(monkeypatch):
    multi = '"_multi": [{"a": {"x": 1}}]'
    lines = ['{"c": {"u": {"x": 1, "x": 2}, ' + multi + '}}',
             '{"c": {"u": {"x": 1}, "u": {"y": 1}, ' + multi + '}}',
             '{"c": {' + multi + '}, "c": {' + multi + '}}',
             '{"c": {' + multi + ', ' + multi + '}}',
             '{"c": {"u": {"x": NaN}, ' + multi + '}}',
             '{"c": {"u": {"x": 01}, ' + multi + '}}',
             '{"c": {' + multi + '}} x',
             '   ', '{"a": [], "c": {' + multi + '}}']
    assert dsjson._dsjson.events(lines) == [None] * len(lines)
    assert read(lines, True) == read(lines, False)


def test_the_actions_of_a_repeated_multi_are_one_tuple():
    line = '{"a": [1], "c": {"u": {"x": %d}, "_multi": [{"a": {"x": 1}}, {"a": {"y": 1}}]}}'
    first, second, third = dsjson._dsjson.events([line % 1, line % 2, line.replace("y", "z")
                                                  % 3])
    assert first[1] is second[1] and first[1] != third[1]
    assert (first[0], second[0], third[1][1]) == ("u x:1", "u x:2", '{"a": {"z": 1}}')


def test_action_texts_met_before_are_found_by_their_bytes():
    """The command's reading (shared features as text, examples made by the compiled
    reader): action sets that change at every event, consecutive repeats, a non-ASCII text
    and more distinct texts than the table's first size give the reference's actions,
    labels and shared features; an action text is the same object wherever it recurs."""
    rng = np.random.default_rng(3)
    texts = [{"i": {"id": f"item{k}", "z": "Zoë" if k == 7 else "x"}} for k in range(1500)]
    lines = []
    for t in range(1200):
        chosen = rng.choice(len(texts), size=4, replace=False).tolist()
        event = {"_label_cost": -1.0, "_label_probability": 0.25, "_label_Action": 1,
                 "_labelIndex": 0, "a": [1, 2, 3, 4],
                 "c": {"u": {"age": t}, "_multi": [texts[k] for k in chosen]}}
        lines += [json.dumps(event, ensure_ascii=False)] * int(rng.integers(1, 3))
    got, want = ([], []), ([], [])
    for compiled, out in ((True, got), (False, want)):
        with pytest.MonkeyPatch.context() as patch:
            if not compiled:
                patch.setattr(dsjson, "_dsjson", None)
            for example in dsjson.iter_dsjson_adf(lines, shared_text=True):
                out[0].append(example.actions)
                out[1].append((example.label, dsjson.parse_namespaces(example.shared)
                               if isinstance(example.shared, str) else example.shared))
    assert got == want
    by_text = {}
    for actions in got[0]:
        for action in actions:
            assert by_text.setdefault(action, action) is action
