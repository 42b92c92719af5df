"""``RegCB()`` on streams its defaults never saw, next to the peers at their defaults.

``bench/experiments/defaults.py`` chose every default on the 16 UCI streams (leave one dataset
out), and ``bench/experiments/random_features.py`` chose the random features there too. This
script asks what the defaults earn on classification streams that played no part in any
choice: the data sets River ships with its package (no download) and every one of River's
synthetic generators of a stationary classification stream (its anomaly ones left out), the
stream-learning benchmarks of MOA and River, and four streams whose concept drifts:

- ``segment`` (River ``ImageSegments``: 2,310 rounds, 18 features, 7 actions),
  ``phishing`` (1,250, 9, 2), ``bananas`` (5,300, 2, 2) and ``shuttle`` (49,097, 9, 2:
  the Statlog shuttle as an anomaly task, 7 % anomalies);
- 5,000 rounds each of ``waveform`` (``synth.Waveform``: 3 actions, 21 features),
  ``waveform40`` (the same with its 19 noise features), ``led`` (``synth.LED`` with 10 %
  noise and the 17 irrelevant features: 10 actions, 24 features), ``rbf``
  (``synth.RandomRBF``: 5 actions, 10 features, 50 centroids), ``rbf100`` (10 actions, 100
  features), ``hyperplane`` (``synth.Hyperplane``: a linear boundary in 10 features, 5 %
  label noise), ``sea`` (``synth.SEA``: 3 features, 10 % noise), ``agrawal``
  (``synth.Agrawal``, its function 2: 9 features), ``sine`` (``synth.Sine`` with its 2
  noise features), ``mixed`` (``synth.Mixed``: 2 boolean and 2 numeric features),
  ``randomtree`` (``synth.RandomTree``: a random tree's 2 classes of 5 numeric and 5
  categorical features) and ``stagger`` (``synth.STAGGER``: 3 categorical features).
  Categorical values are their codes, as River gives them, for every learner alike;
- 10,000 rounds each of four drifting streams, in their order (a repetition is the
  generators' seed, not a shuffle): ``agrawal-drift`` (``synth.ConceptDriftStream`` from
  Agrawal's function 0 to its function 2 around round 5,000, over ~1,000 rounds),
  ``sea-drift`` (SEA's threshold 8 to 9.5, likewise, 10 % noise), ``led-drift`` (LED to
  ``synth.LEDDrift`` with 7 of its segments swapped, likewise) and ``rbf-drift``
  (``synth.RandomRBFDrift``: all 50 centroids moving at speed 0.001, 5 actions, 10 features).

Every stream is turned into a bandit as the paper's UCI streams are: the classes are the
actions, reward 1 for the true class, 0 otherwise (and each has a noisy variant,
``<stream>-noisy``, built as the paper builds its noisy UCI streams: the reward of action
``a`` when the class is ``y`` drawn Bernoulli(``mu[a, y]``), ``mu`` a ``K x K`` matrix with
diagonal 1 and the rest uniform on [0, 1] rounded to 0.01, seeded by the stream's name);
the columns standardized; repetition ``rep`` shuffles the rows of a stationary stream with
seed ``rep``, keeps the harness's holdout (the last 20 %, at most 300 rows), and runs the
harness's protocol (``bench.harness.protocol``: progressive reward, the same draws for every
learner). The learners: ``RegCB()``, its
linear part alone (``RegCB(random_features=0)``), VW's explorers at their defaults and
River's ``bandit.LinUCBDisjoint()``, as in ``docs/results/defaults.md``; and VW's best explorer
tuned on each stream: every VW family of the sweep (``--regcb``, ``--regcbopt``,
``--squarecb``, ``--epsilon``, ``--bag``, ``--cover``) over its grid of 8 settings
(``bench.harness.algorithms``), the best family at its best fixed setting,
chosen on the very stream it is scored on (a ceiling no user gets). Where ``RegCB()``'s mean
is below a peer at its default (VW's or River's), both run on :data:`MORE_REPS` repetitions
in all, as in ``bench/experiments/defaults.py``: whether the shortfall is the stream's or the few
repetitions' draw.

Last, with ``--settings``, the random features' setting is chosen again, on the 36 public
streams without reward noise: each setting
that ``bench/experiments/random_features.py`` found eligible
(``docs/results/random_features.md``) runs on these 20 streams, and its runs on the 16 UCI
streams are read from ``results/random_features.jsonl`` (run that script first). The report
ranks the settings by their mean and chooses one by leaving each of the 36 streams out in
turn.

From the repository root::

    .venv/bin/python -m bench.experiments.unseen_streams [--jobs 2] [--reps 5] [--settings]

Runs are kept in ``results/unseen_streams.jsonl`` (resumable); writes
``docs/results/unseen_streams.md``.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import pathlib
from collections import defaultdict

import numpy as np

from bench.harness import algorithms, problems, protocol
from bench.harness.peers import LinUCBAlgorithm
from bench.harness.regcb_algo import RegCBAlgorithm
from bench.provenance import command_line, stamp
from bench.runs import run_missing
from regcb_stream import RegCB
from regcb_stream.datasets import uci
from regcb_stream.features.random_features import RandomFeatures

ROOT = pathlib.Path(__file__).resolve().parents[2]
SYNTHETIC_ROUNDS = 5000
DRIFT_ROUNDS = 10_000
DEFAULT = "RegCB()"
LINEAR = "RegCB(random_features=0)"
LINUCB = "River LinUCBDisjoint()"
VW_DEFAULTS = algorithms.VW_DEFAULT_PEERS  # label -> (explorer, setting)
NAMES = (DEFAULT, LINEAR, *VW_DEFAULTS, LINUCB)
#: VW's families of the sweep and their grids: "VW --<explorer> <param>" -> run
VW_TUNED = {f"{family.label} {param:g}": (key.removeprefix("vw-"), param)
            for key, family in algorithms.FAMILIES.items() if family.kind == "vw"
            for param in family.grid}
ENVELOPE = "VW's best explorer, tuned per stream"
MORE_REPS = 30  # repetitions in all where RegCB() trails a peer at its default
SETTING = "RF "  # the name of a run of a random features' setting: "RF D=64 a=0.25 ..."
# RegCB()'s but its radius (docs/results/random_features.md; the radius: radial_features.md)
DEFAULT_SETTING = "D=64 a=0.25 width=8 direction"
#: the run of each tuned setting: a default's own where the setting is that default
RUN_OF = {name: next((d for d, run in VW_DEFAULTS.items() if run == setting), name)
          for name, setting in VW_TUNED.items()}


def _stationary():
    from river import datasets
    from river.datasets import synth

    return {
        "segment": datasets.ImageSegments,
        "phishing": datasets.Phishing,
        "bananas": datasets.Bananas,
        "shuttle": datasets.Shuttle,
        "waveform": lambda: synth.Waveform(seed=1).take(SYNTHETIC_ROUNDS),
        "waveform40": lambda: synth.Waveform(seed=1, has_noise=True).take(SYNTHETIC_ROUNDS),
        "led": lambda: synth.LED(seed=1, noise_percentage=0.1,
                                 irrelevant_features=True).take(SYNTHETIC_ROUNDS),
        "rbf": lambda: synth.RandomRBF(seed_model=1, seed_sample=1, n_classes=5,
                                       n_features=10, n_centroids=50).take(SYNTHETIC_ROUNDS),
        "rbf100": lambda: synth.RandomRBF(seed_model=1, seed_sample=1, n_classes=10,
                                          n_features=100, n_centroids=50
                                          ).take(SYNTHETIC_ROUNDS),
        "hyperplane": lambda: synth.Hyperplane(seed=1, n_features=10,
                                               noise_percentage=0.05).take(SYNTHETIC_ROUNDS),
        "sea": lambda: synth.SEA(seed=1, noise=0.1).take(SYNTHETIC_ROUNDS),
        "agrawal": lambda: synth.Agrawal(seed=1, classification_function=2
                                         ).take(SYNTHETIC_ROUNDS),
        "sine": lambda: synth.Sine(seed=1, has_noise=True).take(SYNTHETIC_ROUNDS),
        "mixed": lambda: synth.Mixed(seed=1).take(SYNTHETIC_ROUNDS),
        "randomtree": lambda: synth.RandomTree(seed_tree=1, seed_sample=1
                                               ).take(SYNTHETIC_ROUNDS),
        "stagger": lambda: synth.STAGGER(seed=1).take(SYNTHETIC_ROUNDS),
    }


def _drifting(stream: str, seed: int):
    from river.datasets import synth

    def drift(before, after):
        return synth.ConceptDriftStream(before, after, seed=seed, position=DRIFT_ROUNDS // 2,
                                        width=DRIFT_ROUNDS // 10)

    led = dict(seed=seed, noise_percentage=0.1, irrelevant_features=True)
    make = {
        "agrawal-drift": lambda: drift(synth.Agrawal(0, seed=seed), synth.Agrawal(2, seed=seed)),
        "sea-drift": lambda: drift(synth.SEA(0, seed=seed, noise=0.1),
                                   synth.SEA(3, seed=seed, noise=0.1)),
        "led-drift": lambda: drift(synth.LED(**led), synth.LEDDrift(**led, n_drift_features=7)),
        "rbf-drift": lambda: synth.RandomRBFDrift(seed_model=seed, seed_sample=seed,
                                                  n_classes=5, n_features=10, n_centroids=50,
                                                  change_speed=0.001, n_drift_centroids=50),
    }
    return make[stream]().take(DRIFT_ROUNDS)


STREAMS = ("segment", "phishing", "bananas", "shuttle", "waveform", "waveform40", "led",
           "rbf", "rbf100", "hyperplane", "sea", "agrawal", "sine", "mixed", "randomtree",
           "stagger")
DRIFTING = ("agrawal-drift", "sea-drift", "led-drift", "rbf-drift")
UNSEEN = STREAMS + DRIFTING  # the 20 streams
NOISY = "-noisy"
NOISY_STREAMS = tuple(s + NOISY for s in UNSEEN)  # their noisy variants
EVERY = UNSEEN + NOISY_STREAMS  # every stream of this script


@functools.lru_cache(maxsize=None)
def load(stream: str, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Contexts (n, d), columns standardized (a constant column becomes 0), and class
    indices (n,) in ascending order of the label, in River's order of the stream (a
    drifting stream's generators seeded by ``seed``)."""
    pairs = list(_drifting(stream, seed) if stream in DRIFTING else _stationary()[stream]())
    keys = list(pairs[0][0])
    X = np.array([[float(x[k]) for k in keys] for x, _ in pairs])
    labels = [y for _, y in pairs]
    y = np.unique(np.array(labels, dtype=type(labels[0])), return_inverse=True)[1]
    return uci.standardize(X), y


