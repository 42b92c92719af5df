"""Off-policy evaluation: agreement with VW's own estimates, and unbiasedness of IPS and DR.

Every comparison with VW makes both sides evaluate the same fixed policy on the same log:
VW's greedy action is read from its ``-p`` output (or, for ``--eval``, written into the
labels) and handed to ``evaluate`` as a per-example target; VW's loss is ``-value``.
"""

from __future__ import annotations

import io
import re
import subprocess
import sys

import numpy as np
import pytest
from vowpalwabbit import Workspace

from regcb_stream import RegCB
from regcb_stream.command.main import main as cli_main
from regcb_stream.datasets import uci
from regcb_stream.datasets.logs import logged_lines
from regcb_stream.evaluation.ope import ConstantPolicy, ModelPolicy, evaluate, main
from regcb_stream.integrations.river import LoggedLabel, iter_vw

REL = 1e-6


def vehicle_rows(n: int, seed: int = 1):
    try:
        X, R = uci.bandit_stream("vehicle", False, seed)
    except FileNotFoundError as missing:
        pytest.skip(str(missing))
    return X[:n], R[:n]


def vw_run(args: str, examples: list[str], tmp_path) -> tuple[float, list[int]]:
    """VW's average loss over ``examples`` (each a string, ADF ones without the blank line),
    and the action it predicted for each (its ``-p`` output: 0-based for ADF)."""
    preds = tmp_path / "vw.pred"
    ws = Workspace(f"{args} --quiet -p {preds}")
    for text in examples:
        example = ws.parse(text)
        ws.learn(example)
        ws.finish_example(example)
    loss = ws.get_sum_loss() / ws.get_weighted_examples()
    ws.finish()
    return loss, [int(float(v)) for v in preds.read_text().split()]


class Targets:
    """A deterministic target policy given per example, in log order (``evaluate`` calls
    ``pmf`` once per labelled example)."""

    def __init__(self, actions):
        self._next = iter(actions)

    def pmf(self, context, actions):
        chosen = next(self._next)
        return [float(k == chosen) for k in range(len(actions))]


class FixedModel:
    """A reward model that never learns: ``-w (sum of feature values + 1)``, the cost VW
    predicts with every weight frozen at ``--initial_weight w`` (the +1: its constant)."""

    def __init__(self, w: float):
        self.w = w

    def predict(self, context, actions):
        base = sum(context.values())
        return [-self.w * (base + sum(a.values()) + 1.0) if isinstance(a, dict)
                else -self.w * (base + 1.0) for a in actions]

    def learn(self, context, action, reward):
        pass


def close(ours: float, vw: float) -> bool:
    return abs(ours - vw) <= REL * max(abs(vw), 1e-12)


def adf_text(lines: list[str]) -> tuple[str, list[str]]:
    return "".join(lines), [chunk.rstrip("\n") for chunk in lines]


# -- VW --cb_adf -t: the greedy policy of a fixed model, IPS for both cb_types ---------------


def test_fresh_model_test_mode_is_ips_of_first_action(tmp_path):
    text, examples = adf_text(logged_lines(*vehicle_rows(300), adf=True, seed=1))
    ips, actions = vw_run("--cb_adf -t --cb_type ips", examples, tmp_path)
    dr, _ = vw_run("--cb_adf -t --cb_type dr", examples, tmp_path)
    assert set(actions) == {0}  # a fresh model scores 0 everywhere: ties go to the first
    ours = evaluate(ConstantPolicy(0), iter_vw(io.StringIO(text), adf=True))
    assert close(ours["ips"].loss, ips)
    # VW computes DR reward predictions only when it learns: -t reports IPS for cb_type dr
    assert close(ours["ips"].loss, dr) and dr == ips
    assert abs(ours["dr"].loss - dr) > 1e-3


def test_trained_model_greedy_policy_ips_matches(tmp_path):
    train, _ = adf_text(logged_lines(*vehicle_rows(400, seed=2), adf=True, seed=3))
    model = tmp_path / "vw.model"
    data = _write(tmp_path, train)
    Workspace(f"--cb_adf --cb_type ips -q sa --quiet -d {data} -f {model}").finish()
    text, examples = adf_text(logged_lines(*vehicle_rows(300), adf=True, seed=1))
    vw_loss, actions = vw_run(f"--cb_adf -t -i {model}", examples, tmp_path)
    assert len(set(actions)) > 1  # a real policy, not a constant one
    ours = evaluate(Targets(actions), iter_vw(io.StringIO(text), adf=True))
    assert close(ours["ips"].loss, vw_loss)


