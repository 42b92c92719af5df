"""``regcb-compare``: RegCB or my VW explorer, on my logs? Every candidate replayed over the
same logged ADF stream by explore-eval (`regcb_stream.explore_eval`), side by side.

    regcb-compare log.dat -q UA                      # RegCB's defaults and five VW explorers
    regcb-compare log.dat --regcb "--mellowness 0.01" --vw "--epsilon 0.1" --vw=--squarecb
    regcb-compare log.dat --json - --plot estimates.png
    regcb-compare decisions.json --dsjson --vw "--epsilon 0.1"   # a DSJSON log

Each candidate's estimate is the progressive IPS reward of its own distributions on the
log's labelled examples while it learns from the examples explore-eval keeps for it (VW's
``--explore_eval`` average loss, negated), with a normal 95% interval, and its
self-normalized (SNIPS) variant. The table also gives the examples kept, and two
baselines on the same examples: the uniform-random policy and the logging policy (the
logged rewards). RegCB runs in this process (``--regcb``: any ``regcb-stream`` learner
flags; none: its defaults, with the log's cost range unless the flags give one). Each VW
explorer (``--vw``: flags as given to ``vw --cb_explore_adf``; none: ``--epsilon 0.05``,
``--squarecb``, ``--regcb``, ``--regcbopt`` and ``--cover 3``) runs VW's own
``--explore_eval`` in a process of its own, beside the others. ``-q``, ``--dsjson`` and
``--target_rate``, ``--multiplier`` apply to every candidate.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from statistics import NormalDist

import numpy as np

from regcb_stream import shell
from regcb_stream.explore_eval import RegCBExplorer, explore_eval, read_log

DEFAULT_VW = ("--epsilon 0.05", "--squarecb", "--regcb", "--regcb --regcbopt", "--cover 3")
VW_RUN = ("import sys; from vowpalwabbit import Workspace; "
          "Workspace(sys.argv[1]).finish()")
Z = NormalDist().inv_cdf(0.975)


@dataclass
class Row:
    """One line of the comparison: a candidate or a baseline."""

    name: str
    estimate: float  # expected reward, IPS (the negative of VW's average loss)
    low: float
    high: float
    snips: float  # the self-normalized estimate
    snips_low: float
    snips_high: float
    examples: int  # labelled examples scored
    kept: float | None = None  # explore-eval's (weighted) update count
    trace: list | None = None  # (labelled examples, running IPS estimate) along the log


def compare(path: str, regcb: list[str] | None = None, vw: list[str] | None = None, *,
            interactions: list[str] = (), target_rate: float | None = None, seed: int = 0,
            progress: bool = False, points: int = 100, dsjson: bool = False,
            replays: int = 1, multiplier: float | str | None = None) -> list[Row]:
    """The comparison as data: a `Row` per candidate, then the baselines. With ``replays``
    R > 1, each candidate replays the log R times (rejection seeds ``seed`` to
    ``seed + R - 1``): its row is their mean, and its interval adds the spread of the
    replays (the learner's path) to the log's sampling error (see `combined`).
    ``multiplier``: VW's ``--multiplier`` (fixed; ``"min"``: the log's least logged
    probability, which keeps every example with probability at most 1 whatever the
    explorer plays: exact rejection sampling); None: VW's adaptive multiplier.

    >>> rows = compare("../shared/vw_tests/train-sets/cb_test.ldf", vw=["--epsilon 0.2"])
    >>> [(row.name, row.examples) for row in rows]  # doctest: +NORMALIZE_WHITESPACE
    [('regcb (defaults)', 2), ('vw --epsilon 0.2', 2), ('uniform random', 2),
     ('logging policy', 2)]
    """
    costs, probs = _scan_labels(path, dsjson)
    cost_range = (min(costs), max(costs)) if costs and min(costs) < max(costs) else None
    if multiplier == "min":
        multiplier = min(probs) if probs else None
    quadratic = " ".join(f"-q {spec}" for spec in interactions)
    tail = quadratic + (f" --target_rate {target_rate}" if target_rate is not None else ""
                        ) + (" --dsjson" if dsjson else "") + (
        f" --multiplier {multiplier!r}" if multiplier is not None else "")
    seeds = range(seed, seed + replays)
    examples: list = []  # (label, number of actions) of each example, read by RegCB's run
    with tempfile.TemporaryDirectory() as folder:
        runs = [[_start_vw(flags, f"{tail} --random_seed {s}", path,
                           os.path.join(folder, f"{j}.{s}.p")) for s in seeds]
                for j, flags in enumerate(vw if vw is not None else DEFAULT_VW)]
        results = [[_regcb_run(path, flags, interactions, (target_rate, multiplier), s,
                               progress, cost_range, dsjson, examples) for s in seeds]
                   for flags in (regcb or [""])]
        labelled = [(i, lab) for i, (lab, _) in enumerate(examples) if _usable(lab)]
        every = max(1, len(labelled) // points)
        rows = [combined([_result_row(name, result, every) for name, result in replayed])
                for replayed in results]
        rows += [combined([_vw_row(run, labelled, every) for run in replayed])
                 for replayed in runs]
    rewards = np.array([-lab.cost for _, lab in labelled])
    uniform = np.array([1 / lab.prob / examples[i][1] for i, lab in labelled])
    rows.append(_row("uniform random", uniform, rewards, every))
    rows.append(_row("logging policy", np.ones(len(labelled)), rewards, every))
    return rows


@contextlib.contextmanager
def _log(path: str):
    """The log's lines, read ahead as the command reads its input (`shell.open_input`:
    repeated action lines parsed once, gzip decompressed)."""
    with contextlib.ExitStack() as stack:
        yield shell.open_input(stack, path)


def _usable(label) -> bool:
    return label is not None and label.prob is not None and label.cost is not None


def _scan_labels(path: str, dsjson: bool) -> tuple[list[float], list[float]]:
    """The costs and the logged probabilities of the log's labels, from a scan of its
    text."""
    with open(path, "rb") as log:
        text = log.read()
    if dsjson:
        return ([float(c) for c in re.findall(rb'"_label_cost":\s*(-?[\d.eE+-]+)', text)],
                [float(p) for p in re.findall(rb'"_label_probability":\s*([\d.eE+-]+)',
                                              text)])
    pairs = re.findall(rb"(?m)^[ \t]*(?:\d+|[ \t]*):(-?[\d.eE+-]+):([\d.eE+-]+)[ \t]*\|",
                       text)
    return [float(c) for c, _ in pairs], [float(p) for _, p in pairs]


def _regcb_run(path: str, flags: str, interactions, rejection: tuple, seed: int,
               progress: bool, cost_range: tuple | None, dsjson: bool, examples: list
               ) -> tuple:
    """A RegCB candidate's explore-eval: its name and `ExploreEvalResult`. Without
    ``--cb_min_cost``/``--cb_max_cost`` among its flags, the cost range is the log's (its
    bounds are clipped to the range: a range the costs leave makes every action look
    alike). The first run appends each example's (label, number of actions) to
    ``examples``."""
    from regcb_stream import command
    from regcb_stream.cli import build_parser

    args = build_parser().parse_args(["--cb_explore_adf", *flags.split(),
                                      *[f"-q{spec}" for spec in interactions]])
    if cost_range and args.cb_min_cost is None and args.cb_max_cost is None:
        args.cb_min_cost, args.cb_max_cost = cost_range
    learner, settings = command.setup(args)
    name = f"regcb {flags}".strip() if flags else "regcb (defaults)"
    explorer = RegCBExplorer(learner, settings.interactions, settings.hash_bits, name=name)
    bar = _bar(name) if progress else None
    tap = examples if not examples else None  # (the first run)
    with _log(path) as lines:
        log = read_log(lines, dsjson, text=False)
        if tap is not None:
            log = (tap.append((ex.label, len(ex.parsed.actions))) or ex for ex in log)
        target_rate, multiplier = rejection
        result = explore_eval(log, explorer, seed=seed, target_rate=target_rate,
                              multiplier=multiplier,
                              progress=bar and (lambda n: bar.update(1)))
    if bar is not None:
        bar.close()
    return name, result


def _result_row(name: str, result, every: int) -> Row:
    row = _row(name, np.array(result.weights), np.array(result.rewards), every)
    row.kept = result.weighted_kept
    return row


def _start_vw(flags: str, tail: str, path: str, predictions: str):
    command = [sys.executable, "-c", VW_RUN,
               f"--cb_explore_adf {flags} {tail} --explore_eval -d {path} -p {predictions}"]
    return (flags, predictions, subprocess.Popen(command, stdout=subprocess.DEVNULL,
                                                 stderr=subprocess.PIPE, text=True))


def _vw_row(run, labelled: list, every: int) -> Row:
    flags, predictions, process = run
    _, err = process.communicate()
    if process.returncode:
        raise RuntimeError(f"vw {flags} --explore_eval failed: {err.strip()[-300:]}")
    pmfs = _read_predictions(predictions)
    weights = np.array([pmfs[i].get(lab.action, 0.0) / lab.prob for i, lab in labelled])
    row = _row(f"vw {flags}", weights, np.array([-lab.cost for _, lab in labelled]), every)
    kept = [line.split("=")[1] for line in err.splitlines()
            if line.startswith("weighted update count")]
    row.kept = float(kept[0]) if kept else None
    return row


def _read_predictions(path: str) -> list[dict[int, float]]:
    """VW's ``-p`` output of ADF examples: one ``{action: probability}`` per example."""
    out = []
    with open(path) as lines:
        for line in lines:
            line = line.strip()
            if line:
                pairs = (pair.split(":") for pair in line.split(" ")[0].split(","))
                out.append({int(a): float(p) for a, p in pairs})
    return out


