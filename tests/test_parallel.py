"""Epoch-synchronous parallel replay: the distributions and the final state are those of
one process, byte for byte, however the epochs are cut and wherever the parts run."""

from __future__ import annotations

import numpy as np
import pytest
from test_compiled import arrowhead_stream

from regcb_stream import RegCB, persist
from regcb_stream.datasets import uci
from regcb_stream.explore.explorer import PIECE_LABELS
from regcb_stream.features.encoder import EncodedRows
from regcb_stream.stream import parallel


def letter_log(n: int) -> parallel.ArrayLog:
    """``n`` events of letter logged by a uniform policy (the data repeated if needed)."""
    uci.require("letter.tsv.gz")
    return parallel.ArrayLog(*uci.uniform_log("letter", n))


def serial(log, **kwargs) -> tuple[bytes, bytes]:
    """The distributions' and the final state's bytes of one process."""
    learner = RegCB(**kwargs)
    pmf = learner.replay(*log(0, len(log))).pmf
    return pmf.tobytes(), persist.dumps(learner, {})


def spread(log, client=None, tasks=None, **kwargs) -> tuple[bytes, bytes]:
    """The same, replayed in parts (every epoch of a piece or more)."""
    learner = RegCB(**kwargs)
    pmf = parallel.replay(learner, log, len(log), client=client, tasks=tasks,
                          min_spread=PIECE_LABELS)
    return pmf.tobytes(), persist.dumps(learner, {})


@pytest.mark.parametrize("schedule", ["sqrt2", "doubling"])
@pytest.mark.parametrize("variant", ["elimination", "optimistic"])
def test_any_number_of_parts_is_one_process_byte_for_byte(schedule, variant):
    log = letter_log(12_000)
    want = serial(log, variant=variant, schedule=schedule)
    for tasks in (1, 2, 4, 8):
        assert spread(log, tasks=tasks, variant=variant, schedule=schedule) == want, tasks


def test_the_joint_class_and_weights_are_one_process_byte_for_byte():
    rows, played, rewards, dim = arrowhead_stream(6000, 6, 5, seed=1)
    played = np.where(played < 0, 0, played)
    weights = np.linspace(0.5, 2.0, len(played))

    def load(start, stop):
        block = slice(start, stop)
        return ([{}] * (stop - start), EncodedRows(rows.index[block], rows.value[block]),
                played[block], rewards[block], None, weights[block])

    def fresh():
        learner = RegCB(schedule="sqrt2", seed=0)
        learner.encoder.columns("a", list(range(dim - 1)))
        return learner

    one = fresh()
    want = one.replay(*load(0, len(played))).pmf
    for tasks in (2, 8):
        two = fresh()
        got = parallel.replay(two, load, len(played), tasks=tasks, min_spread=PIECE_LABELS)
        assert got.tobytes() == want.tobytes()
        assert persist.dumps(two, {}) == persist.dumps(one, {})


def test_a_learner_handed_over_mid_epoch_carries_on_as_one_process():
    log = letter_log(9_000)
    want = serial(log, schedule="doubling")
    learner = RegCB(schedule="doubling")
    first = learner.replay(*log(0, 5_000)).pmf  # inside the epoch of labels 4096..8190
    rest = parallel.replay(learner, lambda a, b: log(a + 5_000, b + 5_000), 4_000,
                           tasks=3, min_spread=PIECE_LABELS)
    assert (np.concatenate([first, rest]).tobytes(), persist.dumps(learner, {})) == want


def test_features_met_in_a_spread_epoch_are_numbered_as_one_process_does():
    """A feature first met late (in a part) would be numbered by the part: the driver
    replays that epoch itself."""
    log = letter_log(6_000)
    contexts = [dict(enumerate(row)) for row in log.contexts]
    for i in range(4_500, 6_000, 700):
        contexts[i]["late"] = 1.0
    log.contexts = contexts
    assert spread(log, tasks=4, schedule="doubling") == serial(log, schedule="doubling")


def test_after_a_hand_over_to_the_bounded_ridge_the_driver_replays_alone():
    """Exact ridge hands over to the bounded ridge when a late feature makes it too large:
    the epochs after it (no pieces to spread) are replayed by the driver."""
    from regcb_stream.oracles.ridge import RidgeOracle

    log = letter_log(9_000)
    contexts = [dict(enumerate(row)) for row in log.contexts]
    contexts[3_000]["late"] = 1.0
    log.contexts = contexts
    oracle = RidgeOracle(prior="optimistic", max_exact=8_000)  # 26 x 17^2 fits, 26 x 18^2 not
    want = serial(log, schedule="sqrt2", oracle=oracle)
    assert spread(log, tasks=2, schedule="sqrt2", oracle=oracle) == want


def test_a_npy_log_reads_slices_of_its_files(tmp_path):
    log = letter_log(3_000)
    stored = parallel.NpyLog.write(tmp_path / "log", log.contexts, log.actions, log.played,
                                   log.rewards, log.probs)
    for got, want in zip(stored(100, 200), log(100, 200)):
        assert np.array_equal(got, want)
    assert spread(stored, tasks=2, schedule="sqrt2") == serial(log, schedule="sqrt2")


def test_what_parallel_replay_refuses():
    log = letter_log(2_000)
    with pytest.raises(ValueError, match="online schedule"):
        parallel.replay(RegCB(), log, len(log))
    with pytest.raises(ValueError, match="fixed budget"):
        parallel.replay(RegCB(schedule="sqrt2", budget="auto"), log, len(log))
    with pytest.raises(ValueError, match="ridge oracle"):
        parallel.replay(RegCB(schedule="sqrt2", oracle="vw"), log, len(log))
    log.played = log.played.copy()
    log.played[1_500] = -1
    with pytest.raises(ValueError, match="example 1500 has no label"):
        parallel.replay(RegCB(schedule="sqrt2"), log, len(log), tasks=2,
                        min_spread=PIECE_LABELS)


def test_a_local_dask_cluster_is_one_process_byte_for_byte():
    pytest.importorskip("dask.distributed")
    from regcb_stream.stream.cluster import connect

    log = letter_log(12_000)
    want = serial(log, schedule="sqrt2")
    with connect("local", 2) as client:
        assert client.scheduler.address.startswith("tcp://127.0.0.1:")
        for tasks in (None, 8):
            assert spread(log, client=client, tasks=tasks, schedule="sqrt2") == want
