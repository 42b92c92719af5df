"""Model selection by prequential loss: the random-features model or the linear one.

``RegCB()`` appends random Fourier features to dense contexts (`regcb_stream.features.random_features`),
which fit rewards that are not linear in the context far better, but on a short, noisy stream
that a linear model already fits, their extra dimensions are more to explore and more to
estimate. With ``select_model=True`` the learner therefore also learns the linear model (the
same oracle on the contexts as they are) from every label, and decides with whichever of the
two has predicted the labels so far better: follow the leader on the prequential squared
loss, ``sum_s (r_s - f_s(x_s, a_s))^2`` with ``f_s`` each model's fit *before* label ``s`` (Dawid, "Present position and
potential developments: the prequential approach", JRSS A 1984), each label weighted as the
regression weighs it. Both models learn the same labels, so each loss is measured on the same
rounds, and only on rewards already revealed; the random-features model leads at a tie
(before any label).

What it does and does not guarantee: a model whose cumulative loss falls behind by a margin
that grows with the stream loses the lead for good; on the realizable linear problem the
linear model takes over (``tests/test_selection.py``). A better prediction of the played
actions' rewards is not a better decision everywhere (the loss counts only the actions
played; a model's exploration is not scored), and a switch of leader changes the plausible
set at once: the regret bound of each model's RegCB is not carried over to the switching
learner. Measured (``benchmarks/model_selection.py``, ``docs/model_selection.md``): its
regret growth on the 200,000-round realizable problem stays low, with the linear model's own
ridge weight, but on the 16 UCI streams it is a little behind the random-features model
alone, which is why it is not the default.

>>> selection = ModelSelection()
>>> selection.observe(1.0, 0.2, 0.9)   # reward, random-features fit, linear fit
>>> selection.linear_leads, selection.state()["leader"]
(True, 'linear')
"""

from __future__ import annotations

import numpy as np

MODELS = ("random features", "linear")


class ModelSelection:
    """Each model's prequential squared loss over the labels learned, and the leader."""

    def __init__(self):
        self.losses = [0.0, 0.0]  # random features, linear
        self.labels = 0

    @property
    def linear_leads(self) -> bool:
        """Whether the linear model has the smaller loss (ties: the random features)."""
        return self.losses[1] < self.losses[0]

    def observe(self, reward: float, features_fit: float, linear_fit: float,
                weight: float = 1.0) -> None:
        """Score one label: its reward, each model's prediction before learning it, and its
        weight in the regression."""
        self.losses[0] += weight * (reward - features_fit) ** 2
        self.losses[1] += weight * (reward - linear_fit) ** 2
        self.labels += 1

    def observe_many(self, rewards, features_fits, linear_fits, weights=None) -> np.ndarray:
        """Score labels in order; return the leader *before* each (True: linear), as the
        rounds' decisions would have followed it."""
        rewards = np.asarray(rewards, dtype=float)
        weights = np.ones(len(rewards)) if weights is None else np.asarray(weights, float)
        before = np.empty(len(rewards), dtype=bool)
        for i, label in enumerate(zip(rewards.tolist(), np.asarray(features_fits, float)
                                      .tolist(), np.asarray(linear_fits, float).tolist(),
                                      weights.tolist())):
            before[i] = self.linear_leads
            self.observe(*label)
        return before

    def state(self) -> dict:
        """The leader, each model's prequential loss and the labels scored."""
        return {"leader": MODELS[self.linear_leads], "labels": self.labels,
                "losses": dict(zip(MODELS, self.losses))}
