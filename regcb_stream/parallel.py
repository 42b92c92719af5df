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
the state costs more than they do. `benchmarks/parallel_replay.py` measures the speed-up
and fits the cost model of `docs/parallel_replay.md`.

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

from collections.abc import Callable

import numpy as np

from regcb_stream import persist
from regcb_stream.learner import PIECE_LABELS

#: epochs with fewer labels than this are replayed by the driver (one task costs ~ms)
MIN_SPREAD = 8 * 1024


def replay(learner, load: Callable, n: int, client=None, tasks: int | None = None,
           min_spread: int = MIN_SPREAD) -> np.ndarray:
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
        A Dask ``distributed.Client`` (`regcb_stream.cluster.connect`); None runs the
        tasks here, one after another.
    tasks
        Parts per epoch (default: the client's workers, 1 without a client).
    min_spread
        Epochs with fewer labels are replayed by the driver.

    Returns
    -------
    np.ndarray
        The distribution of every example, ``(n, K)``, decided before its label.
    """
    _check(learner)
    if tasks is None:
        tasks = len(client.scheduler_info()["workers"]) if client is not None else 1
    run = _runner(client)
    parts, position = [], 0
    while position < n:
        stop = min(n, position + learner.labels_until_rebuild)
        if stop - position < min_spread or (tasks == 1 and client is None) or _mid_epoch(
                learner):
            parts.append(_local(learner, load, position, stop))
        else:
            spans = _spans(learner.n_labels, position, stop, tasks, PIECE_LABELS)
            first = learner.n_labels - position  # label count = position + first
            results = run(persist.dumps(learner, {}), load, spans, first)
            if None in results:  # features or actions the state had not met: here
                parts.append(_local(learner, load, position, stop))
            for pmf, pieces in [] if None in results else results:
                parts.append(pmf)
                learner._absorb(pieces, len(pmf))
        position = stop
    return np.concatenate(parts) if parts else np.zeros((0, 0))


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
                         "spread (replicas serve it in parallel: regcb_stream.replicas)")
    if not getattr(learner._oracle, "piecewise", False):
        raise ValueError(f"parallel replay needs the ridge oracle, not "
                         f"{type(learner._oracle).__name__}")
    if learner.budget_selection is not None:
        raise ValueError("parallel replay needs a fixed budget (the automatic one scores "
                         "the candidates label by label)")


def _mid_epoch(learner) -> bool:
    """Whether labels of the current epoch were learned already (an open piece)."""
    return learner.n_labels != learner._n_frozen


def _local(learner, load, start: int, stop: int) -> np.ndarray:
    """Examples ``start..stop-1`` replayed by the driver."""
    block = load(start, stop)
    _labelled(block[2], start)
    return learner.replay(*block).pmf


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
    """``run(state, load, spans, first)``: each span's ``_task`` result, in order."""
    if client is None:
        return lambda state, load, spans, first: [
            _task(state, load, a, b, first) for a, b in spans]

    def run(state, load, spans, first):
        shared = client.scatter(state, broadcast=True, hash=False)
        futures = [client.submit(_task, shared, load, a, b, first, pure=False)
                   for a, b in spans]
        results = client.gather(futures)
        client.cancel([shared, *futures])
        return results

    return run


def _task(state: bytes, load: Callable, start: int, stop: int, first: int) -> tuple | None:
    """A part of an epoch: its distributions and its labels' pieces (on a worker); None
    if it meets features or actions the epoch's state has not (they would number them
    in another order than one process does)."""
    learner, _ = persist.loads(state)
    block = load(start, stop)
    _labelled(block[2], start)
    weights = block[5] if len(block) > 5 else None
    oracle = learner._oracle
    known = oracle.n_models, oracle.dim
    result = learner._replay_part(*block[:5], weights, first=first + start)
    return result if (oracle.n_models, oracle.dim) == known else None


def _labelled(played, start: int) -> None:
    missing = np.flatnonzero(np.asarray(played) < 0)
    if len(missing):
        raise ValueError(f"example {start + int(missing[0])} has no label: a parallel "
                         "replay needs every example of the log labelled")

