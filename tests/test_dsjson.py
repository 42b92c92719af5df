"""DSJSON events against VW's own parser (``Workspace("--cb_explore_adf --dsjson").parse``):
the same features (hashed as VW hashes them) and labels on every DSJSON file VW tests with."""

from __future__ import annotations

import collections

import numpy as np
import pytest
from test_cli import TRAIN, needs
from vowpalwabbit import Workspace

from regcb_stream.io.dsjson import iter_dsjson, parse_event
from regcb_stream.io.hashing import feature_hash, mask, namespace_hash
from regcb_stream.io.vw_text import VWParseError

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


def test_events_without_actions_and_bad_lines():
    assert parse_event('{"a": [], "c": {"_multi": []}}') is None
    errors = []
    lines = ['{"c": {"_multi": [{"A": {"x": 1}}]}}', "not json", '{"c": 3}',
             '{"_labelIndex": 4, "_label_cost": 0, "_label_probability": 0.5, '
             '"c": {"_multi": [{"A": {"x": 1}}]}}']
    events = list(iter_dsjson(lines, errors.append))
    assert [no for no, _ in events] == [1]
    assert [(e.line_no, e.rule) for e in errors] == [(2, "json"), (3, "context"), (4, "label")]
    with pytest.raises(VWParseError, match="pdrop"):
        list(iter_dsjson(['{"pdrop": 1, "c": {"_multi": [{"A": {"x": 1}}]}}']))
    weighted = parse_event('{"pdrop": 0.75, "_skipLearn": true, "c": {"_multi": [{}]}}')
    assert weighted.weight == 4.0 and weighted.skip_learn


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


def test_events_without_actions_are_skipped_and_counted(tmp_path):
    from test_cli import run_cli

    line = (TRAIN / "dsjson_cb.json").read_text().splitlines()[0]
    empty = '{"a": [], "c": {"_multi": []}, "EventId": "x"}'
    result = run_cli(["--dsjson", "-p", "-"], stdin="\n".join([line, empty, line]) + "\n")
    assert result.returncode == 0 and result.stdout.count("\n\n") == 2
    assert "events without actions (skipped) = 1" in result.stderr


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
