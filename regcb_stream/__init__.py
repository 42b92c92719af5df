"""RegCB contextual-bandit exploration with regression oracles, VW-style.

>>> from regcb_stream import RegCB
>>> learner = RegCB("optimistic", beta=1e-2, seed=0)
>>> learner.pmf([0.2, 0.4], ["left", "right"])
[0.5, 0.5]

"""

from __future__ import annotations

from regcb_stream.learner import Decision, RegCB
from regcb_stream.oracles.base import Oracle
from regcb_stream.oracles.bounded import BoundedRidgeOracle
from regcb_stream.oracles.ridge import RidgeOracle
from regcb_stream.oracles.vw import VWOracle

__all__ = ["BoundedRidgeOracle", "Decision", "Oracle", "RegCB", "RidgeOracle", "RiverOracle",
           "VWOracle"]


def __getattr__(name: str):
    if name == "RiverOracle":  # imported on first use: River takes a second to import
        from regcb_stream.oracles.river import RiverOracle

        return RiverOracle
    raise AttributeError(f"module 'regcb_stream' has no attribute {name!r}")
