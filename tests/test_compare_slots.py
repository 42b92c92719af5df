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


def slates_stream(n: int, seed: int = 0) -> str:
    """A slates log of a uniform logging policy: 3 items then 2 fonts, the slate's cost
    ``1 - r`` with ``r`` 0.7 for item 1 + the user and 0.3 for font ``user``."""
    rng, out = np.random.default_rng(seed), []
    for t in range(n):
        user, item, font = t % 2, int(rng.integers(3)), int(rng.integers(2))
        reward = 0.7 * (item == user + 1) + 0.3 * (font == user)
        out.append("\n".join([f"slates shared {1 - reward:g} |User u{user}",
                              *[f"slates action 0 |Item i{i}" for i in range(3)],
                              *[f"slates action 1 |Font f{i}" for i in range(2)],
                              f"slates slot {item}:0.333333 |Slot s0",
                              f"slates slot {font}:0.5 |Slot s1"]))
    return "\n\n".join(out) + "\n\n"


def test_slates_logs_compare_by_the_pseudo_inverse_estimator(tmp_path, capsys):
    """The logging policy scores its logged rewards, the uniform one (the log's) the
    same; RegCB learns each user's slate; a CCB log or both modes are refused."""
    path = tmp_path / "slates.dat"
    text = slates_stream(400)
    path.write_text(text)
    rows = {row.name: row for row in compare_slots(str(path), vw=["--epsilon 0.05 -q UI"],
                                                   kind="slates")}
    assert sorted(rows) == ["RegCB", "logging policy", "uniform random",
                            "vw --epsilon 0.05 -q UI"]
    logged = -np.mean([float(line.split()[2]) for line in text.splitlines()
                       if line.startswith("slates shared")])
    assert rows["logging policy"].estimate == pytest.approx(logged)
    assert rows["uniform random"].estimate == pytest.approx(logged, abs=1e-5)
    assert rows["RegCB"].low > rows["uniform random"].high
    assert rows["RegCB"].snips is None and rows["RegCB"].examples == 400
    ccb = tmp_path / "ccb.dat"
    ccb.write_text(ccb_stream(5))
    assert main([str(ccb), "--slates", "--quiet"]) == 1
    assert "line 1: a ccb example: --slates compares slates logs" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([str(path), "--slates", "--ccb_explore_adf"])
    assert "--slates: not with --ccb_explore_adf" in capsys.readouterr().err
