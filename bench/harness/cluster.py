"""The sweep's runs on a Dask cluster (``python -m bench --scheduler ...``).

``scheduler`` is a Dask scheduler's address or ``"local"`` (`regcb_stream.stream.cluster`: a
cluster of ``jobs`` local processes). Each run is one task, submitted longest
first (the order `runner.run_sweep` gives); the records come back as they finish and
`runner.run_sweep` appends each to the results file at once, so an interrupted sweep
resumes as the local one does. A run's record does not depend on where it ran (its seeds
are its repetition's): the cluster's results are the local runner's, apart from the
timings.

Needs the ``dask`` extra (``pip install 'regcb-stream[dask]'``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from regcb_stream.stream.cluster import connect


def results(todo: list, run: Callable, scheduler: str, jobs: int,
            init: Callable[[], None]) -> Iterator[dict]:
    """``run(task)`` of every task of ``todo`` on the cluster, as they finish (``init``
    runs once on every worker first: one BLAS thread each)."""
    with connect(scheduler, jobs) as client:
        from dask.distributed import as_completed

        client.run(init)
        futures = [client.submit(run, task, key=f"run-{i}", priority=-i, pure=False)
                   for i, task in enumerate(todo)]
        for future in as_completed(futures):
            yield future.result()
            future.release()