def noisy_means(stream: str, n_actions: int) -> np.ndarray:
    """The mean reward matrix ``mu[a, y]`` of a stream's noisy variant, seeded by its name.

    >>> mu = noisy_means("sea", 2)
    >>> mu.shape, float(mu[0, 0]), float(mu[1, 1]), bool(((mu >= 0) & (mu <= 1)).all())
    ((2, 2), 1.0, 1.0, True)
    """
    seed = int.from_bytes(hashlib.sha256(stream.encode()).digest()[:8], "little")
    mu = np.round(np.random.default_rng(seed).uniform(size=(n_actions, n_actions)), 2)
    np.fill_diagonal(mu, 1.0)
    return mu


def load_problem(stream: str, rep: int) -> problems.Problem:
    """Repetition ``rep`` of a stream, the harness's holdout: a stationary one shuffled by
    seed ``rep``, a drifting one in its order from generators seeded ``rep + 1``; a noisy
    variant's rewards Bernoulli of `noisy_means` at each round's class, drawn from seed
    ``rep``."""
    if stream.endswith(NOISY):
        return _noisy(load_problem(stream.removesuffix(NOISY), rep))
    if stream in DRIFTING:
        X, y = load(stream, rep + 1)
        order = np.arange(len(y))
    else:
        X, y = load(stream)
        order = np.random.default_rng(rep).permutation(len(y))
    R = np.eye(int(y.max()) + 1)[y[order]]
    rounds = problems.Rounds(X[order], R)
    cut = len(R) - problems.holdout_size(len(R))
    return problems.Problem(stream, rep, rounds.rows(0, cut), rounds.rows(cut, len(R)))


