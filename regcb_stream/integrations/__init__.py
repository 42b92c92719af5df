"""Adapters to other libraries' conventions.

- :mod:`regcb_stream.integrations.river`: ``RegCBPolicy``, a River contextual-bandit policy
  (``pull`` / ``update``) with a River preprocessing pipeline, and ``iter_vw``, a River-style
  stream reader for VW contextual-bandit text.
- :mod:`regcb_stream.integrations.coba`: ``RegCBLearner`` for coba's learner protocol, and
  coba environments over the benchmark data sets and over logged VW text.

The modules are imported on demand (``from regcb_stream.integrations.river import ...``), so
that coba stays an optional dependency: nothing is imported here.
"""

from __future__ import annotations

__all__: list[str] = []
