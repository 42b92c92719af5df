"""``regcb-stream``: VW contextual-bandit text in, VW ``-p`` predictions out.

    regcb-stream --cb_explore_adf --regcb -q UA -d train.dat -p preds.txt
    producer | regcb-stream --cb_explore 4 --regcbopt -p /dev/stdout --quiet

Flags named like VW's mean what they mean in VW; ``--oracle``, ``--schedule``, ``--beta``,
``--ridge_l2``, ``--ridge_prior`` and ``--lenient`` are this tool's own. VW's other flags
are taken, ignored or refused in one line as `vw_flags` declares.
Without ``--mellowness`` or ``--beta`` the exploration budget is `regcb_stream.RegCB`'s
default, and the closing summary says which budget was in force.
Exit statuses: see ``--help``.
"""

from __future__ import annotations

import os

# BLAS on one thread (one core does more than two: docs/results/blas_threads.md), set before numpy
# loads, which is ~4 ms of start-up cheaper than a limit set afterwards; a user's value stays.
for _threads in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_threads, "1")

import argparse
import contextlib
import gc
import re
import sys

from regcb_stream.adapt.change import DEFAULT_THRESHOLD
from regcb_stream.command import configure, resume, shell, vw_flags
from regcb_stream.command.driver import Driver, StreamSettings
from regcb_stream.command.progress import ProgressTable
from regcb_stream.defaults import MODEL_CLASSES, TIES, VARIANT, VW_MELLOWNESS
from regcb_stream.explore.budget import DEFAULT_GRID
from regcb_stream.io.hashing import DEFAULT_BITS
from regcb_stream.io.vw_text import VWParseError
from regcb_stream.learner import RegCB
from regcb_stream.oracles.bounded import HEAD
from regcb_stream.oracles.ridge import MAX_EXACT
from regcb_stream.rules import TIE_RULES

WORKERS = 2  # --scheduler local's worker processes by default
EPILOG = """example:
  regcb-stream --cb_explore_adf -q sa -d log.dat -p predictions.txt -f model.regcb

exit status:
  0    every example decided (and learned)
  1    a bad example (the message names its line; every earlier prediction is written;
       the model is not saved), or -p/--decision_log could not be written (the model, which
       has learned every example read, is saved with -f)
  2    bad flags, a path that cannot be read or written, a model file that does not load
  130  interrupted (Ctrl-C): the predictions of every whole block are written, and with -f
       the model of that point is saved (a Ctrl-C during the summary or the save waits
       for the save)
  141  the output pipe was closed (e.g. | head): the run ends quietly
"""


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """The module docstring as written, and each flag's default where it has a value."""

    def _get_help_string(self, action) -> str:
        text = action.help or ""
        hidden = action.default is None or action.default is False or action.default == []
        if not hidden and action.default is not argparse.SUPPRESS and "default" not in text:
            text += " (default: %(default)s)"
        return text


class _Parser(argparse.ArgumentParser):
    """Errors in one line, without the usage text (``--help`` has it), exit status 2."""

    def error(self, message: str):
        if message.startswith("unrecognized arguments"):
            message += " (--help lists the flags; VW's others: docs/guide/command-line.md)"
        self.exit(2, f"{self.prog}: error: {message}\n")


#: the Python API's parameter names, as the command's flags name them (an error of the API
#: is printed in the flags' words: `in_flags`)
PARAMETER_FLAGS = {"mellowness": "--mellowness", "beta": "--beta",
                   "budget_grid": "--auto_budget", "seed": "--random_seed",
                   "hash_bits": "-b", "reward_range": "--cb_min_cost and --cb_max_cost",
                   "forget": "--forget", "change_threshold": "--change_threshold",
                   "l2": "--ridge_l2", "prior": "--ridge_prior", "schedule": "--schedule",
                   "ties": "--ties",
                   "learning_rate": "-l", "budget candidates": "--auto_budget"}
#: and its other words for what the flags name
API_WORDS = {"budget='auto'": "--auto_budget", "VWOracle": "--oracle vw",
             "BoundedRidgeOracle": "--oracle bounded", "RidgeOracle": "--oracle ridge"}


