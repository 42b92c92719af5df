r"""Off-policy evaluation on logged VW data: IPS, self-normalized IPS and doubly robust.

For labelled examples ``i = 1..n`` with logged action ``a_i``, its logged probability
``p_i`` and reward ``r_i = -cost_i``, a target policy ``pi`` and weights
``w_i = pi(a_i | x_i) / p_i``, the estimates of the policy's expected reward are

- IPS: ``mean_i w_i r_i``;
- SNIPS (self-normalized): ``sum_i w_i r_i / sum_i w_i``;
- DR (doubly robust): ``mean_i [sum_a pi(a | x_i) rhat_i(a) + w_i (r_i - rhat_i(a_i))]``,

where ``rhat_i`` is a reward model's prediction *before* it learns example ``i`` (progressive,
as VW's DR; the estimate stays unbiased whatever the model). The default model,
`RidgeRewardModel`, is unweighted ridge regression (penalty 1): one model per action for
label actions, one model over context, action features and their products for dict actions.
Intervals are normal approximations: ``value -+ z sd / sqrt(n)`` with the sample standard
deviation of the per-example terms for IPS and DR, and the delta method for SNIPS,
``se = sqrt(sum_i w_i^2 (r_i - value)^2) / sum_i w_i``.

VW reports the average *loss* (cost) instead: ``Estimate.loss = -value``. What VW evaluates:
``vw --cb_adf -t --cb_type ips|dr`` scores the greedy policy of its model (the first action
of its ranking: least predicted cost, ties to the first action; a fresh model ties
everywhere, so the first action), and both cb_types report IPS, as VW computes DR reward
predictions only when it learns. Learning with ``--cb_type dr``, it reports DR with its own
regressor (learned with weight ``1/p``) for the current greedy action. ``vw --cb K --eval``
scores the action written first in each label.

    python -m regcb_stream.evaluation.ope -d log.dat --policy-model model.regcb   # regcb-stream -f
    python -m regcb_stream.evaluation.ope -d log.dat --cb_explore 4 --policy uniform
    python -m regcb_stream.evaluation.ope -d - --cb_explore_adf --policy constant:0 < log.dat

The command prints one row per estimator (value, interval, VW's loss) and exits with status
0; a file it cannot read or a malformed example exits with status 1, bad flags with 2.

>>> import io
>>> from regcb_stream.integrations.river import iter_vw
>>> log = io.StringIO("1:1:0.5 |s x\n2:0:0.5 |s x\n1:0:0.5 |s y\n2:1:0.5 |s y\n")
>>> estimates = evaluate(ConstantPolicy(0), iter_vw(log, n_actions=2))
>>> round(estimates["ips"].value, 6), round(estimates["snips"].value, 6)
(-0.5, -0.5)
>>> [round(v, 4) for v in estimates["ips"][1:4]]
[0.5, -1.4800, 0.4800]

Multi-slot logs (VW's CCB and slates: `evaluate_slots`). A logged slot ``j`` with outcome
(action ``a_j``, cost ``c_j``, probability ``p_j``) is a logged single decision: its context
is the example's with the slot's features and position (`regcb_stream.slots.slot_context`),
its actions those the logging policy offered it (a CCB slot: the pool, less the actions the
logged earlier slots took, within its included ones; a slate's slot: its own), and ``p_j``
the logging policy's probability of ``a_j`` given the earlier slots. So each slot's
estimates are `evaluate`'s (IPS, SNIPS, DR) of the target policy's decision of that slot
given the logged earlier ones, and their sum over the slots is the value of the whole
ranking (VW's CCB estimates are per slot too).

A slate with one reward for the whole slate (VW's ``slates shared COST``) is scored by the
pseudo-inverse estimator (Swaminathan et al., NIPS 2017), unbiased when the logging and
target policies choose each slot's action independently and the reward is additive over
the slots: ``mean_i r_i (sum_j pi_j(a_ij) / mu_j(a_ij) - (m - 1))``.

>>> from regcb_stream.io.vw_slots import iter_slots
>>> log = ["slates shared 1 |u a", "slates action 0 |x a", "slates action 0 |x b",
...        "slates action 1 |y c", "slates action 1 |y d",
...        "slates slot 0:0.5 |s", "slates slot 1:0.5 |t", ""]
>>> estimates = evaluate_slots(UniformPolicy(), iter_slots(log))
>>> estimates["slate"].value, estimates["slot 0"]["ips"].value
(-1.0, -1.0)
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import sys
from collections import defaultdict
from collections.abc import Iterable
from statistics import NormalDist
from typing import NamedTuple

import numpy as np

from regcb_stream.io.vw_slots import SlotsExample, feature_dict
from regcb_stream.learner import RegCB
from regcb_stream.oracles.ridge import RidgeOracle
from regcb_stream.slots import Slot, slot_context

__all__ = ["ConstantPolicy", "Estimate", "ModelPolicy", "RidgeRewardModel", "UniformPolicy",
           "evaluate", "evaluate_slots", "logged_slots"]


class Estimate(NamedTuple):
    """An estimate of a policy's expected reward, with its standard error and interval."""

    value: float
    stderr: float
    low: float
    high: float
    n: int

    @property
    def loss(self) -> float:
        """VW's convention: the expected cost, ``-value``."""
        return -self.value

    @property
    def loss_interval(self) -> tuple[float, float]:
        return -self.high, -self.low


