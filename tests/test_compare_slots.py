"""``regcb-compare --ccb_explore_adf``: RegCB's slots and VW's CCB explorers on a CCB log."""

import json

import numpy as np
import pytest

from regcb_stream.evaluation.compare import main
from regcb_stream.evaluation.compare_slots import compare_slots
from regcb_stream.io.vw_slots import iter_slots
from tests.test_slots import ccb_json, ccb_stream


@pytest.fixture(scope="module")
def ccb_log(tmp_path_factory):
    path = tmp_path_factory.mktemp("ccb") / "log.dat"
    path.write_text(ccb_stream(600))
    return path


@pytest.fixture(scope="module")
def rows(ccb_log):
    """Each candidate's rows: its ranking's, then its slots'."""
    table, out = compare_slots(str(ccb_log), vw=["--epsilon 0.05"], interactions=["UA"]), {}
    for row in table:
        if not row.name.startswith("  slot"):
            candidate = out.setdefault(row.name, [])
        candidate.append(row)
    return out


def test_the_logging_policy_scores_its_logged_rewards_per_slot_and_in_sum(ccb_log, rows):
    costs = np.zeros(3)
    examples = list(iter_slots(ccb_log.read_text().splitlines(keepends=True)))
    for example in examples:
        costs += [slot.outcome.cost for slot in example.slots]
    logged = -costs / len(examples)
    ranking, *slots = rows["logging policy"]
    assert ranking.estimate == pytest.approx(logged.sum())
    assert ranking.examples == len(examples)
    assert [row.estimate for row in slots] == pytest.approx(logged)
    assert [row.snips for row in slots] == pytest.approx(logged)


def test_regcb_and_vw_learn_the_first_slot_above_the_baselines(rows):
    """The first slot's best action is 1 + the user (cost 0): both learners find it; the
    log is uniform, so the uniform policy scores what the log does."""
    first = {name: candidate[1] for name, candidate in rows.items()}
    assert first["uniform random"].estimate == pytest.approx(first["logging policy"].estimate)
    for learner in ("RegCB", "vw --epsilon 0.05"):
        assert first[learner].low > first["uniform random"].high
        assert rows[learner][0].estimate > rows["uniform random"][0].estimate
    assert sorted(rows) == ["RegCB", "logging policy", "uniform random", "vw --epsilon 0.05"]


def test_ccb_dsjson_logs_compare_too(tmp_path):
    path = tmp_path / "log.json"
    path.write_text(ccb_json(200))
    names = [row.name for row in compare_slots(str(path), vw=["--epsilon 0.1"], dsjson=True)]
    assert names == ["RegCB", "  slot 1", "  slot 2", "vw --epsilon 0.1", "  slot 1",
                     "  slot 2", "uniform random", "  slot 1", "  slot 2", "logging policy",
                     "  slot 1", "  slot 2"]


def test_the_command_prints_the_table_and_refuses_what_slots_do_not_take(ccb_log, capsys):
    assert main([str(ccb_log), "--ccb_explore_adf", "--vw=--squarecb", "--json", "-",
                 "--quiet"]) == 0
    table = json.loads(capsys.readouterr().out)
    assert [row["name"] for row in table][::4] == ["RegCB", "vw --squarecb", "uniform random",
                                                   "logging policy"]
    with pytest.raises(SystemExit):
        main([str(ccb_log), "--ccb_explore_adf", "--replays", "3"])
    assert "--replays: not with --ccb_explore_adf" in capsys.readouterr().err


def test_a_log_without_outcomes_is_refused(tmp_path, capsys):
    path = tmp_path / "log.dat"
    path.write_text("ccb shared |User u\nccb action |A a\nccb slot |S s\n\n")
    assert main([str(path), "--ccb_explore_adf", "--quiet"]) == 1
    assert "no slot with an outcome" in capsys.readouterr().err
