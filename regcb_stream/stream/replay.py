"""A learner over a block of rounds: a logged stream replayed, bandit feedback simulated.

Both are functions over a model's block API (`regcb_stream.model.Model`: the rows of a
block, its explorer's ``decide``, ``learn`` and compiled ``replay``), as River's
``evaluate_offline`` is a function over ``pull`` and ``update``: each epoch's rounds are
decided in one computation from the frozen state, then learned; on the ``online`` schedule
with an oracle that has a compiled loop, a whole block is decided and learned in it.
`RegCB.replay` and `RegCB.play` are these functions.
"""

from __future__ import annotations

import numpy as np

from regcb_stream import rules
from regcb_stream.explore.decision import Decision, stacked
from regcb_stream.features.encoder import EncodedRows
from regcb_stream.features.rows import Block


def replay(model, contexts, actions, played, rewards, probs, weights) -> Decision:
    """Progressive validation of a checked log by ``model``: each context decided, then
    its logged label learned (``played[i]`` -1: none), epoch by epoch (see
    `RegCB.replay`). The rows are encoded ahead (the whole block for the compiled loop, an
    epoch otherwise), and the oracle grown to each row's columns before it, as one example
    at a time grows it (`Model.dims_in_force`)."""
    n, labelled = len(played), np.flatnonzero(played >= 0)
    encoded = isinstance(actions, EncodedRows)  # the joint class's rows, per context
    decisions, start, first = [], 0, 0  # labelled[first]: the first label from start
    ahead = None  # (rows encoded ahead, the first's index, the columns in force at each)
    while start < n:
        explorer = model.explorer
        compiled = explorer.compiled_replay  # (parts end where the change test may act)
        room = explorer.replay_room if compiled else explorer.labels_until_rebuild
        rows = labelled[first:first + room]
        stop = int(rows[-1]) + 1 if len(rows) == room else n
        if ahead is None or start >= ahead[1] + len(ahead[2]):
            end = n if compiled else stop
            encoded_rows = model.decisions(contexts[start:end], actions[start:end] if encoded
                                           else actions, grow=False)
            ahead = encoded_rows, start, model.dims_in_force(encoded_rows)
        all_rows, at, dims = ahead
        stop = grown_part([model], [dims[start - at:]], min(stop, at + len(dims)) - start)
        stop += start
        block, part = slice(start, stop), all_rows.take(slice(start - at, stop - at))
        if compiled:  # (up to a change the loop detected: the rest in the next part)
            decision = model.explorer.replay(part, played[block], rewards[block],
                                             probs[block], weights[block])
            stop = start + len(decision.pmf)
        else:
            rows = rows[rows < stop]
            decision = model.explorer.decide(*part)
            if len(rows):
                model.learn_many(
                    take(contexts, rows), played_actions(actions, rows, played[rows]),
                    rewards[rows], probs[rows], weights[rows],
                    None if decision.candidates is None
                    else decision.candidates[rows - start, :, played[rows]])
        decisions.append(decision)
        first, start = int(np.searchsorted(labelled, stop)), stop
    return stacked(decisions)


def grown_part(models, dims: list[np.ndarray], length: int) -> int:
    """Grow each model to the columns in force at the first of the rows to come
    (``dims``: each model's, `Model.dims_in_force`) and return how many of at most
    ``length`` rows form a part: up to a row that widens a model's numbers
    (`Oracle.widens`: the next part grows it for that row, as one example at a time does),
    each model grown for the rows of the part."""
    for model, columns in zip(models, dims):
        model.grow_to(int(columns[0]))
        wider = np.flatnonzero(columns[:length] != columns[0])
        if len(wider) and model.explorer.oracle.widens(int(columns[wider[0]])):
            length = int(wider[0])
    for model, columns in zip(models, dims):
        model.grow_to(int(columns[length - 1]))
    return length


def grown_parts(model, dims: np.ndarray):
    """The parts of a block's rows (slices), the model grown for each before it is
    yielded (`grown_part`)."""
    start = 0
    while start < len(dims):
        stop = start + grown_part([model], [dims[start:]], len(dims) - start)
        yield slice(start, stop)
        start = stop


def play(learner, contexts, actions, reveal, uniforms: np.ndarray, check_reward
         ) -> tuple[np.ndarray, Decision]:
    """Bandit feedback on a block of rounds (see `RegCB.play`): ``learner`` a model or a
    learner over models (model selection: ``models``, the ``leader``'s decisions, its
    models' fits ``observe``-d); ``check_reward`` refuses a reward ``reveal`` gives."""
    main, n = learner.main, len(contexts)
    joint = main.rows.actions.is_joint(actions)  # (by each model: model selection's two)
    encoded = [main.decisions(contexts, actions, grow=False)]  # (its class settled first)
    models = [main] if joint else learner.models
    encoded += [model.decisions(contexts, actions, grow=False) for model in models[1:]]
    dims = [model.dims_in_force(rows) for model, rows in zip(models, encoded)]
    ids = None if joint else [np.arange(model.rows.actions.n_models)[block.models]
                              for model, block in zip(models, encoded)]  # (played rows')
    decisions, played, start = [], np.empty(n, dtype=np.intp), 0
    while start < n:
        stop = start + grown_part(models, [d[start:] for d in dims], min(
            n, start + main.explorer.labels_until_rebuild) - start)
        block = slice(start, stop)
        if not joint:
            options = [model.explorer.decide(*rows.take(block))
                       for model, rows in zip(models, encoded)]
            decision = options[learner.leader()]
        else:
            decision = main.explorer.decide(*encoded[0].take(block))
        index = rules.sample(decision.pmf, uniforms[block])
        rewards = revealed(reveal(np.arange(start, stop), index), stop - start, start)
        rows = np.arange(stop - start)
        probs = decision.pmf[rows, index]
        if decision.candidates is not None:
            main.explorer.score(decision.candidates[rows, :, index], probs, rewards)
        for reward in rewards.tolist():
            check_reward(reward)
        if joint:
            learner.learn_many(contexts[block], [actions[i] for i in index.tolist()],
                               rewards, probs, np.ones(len(rewards)))
        else:
            fits = [option.prediction[rows, index] for option in options]  # (online)
            for model, (x, _), own, fitted in zip(models, encoded, ids, fits):
                model.explorer.learn(Block(x.take((block, slice(0, 1))), own[index]),
                                     rewards, np.ones(stop - start), fitted)
            learner.observe(rewards, *fits)
        decisions.append(decision)
        played[start:stop] = index
        start = stop
    return played, stacked(decisions)


def take(contexts, rows: np.ndarray):
    """The contexts at ``rows`` of a block (an array, ``EncodedRows`` or a sequence)."""
    if isinstance(contexts, (np.ndarray, EncodedRows)):
        return contexts[rows]
    return [contexts[i] for i in rows.tolist()]


def played_actions(actions, rows: np.ndarray, chosen: np.ndarray):
    """The actions played in ``rows``: labels from the offered list, or the joint class's
    encoded rows."""
    if isinstance(actions, EncodedRows):
        return actions[rows, chosen]
    return [actions[i] for i in chosen.tolist()]


def revealed(rewards, n: int, start: int) -> np.ndarray:
    """``reveal``'s answer: one number per round asked, or an error saying what came back
    instead."""
    try:
        out = np.asarray(rewards, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"reveal must return numbers, got {rewards!r:.80}") from None
    if out.shape != (n,):
        raise ValueError(f"reveal was asked for the rewards of rounds {start}..{start + n - 1} "
                         f"({n} rounds) and returned shape {out.shape}")
    return out
