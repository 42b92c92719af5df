"""``regcb-compare``: RegCB or my VW explorer, on my logs? Every candidate replayed over the
same logged ADF stream by explore-eval (`regcb_stream.evaluation.explore_eval`), side by side.

    regcb-compare log.dat -q UA                      # RegCB's defaults and five VW explorers
    regcb-compare log.dat --regcb "--mellowness 0.01" --vw "--epsilon 0.1" --vw=--squarecb
    regcb-compare log.dat --json - --plot estimates.png
    regcb-compare decisions.json --dsjson --vw "--epsilon 0.1"   # a DSJSON log
    regcb-compare single_line.dat --cb_explore 26                # a single-line log
    regcb-compare ccb_log.dat --ccb_explore_adf                  # slots (`compare_slots`)
    regcb-compare slates_log.dat --slates                        # slates (`compare_slots`)

Each candidate's estimate is the progressive IPS reward of its own distributions on the
log's labelled examples while it learns from the examples explore-eval keeps for it (VW's
``--explore_eval`` average loss, negated), with a 95% interval by batch means (the log cut
in about 100 batches of consecutive examples: a learning policy's terms are not
independent, and the batches' spread counts that), and its self-normalized (SNIPS) variant
(for VW's rows with ``--snips``, which has VW write each example's distribution: slower;
without, VW's rows come from its progress lines, ``-P``). The table also gives the
examples kept, and two baselines on the same examples: the uniform-random policy and the
logging policy (the logged rewards). RegCB runs in this process (``--regcb``: any
``regcb-stream`` learner flags; none: its defaults, with the log's cost range unless the
flags give one). Each VW explorer (``--vw``: flags as given to ``vw --cb_explore_adf``;
none: ``--epsilon 0.05``, ``--squarecb``, ``--regcb``, ``--regcbopt`` and ``--cover 3``)
runs VW's own ``--explore_eval`` in a process of its own, beside the others. ``-q``,
``--dsjson`` and ``--target_rate``, ``--multiplier`` apply to every candidate.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import zlib
from dataclasses import asdict

import numpy as np

from regcb_stream.command import shell
from regcb_stream.evaluation.compare_slots import compare_slots
from regcb_stream.evaluation.estimates import (
    VW_RUN,
    Batches,
    Row,
    batch_mean,
    combined,
    estimate_row,
    running_estimate,
    student_quantile,
)
from regcb_stream.evaluation.explore_eval import (
    ACTIONS,
    RegCBExplorer,
    as_adf,
    explore_eval,
    read_log,
)
from regcb_stream.io.vw_slots import FLAGS

DEFAULT_VW = ("--epsilon 0.05", "--squarecb", "--regcb", "--regcb --regcbopt", "--cover 3")


def compare(path: str, regcb: list[str] | None = None, vw: list[str] | None = None, *,
            interactions: list[str] = (), target_rate: float | None = None, seed: int = 0,
            progress: bool = False, points: int = 100, dsjson: bool = False,
            replays: int = 1, multiplier: float | str | None = None,
            snips: bool = False, cb_actions: int | None = None) -> list[Row]:
    """The comparison as data: a `Row` per candidate, then the baselines. With ``replays``
    R > 1, each candidate replays the log R times (rejection seeds ``seed`` to
    ``seed + R - 1``; the first replay in the log's order, the others in orders of its
    examples shuffled by their seed): its row is their mean, and its interval adds the
    spread of the replays (the learner's path, which depends on the order it meets the
    examples in) to the log's sampling error (see `combined`). The estimate is then the
    learner's reward on these examples averaged over their orders, not in the log's order
    alone: without ``replays`` for a log whose order matters (drift over time).
    ``multiplier``: VW's ``--multiplier`` (fixed; ``"min"``: the log's least logged
    probability, which keeps every example with probability at most 1 whatever the
    explorer plays: exact rejection sampling); None: VW's adaptive multiplier.
    ``points``: about how many batches (and points of each row's trace) the log is cut in.
    ``snips``: VW's rows get SNIPS too (VW's ``-p``, slower; without, ``Row.snips`` is None).
    ``cb_actions``: K for a single-line log (VW's ``--cb_explore K``), replayed as the ADF
    log `explore_eval.as_adf` makes of it, every namespace crossed with the actions'.

    >>> rows = compare("../shared/vw_tests/train-sets/cb_test.ldf", vw=["--epsilon 0.2"])
    >>> [(row.name, row.examples) for row in rows]  # doctest: +NORMALIZE_WHITESPACE
    [('regcb (defaults)', 2), ('vw --epsilon 0.2', 2), ('uniform random', 2),
     ('logging policy', 2)]
    """
    if cb_actions is not None and dsjson:
        raise ValueError("a DSJSON log is ADF: --cb_explore K is for single-line logs")
    with tempfile.TemporaryDirectory() as folder:
        if cb_actions is not None:  # a single-line log, replayed as ADF
            path = _adf_copy(path, cb_actions, os.path.join(folder, "adf.log"))
            interactions = [*interactions, ":" + ACTIONS[0]]
        return _compare(path, folder, regcb, vw, interactions, target_rate, seed, progress,
                        points, dsjson, replays, multiplier, snips)


def _compare(path: str, folder: str, regcb, vw, interactions, target_rate, seed: int,
             progress: bool, points: int, dsjson: bool, replays: int, multiplier,
             snips: bool) -> list[Row]:
    """`compare` of an ADF or DSJSON log, its temporary files in ``folder``."""
    data = log_bytes(path)
    costs, probs = _scan_labels(data, dsjson)
    if not probs:
        raise ValueError("the log has no labelled example with a probability: nothing to "
                         "estimate")
    cost_range = (min(costs), max(costs)) if costs and min(costs) < max(costs) else None
    if multiplier == "min":
        multiplier = min(probs) if probs else None
    quadratic = " ".join(f"-q {spec}" for spec in interactions)
    tail = quadratic + (f" --target_rate {target_rate}" if target_rate is not None else ""
                        ) + (" --dsjson" if dsjson else "") + (
        f" --multiplier {multiplier!r}" if multiplier is not None else "")
    seeds = range(seed, seed + replays)
    examples: list = []  # (label, number of actions) of each example, read by RegCB's run
    units = log_examples(data, dsjson) if replays > 1 else []
    logs = [(path, None)] + [shuffled(units, dsjson, s, os.path.join(folder, f"{s}.log"))
                             for s in seeds[1:]]
    size = max(1, len(costs) // points)  # examples in a batch
    runs = [[_start_vw(flags, f"{tail} --random_seed {s}", log,
                       os.path.join(folder, f"{j}.{s}.p") if snips else None, size)
             for s, (log, _) in zip(seeds, logs)]
            for j, flags in enumerate(vw if vw is not None else DEFAULT_VW)]
    results = [[_regcb_run(log, flags, interactions, (target_rate, multiplier), s,
                           progress, cost_range, dsjson, examples)
                for s, (log, _) in zip(seeds, logs)]
               for flags in (regcb or [""])]
    batches = Batches(size, len(examples))
    labelled = [_labelled(examples, order) for _, order in logs]
    rows = [combined([_result_row(name, result, known, batches)
                      for (name, result), known in zip(replayed, labelled)])
            for replayed in results]
    rows += [combined([_vw_row(run, known, batches) for run, known in zip(replayed, labelled)])
             for replayed in runs]
    labelled = labelled[0]
    rewards = np.array([-lab.cost for _, lab in labelled])
    uniform = np.array([1 / lab.prob / examples[i][1] for i, lab in labelled])
    positions = np.array([i for i, _ in labelled], dtype=int)
    rows.append(estimate_row("uniform random", uniform, rewards, positions, batches))
    rows.append(estimate_row("logging policy", np.ones(len(labelled)), rewards, positions,
                             batches))
    return rows


@contextlib.contextmanager
def _log(path: str):
    """The log's lines, read ahead as the command reads its input (`shell.open_input`:
    repeated action lines parsed once, gzip decompressed)."""
    with contextlib.ExitStack() as stack:
        yield shell.open_input(stack, path)


def _usable(label) -> bool:
    return label is not None and label.prob is not None and label.cost is not None


def _labelled(examples: list, order: np.ndarray | None) -> list[tuple]:
    """(position, label) of each labelled example of a replay's log: the log's own
    ``examples`` (label, number of actions), in ``order`` (None: the log's)."""
    labels = [label for label, _ in examples]
    if order is not None:
        if len(order) != len(labels):
            raise ValueError(f"{len(order)} examples found by splitting the log at its empty "
                             f"lines against {len(labels)} read; replays need a log whose "
                             "examples end with an empty line")
        labels = [labels[i] for i in order]
    return [(i, label) for i, label in enumerate(labels) if _usable(label)]


def log_bytes(path: str) -> bytes:
    """The log's bytes, decompressed if it is gzip (damaged gzip: a ``ValueError`` naming
    the first line that cannot be read)."""
    with open(path, "rb") as log:
        data = log.read()
    if data[:2] != b"\x1f\x8b":
        return data
    try:
        return gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as error:
        with _log(path) as lines:
            for _ in lines:  # (the reader names the line; gzip.decompress does not)
                pass
        raise ValueError(f"{path}: the gzip input is corrupt ({error})") from None


def replay_order(n: int, seed: int) -> np.ndarray:
    """The order a replay after the first plays a log's ``n`` examples in."""
    return np.random.default_rng(seed).permutation(n)


def _adf_copy(path: str, n_actions: int, copy: str) -> str:
    """A single-line log written as ADF (`explore_eval.as_adf`)."""
    with contextlib.ExitStack() as stack, open(copy, "w") as out:
        for line in as_adf(shell.open_input(stack, path), n_actions):
            out.write(line + "\n")
    return copy


def log_examples(data: bytes, dsjson: bool) -> list[bytes]:
    """The log's examples as text: DSJSON's lines, or text's blocks between empty lines."""
    split = rb"\r?\n" if dsjson else rb"\r?\n(?:[ \t]*\r?\n)+"
    return [unit for unit in re.split(split, data) if unit.strip()]


def shuffled(units: list[bytes], dsjson: bool, seed: int, copy: str
              ) -> tuple[str, np.ndarray]:
    """A copy of the log's examples (`log_examples`) in a shuffled order (``seed``): the
    copy's path, and for each of its examples the number of that example in the log."""
    order = replay_order(len(units), seed)
    with open(copy, "wb") as out:
        out.write((b"\n" if dsjson else b"\n\n").join(units[i] for i in order) + b"\n\n")
    return copy, order


def _scan_labels(text: bytes, dsjson: bool) -> tuple[list[float], list[float]]:
    """The costs and the logged probabilities of the log's labels, from a scan of its
    text."""
    if dsjson:
        return (_floats(re.findall(rb'"_label_cost":\s*(-?[\d.eE+-]+)', text)),
                _floats(re.findall(rb'"_label_probability":\s*([\d.eE+-]+)', text)))
    pairs = re.findall(rb"\n[ \t]*(?:\d+|[ \t]*):(-?[\d.eE+-]+):([\d.eE+-]+)[ \t]*\|",
                       b"\n" + text)  # (at a line's start: faster than (?m)^)
    return _floats(c for c, _ in pairs), _floats(p for _, p in pairs)


def _floats(words) -> list[float]:
    """The words that are numbers, as floats (the others fail in the parse, which names
    their line)."""
    out = []
    for word in words:
        with contextlib.suppress(ValueError):
            out.append(float(word))
    return out


def _regcb_run(path: str, flags: str, interactions, rejection: tuple, seed: int,
               progress: bool, cost_range: tuple | None, dsjson: bool, examples: list
               ) -> tuple:
    """A RegCB candidate's explore-eval: its name and `ExploreEvalResult`. Without
    ``--cb_min_cost``/``--cb_max_cost`` among its flags, the cost range is the log's (its
    bounds are clipped to the range: a range the costs leave makes every action look
    alike). The first run appends each example's (label, number of actions) to
    ``examples``."""
    from regcb_stream.command import configure
    from regcb_stream.command.main import build_parser

    args = build_parser().parse_args(["--cb_explore_adf", *flags.split(),
                                      *[f"-q{spec}" for spec in interactions]])
    if cost_range and args.cb_min_cost is None and args.cb_max_cost is None:
        args.cb_min_cost, args.cb_max_cost = cost_range
    learner, settings = configure.setup(args)
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
                              progress=None if bar is None else (lambda n: bar.update(1)))
    if bar is not None:
        bar.close()
    return name, result


