"""DSJSON events against VW's own parser (``Workspace("--cb_explore_adf --dsjson").parse``):
the same features (hashed as VW hashes them) and labels on every DSJSON file VW tests with."""

from __future__ import annotations

import collections

import numpy as np
import pytest
from test_cli import TRAIN, needs
from vowpalwabbit import Workspace

from regcb_stream.io import dsjson
from regcb_stream.io.dsjson import iter_dsjson, parse_event
from regcb_stream.io.hashing import feature_hash, mask, namespace_hash
from regcb_stream.io.vw_text import Label

FILES = ["decisionservice.json", "dsjson_cb.json", "dsjson_cb_part1.json",
         "dsjson_cb_part2.json"]
VW_CONSTANT = 11650396


def ours(features) -> collections.Counter:
    """(slot, value) of each feature, the value as VW stores it (float32)."""
    return collections.Counter((feature_hash(namespace_hash(ns), name) & mask(18),
                                float(np.float32(v)))
                               for ns, feats in features for name, v in feats)


def vw_examples(ws, line: str) -> tuple[list, list]:
    examples = ws.parse(line)
    features = [collections.Counter((h & mask(18), v) for h, v in ex.iter_features()
                                    if h != VW_CONSTANT) for ex in examples]
    labels = [(i - 1, ex.get_cbandits_cost(0), ex.get_cbandits_probability(0))
              for i, ex in enumerate(examples) if i and ex.get_cbandits_num_costs()]
    ws.finish_example(examples)
    return features, labels


@pytest.mark.parametrize("name", FILES)
def test_features_and_labels_are_vws(name):
    path = needs(TRAIN / name)
    ws = Workspace("--cb_explore_adf --dsjson --quiet -b 18")
    lines = [line for line in path.read_text().splitlines() if line.strip()]
    for no, event in iter_dsjson(lines):
        features, labels = vw_examples(ws, lines[no - 1])
        assert [ours(event.shared)] + [ours(a) for a in event.actions] == features, no
        label = event.label
        assert labels == ([] if label is None else [
            (label.action, pytest.approx(label.cost), pytest.approx(label.prob))]), no
    ws.finish()
    assert len(lines) > 0


MULTI = '"c": {"_multi": [{"A": {"x": 1}}, {"A": {"x": 2}}]}'


def test_lines_vw_skips_are_skipped():
    """None for what VW skips: a line not starting with '{', an event without 'a' or
    'c._multi' (a reward line when rewards are not read), a _skipLearn event."""
    skipped = ["[CHECKPOINT INFO LINE]", "not json", ' {"a": [1], ' + MULTI + "}",
               '{"a": [], ' + MULTI + "}", "{" + MULTI + "}", '{"a": [1], "c": {}}',
               '{"a": [1], "_skipLearn": true, ' + MULTI + "}", '{"EventId": "e", "v": {}}']
    assert [parse_event(line, rewards=False) for line in skipped] == [None] * len(skipped)
    assert parse_event('{"EventId": "e", "v": 1}').value == 1.0
    assert parse_event('\ufeff{"a": [1], "_skipLearn": false, ' + MULTI + "}") is not None


def test_constructs_vw_reads():
    """Nulls anywhere, arrays mixing numbers, objects and nulls (numbers counted alone),
    nested objects as namespaces, _text's words, VW's loose case of label fields, a label
    without a cost (VW's unknown cost)."""
    event = parse_event('{"_labelIndex": 1, "_label_Cost": -1, "_label_Probability": 0.5, '
                        '"a": [2, 1], "EventId": null, "pdrop": null, "c": {"s": null, '
                        '"j": [{"a": 1}, null, 3, {"b": {"d": 2}}, 0, 4], "_text": "x y:z", '
                        '"_multi": [null, {"A": {"x": 1}}, {"A": {"x": 2}}]}}')
    assert event.label == Label(1, -1.0, 0.5) and len(event.actions) == 2
    assert event.shared == ((" ", (("x", 1.0), ("y_z", 1.0))), ("b", (("d", 2.0),)),
                            ("j", (("a", 1.0), ("0", 3.0), ("2", 4.0))))
    assert parse_event('{"_labelIndex": 1, "a": [2, 1], ' + MULTI + "}").label is None


