"""RegCB for coba: a learner for coba's protocol, and environments over this project's data.

coba (``pip install coba``, 8.x) drives learners through ``predict(context, actions)`` /
``learn(context, action, reward, probability, **kwargs)`` and reports them by ``params``.
`RegCBLearner` creates its `regcb_stream.RegCB` on first use, so an unused learner is a few
attributes (cheap to deep-copy or pickle, as coba does to run learners in processes).
coba's actions can be strings, numbers, one-hot tuples or lists, or dicts of features:
lists become tuples, dicts select RegCB's joint model (VW's ADF). Contexts can be None, a
number, a sequence or a dict; strings (categorical values) become one-hot ``name=value``
features.

`MulticlassEnvironment` serves a UCI set of `regcb_stream.datasets.uci` as coba
simulated interactions (actions are the class indices as strings, so VW learners see one
indicator feature per action rather than a number), and `VWLogEnvironment` serves logged VW
text as coba logged interactions, its costs as coba's rewards in [0, 1] (``1 - cost`` for
VW's default cost range [0, 1]), so that `RegCBLearner()` learns them with its defaults. Both
read anew on every ``read()``.
coba is imported only inside ``read()``: this module imports without it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from numbers import Number

from regcb_stream.defaults import VARIANT
from regcb_stream.learner import RegCB
from regcb_stream.parameters import is_range

__all__ = ["MulticlassEnvironment", "RegCBLearner", "VWLogEnvironment"]


class RegCBLearner:
    """RegCB behind coba's learner protocol.

    Parameters
    ----------
    variant
        ``"elimination"`` or ``"optimistic"``.
    beta
        The paper's budget on the normalized squared risk; None: `regcb_stream.RegCB`'s
        default budget.
    schedule
        ``"online"``, ``"sqrt2"`` or ``"doubling"``.
    reward_range
        ``(low, high)`` of coba's rewards (0 and 1 for supervised environments).
    seed
        Seed of RegCB's sampler.
    options
        Further keyword arguments of `regcb_stream.RegCB` (e.g. ``allow_out_of_range``).

    Examples
    --------
    >>> learner = RegCBLearner("optimistic", beta=0.01)
    >>> learner.params
    {'family': 'RegCB', 'variant': 'optimistic', 'beta': 0.01, 'schedule': 'online', 'seed': 0}
    >>> for t in range(100):
    ...     context = [t % 2, 1 - t % 2]
    ...     action, prob, info = learner.predict(context, ["a", "b"])
    ...     learner.learn(context, action, float(action == "ab"[t % 2]), prob, **info)
    >>> learner.score([1, 0], ["a", "b"], "b")
    1.0

    """

    def __init__(self, variant: str = VARIANT, *, beta: float | None = None,
                 schedule: str = "online", reward_range: tuple[float, float] = (0.0, 1.0),
                 seed: int | None = 0, **options):
        self.variant = variant
        self.beta = beta
        self.schedule = schedule
        self.reward_range = reward_range
        self.seed = seed
        self.options = options
        self._learner: RegCB | None = None

    @property
    def params(self) -> dict:
        """What coba records of the learner; ``family`` names it in plots and tables."""
        return {"family": "RegCB", "variant": self.variant, "beta": self.beta,
                "schedule": self.schedule, "seed": self.seed, **self.options}

    @property
    def learner(self) -> RegCB:
        """The `regcb_stream.RegCB` behind this learner (created on first use)."""
        if self._learner is None:
            self._learner = RegCB(self.variant, beta=self.beta, schedule=self.schedule,
                                  reward_range=self.reward_range, seed=self.seed, **self.options)
        return self._learner

    def predict(self, context, actions: Sequence) -> tuple[object, float, dict]:
        """Sample one of coba's ``actions``; return it, its probability and no kwargs."""
        keys = [_action(a) for a in actions]
        chosen, prob, info = self.learner.predict(_context(context), keys)
        return actions[keys.index(chosen)], prob, info

    def learn(self, context, action, reward: float, probability: float, **kwargs) -> None:
        """Learn ``reward`` of ``action`` (played with ``probability``)."""
        self.learner.learn(_context(context), _action(action), reward, probability, **kwargs)

    def score(self, context, actions: Sequence, action) -> float:
        """Probability of playing ``action`` among ``actions`` in ``context``."""
        return self.learner.score(_context(context), [_action(a) for a in actions],
                                  _action(action))


def _action(action):
    """A coba action as RegCB takes it: lists become tuples, dicts stay feature dicts."""
    return tuple(action) if isinstance(action, list) else action


def _context(context):
    """A coba context as RegCB takes it: numbers as a dense list, anything else as a dict."""
    if context is None:
        return []
    if isinstance(context, (Number, str)):
        context = [context]
    if isinstance(context, Mapping):
        return {_name(k, v): _value(v) for k, v in context.items()}
    if all(isinstance(v, Number) for v in context):
        return list(context)
    return {_name(i, v): _value(v) for i, v in enumerate(context)}


