"""From the command's flags to a learner and its stream settings: a fresh run, or one
resumed from a model file (``-i``), whose flags `resume` checks against the model's.

>>> from regcb_stream.command.main import build_parser
>>> learner, settings = setup(build_parser().parse_args(["--cb_explore", "4", "--regcb"]))
>>> learner.variant, settings.n_actions, settings.hash_bits
('elimination', 4, 18)
"""

from __future__ import annotations

import dataclasses
import sys

from regcb_stream.command import resume, shell
from regcb_stream.command.driver import StreamSettings
from regcb_stream.defaults import TIES, VARIANT, VW_MELLOWNESS
from regcb_stream.io.hashing import DEFAULT_BITS
from regcb_stream.io.vw_slots import FLAGS as SLOT_FLAGS
from regcb_stream.learner import RegCB
from regcb_stream.oracles.bounded import HEAD, BoundedRidgeOracle
from regcb_stream.oracles.ridge import RidgeOracle
from regcb_stream.oracles.vw import VWOracle

#: the defaults of the flags a resumed run keeps from its model (None: not given)
DEFAULTS = {"random_seed": 0, "schedule": "online", "oracle": "ridge",
            "bit_precision": DEFAULT_BITS, "cb_min_cost": 0.0, "cb_max_cost": 1.0}
DSJSON_COSTS = (-1.0, 0.0)  # --dsjson's cost range: rewards in [0, 1], as Personalizer's
# (VW keeps [0, 1], and so does --vw_compat: there the bounds clip every reward to cost 0)


def make_learner(args) -> RegCB:
    """The learner the flags describe (costs become rewards -cost). Without a budget flag,
    ``--ridge_l2`` or ``--ridge_prior``: RegCB's defaults for the model class of the
    stream (`regcb_stream.defaults`), or VW's budget with ``--oracle vw`` (VW's regressor
    and decisions)."""
    l2 = args.ridge_l2
    prior = {None: "auto", "zero": 0.0}.get(args.ridge_prior, args.ridge_prior)
    memory = None if args.oracle_memory is None else int(args.oracle_memory * 2**20)
    forget = 1.0 if args.forget is None else args.forget
    if args.oracle == "vw":
        oracle = VWOracle(bisection=args.vw_compat, intercept_last=args.vw_compat, **(
            {} if args.learning_rate is None else {"learning_rate": args.learning_rate}))
    elif args.oracle == "bounded":
        oracle = BoundedRidgeOracle(l2=l2, prior=prior, memory=memory, forget=forget)
    else:
        oracle = RidgeOracle(l2=l2, prior=prior, memory=memory, forget=forget)
    variant, budget = exploration(vars(args))
    return RegCB(
        variant,
        ties=args.ties or ("shared" if args.vw_compat else TIES),  # (VW's: every tied one)
        oracle=oracle,
        schedule=args.schedule,
        reward_range=(-args.cb_max_cost, -args.cb_min_cost),
        seed=args.random_seed,
        allow_out_of_range=True,
        cross=slot_kind(args) is not None,  # (the others cross by -q, in the encoder)
        intercept=not args.noconstant,
        hash_bits=args.bit_precision,
        random_features=0 if args.vw_compat else None,
        change_threshold=args.change_threshold,
        **budget,
    )


def exploration(flags: dict) -> tuple[str, dict]:
    """The variant and the budget (``RegCB``'s arguments) the flags name."""
    get = flags.get
    variant = "optimistic" if get("regcbopt") else "elimination" if get("regcb") else (
        VARIANT)
    budget = ({"beta": get("beta")} if get("beta") is not None else
              {"mellowness": get("mellowness")} if get("mellowness") is not None else
              {"budget": "auto", "budget_grid": get("auto_budget")} if get("auto_budget")
              else {"mellowness": VW_MELLOWNESS} if get("oracle") == "vw" else {})
    return variant, budget


def stream_settings(args) -> StreamSettings:
    return StreamSettings(
        slots=slot_kind(args),
        adf=(args.cb_explore_adf or args.dsjson) and not slot_kind(args),
        dsjson=args.dsjson,
        n_actions=args.cb_explore,
        interactions=tuple(args.interactions),
        constant=not args.noconstant,
        cost_range=(args.cb_min_cost, args.cb_max_cost),
        hash_bits=args.bit_precision,
        legacy=args.cb_force_legacy,
        first_only=args.first_only,
        vw_compat=args.vw_compat,
        flags=resume.saved_flags(args),
        filters=filters(args),
    )


def filters(args) -> tuple | None:
    """VW's namespace filters the flags name (`vw_features.Namespaces`' fields), or None."""
    if not (args.ignore or args.keep or args.ignore_linear):
        return None
    return ("".join(args.ignore or ()), args.keep and "".join(args.keep),
            "".join(args.ignore_linear or ()))


