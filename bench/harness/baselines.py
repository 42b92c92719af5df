"""The paper's baselines with the ridge oracle (or GB5), on the same ``sqrt2`` epoch
schedule.

* ε-Greedy: explore uniformly with probability ``max(1/sqrt(t), eps)``, else play the
  greedy action; importance-weighted regression (weight ``1/p``, the paper's reduction B).
* Bootstrap (Dimakopoulou et al. 2017): ``N`` replicates of the data with Poisson(1)
  example weights (the online bootstrap), a ridge fit per replicate; play the largest
  ``Mean(a) + sqrt(beta Var(a))`` over the replicates' predictions.
* SquareCB (Foster and Rakhlin 2020): inverse gap weighting of the ridge predictions,
  ``p(a) = 1 / (K + gamma_t (best - f(a)))`` with ``gamma_t = c sqrt(K t)``.

ILTCB (Agarwal et al. 2014) on the same schedule is in :mod:`.iltcb`. ε-Greedy and
Bootstrap also take the paper's GB5 oracle (``oracle="gb5"``, :class:`BlockTrees`: the
`TreesOracle` RegCB-GB5 uses, its predictions only).

Ties of the greedy or optimistic action are split uniformly (before any data every action
ties), so each decision rule is a deterministic distribution and the protocol's uniforms
draw the actions.
"""

from __future__ import annotations

import numpy as np

from bench.harness.linear import BlockRidge, design
from bench.harness.problems import Rounds
from bench.harness.protocol import Step, sample
from regcb_stream.explore import schedules

BOOTSTRAP_REPLICATES = 8


class _Epochs:
    """The ``sqrt2`` epoch schedule and the decision loop shared by the baselines.

    A subclass gives the distributions (``_rule``), takes the labels of a block (``_add``)
    and refits at the rebuild points (``_rebuild``).
    """

    def __init__(self):
        self.n = 0
        self.next_rebuild = schedules.next_rebuild("sqrt2", 0)

    def block_size(self) -> int:
        return self.next_rebuild - self.n

    def decide(self, rounds: Rounds, u: np.ndarray) -> Step:
        pmf, width, plausible = self._rule(rounds, self.n + 1 + np.arange(len(u)))
        actions = sample(pmf, u)
        return Step(actions, pmf[np.arange(len(u)), actions], width, plausible)

    def learn(self, rounds: Rounds, step: Step, rewards: np.ndarray) -> None:
        self._add(rounds, step, rewards)
        self.n += len(rewards)
        if self.n == self.next_rebuild:
            self._rebuild()
            self.next_rebuild = schedules.next_rebuild("sqrt2", self.n)

    def holdout_pmf(self, rounds: Rounds) -> np.ndarray:
        return self._rule(rounds, np.full(len(rounds), max(self.n, 1)))[0]

    def _rule(self, rounds: Rounds, t: np.ndarray):
        raise NotImplementedError

    def _add(self, rounds: Rounds, step: Step, rewards: np.ndarray) -> None:
        raise NotImplementedError

    def _rebuild(self) -> None:
        raise NotImplementedError


class _EpochRidge(_Epochs):
    """Regression copies (ridge, or GB5 with ``oracle="gb5"``) refit at the ``sqrt2``
    rebuild points."""

    copies = 1

    def __init__(self, n_actions: int, dim: int, adf: bool, seed: int, oracle: str = "ridge"):
        super().__init__()
        self.adf = adf
        models = 1 if adf else n_actions
        self.ridge = (BlockRidge(models, dim + 1, self.copies) if oracle == "ridge" else
                      BlockTrees(models, dim + 1, self.copies, seed))
        self.rng = np.random.default_rng([seed, 7])

    def _add(self, rounds: Rounds, step: Step, rewards: np.ndarray) -> None:
        phi, rows = design(rounds.X), np.arange(len(rewards))
        x = phi[rows, step.actions] if self.adf else phi
        models = np.zeros(len(rewards), np.intp) if self.adf else step.actions
        self.ridge.add(x, models, rewards, self._weights(step))

    def _rebuild(self) -> None:
        self.ridge.solve()

    def _weights(self, step: Step):
        return None

    def _predictions(self, rounds: Rounds, masked: bool = True) -> np.ndarray:
        """Predictions ``(copies, n, K)`` (``-inf`` on actions not offered if ``masked``)."""
        pred = self.ridge.predict(design(rounds.X))
        return np.where(rounds.offered()[None], pred, -np.inf) if masked else pred


