"""The default ridge oracle for action feature rows (the joint class): how its prior and l2
were chosen, and what a new user gets on the Yahoo ranking sample, held out.

With actions given as dicts of their own features, one model scores every action's row.
The product class's optimistic prior (predictions shrink toward the best reward, so an
action not yet tried looks best) means something else there: if every action has a
feature of its own (VW's ``-q sa`` crosses of a context with an action's indicator), it is
still optimism about untried actions; if the actions share every feature (documents of a
ranking), it is optimism about rare feature values. Two families of joint streams, made of
the 8 UCI sets so that the Yahoo sample stays out of the choice, stand for the two cases:

* ranking: each round offers 6 rows of a set as documents; a document's relevance is a
  grade in {0, 1/4, ..., 1} of its class, drawn per repetition (as the Yahoo sample's
  relevance / 4); 251 rounds (the Yahoo sample's length) and 2,000; 8 sets x 2 lengths;
* adf: the UCI streams served as VW serves ADF examples with ``-q sa``: each action's row
  is the context, the action's indicator and their product; the first 3,000 rounds of
  vehicle, yeast, satimage, page_blocks and pendigits, clean and noisy (the harness's
  streams and seeds).

Every setting of :data:`SETTINGS` (prior ``optimistic``, ``midpoint``: the middle of the
reward range, or ``zero``, times l2) runs ``RegCB()``'s other defaults on both families x 5
repetitions of the harness's protocol (progressive reward), and so does ``RegCB()`` itself,
whose oracle (``prior="auto"``) settles at its first decision: optimistic with the product
class's ``l2 = 1`` if some action's row has a feature no other's has, midpoint with
``l2 = 3`` if they share every feature (`regcb_stream.defaults`). The setting for actions
sharing every feature is chosen on the ranking streams by leave one dataset out (for each
UCI set, the best mean over the rankings of the other sets, scored on that set's two); the
one chosen on all 16 is ``RegCB()``'s (the script checks). Actions with features of their
own keep the product class's oracle, chosen on the 16 UCI streams at their full length
(``docs/results/defaults.md``); the ADF rows show what the others would give on 3,000 rounds. The
Yahoo sample is held out of every choice: each setting's score on it, ``RegCB()``'s, and
VW's explorers (each at its default and at its best fixed setting of the harness's grid)
are reported beside.

From the repository root::

    .venv/bin/python -m bench.experiments.joint_defaults [--jobs 2] [--reps 5]   # ~25 minutes

Runs are kept in ``results/joint_defaults.jsonl`` (resumable); writes
``docs/results/joint_defaults.md``.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import time
from collections import defaultdict

import numpy as np

from bench.harness import algorithms, problems, protocol
from bench.harness.regcb_algo import RegCBAlgorithm
from bench.provenance import stamp
from bench.runs import run_missing
from regcb_stream import RegCB
from regcb_stream.datasets import uci
from regcb_stream.defaults import MODEL_CLASSES
from regcb_stream.oracles.ridge import RidgeOracle

ROOT = pathlib.Path(__file__).resolve().parents[2]
PRIORS = {"optimistic": "optimistic", "midpoint": "midpoint", "zero": 0.0}
L2 = (1.0, 3.0, 10.0, 30.0)
SETTINGS = {f"prior={p} l2={l2:g}": (prior, l2) for p, prior in PRIORS.items() for l2 in L2}
DEFAULT = "RegCB()"
RANKING = tuple(f"{s}-rank{n}" for s in uci.UCI_SETS for n in (251, 2000))
ADF_SETS = ("vehicle", "yeast", "satimage", "page_blocks", "pendigits")
ADF = tuple(f"{s}{noise}-adf" for s in ADF_SETS for noise in ("", "-noise"))
STREAMS = RANKING + ADF
ADF_ROUNDS = 3000
DOCUMENTS = 6  # a ranking round's offered rows, as the Yahoo stream's


def ranking_problem(stream: str, rep: int) -> problems.Problem:
    """Rounds of ``DOCUMENTS`` rows of a set, relevance a random grade of the row's class."""
    name, n = stream.rsplit("-rank", 1)
    n = int(n)
    X, y = uci.load_multiclass(name)
    rng = np.random.default_rng([rep, n, uci.UCI_SETS.index(name)])
    grades = np.zeros(1)
    while grades.min() == grades.max():
        grades = rng.integers(0, 5, y.max() + 1) / 4.0
    rows = np.stack([rng.choice(len(y), DOCUMENTS, replace=False) for _ in range(n)])
    return _split(stream, rep, X[rows], grades[y[rows]])