def setup(args) -> tuple[RegCB, StreamSettings]:
    """The learner and stream settings the flags describe (``ValueError``: bad flags;
    ``shell.PathError``: a model file that does not load)."""
    if args.dsjson and args.cb_explore is not None:
        raise ValueError("--dsjson is ADF input: give it without --cb_explore K")
    if (args.cb_explore is None and not args.cb_explore_adf and not args.dsjson
            and not slot_kind(args) and not args.initial_regressor):
        raise ValueError("give --cb_explore K or --cb_explore_adf")
    if slot_kind(args):
        _check_slot_flags(args)
    if args.cb_force_legacy and args.cb_explore_adf:
        raise ValueError("--cb_force_legacy applies to --cb_explore K only")
    if args.default_reward is not None and not args.reward_wait:
        raise ValueError("--default_reward applies with --reward_wait N")
    if args.reward_wait and args.testonly:
        raise ValueError("--reward_wait learns the rewards that arrive: not with -t")
    _check_vw_flags(args)
    if args.initial_regressor:
        from regcb_stream.persist import load_model  # (here: it costs start-up)

        try:
            learner, saved = load_model(args.initial_regressor)
        except OSError as error:
            raise shell.PathError(f"-i {args.initial_regressor}: cannot read it "
                                  f"({error.strerror})") from None
        except ValueError as error:
            raise shell.PathError(f"-i: {error}") from None
        try:
            settings = StreamSettings.of_model(saved)
        except (TypeError, ValueError) as error:
            raise shell.PathError(f"-i: {args.initial_regressor} is a damaged regcb-stream "
                                  f"model file ({error})") from None
        return _resumed(args, learner, settings)
    if args.dsjson and not args.vw_compat and args.cb_min_cost is args.cb_max_cost is None:
        args.cb_min_cost, args.cb_max_cost = DSJSON_COSTS
    for name, value in DEFAULTS.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    if not args.cb_min_cost < args.cb_max_cost:
        raise ValueError(f"--cb_min_cost {args.cb_min_cost:g} must be below --cb_max_cost "
                         f"{args.cb_max_cost:g}")
    if args.random_seed < 0:
        raise ValueError(f"--random_seed must be a number >= 0, got {args.random_seed}")
    if args.cb_explore is not None and args.cb_explore < 1:
        raise ValueError(f"--cb_explore needs K >= 1 actions, got {args.cb_explore}")
    if args.oracle == "vw" and (args.ridge_prior or args.ridge_l2 is not None
                                or args.oracle_memory is not None or args.forget is not None
                                or args.change_threshold):
        raise ValueError("--ridge_l2, --ridge_prior, --oracle_memory, --forget and "
                         "--change_threshold apply to the ridge oracles only")
    if args.forget is not None and not 0 < args.forget <= 1:
        raise ValueError(f"--forget must be in (0, 1], got {args.forget:g}")
    if args.change_threshold is not None and not args.change_threshold >= 0:
        raise ValueError(f"--change_threshold must be a number >= 0, got "
                         f"{args.change_threshold:g}")
    if args.change_threshold and args.schedule != "online":
        raise ValueError(f"--change_threshold needs --schedule online, not {args.schedule}")
    if sum((args.beta is not None, args.mellowness is not None, bool(args.auto_budget))) > 1:
        raise ValueError("give one of --mellowness, --beta and --auto_budget")
    if not 1 <= args.bit_precision <= 32:
        raise ValueError(f"-b needs 1 to 32 bits, got {args.bit_precision}")
    if args.ridge_l2 is not None and not args.ridge_l2 > 0:
        raise ValueError(f"--ridge_l2 must be > 0, got {args.ridge_l2}")
    if args.vw_compat and args.ties not in (None, "shared"):
        raise ValueError(f"--ties {args.ties}: --vw_compat keeps VW's ties (every tied action "
                         "probability 1)")
    learner, settings = make_learner(args), stream_settings(args)
    _check_memory(args, settings)
    return learner, settings


def slot_kind(args) -> str | None:
    """``"ccb"`` for ``--ccb_explore_adf``, ``"slates"`` for ``--slates``, else None."""
    return "ccb" if args.ccb_explore_adf else "slates" if args.slates else None


#: flags that do not apply to multi-slot examples (`command.slots_driver`)
NOT_WITH_SLOTS = {"scheduler": "--scheduler",
                  "cb_force_legacy": "--cb_force_legacy", "vw_compat": "--vw_compat",
                  "readable_model": "--readable_model", "invert_hash": "--invert_hash",
                  "ignore": "--ignore", "keep": "--keep", "ignore_linear": "--ignore_linear",
                  "interactions": "-q"}


def _check_slot_flags(args) -> None:
    """The flags multi-slot examples take (their shared and slot features are crossed
    with the actions' without -q)."""
    given = [flag for name, flag in NOT_WITH_SLOTS.items() if getattr(args, name, None)]
    if args.oracle == "vw":
        given.append("--oracle vw")
    if given:
        raise ValueError(f"{' '.join(given)}: not with {SLOT_FLAGS[slot_kind(args)]} (its "
                         "shared and slot features "
                         "are crossed with every action's without -q, and each slot's "
                         "decision is written with -p)")


