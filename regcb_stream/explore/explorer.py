"""The explorer: RegCB's epochs over an oracle, the loss budget, and the decision rule.

It sees its oracle through the `Oracle` interface and the `Capabilities` the oracle states,
and works on feature rows (`regcb_stream.features.rows.Block`): ``decide`` turns a block of
rows into the frozen state's bounds and distributions; ``learn`` teaches the oracle labelled
rows and rebuilds the decision state at the schedule's points (an epoch's end); ``replay``
decides and learns a block in the oracle's compiled online loop. The change test, if any,
is a hook after learning (`regcb_stream.adapt.change`).

>>> from regcb_stream.explore.budget import FixedBudget
>>> from regcb_stream.features.rows import Block, SparseRows
>>> from regcb_stream.oracles.ridge import RidgeOracle
>>> explorer = Explorer(RidgeOracle(), variant="optimistic", ties="clipped",
...                     schedule="online", budget=FixedBudget("beta", 0.01, 1e-3))
>>> rows = SparseRows(None, np.array([[[1.0, 0.0], [1.0, 0.0]]]), dim=2)
>>> explorer.grow(2, 2)
>>> explorer.decide(rows, np.array([0, 1])).pmf.tolist()   # no label yet: uniform
[[0.5, 0.5]]
>>> explorer.learn(Block(rows.take(slice(0, 1)), np.array([0])), np.ones(1), np.ones(1))
>>> explorer.decide(rows, np.array([0, 1])).pmf.tolist(), explorer.n_labels
([[1.0, 0.0]], 1)
"""

from __future__ import annotations

import numpy as np

from regcb_stream import rules
from regcb_stream.adapt.change import KEEP, ChangeDetector
from regcb_stream.explore import schedules
from regcb_stream.explore.decision import Decision
from regcb_stream.features.rows import Block, SparseRows
from regcb_stream.oracles.base import Oracle, example_for, examples_for, rows_for
from regcb_stream.state import Stateful

TIE_TOLERANCE = 1e-12  # bounds closer than this (times the reward span) are ties: rounding
# noise must not decide; float32 oracles (VW's) differ by far more when they differ at all
PIECE_LABELS = 2048  # labels summed per piece in the epoch schedules (`stream.parallel`)


