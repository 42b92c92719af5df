"""ILTCB ("ILOVETOCONBANDITS", Agarwal et al. 2014) with the baselines' ridge oracle or the
paper's GB5.

Policies are argmax rules over the offered actions of a regression class. The argmax oracle
(AMO) for rewards ``c(x_i, a)`` on the history is the regression reduction: a fit of ``c`` on
every offered action of every round, then its argmax rule. The linear class
(:class:`LinearPolicies`): ``pi_W(x) = argmax_a (W phi(x))_a`` (one model over ``phi(x, a)``
for ranking), the AMO a ridge fit (``l2 = 1``, one Gram matrix for every action). The GB5
class (:class:`TreePolicies`): 100 depth-5 trees per action, grown as the history doubles;
the AMO refits their leaf values by a boosting pass over the fixed splits.

At each ``sqrt2`` rebuild point (``tau`` rounds of history) the paper's coordinate descent
(its Algorithm 2) solves the optimization problem OP for the sub-distribution ``Q`` over
policies, warm-started from the previous epoch's ``Q``, with the IPS rewards
``r_i 1[a = a_i] / p_i``, ``psi = 100``, ``mu = min(1/(2K), c sqrt(1/(K tau)))`` and
``b_pi = Reg(pi) / (psi mu)``. The next epoch plays ``Q^mu``, the leftover mass
``1 - sum Q`` on the empirical best policy ``pihat``.

Where this differs from the paper:

* the AMO is approximate (a regression, not an exact cost-sensitive classifier), so each step
  takes the largest violation of constraint (2) among the AMO's policy and the policies
  already in ``Q``'s support, all evaluated exactly on the history, and ``pihat`` is the best
  (in IPS reward) of every policy evaluated in the epoch;
* the tuned ``c`` stands for the paper's ``sqrt(ln(16 tau^2 |Pi| / delta))``, a constant;
* the descent stops after :data:`MAX_ITERATIONS` steps in an epoch (``cap_hits`` counts those
  epochs) and then rescales ``Q`` once more, so that it stays a sub-distribution;
* when the offered actions vary (ranking), ``K`` in ``Q^mu`` is the number offered.
"""

from __future__ import annotations

import numpy as np

from bench.harness.baselines import _Epochs
from bench.harness.linear import design
from bench.harness.problems import Rounds
from bench.harness.protocol import Step

try:
    from regcb_stream.oracles import _trees
except ImportError:  # not built: the numpy reference
    _trees = None

PSI = 100.0  # the paper's psi
MAX_ITERATIONS = 30  # coordinate-descent steps (AMO calls) per epoch at most
ACTION = np.int16  # dtype of the support's actions on the history (n x |support|)
NO_LEAF = 255  # GB5: the leaf of a pair left out (``_trees.c``'s; a tree has <= 32 leaves)