def _result_row(name: str, result, labelled: list, batches: Batches) -> Row:
    positions = np.array([i for i, _ in labelled], dtype=int)
    row = estimate_row(name, np.array(result.weights), np.array(result.rewards), positions,
                       batches)
    row.kept = result.weighted_kept
    return row


def _start_vw(flags: str, tail: str, path: str, predictions: str | None, size: int):
    """VW's own ``--explore_eval`` of the log, in a process of its own: with
    ``predictions``, each example's distribution written there (VW's ``-p``); without,
    its progress printed every ``size`` examples (VW's ``-P``), which gives the batch
    means."""
    output = f"-p {predictions}" if predictions else f"-P {size}"
    command = [sys.executable, "-c", VW_RUN,
               f"--cb_explore_adf {flags} {tail} --explore_eval -d {path} {output}"]
    return (flags, predictions, subprocess.Popen(command, stdout=subprocess.DEVNULL,
                                                 stderr=subprocess.PIPE, text=True))


def _vw_row(run, labelled: list, batches: Batches) -> Row:
    flags, predictions, process = run
    _, err = process.communicate()
    if process.returncode:
        raise RuntimeError(f"vw {flags} --explore_eval failed: {err.strip()[-300:]}")
    name, rewards = f"vw {flags}", np.array([-lab.cost for _, lab in labelled])
    positions = np.array([i for i, _ in labelled], dtype=int)
    if predictions:
        pmfs = _read_predictions(predictions)
        weights = np.array([pmfs[i].get(lab.action, 0.0) / lab.prob for i, lab in labelled])
        row = estimate_row(name, weights, rewards, positions, batches)
    else:
        row = _progress_row(name, err, positions)
    kept = [line.split("=")[1] for line in err.splitlines()
            if line.startswith("weighted update count")]
    row.kept = float(kept[0]) if kept else None
    return row