def evaluate(policy, logged_examples, *, reward_model=None, alpha: float = 0.05):
    """IPS, SNIPS and DR estimates of ``policy``'s expected reward on logged examples.

    Parameters
    ----------
    policy
        Any object with ``pmf(context, actions) -> probabilities`` (called once per labelled
        example, in log order), e.g. a trained `regcb_stream.RegCB`, `UniformPolicy`.
    logged_examples
        ``(context, actions, label)`` triples as `regcb_stream.integrations.river.iter_vw`
        yields them; ``label.index`` is the logged action's position in ``actions``.
        Examples without a label, or with VW's test label (no probability), are skipped.
    reward_model
        For DR: an object with ``predict(context, actions) -> rewards`` and
        ``learn(context, action, reward)``; default `RidgeRewardModel`.
    alpha
        The intervals are ``1 - alpha`` normal-approximation intervals.

    Returns
    -------
    dict
        ``{"ips": Estimate, "snips": Estimate, "dr": Estimate}``.
    """
    model = RidgeRewardModel() if reward_model is None else reward_model
    rows = []  # (weight, reward, direct part of DR, residual of the model at the logged action)
    for i, (context, actions, label) in enumerate(logged_examples):
        if label is None or label.prob is None:
            continue
        pmf = _checked_pmf(policy.pmf(context, actions), len(actions), i)
        predicted = np.asarray(model.predict(context, actions), dtype=float)
        reward = -label.cost
        rows.append((pmf[label.index] / label.prob, reward, float(pmf @ predicted),
                     reward - predicted[label.index]))
        model.learn(context, actions[label.index], reward)
    if not rows:
        raise ValueError("the log has no labelled example with a probability")
    w, r, direct, residual = np.array(rows).T
    z = NormalDist().inv_cdf(1.0 - alpha / 2)
    return {"ips": mean_estimate(w * r, z), "snips": _snips(w, r, z),
            "dr": mean_estimate(direct + w * residual, z)}


def _checked_pmf(pmf, n_actions: int, i: int) -> np.ndarray:
    pmf = np.asarray(pmf, dtype=float)
    if pmf.shape != (n_actions,) or (pmf < 0).any() or abs(pmf.sum() - 1.0) > 1e-6:
        raise ValueError(f"example {i}: the policy's pmf {pmf.tolist()} is not a distribution "
                         f"over the {n_actions} actions")
    return pmf


def mean_estimate(terms: np.ndarray, z: float) -> Estimate:
    """The mean of per-example terms, its standard error and ``z``'s normal interval."""
    n = len(terms)
    se = float(terms.std(ddof=1) / np.sqrt(n)) if n > 1 else float("nan")
    value = float(terms.mean())
    return Estimate(value, se, value - z * se, value + z * se, n)


def _snips(w: np.ndarray, r: np.ndarray, z: float) -> Estimate:
    total = w.sum()
    if total == 0:
        nan = float("nan")
        return Estimate(nan, nan, nan, nan, len(w))
    value = float(w @ r / total)
    se = float(np.sqrt(np.sum((w * (r - value)) ** 2)) / total)
    return Estimate(value, se, value - z * se, value + z * se, len(w))


class RidgeRewardModel:
    """Unweighted ridge regression of the reward, learned online (`RegCB`'s ridge oracle:
    one model per label action; for dict actions one model over context features, action
    features and their products)."""

    def __init__(self, l2: float = 1.0):
        self.l2 = l2
        self._learner = RegCB(oracle=RidgeOracle(l2), schedule="online",
                              reward_range=(-1.0, 0.0), allow_out_of_range=True)

    def predict(self, context, actions) -> list[float]:
        return self._learner.decide(context, actions).prediction.tolist()

    def learn(self, context, action, reward: float) -> None:
        self._learner.learn(context, action, reward)