def _noisy(problem: problems.Problem) -> problems.Problem:
    mu = noisy_means(problem.stream, problem.n_actions)
    rng = np.random.default_rng(problem.rep)

    def noisy(rounds: problems.Rounds) -> problems.Rounds:
        y = rounds.R.argmax(axis=1)
        R = (rng.random(rounds.R.shape) < mu[:, y].T).astype(float)
        return problems.Rounds(rounds.X, R, rounds.mask)

    return problems.Problem(problem.stream + NOISY, problem.rep, noisy(problem.train),
                            noisy(problem.hold))


def _algorithm(name: str, n_actions: int, rep: int):
    if name == LINUCB:
        return LinUCBAlgorithm(algorithms.LINUCB_DEFAULT, n_actions, rep)
    if name in VW_DEFAULTS or name in VW_TUNED:
        from bench.harness.vw_algo import VWAlgorithm

        return VWAlgorithm(*(VW_DEFAULTS.get(name) or VW_TUNED[name]), n_actions, rep)
    algo = RegCBAlgorithm.defaults(n_actions, rep)
    if name == LINEAR:
        algo.learner = RegCB(seed=rep, random_features=0)
    elif name.startswith(SETTING):
        algo.learner = RegCB(seed=rep, random_features=random_features(
            name.removeprefix(SETTING), rep))
    return algo