def combined(replays: list[Row]) -> Row:
    """One row of R replays of a candidate: the mean of their estimates, within
    ``t sqrt(se^2 + s^2 / R)``, ``se^2`` the mean of their squared standard errors (the
    log's sampling error, which the replays share) and ``s^2`` the variance of their
    estimates (the learner's path, which a single replay's interval leaves out); ``t`` is
    Student's quantile for Welch-Satterthwaite's degrees of freedom, ``s^2`` being known
    from R - 1 only."""
    if len(replays) == 1:
        return replays[0]
    first, n = replays[0], len(replays)

    def pooled(values: list[float], lows: list[float], highs: list[float]) -> tuple:
        se2 = float(np.mean([((high - low) / (2 * Z)) ** 2 for low, high in zip(lows, highs)]))
        path = float(np.var(values, ddof=1)) / n
        value = float(np.mean(values))
        dof = (se2 + path) ** 2 / (path ** 2 / (n - 1)) if path > 0 else math.inf
        half = _student(dof) * math.sqrt(se2 + path)
        return value, value - half, value + half

    ips = pooled(*zip(*[(r.estimate, r.low, r.high) for r in replays]))
    snips = pooled(*zip(*[(r.snips, r.snips_low, r.snips_high) for r in replays]))
    kept = [r.kept for r in replays if r.kept is not None]
    trace = [(point[0], float(np.mean([r.trace[i][1] for r in replays])))
             for i, point in enumerate(first.trace or [])]
    return Row(first.name, *ips, *snips, first.examples,
               float(np.mean(kept)) if kept else None, trace)


