"""The sweep on a Dask cluster: a local cluster on the loopback interface, started and
stopped by the sweep itself, gives the local runner's records and resumes as it does."""

from __future__ import annotations

import json

import pytest

from bench.harness import runner

pytest.importorskip("dask.distributed")


def records(path) -> dict:
    """The records by run id, without their timings."""
    out = {}
    for line in path.read_text().splitlines():
        record = json.loads(line)
        record.pop("seconds"), record.pop("cpu_seconds")
        out[record["run_id"]] = record
    return out


def test_a_local_cluster_gives_the_local_runners_records(tmp_path):
    tasks = runner.make_tasks(["vehicle", "yeast"], [0, 1], ["regcb-opt:ridge", "egreedy"],
                              params_per_family=2, max_train=300, max_hold=100)
    local, dask = tmp_path / "local.jsonl", tmp_path / "dask.jsonl"
    runner.run_sweep(tasks, local, jobs=1, progress=False)
    half = runner.run_sweep(tasks[: len(tasks) // 2], dask, jobs=2, progress=False,
                            scheduler="local")
    rest = runner.run_sweep(tasks, dask, jobs=2, progress=False, scheduler="local")
    assert (half["ran"], rest["ran"], rest["skipped"]) == (len(tasks) // 2,
                                                            len(tasks) - len(tasks) // 2,
                                                            len(tasks) // 2)
    assert records(dask) == records(local) and len(records(local)) == len(tasks)
