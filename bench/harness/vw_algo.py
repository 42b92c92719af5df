"""Vowpal Wabbit's explorers under the protocol, with validation on the holdout.

This wraps :mod:`bench.vw_explorers` (same command lines, example text, cost
``1 - r`` and inverse-CDF sampling of the normalized pmf as ``run_vw``, so a run plays the
same actions as ``run_vw`` with the same seed) and adds what ``run_vw`` lacks: the pmf of the
current model on holdout rows without learning, from ``Workspace.predict`` on examples parsed
once and re-predicted at every checkpoint (prediction does not change VW's state: the tests
check that the training actions equal ``run_vw``'s). Ranking rounds are ADF examples with one
line per offered document (its standardized features, namespace ``a``) and no shared line.
"""

from __future__ import annotations

import numpy as np
import pylibvw
from vowpalwabbit import Workspace

from bench.harness.problems import Rounds
from bench.harness.protocol import Step, sample
from bench.vw_explorers import COST_OFFSETS, EXPLORERS, adf_example_lines, vw_args

__all__ = ["EXPLORERS", "VWAlgorithm"]


class VWAlgorithm:
    """One of VW's ``--cb_explore_adf`` explorers, playing and learning one round at a time.

    Examples are VW's native ones (``pylibvw``), not the ``pyvw.Example`` wrappers: wrapping
    the ~27 lines of a round costs more than VW's own parse and learn, and VW computes the
    same either way.

    Parameters
    ----------
    explorer : str
        A key of :data:`bench.vw_explorers.EXPLORERS`.
    param : float
        Its parameter (mellowness, gamma scale, epsilon, or number of policies).
    n_actions : int
        K.
    seed : int
        VW's ``--random_seed``.
    cost_encoding : {"01", "-10"}
        A reward r as VW's cost ``1 - r`` (the harness's, `bench.vw_explorers.vw_args`) or
        ``-r``.
    """

    def __init__(self, explorer: str, param: float, n_actions: int, seed: int,
                 cost_encoding: str = "01"):
        self.ws = Workspace(vw_args(explorer, param, seed=seed, cost_encoding=cost_encoding))
        self.offset = COST_OFFSETS[cost_encoding]
        self.label_type = self.ws.get_label_type().value
        self.k = n_actions
        self._hold: list | None = None

    def play(self, rounds: Rounds, u: np.ndarray, reveal) -> Step:
        """Decide and learn one round at a time: VW learns after every label."""
        n = len(rounds)
        actions, probs = np.empty(n, np.intp), np.empty(n)
        for i in range(n):
            examples = self._parse(rounds, i)
            pmf = self._pmf(examples)
            action = int(sample(pmf[None], u[i : i + 1])[0])
            prob = float(pmf[action] / pmf.sum())
            cost = self.offset - float(reveal(i, action))
            line = examples[action + (0 if rounds.adf else 1)]
            line.set_label_string(self.ws, f"0:{cost}:{prob}", self.label_type)
            pylibvw.vw.learn_multi(self.ws, examples)
            pylibvw.vw._finish_example_multi_ex(self.ws, examples)
            actions[i], probs[i] = action, prob
        return Step(actions, probs)

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