def _write(tmp_path, text: str):
    path = tmp_path / "train.dat"
    path.write_text(text)
    return path


# -- VW --cb_adf --cb_type dr with frozen weights: DR with a known reward model ---------------


def dyadic_adf_log(n: int, seed: int = 0) -> list[str]:
    """ADF examples whose numbers are exact in float32 (VW's arithmetic): features k/16,
    costs k/8, probabilities 1/4 and 1/2; the action features differ, so no ties."""
    rng = np.random.default_rng(seed)
    probs = [0.25, 0.25, 0.5]
    out = []
    for _ in range(n):
        a = int(rng.choice(3, p=probs))
        lines = ["shared |s " + " ".join(f"x{j}:{rng.integers(-16, 17) / 16}" for j in range(2))]
        values = rng.permutation(8)[:3] / 16 + np.arange(3) / 32
        for k in range(3):
            label = f"0:{rng.integers(9) / 8}:{probs[k]} " if k == a else ""
            lines.append(f"{label}|a f{k}:{values[k]}")
        out.append("\n".join(lines))
    return out


def test_dr_matches_vw_with_frozen_regressor(tmp_path):
    examples = dyadic_adf_log(400)
    w = 0.125  # --sgd -l 0: no update and no weight rescaling; fixed clipping range
    args = (f"--cb_adf --sgd -l 0 --initial_weight {w} --min_prediction -100 "
            "--max_prediction 100")
    dr, actions = vw_run(f"{args} --cb_type dr", examples, tmp_path)
    ips, _ = vw_run(f"{args} --cb_type ips", examples, tmp_path)
    logged = list(iter_vw(io.StringIO("\n\n".join(examples) + "\n\n"), adf=True,
                          merge_shared=True))
    model = FixedModel(w)
    greedy = [int(np.argmax(model.predict(c, acts))) for c, acts, _ in logged]
    assert actions == greedy  # VW's policy: least predicted cost
    ours = evaluate(Targets(actions), logged, reward_model=model)
    assert close(ours["dr"].loss, dr) and close(ours["ips"].loss, ips)
    assert abs(dr - ips) > 1e-3  # the reward model matters here


# -- vw --cb K --eval: the policy is the action written in each label --------------------------


def test_eval_mode_matches_for_a_regcb_policy(tmp_path):
    X, R = vehicle_rows(600)
    learner = RegCB("optimistic", beta=1e-3, seed=0)
    for x, r in zip(X[300:], R[300:]):  # train on one half, evaluate on the other
        a, p, _ = learner.predict(x, [0, 1, 2, 3])
        learner.learn(x, a, float(r[a]), p)
    lines = logged_lines(X[:300], R[:300], adf=False, seed=4)
    greedy = [int(np.argmax(learner.pmf(x, [0, 1, 2, 3]))) for x in X[:300]]
    eval_lines = [f"{g + 1} {line}" for g, line in zip(greedy, lines)]
    vw_loss, _ = vw_run("--cb 4 --eval --cb_type ips", [s.rstrip("\n") for s in eval_lines],
                        tmp_path)
    logged = iter_vw(io.StringIO("".join(lines)), n_actions=4)
    ours = evaluate(Targets(greedy), logged)
    assert close(ours["ips"].loss, vw_loss) and len(set(greedy)) > 1


def test_eval_mode_dr_matches_with_frozen_regressor(tmp_path):
    rng = np.random.default_rng(5)
    lines, targets = [], []
    for _ in range(300):
        a, target = int(rng.integers(4)), int(rng.integers(4))
        x = " ".join(f"x{j}:{rng.integers(-16, 17) / 16}" for j in range(3))
        lines.append(f"{a + 1}:{rng.integers(9) / 8}:0.25 |s {x}")
        targets.append(target)
    args = "--cb 4 --eval --sgd -l 0 --initial_weight 0.125 --min_prediction -9 --max_prediction 9"
    dr, _ = vw_run(f"{args} --cb_type dr", [f"{t + 1} {s}" for t, s in zip(targets, lines)],
                   tmp_path)
    logged = iter_vw(io.StringIO("\n".join(lines)), n_actions=4)
    ours = evaluate(Targets(targets), logged, reward_model=FixedModel(0.125))
    assert close(ours["dr"].loss, dr)