def _student(dof: float) -> float:
    """Student's t quantile of 97.5% for ``dof`` degrees of freedom: below 3, the exact
    value at the integer below (wider: conservative); from 3, the Cornish-Fisher expansion
    around the normal's (within 0.8% of the exact value at 3, 0.3% at 4, 0.1% at 5)."""
    if math.isinf(dof):
        return Z
    if dof < 3:
        return 12.7062 if dof < 2 else 4.3027
    z = Z
    return (z + (z ** 3 + z) / (4 * dof) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * dof ** 2)
            + (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / (384 * dof ** 3))


def _row(name: str, weights: np.ndarray, rewards: np.ndarray, every: int) -> Row:
    """A row from each labelled example's weight ``pi(a) / p`` and logged reward: IPS and
    SNIPS with their normal intervals (`regcb_stream.ope`), and the IPS trace."""
    from regcb_stream.ope import _mean, _snips

    n = len(weights)
    if n == 0:
        nan = math.nan
        return Row(name, nan, nan, nan, nan, nan, nan, 0, trace=[])
    ips, snips = _mean(weights * rewards, Z), _snips(weights, rewards, Z)
    running = np.cumsum(weights * rewards) / np.arange(1, n + 1)
    trace = [(i + 1, float(running[i])) for i in range(every - 1, n, every)]
    return Row(name, ips.value, ips.low, ips.high, snips.value, snips.low, snips.high, n,
               trace=trace)


