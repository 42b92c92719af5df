"""Epoch-synchronous data-parallel replay of a labelled log, identical to one process.

Within an epoch of the ``sqrt2`` and ``doubling`` schedules the decision state is frozen,
so an epoch's examples can be decided anywhere: each task loads its part of the log,
decides it with the epoch's state (the learner's model-file bytes, `persist.dumps`) and
returns the distributions and the additive statistics of its labels (the ridge oracle's
``A`` and ``b`` per action). The driver adds the statistics in the log's order and
rebuilds at the epoch's end.

Results are bitwise identical to ``learner.replay`` in one process, for any number of
workers, because nothing depends on where a number was computed:

- a ridge learner on an epoch schedule sums its labels in *pieces*: every
  ``PIECE_LABELS`` labels (counted over the whole stream) and at every rebuild it
  adds the piece's sum, taken from zero in the log's order, to its statistics. A task's
  part starts and ends at piece ends, so each piece is summed in one place, by the same
  code, and the driver adds the pieces in the one-process order;
- the distributions are computed row by row by the compiled kernels from the frozen
  state, whatever the block;
- the replay of a log draws nothing (the distributions are the output);
- features and actions are numbered as they are met: a part that meets one the epoch's
  state has not is replayed by the driver instead.

Short epochs (fewer than ``min_spread`` labels) are replayed by the driver itself: shipping
the state costs more than they do. `bench/experiments/parallel_replay.py` measures the speed-up
and fits the cost model of `docs/results/parallel_replay.md`.

Every example of the log must carry a label (a labelled log: the label count is then the
position in the log, so the piece ends are known before the examples are read).

>>> import numpy as np
>>> from regcb_stream import RegCB
>>> X = np.random.default_rng(0).normal(size=(3000, 4))
>>> logged = (X[:, 0] > 0).astype(int)
>>> def load(start, stop):
...     return X[start:stop], ["a", "b"], logged[start:stop], np.ones(stop - start), None
>>> one, two = RegCB(schedule="doubling"), RegCB(schedule="doubling")
>>> serial = one.replay(*load(0, 3000)).pmf
>>> spread = replay(two, load, 3000, tasks=3, min_spread=1)
>>> bool((spread == serial).all()), persist.dumps(one, {}) == persist.dumps(two, {})
(True, True)
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable

import numpy as np

from regcb_stream import persist
from regcb_stream.explore.explorer import PIECE_LABELS
from regcb_stream.stream.replay import played_actions

#: epochs with fewer labels than this are replayed by the driver (one task costs ~ms)
MIN_SPREAD = 8 * 1024


def replay(learner, load: Callable, n: int, client=None, tasks: int | None = None,
           min_spread: int | None = None, trace: list | None = None) -> np.ndarray:
    """Replay the ``n`` examples of a labelled log: the same distributions and final
    state as ``learner.replay(*load(0, n))`` in one process.

    Parameters
    ----------
    learner
        A ``RegCB`` with the ridge oracle on the ``sqrt2`` or ``doubling`` schedule and a
        fixed budget; it learns the log (its state afterwards is the one-process state).
    load
        ``load(start, stop)``: the log's examples ``start..stop-1`` as ``replay`` takes
        them, ``(contexts, actions, played, rewards, probs)`` and optionally ``weights``,
        every ``played`` at least 0. Runs where the tasks run (on a cluster: a function
        the workers can import, reading storage they can reach).
    client
        A Dask ``distributed.Client`` (`regcb_stream.stream.cluster.connect`); None runs the
        tasks here, one after another.
    tasks
        Parts per epoch (default: the client's workers, 1 without a client).
    min_spread
        Epochs with fewer labels are replayed by the driver (default ``MIN_SPREAD``).
    trace
        A list to append each epoch's ``(labels, parts, state bytes, seconds, the parts'
        seconds)`` to (``parts`` 0: replayed by the driver), for the cost model.

    Returns
    -------
    np.ndarray
        The distribution of every example, ``(n, K)``, decided before its label.
    """
    out = _Output(n)
    run_epochs(learner, n, _ArrayParts(load, out), client, tasks, min_spread, trace)
    return out.array


def run_epochs(learner, n: int, parts, client=None, tasks: int | None = None,
               min_spread: int | None = None, trace: list | None = None) -> None:
    """The epoch loop of `replay` for any log of ``n`` labelled examples, its ``parts``:
    ``parts.local(learner, start, stop)`` replays examples ``start..stop-1`` here;
    ``parts.task(state, first, *parts.where(start, stop))`` (a function the workers can
    run) replays them with the learner the model-file bytes ``state`` hold, its first
    label the ``first``-th, and returns ``(payload, pieces, seconds)``, or None when it
    met features or actions the state had not; ``parts.take(start, stop, payload)`` takes
    a payload in the log's order, before its pieces are learned."""
    _check(learner)
    min_spread = MIN_SPREAD if min_spread is None else min_spread
    if tasks is None:
        tasks = len(client.scheduler_info()["workers"]) if client is not None else 1
    run, position = _runner(client), 0
    while position < n:
        began, stop = time.perf_counter(), min(n, position + learner.labels_until_rebuild)
        spans, state, busy = [], b"", []
        if not (stop - position < min_spread or (tasks == 1 and client is None)
                or _mid_epoch(learner) or not _piecewise(learner)):
            spans = _spans(learner.n_labels, position, stop, tasks, PIECE_LABELS)
            state = persist.dumps(learner, {})
            first = learner.n_labels - position  # label count = position + first
            results = run(state, parts.task, [(first + a, *parts.where(a, b))
                                              for a, b in spans])
            if None in results:  # features or actions the state had not met: here
                spans = []
            for (start, end), (payload, pieces, seconds) in zip(spans, results if spans
                                                                 else []):
                parts.take(start, end, payload)
                learner.model.explorer.absorb(pieces, end - start)
                busy.append(seconds)
        if not spans:
            parts.local(learner, position, stop)
        if trace is not None:
            trace.append((stop - position, len(spans), len(state),
                          time.perf_counter() - began, busy))
        position = stop