def _progress_row(name: str, err: str, positions: np.ndarray) -> Row:
    """A VW row from its progress lines (``-P``): each batch's mean loss (``since last``)
    up to its example counter; the examples after the last line join the last batch, their
    sum taken from the final average loss."""
    ends, means, average = [], [], math.nan
    for line in err.splitlines():
        words = line.split()
        if line.startswith("average loss ="):  # (n.a.: no labelled example)
            average = math.nan if _number(words[-1]) is None else _number(words[-1])
        elif len(words) >= 4 and words[2].isdigit() and _number(words[0]) is not None:
            ends.append(int(words[2]))
            means.append(_number(words[1]) or 0.0)  # (n.a.: no labelled example)
    n = len(positions)
    if n == 0 or math.isnan(average):
        nan = math.nan
        return Row(name, nan, nan, nan, None, None, None, n, trace=[])
    counts = np.diff(np.searchsorted(positions, [0, *ends]))
    sums = -np.array(means) * counts
    if len(sums) == 0:
        sums, counts = np.zeros(1), np.zeros(1)
    sums[-1] += -average * n - sums.sum()
    counts[-1] += n - counts.sum()
    value, se, dof = batch_mean(sums, counts.astype(float))
    half = student_quantile(dof) * se
    trace = [(int(c), float(v)) for c, v, k in zip(
        np.cumsum(counts), running_estimate(sums, counts), counts) if k]
    return Row(name, value, value - half, value + half, None, None, None, n, trace=trace,
               se=se)