class UniformPolicy:
    """Every offered action with the same probability."""

    def pmf(self, context, actions) -> list[float]:
        return [1.0 / len(actions)] * len(actions)


class ConstantPolicy:
    """Always the action at position ``index`` of the offered actions."""

    def __init__(self, index: int = 0):
        self.index = index

    def pmf(self, context, actions) -> list[float]:
        if not 0 <= self.index < len(actions):
            raise ValueError(f"policy constant:{self.index}: an example offers {len(actions)} "
                             f"actions (positions 0 to {len(actions) - 1})")
        return [float(k == self.index) for k in range(len(actions))]


class ModelPolicy:
    """A learner saved by ``regcb-stream -f``, as a fixed policy over `iter_vw` examples read
    with the model's settings (``merge_shared=True``, its ``-q`` interactions, its ``-b``)."""

    def __init__(self, learner, settings: dict):
        self.learner = learner
        self.settings = settings

    @classmethod
    def load(cls, path) -> ModelPolicy:
        """The model file's policy (``ValueError``: not a file of ``regcb-stream -f``, or
        a damaged one, whose learner fails `resume.probe`)."""
        from regcb_stream.command.driver import StreamSettings
        from regcb_stream.command.resume import probe
        from regcb_stream.persist import load_model

        learner, settings = load_model(path)
        try:
            probe(learner, StreamSettings.of_model(settings))
        except Exception as error:  # noqa: BLE001 (whatever a damaged state raises)
            raise ValueError(f"{path} is not a model file of regcb-stream -f, or a damaged "
                             f"one ({type(error).__name__}: {error})") from None
        return cls(learner, settings)

    def pmf(self, context, actions) -> list[float]:
        bits = self.settings.get("hash_bits") if not self.settings.get("slots") else None
        if bits and any(isinstance(key, str) for row in [context, *actions[:1]]
                        if isinstance(row, dict) for key in itertools.islice(row, 1)):
            raise ValueError(f"the model hashes its features: read the examples with "
                             f"iter_vw(..., hash_bits={bits})")
        if self.settings["adf"] or self.settings.get("slots"):
            return self.learner.pmf(context, actions)
        return self.learner.pmf(context, list(range(len(actions))))  # the CLI's labels 0..K-1


class SlotLabel(NamedTuple):
    """A logged slot's label as `ope.evaluate` reads it: the action's position among the
    slot's offered actions, its cost and probability."""

    index: int
    cost: float
    prob: float


def logged_slots(example: SlotsExample):
    """Each logged slot of an example as ``(slot, context, offered actions, label)``, the
    offered actions those the logging policy's earlier slots left (CCB)."""
    context = feature_dict(example.shared)
    actions = [feature_dict(action) for action in example.actions]
    taken: set[int] = set()
    for j, line in enumerate(example.slots):
        slot = Slot(feature_dict(line.features))
        if example.kind == "slates":
            pool = [actions[a] for a in example.slot_actions(j)]
            offered = list(range(len(pool)))
        else:
            allowed = range(len(actions)) if line.include is None else line.include
            offered = [a for a in allowed if a < len(actions) and a not in taken]
            pool = [actions[a] for a in offered]
        outcome = line.outcome
        if outcome is not None and example.kind == "ccb":
            taken.add(outcome.action)
        cost = example.cost if example.kind == "slates" else (
            None if outcome is None else outcome.cost)
        if outcome is None or cost is None or outcome.action not in offered:
            continue
        yield j, slot_context(context, slot, j), pool, SlotLabel(
            offered.index(outcome.action), cost, outcome.prob)


class _Given:
    """The distributions a policy gave, handed back in their order (`evaluate` asks for one
    per labelled example, in order): each slot's asked of the policy once."""

    def __init__(self, pmfs: list):
        self._pmfs = iter(pmfs)

    def pmf(self, context, actions):
        return next(self._pmfs)


