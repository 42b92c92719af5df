"""RegCB (this package's learner) under the protocol, with any of the package's oracles.

UCI rounds are played by ``RegCB.play``: one ``decide_many`` per epoch block, learned at
once; the learner's decision state is frozen within an epoch, so this equals deciding and
learning round by round (``tests/test_harness.py`` checks it). Ranking rounds
offer their own documents (dicts of features, the joint class), so they are decided one by
one, still learned per block.
"""

from __future__ import annotations

import numpy as np

from bench.harness.problems import Rounds
from bench.harness.protocol import Step, play_in_blocks, sample
from regcb_stream.learner import RegCB
from regcb_stream.oracles.ridge import RidgeOracle

ORACLES = ("ridge", "optimistic", "vw", "river", "river_adagrad", "river_bayes", "gb5")
OPTIMISTIC_L2 = 10.0  # the prior's weight, chosen on the UCI streams: docs/results/ridge_prior.md


def make_oracle(name: str, seed: int = 0):
    """An oracle for the learner: a name it knows or an object (the optimistic ridge; River
    linear regression by normalized SGD at rate 1/sqrt(t) (rate chosen among 0.5, 1 and 2
    on the clean UCI streams, one repetition) or by AdaGrad at its default rate, the rows
    carrying the intercept feature; River's Bayesian linear regression; GB5 trees).

    >>> make_oracle("ridge"), make_oracle("optimistic").prior
    ('ridge', 'optimistic')
    """
    if name in ("ridge", "vw"):
        return name
    if name == "optimistic":
        return RidgeOracle(l2=OPTIMISTIC_L2, prior="optimistic")
    if name in ("river", "river_adagrad", "river_bayes"):
        from river import linear_model, optim

        from regcb_stream.oracles.river import RiverOracle

        if name == "river_bayes":
            return RiverOracle(linear_model.BayesianLinearRegression())
        if name == "river_adagrad":  # River's default rate
            return RiverOracle(linear_model.LinearRegression(optim.AdaGrad(0.1),
                                                             intercept_lr=0.0))
        rate = optim.schedulers.InverseScaling(1.0, power=0.5)
        return RiverOracle(linear_model.LinearRegression(optim.SGD(rate), intercept_lr=0.0),
                           normalize=True)
    if name == "gb5":
        from regcb_stream.oracles.trees import TreesOracle

        return TreesOracle(seed=seed)
    raise ValueError(f"unknown oracle {name!r}; expected one of {ORACLES}")


def available_oracles() -> list[str]:
    """The oracles that import here (River and the GB5 trees are optional)."""
    names = []
    for name in ORACLES:
        try:
            make_oracle(name)
        except ImportError:
            continue
        names.append(name)
    return names