def adf_problem(stream: str, rep: int) -> problems.Problem:
    """A UCI stream's first rounds with each action's row ``[x, e_a, e_a (x) x]``."""
    name, noisy = problems.stream_parts(stream.removesuffix("-adf"))
    X, R = uci.bandit_stream(name, noisy, rep)
    X, R = X[:ADF_ROUNDS], R[:ADF_ROUNDS]
    (n, d), k = X.shape, R.shape[1]
    rows = np.zeros((n, k, d + k + k * d))
    for a in range(k):
        rows[:, a, :d] = X
        rows[:, a, d + a] = 1.0
        rows[:, a, d + k + a * d: d + k + (a + 1) * d] = X
    return _split(stream, rep, rows, R)


def _split(stream: str, rep: int, rows: np.ndarray, R: np.ndarray) -> problems.Problem:
    cut = len(R) - problems.holdout_size(len(R))
    every = problems.Rounds(rows, R, np.ones(R.shape, bool))
    return problems.Problem(stream, rep, every.rows(0, cut), every.rows(cut, len(R)))


def load(stream: str, rep: int) -> problems.Problem:
    if stream == "yahoo":
        return problems.load_problem("yahoo", rep)
    return (ranking_problem if stream in RANKING else adf_problem)(stream, rep)


def run(task: tuple) -> dict:
    """Progressive reward of one (setting, stream, repetition, parameter): a setting of
    :data:`SETTINGS`, ``RegCB()``, or a VW family of the harness with its parameter."""
    name, stream, rep, param = task
    problem = load(stream, rep)
    if name.startswith("vw-"):
        algo = algorithms.build(name, param, problem, rep)
    else:
        algo = RegCBAlgorithm.defaults(problem.n_actions, rep)
        if name != DEFAULT:
            prior, l2 = SETTINGS[name]
            algo.learner = RegCB(oracle=RidgeOracle(l2=l2, prior=prior), seed=rep)
    record = protocol.run_protocol(algo, problem, rep)
    return {"name": name, "stream": stream, "rep": rep, "param": param,
            "progressive": record["progressive"], "seconds": record["seconds"]}


def report(rows: list[dict], command: str, seconds: float) -> str:
    values = defaultdict(list)
    for r in rows:
        values[(r["name"], r["stream"], r["param"])].append(r["progressive"])
    mean = {key: float(np.mean(v)) for key, v in values.items()}

    def score(name: str, stream: str) -> float:
        return mean[(name, stream, None)]

    def average(name: str, streams) -> float:
        return float(np.mean([score(name, s) for s in streams]))

    best_on = {held: max(SETTINGS, key=lambda g: average(
        g, [s for s in RANKING if dataset(s) != held])) for held in map(dataset, RANKING)}
    chosen = max(SETTINGS, key=lambda g: average(g, RANKING))
    held_out = {s: score(best_on[dataset(s)], s) for s in RANKING}
    vw_best = {f: max(mean[(f, "yahoo", p)] for p in algorithms.FAMILIES[f].grid)
               for f in _vw_families()}
    vw_default = {f: mean[(f, "yahoo", algorithms.VW_DEFAULTS[f])] for f in algorithms.VW_DEFAULTS}
    envelope = max(vw_best.values())
    # the product class's oracle
    product = f"prior=optimistic l2={MODEL_CLASSES['own features'].l2:g}"
    columns = (DEFAULT, product, chosen)
    lines = [
        "# The default oracle for action feature rows: how its prior and l2 were chosen",
        "",
        f"- command: `{command}`",
        f"- {stamp()}; {len(rows)} runs, {seconds:.0f} s of runs",
        "- protocol: the harness's (`docs/results/defaults.md`), progressive reward, "
        "5 repetitions; "
        "`RegCB()`'s defaults but the oracle, `RidgeOracle(l2, prior)`",
        f"- ranking streams (`*-rank251`, `*-rank2000`): each round {DOCUMENTS} rows of a UCI "
        "set as documents sharing every feature, relevance a random grade of the row's class",
        f"- ADF streams (`*-adf`): the first {ADF_ROUNDS:,} rounds of a UCI stream, each "
        "action's row its context, its indicator and their product (VW's `-q sa`): every "
        "action has features of its own, so every setting runs with the budget of that "
        f"class (mellowness {MODEL_CLASSES['own features'].mellowness:g}, "
        "`docs/results/joint_budget.md`)",
        "- `RegCB()`: `prior=\"auto\"`, settled at the first decision: optimistic with "
        f"l2 = {MODEL_CLASSES['own features'].l2:g} (the product class's oracle) if some "
        "action's row has a "
        f"feature no other's has, else midpoint with l2 = {MODEL_CLASSES['shared features'].l2:g}",
        "",
        "## Actions sharing every feature: the setting chosen by leave one dataset out",
        "",
        "| stream | chosen without its set's streams | held out | " + " | ".join(columns)
        + " |",
        "|---|---|---:|" + "---:|" * len(columns),
    ]
    for s in RANKING:
        lines.append(f"| {s} | {best_on[dataset(s)]} | {held_out[s]:.4f} | " + " | ".join(
            f"{score(c, s):.4f}" for c in columns) + " |")
    lines.append(f"| **mean** | | **{np.mean(list(held_out.values())):.4f}** | " + " | ".join(
        f"{average(c, RANKING):.4f}" for c in columns) + " |")
    lines += [
        "",
        f"Chosen on all 16 rankings: **{chosen}**. " + _defaults_match(chosen),
        "",
        "## Actions with features of their own (ADF, 3,000 rounds)",
        "",
        "| stream | " + " | ".join(columns) + " |",
        "|---|" + "---:|" * len(columns),
    ]
    for s in ADF:
        lines.append(f"| {s} | " + " | ".join(f"{score(c, s):.4f}" for c in columns) + " |")
    lines.append("| **mean** | " + " | ".join(f"{average(c, ADF):.4f}" for c in columns)
                 + " |")
    lines += [
        "",
        "## Every setting",
        "",
        "| setting | rankings (16) | ADF (10) | yahoo (held out) |",
        "|---|---:|---:|---:|",
    ]
    for g in (DEFAULT, *sorted(SETTINGS, key=lambda g: -average(g, RANKING))):
        lines.append(f"| {g} | {average(g, RANKING):.4f} | {average(g, ADF):.4f} | "
                     f"{score(g, 'yahoo'):.4f} |")
    ours, spread = score(DEFAULT, "yahoo"), np.std(values[(DEFAULT, "yahoo", None)])
    lines += [
        "",
        "## The Yahoo sample, held out",
        "",
        f"`RegCB()`: **{ours:.4f}** (standard deviation {spread:.4f}"
        " over the repetitions; 201 training rounds). VW's explorers through the harness "
        "(`--cb_explore_adf -q sa`, the same rounds and seeds):",
        "",
        "| explorer | at its default | best fixed setting of the harness's grid |",
        "|---|---:|---:|",
    ]
    for f in _vw_families():
        default = f"{vw_default[f]:.4f}" if f in vw_default else "–"
        lines.append(f"| VW --{f.removeprefix('vw-')} | {default} | {vw_best[f]:.4f} |")
    lines += ["", f"VW's best explorer tuned on the stream: {envelope:.4f}; `RegCB()` "
              f"{'above' if ours > envelope else 'NOT above'} it by {ours - envelope:+.4f}."]
    return "\n".join(lines) + "\n"