def in_flags(message: str) -> str:
    """An error message of the Python API with its parameter names as the command's flags.

    >>> in_flags("the 'mellowness' parameter of RegCB must be None or a number > 0; got -1")
    '--mellowness must be a number > 0; got -1'
    """
    def flag(match: re.Match) -> str:
        return PARAMETER_FLAGS.get(match.group(1) or match.group(2), match.group(0))

    message = message.replace(" must be None or ", " must be ")
    for words, name in API_WORDS.items():
        message = message.replace(words, name)
    return re.sub(r"^the '(\w+)' parameter of RegCB|^(\w+(?: candidates)?)(?= must)", flag,
                  message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="regcb-stream", description=__doc__.split("\n")[0], epilog=EPILOG,
        formatter_class=_HelpFormatter, allow_abbrev=False,
    )
    parser.add_argument("--version", action=_Version, nargs=0,
                        help="show the version and exit")
    io = parser.add_argument_group("input and output (as vw)")
    io.add_argument("-d", "--data", default="-",
                    help="input file, or a glob pattern of files read one after another; - "
                         "(default) is stdin")
    io.add_argument("-p", "--predictions", help="write predictions here (- is stdout)")
    io.add_argument("-f", "--final_regressor", help="save the model here at the end")
    io.add_argument("-i", "--initial_regressor", help="resume from this model file")
    io.add_argument("--quiet", action="store_true", help="no progress table on stderr")
    io.add_argument("--lenient", action="store_true",
                    help="skip bad examples with a warning instead of stopping")
    io.add_argument("-t", "--testonly", action="store_true",
                    help="predict without learning (as vw -t)")
    io.add_argument("--dsjson", action="store_true",
                    help="the input is VW's Decision Service JSON, one decision per line "
                         "(implies --cb_explore_adf)")
    loop = parser.add_argument_group("the production loop (regcb-stream's own)")
    loop.add_argument("--decision_log", metavar="FILE",
                      help="write each decision (event id, context, actions, chosen action, "
                           "probabilities, model version, and its reward once known) as a "
                           "DSJSON line, which regcb-ope --dsjson and vw --dsjson read")
    loop.add_argument("--reward_wait", type=_positive_int, metavar="N",
                      help="--dsjson: an event without a label waits for a reward line "
                           '{"EventId": ..., "v": reward} (--ccb_explore_adf: one per slot, '
                           'with "_slot": its index or _id; --slates: one per slate); at '
                           "most N wait, one more times the oldest out")
    loop.add_argument("--default_reward", type=float, metavar="R",
                      help="--reward_wait: the reward a timed-out decision is learned with "
                           "(default: none, it is dropped)")
    cluster = parser.add_argument_group("on a cluster (regcb-stream's own)")
    cluster.add_argument("--scheduler", metavar="ADDRESS",
                         help="replay the labelled log -d on a Dask cluster (--schedule "
                              "sqrt2 or doubling): a scheduler's address, or local (a "
                              "cluster of --workers processes on this machine); the output "
                              "is the serial run's")
    cluster.add_argument("--workers", type=_positive_int, metavar="N",
                         help=f"--scheduler local: worker processes (default {WORKERS})")
    cb = parser.add_argument_group("contextual bandit (as vw)")
    mode = cb.add_mutually_exclusive_group()
    mode.add_argument("--cb_explore", type=int, metavar="K", help="single-line, K actions")
    mode.add_argument("--cb_explore_adf", action="store_true", help="multi-line ADF examples")
    mode.add_argument("--ccb_explore_adf", action="store_true",
                      help="VW's conditional contextual bandit examples (ccb shared, action, "
                           "slot lines): a decision per slot among the actions the earlier "
                           "slots left")
    mode.add_argument("--slates", action="store_true",
                      help="VW's slates examples (slates shared, action, slot lines): a "
                           "decision per slot among its own actions")
    cb.add_argument("--cb_min_cost", type=float,
                    help="the least cost (default 0; with --dsjson -1, as costs there are "
                         "negative rewards in [0, 1])")
    cb.add_argument("--cb_max_cost", type=float,
                    help="the largest cost (default 1; with --dsjson 0)")
    cb.add_argument("--cb_force_legacy", action="store_true",
                    help="--cb_explore K: K probabilities in action order")
    cb.add_argument("--random_seed", type=int, help="seed of the action draws (default 0)")
    features = parser.add_argument_group("features (as vw)")
    features.add_argument("-q", "--quadratic", "--interactions", action="append", default=[],
                          dest="interactions", metavar="AB", help="cross namespaces A and B")
    features.add_argument("--noconstant", action="store_true", help="no constant feature")
    features.add_argument("-b", "--bit_precision", type=int, metavar="BITS",
                          help=f"hash features into 2^BITS slots, VW's hash (default "
                               f"{DEFAULT_BITS}, as VW)")
    regcb = parser.add_argument_group("RegCB (as vw)")
    regcb.add_argument("--regcb", action="store_true",
                       help="the elimination variant unless --regcbopt, as in VW (without "
                            f"either: RegCB's default, {VARIANT})")
    regcb.add_argument("--regcbopt", action="store_true",
                       help="the optimistic variant (VW spells it --regcb --regcbopt)")
    regcb.add_argument("--mellowness", type=float,
                       help="loss budget c0 * ln(K n) * (cb_max_cost - cb_min_cost)^2 "
                            f"(default: RegCB's, {_per_class('mellowness')}; with --oracle vw "
                            f"VW's, {VW_MELLOWNESS:g})")
    regcb.add_argument("--first_only", action="store_true",
                       help="optimistic: all mass on the first of tied actions")
    own = parser.add_argument_group("regcb-stream's own")
    own.add_argument("--oracle", choices=["ridge", "bounded", "vw"],
                     help="regression oracle: ridge (the default; exact while its models x "
                          "features^2 "
                          f"stay within {MAX_EXACT:,}, then bounded), bounded (exact on the "
                          f"first {HEAD} features, diagonal beyond, from the start), or VW's "
                          "own regressor (vw)")
    own.add_argument("--oracle_memory", type=_megabytes, metavar="MB",
                     help="the most memory the ridge oracles' statistics may take; checked at "
                          "the start against the most the features can need (2^bits slots)")
    own.add_argument("--vw_compat", action="store_true",
                     help="with --oracle vw: VW's RegCB bit for bit, defects included, on "
                          "ADF, DSJSON and single-line input (docs/vw_compatibility.md)")
    own.add_argument("--schedule", choices=["online", "sqrt2", "doubling"],
                     help="when the decision state is rebuilt (default online)")
    own.add_argument("--ties", choices=TIE_RULES,
                     help="the optimistic variant's actions tied at the lowest cost bound: "
                          "the one of lowest predicted cost within the cost range (clipped), "
                          "or of lowest predicted cost (fit), or all alike (shared; "
                          f"default {TIES}, with --vw_compat shared)")
    own.add_argument("--beta", type=float,
                     help="the paper's constant budget on the normalized risk, instead of "
                          "--mellowness")
    own.add_argument("--auto_budget", nargs="?", const=DEFAULT_GRID, type=_mellowness_list,
                     metavar="C1,C2,...",
                     help="choose the budget online among these mellowness values "
                          "(exponential weights on importance-weighted rewards; default "
                          f"candidates {','.join(f'{c:g}' for c in DEFAULT_GRID)})")
    own.add_argument("--forget", type=float, metavar="GAMMA",
                     help="--oracle ridge or bounded: each label's weight decays by GAMMA per "
                          "label after it, so the model follows rewards that drift (0.999: "
                          "within about a thousand labels; default 1, never)")
    own.add_argument("--change_threshold", type=float, metavar="K",
                     help="the change test: when the squared residuals rise past K ln t, keep "
                          f"1%% of every label's weight and explore anew (default "
                          f"{DEFAULT_THRESHOLD:g}, with the "
                          "ridge oracles, their optimistic prior and --schedule online; 0: "
                          "never)")
    own.add_argument("--ridge_l2", type=float, metavar="L2",
                     help=f"--oracle ridge or bounded: the ridge penalty, the weight of the "
                          f"prior (default: RegCB's, {_per_class('l2')}; given, --cb_explore "
                          "runs the linear model, without the random features)")
    own.add_argument("--ridge_prior", choices=["auto", "optimistic", "midpoint", "zero"],
                     help="--oracle ridge: shrink predictions toward --cb_min_cost, so that an "
                          "action not yet tried looks best (optimistic), toward the middle "
                          "of the cost range (midpoint), or toward cost 0 (zero: the "
                          "paper's ridge); auto, the default: RegCB's, "
                          f"{_per_class('prior')}")
    vw_flags.declare(parser)
    return parser


