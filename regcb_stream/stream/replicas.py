"""The ``online`` schedule served by replicas: one learner trains, copies of it decide.

The ``online`` schedule rebuilds the decision state after every label, so it cannot be
epoch-synchronous: there is no epoch to hand out to several workers. What can run in
parallel is serving. One learner trains on every label; R replicas decide with a copy of
its decision state, refreshed every ``refresh`` labels: the learner's model file bytes
(`persist.dumps`, what ``-f`` writes) shipped to each replica, which loads them
(`persist.loads`). A replica never learns, and between refreshes its distribution for a
context does not change, so the number of replicas changes nothing: every decision is the
learner's as it was at the last refresh, at most ``refresh`` labels old. ``refresh = 1``
is the ``online`` schedule itself; the cost of a larger one is measured by
`bench/experiments/replica_refresh.py` (`docs/results/replica_refresh.md`).

>>> import numpy as np
>>> from regcb_stream import RegCB
>>> X, R = np.eye(2)[[0, 1] * 50], np.array([[1.0, 0.0], [0.0, 1.0]] * 50)
>>> rewards = serve(RegCB(seed=0), X, ["a", "b"], lambda t, i: R[t, i], refresh=10,
...                 uniforms=np.linspace(0, 1, 100, endpoint=False))
>>> float(rewards[-50:].mean())
1.0
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from regcb_stream import persist, rules


def snapshot(learner) -> bytes:
    """What a replica receives: the learner's model file bytes."""
    return persist.dumps(learner, {})


def replica(state: bytes):
    """A replica: the learner the bytes of `snapshot` hold, used only to decide."""
    learner, _ = persist.loads(state)
    return learner


def serve(learner, contexts, actions: Sequence, reveal: Callable, refresh: int,
          uniforms: np.ndarray) -> np.ndarray:
    """Rounds decided by a replica refreshed every ``refresh`` labels while ``learner``
    learns each round's played action (`RegCB.replay`: reward by ``reveal(rounds,
    indices)``, probability as the replica played it); returns each round's reward.
    Draws are by inverse CDF of ``uniforms`` (one per round), so a run is determined by
    them."""
    if refresh < 1:
        raise ValueError(f"refresh must be >= 1, got {refresh}")
    n = len(contexts)
    rewards = np.empty(n)
    for start in range(0, n, refresh):
        stop = min(n, start + refresh)
        decision = replica(snapshot(learner)).decide_many(contexts[start:stop], actions)
        index = rules.sample(decision.pmf, uniforms[start:stop])
        rewards[start:stop] = reveal(np.arange(start, stop), index)
        probs = decision.pmf[np.arange(stop - start), index]
        learner.replay(contexts[start:stop], actions, index, rewards[start:stop], probs)
    return rewards