class Explorer(Stateful):
    """Epochs of a frozen decision state over ``oracle``, with a loss ``budget``
    (`regcb_stream.explore.budget`) and the ``variant``'s decision rule.

    Parameters
    ----------
    oracle
        The oracle (the explorer's own: `Oracle.bind` makes one for a learner).
    variant, ties, schedule, warm_start_epochs, horizon, reward_range
        As `RegCB`'s.
    budget
        A `FixedBudget` or an `AutoBudget`.
    change
        The change test run after learning (None: none).
    fits
        Whether ``learn`` returns the fit's prediction of each label before it (model
        selection scores them); the change test asks for them too.
    """

    SAVED = {  # what a model file holds (`regcb_stream.state`)
        "variant": "variant",
        "ties": "ties",
        "schedule": "schedule",
        "budget": "budget",
        "reward_range": "reward_range",
        "tolerance": "tolerance",
        "warm_start_epochs": "warm_start_epochs",
        "n_epochs": "n_epochs",
        "change": "change",
        "fits": "fits",
        "n_labels": "n_labels",
        "n_frozen": "n_frozen",
        "epoch": "epoch",
        "dim": "dim",
        "oracle": "oracle",
        "next_rebuild": "_next_rebuild",
    }  # (the rule, the oracle's capabilities and what the oracle was grown to: derived)
    ADDED = {"ties": "shared"}  # (model files of version 7 written before `ties`)

    def __init__(self, oracle: Oracle, *, variant: str, ties: str, schedule: str, budget,
                 reward_range: tuple[float, float] = (0.0, 1.0), warm_start_epochs: int = 0,
                 horizon: int | None = None, change: ChangeDetector | None = None,
                 fits: bool = False):
        self.variant, self.ties = variant, ties
        self.rule = rules.Rule(variant, ties)
        self.schedule = schedule
        self.budget = budget
        self.reward_range = reward_range
        self.tolerance = TIE_TOLERANCE * (reward_range[1] - reward_range[0])
        self.warm_start_epochs = warm_start_epochs
        self.n_epochs = schedules.epochs_until(schedule, horizon) if horizon else 1
        self.change = change
        self.fits = fits
        self.n_labels = 0  # labels learned
        self.n_frozen = 0  # labels behind the frozen decision state
        self.epoch = 1
        self.dim = 0  # the features the rows have
        self._next_rebuild = schedules.next_rebuild(schedule, 0)
        self._take(oracle)
        self._room: tuple | None = None  # (oracle, models, features) it was last grown to

    def restored(self) -> None:
        self.rule = rules.Rule(self.variant, self.ties)
        self._take(self.oracle)
        self._room = None

    def _take(self, oracle: Oracle) -> None:
        self.oracle, self.capabilities = oracle, oracle.capabilities
        self.piecewise = self.capabilities.pieces and self.schedule != "online"

    # -- state -------------------------------------------------------------------------

    @property
    def labels_until_rebuild(self) -> int:
        """Labels still to learn before the decision state is rebuilt (the epoch's end)."""
        return self._next_rebuild - self.n_labels

    @property
    def one_row(self) -> bool:
        """Whether one dense context's decision or label can take the oracle's one-row
        compiled calls (`RidgeOracle.predict_dense`, ``learn_dense``)."""
        return (self.capabilities.one_row and self.budget.counted
                and self.epoch > self.warm_start_epochs)

    @property
    def compiled_replay(self) -> bool:
        """Whether ``replay`` can run the oracle's compiled online loop now."""
        return (self.capabilities.online_loop and self.schedule == "online"
                and self.budget.compiled(self.capabilities)
                and self.epoch > self.warm_start_epochs)

    @property
    def replay_room(self) -> int:
        """The most labels one ``replay`` call takes: until the change test's next check,
        unless the loop runs the test (`_loop_tests_change`)."""
        return (2**62 if self.change is None or self._loop_tests_change
                else self.change.labels_until_check)

    @property
    def _loop_tests_change(self) -> bool:
        """Whether the compiled loop runs the change test (and stops at its alarms)."""
        return self.capabilities.change_loop and self.budget.selector is None

    def change_exploration(self, variant: str, budget) -> None:
        """Another variant and budget for the decisions to come."""
        self.variant, self.rule = variant, rules.Rule(variant, self.ties)
        self.budget = budget

    def grow(self, n_models: int, dim: int, max_dim: int | None = None) -> None:
        """Room in the oracle for ``n_models`` models of ``dim`` features; an exact ridge
        that would outgrow itself hands its statistics over to the bounded ridge first."""
        self.dim = dim
        room = self._room
        if room is not None and room[0] is self.oracle and n_models <= room[1] \
                and dim <= room[2]:
            return
        if self.capabilities.hands_over and not self.oracle.fits(n_models, dim):
            from regcb_stream.oracles.bounded import BoundedRidgeOracle

            if self.piecewise:
                self.oracle.close_piece()
            self._take(BoundedRidgeOracle.from_ridge(self.oracle, n_models))
        self.oracle.grow(n_models, dim, max_dim)
        self._room = (self.oracle, n_models, dim)

    # -- decisions ---------------------------------------------------------------------

    def decide(self, rows: SparseRows, models: np.ndarray) -> Decision:
        """The frozen state's decisions of rows ``(n, K, L)``."""
        n, k = rows.shape[:2]
        phi = rows_for(self.capabilities.rows, rows)
        if self.n_frozen == 0 or self.epoch <= self.warm_start_epochs:  # F_1 = F
            lo, hi = self.reward_range
            prediction = self.oracle.predict(phi, models)
            pmf = rules.uniform(n, k)
            return Decision(pmf, prediction, np.full((n, k), lo), np.full((n, k), hi),
                            self.budget.uniform(pmf))
        return self.budget.decide(self, phi, models)

    def replay(self, block: Block, played, rewards, probs, weights) -> Decision:
        """A block of rows decided and learned in order in the oracle's compiled online
        loop (``compiled_replay``), up to the ``replay_room``-th label; then the change
        test (or, where the loop runs it, a change it detected: the loop stopped there).
        The decisions are those of the rows done."""
        rows, models = block
        k = rows.shape[1]
        if (played >= k).any():
            raise ValueError(f"played action index {int(played.max())} is not among the "
                             f"{k} offered actions")
        labelled, room = np.flatnonzero(played >= 0), self.replay_room
        if len(labelled) > room:  # (the oracle changed since the caller cut the part)
            part = slice(0, int(labelled[room - 1]) + 1)
            rows, played, rewards, probs, weights = rows.take(part), *(
                x[part] for x in (played, rewards, probs, weights))
        counts = self.n_labels + np.arange(np.count_nonzero(played >= 0) + 1)
        in_loop = self.change is not None and self._loop_tests_change
        changes = self.change.changes if in_loop else 0
        decision = self.budget.replay(self, rows, models, played, rewards, probs, weights,
                                      counts, self.change if in_loop else None)
        played = played[:len(decision.pmf)]
        learned = int(np.count_nonzero(played >= 0))
        self.n_labels += learned
        self._rebuilt(epochs=learned)  # one per label
        labelled = np.flatnonzero(played >= 0)
        if in_loop:
            if self.change.changes != changes:
                self._changed()
        elif self.change is not None and len(labelled):
            self._test_change(rewards[labelled], decision.prediction[labelled,
                                                                     played[labelled]])
        return decision

    # -- learning ----------------------------------------------------------------------

    def learn(self, block: Block, rewards: np.ndarray, weights: np.ndarray,
              fitted: np.ndarray | None = None) -> np.ndarray | None:
        """Teach the oracle labelled rows ``(n, 1, L)``, rebuilding at the schedule's
        points (one row, the ``online`` schedule's case, by `learn_one`); ``fitted``: the
        fit's predictions of one row, if known. Returns the fit's prediction of each row
        before its epoch learned it, when asked for (``fits``, the change test)."""
        rows, models = block
        if len(rewards) == 1:
            return self.learn_one(rows, int(models[0]), float(rewards[0]), float(weights[0]),
                                  fitted)
        x, fits = examples_for(self.capabilities.rows, rows), []
        start = 0
        while start < len(rewards):
            stop = min(len(rewards), start + self._next_rebuild - self.n_labels,
                       start + self.labels_until_piece_end())
            part = slice(start, stop)
            fitted = None if not self._wants_fits else self.fitted(rows.take(part),
                                                                   models[part])
            self.oracle.learn_many(x.take(part) if isinstance(x, SparseRows) else x[part],
                                   models[part], rewards[part], weights[part])
            self._learned(stop - start)
            if fitted is not None and self.change is not None:
                self._test_change(rewards[part], fitted)
            fits.append(fitted)
            start = stop
        return np.concatenate(fits) if self._wants_fits else None

    def learn_one(self, rows: SparseRows, model: int, reward: float, weight: float,
                  fitted: np.ndarray | None = None) -> np.ndarray | None:
        """Teach the oracle one row ``(1, 1, L)``, rebuilding at the schedule's points,
        then the change test (``fitted``: the fit's prediction, if known)."""
        if fitted is None and self._wants_fits:
            fitted = self.fitted(rows, np.array([model]))
        self.oracle.learn(example_for(self.capabilities.rows, rows), model, reward, weight)
        self._learned(1)
        if self.change is not None:
            self._test_change(np.array([reward]), fitted)
        return fitted

    def learn_dense(self, values: np.ndarray, intercept: float, model: int, reward: float,
                    weight: float, scored: tuple | None = None) -> float | None:
        """One dense row's label learned and the state rebuilt in one compiled call
        (``one_row``; ``scored``: as `replace_stand_in`'s); the fit's prediction of it
        before, or None (nothing learned: the general path learns it)."""
        fitted = self.oracle.learn_dense(values, intercept, model, reward, weight)
        if fitted is not None:
            if scored is not None:
                self.score([scored[0]], [scored[1]], [reward])
            self.n_labels += 1
            self._rebuilt()
            if self.change is not None and self.change.observe(reward, fitted):
                self._changed()
        return fitted

    def score(self, candidates, probs, rewards) -> None:
        """Score the candidate budgets with labels (the automatic budget): ``candidates``
        ``(n, J)`` their probabilities of the played actions, ``probs`` the played ones."""
        self.budget.score(candidates, probs, rewards, self.reward_range)

    def fitted(self, rows: SparseRows, models: np.ndarray) -> np.ndarray:
        """The current fit's predictions of labelled rows ``(n, 1, L)``, each under its own
        model (the numbers a decision's ``prediction`` has)."""
        return np.array([self.oracle.predict(rows_for(self.capabilities.rows,
                                                      rows.take(slice(i, i + 1))),
                                             models[i:i + 1])[0, 0]
                         for i in range(len(models))])

    @property
    def _wants_fits(self) -> bool:
        return self.change is not None or self.fits

    def _test_change(self, rewards: np.ndarray, fitted: np.ndarray) -> None:
        """Show the change test labels just learned and their predictions before; keep
        ``KEEP`` of every label's weight when it detects a change."""
        change = self.change
        if (change.observe(float(rewards[0]), float(fitted[0])) if len(rewards) == 1
                else change.observe_many(rewards, fitted)):
            self._changed()

    def _changed(self) -> None:
        self.oracle.shrink(KEEP)
        self.oracle.rebuild()

    def _learned(self, n: int) -> None:
        """Count ``n`` labels just learned: close the oracle's piece at a piece's end,
        rebuild at an epoch's."""
        self.n_labels += n
        if self.n_labels == self._next_rebuild:
            self.rebuild()
        elif self.labels_until_piece_end() == PIECE_LABELS:
            self.oracle.close_piece()

    def rebuild(self) -> None:
        """The decision state rebuilt from every label learned."""
        if self.piecewise:
            self.oracle.close_piece()
        self.oracle.rebuild()
        self._rebuilt()

    def _rebuilt(self, epochs: int = 1) -> None:
        """Bookkeeping of ``epochs`` rebuilds, the last after the labels learned so far."""
        self.n_frozen = self.n_labels
        self.epoch += epochs
        self.budget.freeze()
        self._next_rebuild = schedules.next_rebuild(self.schedule, self.n_labels)

    # -- pieces: the epoch schedules' additive statistics (`regcb_stream.stream.parallel`) --

    def labels_until_piece_end(self, n_labels: int | None = None) -> int:
        """Labels until the open piece closes, after ``n_labels`` (default: those learned):
        epoch schedules with a ridge oracle learn in pieces, closed at every
        ``PIECE_LABELS``-th label and at every rebuild."""
        if not self.piecewise:
            return 2**62
        return PIECE_LABELS - (self.n_labels if n_labels is None else n_labels) % PIECE_LABELS

    def learn_pieces(self, block: Block, rewards, weights, first: int, pieces: list) -> None:
        """Sum labelled rows into pieces without learning them, the first the ``first``-th
        label: each closed piece's statistics appended to ``pieces``, those after the last
        left open."""
        rows, models = block
        x = examples_for(self.capabilities.rows, rows)
        start = 0
        while start < len(models):
            room = self.labels_until_piece_end(first + start)
            stop = min(len(models), start + room)
            part = slice(start, stop)
            self.oracle.learn_many(x.take(part) if isinstance(x, SparseRows) else x[part],
                                   models[part], rewards[part], weights[part])
            if stop - start == room:
                pieces.append(self.oracle.take_piece())
            start = stop

    def absorb(self, pieces: list, n: int) -> None:
        """Learn ``n`` labels by their pieces' statistics, in order (`learn_pieces`); the
        last stays open unless it ends at a piece's end."""
        *whole, last = pieces
        for piece in whole:
            self.oracle.add_piece(*piece)
        self.n_labels += n
        if self.labels_until_piece_end() == PIECE_LABELS or (
                self.n_labels == self._next_rebuild):
            self.oracle.add_piece(*last)
        else:
            self.oracle.open_piece(*last)
        if self.n_labels == self._next_rebuild:
            self.rebuild()

    # -- delayed rewards: labels learned with a stand-in, replaced when they come ---------

    @property
    def can_stand_in(self) -> bool:
        """Whether a label can be learned with a stand-in reward now and replaced exactly
        later (an oracle that relabels, on the ``online`` schedule)."""
        return self.schedule == "online" and self.capabilities.relabel

    def learn_stand_in(self, rows: SparseRows, model: int, value: float) -> tuple:
        """Learn a row with the stand-in reward ``value`` (not a label: ``n_labels`` stays);
        the stand-in's clock (forgetting) and the fit's prediction before it (the change
        test's), to replace it with (`replace_stand_in`)."""
        fitted = None if self.change is None else float(self.fitted(rows, np.array([model]))[0])
        at = self.oracle.clock if self.oracle.forget < 1.0 else None
        self.oracle.learn(example_for(self.capabilities.rows, rows), model, value,
                          stand_in=True)
        self.oracle.rebuild()
        return at, fitted

    def replace_stand_in(self, rows: SparseRows, model: int, value: float, at, fitted,
                         reward: float | None, scored: tuple | None = None) -> None:
        """The reward of a row learned with a stand-in ``value`` (None: none will come,
        the stand-in is unlearned): learned in its place, as a label (``scored``: the
        candidate budgets' probabilities of it and its probability, to score them)."""
        x = example_for(self.capabilities.rows, rows)
        when = {} if at is None else {"at": at}
        if reward is None:
            as_stand_in = {"stand_in": True} if self.capabilities.relabel else {}
            self.oracle.learn(x, model, value, -1.0, **as_stand_in, **when)
            self.oracle.rebuild()
            return
        if self.capabilities.relabel:
            self.oracle.relabel(x, model, value, float(reward), **when)
        else:  # (handed over to the bounded oracle since)
            self.oracle.learn(x, model, value, -1.0, **when)
            self.oracle.learn(x, model, float(reward), **when)
        if scored is not None:
            self.score([scored[0]], [scored[1]], [reward])
        self.n_labels += 1
        self.rebuild()
        if fitted is not None and self.change is not None:
            self._test_change(np.array([float(reward)]), np.array([fitted]))
