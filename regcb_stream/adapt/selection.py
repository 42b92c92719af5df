"""Model selection by prequential loss: the random-features model or the linear one.

``RegCB()`` appends random Fourier features to dense contexts
(`regcb_stream.features.random_features`),
which fit rewards that are not linear in the context far better, but on a short, noisy stream
that a linear model already fits, their extra dimensions are more to explore and more to
estimate. With ``select_model=True`` the learner therefore also learns the linear model (the
same oracle on the contexts as they are) from every label, and decides with whichever of the
two has predicted the labels so far better: follow the leader on the prequential squared
loss, ``sum_s (r_s - f_s(x_s, a_s))^2`` with ``f_s`` each model's fit *before* label ``s``
(Dawid, "Present position and
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
learner. Measured (``bench/experiments/model_selection.py``,
``docs/results/model_selection.md``): its
regret growth on the 200,000-round realizable problem stays low, with the linear model's own
ridge weight, but on the 16 UCI streams it is a little behind the random-features model
alone, which is why it is not the default.

`ModelSelection` is a learner over the two models (as coba's ``CorralLearner`` is a
learner over learners): each decision by the leader, each label learned by both, their fits
scored by `Losses`.

>>> losses = Losses()
>>> losses.observe(1.0, 0.2, 0.9)   # reward, random-features fit, linear fit
>>> losses.linear_leads, losses.summary()["leader"]
(True, 'linear')
"""

from __future__ import annotations

import numpy as np

from regcb_stream.explore.decision import Decision
from regcb_stream.state import Stateful
from regcb_stream.stream.replay import replay

MODELS = ("random features", "linear")


class Losses(Stateful):
    """Each model's prequential squared loss over the labels learned, and the leader."""

    SAVED = {  # what a model file holds (`regcb_stream.state`)
        "losses": "losses",
        "labels": "labels",
    }

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

    def summary(self) -> dict:
        """The leader, each model's prequential loss and the labels scored."""
        return {"leader": MODELS[self.linear_leads], "labels": self.labels,
                "losses": dict(zip(MODELS, self.losses))}


class ModelSelection(Stateful):
    """The random-features model and the linear model (`regcb_stream.model.Model`), the
    one with the smaller prequential loss deciding. Once the first example shows that the
    random features do not apply (dict contexts, actions given as feature dicts), the two
    models are one: the linear model goes, and its place is the random-features model's."""

    SAVED = {  # what a model file holds (`regcb_stream.state`)
        "features": "features",
        "linear": "linear",
        "losses": "losses",
    }

    def __init__(self, features, linear):
        self.features, self.linear = features, linear
        self.losses: Losses | None = Losses()

    @property
    def main(self):
        return self.features

    @property
    def models(self) -> list:
        return [self.features, self.linear] if self._selecting() else [self.features]

    def _selecting(self) -> bool:
        """Whether the linear model learns beside the random-features one (see the class
        docstring)."""
        if self.linear is not None and self.features.model_class not in (
                None, "random features"):
            self.alone()
        return self.linear is not None

    def leader(self) -> int:
        """1 if the linear model decides, else 0."""
        return int(self.losses is not None and self.losses.linear_leads)

    def _leader(self):
        return self.linear if self.leader() else self.features

    def alone(self):
        """The random-features model alone from now on (delayed rewards learn with it)."""
        self.linear = self.losses = None
        self.features.want_fits(False)
        return self.features

    def selection_state(self) -> dict | None:
        return None if self.losses is None else self.losses.summary()

    def observe(self, rewards, *fits) -> None:
        if len(fits) > 1:
            self.losses.observe_many(rewards, *fits)

    def change_exploration(self, variant: str, budget: dict | None) -> None:
        """Both models' variant and budget; a budget chosen online ends the selection
        (it needs a fixed budget)."""
        self.features.change_exploration(variant, budget)
        if self.linear is not None:
            if self.features.explorer.budget.selector is None and (
                    self.features.explorer.budget.counted):
                self.linear.change_exploration(variant, budget)
            else:
                self.alone()

    def decide(self, context, actions):
        return self._leader().decide(context, actions)

    def pmf(self, context, actions):
        return self._leader().pmf(context, actions)

    def decide_many(self, contexts, actions):
        return self._leader().decide_many(contexts, actions)

    def draw(self, context, actions, rng):
        return self._leader().draw(context, actions, rng)

    def learn(self, context, action, reward, prob, weight, candidates=None):
        fitted = self.features.learn(context, action, reward, prob, weight, candidates)
        if self._selecting():
            self.losses.observe(float(reward), fitted, self.linear.learn(
                context, action, reward, prob, weight, None), float(weight))
        return fitted

    def learn_many(self, contexts, actions, rewards, probs, weights, candidates=None):
        fitted = self.features.learn_many(contexts, actions, rewards, probs, weights,
                                          candidates)
        if self._selecting():
            self.losses.observe_many(rewards, fitted, self.linear.learn_many(
                contexts, actions, rewards, probs, weights, None), weights)
        return fitted

    def replay(self, contexts, actions, played, rewards, probs, weights) -> Decision:
        """Each model's replay, each row decided by the model that led before it."""
        decision = replay(self.features, contexts, actions, played, rewards, probs, weights)
        if not self._selecting():
            return decision
        linear = replay(self.linear, contexts, actions, played, rewards, probs, weights)
        rows = np.flatnonzero(played >= 0)  # each row decided by the leader before it
        before = self.losses.observe_many(rewards[rows], *(
            d.prediction[rows, played[rows]] for d in (decision, linear)), weights[rows])
        leads = np.append(before, self.losses.linear_leads)[
            np.searchsorted(rows, np.arange(len(played)))][:, None]
        return Decision(*(np.where(leads, getattr(linear, part), getattr(decision, part))
                          for part in ("pmf", "prediction", "low", "high")))