def _name(key, value):
    return f"{key}={value}" if isinstance(value, str) else key


def _value(value) -> float:
    return 1.0 if isinstance(value, str) else value


class MulticlassEnvironment:
    """A UCI multiclass set as a coba environment (one round per example, shuffled).

    Parameters
    ----------
    name
        A set of `regcb_stream.datasets.uci.UCI_SETS` (read from the shared data folder).
    seed
        Seed of the shuffle (and of the noisy rewards).
    noisy
        Draw rewards from the paper's noisy mean matrix instead of 1 for the true class.
    take
        Use only the first ``take`` rounds of the shuffled stream.
    """

    def __init__(self, name: str, *, seed: int = 0, noisy: bool = False,
                 take: int | None = None):
        self.name = name
        self.seed = seed
        self.noisy = noisy
        self.take = take

    @property
    def params(self) -> dict:
        return {"env_type": "MulticlassEnvironment", "source": self.name, "seed": self.seed,
                "noisy": self.noisy, "take": self.take}

    def read(self):
        """Yield coba ``SimulatedInteraction`` s: dense context, K string actions, rewards."""
        from coba import DiscreteReward, SimulatedInteraction

        from regcb_stream.datasets.uci import bandit_stream

        X, R = bandit_stream(self.name, self.noisy, self.seed)
        actions = [str(k) for k in range(R.shape[1])]
        for x, rewards in zip(X[: self.take].tolist(), R[: self.take].tolist()):
            yield SimulatedInteraction(x, actions, DiscreteReward(actions, rewards))


class VWLogEnvironment:
    """Logged VW contextual-bandit text as a coba environment of logged interactions.

    Each labelled example becomes a coba ``LoggedInteraction`` with its context, offered
    actions (single-line: the action ids as strings ``"1"``..``"K"``; ADF: feature dicts),
    logged action, reward and logged probability. The reward is coba's, in [0, 1] (1 is
    best): ``(high - cost) / (high - low)`` for costs in ``cost_range = (low, high)``,
    ``1 - cost`` for VW's default [0, 1], so `RegCBLearner` and coba's VW learners take it
    as they take any coba environment's (VW learners with ``cb_min_cost=-1,
    cb_max_cost=0``). A cost outside ``cost_range`` is an error naming its example.
    Examples without a label or with VW's test label are skipped. Logged interactions have
    the logged action's reward only: evaluate them off-policy,
    ``coba.SequentialCB(learn="off", eval="ips")`` (coba's default needs every reward).

    Parameters
    ----------
    path
        The VW text file (``.gz`` is decompressed).
    adf
        Multi-line ADF examples instead of single-line ``--cb_explore K`` ones.
    n_actions
        K, for single-line input.
    cost_range
        ``(low, high)`` of the log's costs (VW's ``--cb_min_cost``, ``--cb_max_cost``).
    """

    def __init__(self, path: str | os.PathLike, *, adf: bool = False,
                 n_actions: int | None = None, cost_range: tuple[float, float] = (0.0, 1.0)):
        if not is_range(cost_range):
            raise ValueError(f"the 'cost_range' parameter of VWLogEnvironment must be a pair "
                             f"(low, high) of finite numbers with low < high; got "
                             f"{cost_range!r}")
        if not adf and not (isinstance(n_actions, int) and n_actions >= 1):
            raise ValueError(f"the 'n_actions' parameter of VWLogEnvironment must be an int "
                             f">= 1 for single-line input (adf=False); got {n_actions!r}")
        self.path = path
        self.adf = adf
        self.n_actions = n_actions
        self.cost_range = cost_range

    @property
    def params(self) -> dict:
        return {"env_type": "VWLogEnvironment", "source": os.fspath(self.path),
                "adf": self.adf, "n_actions": self.n_actions, "cost_range": self.cost_range}

    def read(self):
        """Yield coba ``LoggedInteraction`` s, one per labelled example."""
        from coba import LoggedInteraction

        from regcb_stream.integrations.river import iter_vw

        low, high = self.cost_range
        examples = iter_vw(self.path, self.adf, self.n_actions)
        for number, (context, actions, label) in enumerate(examples, 1):
            if label is None or label.prob is None:
                continue
            if not low <= label.cost <= high:
                raise ValueError(f"{os.fspath(self.path)}: example {number} has cost "
                                 f"{label.cost:g}, outside cost_range {self.cost_range}")
            offered = actions if self.adf else [str(a) for a in actions]
            yield LoggedInteraction(context, offered[label.index],
                                    (high - label.cost) / (high - low), label.prob,
                                    actions=offered)