# -- unbiasedness on simulated logs ------------------------------------------------------------

MU = np.array([[0.9, 0.2, 0.4], [0.1, 0.8, 0.3], [0.5, 0.5, 0.7]])  # mean reward + 1, (x, a)
LOGGING = np.array([[0.6, 0.2, 0.2], [0.1, 0.3, 0.6], [0.2, 0.5, 0.3]])
TARGET = np.array([[0.8, 0.1, 0.1], [0.0, 1.0, 0.0], [0.3, 0.3, 0.4]])
TRUE_VALUE = float(np.mean(np.sum(TARGET * MU, axis=1)) - 1.0)  # contexts uniform


class TablePolicy:
    def pmf(self, context, actions):
        (name,) = context  # the context is one indicator {"x<i>": 1.0}
        return TARGET[int(name[1:])].tolist()


class ConstantModel:
    """A deliberately wrong reward model: DR must stay unbiased."""

    def predict(self, context, actions):
        return [-0.2] * len(actions)

    def learn(self, context, action, reward):
        pass


def simulated_log(n: int, rng: np.random.Generator) -> list:
    xs = rng.integers(3, size=n)
    out = []
    for x in xs.tolist():
        a = int(rng.choice(3, p=LOGGING[x]))
        cost = 1.0 - float(rng.random() < MU[x, a])  # reward -cost = Bernoulli(MU) - 1
        out.append(({f"x{x}": 1.0}, [0, 1, 2], LoggedLabel(a, cost, float(LOGGING[x, a]))))
    return out


def test_ips_and_dr_are_unbiased_and_intervals_cover():
    rng = np.random.default_rng(2024)
    runs = [evaluate(TablePolicy(), simulated_log(200, rng), reward_model=ConstantModel())
            for _ in range(400)]
    for name in ("ips", "dr"):
        values = np.array([r[name].value for r in runs])
        stderr = values.std(ddof=1) / np.sqrt(len(values))
        assert abs(values.mean() - TRUE_VALUE) < 4 * stderr, name
        covered = np.mean([r[name].low <= TRUE_VALUE <= r[name].high for r in runs])
        assert 0.90 <= covered <= 0.99, (name, covered)
    snips = np.array([r["snips"].value for r in runs])
    assert abs(snips.mean() - TRUE_VALUE) < 0.02  # biased, but only O(1/n)


def test_default_ridge_model_dr_beats_ips_variance():
    rng = np.random.default_rng(7)
    runs = [evaluate(TablePolicy(), simulated_log(300, rng)) for _ in range(30)]
    ips = np.array([r["ips"].value for r in runs])
    dr = np.array([r["dr"].value for r in runs])
    assert abs(dr.mean() - TRUE_VALUE) < 4 * dr.std(ddof=1) / np.sqrt(len(dr))
    assert dr.std() < ips.std()


# -- command line ------------------------------------------------------------------------------


def test_cli_with_a_regcb_stream_model(tmp_path, capsys):
    text, _ = adf_text(logged_lines(*vehicle_rows(300), adf=True, seed=1))
    log = tmp_path / "log.dat"
    log.write_text(text)
    model = tmp_path / "m.regcb"
    assert cli_main(["--cb_explore_adf", "--quiet", "-d", str(log), "-f", str(model)]) == 0
    assert main(["-d", str(log), "--policy-model", str(model)]) == 0
    table = {line.split()[0]: float(line.split()[1]) for line in
             capsys.readouterr().out.splitlines()[1:]}
    expected = evaluate(ModelPolicy.load(model), iter_vw(log, adf=True, merge_shared=True,
                                                         hash_bits=18))
    assert table == pytest.approx({k: round(v.value, 5) for k, v in expected.items()}, abs=1e-5)


def test_cli_constant_policy_matches_vw_fresh_model(tmp_path, capsys):
    text, examples = adf_text(logged_lines(*vehicle_rows(200), adf=True, seed=1))
    log = tmp_path / "log.dat"
    log.write_text(text)
    assert main(["-d", str(log), "--cb_explore_adf", "--policy", "constant:0"]) == 0
    ips_row = capsys.readouterr().out.splitlines()[1].split()
    vw_loss, _ = vw_run("--cb_adf -t --cb_type ips", examples, tmp_path)
    assert ips_row[0] == "ips" and float(ips_row[-1]) == pytest.approx(vw_loss, abs=1e-5)