def eligible_settings() -> list[str]:
    """The random features' settings ``docs/results/random_features.md`` marks eligible."""
    lines = (ROOT / "docs" / "results" / "random_features.md").read_text(
        encoding="utf-8").splitlines()
    rows = [[cell.strip() for cell in line.strip("|").split("|")]
            for line in lines[lines.index("## Every setting"):] if line.startswith("| D=")]
    return [row[0] for row in rows if row[-1] == "yes"]


def random_features(setting: str, seed: int, radius: float = 0.0) -> RandomFeatures:
    """The map of a setting named as ``bench/experiments/random_features.py`` names them
    (``"D=64 a=0.25 width=8 direction s=0.75"``), of the direction alone unless
    ``radius``."""
    words = dict(word.split("=") for word in setting.split() if "=" in word)
    return RandomFeatures(int(words["D"]), float(words.get("s", 1.0)), seed,
                          amplitude=float(words["a"]),
                          width=None if words["width"] == "None" else int(words["width"]),
                          normalize="direction" in setting.split(), radius=radius)


def run(task: tuple, load=None, algorithm=None) -> dict:
    """Progressive reward of one (learner, stream, repetition): its problem from ``load``
    and its learner from ``algorithm`` (this script's, by default)."""
    name, stream, rep = task
    problem = (load or load_problem)(stream, rep)
    algo = (algorithm or _algorithm)(name, problem.n_actions, rep)
    record = protocol.run_protocol(algo, problem, rep)
    return {"name": name, "stream": stream, "rep": rep, "n": len(problem.train),
            "progressive": record["progressive"], "early": record["early"],
            "seconds": record["seconds"]}


# -- report -------------------------------------------------------------------------------

def paired(results: list[dict], a: str, b: str, stream: str) -> tuple[float, float, int]:
    """Mean and standard error of ``a`` minus ``b`` over their common repetitions."""
    by = {(r["name"], r["rep"]): r["progressive"] for r in results if r["stream"] == stream}
    diffs = np.array([by[(a, rep)] - by[(b, rep)] for n, rep in by if n == a
                      and (b, rep) in by])
    return float(diffs.mean()), float(diffs.std(ddof=1) / np.sqrt(len(diffs))), len(diffs)


def mean_rewards(results: list[dict], reps: int) -> dict[tuple[str, str], float]:
    """Mean progressive reward per (name, stream) over the first ``reps`` repetitions, and
    over a run's first rounds per (name, stream, rounds) (`protocol.EARLY_ROUNDS`)."""
    values = defaultdict(list)
    for r in results:
        if r["rep"] < reps:
            values[(r["name"], r["stream"])].append(r["progressive"])
            for rounds, value in r.get("early", {}).items():
                values[(r["name"], r["stream"], int(rounds))].append(value)
    return {key: float(np.mean(v)) for key, v in values.items()}


