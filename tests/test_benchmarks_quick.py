"""Smoke tests of the experiments' core functions (``bench.experiments``) on a tiny slice of
``vehicle``, and of their registry (``bench.registry``)."""

from __future__ import annotations

import importlib
import importlib.util
import json
import pathlib
import pkgutil

import numpy as np
import pytest

import bench.experiments
from bench import registry
from bench.experiments import forgetting as fg
from bench.experiments import joint_defaults as jd
from bench.experiments import progressive_reward as pr
from bench.experiments import throughput as tp
from bench.experiments import unseen_streams as us
from regcb_stream.datasets import uci as ds

ROOT = pathlib.Path(__file__).resolve().parents[1]
ROUNDS = 300


@pytest.fixture(scope="module")
def vehicle() -> tuple[np.ndarray, np.ndarray]:
    try:
        ds.require("vehicle.tsv.gz")
        ds.require(ds.REWARD_MATRICES)
    except FileNotFoundError as missing:
        pytest.skip(str(missing))
    X, R = ds.bandit_stream("vehicle", noisy=False, seed=0)
    return X[:ROUNDS], R[:ROUNDS]


@pytest.mark.parametrize("schedule", ["sqrt2", "doubling", "online"])
@pytest.mark.parametrize("variant", ["elimination", "optimistic"])
def test_vectorized_reproduces_per_example(vehicle, variant: str, schedule: str) -> None:
    X, R = vehicle
    one = tp.run_per_example(X, R, variant, 1e-3, schedule, seed=3)
    block = tp.run_vectorized(X, R, variant, 1e-3, schedule, seed=3)
    assert np.array_equal(one["actions"], block["actions"])
    assert one["progressive_reward"] == block["progressive_reward"]


@pytest.mark.parametrize("schedule", ["sqrt2", "doubling"])
def test_vectorized_reproduces_per_example_on_ties(schedule: str) -> None:
    """Optimistic on letter has many exact ties in High, where BLAS rounding differs by
    ~1e-17 between a block and one row; the decision rules' tie tolerance absorbs it."""
    try:
        ds.require("letter.tsv.gz")
    except FileNotFoundError as missing:
        pytest.skip(str(missing))
    X, R = ds.bandit_stream("letter", noisy=False, seed=0)
    one = tp.run_per_example(X[:ROUNDS], R[:ROUNDS], "optimistic", 1e-4, schedule)
    block = tp.run_vectorized(X[:ROUNDS], R[:ROUNDS], "optimistic", 1e-4, schedule)
    assert np.array_equal(one["actions"], block["actions"])


def test_epoch_blocks_cover_the_stream() -> None:
    blocks = list(tp.epoch_blocks("sqrt2", 20))
    assert [(b.start, b.stop) for b in blocks] == [
        (0, 1), (1, 2), (2, 4), (4, 7), (7, 11), (11, 17), (17, 20)
    ]


def test_throughput_report(vehicle) -> None:
    X, R = vehicle
    rows = tp.measure(X, R, reps=1, log=lambda msg: None)
    tp.check_vectorized(X, R, rows)
    assert all(row["same_actions"] for row in rows if row["kind"] == "vectorized")
    assert all(row["rounds_per_sec"] > 0 for row in rows)
    meta = {key: "x" for key in ("command", "code", "date", "nproc", "cpu", "load", "python",
                                 "numpy", "vowpalwabbit", "reps")}
    text = tp.render(rows, {**meta, "rounds": ROUNDS})
    assert text.count("\n| ") == len(rows) + 1
    assert "PASS" in text or "FAIL" in text


def test_progressive_reward_records(vehicle) -> None:
    settings = [
        {"algo": "ours", "variant": "optimistic", "beta": 1e-4},
        {"algo": "vw", "explorer": "regcb", "mellowness": 1e-3, "encoding": "-10"},
        {"algo": "uniform"},
        {"algo": "supervised"},
    ]
    tasks = pr.make_tasks(["vehicle"], [0], settings, ROUNDS)
    records = pr.run_all(tasks, jobs=1)
    assert len(records) == 2 * len(settings)  # clean and noisy
    for record in records:
        json.loads(json.dumps(record))
        assert record["rounds"] == ROUNDS and record["dataset"] == "vehicle"
        assert 0.0 <= record["progressive_reward"] <= 1.0
    assert pr.run_all(tasks[:2], jobs=1)[0]["progressive_reward"] == records[0][
        "progressive_reward"
    ]  # deterministic
    rows = pr.summarize(records)
    assert [row["stream"] for row in rows] == ["vehicle (clean)", "vehicle (noisy)"]
    meta = {"command": "x", "code": "x", "date": "x", "runtime": 0.0, "tasks": len(tasks),
            "jobs": 1, "datasets": ["vehicle"], "rounds": ROUNDS, "seeds": [0]}
    assert "Bar: best fixed ridge-RegCB" in pr.render(records, meta)


