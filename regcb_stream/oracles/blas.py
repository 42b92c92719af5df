"""One BLAS thread for the ridge oracles' dense algebra (inverses, eigendecompositions).

BLAS threads make a large inverse several times slower on a small, shared machine
(``docs/results/blas_threads.md``). `threadpoolctl.threadpool_limits` finds the process's
BLAS libraries anew each time it is made (~0.2 ms, more than a 168-column inverse's
overhead); one controller, made at the first limit, is reused (the libraries numpy loaded
by then are the ones these calls use).

>>> import numpy as np
>>> with one_blas_thread():
...     np.linalg.inv(np.eye(2)).tolist()
[[1.0, 0.0], [0.0, 1.0]]
"""

from __future__ import annotations

_controller = None


def one_blas_thread():
    """A context in which BLAS runs on one thread."""
    global _controller
    if _controller is None:
        from threadpoolctl import ThreadpoolController  # (~2 ms of a first import)

        _controller = ThreadpoolController()
    return _controller.limit(limits=1, user_api="blas")