def trailing(means: dict[tuple[str, str], float]) -> list[tuple[str, str]]:
    """The (stream, peer at its default) pairs where ``RegCB()``'s mean is below the peer's."""
    return [(s, n) for s in EVERY for n in (*VW_DEFAULTS, LINUCB)
            if means[(DEFAULT, s)] < means[(n, s)]]


def report(results: list[dict], reps: int) -> str:
    means = mean_rewards(results, reps)
    more = set(trailing(means))
    everything, results = results, [r for r in results if r["rep"] < reps]
    envelope = {s: max((means[(RUN_OF[n], s)], n) for n in VW_TUNED) for s in EVERY}
    columns = [*NAMES, ENVELOPE]
    for s, (value, _) in envelope.items():
        means[(ENVELOPE, s)] = value
    lines = [
        "# `RegCB()` on streams its defaults never saw",
        "",
        f"- command: `{command_line()}`",
        f"- {stamp()}; {len(everything)} runs, "
        f"{sum(r['seconds'] for r in everything):.0f} s of runs",
        f"- protocol: the harness's, {reps} repetitions, progressive reward (mean reward of "
        "the actions played while learning); streams and learners: the docstring of "
        "`bench/experiments/unseen_streams.py`",
        "- none of these streams took part in choosing any default (`docs/results/defaults.md`, "
        "`docs/results/random_features.md` chose them on the 16 UCI streams)",
        "", "## The bars", "",
        *_bars(means),
    ]
    sizes = {r["stream"]: r["n"] for r in results}
    for title, group in (("Stationary streams (shuffled by each repetition)", STREAMS),
                         ("Drifting streams (in their order)", DRIFTING),
                         ("Noisy variants (reward Bernoulli(mu[a, y]), `noisy_means`)",
                          NOISY_STREAMS)):
        lines += ["", f"## {title}", "",
                  "| stream (rounds, features, actions) | " + " | ".join(columns) + " |",
                  "|---|" + "---:|" * len(columns)]
        for s in group:
            X, y = load(s.removesuffix(NOISY))
            best = max(means[(n, s)] for n in NAMES)
            cells = [(f"**{means[(n, s)]:.4f}**" if means[(n, s)] == best else
                      f"{means[(n, s)]:.4f}") for n in NAMES]
            cells.append(f"{envelope[s][0]:.4f} ({envelope[s][1]})")
            lines.append(f"| {s} ({sizes[s]:,}, {X.shape[1]}, {y.max() + 1}) | "
                         + " | ".join(cells) + " |")
        lines.append("| mean | " + " | ".join(
            f"{np.mean([means[(n, s)] for s in group]):.4f}" for n in columns) + " |")
        lines.append("| `RegCB()` at or above, streams | – | " + " | ".join(
            f"{sum(means[(DEFAULT, s)] >= means[(n, s)] for s in group)}/{len(group)}"
            for n in columns[1:]) + " |")
    lines += ["", "Bold: the best of the row among the learners at their defaults. Where "
              "`RegCB()` is below one of them or VW's tuned best, the paired difference over "
              "the repetitions (mean, standard error):", ""]
    below = [(s, n) for s in EVERY for n in columns[1:]
             if means[(DEFAULT, s)] < means[(n, s)]]
    for s, n in below:
        run = RUN_OF[envelope[s][1]] if n == ENVELOPE else n
        diff, se, count = paired(results, DEFAULT, run, s)
        line = (f"- {s}, against {f'{n} ({envelope[s][1]})' if n == ENVELOPE else n}: "
                f"{diff:+.4f} (standard error {se:.4f}, {count} repetitions)")
        if (s, n) in more:
            diff, se, count = paired(everything, DEFAULT, n, s)
            line += f"; over {count} repetitions: {diff:+.4f} (standard error {se:.4f})"
        lines.append(line)
    if not below:
        lines.append("- nowhere")
    lines += bakeoff_section(results)
    if any(r["name"].startswith(SETTING) for r in results):
        lines += settings_section(results)
    return "\n".join(lines) + "\n"


Z_CRITICAL = 1.96  # a two-sided z-test at 0.05