def test_joint_streams_have_the_structure_they_stand_for() -> None:
    """Ranking rows share every feature; ADF rows give each action features of its own;
    both are decided by ``RegCB()``'s rule for action feature rows accordingly."""
    from regcb_stream.features.rows import own_features

    try:
        ranking, adf = jd.load("vehicle-rank251", 0), jd.load("vehicle-noise-adf", 0)
    except FileNotFoundError as missing:
        pytest.skip(str(missing))
    assert ranking.train.X.shape == (201, jd.DOCUMENTS, 18) and len(ranking.hold) == 50
    assert set(np.unique(ranking.train.R)) <= {0.0, 0.25, 0.5, 0.75, 1.0}
    assert adf.train.X.shape[1:] == (4, 18 + 4 + 4 * 18)
    assert not own_features(None, ranking.train.X[0])
    assert own_features(None, adf.train.X[0])
    assert jd.load("vehicle-rank251", 0).train.R.tolist() == ranking.train.R.tolist()
    record = jd.run((jd.DEFAULT, "vehicle-rank251", 0, None))
    assert 0.0 <= record["progressive"] <= 1.0


def test_unseen_streams_are_bandits_of_river_data() -> None:
    """Each repetition shuffles the same rows (a drifting stream: draws its own, in order),
    keeps the harness's holdout and rewards the true class alone; the tuned VW settings
    that are a default reuse the default's run."""
    X, y = us.load("phishing")
    assert X.shape == (1250, 9) and np.allclose(X.mean(axis=0), 0.0)
    problem, again = us.load_problem("phishing", 1), us.load_problem("phishing", 1)
    assert (len(problem.train), len(problem.hold)) == (1000, 250)
    assert np.array_equal(problem.train.R, again.train.R)
    assert (problem.train.R.sum(axis=1) == 1.0).all()
    rows = np.vstack([problem.train.X, problem.hold.X])
    assert sorted(map(tuple, rows)) == sorted(map(tuple, X))
    assert not np.array_equal(us.load_problem("phishing", 2).train.X, problem.train.X)
    assert us.RUN_OF["VW --regcbopt 0.001"] == "VW --regcbopt --mellowness 0.001"
    assert set(us.VW_DEFAULTS) <= set(us.RUN_OF.values())
    drifting = us.load_problem("sea-drift", 0)  # in its order, from the seed 1 generators
    assert np.array_equal(drifting.train.X, us.load("sea-drift", 1)[0][:len(drifting.train)])
    assert not np.array_equal(us.load("sea-drift", 2)[0], us.load("sea-drift", 1)[0])
    record = us.run((us.DEFAULT, "phishing", 1))
    assert 0.5 < record["progressive"] <= 1.0
    assert us.run((us.DEFAULT, "phishing", 1))["progressive"] == record["progressive"]


def test_unseen_streams_settings_name_the_default_map() -> None:
    """The random features' setting the report calls RegCB()'s is the map RegCB() draws,
    its radius aside."""
    from regcb_stream import RegCB
    from regcb_stream.features.random_features import RADIUS

    assert us.DEFAULT_SETTING in us.eligible_settings()
    assert us.random_features("D=32 a=0.35 width=None direction s=0.75", 0).width is None
    ours = RegCB(seed=3)
    named = RegCB(seed=3, random_features=us.random_features(us.DEFAULT_SETTING, 3, RADIUS))
    for x in np.random.default_rng(0).normal(size=(200, 6)):
        drawn = ours.predict(x, [0, 1, 2])
        assert named.predict(x, [0, 1, 2]) == drawn
        for learner in (ours, named):
            learner.learn(x, drawn[0], float(x[0] > 0), drawn[1], **drawn[2])


def test_every_input_form_plays_as_the_arrays_do() -> None:
    """RegCB() on arrays, RegCBPolicy() in River's loop and the command driven line by line
    make the same decisions on the same stream, clean and noisy."""
    from bench.experiments import input_forms as forms

    for stream in ("phishing", "phishing-noisy"):
        runs = [forms.run((name, stream, 0)) for name in forms.NAMES[:3]]
        assert len({r["progressive"] for r in runs}) == 1, runs
    noisy = forms.unseen_streams.load_problem("phishing-noisy", 0)
    clean = forms.unseen_streams.load_problem("phishing", 0)
    np.testing.assert_array_equal(noisy.train.X, clean.train.X)
    assert set(np.unique(noisy.train.R)) == {0.0, 1.0} and (noisy.train.R.sum(1) != 1).any()