class ILTCB(_Epochs):
    """ILTCB (Agarwal et al. 2014, Algorithms 1 and 2) over argmax policies.

    Parameters
    ----------
    scale : float
        ``c`` in ``mu = min(1/(2K), c sqrt(1/(K tau)))``.
    n_actions, dim, adf, seed
        As for the other baselines (the distributions are deterministic and the protocol's
        uniforms draw the actions; ``seed`` seeds the GB5 fits).
    oracle : {"ridge", "gb5"}
        The policy class and its argmax oracle: :class:`LinearPolicies` or
        :class:`TreePolicies`.

    Attributes
    ----------
    policies : LinearPolicies or TreePolicies
        The class, its history and its argmax oracle.
    thetas : list
        The support's policies (their parameters in ``policies``).
    weights : np.ndarray
        ``Q`` on the support.
    best : object or None
        ``pihat``'s parameters (None before the first epoch, which plays uniformly).
    mu : float
        The smoothing of the current epoch.
    cap_hits : int
        Epochs whose descent stopped at :data:`MAX_ITERATIONS`.

    References
    ----------
    [^1]: Agarwal, Hsu, Kale, Langford, Li, Schapire. "Taming the Monster: A Fast and Simple
        Algorithm for Contextual Bandits." ICML 2014.
    """

    def __init__(self, scale: float, n_actions: int, dim: int, adf: bool, seed: int,
                 oracle: str = "ridge"):
        super().__init__()
        self.scale, self.k = scale, n_actions
        if oracle not in ("ridge", "gb5"):
            raise ValueError(f"oracle must be 'ridge' or 'gb5', got {oracle!r}")
        self.policies = (LinearPolicies(n_actions, dim, adf) if oracle == "ridge" else
                         TreePolicies(n_actions, dim, adf, seed))
        self.offered, self.rhat = np.zeros((0, n_actions), bool), np.zeros((0, n_actions))
        self.q = np.zeros((0, n_actions))  # Q(a | x_i) on the history
        self.acts = np.zeros((0, 0), ACTION)  # the support's actions on the history
        # the support: policies, Q(pi) and IPS rewards Rhat(pi) on the history
        self.thetas, self.weights, self.values = [], np.zeros(0), np.zeros(0)
        self.best, self.best_value, self.mu, self.cap_hits = None, -np.inf, 0.0, 0
        self._block: tuple | None = None  # (rounds, their rows, the support's actions)

    def _rule(self, rounds: Rounds, t: np.ndarray):
        offered = rounds.offered()
        if self.best is None:
            return offered / offered.sum(axis=1, keepdims=True), None, None
        rows = self.policies.encode(rounds)
        acts = self._actions(rows, offered)
        self._block = (rounds, rows, acts)  # its labels come next: the same rows and actions
        q = self._mix(acts, offered.shape)
        pihat = _argmax(self.policies.scores(rows, self.best), offered)
        q[np.arange(len(q)), pihat] += max(0.0, 1.0 - self.weights.sum())
        return self._smooth(q, offered), None, None

    def _add(self, rounds: Rounds, step: Step, rewards: np.ndarray) -> None:
        offered = rounds.offered()
        rhat = np.zeros(offered.shape)
        rhat[np.arange(len(rewards)), step.actions] = rewards / step.probs
        block, self._block = self._block, None
        if block is not None and block[0] is rounds:
            rows, acts = block[1:]
        else:
            rows = self.policies.encode(rounds)
            acts = self._actions(rows, offered)
        self.policies.add(rounds, rows, step, rewards)
        self.offered = np.concatenate([self.offered, offered])
        self.rhat = np.concatenate([self.rhat, rhat])
        self.q = np.concatenate([self.q, self._mix(acts, offered.shape)])
        self.acts = np.concatenate([self.acts, acts])

    def _rebuild(self) -> None:
        """Epoch start: ``mu``, ``pihat`` = AMO(IPS rewards), then the OP's descent."""
        self.policies.refit(self.offered)
        self.mu = min(1 / (2 * self.k), self.scale * np.sqrt(1 / (self.k * self.n)))
        self.values = _take(self.rhat, self.acts).mean(axis=0)
        self.best, acts = self._amo(self.rhat)
        self.best_value = _take(self.rhat, acts[:, None]).mean()
        if len(self.values) and self.values.max() > self.best_value:
            top = int(np.argmax(self.values))
            self.best, self.best_value = self.thetas[top], self.values[top]
        self._descend()

    def _descend(self) -> None:
        """Algorithm 2 from the warm start: (1) rescale ``Q``; (2) add weight to the policy
        of largest ``D_pi = V_pi - 2K - b_pi`` while it is positive."""
        k, mu = self.k, self.mu
        for _ in range(MAX_ITERATIONS):
            self._shrink()
            inverse = 1.0 / np.where(self.offered, self._smooth(self.q, self.offered), np.inf)
            theta, policy = self._amo(inverse + self.rhat / (PSI * mu))
            acts = np.column_stack([self.acts, policy])
            value = _take(self.rhat, acts[:, -1:]).mean()
            improved = value > self.best_value
            if improved:
                self.best, self.best_value = theta, value
            picked = _take(inverse, acts)
            v = picked.mean(axis=0)
            d = v - 2 * k - (self.best_value - np.append(self.values, value)) / (PSI * mu)
            j = int(np.argmax(d))
            if d[j] > 0:
                alpha = (v[j] + d[j]) / (2 * (1 - k * mu) * (picked[:, j] ** 2).mean())
                self._grow(j, alpha, theta, acts[:, -1], value)
            elif not improved:  # a new pihat changes b: check constraint (1) again
                return
        self.cap_hits += 1
        self._shrink()

    def _shrink(self) -> None:
        """Step (1): scale ``Q`` so that ``sum_pi Q(pi) (2K + b_pi) <= 2K``."""
        b = (self.best_value - self.values) / (PSI * self.mu)
        total = self.weights @ (2 * self.k + b)
        if total > 2 * self.k:
            self.weights *= 2 * self.k / total
            self.q *= 2 * self.k / total

    def _grow(self, j: int, alpha: float, theta, acts: np.ndarray, value: float) -> None:
        """Add ``alpha`` to ``Q`` of support policy ``j`` (``j = len(support)``: ``theta``)."""
        if j == len(self.thetas):
            self.thetas.append(theta)
            self.acts = np.column_stack([self.acts, acts])
            self.weights, self.values = np.append(self.weights, 0.0), np.append(self.values, value)
        self.weights[j] += alpha
        self.q[np.arange(len(self.q)), self.acts[:, j]] += alpha

    def _amo(self, rewards: np.ndarray):
        """The argmax oracle for ``rewards`` (n, K) of every action on the history: the
        policy's parameters and its actions on the history."""
        theta, scores = self.policies.amo(rewards)
        return theta, _argmax(scores, self.offered)

    def _actions(self, rows, offered: np.ndarray) -> np.ndarray:
        """The support's actions ``(n, |support|)`` on rows ``encode``d by the class."""
        columns = [_argmax(self.policies.scores(rows, theta), offered) for theta in self.thetas]
        return np.stack(columns, axis=1) if columns else np.zeros((len(offered), 0), ACTION)

    def _mix(self, acts: np.ndarray, shape: tuple) -> np.ndarray:
        """``Q(a | x)`` from the support's actions."""
        q = np.zeros(shape)
        np.add.at(q, (np.arange(shape[0])[:, None], acts), self.weights)
        return q

    def _smooth(self, q: np.ndarray, offered: np.ndarray) -> np.ndarray:
        """``Q^mu(a | x) = (1 - K mu) Q(a | x) + mu`` on the offered actions."""
        k = offered.sum(axis=1, keepdims=True)
        return (1 - k * self.mu) * q + self.mu * offered