def _number(word: str) -> float | None:
    try:
        return float(word)
    except ValueError:
        return None


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
        snips = "n/a" if row.snips is None else f"{row.snips:7.4f}"
        lines.append(f"{row.name:<{width}}  {row.estimate:7.4f}  [{row.low:7.4f}, "
                     f"{row.high:7.4f}]  {snips:>7}  {kept:>8}  {row.examples:8d}")
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
    parser.add_argument("--cb_explore", type=int, metavar="K",
                        help="the log is single-line with K actions (VW's --cb_explore K): "
                             "replayed as ADF, each action a line |_action aK crossed with "
                             "every namespace (-q :_)")
    parser.add_argument("--ccb_explore_adf", action="store_true",
                        help="the log is VW's conditional contextual bandit (CCB) text, or "
                             "CCB DSJSON with --dsjson: each candidate's slots scored by "
                             "per-slot IPS (regcb_stream/evaluation/compare_slots.py)")
    parser.add_argument("--slates", action="store_true",
                        help="the log is VW's slates text, or slates DSJSON with --dsjson: "
                             "each candidate's slates scored by the pseudo-inverse estimator "
                             "(regcb_stream/evaluation/compare_slots.py)")
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
                        help="replay the log R times per candidate (seeds random_seed, ...; "
                             "all but the first in shuffled orders of its examples): the "
                             "mean, and an interval that counts the learner's path")
    parser.add_argument("--snips", action="store_true",
                        help="SNIPS for VW's rows too (VW then writes each example's "
                             "distribution, -p: slower)")
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
    try:  # (the outputs' folders, before any work)
        shell.check_model_path(args.plot, "--plot")
        shell.check_model_path(None if args.json == "-" else args.json, "--json")
    except shell.PathError as error:
        parser.error(str(error))
    slots = "ccb" if args.ccb_explore_adf else "slates" if args.slates else None
    if slots:
        given = [flag for flag, value in (("--cb_explore", args.cb_explore), (
            "--target_rate", args.target_rate), ("--multiplier", args.multiplier), (
            "--snips", args.snips), ("--replays", args.replays != 1), (
            "--slates", args.slates and args.ccb_explore_adf)) if value]
        if given:
            parser.error(f"{', '.join(given)}: not with {FLAGS[slots]} (each slot or slate "
                         "is scored in one pass)")
    try:
        if slots:
            rows = compare_slots(args.log, args.regcb, args.vw, kind=slots,
                                 interactions=args.interactions, dsjson=args.dsjson)
        else:
            rows = compare(args.log, args.regcb, args.vw, interactions=args.interactions,
                           target_rate=args.target_rate, seed=args.random_seed,
                           progress=not args.quiet, dsjson=args.dsjson,
                           replays=max(1, args.replays), multiplier=args.multiplier,
                           snips=args.snips, cb_actions=args.cb_explore)
    except (ValueError, RuntimeError, shell.PathError) as error:
        where = "" if str(error).startswith(("line ", args.log)) else f"{args.log}: "
        print(f"regcb-compare: error: {where}{error}", file=sys.stderr)
        return 1
    if args.replays <= 1 and not args.quiet and not slots:
        print("regcb-compare: one replay per candidate: its interval leaves out the spread "
              "of the learner's path (--replays 5 --multiplier min counts it)", file=sys.stderr)
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
