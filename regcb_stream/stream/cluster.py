"""Dask clients for the parts that run on a cluster (the sweep, `regcb_stream.stream.parallel`).

``scheduler`` is a Dask scheduler's address (``tcp://host:8786``: its workers need this
package and whatever data the tasks read), or ``"local"``: a cluster of single-threaded
worker processes started here on the loopback interface (127.0.0.1, no dashboard) and
stopped when the ``with`` block ends. Needs the ``dask`` extra
(``pip install 'regcb-stream[dask]'``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

#: the workers' statistical profiler samples the running task's stack every 10 ms, and
#: their monitors wake every 0.1-0.5 s: CPU-bound tasks want neither (the local cluster's
#: workers take this configuration)
QUIET_WORKERS = {"distributed.worker.profile.enabled": False,
                 "distributed.admin.system-monitor.interval": "10s",
                 "distributed.worker.memory.monitor-interval": "10s",
                 "distributed.admin.tick.interval": "1s"}


@contextlib.contextmanager
def connect(scheduler: str, workers: int) -> Iterator:
    """A Dask ``Client`` of ``scheduler`` (``"local"``: ``workers`` local processes)."""
    try:
        import dask
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise SystemExit("a Dask scheduler needs Dask: pip install 'regcb-stream[dask]'"
                         ) from None
    with contextlib.ExitStack() as stack:
        stack.enter_context(dask.config.set(QUIET_WORKERS))
        if scheduler == "local":
            os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # (inherited by the workers)
            cluster = stack.enter_context(LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                dashboard_address=None, silence_logs=40))
            yield stack.enter_context(Client(cluster))
        else:
            yield stack.enter_context(Client(scheduler))