class LinearPolicies:
    """The baselines' linear class: argmax rules ``argmax_a (W phi(x))_a`` over ``design``
    features (one ``theta`` over ``phi(x, a)`` for ranking, zero on the documents not
    offered so that they drop out of the fits). The AMO is a ridge fit (``l2 = 1``) of the
    rewards of every offered action at once (one Gram matrix for all of them)."""

    def __init__(self, n_actions: int, dim: int, adf: bool):
        self.adf = adf
        features = (0, n_actions, dim + 1) if adf else (0, dim + 1)
        self.phi, self.gram = np.zeros(features), np.eye(dim + 1)  # l2 = 1

    def encode(self, rounds: Rounds) -> np.ndarray:
        phi = design(rounds.X)
        return phi * rounds.offered()[..., None] if self.adf else phi

    def history(self, offered: np.ndarray) -> np.ndarray:
        """The history's rows, as :meth:`encode` gives them."""
        return self.phi

    def add(self, rounds: Rounds, phi: np.ndarray, step: Step, rewards: np.ndarray) -> None:
        flat = phi.reshape(-1, phi.shape[-1])
        self.gram += flat.T @ flat
        self.phi = np.concatenate([self.phi, phi])

    def refit(self, offered: np.ndarray) -> None:
        """The class is fixed: nothing to refit."""

    def amo(self, rewards: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Ridge weights fit to ``rewards`` (n, K) and their scores on the history."""
        if self.adf:
            theta = np.linalg.solve(self.gram, np.einsum("nkd,nk->d", self.phi, rewards))
        else:
            theta = np.linalg.solve(self.gram, self.phi.T @ rewards)
        return theta, self.phi @ theta

    def scores(self, phi: np.ndarray, theta: np.ndarray) -> np.ndarray:
        return phi @ theta


class TreePolicies:
    """The paper's GB5 class: argmax rules over gradient-boosted depth-5 trees, 100 of them,
    per action (ranking: one ensemble over the documents' features).

    The trees are grown at a rebuild when the history has doubled since they last were
    (``refit_growth``, as RegCB-GB5's), each model's by :meth:`TreesOracle.fit_ensemble`
    (LightGBM) on the rewards of the rounds that played it, weighted by ``1/p``
    (ε-Greedy-GB5's importance-weighted regression; ranking's one model on the played
    documents). Until the next growth an AMO call keeps the splits and fits only the leaf
    values, to its rewards on every (round, offered action) of the history, by one boosting
    pass: from their mean, each tree in turn sets its leaves to the learning rate times the
    mean residual of their rows, which is what boosting does given the splits (the paper's
    speed-up for RegCB-GB5 re-solves leaf values on fixed splits too). A policy is a
    generation of trees with its leaf values, so the support keeps policies of earlier
    generations (ILTCB's warm start), each played on its own trees.

    Rows are kept as their leaves ``(T, n, K)`` uint8, each a tree's own leaf number
    (:data:`NO_LEAF` for the pairs left out: actions not offered, trees a model lacks), and
    a generation's ``base`` ``(T, K)`` turns leaf ``l`` of tree ``t`` for action ``k`` into
    its column ``base[t, k] + l`` among the generation's ``size`` columns (the last, of
    value 0, for the pairs left out).
    """

    kernels = _trees is not None  # False: the numpy reference (tests compare the two)

    def __init__(self, n_actions: int, dim: int, adf: bool, seed: int):
        from regcb_stream.oracles.trees import TreesOracle

        self.oracle = TreesOracle(seed=seed)
        self.adf, self.k, self.n_fit = adf, n_actions, 0
        width = (0, n_actions, dim + 1) if adf else (0, dim + 1)
        self.X, self.played = np.zeros(width), np.zeros(0, np.intp)
        self.y, self.w = np.zeros(0), np.zeros(0)
        #: per generation: its models' ensembles, ``base`` (T, K) and number of columns
        self.generations: list[tuple[list, np.ndarray, int]] = []
        self.cols = np.zeros((0, 0, n_actions), np.uint8)  # the history's, last generation
        self._counts = None  # pairs per column, per tree, on the history (numpy reference)

    def encode(self, rounds: Rounds) -> Leaves:
        """The rounds' leaves, per generation as a policy asks for them."""
        return Leaves(self, design(rounds.X), rounds.offered())

    def history(self, offered: np.ndarray) -> Leaves:
        """The history's rows, as :meth:`encode` gives them."""
        return Leaves(self, self.X, offered)

    def add(self, rounds: Rounds, leaves: Leaves, step: Step, rewards: np.ndarray) -> None:
        self.X = np.concatenate([self.X, leaves.X])
        self.played = np.r_[self.played, step.actions]
        self.y, self.w = np.r_[self.y, rewards], np.r_[self.w, 1.0 / step.probs]
        if self.generations:
            self.cols = np.concatenate([self.cols, leaves[len(self.generations) - 1]], axis=1)
        self._counts = None

    def refit(self, offered: np.ndarray) -> None:
        """Grow a new generation of trees if the history has doubled since the last."""
        n = len(self.y)
        if self.generations and n < self.oracle.refit_growth * self.n_fit:
            return
        if self.adf:
            rows = self.X[np.arange(n), self.played]
            ensembles = [self.oracle.fit_ensemble(rows, self.y, self.w)] * self.k
            firsts = np.zeros(self.k, np.intp)
            size = ensembles[0].n_columns + 1
        else:
            ensembles = [self.oracle.fit_ensemble(self.X[self.played == a],
                                                  self.y[self.played == a],
                                                  self.w[self.played == a])
                         for a in range(self.k)]
            sizes = [e.n_columns for e in ensembles]
            firsts, size = np.r_[0, np.cumsum(sizes)[:-1]], sum(sizes) + 1
        base = np.zeros((max(len(e.offsets) for e in ensembles), self.k), np.int32)
        for action, (e, first) in enumerate(zip(ensembles, firsts)):
            base[: len(e.offsets), action] = first + e.offsets
        self.generations.append((ensembles, base, size))
        self.n_fit = n
        self.cols = self.leaves(len(self.generations) - 1, self.X, offered)

    def amo(self, rewards: np.ndarray) -> tuple[tuple, np.ndarray]:
        """Leaf values of the last generation fit to ``rewards`` (n, K) by one boosting
        pass, and the scores they give on the history."""
        _, base, size = self.generations[-1]
        if self.adf:
            keep = self.cols[0] != NO_LEAF  # (n, K): the offered pairs
            init = np.full(self.k, rewards[keep].mean() if keep.any() else 0.0)
        else:
            init = rewards.mean(axis=0)
        scores = np.broadcast_to(init, rewards.shape).copy()
        values = np.zeros(size)
        rate, (trees, n, k) = self.oracle.learning_rate, self.cols.shape
        if self.kernels:
            _trees.boost(self.cols, n, k, trees, base, size,
                         np.ascontiguousarray(rewards, dtype=float), rate, scores, values)
            return (len(self.generations) - 1, init, values), scores
        if self._counts is None:
            self._counts = [np.bincount(ids, minlength=size)
                            for ids in _columns(self.cols, base, size)]
        for ids, count in zip(_columns(self.cols, base, size), self._counts):
            step = rate * np.bincount(ids, (rewards - scores).ravel(), size)
            step /= np.maximum(count, 1)
            step[-1] = 0.0
            values += step
            scores += step[ids].reshape(scores.shape)
        return (len(self.generations) - 1, init, values), scores

    def scores(self, leaves: Leaves, theta: tuple) -> np.ndarray:
        """A policy's scores ``(n, K)`` of the rows of ``leaves``, on its generation's trees."""
        generation, init, values = theta
        _, base, size = self.generations[generation]
        cols = leaves[generation]
        out = np.broadcast_to(init, cols.shape[1:]).copy()
        if self.kernels:
            _trees.sum_leaves(cols, cols.shape[1], cols.shape[2], len(cols), base, values,
                              size, out)
            return out
        for ids in _columns(cols, base, size):
            out += values[ids].reshape(out.shape)
        return out

    def leaves(self, generation: int, X: np.ndarray, offered: np.ndarray) -> np.ndarray:
        """The leaves ``(T, n, K)`` of design rows ``X`` (``(n, D)``, or ``(n, K, D)`` for
        ranking) in a generation's trees (:data:`NO_LEAF` for the pairs not offered and the
        trees a model lacks)."""
        ensembles, base, _ = self.generations[generation]
        n = len(offered)
        out = np.full((len(base), n, self.k), NO_LEAF, np.uint8)
        if self.adf:
            e = ensembles[0]
            cols = e.columns(X.reshape(-1, X.shape[-1])).reshape(n, self.k, -1)
            out[: len(e.offsets)] = np.moveaxis(cols - e.offsets, -1, 0)
        else:
            for action, e in enumerate(ensembles):
                out[: len(e.offsets), :, action] = (e.columns(X) - e.offsets).T
        out[:, ~offered] = NO_LEAF
        return out



def _columns(cols: np.ndarray, base: np.ndarray, size: int):
    """Each tree's columns of the pairs, flat (the last column for those left out)."""
    for tree, offset in zip(cols, base):
        yield np.where(tree == NO_LEAF, size - 1, offset + tree.astype(np.intp)).ravel()


class Leaves:
    """Rows' leaves in each generation of a :class:`TreePolicies`, computed when first
    asked for (``leaves[generation]``)."""

    def __init__(self, policies: TreePolicies, X: np.ndarray, offered: np.ndarray):
        self.policies, self.X, self.offered, self._cols = policies, X, offered, {}

    def __getitem__(self, generation: int) -> np.ndarray:
        if generation not in self._cols:
            self._cols[generation] = self.policies.leaves(generation, self.X, self.offered)
        return self._cols[generation]


def _argmax(scores: np.ndarray, offered: np.ndarray) -> np.ndarray:
    """Each row's best offered action (the first of ties)."""
    return np.argmax(np.where(offered, scores, -np.inf), axis=1).astype(ACTION)


def _take(values: np.ndarray, acts: np.ndarray) -> np.ndarray:
    """``values[i, acts[i, j]]``."""
    return np.take_along_axis(values, acts, axis=1)
