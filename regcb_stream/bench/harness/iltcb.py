"""ILTCB ("ILOVETOCONBANDITS", Agarwal et al. 2014) with the baselines' ridge oracle.

Policies are the argmax rules of the baselines' linear class, ``pi_W(x) = argmax_a
(W phi(x))_a`` over the offered actions (one model over ``phi(x, a)`` for ranking). The argmax
oracle (AMO) for rewards ``c(x_i, a)`` on the history is the regression reduction: a ridge
fit (``l2 = 1``) of ``c`` on every offered action at once (one Gram matrix for all of them),
then its argmax rule.

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

from regcb_stream.bench.harness.baselines import _Epochs
from regcb_stream.bench.harness.linear import design
from regcb_stream.bench.harness.problems import Rounds
from regcb_stream.bench.harness.protocol import Step

PSI = 100.0  # the paper's psi
MAX_ITERATIONS = 30  # coordinate-descent steps (AMO calls) per epoch at most
ACTION = np.int16  # dtype of the support's actions on the history (n x |support|)


class ILTCB(_Epochs):
    """ILTCB (Agarwal et al. 2014, Algorithms 1 and 2) over ridge argmax policies.

    Parameters
    ----------
    scale : float
        ``c`` in ``mu = min(1/(2K), c sqrt(1/(K tau)))``.
    n_actions, dim, adf, seed
        As for the other baselines (``seed`` is unused: the distributions are deterministic
        and the protocol's uniforms draw the actions).

    Attributes
    ----------
    thetas : list of np.ndarray
        The support's policies (ridge weights ``(D, K)``, or ``(D,)`` for ranking).
    weights : np.ndarray
        ``Q`` on the support.
    best : np.ndarray or None
        ``pihat``'s weights (None before the first epoch, which plays uniformly).
    mu : float
        The smoothing of the current epoch.
    cap_hits : int
        Epochs whose descent stopped at :data:`MAX_ITERATIONS`.

    References
    ----------
    [^1]: Agarwal, Hsu, Kale, Langford, Li, Schapire. "Taming the Monster: A Fast and Simple
        Algorithm for Contextual Bandits." ICML 2014.
    """

    def __init__(self, scale: float, n_actions: int, dim: int, adf: bool, seed: int):
        super().__init__()
        self.scale, self.k, self.adf = scale, n_actions, adf
        features = (0, n_actions, dim + 1) if adf else (0, dim + 1)
        self.phi, self.gram = np.zeros(features), np.eye(dim + 1)  # l2 = 1
        self.offered, self.rhat = np.zeros((0, n_actions), bool), np.zeros((0, n_actions))
        self.q = np.zeros((0, n_actions))  # Q(a | x_i) on the history
        self.acts = np.zeros((0, 0), ACTION)  # the support's actions on the history
        # the support: policies, Q(pi) and IPS rewards Rhat(pi) on the history
        self.thetas, self.weights, self.values = [], np.zeros(0), np.zeros(0)
        self.best, self.best_value, self.mu, self.cap_hits = None, -np.inf, 0.0, 0

    def _rule(self, rounds: Rounds, t: np.ndarray):
        offered = rounds.offered()
        if self.best is None:
            return offered / offered.sum(axis=1, keepdims=True), None, None
        phi = self._features(rounds)
        q = self._mix(self._actions(phi, offered), offered.shape)
        pihat = _argmax(phi @ self.best, offered)
        q[np.arange(len(q)), pihat] += max(0.0, 1.0 - self.weights.sum())
        return self._smooth(q, offered), None, None

    def _add(self, rounds: Rounds, step: Step, rewards: np.ndarray) -> None:
        phi, offered = self._features(rounds), rounds.offered()
        rhat = np.zeros(offered.shape)
        rhat[np.arange(len(rewards)), step.actions] = rewards / step.probs
        acts = self._actions(phi, offered)
        flat = phi.reshape(-1, phi.shape[-1])
        self.gram += flat.T @ flat
        self.phi = np.concatenate([self.phi, phi])
        self.offered = np.concatenate([self.offered, offered])
        self.rhat = np.concatenate([self.rhat, rhat])
        self.q = np.concatenate([self.q, self._mix(acts, offered.shape)])
        self.acts = np.concatenate([self.acts, acts])

    def _rebuild(self) -> None:
        """Epoch start: ``mu``, ``pihat`` = AMO(IPS rewards), then the OP's descent."""
        self.mu = min(1 / (2 * self.k), self.scale * np.sqrt(1 / (self.k * self.n)))
        self.values = _take(self.rhat, self.acts).mean(axis=0)
        self.best = self._amo(self.rhat)
        self.best_value = _take(self.rhat, self._policy(self.best)[:, None]).mean()
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
            theta = self._amo(inverse + self.rhat / (PSI * mu))
            acts = np.column_stack([self.acts, self._policy(theta)])
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

    def _amo(self, rewards: np.ndarray) -> np.ndarray:
        """The argmax oracle: ridge weights fit to ``rewards`` (n, K) of every action."""
        if self.adf:
            return np.linalg.solve(self.gram, np.einsum("nkd,nk->d", self.phi, rewards))
        return np.linalg.solve(self.gram, self.phi.T @ rewards)

    def _policy(self, theta: np.ndarray) -> np.ndarray:
        """A policy's actions on the history."""
        return _argmax(self.phi @ theta, self.offered)

    def _actions(self, phi: np.ndarray, offered: np.ndarray) -> np.ndarray:
        """The support's actions ``(n, |support|)`` on features ``phi``."""
        columns = [_argmax(phi @ theta, offered) for theta in self.thetas]
        return np.stack(columns, axis=1) if columns else np.zeros((len(phi), 0), ACTION)

    def _mix(self, acts: np.ndarray, shape: tuple) -> np.ndarray:
        """``Q(a | x)`` from the support's actions."""
        q = np.zeros(shape)
        np.add.at(q, (np.arange(shape[0])[:, None], acts), self.weights)
        return q

    def _smooth(self, q: np.ndarray, offered: np.ndarray) -> np.ndarray:
        """``Q^mu(a | x) = (1 - K mu) Q(a | x) + mu`` on the offered actions."""
        k = offered.sum(axis=1, keepdims=True)
        return (1 - k * self.mu) * q + self.mu * offered

    def _features(self, rounds: Rounds) -> np.ndarray:
        """``design`` features; for ranking, zero on the actions not offered (so they drop
        out of the fits)."""
        phi = design(rounds.X)
        return phi * rounds.offered()[..., None] if self.adf else phi


def _argmax(scores: np.ndarray, offered: np.ndarray) -> np.ndarray:
    """Each row's best offered action (the first of ties)."""
    return np.argmax(np.where(offered, scores, -np.inf), axis=1).astype(ACTION)


def _take(values: np.ndarray, acts: np.ndarray) -> np.ndarray:
    """``values[i, acts[i, j]]``."""
    return np.take_along_axis(values, acts, axis=1)
