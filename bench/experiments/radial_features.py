"""The random features' view of a context's length: the direction alone, or the direction and
the log of the length (``RandomFeatures(radius=r)``), chosen on the 56 public streams.

``RegCB()``'s random features see each context's direction ``sqrt(d) x / |x|``: the same
whatever the contexts' scale (``docs/results/random_features.md`` found the features of ``x``
itself cost a user whose contexts are not standardized), but blind to how long a context is.
In few dimensions that is much of what the context says: on River's ``bananas`` (2 features)
the length is half of it. With ``radius = r`` each wave also gets ``r v_j log(|x| / sqrt(d))``
(``v_j ~ N(0, 1)``): a Gaussian kernel on the direction and on the log-length. Scaling every
context shifts the waves' phases alone, so the features stay as good whatever the scale; on
the unit sphere (the realizable problem) the length is constant and the map is the
direction's.

Each radius of :data:`RADII` (0: ``RegCB()``'s map until this choice) runs ``RegCB()`` with
that map, everything else at its default, on the 16 UCI streams (``bench/harness/problems.py``)
and the 40 streams of ``bench/experiments/unseen_streams.py`` (20 streams and their noisy
variants), 5 repetitions of the harness's protocol each; on the realizable linear problem of
the defaults' bar (K = 5, d = 10, 20,000 rounds, both variants, :data:`MAP_SEEDS`: each seed
draws another map); on its long form (200,000 rounds, twelve seeds: the long-horizon rule of
``bench/experiments/defaults.py``); and on the 16 UCI streams with every context multiplied
by each of :data:`SCALES` (repetition 0), beside the linear model. A radius is eligible if
its regret growth R(T)/R(T/2) is at most 1.6 on every realizable run and every long seed,
and if on the scaled streams its mean is at least the linear model's. Among the eligible,
the radius is chosen by leaving each data set out in turn (a stream and its noisy variant:
the best mean on the other streams, scored on the two).

From the repository root::

    .venv/bin/python -m bench.experiments.radial_features [--jobs 2] [--reps 5]   # ~1 h

Runs are kept in ``results/radial_features.jsonl`` (resumable); writes
``docs/results/radial_features.md``.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import time
from collections import defaultdict

import numpy as np

from bench.experiments import unseen_streams
from bench.experiments.defaults import LONG_SEEDS, MAX_GROWTH, long_regret
from bench.experiments.noisy_rewards import peers_section
from bench.harness import problems, protocol
from bench.harness.regcb_algo import RegCBAlgorithm
from bench.provenance import stamp
from bench.runs import run_missing
from regcb_stream import RegCB
from regcb_stream.datasets.synthetic import regret_growth
from regcb_stream.features.random_features import RADIUS, RandomFeatures

ROOT = pathlib.Path(__file__).resolve().parents[2]
RADII = (0.0, 0.5, 1.0)
LINEAR = "linear"  # RegCB(random_features=0), on the scaled streams
STREAMS = problems.UCI_STREAMS + unseen_streams.EVERY
MAP_SEEDS = range(8)
SCALES = (10.0, 0.1)
VARIANTS = ("optimistic", "elimination")


def learner(radius, seed: int, variant: str = "optimistic") -> RegCB:
    """``RegCB()`` with the random features of ``radius`` (:data:`LINEAR`: none)."""
    if radius == LINEAR:
        return RegCB(variant, seed=seed, random_features=0)
    return RegCB(variant, seed=seed, random_features=RandomFeatures(
        64, 1.0, seed, required=False, radius=radius))


def run(task: tuple) -> dict:
    """One (radius, stream, repetition, factor): progressive reward; stream
    ``"realizable"`` (repetition: variant, map seed) or ``"long"`` (repetition: seed):
    regret growth."""
    radius, stream, rep, factor = task
    record = {"radius": radius, "stream": stream, "rep": rep, "factor": factor}
    start = time.perf_counter()
    if stream == "realizable":
        variant, seed = rep
        record["growth"] = regret_growth(learner(radius, seed, variant))
    elif stream == "long":
        half, whole = long_regret(learner(radius, rep), rep)
        record["growth"] = whole / half
    else:
        problem = (problems.load_problem if stream in problems.UCI_STREAMS
                   else unseen_streams.load_problem)(stream, rep)
        if factor != 1.0:
            problem = problem.scaled(factor)
        algo = RegCBAlgorithm.defaults(problem.n_actions, rep)
        algo.learner = learner(radius, rep)
        record["progressive"] = protocol.run_protocol(algo, problem, rep)["progressive"]
    record["seconds"] = time.perf_counter() - start
    return record


def _means(rows: list[dict], factor: float = 1.0) -> dict:
    values = defaultdict(list)
    for r in rows:
        if "progressive" in r and r["factor"] == factor:
            values[(r["radius"], r["stream"])].append(r["progressive"])
    return {key: float(np.mean(v)) for key, v in values.items()}


def eligibility(rows: list[dict]) -> dict:
    """Per radius: its largest growth (realizable, long) and its scaled streams' mean
    against the linear model's, and whether it is eligible."""
    growth = defaultdict(lambda: defaultdict(float))
    for r in rows:
        if "growth" in r:
            growth[r["radius"]][r["stream"]] = max(growth[r["radius"]][r["stream"]],
                                                   r["growth"])
    out = {}
    for radius in RADII:
        scaled = []
        for factor in SCALES:
            means = _means(rows, factor)
            mean = np.mean([means[(radius, s)] for s in problems.UCI_STREAMS])
            scaled.append(mean - np.mean([means[(LINEAR, s)] for s in problems.UCI_STREAMS]))
        grown = growth[radius]
        out[radius] = {"realizable": grown["realizable"], "long": grown["long"],
                       "scaled": scaled,
                       "eligible": max(grown.values()) <= MAX_GROWTH and min(scaled) >= 0}
    return out