class EpsilonGreedy(_EpochRidge):
    """ε-Greedy with exploration ``max(1/sqrt(t), eps)`` and importance weights."""

    def __init__(self, eps: float, n_actions: int, dim: int, adf: bool, seed: int,
                 oracle: str = "ridge"):
        super().__init__(n_actions, dim, adf, seed, oracle)
        self.eps = eps

    def _weights(self, step: Step):
        return 1.0 / step.probs

    def _rule(self, rounds: Rounds, t: np.ndarray):
        offered = rounds.offered()
        explore = np.maximum(1.0 / np.sqrt(t), self.eps)[:, None]
        uniform = offered / offered.sum(axis=1, keepdims=True)
        return (1 - explore) * _argmax_set(self._predictions(rounds)[0]) + explore * uniform, \
            None, None


class Bootstrap(_EpochRidge):
    """Bootstrap UCB over ``BOOTSTRAP_REPLICATES`` Poisson-weighted ridge fits."""

    copies = BOOTSTRAP_REPLICATES

    def __init__(self, beta: float, n_actions: int, dim: int, adf: bool, seed: int,
                 oracle: str = "ridge"):
        super().__init__(n_actions, dim, adf, seed, oracle)
        self.beta = beta

    def _weights(self, step: Step):
        return self.rng.poisson(1.0, size=(self.copies, len(step.actions))).astype(float)

    def _rule(self, rounds: Rounds, t: np.ndarray):
        pred = self._predictions(rounds, masked=False)
        offered = rounds.offered()
        mean = np.where(offered, pred.mean(axis=0), -np.inf)
        spread = np.sqrt(self.beta * np.where(offered, pred.var(axis=0, ddof=1), 0.0))
        high, low = mean + spread, mean - spread
        optimistic = np.argmax(high, axis=1)
        width = 2 * spread[np.arange(len(t)), optimistic]
        plausible = (high >= low.max(axis=1, keepdims=True)).sum(axis=1).astype(float)
        return _argmax_set(high), width, plausible


class SquareCB(_EpochRidge):
    """Inverse gap weighting with ``gamma_t = c sqrt(K t)``, unweighted regression."""

    def __init__(self, scale: float, n_actions: int, dim: int, adf: bool, seed: int):
        super().__init__(n_actions, dim, adf, seed)
        self.scale = scale

    def _rule(self, rounds: Rounds, t: np.ndarray):
        pred = self._predictions(rounds)[0]
        offered = rounds.offered()
        k = offered.sum(axis=1, keepdims=True)
        gamma = self.scale * np.sqrt(k * t[:, None])
        best = np.argmax(pred, axis=1)
        gap = np.where(offered, pred[np.arange(len(t)), best][:, None] - pred, 0.0)
        pmf = np.where(offered, 1.0 / (k + gamma * gap), 0.0)
        pmf[np.arange(len(t)), best] = 0.0
        pmf[np.arange(len(t)), best] = 1.0 - pmf.sum(axis=1)
        return pmf, None, None