#: the model classes of the command's streams, as its help names them (`defaults`)
STREAMS = {"random features": "--cb_explore with numeric features", "linear": "--cb_explore "
           "with indicator features (words) or without random features (--ridge_l2, --oracle "
           "bounded, --vw_compat)", "own features": "ADF actions with features of their own",
           "shared features": "ADF actions sharing every feature"}


def _per_class(setting: str) -> str:
    """A default per model class of the command's streams, from `defaults.MODEL_CLASSES`."""
    def shown(value) -> str:
        if value == "evidence":
            return ("chosen among 1, 3 and 10, and 1 or 4 times it on the random features, "
                    "from the labels (evidence)")
        return value if isinstance(value, str) else format(value, "g")

    return ", ".join(f"{shown(getattr(MODEL_CLASSES[name], setting))} for {stream}"
                     for name, stream in STREAMS.items())


def main(argv: list[str] | None = None) -> int:
    """The command (see ``--help``): its exit status."""
    try:
        return _command(argv)
    except KeyboardInterrupt:  # before the run started (e.g. loading -i): nothing was learned
        print("regcb-stream: interrupted before the run started: nothing written",
              file=sys.stderr)
        return shell.INTERRUPTED


def _command(argv: list[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        learner, settings = configure.setup(args)
    except shell.PathError as error:
        return _fail(str(error))
    except ValueError as error:
        parser.error(in_flags(str(error)))
    if args.reward_wait and not settings.dsjson:
        parser.error("--reward_wait joins DSJSON reward lines by EventId: give --dsjson")
    if args.scheduler or args.workers:
        _check_cluster(parser, args, learner, settings)
    if args.initial_regressor:
        try:
            resume.probe(learner, settings)
        except Exception as error:  # noqa: BLE001 (whatever a damaged state raises)
            return _fail(_damaged(args.initial_regressor, error))
    if argv is None:  # the process's own command, which ends with main (not a caller of
        # main(argv), whose process goes on: it would keep every call's frozen objects)
        shell.keep_freed_memory()  # each block's buffers: reused, not page-faulted in anew
        gc.freeze()  # the start-up's objects out of the collector's walks over the run's
    # (argv None: Ctrl-C stays held)
    with shell.Interrupts(final=argv is None) as interrupts, contextlib.ExitStack() as stack:
        try:
            lines = shell.open_input(stack, args.data)
            sink = args.predictions and shell.open_output(stack, args.predictions, "-p")
            log = args.decision_log and shell.open_output(stack, args.decision_log,
                                                          "--decision_log")
            shell.check_model_path(args.final_regressor)
            shell.check_model_path(args.readable_model, "--readable_model")
            shell.check_model_path(args.invert_hash, "--invert_hash")
        except shell.PathError as error:
            return _fail(str(error))
        outcomes = None
        if log or args.reward_wait:
            from regcb_stream.command.outcomes import Outcomes
            from regcb_stream.command.slot_outcomes import SlotOutcomes

            outcomes = (SlotOutcomes if settings.slots else Outcomes)(
                learner, log or None, args.reward_wait, args.default_reward,
                dsjson=settings.dsjson)
        progress = ProgressTable(None if args.quiet else sys.stderr,
                                 _preamble(settings, learner))
        if settings.slots:
            from regcb_stream.command.slots_driver import SlotsDriver

            driver = SlotsDriver(learner, settings.slots, sink or None, progress,
                                 learn=not args.testonly, guard=interrupts.block,
                                 dsjson=settings.dsjson, outcomes=outcomes)
        else:
            driver = Driver(learner, settings, sink or None, progress, legacy=settings.legacy,
                            first_only=settings.first_only and learner.variant == "optimistic",
                            vw_compat=settings.vw_compat, learn=not args.testonly,
                            guard=interrupts.block, outcomes=outcomes)
        try:
            interrupts.start()
            if args.scheduler:
                status = _run_on_cluster(driver, args)
            else:
                status = _run(driver, lines, _on_error(args, progress),
                              args.initial_regressor)
        except KeyboardInterrupt:  # (before or just after _run)
            status = shell.INTERRUPTED
        interrupts.hold()  # from here on a Ctrl-C waits for the outputs, summary and save
        output_failed = _close([sink, log], status == _OUTPUT_FAILED)
        save_anyway = output_failed and status != 1  # (after a bad example: not saved)
        status = 1 if output_failed else status
        if not args.quiet and status != shell.PIPE_CLOSED:
            changes = learner.changes_detected
            more = [*(outcomes.summary() if outcomes else ()),
                    *(() if changes is None else (f"changes detected = {changes}",))]
            sys.stderr.write(progress.summary(_budget(learner, settings),
                                              learner.oracle_in_use, more))
        if interrupts.pending and status == 0:
            status = shell.INTERRUPTED
        if status == shell.INTERRUPTED:
            print(f"regcb-stream: interrupted after {progress.examples} examples, every "
                  "prediction of them written", file=sys.stderr)
        return _write_weights(args, learner, settings,
                              _save(args, learner, settings, status, save_anyway))


def _write_weights(args, learner: RegCB, settings: StreamSettings, status: int) -> int:
    """``--readable_model`` and ``--invert_hash`` (`readable`), when a model would be
    saved (not after a bad example)."""
    if status == 1 or not (args.readable_model or args.invert_hash):
        return status
    from regcb_stream.command import readable

    for flag, path in (("--readable_model", args.readable_model),
                       ("--invert_hash", args.invert_hash)):
        try:
            if path:
                readable.write(path, learner, settings, args.data, flag == "--invert_hash")
        except OSError as error:
            return _fail(f"{flag} {path}: cannot write it ({error.strerror})", 1)
    return status


def _close(outputs: list, failed: bool) -> bool:
    """Close the outputs (-p, --decision_log); whether one of them could not be written
    (``failed``: already said)."""
    for output in outputs:
        try:
            if output:
                output.close()
        except shell.OutputError as error:
            if not failed:
                print(f"regcb-stream: error: {error}", file=sys.stderr)
            failed = True
        except BrokenPipeError:
            shell.silence_stdout()
    return failed


def _save(args, learner, settings: StreamSettings, status: int, output_failed: bool) -> int:
    """Save the model with ``-f`` (after a bad example: not; after Ctrl-C or a closed output
    pipe: the state after the last whole block; after -p or --decision_log could not be
    written: the state after the block whose output failed, which it has learned)."""
    if not args.final_regressor or (status == 1 and not output_failed):
        if args.final_regressor and status == 1:
            print(f"regcb-stream: the model was not saved to {args.final_regressor}",
                  file=sys.stderr)
        return status
    from regcb_stream.persist import save_model  # (here: json and zipfile cost start-up)

    try:
        save_model(args.final_regressor, learner, settings.__dict__)
    except OSError as error:
        return _fail(f"-f {args.final_regressor}: cannot save the model ({error.strerror})", 1)
    if status in (1, shell.INTERRUPTED):
        also = " (it has learned the examples whose output failed too)" if output_failed else ""
        print(f"regcb-stream: model saved to {args.final_regressor}{also}", file=sys.stderr)
    return status


def _fail(message: str, status: int = 2) -> int:
    """A one-line error (no usage text) and its exit status."""
    print(f"regcb-stream: error: {message}", file=sys.stderr)
    return status


def _budget(learner: RegCB, settings: StreamSettings) -> str:
    """The budget in force, or before any example, with no budget flag, the default
    ``--help`` names for the stream (the learner's model class is not settled yet)."""
    flags = settings.flags or {}
    if learner.model_class is not None or flags.get("oracle") == "vw" or any(
            flags.get(name) for name in ("mellowness", "beta", "auto_budget")):
        return learner.budget_in_force
    classes = (["own features", "shared features"] if settings.adf or settings.slots
               else ["linear"]
               if learner.encoder.expand is None else ["random features", "linear"])
    values = " or ".join(f"{MODEL_CLASSES[name].mellowness:g}" for name in classes)
    return f"mellowness {values}" + ("" if len(classes) == 1 else
                                     " (by the model class: no example showed it)")


def _preamble(settings: StreamSettings, learner: RegCB) -> tuple[str, ...]:
    """The settings printed above the progress table (as VW prints its own)."""
    oracles = {"ridge": f"exact ridge while models x features^2 <= {MAX_EXACT:,}, then "
                        f"bounded ridge (exact on {HEAD} features, diagonal beyond)",
               "bounded": f"bounded ridge (exact on {HEAD} features, diagonal beyond)",
               "vw": "VW's regressor"}
    oracle = oracles.get((settings.flags or {}).get("oracle"), learner.oracle_in_use)
    return f"Num weight bits = {learner.hash_bits}", f"oracle = {oracle}"


class _Version(argparse.Action):
    """``--version``, looked up only when asked (importlib.metadata costs start-up)."""

    def __call__(self, parser, namespace, values, option_string=None):
        from importlib.metadata import PackageNotFoundError, version

        try:
            text = version("regcb-stream")
        except PackageNotFoundError:
            text = "(not installed)"
        print(f"{parser.prog} {text}")
        parser.exit()


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return value


def _megabytes(text: str) -> float:
    """``--oracle_memory``: a finite number of MB > 0."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a finite number of MB > 0, got {text!r}")
    return value


def _mellowness_list(text: str) -> tuple[float, ...]:
    """``--auto_budget``'s candidates: comma-separated numbers >= 0."""
    try:
        values = tuple(float(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers separated by commas, got {text!r}")
    if not all(0 <= v < float("inf") for v in values):
        raise argparse.ArgumentTypeError(f"candidates must be finite numbers >= 0: {text!r}")
    return values


def _on_error(args, progress: ProgressTable):
    """With ``--lenient``: warn about a bad example, count it, go on."""
    def skip(error: VWParseError) -> None:
        progress.skipped += 1
        print(f"warning: skipping example: {error}", file=sys.stderr)

    return skip if args.lenient else None


def _check_cluster(parser, args, learner, settings: StreamSettings) -> None:
    """``--scheduler`` replays a labelled log in files, on an epoch schedule, with the
    ridge oracles and a fixed budget."""
    if args.workers and args.scheduler != "local":
        parser.error(f"--workers {args.workers} applies with --scheduler local (a cluster of "
                     "N processes on this machine)")
    if args.data in ("-", "/dev/stdin"):
        parser.error("--scheduler replays files (-d FILE or a glob pattern), not stdin")
    if learner.schedule == "online":
        parser.error("--scheduler needs --schedule sqrt2 or doubling: the online schedule "
                     "rebuilds after every label, no epoch to spread")
    for flag, given in (("-t", args.testonly), ("--lenient", args.lenient),
                        ("--decision_log", args.decision_log),
                        ("--reward_wait", args.reward_wait)):
        if given:
            parser.error(f"--scheduler learns every example of a labelled log: not with "
                         f"{flag}")
    flags = settings.flags or {}
    if flags.get("oracle") == "vw":
        parser.error("--scheduler adds up the ridge oracles' statistics across workers: not "
                     "with --oracle vw")
    if flags.get("auto_budget"):
        parser.error("--scheduler needs a fixed budget: not --auto_budget (it scores its "
                     "candidates label by label)")


def _run_on_cluster(driver: Driver, args) -> int:
    """`_run` with the epochs' long parts on a Dask cluster (`log_replay`)."""
    from regcb_stream.command import log_replay
    from regcb_stream.stream.cluster import connect

    def replay(lines, on_error):
        with connect(args.scheduler, args.workers or WORKERS) as client:
            log_replay.replay(driver, shell.input_paths(args.data), client)

    return _run(driver, None, None, run=replay)


def _damaged(model: str, error: Exception, probed: bool = True) -> str:
    """What a learner of a model file that fails says (``probed``: it failed `resume.probe`;
    else it failed later, in the run)."""
    cause = f"{type(error).__name__}: {error}"
    return (f"-i {model} is a damaged regcb-stream model file: its learner fails ({cause})"
            if probed else f"-i {model}: the learner of this model file fails ({cause}): "
            "is the file damaged?")


_OUTPUT_FAILED = -1  # `_run`'s status when -p or --decision_log cannot be written (exits 1)


def _run(driver: Driver, lines, on_error, model: str | None = None, run=None) -> int:
    """Run the stream (or ``run(lines, on_error)``); the exit status (see ``--help``).
    ``model``: the -i file the learner was loaded from."""
    try:
        (run or driver.run)(lines, on_error)
    except VWParseError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except shell.OutputError as error:
        print(f"regcb-stream: error: {error}", file=sys.stderr)
        return _OUTPUT_FAILED
    except (ValueError, TypeError, OSError) as error:  # e.g. a probability the learner
        if isinstance(error, BrokenPipeError):  # refuses, an unreadable input
            shell.silence_stdout()
            return shell.PIPE_CLOSED
        print(f"error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return shell.INTERRUPTED
    except Exception as error:  # noqa: BLE001 (a learner of a model file it could not load)
        if model is None:
            raise
        return _fail(_damaged(model, error, probed=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