class _ArrayParts:
    """`replay`'s parts: examples from ``load``, distributions into ``out``."""

    def __init__(self, load: Callable, out: _Output):
        self.load, self.out = load, out
        self.task = functools.partial(_array_task, load)

    def local(self, learner, start: int, stop: int) -> None:
        block = self.load(start, stop)
        _labelled(block[2], start)
        self.out.put(start, learner.replay(*block).pmf)

    def where(self, start: int, stop: int) -> tuple:
        return start, stop

    def take(self, start: int, stop: int, packed: tuple) -> None:
        self.out.unpack(start, *packed)


class _Output:
    """The distributions of ``n`` examples, filled in as the epochs are replayed."""

    def __init__(self, n: int):
        self.n, self.array = n, np.zeros((n, 0))

    def put(self, start: int, pmf: np.ndarray) -> None:
        if self.array.shape[1] != pmf.shape[1]:
            if start:
                raise ValueError(f"example {start}: {pmf.shape[1]} actions, the examples "
                                 f"before it had {self.array.shape[1]}")
            self.array = np.empty((self.n, pmf.shape[1]))
        self.array[start:start + len(pmf)] = pmf

    def unpack(self, start: int, shape: tuple, flat: np.ndarray, values: np.ndarray):
        """A part's `_packed` distributions, from example ``start`` on."""
        rows = self.array[start:start + shape[0]]
        if rows.shape != shape:
            return self.put(start, _unpacked(shape, flat, values))
        rows[...] = 0.0
        rows.reshape(-1)[flat] = values


class ArrayLog:
    """A labelled log in arrays, read by slices: ``load`` for `replay` (pickled whole into
    each task: for logs that fit in memory).

    >>> log = ArrayLog(np.eye(3), ["a", "b"], [0, 1, 0], [1.0, 0.0, 1.0])
    >>> log(1, 3)[2:4]
    (array([1, 0]), array([0., 1.]))
    """

    def __init__(self, contexts, actions, played, rewards, probs=None):
        self.contexts, self.actions = contexts, actions
        self.played, self.rewards = np.asarray(played), np.asarray(rewards, float)
        self.probs = None if probs is None else np.asarray(probs, float)

    def __len__(self) -> int:
        return len(self.played)

    def __call__(self, start: int, stop: int) -> tuple:
        block = slice(start, stop)
        return (self.contexts[block], self.actions, self.played[block], self.rewards[block],
                None if self.probs is None else self.probs[block])


class NpyLog(ArrayLog):
    """A labelled log of dense contexts kept as ``.npy`` files in a directory (shared
    storage the workers reach), memory-mapped where it is read: a task reads its slice
    only. `NpyLog.write` makes one.
    """

    FILES = ("contexts", "played", "rewards", "probs")

    def __init__(self, directory, actions):
        self.directory, self.actions = str(directory), list(actions)
        self._arrays = None

    @classmethod
    def write(cls, directory, contexts, actions, played, rewards, probs) -> NpyLog:
        """Store a log in ``directory`` (made if missing)."""
        import pathlib

        path = pathlib.Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        for name, array in zip(cls.FILES, (contexts, played, rewards, probs)):
            np.save(path / f"{name}.npy", np.asarray(array))
        return cls(path, actions)

    def __getstate__(self) -> dict:
        return {"directory": self.directory, "actions": self.actions, "_arrays": None}

    def __getattr__(self, name: str):
        if name not in self.FILES:
            raise AttributeError(name)
        if self.__dict__.get("_arrays") is None:
            self._arrays = {f: np.load(f"{self.directory}/{f}.npy", mmap_mode="r")
                            for f in self.FILES}
        return self._arrays[name]

    def __call__(self, start: int, stop: int) -> tuple:
        block = slice(start, stop)
        return (np.asarray(self.contexts[block]), self.actions, np.asarray(self.played[block]),
                np.asarray(self.rewards[block]), np.asarray(self.probs[block]))


