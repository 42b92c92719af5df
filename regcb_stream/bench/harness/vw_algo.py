"""Vowpal Wabbit's explorers under the protocol, with validation on the holdout.

This wraps :mod:`regcb_stream.bench.vw_explorers` (same command lines, example text, cost
``1 - r`` and inverse-CDF sampling of the normalized pmf as ``run_vw``, so a run plays the
same actions as ``run_vw`` with the same seed) and adds what ``run_vw`` lacks: the pmf of the
current model on holdout rows without learning, from ``Workspace.predict`` on examples parsed
once and re-predicted at every checkpoint (prediction does not change VW's state: the tests
check that the training actions equal ``run_vw``'s). Ranking rounds are ADF examples with one
line per offered document (its standardized features, namespace ``a``) and no shared line.
"""

from __future__ import annotations

import itertools

import numpy as np
import pylibvw
from vowpalwabbit import Workspace

from regcb_stream.bench.harness.problems import Rounds
from regcb_stream.bench.harness.protocol import Step, sample
from regcb_stream.bench.vw_explorers import COST_OFFSETS, EXPLORERS, adf_example_lines, vw_args

__all__ = ["EXPLORERS", "VWAlgorithm"]


class VWAlgorithm:
    """One of VW's ``--cb_explore_adf`` explorers, decided and taught one round at a time.

    Examples are VW's native ones (``pylibvw``), not the ``pyvw.Example`` wrappers: wrapping
    the ~27 lines of a round costs more than VW's own parse and learn, and VW computes the
    same either way.

    Parameters
    ----------
    explorer : str
        A key of :data:`regcb_stream.bench.vw_explorers.EXPLORERS`.
    param : float
        Its parameter (mellowness, gamma scale, epsilon, or number of policies).
    n_actions : int
        K.
    seed : int
        VW's ``--random_seed``.
    """

    def __init__(self, explorer: str, param: float, n_actions: int, seed: int):
        self.ws = Workspace(vw_args(explorer, param, seed=seed))
        self.label_type = self.ws.get_label_type().value
        self.k = n_actions
        self._pending: list = []
        self._hold: list | None = None

    def block_size(self) -> int:
        return 1

    def play(self, rounds: Rounds, u: np.ndarray, reveal) -> Step:
        """Decide and learn round by round (what ``decide`` and ``learn`` do, without the
        protocol's per-round arrays)."""
        n = len(rounds)
        actions, probs = np.empty(n, np.intp), np.empty(n)
        for i, ui in enumerate(u.tolist()):
            examples = self._parse(rounds, i)
            pmf = self._pmf(examples)
            action = _draw(pmf.tolist(), ui)
            prob = float(pmf[action] / pmf.sum())
            self._learn(examples, rounds.adf, action, prob, float(reveal(i, action)))
            actions[i], probs[i] = action, prob
        return Step(actions, probs)

    def decide(self, rounds: Rounds, u: np.ndarray) -> Step:
        examples = self._parse(rounds, 0)
        pmf = self._pmf(examples)
        action = sample(pmf[None], u[:1])
        self._pending = examples
        return Step(action, pmf[action] / pmf.sum())

    def learn(self, rounds: Rounds, step: Step, rewards: np.ndarray) -> None:
        self._learn(self._pending, rounds.adf, int(step.actions[0]), float(step.probs[0]),
                    float(rewards[0]))
        self._pending = []

    def _learn(self, examples: list, adf: bool, action: int, prob: float, reward: float):
        """Label the played action's line with cost ``1 - reward``, learn, finish."""
        cost = COST_OFFSETS["01"] - reward
        line = examples[action + (0 if adf else 1)]
        line.set_label_string(self.ws, f"0:{cost}:{prob}", self.label_type)
        pylibvw.vw.learn_multi(self.ws, examples)
        pylibvw.vw._finish_example_multi_ex(self.ws, examples)

    def holdout_pmf(self, rounds: Rounds) -> np.ndarray:
        if self._hold is None:
            self._hold = [self._parse(rounds, i) for i in range(len(rounds))]
        pmf = np.stack([self._pmf(examples) for examples in self._hold])
        return pmf / pmf.sum(axis=1, keepdims=True)

    def close(self) -> None:
        for examples in self._hold or []:
            pylibvw.vw._finish_example_multi_ex(self.ws, examples)
        self.ws.finish()

    def _parse(self, rounds: Rounds, i: int) -> list:
        """VW's native examples of round ``i`` of a block (as ``Workspace.parse``)."""
        return self.ws._parse("\n".join(self._lines(rounds, i)).strip())

    def _pmf(self, examples: list) -> np.ndarray:
        """VW's (unnormalized) pmf, widened to K entries."""
        pylibvw.vw.predict_multi(self.ws, examples)
        probs = np.asarray(examples[0].get_action_scores(), float)
        out = np.zeros(self.k)
        out[: len(probs)] = probs
        return out

    def _lines(self, rounds: Rounds, i: int) -> list[str]:
        """The VW text of round ``i`` of a block."""
        if not rounds.adf:
            return adf_example_lines(rounds.X[i], self.k)
        docs = rounds.X[i][rounds.offered()[i]]
        return ["|a " + " ".join(f"f{j}:{v:.7g}" for j, v in enumerate(doc.tolist()))
                for doc in docs]


def _draw(pmf: list[float], u: float) -> int:
    """:func:`~regcb_stream.bench.harness.protocol.sample` for one row, in Python (the same
    sequential cumulative sums, so the same draw).

    >>> _draw([0.5, 0.5], 0.7), _draw([0.0, 1.0], 0.0)
    (1, 1)
    """
    cdf = list(itertools.accumulate(pmf))
    threshold = u * cdf[-1]
    return min(sum(c <= threshold for c in cdf), len(pmf) - 1)
