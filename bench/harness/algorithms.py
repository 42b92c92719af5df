"""The algorithm families of the sweep, their parameter grids, and how to build one run.

Each family has 8 log-spaced parameter values (the paper's protocol). Grids:

* RegCB (every oracle): beta in 1e-1 ... 1e-8, one per decade (on the paper's 1e2 ... 1e-8
  grid only three values fall where ridge-RegCB works on these sets, 1e-4 ... 1e-7); the
  paper's ``sqrt2`` epochs, and for the ridge oracles also online updates (a rebuild after
  every label), with the paper's ridge (prior 0, l2 = 1) and the optimistic one
  (``RidgeOracle(l2=10, prior="optimistic")``, :func:`regcb_algo.make_oracle`);
* ε-Greedy and VW's ``--epsilon``: eps in 1e-1 ... 1e-8 (the paper's range);
* Bootstrap: beta in 1e2 ... 1e-5 (the multiplier of the variance; 1 is a one-sigma UCB);
* ε-Greedy, Bootstrap and ILTCB also with the GB5 oracle (``egreedy:gb5``,
  ``bootstrap:gb5``, ``iltcb:gb5``);
* ILTCB: c in 1e-1 ... 1e-8 (the paper's range), mu_m = min(1/(2K), c sqrt(1/(K tau_m)));
* SquareCB (ours): c in 10^-1 ... 10^2.5 with gamma_t = c sqrt(K t); VW ``--squarecb``:
  ``--gamma_scale`` in 10^-0.5 ... 10^3 (VW's gamma is gamma_scale t^0.5, default 10);
* VW ``--regcb`` / ``--regcbopt``: mellowness c0 in 1e-1 ... 1e-8;
* VW ``--bag`` / ``--cover``: 1, 2, 3, 4, 6, 8, 12, 16 policies (roughly log-spaced);
* VW ``--epsilon`` also runs at VW's default 0.05, so that every VW explorer's default
  setting (:data:`VW_DEFAULTS`) is in its grid;
* RegCB (defaults): ``RegCB()`` with no arguments, the one setting a new user gets;
* RegCB with the theory's budget (``budget="theory"``, the horizon the stream's length):
  one run per stream, for its width slopes;
* River's ``bandit.LinUCBDisjoint``: ``alpha`` (its prior precision) in 10^-2 ... 10^1.5,
  its default 1 among them (UCI streams only).
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.harness import baselines
from bench.harness.iltcb import ILTCB
from bench.harness.problems import Problem
from bench.harness.regcb_algo import RegCBAlgorithm

DECADES = tuple(float(f"1e-{k}") for k in range(1, 9))
SUMMED_DECADES = tuple(float(f"1e{k}") for k in range(2, -6, -1))  # 1e2 ... 1e-5


def half_decades(first: int) -> tuple[float, ...]:
    """Eight values ``10^(k/2)`` for ``k = first, ..., first + 7`` (4 significant digits).

    >>> half_decades(-2)[:3], half_decades(-2)[-1]
    ((0.1, 0.3162, 1.0), 316.2)
    """
    return tuple(float(f"{10 ** (k / 2):.4g}") for k in range(first, first + 8))


POLICIES = (1, 2, 3, 4, 6, 8, 12, 16)
#: each VW explorer's default setting (``--cover`` and ``--bag`` have none: VW needs the number)
VW_DEFAULTS = {"vw-epsilon": 0.05, "vw-squarecb": 10.0, "vw-regcb": 0.1, "vw-regcbopt": 0.1}
#: the peers a new user's default is held against (``bench/experiments/defaults.py`` and
#: ``bench/experiments/unseen_streams.py``): label -> (VW explorer, setting), each explorer at its
#: default and the bake-off's best, ``--regcbopt --mellowness 0.001``
VW_DEFAULT_PEERS = {"VW --epsilon 0.05": ("epsilon", VW_DEFAULTS["vw-epsilon"]),
                    "VW --squarecb": ("squarecb", VW_DEFAULTS["vw-squarecb"]),
                    "VW --regcb": ("regcb", VW_DEFAULTS["vw-regcb"]),
                    "VW --regcbopt": ("regcbopt", VW_DEFAULTS["vw-regcbopt"]),
                    "VW --regcbopt --mellowness 0.001": ("regcbopt", 0.001)}
LINUCB_DEFAULT = 1.0  # River's LinUCBDisjoint(alpha=1)


@dataclass(frozen=True)
class Family:
    """An algorithm family: display name, parameter name and grid, and its kind."""

    label: str
    param: str
    grid: tuple
    kind: str  # "regcb", "baseline", "vw", "default", "peer" or "reference"
    uci_only: bool = False


def _families() -> dict[str, Family]:
    out = {}
    names = {"river": "River linear", "river_adagrad": "River linear, AdaGrad",
             "river_bayes": "River Bayesian linear"}
    for oracle in ("ridge", "optimistic", "vw", "river", "river_adagrad", "river_bayes", "gb5"):
        for variant, short in (("elimination", "elim"), ("optimistic", "opt")):
            out[f"regcb-{short}:{oracle}"] = Family(
                f"RegCB-{short} ({names.get(oracle, oracle)})", "beta", DECADES, "regcb")
    for oracle, name in (("ridge", "ridge"), ("optimistic", "optimistic ridge"),
                         ("river", names["river"])):
        for short in ("elim", "opt"):
            out[f"regcb-{short}:{oracle}-online"] = Family(
                f"RegCB-{short} ({name}, online updates)", "beta", DECADES, "regcb")
    for oracle in ("ridge", "gb5"):
        for short in ("elim", "opt"):
            out[f"regcb-{short}:{oracle}-summed"] = Family(
                f"RegCB-{short} ({oracle}, β on the summed loss)", "beta", SUMMED_DECADES,
                "regcb")
    for short in ("elim", "opt"):
        out[f"regcb-{short}:theory"] = Family(
            f"RegCB-{short} (ridge, the theory's budget)", "-", (None,), "regcb")
    for oracle, suffix in (("ridge", ""), ("GB5", ":gb5")):
        out[f"egreedy{suffix}"] = Family(f"ε-Greedy ({oracle})", "eps", DECADES, "baseline")
        out[f"bootstrap{suffix}"] = Family(
            f"Bootstrap ({oracle})", "beta", tuple(float(f"1e{k}") for k in range(2, -6, -1)),
            "baseline")
    out["iltcb"] = Family("ILTCB (ridge)", "c", DECADES, "baseline")
    out["iltcb:gb5"] = Family("ILTCB (GB5)", "c", DECADES, "baseline")
    out["squarecb"] = Family("SquareCB (ridge)", "c", half_decades(-2),
                             "baseline")
    vw = {"regcb": ("mellowness", DECADES), "regcbopt": ("mellowness", DECADES),
          "squarecb": ("gamma_scale", half_decades(-1)),
          "epsilon": ("epsilon", tuple(sorted(DECADES + (VW_DEFAULTS["vw-epsilon"],),
                                              reverse=True))),
          "bag": ("policies", POLICIES),
          "cover": ("policies", POLICIES)}
    for explorer, (param, grid) in vw.items():
        out[f"vw-{explorer}"] = Family(f"VW --{explorer}", param, grid, "vw")
    out["regcb-defaults"] = Family("RegCB (defaults)", "-", (None,), "default")
    out["linucb"] = Family("River LinUCBDisjoint", "alpha", half_decades(-4), "peer",
                           uci_only=True)
    out["supervised"] = Family("Supervised (ridge, full information)", "-", (None,),
                               "reference")
    return out


FAMILIES = _families()
#: left out of the default sweep (``--families`` adds them), to keep it within three hours
#: on 2 cores: RegCB with VW's regressor is benchmarked by ``bench/experiments/oracles.py``; the
#: optimistic ridge on the paper's epochs decides no stream's comparison; River's Bayesian
#: linear regression is the paper's ridge (the same decisions: ``tests/test_river_integration.py``
#: and the committed sweep's runs) at ~50x its CPU seconds; RegCB with beta on the summed
#: loss (the paper's experiments) repeats the ridge and GB5 families with the other budget
#: form. (RegCB-GB5 is in, ~900 CPU seconds a variant since its kernels were compiled,
#: ``bench/experiments/gb5_speed.py``, and so are the GB5 baselines: Bootstrap-GB5's eight fits a
#: run, ~4,200 CPU seconds.)
DEFAULT_EXCLUDED = ("regcb-elim:vw", "regcb-opt:vw", "regcb-elim:optimistic",
                    "regcb-opt:optimistic", "regcb-elim:river_bayes", "regcb-opt:river_bayes",
                    "regcb-elim:ridge-summed", "regcb-opt:ridge-summed",
                    "regcb-elim:gb5-summed", "regcb-opt:gb5-summed")


def regcb_parts(family: str) -> tuple[str, str, str]:
    """A RegCB family's variant, oracle and setting: "" (the paper's ``sqrt2`` epochs, beta
    on the normalized risk), "online" (online updates) or "summed" (``sqrt2``, beta on the
    summed loss).

    >>> regcb_parts("regcb-opt:river-online")
    ('optimistic', 'river', 'online')
    """
    variant, _, oracle = family.removeprefix("regcb-").partition(":")
    oracle, _, schedule = oracle.partition("-")
    return {"elim": "elimination", "opt": "optimistic"}[variant], oracle, schedule


def build(family: str, param, problem: Problem, seed: int):
    """A fresh algorithm of ``family`` with parameter ``param`` for ``problem``."""
    k, train = problem.n_actions, problem.train
    if family == "regcb-defaults":
        return RegCBAlgorithm.defaults(k, seed)
    if family == "linucb":
        from bench.harness.peers import LinUCBAlgorithm

        return LinUCBAlgorithm(float(param), k, seed)
    if family.startswith("regcb-"):
        variant, oracle, setting = regcb_parts(family)
        if oracle == "theory":
            return RegCBAlgorithm.theory(variant, k, seed, horizon=len(train))
        schedule = "online" if setting == "online" else "sqrt2"
        return RegCBAlgorithm(variant, oracle, float(param), k, seed, schedule,
                              budget="summed" if setting == "summed" else "beta")
    if family.startswith("vw-"):
        from bench.harness.vw_algo import VWAlgorithm

        return VWAlgorithm(family.removeprefix("vw-"), param, k, seed)
    classes = {"egreedy": baselines.EpsilonGreedy, "bootstrap": baselines.Bootstrap,
               "squarecb": baselines.SquareCB, "iltcb": ILTCB}
    name, _, oracle = family.partition(":")
    if name not in classes or oracle not in ("", "gb5") or (oracle and name == "squarecb"):
        raise ValueError(f"unknown family {family!r}")
    extra = {"oracle": oracle} if oracle else {}
    return classes[name](float(param), k, train.X.shape[-1], train.adf, seed, **extra)


#: rough cost per training round in microseconds: a + b K + c K D^2 / 1000 (D = features),
#: fitted loosely to the committed sweep's run times (each family's total within ~1.5x);
#: for scheduling and ``--estimate``
_COST_US = {"regcb-elim:ridge": (0.5, 0, 0.3), "regcb-opt:ridge": (0.5, 0, 0.3),
            "regcb-elim:ridge-online": (14, 0.25, 1), "regcb-opt:ridge-online": (14, 0.25, 1),
            "regcb-elim:optimistic-online": (14, 0.25, 1),
            "regcb-opt:optimistic-online": (14, 0.25, 1), "regcb-elim:vw": (40, 1, 1),
            "regcb-opt:vw": (40, 1, 1), "regcb-elim:river": (8, 0.4, 0.4),
            "regcb-opt:river": (8, 0.4, 0.4), "regcb-elim:river-online": (50, 5, 0.4),
            "regcb-opt:river-online": (50, 5, 0.4), "regcb-elim:river_adagrad": (13, 1.3, 1.3),
            "regcb-opt:river_adagrad": (13, 1.3, 1.3), "regcb-elim:river_bayes": (20, 10, 0.5),
            "regcb-opt:river_bayes": (20, 10, 0.5), "regcb-elim:gb5": (120, 0, 0),
            "regcb-opt:gb5": (120, 0, 0), "regcb-elim:ridge-summed": (0.5, 0, 0.3),
            "regcb-opt:ridge-summed": (0.5, 0, 0.3), "regcb-elim:gb5-summed": (120, 0, 0),
            "regcb-opt:gb5-summed": (120, 0, 0), "egreedy": (0.6, 0, 0.02),
            "bootstrap": (2.2, 0, 0.2),
            "egreedy:gb5": (170, 0, 0), "bootstrap:gb5": (670, 0, 0),
            "regcb-elim:theory": (0.5, 0, 0.4), "regcb-opt:theory": (0.5, 0, 0.4),
            "squarecb": (0.6, 0, 0.02), "supervised": (1, 0, 0.04), "iltcb": (6, 6, 0.6),
            "iltcb:gb5": (30, 25, 0),
            "regcb-defaults": (11, 0.3, 1.1), "linucb": (8, 30, 0.2)}
_VW_COST_US = (15, 1.25, 0.15)  # a + b K + c D, times (0.5 + policies / 4) for bag and cover


def estimated_seconds(family: str, param, n_train: int, n_hold: int, n_actions: int,
                      dim: int) -> float:
    """A rough a-priori cost of one run (for scheduling and the ``--estimate`` plan)."""
    if family.startswith("vw-"):
        a, b, c = _VW_COST_US
        per_round = a + b * n_actions + c * dim
        if family in ("vw-bag", "vw-cover"):
            per_round *= 0.5 + float(param) / 4
        holdout = per_round * 0.4
    else:
        a, b, c = _COST_US[family]
        per_round = a + b * n_actions + c * n_actions * dim * dim / 1000
        holdout = per_round * 0.2
    validations = 18
    return (n_train * per_round + validations * n_hold * holdout) * 1e-6 + 0.05
