"""Benchmark harness reproducing the experiments of Foster et al. (2018) on the shared data.

Modules: :mod:`.problems` (streams, holdout split), :mod:`.protocol` (online learning,
validation and progressive reward), :mod:`.linear`, :mod:`.baselines`, :mod:`.regcb_algo`
and :mod:`.vw_algo` (the algorithms), :mod:`.algorithms` (families and grids),
:mod:`.runner` (parallel, resumable sweep), :mod:`.aggregate`, :mod:`.claims`,
:mod:`.report` and :mod:`.plots` (results), :mod:`.cli` (``python -m bench``).
"""