def dataset(stream: str) -> str:
    """The data set of a stream: itself, or the stream its noisy variant is made from."""
    return stream.removesuffix(unseen_streams.NOISY).removesuffix("-noise")


def choose(means: dict, radii, held: str | None = None) -> float:
    """The radius with the best mean over the streams (those of ``held``'s data set left
    out: a stream and its noisy variant)."""
    return max(radii, key=lambda r: np.mean([means[(r, s)] for s in STREAMS
                                             if held is None or dataset(s) != dataset(held)]))


def stream_table(means: dict, settings, held: dict, name=str, short=str) -> list[str]:
    """The report's table of each setting's mean per stream (``means[(setting, stream)]``,
    the best in bold), the setting chosen without the stream's data set (``held``) and its
    mean there, and the means over each group of streams (settings named by ``name`` in
    the header, by ``short`` in the column of choices)."""
    lines = ["", "## Progressive reward per stream (mean of 5 repetitions)", "",
             "| stream | " + " | ".join(name(g) for g in settings)
             + " | chosen without its data set | held out |",
             "|---|" + "---:|" * (len(settings) + 2)]
    for stream in STREAMS:
        values = [means[(g, stream)] for g in settings]
        cells = [f"**{v:.4f}**" if v == max(values) else f"{v:.4f}" for v in values]
        lines.append(f"| {stream} | " + " | ".join(cells)
                     + f" | {short(held[stream])} | {means[(held[stream], stream)]:.4f} |")
    for title, streams in (("16 UCI streams", problems.UCI_STREAMS),
                           ("20 unseen streams", unseen_streams.UNSEEN),
                           ("their noisy variants", unseen_streams.NOISY_STREAMS),
                           ("all 56", STREAMS)):
        lines.append(f"| **mean, {title}** | " + " | ".join(
            f"{np.mean([means[(g, s)] for s in streams]):.4f}" for g in settings) + " | | "
            f"{np.mean([means[(held[s], s)] for s in streams]):.4f} |")
    return lines