def bakeoff(results: list[dict], names) -> tuple[dict, dict]:
    """The contextual-bandit bake-off's scoring (Bietti, Agarwal and Langford): on each
    stream, learner ``a`` significantly beats ``b`` when ``z = (r_a - r_b) / sqrt(r_a (1 -
    r_a) / N_a + r_b (1 - r_b) / N_b) > 1.96``, with ``r`` the progressive reward pooled
    over the repetitions' ``N`` rounds. Returns each learner's total (significant wins minus
    losses over every stream and opponent) and each stream's significant losses of
    ``RegCB()``: ``{stream: [(opponent, z), ...]}``."""
    pooled = defaultdict(lambda: [0.0, 0])
    for r in results:
        if r["name"] in names:
            cell = pooled[(r["name"], r["stream"])]
            cell[0] += r["progressive"] * r["n"]
            cell[1] += r["n"]
    totals, losses = dict.fromkeys(names, 0), defaultdict(list)
    for stream in EVERY:
        rates = {n: (pooled[(n, stream)][0] / pooled[(n, stream)][1], pooled[(n, stream)][1])
                 for n in names if pooled[(n, stream)][1]}
        for a, (ra, na) in rates.items():
            for b, (rb, nb) in rates.items():
                spread = np.sqrt(ra * (1 - ra) / na + rb * (1 - rb) / nb)
                z = (ra - rb) / spread if spread > 0 else 0.0
                if z > Z_CRITICAL:
                    totals[a] += 1
                    totals[b] -= 1
                    if b == DEFAULT:
                        losses[stream].append((a, z))
    return totals, losses


def bakeoff_section(results: list[dict]) -> list[str]:
    """The bake-off's total of every learner at its default, and where ``RegCB()`` is
    significantly below one (issue 45's bar: nowhere below its linear model or a VW
    explorer at its default, and the highest total)."""
    totals, losses = bakeoff(results, NAMES)
    lines = ["", "## The bake-off's scoring", "",
             f"Significant wins minus losses (z-test at 0.05 on progressive reward pooled over "
             f"the repetitions, every pair of learners at their defaults, {len(EVERY)} "
             "streams):", "", "| learner | total |", "|---|---:|"]
    lines += [f"| {name} | {total:+d} |" for name, total in
              sorted(totals.items(), key=lambda item: -item[1])]
    lines += ["", "`RegCB()` significantly below a learner:", ""]
    lines += [f"- {stream}: " + ", ".join(f"{name} (z = {z:.2f})" for name, z in found)
              for stream, found in losses.items()] or ["- nowhere"]
    return lines


def _bars(means: dict[tuple[str, str], float]) -> list[str]:
    """``RegCB()`` at or above VW's tuned envelope, and at or above every peer at its
    default, on how many streams (issue 45's bars: 85 % and 95 %)."""
    envelope = sum(means[(DEFAULT, s)] >= means[(ENVELOPE, s)] for s in EVERY)
    peers = sum(all(means[(DEFAULT, s)] >= means[(n, s)] for n in (*VW_DEFAULTS, LINUCB))
                for s in EVERY)
    lines = [f"- at or above VW's tuned envelope: {envelope}/{len(EVERY)} streams "
             f"({envelope / len(EVERY):.0%}; the bar 85 %)",
             f"- at or above every VW explorer at its default and `LinUCBDisjoint()`: "
             f"{peers}/{len(EVERY)} ({peers / len(EVERY):.0%}; the bar 95 %)"]
    for rounds in protocol.EARLY_ROUNDS:
        streams = [s for s in EVERY if (DEFAULT, s, rounds) in means]
        if not streams:
            continue
        ahead = [s for s in streams if means[(DEFAULT, s, rounds)] >= means[(LINUCB, s, rounds)]]
        lines.append(f"- first {rounds:,} rounds (progressive reward over them): at or above "
                     f"`LinUCBDisjoint()` on {len(ahead)}/{len(streams)} streams "
                     f"({len(ahead) / len(streams):.0%}; the bar 90 %; below: "
                     f"{', '.join(s for s in streams if s not in ahead) or 'none'})")
    return lines


