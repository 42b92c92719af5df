"""``regcb-compare``: RegCB and VW's explorers by explore-eval on one log, side by side."""

from __future__ import annotations

import json

import pytest
from test_cli import TRAIN, needs
from test_explore_eval import vw_reported

from regcb_stream.evaluation.compare import compare, main

LOG = TRAIN / "explore_eval_egreedy.dat"


def test_a_vw_row_is_vws_own_explore_eval():
    want = vw_reported("explore_eval_tr_1.stderr")
    rows = compare(str(needs(LOG)), vw=["--coin --epsilon 0.1"], interactions=["UA"])
    by_name = {row.name: row for row in rows}
    vw = by_name["vw --coin --epsilon 0.1"]
    assert vw.estimate == pytest.approx(-want["average loss"], abs=1e-6)
    assert vw.kept == want["weighted update count"] and vw.examples == 50
    assert vw.low < vw.estimate < vw.high
    assert [row.name for row in rows] == ["regcb (defaults)", "vw --coin --epsilon 0.1",
                                          "uniform random", "logging policy"]
    assert by_name["logging policy"].estimate == pytest.approx(0.58)
    assert 0 < by_name["regcb (defaults)"].kept <= 50


def test_regcb_takes_the_logs_cost_range_unless_its_flags_give_one():
    """The log's costs are -1 and 0: with VW's range [0, 1] and the optimistic prior every
    bound is clipped to 0 and RegCB, its ties shared, plays uniformly (its estimate is then
    the uniform policy's)."""
    rows = compare(str(needs(LOG)), regcb=["", "--cb_min_cost 0 --cb_max_cost 1 "
                                           "--ridge_prior optimistic --ties shared"], vw=[],
                   interactions=["UA"])
    defaults, clipped, uniform = rows[0], rows[1], rows[2]
    assert clipped.estimate == pytest.approx(uniform.estimate)
    assert defaults.estimate != pytest.approx(uniform.estimate)