class BlockTrees:
    """`BlockRidge`'s interface over the paper's GB5 oracle: ``copies`` x models of
    gradient-boosted depth-5 trees (`TreesOracle`: refit as the data doubles, leaf values
    re-solved at each ``solve``); rows of weight 0 (a bootstrap replicate's) are left out.

    >>> trees = BlockTrees(n_models=2, dim=2)
    >>> x = design(np.array([[0.0], [1.0]] * 20))
    >>> trees.add(x, np.array([0, 1] * 20), np.array([1.0, 0.0] * 20))
    >>> trees.solve()
    >>> trees.predict(x[:2]).shape
    (1, 2, 2)
    """

    def __init__(self, n_models: int, dim: int, copies: int = 1, seed: int = 0):
        from regcb_stream.oracles.trees import TreesOracle

        self.trees = [TreesOracle(seed=seed + copy) for copy in range(copies)]
        for tree in self.trees:
            tree.grow(n_models, dim)
        self.n_models = n_models

    def add(self, rows: np.ndarray, models: np.ndarray, y: np.ndarray, weights=None) -> None:
        w = np.ones(len(y)) if weights is None else np.asarray(weights, dtype=float)
        w = np.broadcast_to(w, (len(self.trees), len(y)))
        for tree, wc in zip(self.trees, w):
            keep = np.flatnonzero(wc)
            tree.learn_many(rows[keep], models[keep], y[keep], wc[keep])

    def solve(self) -> None:
        for tree in self.trees:
            tree.rebuild()

    def predict(self, phi: np.ndarray) -> np.ndarray:
        """Predictions ``(copies, n, K)``, as `BlockRidge.predict`."""
        if phi.ndim == 2:  # a context for every model (a broadcast, as the learner's)
            n, dim = phi.shape
            rows = np.broadcast_to(phi[:, None], (n, self.n_models, dim))
            models = np.arange(self.n_models)
        else:
            rows, models = phi, np.zeros(phi.shape[1], np.intp)
        return np.stack([tree.predict(rows, models) for tree in self.trees])


def _argmax_set(values: np.ndarray) -> np.ndarray:
    """Uniform distribution over each row's maximizers."""
    top = values >= values.max(axis=1, keepdims=True)
    return top / top.sum(axis=1, keepdims=True)


def supervised_curve(problem, points: list[int]) -> dict:
    """The full-information reference: ridge fit on every action's reward.

    Validation at checkpoint ``c`` scores the greedy rule of the fit on the first ``c``
    training rounds (the last is the paper's "supervised" line: the oracle trained on the
    whole training set); the progressive reward is greedy play of the fit frozen at the
    ``sqrt2`` rebuild points.
    """
    train, hold = problem.train, problem.hold
    adf = train.adf
    ridge = BlockRidge(1 if adf else problem.n_actions, train.X.shape[-1] + 1)
    total, t, validation, curve = 0.0, 0, [], []
    rebuild = schedules.next_rebuild("sqrt2", 0)
    for point in points:
        while t < point:
            block = train.rows(t, min(point, rebuild))
            total += float(np.einsum("nk,nk->", _greedy(ridge, block), block.R))
            _add_all(ridge, block, adf)
            t += len(block)
            if t == rebuild:
                ridge.solve()
                rebuild = schedules.next_rebuild("sqrt2", t)
        curve.append(total / point)
        frozen = ridge.theta
        ridge.solve()
        validation.append(float(np.einsum("nk,nk->n", _greedy(ridge, hold), hold.R).mean()))
        ridge.theta = frozen
    return {"validation": validation, "progressive_curve": curve, "progressive": curve[-1]}


def _greedy(ridge: BlockRidge, rounds: Rounds) -> np.ndarray:
    """Greedy distributions of the fit on the offered actions."""
    pred = ridge.predict(design(rounds.X))[0]
    return _argmax_set(np.where(rounds.offered(), pred, -np.inf))


def _add_all(ridge: BlockRidge, block: Rounds, adf: bool) -> None:
    """Teach ``ridge`` every offered action's reward of a block."""
    phi, n, k = design(block.X), len(block), block.R.shape[1]
    if adf:
        keep = block.offered()
        ridge.add(phi[keep], np.zeros(int(keep.sum()), np.intp), block.R[keep])
    else:
        ridge.add(np.repeat(phi, k, axis=0), np.tile(np.arange(k), n), block.R.ravel())