@pytest.mark.parametrize("line, message", [
    ('{"_label_cost": -1, "_label_probability": "0.5", "_labelIndex": 0, "a": [1], '
     + MULTI + "}", "_label_probability is a string ('0.5'), not a finite number"),
    ('{"_label_cost": -1, "_label_probability": 0.5, "a": [1], ' + MULTI + "}",
     "_label_cost without _labelIndex"),
    ('{"_labelIndex": 4, "_label_cost": 0, "_label_probability": 0.5, "a": [1], '
     + MULTI + "}", "_labelIndex 4 is not an index into the 2 actions"),
    ('{"a": [1], "c": {"j": ["x"], "_multi": [{}]}}', "array 'j' holds a string ('x')"),
    ('{"a": [1], "c": {"j": [[1]], "_multi": [{}]}}', "array 'j' holds an array"),
    ('{"a": [1], "c": {"_multi": [{"_multi": []}]}}', "'_multi' out of place"),
    ('{"a": [1], "c": {"_multi": [3]}}', "'c._multi' holds the number 3"),
    ('{"a": [1], "c": 3}', "the context 'c' is the number 3"),
    ('{"a": [1], "EventId": 5, ' + MULTI + "}", "'EventId' is the number 5"),
    ('{"a": [1], "_skipLearn": 1, ' + MULTI + "}", "_skipLearn is the number 1"),
    ('{"a": [1], "pdrop": 1, ' + MULTI + "}", "pdrop 1 must be in [0, 1)"),
    ('{"a": [1], "pdrop": "0.5", ' + MULTI + "}", "pdrop is a string"),
    ('{"a": [1], "_label_Action": 1' + "0" * 400 + ", " + MULTI + "}",
     "_label_Action is the number 10000000000000000..., not a finite number"),
    ('{"EventId": "e", "v": 1' + "0" * 400 + "}", "reward \"v\" is the number 1000"),
    ('{"a": [1], "c": {"s": {"f": "\\ud800"}, "_multi": [{}]}}', "lone surrogate"),
    ('{"a": [1], "c": {"_multi": [{"f": "\\udc00"}]}}', "lone surrogate"),
    ('{"a": [1], "c": {"s": {"f": "\udcff"}, "_multi": [{}]}}', "not UTF-8: byte 0xff"),
    ('{"a": [1], "c": {"s": ' + '{"n": ' * 5000 + "1" + "}" * 5000 + ', "_multi": [{}]}}',
     "nested deeper than 500 levels"),
    ('{"a": [1], "c": {"s": ' + '{"n": ' * 600 + "1" + "}" * 600 + ', "_multi": [{}]}}',
     "nested deeper than 500 levels"),
    ('{"a": [1], ' + MULTI + "} x", "not a JSON object"),
])
def test_what_vw_refuses_is_an_error_naming_the_line(line, message):
    """Both readers (the compiled one and the reference) say what is wrong, at its line."""
    for compiled in (True, False):
        errors = []
        with pytest.MonkeyPatch.context() as patch:
            if not compiled:
                patch.setattr(dsjson, "_dsjson", None)
            assert list(dsjson.iter_dsjson_adf(["", line], errors.append)) == []
        assert [(e.line_no, message in e.detail) for e in errors] == [(2, True)], errors


@pytest.mark.parametrize("name", FILES)
def test_the_command_with_vws_regressor_makes_vws_decisions_on_dsjson(tmp_path, name):
    """``--dsjson`` read as VW reads it: with VW's regressor and decisions, the command's
    ``-p`` output is VW's ``--cb_explore_adf --dsjson --regcb`` output byte for byte."""
    from test_cli import run_cli

    data = needs(TRAIN / name)
    ours = run_cli(["--dsjson", "--regcb", "--oracle", "vw", "--vw_compat", "-d", str(data),
                    "-p", "-", "--quiet"])
    vw = tmp_path / "vw.p"
    Workspace(f"--cb_explore_adf --dsjson --regcb -d {data} -p {vw} --quiet").finish()
    assert ours.returncode == 0 and ours.stdout == vw.read_text()


def test_lines_vw_skips_are_skipped_and_counted():
    """The command skips and counts what VW skips: events without actions, _skipLearn
    events, checkpoint lines, reward lines without --reward_wait."""
    from test_cli import run_cli

    line = (TRAIN / "dsjson_cb.json").read_text().splitlines()[0]
    skipped = ['{"a": [], "c": {"_multi": []}, "EventId": "x"}', "[CHECKPOINT INFO LINE]",
               line.replace('"Version"', '"_skipLearn": true, "Version"'),
               '{"EventId": "13118d9b4c114f8485d9dec417e3aefe", "v": 1.0}']
    result = run_cli(["--dsjson", "-p", "-"], stdin="\n".join([line, *skipped, line]) + "\n")
    assert result.returncode == 0 and result.stdout.count("\n\n") == 2
    assert "DSJSON lines skipped as VW skips them = 4" in result.stderr


def test_iter_vw_and_regcb_ope_read_dsjson(tmp_path, capsys):
    from regcb_stream.command.main import main as stream_main
    from regcb_stream.evaluation.ope import main as ope_main
    from regcb_stream.integrations.river import iter_vw

    data = needs(TRAIN / "dsjson_cb.json")
    examples = list(iter_vw(str(data), dsjson=True, merge_shared=True, hash_bits=18))
    events = [e for _, e in iter_dsjson(data.read_text().splitlines()) if e is not None]
    assert [label.index for _, _, label in examples] == [e.label.action for e in events]
    model = tmp_path / "m.regcb"
    assert stream_main(["--dsjson", "-d", str(data), "-f", str(model), "--quiet"]) == 0
    assert ope_main(["-d", str(data), "--policy-model", str(model)]) == 0
    assert f"n = {len(events)}" in capsys.readouterr().out


def test_dsjson_costs_are_negative_rewards_by_default():
    """DSJSON costs are -reward, rewards in [0, 1]: --dsjson's cost range is [-1, 0] unless
    given (VW's [0, 1] would clip every bound to cost 0), and VW's under --vw_compat."""
    from test_cli import run_cli

    data = needs(TRAIN / "dsjson_cb.json")
    done = run_cli(["--dsjson", "-d", str(data)])
    assert done.returncode == 0 and "outside [cb_min_cost" not in done.stderr
    for flags in (["--vw_compat"], ["--cb_min_cost", "0"]):
        done = run_cli(["--dsjson", "-d", str(data), *flags])
        assert "cost -1 is outside [cb_min_cost, cb_max_cost] = [0, 1]" in done.stderr


def test_a_block_of_lines_of_both_readers():
    """A line the compiled reader takes (shared features as text) and one it leaves to the
    reference (a non-ASCII string: parsed features) are decided in one block."""
    from test_cli import run_cli

    line = (TRAIN / "dsjson_cb.json").read_text().splitlines()[0]
    other = line.replace('"Cathy"', '"Zoë"')
    alone = run_cli(["--dsjson", "-p", "-", "--quiet"], stdin=line + "\n").stdout
    both = run_cli(["--dsjson", "-p", "-", "--quiet"], stdin=f"{line}\n{other}\n")
    assert both.returncode == 0 and both.stdout.count("\n\n") == 2
    assert both.stdout.startswith(alone)
