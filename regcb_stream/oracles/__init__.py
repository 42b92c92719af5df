"""Regression oracles: incremental regressors that bound their version space."""

from __future__ import annotations

from regcb_stream.oracles.base import Oracle
from regcb_stream.oracles.ridge import RidgeOracle
from regcb_stream.oracles.river import RiverOracle
from regcb_stream.oracles.vw import VWOracle

__all__ = ["Oracle", "RidgeOracle", "RiverOracle", "VWOracle"]
