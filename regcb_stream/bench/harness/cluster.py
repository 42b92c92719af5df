"""The sweep's runs on a Dask cluster (``python -m regcb_stream.bench --scheduler ...``).

``scheduler`` is a Dask scheduler's address (``tcp://host:8786``: its workers need this
package and the data, as the local workers have them), or ``"local"``: a cluster of
``jobs`` single-threaded worker processes started here on the loopback interface
(127.0.0.1, no dashboard) and stopped at the end. Each run is one task, submitted longest
first (the order `runner.run_sweep` gives); the records come back as they finish and
`runner.run_sweep` appends each to the results file at once, so an interrupted sweep
resumes as the local one does. A run's record does not depend on where it ran (its seeds
are its repetition's): the cluster's results are the local runner's, apart from the
timings.

Needs the ``dask`` extra (``pip install 'regcb-stream[dask]'``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator

#: the workers' statistical profiler samples the running task's stack every 10 ms, and
#: their monitors wake every 0.1-0.5 s: CPU-bound runs want neither (the local cluster's
#: workers take this configuration)
QUIET_WORKERS = {"distributed.worker.profile.enabled": False,
               "distributed.admin.system-monitor.interval": "10s",
               "distributed.worker.memory.monitor-interval": "10s",
               "distributed.admin.tick.interval": "1s"}


def results(todo: list, run: Callable, scheduler: str, jobs: int,
            init: Callable[[], None]) -> Iterator[dict]:
    """``run(task)`` of every task of ``todo`` on the cluster, as they finish (``init``
    runs once on every worker first: one BLAS thread each)."""
    try:
        import dask
        from dask.distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise SystemExit("--scheduler needs Dask: pip install 'regcb-stream[dask]'") from None
    with contextlib.ExitStack() as stack:
        stack.enter_context(dask.config.set(QUIET_WORKERS))
        if scheduler == "local":
            os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # (inherited by the workers)
            cluster = stack.enter_context(LocalCluster(
                n_workers=jobs, threads_per_worker=1, processes=True, host="127.0.0.1",
                dashboard_address=None, silence_logs=40))
            client = stack.enter_context(Client(cluster))
        else:
            client = stack.enter_context(Client(scheduler))
        client.run(init)
        futures = [client.submit(run, task, key=f"run-{i}", priority=-i, pure=False)
                   for i, task in enumerate(todo)]
        for future in as_completed(futures):
            yield future.result()
            future.release()
