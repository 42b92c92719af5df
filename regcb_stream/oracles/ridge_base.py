"""What the ridge oracles share: the penalty and its prior, forgetting, the compiled online
loop, and how a learner binds them to its model class's defaults."""

from __future__ import annotations

from regcb_stream.oracles.base import Binding, Ellipsoid
from regcb_stream.oracles.forgetting import Forgetting
from regcb_stream.oracles.loop import OnlineLoop
from regcb_stream.oracles.penalty_choice import CHOOSERS, GCV_PENALTIES

try:
    from regcb_stream.oracles import _ridge
except ImportError:  # not built (a source tree without `pip install`): the numpy reference
    _ridge = None


class RidgeBase(Forgetting, OnlineLoop, Ellipsoid):
    """A ridge oracle's parameters: the penalty ``l2`` (None: the learner's default for
    its model class; 1 on its own), the ``prior`` it shrinks toward (``"auto"``: the
    learner's default; optimistic on its own), the forgetting factor, the reward range the
    named priors refer to, and whether the compiled kernels run (``kernels``, where they
    are built; False: the numpy reference, which the tests compare them with), as the
    concrete oracle checked them (`regcb_stream.parameters.ORACLE_PARAMETERS`)."""

    def __init__(self, l2: float | None, prior: float | str, forget: float,
                 reward_range: tuple[float, float], kernels: bool):
        self.l2 = l2
        self.prior = prior
        self.forget = forget
        self.reward_range = (float(reward_range[0]), float(reward_range[1]))
        self.kernels = kernels
        self._l2 = 1.0 if l2 is None else GCV_PENALTIES[0] if l2 in CHOOSERS else float(l2)
        self._prior = resolve_prior(prior, self.reward_range)
        self._clock = self._stamp = 0  # labels learned while forgetting, and at the last step

    @property
    def compiled(self) -> bool:
        """Whether the compiled kernels run."""
        return self.kernels and _ridge is not None

    @property
    def penalty(self) -> float:
        """The penalty in force: ``l2``, or 1 where it is left to a learner and the oracle
        runs alone."""
        return self._l2

    @property
    def prior_mean(self) -> float:
        """The prediction the penalty shrinks toward (``prior`` resolved)."""
        return self._prior

    chooses_penalty = False  # whether it takes l2="gcv" or "evidence" (the exact ridge)

    def bind(self, binding: Binding) -> RidgeBase:
        """A new oracle of these parameters for a learner: its reward range, its model
        class's ``l2`` and ``prior`` where these are left to it (a class's ``"gcv"`` or
        ``"evidence"``: the penalty it starts from, for an oracle that cannot choose or
        learns in pieces), its
        forgetting factor where it forgets, pieces on its epoch schedules (an oracle
        that has them), and how many random features end its rows (``"evidence"``)."""
        changes = {"reward_range": binding.reward_range}
        if self.l2 is None:
            chooses = self.chooses_penalty and not binding.piecewise
            changes["l2"] = (GCV_PENALTIES[0] if binding.l2 in CHOOSERS and not chooses
                             else binding.l2)
        if self.prior == "auto":
            changes["prior"] = binding.prior
        if binding.forget < 1.0:
            changes["forget"] = binding.forget
        if binding.piecewise and self.capabilities.pieces:
            changes["piecewise"] = True
        oracle = self.configured(**changes)
        if oracle.chooses_penalty:
            oracle._random_columns = binding.random_features
        return oracle


def resolve_prior(prior, reward_range: tuple[float, float]) -> float:
    """The number a ``prior`` stands for in ``reward_range`` (``"auto"``, left to a
    learner: the optimistic one).

    >>> resolve_prior("optimistic", (0.0, 1.0)), resolve_prior("midpoint", (-1.0, 0.0))
    (1.0, -0.5)
    """
    if prior in ("optimistic", "auto"):
        return float(reward_range[1])
    if prior == "midpoint":
        return 0.5 * (reward_range[0] + reward_range[1])
    return float(prior)


def refresh_interval(dim: int) -> int:
    """Rank-one updates of an inverse of ``dim`` columns between two fresh inverses: a
    fresh O(D^3) inverse then costs about a tenth of the O(D^2) updates before it. Rounding
    drift is far below what that guards against: on hashed 0/1 rows with importance weights
    up to 20 the updated inverse is within 1e-12 (relative) of a fresh one after 20,000
    updates (D = 16 to 100)."""
    return max(256, 4 * dim)
