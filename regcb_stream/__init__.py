"""RegCB contextual-bandit exploration with regression oracles, VW-style.

>>> from regcb_stream import RegCB
>>> learner = RegCB("optimistic", beta=1e-2, seed=0)
>>> learner.pmf([0.2, 0.4], ["left", "right"])
[0.5, 0.5]

The names below are imported on first use, so that ``import regcb_stream.command.main`` does not
load numpy before the command sets its BLAS threads (and River, which takes a second to
import, only loads with ``RiverOracle``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from regcb_stream.explore.decision import Decision
    from regcb_stream.learner import RegCB
    from regcb_stream.oracles.base import Oracle
    from regcb_stream.oracles.bounded import BoundedRidgeOracle
    from regcb_stream.oracles.ridge import RidgeOracle
    from regcb_stream.oracles.river import RiverOracle
    from regcb_stream.oracles.vw import VWOracle

_HOMES = {"Decision": "explore.decision", "RegCB": "learner", "Oracle": "oracles.base",
          "BoundedRidgeOracle": "oracles.bounded", "RidgeOracle": "oracles.ridge",
          "RiverOracle": "oracles.river", "VWOracle": "oracles.vw"}

__all__ = ["BoundedRidgeOracle", "Decision", "Oracle", "RegCB", "RidgeOracle", "RiverOracle",
           "VWOracle"]


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module 'regcb_stream' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"regcb_stream.{_HOMES[name]}"), name)
    globals()[name] = value
    return value
