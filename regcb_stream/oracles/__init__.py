"""Regression oracles: incremental regressors that bound their version space."""

from __future__ import annotations

from regcb_stream.binsearch import BinSearchOracle
from regcb_stream.oracles.base import Oracle
from regcb_stream.oracles.bounded import BoundedRidgeOracle
from regcb_stream.oracles.ridge import RidgeOracle
from regcb_stream.oracles.trees import TreesOracle
from regcb_stream.oracles.vw import VWOracle

__all__ = ["BinSearchOracle", "BoundedRidgeOracle", "Oracle", "RidgeOracle", "RiverOracle",
           "TreesOracle", "VWOracle"]


def __getattr__(name: str):
    if name == "RiverOracle":  # imported on first use: River takes a second to import
        from regcb_stream.oracles.river import RiverOracle

        return RiverOracle
    raise AttributeError(f"module 'regcb_stream.oracles' has no attribute {name!r}")