def dataset(stream: str) -> str:
    """The UCI set a stream is made of (left out together: every stream of it).

    >>> dataset("page_blocks-noise-adf"), dataset("letter-rank251")
    ('page_blocks', 'letter')
    """
    return stream.split("-")[0]


def _vw_families() -> list[str]:
    return [f for f, fam in algorithms.FAMILIES.items() if fam.kind == "vw"]


def _defaults_match(chosen: str) -> str:
    """Whether ``RegCB()``'s setting for actions sharing every feature is the one chosen."""
    same = SETTINGS[chosen] == ("midpoint", MODEL_CLASSES["shared features"].l2)
    return ("`RegCB()` has this setting for actions sharing every feature: checked." if same
            else "**`RegCB()` does NOT have the setting chosen here: update "
            "the row of actions sharing every feature in `regcb_stream/defaults.py`, and "
            "rerun.**")


def tasks(reps: int) -> list[tuple]:
    out = [(g, s, r, None) for g in SETTINGS for s in (*STREAMS, "yahoo") for r in range(reps)]
    out += [(DEFAULT, s, r, None) for s in (*STREAMS, "yahoo") for r in range(reps)]
    out += [(f, "yahoo", r, p) for f in _vw_families() for p in algorithms.FAMILIES[f].grid
            for r in range(reps)]
    return out


def _task_of(record: dict) -> tuple:
    return record["name"], record["stream"], record["rep"], record["param"]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--runs", default=str(ROOT / "results" / "joint_defaults.jsonl"))
    parser.add_argument("--output", default=str(ROOT / "docs" / "results" / "joint_defaults.md"))
    args = parser.parse_args(argv)
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    start = time.perf_counter()
    done, ran = run_missing(args.runs, tasks(args.reps), run, _task_of, args.jobs,
                            order=lambda t: not t[1].startswith(("pendigits", "satimage")))
    print(f"{ran} runs in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    text = report(done, " ".join(["python -m bench.experiments.joint_defaults",
                                  *(argv or sys.argv[1:])]),
                  sum(r["seconds"] for r in done))
    pathlib.Path(args.output).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