def test_the_command_writes_a_table_json_and_a_plot(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    out, image = tmp_path / "c.json", tmp_path / "c.png"
    assert main([str(needs(LOG)), "-q", "UA", "--vw=--squarecb", "--quiet", "--json",
                 str(out), "--plot", str(image)]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == ["policy", "IPS", "95%", "interval", "SNIPS", "kept",
                                "examples"]
    assert [line.split()[0] for line in table[1:]] == ["regcb", "vw", "uniform", "logging"]
    rows = json.loads(out.read_text())
    assert [row["name"] for row in rows][:2] == ["regcb (defaults)", "vw --squarecb"]
    assert rows[0]["trace"][-1][0] == 50 and image.stat().st_size > 1000
    assert main([str(needs(LOG)), "--quiet", "--vw=--squarecb", "--json", "-"]) == 0
    assert json.loads(capsys.readouterr().out)[1]["name"] == "vw --squarecb"
    assert main([str(needs(LOG)), "--vw=--squarecb", "--snips"]) == 0
    captured = capsys.readouterr()
    assert "n/a" not in captured.out and "--replays 5" in captured.err


def test_bad_input(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main([str(tmp_path / "missing.dat")])
    assert "no such file" in capsys.readouterr().err
    assert main([str(needs(LOG)), "--quiet", "--vw=--no_such_flag"]) == 1
    assert "vw --no_such_flag --explore_eval failed" in capsys.readouterr().err


def test_students_quantiles():
    from scipy import stats

    from regcb_stream.evaluation.estimates import student_quantile

    for dof in (1, 2, 3, 4, 6, 10, 40):
        assert student_quantile(dof) == pytest.approx(stats.t.ppf(0.975, dof), rel=0.008)
    assert student_quantile(1.5) >= stats.t.ppf(0.975, 1.5)
    assert student_quantile(2.5) >= stats.t.ppf(0.975, 2.5)


def test_a_dsjson_log():
    """DSJSON logs: VW runs --dsjson --explore_eval, RegCB reads the events as the command
    does; both score every event (VW's -p has a line for each)."""
    rows = compare(str(needs(TRAIN / "dsjson_cb.json")), vw=["--epsilon 0.1"], dsjson=True)
    assert [row.examples for row in rows] == [23] * 4
    assert all(row.low <= row.estimate <= row.high for row in rows)


def test_replays_count_the_learners_path():
    from regcb_stream.evaluation.estimates import Row, combined, student_quantile

    one = Row("x", 0.5, 0.4, 0.6, 0.5, 0.4, 0.6, 10, 3.0, [(5, 0.5)], 0.05, 0.05)
    assert combined([one]) is one
    rows = [Row("x", v, v - 0.1, v + 0.1, v, v - 0.1, v + 0.1, 10, k, [(5, v)], 0.05, 0.05)
            for v, k in ((0.4, 2.0), (0.6, 4.0))]
    row = combined(rows)
    se2, path = 0.05 ** 2, 0.02 / 2  # s^2 = 0.02, R = 2
    half = student_quantile((se2 + path) ** 2 / path ** 2) * (se2 + path) ** 0.5
    assert (row.estimate, row.kept, row.trace) == (pytest.approx(0.5), 3.0, [(5, 0.5)])
    assert (row.low, row.high) == (pytest.approx(0.5 - half), pytest.approx(0.5 + half))
    assert row.se == pytest.approx((se2 + path) ** 0.5)
    no_snips = [Row("x", v, v - 0.1, v + 0.1, None, None, None, 10, se=0.05) for v in (0.4, 0.6)]
    assert combined(no_snips).snips is None
    replayed = compare(str(needs(LOG)), vw=["--coin --epsilon 0.1"], interactions=["UA"],
                       replays=3)
    assert all(r.low <= r.estimate <= r.high for r in replayed)


def test_replays_after_the_first_play_the_log_shuffled(tmp_path):
    """Replay s > 0 reads the log's examples in the order seeded by s: each VW replay's
    estimate is our estimator's on that order, so the row is their mean."""
    from regcb_stream.evaluation.compare import log_bytes, log_examples, shuffled
    from regcb_stream.evaluation.explore_eval import VWExplorer, explore_eval, read_log

    path = str(needs(LOG))
    copy, order = shuffled(log_examples(log_bytes(path), False), False, 1,
                            str(tmp_path / "copy.dat"))
    original = [ex.lines for ex in read_log(open(path))]
    assert [ex.lines for ex in read_log(open(copy))] == [original[i] for i in order]
    assert sorted(order) == list(range(len(original))) and list(order) != sorted(order)
    rows = compare(path, vw=["--coin --epsilon 0.1"], interactions=["UA"], replays=2,
                   multiplier="min")
    ours = [explore_eval(read_log(open(log)), VWExplorer("--coin --epsilon 0.1 -q UA"),
                         seed=seed, multiplier=0.011111111297375624)
            for seed, log in enumerate((path, copy))]
    assert rows[1].estimate == pytest.approx(-sum(r.ips_loss for r in ours) / 2, abs=1e-6)
    assert rows[1].kept == pytest.approx(sum(r.weighted_kept for r in ours) / 2)


def test_a_dsjson_log_shuffles_by_lines(tmp_path):
    from regcb_stream.evaluation.compare import log_examples, shuffled

    path = needs(TRAIN / "dsjson_cb.json")
    copy, order = shuffled(log_examples(path.read_bytes(), True), True, 3,
                            str(tmp_path / "copy.json"))
    lines = [line for line in path.read_bytes().splitlines() if line.strip()]
    assert open(copy, "rb").read().splitlines()[:len(lines)] == [lines[i] for i in order]
    rows = compare(str(path), vw=["--epsilon 0.1"], dsjson=True, replays=2)
    assert all(row.low <= row.estimate <= row.high for row in rows)


@pytest.mark.parametrize("points", [100, 7])
def test_vws_progress_lines_give_the_rows_that_its_predictions_give(points):
    """Without ``snips``, a VW row comes from VW's progress lines (``-P``): the same
    estimate, batch-means interval and trace as from each example's distribution (``-p``)."""
    path = str(needs(LOG))
    fast, full = (compare(path, vw=["--coin --epsilon 0.1", "--squarecb"], interactions=["UA"],
                          points=points, snips=snips) for snips in (False, True))
    for quick, slow in zip(fast[1:3], full[1:3]):
        assert quick.snips is None and slow.snips is not None
        assert quick.estimate == pytest.approx(slow.estimate, abs=1e-6)
        assert (quick.low, quick.high) == (pytest.approx(slow.low, abs=1e-4),
                                           pytest.approx(slow.high, abs=1e-4))
        assert [c for c, _ in quick.trace] == [c for c, _ in slow.trace]
        assert [v for _, v in quick.trace] == pytest.approx([v for _, v in slow.trace],
                                                            abs=1e-5)


def test_batch_means_count_dependent_terms():
    """Batches of one: the usual standard error of a mean; terms that move together
    (a learner's stretch of good or bad play) widen it."""
    import numpy as np

    from regcb_stream.evaluation.estimates import batch_mean

    terms = np.random.default_rng(0).normal(size=400)
    value, se, dof = batch_mean(terms, np.ones(400))
    assert (value, se, dof) == (pytest.approx(terms.mean()),
                                pytest.approx(terms.std(ddof=1) / 20), 399)
    runs = np.repeat(terms[:40], 10)  # the same term ten times in a row
    iid = runs.std(ddof=1) / 20
    batched = batch_mean(np.add.reduceat(runs, np.arange(0, 400, 10)), np.full(40, 10.0))
    assert batched[1] > 2.5 * iid and batched[2] == 39


def test_a_fixed_multiplier_is_vws():
    """``multiplier="min"``: the log's least logged probability, given to VW's own
    --explore_eval as --multiplier and to our estimator alike (the same examples kept)."""
    from regcb_stream.evaluation.explore_eval import VWExplorer, explore_eval, read_log

    path = str(needs(LOG))
    rows = compare(path, vw=["--coin --epsilon 0.1"], interactions=["UA"], multiplier="min")
    ours = explore_eval(read_log(open(path)), VWExplorer("--coin --epsilon 0.1 -q UA"),
                        multiplier=0.011111111297375624)  # (the log's least probability)
    assert rows[1].kept == ours.weighted_kept < 50
    assert rows[1].estimate == pytest.approx(-ours.ips_loss, abs=1e-6)


def test_a_single_line_log_is_replayed_as_adf(tmp_path, capsys):
    """``--cb_explore K``: a single-line log becomes the ADF log `as_adf` makes of it (the
    same labels), every namespace crossed with the actions'; VW's row is VW's own
    explore-eval of that ADF log."""
    import numpy as np

    from regcb_stream.datasets.logs import write_logged_stream
    from regcb_stream.evaluation.explore_eval import VWExplorer, as_adf, explore_eval, read_log
    from regcb_stream.io.vw_text import iter_cb

    rng = np.random.default_rng(0)
    X, R = rng.normal(size=(300, 4)), (rng.random((300, 3)) < 0.3).astype(float)
    single = tmp_path / "single.dat"
    write_logged_stream(single, X, R, adf=False)
    adf = list(read_log(line + "\n" for line in as_adf(open(single), 3)))
    assert [(ex.label.action + 1, ex.label.cost, ex.label.prob) for ex in adf] == [
        tuple(ex.label) for ex in iter_cb(open(single), 3)]
    rows = compare(str(single), vw=["--epsilon 0.1"], cb_actions=3)
    assert [row.examples for row in rows] == [300] * 4
    ours = explore_eval(iter(adf), VWExplorer("--epsilon 0.1 -q :_"))
    assert rows[1].estimate == pytest.approx(-ours.ips_loss, abs=1e-6)
    assert rows[1].kept == ours.weighted_kept
    bad = tmp_path / "bad.dat"
    bad.write_text("1:0:0.5 |s a\n4:0:0.5 |s b\n")
    assert main([str(bad), "--cb_explore", "3", "--quiet"]) == 1
    assert "line 2" in capsys.readouterr().err