def synthetic_rows(n: int, seed: int = 0):
    """A 4-class linear problem (no data folder needed): contexts and 0/1 reward rows."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    best = np.argmax(X @ rng.normal(size=(3, 4)), axis=1)
    return X, np.eye(4)[best]


def read_predictions(path) -> np.ndarray:
    """regcb-stream's ``-p`` lines (``a:p,...`` in its own order, 0-based) as pmf rows."""
    rows = []
    for line in path.read_text().splitlines():
        if line.strip():
            pairs = [pair.split(":") for pair in line.split()[0].split(",")]
            row = np.zeros(len(pairs))
            row[[int(a) for a, _ in pairs]] = [float(p) for _, p in pairs]
            rows.append(row)
    return np.array(rows)


@pytest.mark.parametrize("flags", [["--cb_explore", "4"], ["--cb_explore_adf", "-q", "sa"]])
def test_model_policy_is_the_policy_regcb_stream_plays(tmp_path, flags):
    """The policy evaluated from a model file is the one ``regcb-stream -i`` plays: same
    distributions on the same examples (given unlabelled, so it does not learn)."""
    X, R = synthetic_rows(400)
    adf = flags[0] == "--cb_explore_adf"
    train, test, model = tmp_path / "train.dat", tmp_path / "test.dat", tmp_path / "m.regcb"
    train.write_text("".join(logged_lines(X[:300], R[:300], adf=adf, seed=1)))
    logged = "".join(logged_lines(X[300:], R[300:], adf=adf, seed=2))
    test.write_text(re.sub(r"(?m)^(\d+:)?\S+:\S+ (?=\|)", "", logged))  # labels removed
    assert cli_main([*flags, "--regcbopt", "--regcb", "--mellowness", "0.001", "--quiet",
                     "-d", str(train), "-f", str(model)]) == 0
    assert cli_main(["-i", str(model), "--quiet", "-d", str(test), "-p",
                     str(tmp_path / "p.txt")]) == 0
    played = read_predictions(tmp_path / "p.txt")
    policy = ModelPolicy.load(model)
    examples = iter_vw(io.StringIO(logged), adf, None if adf else 4,
                       interactions=policy.settings["interactions"], merge_shared=True,
                       hash_bits=policy.settings["hash_bits"])
    ours = np.array([policy.pmf(c, a) for c, a, _ in examples])
    assert ours.shape == played.shape == (100, 4)
    assert np.abs(ours - played).max() <= 5e-7  # -p writes 6 decimals
    assert len({tuple(row) for row in played.round(6)}) > 1  # not one constant distribution
    named = next(iter_vw(io.StringIO(logged), adf, None if adf else 4, merge_shared=True))
    with pytest.raises(ValueError, match="hash_bits=18"):  # features keyed by name
        policy.pmf(*named[:2])


def test_cli_exit_statuses(tmp_path, capsys):
    log = tmp_path / "log.dat"
    log.write_text("1:1:0.5 |s x\nfoo bar\n")
    assert main(["-d", str(tmp_path / "missing.dat"), "--cb_explore", "2"]) == 1
    assert main(["-d", str(log), "--cb_explore", "2"]) == 1  # a malformed example
    assert "line 2" in capsys.readouterr().err
    log.write_text("1:1:0.5 |s x\n")
    assert main(["-d", str(log), "--cb_explore", "2", "--policy", "constant:5"]) == 1
    for bad in (["--cb_explore", "2", "--policy", "greedy"], []):
        with pytest.raises(SystemExit) as stop:
            main(["-d", str(log), *bad])
        assert stop.value.code == 2


def test_cli_as_a_module_reads_stdin():
    """``python -m regcb_stream.evaluation.ope`` (the real entry point, in a process of its own)."""
    log = "1:1:0.5 |s x\n2:0:0.5 |s x\n1:0:0.5 |s y\n2:1:0.5 |s y\n"
    done = subprocess.run([sys.executable, "-m", "regcb_stream.evaluation.ope", "-d", "-",
                           "--cb_explore", "2", "--policy", "constant:0"],
                          input=log, capture_output=True, text=True, check=True)
    rows = {line.split()[0]: line.split() for line in done.stdout.splitlines()[1:]}
    assert sorted(rows) == ["dr", "ips", "snips"]
    assert float(rows["ips"][1]) == -0.5 and float(rows["ips"][-1]) == 0.5  # value, VW loss