class RegCBAlgorithm:
    """RegCB elimination or optimistic with a constant beta on the ``sqrt2`` schedule.

    Parameters
    ----------
    variant : {"elimination", "optimistic"}
    oracle : str
        One of :data:`ORACLES`.
    beta : float
        The paper's budget on the normalized squared risk.
    n_actions : int
        K (the UCI actions are labelled ``0..K-1``).
    seed : int
        Seed of the learner (its own sampler is unused: the protocol draws the actions).
    schedule : str
        Epoch schedule of the learner.
    budget : {"beta", "summed"}
        ``beta`` on the normalized risk, or on the summed loss (the paper's experiments).
    """

    def __init__(self, variant: str, oracle: str, beta: float, n_actions: int, seed: int,
                 schedule: str = "sqrt2", budget: str = "beta"):
        self.learner = RegCB(variant, oracle=make_oracle(oracle, seed), beta=beta,
                             budget=budget, schedule=schedule, seed=seed)
        self.actions = list(range(n_actions))
        self._docs: list = []  # ranking: the offered documents of the block being decided

    @classmethod
    def defaults(cls, n_actions: int, seed: int) -> RegCBAlgorithm:
        """``RegCB()`` with no arguments but the seed: what a new user gets."""
        algo = cls("optimistic", "ridge", 1e-3, n_actions, seed)
        algo.learner = RegCB(seed=seed)
        return algo

    @classmethod
    def theory(cls, variant: str, n_actions: int, seed: int, horizon: int) -> RegCBAlgorithm:
        """The paper's theoretical budget for a ``horizon`` of rounds (ridge, ``sqrt2``)."""
        algo = cls(variant, "ridge", 1e-3, n_actions, seed)
        algo.learner = RegCB(variant, oracle="ridge", budget="theory", horizon=horizon,
                             schedule="sqrt2", seed=seed)
        return algo

    def block_size(self) -> int:
        return self.learner.labels_until_rebuild

    def play(self, rounds: Rounds, u: np.ndarray, reveal) -> Step:
        """UCI rounds through ``RegCB.play`` (contexts encoded once, one ``decide_many``
        per epoch block); ranking rounds through ``decide`` and ``learn``."""
        if rounds.adf:
            return play_in_blocks(self, rounds, u, reveal)
        played, decision = self.learner.play(rounds.X, self.actions, reveal, u)
        return Step(played, decision.pmf[np.arange(len(played)), played],
                    *_diagnostics(decision))

    def decide(self, rounds: Rounds, u: np.ndarray) -> Step:
        if rounds.adf:
            return self._decide_adf(rounds, u)
        decision = self.learner.decide_many(rounds.X, self.actions)
        actions = sample(decision.pmf, u)
        return Step(actions, decision.pmf[np.arange(len(u)), actions],
                    *_diagnostics(decision))

    def learn(self, rounds: Rounds, step: Step, rewards: np.ndarray) -> None:
        if rounds.adf:
            contexts = [{}] * len(rewards)
            chosen = [docs[a] for docs, a in zip(self._docs, step.actions.tolist())]
            self.learner.learn_many(contexts, chosen, rewards, step.probs)
        else:
            self.learner.learn_many(rounds.X, step.actions.tolist(), rewards, step.probs)

    def holdout_pmf(self, rounds: Rounds) -> np.ndarray:
        if not rounds.adf:
            return self.learner.pmf_many(rounds.X, self.actions)
        pmf = np.zeros(rounds.R.shape)
        for i, docs in enumerate(_documents(rounds)):
            pmf[i, : len(docs)] = self.learner.decide({}, docs).pmf
        return pmf

    def _decide_adf(self, rounds: Rounds, u: np.ndarray) -> Step:
        self._docs = _documents(rounds)
        n = len(rounds)
        actions, probs = np.zeros(n, np.intp), np.zeros(n)
        width, plausible = np.zeros(n), np.zeros(n)
        for i, docs in enumerate(self._docs):
            d = self.learner.decide({}, docs)
            actions[i] = sample(d.pmf[None], u[i : i + 1])[0]
            probs[i] = d.pmf[actions[i]]
            width[i], plausible[i] = _diagnostics(d)
        return Step(actions, probs, width, plausible)


def _documents(rounds: Rounds) -> list[list[dict]]:
    """Per round, the offered documents as dicts ``{feature index: value}``."""
    return [
        [dict(enumerate(doc.tolist())) for doc in X[mask]]
        for X, mask in zip(rounds.X, rounds.offered())
    ]


def _diagnostics(decision) -> tuple[np.ndarray, np.ndarray]:
    """Width ``High - Low`` of the optimistic action (largest High) and the size of the
    plausible set ``{a : High(a) >= max Low}``, per row (scalars for a single context)."""
    high, low = np.atleast_2d(decision.high), np.atleast_2d(decision.low)
    top = np.argmax(high, axis=1)
    rows = np.arange(len(high))
    width = high[rows, top] - low[rows, top]
    plausible = (high >= low.max(axis=1, keepdims=True)).sum(axis=1).astype(float)
    if decision.high.ndim == 1:
        return width[0], plausible[0]
    return width, plausible
