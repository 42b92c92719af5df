"""Regression oracles: incremental regressors that bound their version space."""

from __future__ import annotations

from regcb_stream.oracles.base import Oracle
from regcb_stream.oracles.ridge import RidgeOracle

__all__ = ["Oracle", "RidgeOracle"]