def report(rows: list[dict], command: str) -> str:
    means = _means(rows)
    rules = eligibility(rows)
    eligible = [r for r in RADII if rules[r]["eligible"]]
    held = {s: choose(means, eligible, s) for s in STREAMS}
    chosen = choose(means, eligible)
    lines = [
        "# The random features' view of a context's length (`RandomFeatures(radius=r)`)", "",
        f"- command: `{command}`",
        f"- {stamp()}; {len(rows)} runs, {sum(r['seconds'] for r in rows):.0f} s of runs",
        "- protocol, streams and rule: the docstring of `bench/experiments/radial_features.py`"
        "; `RegCB()` with every default but its random features' radius "
        f"(radius 0: the direction alone); `RegCB()`'s radius now: {RADIUS:g}", "",
        "## Eligibility", "",
        "| radius | largest growth, realizable (20,000 rounds, 8 maps, both variants) | "
        "largest growth, long (200,000 rounds, 12 seeds) | contexts x 10: against the "
        "linear model | contexts x 0.1: against the linear model | eligible |",
        "|---:|---:|---:|---:|---:|:---:|"]
    for radius in RADII:
        rule = rules[radius]
        lines.append(f"| {radius:g} | {rule['realizable']:.2f} | {rule['long']:.2f} | "
                     f"{rule['scaled'][0]:+.4f} | {rule['scaled'][1]:+.4f} | "
                     f"{'yes' if rule['eligible'] else 'no'} |")
    lines += stream_table(means, RADII, held, lambda r: f"radius {r:g}", lambda r: f"{r:g}")
    ahead = {r: sum(means[(r, s)] >= means[(0.0, s)] for s in STREAMS) for r in RADII}
    lines += ["", "At or above radius 0 (the direction alone), streams: " + ", ".join(
        f"radius {r:g}: {ahead[r]}/56" for r in RADII[1:]) + ".", "",
        f"Chosen on all 56 streams among the eligible: **radius {chosen:g}**; leaving each "
        f"stream's data set out, radius {chosen:g} is chosen on "
        f"{sum(h == chosen for h in held.values())} of 56 (held-out mean "
        f"{np.mean([means[(held[s], s)] for s in STREAMS]):.4f})."]
    gains = sorted(STREAMS, key=lambda s: means[(chosen, s)] - means[(0.0, s)])
    top = dataset(gains[-1])
    rest = [s for s in STREAMS if dataset(s) != top]
    gain = {s: f"{s} {means[(chosen, s)] - means[(0.0, s)]:+.4f}" for s in STREAMS}
    lines += ["", f"Radius {chosen:g} against radius 0, per stream: the largest gains "
              + ", ".join(gain[s] for s in gains[:-4:-1]) + "; the largest losses "
              + ", ".join(gain[s] for s in gains[:3])
        + f". Without {top}'s data set: mean {np.mean([means[(chosen, s)] for s in rest]):.4f}"
        f" against {np.mean([means[(0.0, s)] for s in rest]):.4f}, at or above on "
        f"{sum(means[(chosen, s)] >= means[(0.0, s)] for s in rest)}/{len(rest)}."]
    lines += peers_section(means, RADII, lambda radius: f"radius {radius:g}")
    if chosen != RADIUS:
        lines.append(f"`RegCB()`'s radius ({RADIUS:g}) is not the one chosen: set "
                     f"`RADIUS` in `regcb_stream/features/random_features.py`.")
    return "\n".join(lines) + "\n"


def _task_of(record: dict) -> tuple:
    rep = record["rep"]
    return record["radius"], record["stream"], tuple(rep) if isinstance(rep, list) else rep, \
        record["factor"]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--runs", default=str(ROOT / "results" / "radial_features.jsonl"))
    parser.add_argument("--output", default=str(ROOT / "docs" / "results" / "radial_features.md"))
    args = parser.parse_args(argv)
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    tasks = [(r, s, rep, 1.0) for rep in range(args.reps) for s in STREAMS for r in RADII]
    tasks += [(r, "realizable", (v, m), 1.0) for r in RADII for v in VARIANTS for m in MAP_SEEDS]
    tasks += [(r, "long", seed, 1.0) for r in RADII for seed in LONG_SEEDS]
    tasks += [(r, s, 0, f) for r in (*RADII, LINEAR) for s in problems.UCI_STREAMS
              for f in SCALES]
    rows, ran = run_missing(args.runs, tasks, run, _task_of, args.jobs)
    print(f"{ran} runs", file=sys.stderr)
    text = report(rows, " ".join(["python -m bench.experiments.radial_features",
                                  *(argv or sys.argv[1:])]))
    pathlib.Path(args.output).write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
