"""Regression oracles: incremental regressors that bound their version space.

The names are imported on first use: the command needs only the ridge oracles at start-up,
and River takes a second to import.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from regcb_stream.oracles.base import Capabilities, Oracle
    from regcb_stream.oracles.binsearch import BinSearchOracle
    from regcb_stream.oracles.bounded import BoundedRidgeOracle
    from regcb_stream.oracles.ridge import RidgeOracle
    from regcb_stream.oracles.river import RiverOracle
    from regcb_stream.oracles.trees import TreesOracle
    from regcb_stream.oracles.vw import VWOracle

_HOMES = {"BinSearchOracle": "regcb_stream.oracles.binsearch",
          "Oracle": "regcb_stream.oracles.base",
          "Capabilities": "regcb_stream.oracles.base",
          "BoundedRidgeOracle": "regcb_stream.oracles.bounded",
          "RidgeOracle": "regcb_stream.oracles.ridge", "RiverOracle": "regcb_stream.oracles.river",
          "TreesOracle": "regcb_stream.oracles.trees", "VWOracle": "regcb_stream.oracles.vw"}

__all__ = ["BinSearchOracle", "BoundedRidgeOracle", "Capabilities", "Oracle", "RidgeOracle",
           "RiverOracle", "TreesOracle", "VWOracle"]


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module 'regcb_stream.oracles' has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOMES[name]), name)
    globals()[name] = value
    return value