def _check_vw_flags(args) -> None:
    """VW's flags taken with their VW meaning (`vw_flags`), and ``-q``'s pairs."""
    for spec in args.interactions:
        if len(spec) != 2:
            raise ValueError(f"-q {spec}: regcb-stream crosses two namespaces, named by their "
                             "first letters (-q AB)")
    if args.cb_type not in (None, "mtr"):
        raise ValueError(f"--cb_type {args.cb_type}: VW's --regcb runs --cb_type mtr only (a "
                         "regression of the observed cost), and so does regcb-stream")
    if args.hash not in (None, "strings"):
        raise ValueError(f"--hash {args.hash}: regcb-stream hashes as VW does by default "
                         "(--hash strings) only")
    if args.passes not in (None, 1):
        raise ValueError(f"--passes {args.passes}: a stream is one pass (to learn a log "
                         "twice, give it twice: cat log.dat log.dat | regcb-stream ...)")
    if args.initial_regressor and (args.learning_rate, args.power_t, args.l2) != (None,) * 3:
        raise ValueError("-l, --power_t and --l2 configure a new --oracle vw; the model file "
                         f"-i {args.initial_regressor} keeps its own")
    for flag, value, only in (("-l", args.learning_rate, None), ("--power_t", args.power_t, 0.5),
                              ("--l2", args.l2, 0.0)):
        if value is not None and args.oracle != "vw":
            raise ValueError(f"{flag} configures VW's regressor (--oracle vw); --oracle "
                             f"{args.oracle or 'ridge'} has no learning rate (its penalty: "
                             "--ridge_l2)")
        if value is not None and only is not None and value != only:
            raise ValueError(f"{flag} {value:g}: --oracle vw runs VW's default, {flag} "
                             f"{only:g}, only")
    if args.learning_rate is not None and not 0 < args.learning_rate < float("inf"):
        raise ValueError(f"-l must be a number > 0, got {args.learning_rate:g}")


def _resumed(args, learner: RegCB, settings: StreamSettings):
    """The model's learner and settings, the flags given with ``-i`` checked against them:
    a conflict is an error naming both values; new exploration parameters are applied and
    reported (as VW applies them on load)."""
    _check_same(settings, args)
    saved = settings.flags or {}
    errors = resume.conflicts(vars(args), saved, args.initial_regressor)
    if errors:
        raise ValueError("; ".join(errors))
    resume.keep(args, saved)
    flags = resume.exploration_flags(vars(args), saved)
    if flags != saved:
        variant, budget = exploration(flags)
        learner.change_exploration(variant, **budget)
        print(f"regcb-stream: resuming with {learner.variant} and {learner.budget_in_force} "
              f"(the model file had other exploration flags)", file=sys.stderr)
        settings = dataclasses.replace(settings, flags=flags)
    return learner, settings


def _check_memory(args, settings: StreamSettings) -> None:
    """``--oracle_memory`` against the most the oracle can need: every hashed slot, the
    intercept, in each model (exact ridge never needs more than its bounded form)."""
    if args.oracle_memory is None:
        return
    models = 1 if settings.adf or settings.slots else settings.n_actions
    need = models * (24 * HEAD**2 + 8 * (2 + 2**settings.hash_bits)) / 2**20
    if need > args.oracle_memory:
        raise ValueError(
            f"the oracle may need {need:.1f} MB ({models} models of up to 2^"
            f"{settings.hash_bits} hashed features), over --oracle_memory "
            f"{args.oracle_memory:g}: give fewer bits (-b) or more memory")


def _check_same(saved: StreamSettings, args) -> None:
    """Flags that describe the stream must agree with the model's when they are given."""
    given = stream_settings(args)
    checks = [(("filters",), _filter_flags)] if given.filters else []
    if args.cb_explore is not None or args.cb_explore_adf or given.slots:
        checks += [(("adf", "n_actions", "slots"), _input_flags),
                   (("interactions",), _crosses)]
    for same, words in checks:
        if any(getattr(given, name) != getattr(saved, name) for name in same):
            raise ValueError(f"{words(given)} conflicts with {words(saved)} in the model file "
                             f"{args.initial_regressor}")


def _input_flags(settings: StreamSettings) -> str:
    """The input format in the command's flags."""
    slots = SLOT_FLAGS.get(settings.slots, "")
    return (" ".join(filter(None, (slots, "--dsjson"))) if settings.dsjson else
            "--cb_explore_adf" if settings.adf else slots or
            f"--cb_explore {settings.n_actions}")


def _filter_flags(settings: StreamSettings) -> str:
    """The namespace filters in the command's flags."""
    ignore, keep, linear = settings.filters or ("", None, "")
    return " ".join(f"{flag} {value}" for flag, value in (
        ("--ignore", ignore), ("--keep", keep), ("--ignore_linear", linear)) if value) or (
        "no namespace filter")


def _crosses(settings: StreamSettings) -> str:
    """The ``-q`` crosses in the command's flags."""
    return " ".join(f"-q {spec}" for spec in settings.interactions) or "no -q"