def evaluate_slots(policy, examples: Iterable[SlotsExample], alpha: float = 0.05) -> dict:
    """Per-slot estimates of ``policy`` (``pmf(context, actions)``, called on each slot's
    context and offered actions): ``{"slot j": {"ips", "snips", "dr"}}`` for each slot
    position, ``"ranking"``, the sum of the slots' IPS (its interval from the per-example
    sums), and for slates with a slate cost, ``"slate"``, the pseudo-inverse estimate."""
    per_slot, pmfs = defaultdict(list), defaultdict(list)
    ranking, slate = [], []
    for example in examples:
        total, weights, logged = 0.0, [], list(logged_slots(example))
        for j, context, pool, label in logged:
            per_slot[j].append((context, pool, label))
            pmf = np.asarray(policy.pmf(context, pool), dtype=float)
            pmfs[j].append(pmf)
            weights.append(pmf[label.index] / label.prob)
            total += weights[-1] * -label.cost
        if logged:
            ranking.append(total)
        if example.kind == "slates" and example.cost is not None and logged and len(
                logged) == len(example.slots):
            slate.append(-example.cost * (sum(weights) - (len(weights) - 1)))
    if not per_slot:
        raise ValueError("the log has no slot with an outcome (and a cost)")
    z = NormalDist().inv_cdf(1.0 - alpha / 2)
    out = {f"slot {j}": evaluate(_Given(pmfs[j]), per_slot[j], alpha=alpha)
           for j in sorted(per_slot)}
    out["ranking"] = mean_estimate(np.array(ranking), z)
    if slate:
        out["slate"] = mean_estimate(np.array(slate), z)
    return out


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=_prog(),
                                     description="Off-policy evaluation on a logged VW file.")
    parser.add_argument("-d", "--data", required=True, help="logged VW text; - is stdin")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--cb_explore", type=int, metavar="K", help="single-line, K actions")
    mode.add_argument("--cb_explore_adf", action="store_true", help="multi-line ADF examples")
    parser.add_argument("--dsjson", action="store_true",
                        help="VW's Decision Service JSON, one decision per line (with "
                             "--ccb_explore_adf or --slates: their DSJSON)")
    mode.add_argument("--ccb_explore_adf", action="store_true",
                      help="VW's ccb examples (with --dsjson, or a --policy-model of "
                           "regcb-stream --ccb_explore_adf --dsjson: CCB DSJSON): each "
                           "slot's estimates")
    mode.add_argument("--slates", action="store_true",
                      help="VW's slates examples: each slot's estimates and the slate's")
    policy = parser.add_mutually_exclusive_group()
    policy.add_argument("--policy-model", metavar="MODEL", help="model of regcb-stream -f")
    policy.add_argument("--policy", default="uniform",
                        help="uniform (default) or constant:J (always the J-th action, 0-based)")
    parser.add_argument("-q", "--interactions", action="append", default=[], metavar="AB")
    parser.add_argument("--alpha", type=float, default=0.05, help="1 - interval coverage")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.dsjson and (args.cb_explore or args.cb_explore_adf):
        parser.error("--dsjson reads DSJSON events as ADF examples (with --ccb_explore_adf "
                     "or --slates, as theirs): not with --cb_explore or --cb_explore_adf")
    model = None
    if args.policy_model:  # a file that cannot be read or is not a model: one line, 2
        try:
            model = ModelPolicy.load(args.policy_model)
        except OSError as error:
            return _fail(parser, f"--policy-model {args.policy_model}: cannot read it "
                                 f"({error.strerror})")
        except ValueError as error:
            return _fail(parser, f"--policy-model: {error}")
    named = "ccb" if args.ccb_explore_adf else "slates" if args.slates else None
    slots = model.settings.get("slots") if model else named
    other = args.cb_explore or args.cb_explore_adf or named not in (None, slots)
    if model and slots and other:
        parser.error(f"the format flags conflict with the model's settings {model.settings}")
    if slots:
        try:
            policy = model or _named_policy(args)
        except ValueError as error:  # bad flags
            parser.error(str(error))
        return _slots(parser, args, policy)
    try:
        policy, adf, n_actions, interactions = _policy_and_format(args, model)
    except ValueError as error:  # bad flags
        parser.error(str(error))
    from regcb_stream.command import shell
    from regcb_stream.integrations.river import iter_vw

    bits = policy.settings.get("hash_bits") if isinstance(policy, ModelPolicy) else None
    dsjson = args.dsjson or bool(isinstance(policy, ModelPolicy)
                                 and policy.settings.get("dsjson"))
    try:  # the log read as regcb-stream reads its input (gzip, stdin)
        with contextlib.ExitStack() as stack:
            examples = iter_vw(shell.open_input(stack, args.data), adf, n_actions,
                               interactions=interactions, merge_shared=True, hash_bits=bits,
                               dsjson=dsjson)
            estimates = evaluate(policy, examples, alpha=args.alpha)
    except (OSError, ValueError, shell.PathError) as error:  # an unreadable file (damaged
        message = str(error)  # gzip: the line), a bad example (its line), an empty log
        where = "" if message.startswith(("line ", args.data, "-d ")) else f"-d {args.data}: "
        print(f"{parser.prog}: error: {where}{message}", file=sys.stderr)
        return 1
    except Exception as error:  # noqa: BLE001 (a model's learner that loaded, then failed)
        if not isinstance(policy, ModelPolicy):
            raise
        print(f"{parser.prog}: error: --policy-model {args.policy_model} is a damaged model "
              f"file: its learner fails ({type(error).__name__}: {error})", file=sys.stderr)
        return 2
    _print(estimates, args.alpha, f"n = {estimates['ips'].n}")
    return 0