def settings_section(results: list[dict]) -> list[str]:
    """The random features' settings ranked by their mean over the 36 public streams, and
    the choice by leaving each stream out."""
    uci_runs = ROOT / "results" / "random_features.jsonl"
    settings = eligible_settings()
    values = defaultdict(list)
    for r in map(json.loads, uci_runs.read_text(encoding="utf-8").splitlines()):
        if r["name"] in settings and r["stream"] != "realizable" and r["factor"] == 1.0:
            values[(r["name"], r["stream"])].append(r["progressive"])
    for r in results:
        if r["name"].startswith(SETTING):
            values[(r["name"].removeprefix(SETTING), r["stream"])].append(r["progressive"])
    means = {key: float(np.mean(v)) for key, v in values.items()}
    unseen, everything = UNSEEN, problems.UCI_STREAMS + UNSEEN

    def mean(setting: str, streams) -> float:
        return float(np.mean([means[(setting, s)] for s in streams]))

    ranked = sorted(settings, key=lambda g: -mean(g, everything))
    chosen = [max(settings, key=lambda g: mean(g, [t for t in everything if t != s]))
              for s in everything]
    held_out = np.mean([means[(g, s)] for g, s in zip(chosen, everything)])
    default = ranked.index(DEFAULT_SETTING) + 1
    lines = ["", f"## The random features' setting, chosen again over {len(everything)} "
             "streams", "",
             f"The {len(settings)} settings `docs/results/random_features.md` found eligible, "
             "on the "
             f"{len(unseen)} streams above (5 repetitions) and the 16 UCI streams "
             "(`results/random_features.jsonl`), ranked by their mean progressive reward over "
             f"all {len(everything)} (the first five; `RegCB()`'s is **{DEFAULT_SETTING}**, "
             f"ranked {default}):", "",
             f"| setting | 16 UCI streams | {len(unseen)} streams above | all {len(everything)} |",
             "|---|---:|---:|---:|"]
    for g in ranked[:5]:
        name = f"**{g}**" if g == DEFAULT_SETTING else g
        lines.append(f"| {name} | {mean(g, problems.UCI_STREAMS):.4f} | {mean(g, unseen):.4f}"
                     f" | {mean(g, everything):.4f} |")
    best_unseen = max(settings, key=lambda g: mean(g, unseen))
    lines += ["", f"- best on the {len(unseen)} streams above alone: {best_unseen}, "
              f"{mean(best_unseen, unseen):.4f} (`RegCB()`'s setting "
              f"{mean(DEFAULT_SETTING, unseen):.4f})",
              f"- leaving each of the {len(everything)} streams out and choosing by the mean "
              f"on the others: `RegCB()`'s setting is chosen on "
              f"{chosen.count(DEFAULT_SETTING)} of {len(everything)}; held-out mean "
              f"{held_out:.4f}"]
    return lines


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--settings", action="store_true",
                        help="run the random features' eligible settings too (~30 min)")
    parser.add_argument("--results", default=str(ROOT / "results" / "unseen_streams.jsonl"))
    parser.add_argument("--output", default=str(ROOT / "docs" / "results" / "unseen_streams.md"))
    args = parser.parse_args(argv)
    names = list(dict.fromkeys([*NAMES, *(n for n in VW_TUNED if RUN_OF[n] == n)]))
    tasks = [(n, s, r) for n in names for s in EVERY for r in range(args.reps)]
    results, _ = run_missing(args.results, tasks, run, _task_of, args.jobs, context="spawn",
                             initializer=_single_thread)
    tasks += [(n, s, r) for s, p in trailing(mean_rewards(results, args.reps))
              for n in (DEFAULT, p) for r in range(args.reps, MORE_REPS)]
    tasks += [(SETTING + g, s, r) for g in eligible_settings() for s in UNSEEN
              for r in range(args.reps) if args.settings]
    results, _ = run_missing(args.results, tasks, run, _task_of, args.jobs, context="spawn",
                             initializer=_single_thread)
    text = report(results, args.reps)
    pathlib.Path(args.output).write_text(text, encoding="utf-8")
    print(text)


def _task_of(record: dict) -> tuple:
    return record["name"], record["stream"], record["rep"]


def _single_thread() -> None:
    os.environ["OPENBLAS_NUM_THREADS"] = "1"


if __name__ == "__main__":
    main()