def _bar(name: str):
    try:
        from tqdm import tqdm
    except ImportError:  # (an optional extra)
        return None
    return tqdm(desc=name, unit=" ex", file=sys.stderr, leave=False)


def format_table(rows: list[Row]) -> str:
    """The comparison as a text table (rewards: higher is better)."""
    width = max(len(row.name) for row in rows)
    lines = [f"{'policy':<{width}}  {'IPS':>7}  {'95% interval':>17}  {'SNIPS':>7}  "
             f"{'kept':>8}  {'examples':>8}"]
    for row in rows:
        kept = "" if row.kept is None else f"{row.kept:8.1f}"
        lines.append(f"{row.name:<{width}}  {row.estimate:7.4f}  [{row.low:7.4f}, "
                     f"{row.high:7.4f}]  {row.snips:7.4f}  {kept:>8}  {row.examples:8d}")
    return "\n".join(lines) + "\n"


def plot(rows: list[Row], path: str) -> None:
    """Each row's running estimate along the log, to an image file."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(8, 5))
    for row in rows:
        if row.trace:
            x, y = zip(*row.trace)
            axes.plot(x, y, label=row.name, linestyle="--" if row.kept is None else "-")
    axes.set_xlabel("labelled examples")
    axes.set_ylabel("estimated reward (progressive IPS)")
    if any(row.trace for row in rows):
        axes.legend(fontsize="small")
    figure.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(figure)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="regcb-compare", description=__doc__.replace("``", ""),
        formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
    parser.add_argument("log", help="a logged stream in VW's ADF text format (or DSJSON)")
    parser.add_argument("--dsjson", action="store_true", help="the log is VW's DSJSON")
    parser.add_argument("--regcb", action="append", metavar="FLAGS",
                        help="a RegCB candidate: regcb-stream learner flags (repeatable; "
                             "none: RegCB's defaults)")
    parser.add_argument("--vw", action="append", metavar="FLAGS",
                        help="a VW explorer: flags as given to vw --cb_explore_adf, e.g. "
                             "--vw \"--epsilon 0.1\" or --vw=--squarecb (repeatable; none: "
                             f"{', '.join(DEFAULT_VW)})")
    parser.add_argument("-q", "--quadratic", action="append", default=[], metavar="AB",
                        dest="interactions", help="cross namespaces A and B (every candidate)")
    parser.add_argument("--target_rate", type=float, help="VW's --explore_eval target rate")
    parser.add_argument("--multiplier", type=_multiplier, metavar="M|min",
                        help="VW's fixed --multiplier; min: the log's least logged "
                             "probability (exact rejection sampling; default: VW's adaptive "
                             "multiplier)")
    parser.add_argument("--random_seed", type=int, default=0, help="the rejection draws' seed")
    parser.add_argument("--replays", type=int, default=1, metavar="R",
                        help="replay the log R times per candidate (seeds random_seed, ...): "
                             "the mean, and an interval that counts the learner's path")
    parser.add_argument("--json", metavar="FILE", help="write the table as JSON (- stdout)")
    parser.add_argument("--plot", metavar="FILE", help="draw the estimates along the log")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    return parser


def _multiplier(text: str) -> float | str:
    if text == "min":
        return text
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value < math.inf:
        raise argparse.ArgumentTypeError(f"expected a number > 0 or min, got {text!r}")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not os.path.isfile(args.log):
        parser.error(f"{args.log}: no such file")
    try:
        rows = compare(args.log, args.regcb, args.vw, interactions=args.interactions,
                       target_rate=args.target_rate, seed=args.random_seed,
                       progress=not args.quiet, dsjson=args.dsjson,
                       replays=max(1, args.replays), multiplier=args.multiplier)
    except (ValueError, RuntimeError, shell.PathError) as error:
        print(f"regcb-compare: error: {error}", file=sys.stderr)
        return 1
    if args.plot:
        plot(rows, args.plot)
    text = json.dumps([asdict(row) for row in rows], indent=1) + "\n"
    if args.json and args.json != "-":
        with open(args.json, "w") as out:
            out.write(text)
    try:
        sys.stdout.write(text if args.json == "-" else format_table(rows))
        sys.stdout.flush()
    except BrokenPipeError:  # (| head)
        shell.silence_stdout()
        return shell.PIPE_CLOSED
    return 0


if __name__ == "__main__":
    sys.exit(main())
