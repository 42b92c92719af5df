"""Peers from other libraries under the protocol: River's ``bandit.LinUCBDisjoint``.

LinUCB (disjoint) keeps a Bayesian linear regression per arm (River's
``BayesianLinearRegression`` with prior precision ``alpha`` and noise precision ``beta``) and
pulls the arm of largest ``mean + predictive std``; ties are broken by River's own seeded
generator, so its pulls are deterministic given the seed and the protocol's uniforms go
unused. It has no per-document features, so it runs on the UCI streams only.
"""

from __future__ import annotations

import numpy as np

from bench.harness.problems import Rounds
from bench.harness.protocol import Step


class LinUCBAlgorithm:
    """``river.bandit.LinUCBDisjoint(alpha=alpha, seed=seed)``, its other parameters at
    their defaults (``alpha=1`` is its default)."""

    def __init__(self, alpha: float, n_actions: int, seed: int):
        from river import bandit

        self.policy = bandit.LinUCBDisjoint(alpha=alpha, seed=seed)
        self.arms = list(range(n_actions))

    def play(self, rounds: Rounds, u: np.ndarray, reveal) -> Step:
        """Pull and update one round at a time, as River's policies learn."""
        if rounds.adf:
            raise ValueError("LinUCBDisjoint has no per-document features (UCI streams only)")
        actions = np.empty(len(rounds), np.intp)
        for i, x in enumerate(rounds.X):
            context = _context(x)
            actions[i] = self.policy.pull(self.arms, context=context)
            self.policy.update(int(actions[i]), context, float(reveal(i, int(actions[i]))))
        return Step(actions, np.ones(len(rounds)))

    def holdout_pmf(self, rounds: Rounds) -> np.ndarray:
        """The arm each holdout context would pull (the first of tied ones), as a one-hot
        distribution; the policy's generator is not touched."""
        pmf = np.zeros(rounds.R.shape)
        models = [self.policy._bayes_lin_regs[a] for a in self.arms]
        for i, x in enumerate(rounds.X):
            context = _context(x)
            upper = [d.mu + d.sigma for d in (m.predict_one(context, with_dist=True)
                                              for m in models)]
            pmf[i, int(np.argmax(upper))] = 1.0
        return pmf


def _context(x: np.ndarray) -> dict:
    return {f"f{j}": v for j, v in enumerate(x.tolist())}
