"""``python -m bench``: the benchmark sweep of :mod:`bench.harness`."""

from __future__ import annotations

import os

if __name__ == "__main__":  # not in the spawned workers, which import this as __mp_main__
    # one BLAS thread per process: the sweep's parallelism is its worker processes
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from bench.harness.cli import main

    raise SystemExit(main())