def _check(learner) -> None:
    if learner.schedule == "online":
        raise ValueError("the online schedule rebuilds after every label: no epoch to "
                         "spread (replicas serve it in parallel: regcb_stream.stream.replicas)")
    if not _piecewise(learner):
        raise ValueError(f"parallel replay needs the ridge oracle, not "
                         f"{type(learner.model.explorer.oracle).__name__}")
    if learner.budget_selection is not None:
        raise ValueError("parallel replay needs a fixed budget (the automatic one scores "
                         "the candidates label by label)")


def _piecewise(learner) -> bool:
    """Whether the learner's oracle learns in pieces (exact ridge; once it hands over to
    the bounded ridge, the epochs that follow are replayed by the driver)."""
    return learner.model.explorer.piecewise


def _mid_epoch(learner) -> bool:
    """Whether labels of the current epoch were learned already (an open piece)."""
    return learner.n_labels != learner.model.explorer.n_frozen


def _spans(n_labels: int, start: int, stop: int, tasks: int, piece: int) -> list[tuple]:
    """``[start, stop)`` cut into at most ``tasks`` spans of nearly equal size, every cut
    at a piece end (``n_labels`` labels learned at ``start``)."""
    ends = np.arange(piece - n_labels % piece, stop - start, piece) + start
    if not len(ends):
        return [(start, stop)]
    goal = start + (stop - start) * np.arange(1, tasks) / tasks
    cuts = np.unique(ends[np.abs(ends[:, None] - goal).argmin(axis=0)])
    bounds = [start, *cuts.tolist(), stop]
    return [(a, b) for a, b in zip(bounds, bounds[1:]) if b > a]


def _runner(client) -> Callable:
    """``run(state, task, arguments)``: ``task(state, *each)`` for each of ``arguments``,
    the results in order."""
    if client is None:
        return lambda state, task, arguments: [task(state, *each) for each in arguments]

    held: list = []

    def run(state, task, arguments):
        futures = [client.submit(task, state, *each, pure=False) for each in arguments]
        held[:] = futures  # the last epoch's released after this one is submitted: the
        return client.gather(futures, direct=True)  # client batches its messages 10 ms
        # apart, and a release sent just before would hold back the submission

    return run


def _array_task(load: Callable, state: bytes, first: int, start: int, stop: int
                ) -> tuple | None:
    """A part of an epoch of a `replay` (on a worker): its distributions (`_packed`)."""
    block = load(start, stop)
    _labelled(block[2], start)
    weights = block[5] if len(block) > 5 else None
    return run_part(state, lambda learner, pieces: _packed(
        replay_part(learner, *block[:5], weights, first, pieces).pmf))


def replay_part(learner, contexts, actions, played, rewards, probs, weights, first: int,
                pieces: list):
    """Part of one epoch of a logged block, every context labelled, its first label the
    ``first``-th: the decisions of the frozen state, and the statistics of the labels
    appended to ``pieces`` at each piece's end (`RidgeOracle.take_piece`); those after the
    last stay open. The learner itself learns nothing."""
    played, rewards, probs, weights = learner.checked_log(played, rewards, probs, weights)
    if (played < 0).any():
        raise ValueError("no label: a parallel replay needs every example labelled")
    decision = learner.decide_many(contexts, actions)
    model = learner.model
    block = model.labels(contexts, played_actions(actions, np.arange(len(played)), played))
    model.explorer.learn_pieces(block, rewards, weights, first, pieces)
    return decision


def run_part(state: bytes, replay: Callable) -> tuple | None:
    """A part of an epoch on a worker: ``replay(learner, pieces)`` with the learner the
    model-file bytes ``state`` hold, its labels' pieces appended to ``pieces``; its
    ``(payload, pieces, seconds)``, or None if the part met features or actions the
    state had not (a part that numbers a new one would number it in another order than
    one process does)."""
    began = time.perf_counter()
    learner, _ = persist.loads(state)
    oracle, pieces = learner.model.explorer.oracle, []
    known = oracle.n_models, oracle.dim
    payload = replay(learner, pieces)
    if (oracle.n_models, oracle.dim) != known:
        return None
    pieces.append(oracle.take_piece())  # the labels after the last piece's end
    return payload, pieces, time.perf_counter() - began


def _packed(pmf: np.ndarray) -> tuple:
    """Distributions as their shape and non-zero entries (exact; most are 0: the rules
    put the mass on the few plausible actions), a tenth of the bytes to send."""
    flat = np.flatnonzero(pmf.view(np.int64))  # (bits: -0.0 too)
    return pmf.shape, flat.astype(np.int64 if pmf.size > 2**31 else np.int32), pmf.flat[flat]


def _unpacked(shape: tuple, flat: np.ndarray, values: np.ndarray) -> np.ndarray:
    pmf = np.zeros(shape)
    pmf.flat[flat] = values
    return pmf


def _labelled(played, start: int) -> None:
    missing = np.flatnonzero(np.asarray(played) < 0)
    if len(missing):
        raise ValueError(f"example {start + int(missing[0])} has no label: a parallel "
                         "replay needs every example of the log labelled")