def test_forgetting_runs_the_factor_it_names_and_reports_every_stream() -> None:
    """``RegCB()`` is the factor 1; a named factor reaches the learner's oracle; the report
    has a row per stream and the drifting streams' peers."""
    assert fg.name_of(1.0) == "RegCB()" and fg.FORGETFUL["RegCB(forget=0.999)"] == 0.999
    record = fg.run(("RegCB(forget=0.999)", "phishing", 2))
    assert 0.5 < record["progressive"] <= 1.0
    assert record["progressive"] != fg.run(("RegCB()", "phishing", 2))["progressive"]
    rng = np.random.default_rng(0)
    results = [{"name": n, "stream": s, "rep": r, "progressive": float(rng.random()),
                "seconds": 1.0}
               for n in (*fg.FORGETFUL, *fg.PEERS) for s in (*fg.unseen.DRIFTING,
                                                             *fg.STATIONARY)
               for r in range(2)]
    regret = fg.long_regret(2000, (1000, 2000))
    assert regret["RegCB()"][2000] > regret["RegCB()"][1000] > 0
    text = fg.report(results, 2, (1.0, 1.5, 1.5), 10.0, regret)
    for stream in (*fg.unseen.DRIFTING, *fg.STATIONARY):
        assert f"| {stream} |" in text
    assert "**1.50x** the time" in text and "| RegCB(forget=0.998) |" in text
    assert "| learner | 1,000 | 2,000 |" in text


def test_registry_lists_every_experiment_after_what_it_reads() -> None:
    """Every module of ``bench.experiments`` is in the registry and imports with a ``main``;
    every input is an earlier experiment or what one wrote, or a committed file; every
    report of ``docs/results/`` is written by exactly one experiment (the harness's runs
    all write its report)."""
    experiments = registry.EXPERIMENTS
    names = [e.name for e in experiments]
    assert len(set(names)) == len(names)
    package = {f"bench.experiments.{m.name}" for m in pkgutil.iter_modules(
        bench.experiments.__path__)}
    assert {e.module for e in experiments} == package | {registry.HARNESS}
    for name in sorted({e.module for e in experiments}):
        spec = importlib.util.find_spec(name)
        module = importlib.import_module(
            f"{name}.__main__" if spec.submodule_search_locations else name)
        assert callable(getattr(module, "main", None)) or name == registry.HARNESS, name
    earlier: set[str] = set()
    for e in experiments:
        for needed in e.inputs:
            assert needed in earlier or (ROOT / needed).is_file(), (e.name, needed)
        earlier |= {e.name, *e.outputs}
    reports = {p.relative_to(ROOT).as_posix() for p in (ROOT / "docs" / "results").glob("*.md")}
    written = {o for e in experiments for o in e.outputs if o.endswith(".md")}
    assert written == reports
    for report in reports:
        writers = [e for e in experiments if report in e.outputs]
        if report in registry.HARNESS_OUTPUTS:
            assert {e.module for e in writers} == {registry.HARNESS}, report
        else:
            assert len(writers) == 1, (report, [e.name for e in writers])
    for e in experiments:
        assert all(o.startswith(("docs/results/", "bench/results/", "results/"))
                   for o in e.outputs), e.name


def test_registry_lists_and_selects_in_its_order(capsys) -> None:
    assert registry.main(["--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["name", "inputs", "outputs"]
    assert [line.split()[0] for line in lines[1:]] == [e.name for e in registry.EXPERIMENTS]
    chosen = registry.selected(["unseen_streams", "defaults"])
    assert [e.name for e in chosen] == ["defaults", "unseen_streams"]
    assert registry.BY_NAME["gb5_speed_issue"].command[1:3] == ["-m", "bench.experiments.gb5_speed"]
    with pytest.raises(SystemExit):
        registry.selected(["no_such_experiment"])


def test_a_study_of_one_setting_reads_the_unseen_peers_and_chooses_by_held_out_means() -> None:
    """`setting_study`: the peers of the 40 unseen streams from unseen_streams' report when
    its runs are not here, VW's winner per stream as fresh_envelope reads it, and the
    value chosen without each stream's data set."""
    from bench import setting_study as ss
    from bench.experiments import fresh_envelope as fe

    peers, _ = ss.unseen_peers()
    winners = fe.winners()
    assert set(winners) == set(us.EVERY)
    for stream, (name, value) in winners.items():
        assert name in us.VW_TUNED and peers[(us.ENVELOPE, stream)] == value
        assert all((peer, stream) in peers for peer in (us.DEFAULT, us.LINUCB, *us.VW_DEFAULTS))
    means = {(v, s): v * (2.0 if s == "letter" else 1.0) for v in (1, 2) for s in ss.STREAMS}
    means |= {(3, s): 10.0 if s == "letter" else 0.0 for s in ss.STREAMS}
    held, chosen = ss.held_out(means, [1, 2, 3])
    assert chosen == 2 and held["letter"] == 2 and held["vehicle"] == 2
    assert ss.eligible({1: {"long": 1.2, "realizable": 1.7}, 2: {"long": 1.3,
                                                                "realizable": 1.5}}, [1, 2]) == [2]