def _print(estimates: dict, alpha: float, note: str, width: int = 6) -> None:
    level = f"{1 - alpha:.0%} CI"
    print(f"{'':{width}s} {'value':>9s}  {level:>20s}  {'VW loss':>9s}  (value: reward = "
          f"-cost; {note})")
    for name, est in estimates.items():
        print(f"{name:{width}s} {est.value:9.5f}  [{est.low:8.5f}, {est.high:8.5f}]  "
              f"{est.loss:9.5f}")


def _slots(parser, args, policy) -> int:
    """``--ccb_explore_adf`` / ``--slates`` (`evaluate_slots`): each slot's estimates, the
    ranking's and (slates) the slate's."""
    from regcb_stream.command import shell
    from regcb_stream.io.dsjson import iter_slots_dsjson
    from regcb_stream.io.vw_slots import iter_slots

    dsjson = args.dsjson or isinstance(policy, ModelPolicy) and policy.settings["dsjson"]
    try:
        with contextlib.ExitStack() as stack:
            lines = shell.open_input(stack, args.data)
            examples = iter_slots_dsjson(lines) if dsjson else iter_slots(lines)
            estimates = evaluate_slots(policy, examples, alpha=args.alpha)
    except (OSError, ValueError, shell.PathError) as error:
        print(f"{parser.prog}: error: {error}", file=sys.stderr)
        return 1
    for name, found in estimates.items():
        if isinstance(found, dict):
            _print({f"{name} {estimator}": est for estimator, est in found.items()}, args.alpha,
                   f"n = {found['ips'].n}", 12)
    _print({name: est for name, est in estimates.items() if not isinstance(est, dict)},
           args.alpha, "ranking: the slots' IPS summed per example; slate: pseudo-inverse",
           12)
    return 0


def _named_policy(args):
    """``--policy``'s policy: uniform or constant:J."""
    kind, _, index = args.policy.partition(":")
    if kind == "uniform" and not index:
        return UniformPolicy()
    if kind == "constant" and index.isdigit():
        return ConstantPolicy(int(index))
    raise ValueError(f"unknown --policy {args.policy!r}: uniform or constant:J")


def _prog() -> str:
    """The name the command was run by: a console script's, or ``python -m`` for this file."""
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return name if name and not name.endswith(".py") else "python -m regcb_stream.evaluation.ope"


def _fail(parser, message: str) -> int:
    print(f"{parser.prog}: error: {message}", file=sys.stderr)
    return 2


def _policy_and_format(args, model: ModelPolicy | None):
    """The policy the flags name (``model``: the one loaded from ``--policy-model``), and
    the input format (from the model when there is one)."""
    if model is not None:
        policy = model
        s = policy.settings
        saved = (s["adf"], s["n_actions"], tuple(s["interactions"]))
        given = (args.cb_explore_adf, args.cb_explore, tuple(args.interactions))
        if args.cb_explore or args.cb_explore_adf:  # a format flag: all of it, as regcb-stream -i
            conflict = given != saved
        else:  # -q alone
            conflict = bool(args.interactions) and given[2] != saved[2]
        if conflict:
            raise ValueError(f"the format flags conflict with the model's settings {s}")
        return policy, s["adf"], s["n_actions"], tuple(s["interactions"])
    if not args.cb_explore and not args.cb_explore_adf and not args.dsjson:
        raise ValueError("give --cb_explore K, --cb_explore_adf or --dsjson (or "
                         "--policy-model)")
    policy = _named_policy(args)
    return (policy, args.cb_explore_adf or args.dsjson, args.cb_explore,
            tuple(args.interactions))


if __name__ == "__main__":
    sys.exit(main())
