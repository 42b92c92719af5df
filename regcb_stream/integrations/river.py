"""RegCB in River's conventions: a contextual-bandit policy and a VW text stream reader.

`RegCBPolicy` follows ``river.bandit``: ``pull(arm_ids, context)`` picks an arm and
``update(arm_id, context, reward)`` learns, in the argument order of River's
``ContextualPolicy`` (the order ``river.bandit.evaluate_offline`` calls). The confidence
bounds come from RegCB's exact ridge oracle, from a River regressor or pipeline (through
`regcb_stream.RiverOracle`), or from any oracle object RegCB accepts; a River
transformer or pipeline of transformers, e.g. ``preprocessing.StandardScaler()``, maps the
contexts first and learns online from the contexts of the updates, as a River pipeline
learns its unsupervised steps. `iter_vw` reads VW contextual-bandit text the way
``river.stream.iter_libsvm`` reads LIBSVM.
"""

from __future__ import annotations

import copy
import functools
import os
import typing
from collections.abc import Mapping

from river import bandit
from river.stream import utils

from regcb_stream.defaults import VARIANT
from regcb_stream.io.dsjson import Reward, iter_dsjson_adf
from regcb_stream.io.vw_features import HashKeys, flatten, flatten_adf
from regcb_stream.io.vw_text import iter_adf, iter_cb
from regcb_stream.learner import RegCB

if typing.TYPE_CHECKING:
    from river import base

__all__ = ["LoggedLabel", "RegCBPolicy", "iter_vw"]


def _as_oracle(oracle):
    """River regressors (anything with ``learn_one``) become a `RiverOracle`."""
    if hasattr(oracle, "learn_one"):
        from regcb_stream.oracles.river import RiverOracle

        return RiverOracle(oracle)
    return oracle


class RegCBPolicy(bandit.base.ContextualPolicy):
    """RegCB (Foster et al., 2018) as a River contextual-bandit policy.

    Use it where a ``river.bandit`` policy fits, when the reward of an arm depends on the
    context: arms are offered per round (labels, or dicts of arm features for the joint
    model of VW's ADF format), and the policy samples an arm from RegCB's distribution.
    The probability of each pull is kept for the matching ``update``; `distribution` gives
    the whole distribution without sampling.

    Parameters
    ----------
    variant
        ``"elimination"`` or ``"optimistic"``.
    preprocessor
        A River transformer or pipeline of transformers applied to the contexts (copied, so
        the object given is left untouched). ``update`` learns it on the context before
        transforming it; ``pull`` only transforms. None passes contexts through.
    oracle
        None (`regcb_stream.RegCB`'s default: exact ridge bounds with an optimistic prior),
        ``"ridge"`` (the paper's ridge), a River regressor or pipeline that honours sample
        weights (used through `regcb_stream.RiverOracle`: sensitivity bounds; River's
        ``BayesianLinearRegression`` gives the exact ridge bounds), or an oracle object for
        `regcb_stream.RegCB`. A pipeline's own steps see each row's *nonzero*
        features only (`regcb_stream.RiverOracle` drops zeros), so a scaler there learns a
        feature's statistics from its nonzero values alone; scale contexts whose features
        can be 0 with ``preprocessor`` instead.
    beta, mellowness, budget
        The exploration budget, as for `regcb_stream.RegCB` (all None: its default;
        ``budget="auto"``: chosen online).
    schedule
        When RegCB rebuilds its decision state: ``"online"``, ``"sqrt2"`` or ``"doubling"``.
    reward_range
        ``(low, high)`` of the rewards (maximized); rewards outside it are refused.
    seed
        Seed of the sampler.
    forget
        Each label's weight decays by this factor per label after it (ridge oracles), so
        the policy follows rewards that drift; 1 (the default): never (`regcb_stream.RegCB`).
    change_threshold
        The change test's threshold (`regcb_stream.adapt.change`; None, the default: RegCB's, where
        it applies; 0: never).

    Attributes
    ----------
    learner
        The `regcb_stream.RegCB` learner behind the policy.

    Examples
    --------
    >>> from river import preprocessing
    >>> policy = RegCBPolicy(preprocessor=preprocessing.StandardScaler(), beta=1e-3, seed=1)
    >>> arms = ["left", "right", "stay"]
    >>> for t in range(300):
    ...     context = {"x": 10.0 * (t % 2), "y": 5.0}
    ...     arm = policy.pull(arms, context)
    ...     policy.update(arm, context, 1.0 if arm == ("left" if t % 2 else "right") else 0.0)
    >>> policy.distribution(arms, {"x": 10.0, "y": 5.0})
    [1.0, 0.0, 0.0]
    >>> policy.distribution(arms, {"x": 0.0, "y": 5.0})
    [0.0, 1.0, 0.0]
    >>> [round(r, 1) for r in policy.predict_rewards(arms, {"x": 10.0, "y": 5.0})]
    [1.0, 0.3, 0.2]

    (The default ridge's optimistic prior lifts the predictions of arms seldom played in a
    context toward the best reward: the losing arms' are 0.3 and 0.2 here, not 0.)

    The oracle can be a River regressor (or pipeline), with River preprocessing on the
    contexts (the bounds then come from VW's sensitivity rule, `regcb_stream.RiverOracle`):

    >>> from river import linear_model, optim
    >>> policy = RegCBPolicy("optimistic", preprocessor=preprocessing.StandardScaler(),
    ...                      oracle=linear_model.LinearRegression(optim.SGD(0.05)), seed=1)
    >>> for t in range(300):
    ...     context = {"x": 10.0 * (t % 2), "y": 5.0}
    ...     arm = policy.pull(arms, context)
    ...     policy.update(arm, context, 1.0 if arm == ("left" if t % 2 else "right") else 0.0)
    >>> policy.distribution(arms, {"x": 10.0, "y": 5.0})
    [1.0, 0.0, 0.0]

    References
    ----------
    [^1]: [Foster, D. J., Agarwal, A., Dudik, M., Luo, H. and Schapire, R. E. (2018).
    Practical Contextual Bandits with Regression Oracles. ICML.](https://arxiv.org/abs/1803.01088)

    """

    def __init__(
        self,
        variant: str = VARIANT,
        *,
        preprocessor: base.Transformer | None = None,
        oracle=None,
        beta: float | None = None,
        mellowness: float | None = None,
        budget: str | None = None,
        schedule: str = "online",
        reward_range: tuple[float, float] = (0.0, 1.0),
        seed: int | None = 0,
        forget: float = 1.0,
        change_threshold: float | None = None,
    ):
        super().__init__(reward_obj=None, reward_scaler=None, burn_in=0)
        self.variant = variant
        self.preprocessor = preprocessor
        self.oracle = oracle
        self.beta = beta
        self.mellowness = mellowness
        self.budget = budget
        self.schedule = schedule
        self.reward_range = reward_range
        self.seed = seed
        self.forget = forget
        self.change_threshold = change_threshold
        self._learner = RegCB(
            variant, oracle=_as_oracle(oracle), beta=beta, mellowness=mellowness,
            budget=budget, schedule=schedule,
            reward_range=reward_range, seed=seed, forget=forget,
            change_threshold=change_threshold,
        )
        self._preprocessor = copy.deepcopy(preprocessor)
        self._pulled: tuple | None = None  # (arm key, probability, kwargs) of the last pull

    @classmethod
    def _unit_test_params(cls):
        from river import preprocessing

        yield {"preprocessor": preprocessing.StandardScaler()}

    @property
    def learner(self) -> RegCB:
        return self._learner

    def pull(self, arm_ids: list, context: dict | None = None):
        """Sample an arm among ``arm_ids`` for ``context`` (RegCB has no burn-in phase)."""
        return self._pull(arm_ids, context)

    def _pull(self, arm_ids, context):
        arm, prob, info = self._learner.predict(self._transform(context), list(arm_ids))
        self._pulled = (_arm_key(arm), prob, info)
        return arm

    def distribution(self, arm_ids: list, context: dict | None = None) -> list[float]:
        """Probability of pulling each of ``arm_ids`` (in their order) for ``context``."""
        return self._learner.pmf(self._transform(context), list(arm_ids))

    def predict_rewards(self, arm_ids: list, context: dict | None = None) -> list[float]:
        """The oracle's reward prediction for each of ``arm_ids`` (the centre of RegCB's
        bounds, in the decision state the next pull uses), e.g. for a River metric of the
        reward model."""
        decision = self._learner.decide(self._transform(context), list(arm_ids))
        return decision.prediction.tolist()

    def pmf(self, context, actions: list) -> list[float]:
        """`distribution` in the argument order of ``RegCB.pmf``.

        For `regcb_stream.evaluation.ope`.
        """
        return self.distribution(actions, context)

    def update(self, arm_id, context, reward: float, prob: float | None = None):
        """Learn the ``reward`` of ``arm_id`` for ``context``.

        ``prob`` is the probability with which the arm was played; by default that of the
        last pull if it was this arm, else 1. RegCB's regression is unweighted, so it is
        only checked, as `regcb_stream.RegCB.learn` does.
        """
        key = _arm_key(arm_id)
        info = {}  # of the last pull, when this is its update (the automatic budget's)
        if prob is None:
            pulled = self._pulled is not None and self._pulled[0] == key
            prob, info = self._pulled[1:] if pulled else (1.0, {})
        if self._preprocessor is not None:
            self._preprocessor.learn_one(_as_dict(context))
        self._learner.learn(self._transform(context), arm_id, reward, prob, **info)
        super().update(key, None, reward)

    def _transform(self, context):
        if self._preprocessor is None:
            return {} if context is None else context
        return self._preprocessor.transform_one(_as_dict(context))


def _as_dict(context) -> dict:
    if context is None:
        return {}
    if not isinstance(context, Mapping):
        raise TypeError(f"a preprocessor needs dict contexts (River's), got {context!r}")
    return dict(context)


def _arm_key(arm):
    """A hashable key of an arm for River's per-arm statistics (dict arms: their items)."""
    return tuple(arm.items()) if isinstance(arm, Mapping) else arm


class LoggedLabel(typing.NamedTuple):
    """The logged choice of a VW example: its position in ``actions``, its cost and the
    probability it was played with (None for VW's test label ``action:cost``)."""

    index: int
    cost: float
    prob: float | None


def iter_vw(
    filepath_or_buffer,
    adf: bool = False,
    n_actions: int | None = None,
    *,
    interactions: typing.Iterable[str] = (),
    merge_shared: bool = False,
    hash_bits: int | None = None,
    dsjson: bool = False,
) -> typing.Iterator[tuple[dict, list, LoggedLabel | None]]:
    """Iterate over VW contextual-bandit text, one ``(context, actions, label)`` per example.

    Features are flattened to dicts keyed ``"ns^feature"`` (see `regcb_stream.io.vw_features`)
    without VW's constant feature (RegCB adds its own intercept). Single-line input
    (``--cb_explore K``): ``actions`` are VW's action ids ``[1, ..., K]``. ADF input: the
    context is the ``shared`` line's features and ``actions`` one dict per action line; with
    ``merge_shared`` the context is ``{}`` and each action dict also holds the shared
    features and the ``-q`` crosses between shared and action namespaces, as VW (and
    ``regcb-stream --cb_explore_adf``) sees them. ``label`` is None for an unlabelled example.
    With ``hash_bits``, keys are VW's slots instead (``feature_hash & (2**hash_bits - 1)``, as
    VW's ``-b`` hashes them; features sharing a slot are summed), which
    ``RegCB(hash_bits=...)`` takes as they are.

    Parameters
    ----------
    filepath_or_buffer
        A path (``.gz`` and ``.zip`` are decompressed) or a text buffer (not closed here).
    adf
        Multi-line ADF examples instead of single-line ones.
    n_actions
        K, for single-line input.
    interactions
        VW's ``-q`` crosses (``"sa"``), computed within each line unless ``merge_shared``.
    merge_shared
        ADF only: merge the shared features into each action, as VW does.
    hash_bits
        Key features by their VW slot in a table of ``2**hash_bits`` (VW's ``-b``).
    dsjson
        The input is VW's Decision Service JSON (one decision per line, read as ADF
        examples: `regcb_stream.io.dsjson`; events without actions are skipped).

    Examples
    --------
    >>> import io
    >>> data = io.StringIO('''2:1:0.5 |s x:2 y
    ... |s x:-1
    ... ''')
    >>> for context, actions, label in iter_vw(data, n_actions=3):
    ...     print(context, actions, label)
    {'s^x': 2.0, 's^y': 1.0} [1, 2, 3] LoggedLabel(index=1, cost=1.0, prob=0.5)
    {'s^x': -1.0} [1, 2, 3] None
    >>> data = io.StringIO("shared |u a\\n|x b\\n0:0.5:0.25 |x c\\n\\n")
    >>> next(iter_vw(data, adf=True))
    ({'u^a': 1.0}, [{'x^b': 1.0}, {'x^c': 1.0}], LoggedLabel(index=1, cost=0.5, prob=0.25))
    >>> next(iter_vw(io.StringIO("1:0:0.5 |s x:2"), n_actions=2, hash_bits=18))[0]
    {45013: 2.0}

    """
    adf = adf or dsjson
    if not adf and (n_actions is None or n_actions < 1):
        raise ValueError(f"single-line input needs n_actions >= 1, got {n_actions!r}")
    interactions = tuple(interactions)
    flat = functools.partial(_flat, bits=hash_bits)
    should_close = isinstance(filepath_or_buffer, (str, os.PathLike))
    buffer = _open(filepath_or_buffer) if should_close else filepath_or_buffer
    try:
        if adf:
            for ex in iter_dsjson_adf(buffer) if dsjson else iter_adf(buffer):
                if isinstance(ex, Reward):
                    raise ValueError(f"line {ex.line_no}: a reward line; iter_vw reads "
                                     "joined logs (regcb-stream --reward_wait joins them)")
                yield (*_adf_inputs(ex, interactions, merge_shared, flat),
                       _logged(ex.label, 0))
        else:
            for ex in iter_cb(buffer, n_actions):
                context = flat(flatten, ex.features, interactions)
                yield context, list(range(1, n_actions + 1)), _logged(ex.label, 1)
    finally:
        if should_close:
            buffer.close()


def _open(path) -> typing.TextIO:
    if os.path.splitext(path)[1] in (".gz", ".zip"):
        return utils.open_filepath(path, "infer")
    return open(path, encoding="utf-8", newline="\n")  # as VW: a lone \r ends no line


def _flat(function, *args, bits: int | None):
    """``flatten`` or ``flatten_adf`` without the constant, keyed by names, or with ``bits``
    by VW slots (summing the features that share one)."""
    if bits is None:
        return function(*args, constant=False)
    out = function(*args, constant=False, keys=HashKeys())
    for row in out if isinstance(out, list) else [out]:
        slots: dict[int, float] = {}
        for key, value in row.items():
            slot = key & ((1 << bits) - 1)
            slots[slot] = slots.get(slot, 0.0) + value
        row.clear()
        row.update(slots)
    return out


def _adf_inputs(example, interactions: tuple, merge_shared: bool, flat) -> tuple[dict, list]:
    if merge_shared:
        return {}, flat(flatten_adf, example.shared, example.actions, interactions)
    context = flat(flatten, example.shared or (), interactions)
    return context, [flat(flatten, a, interactions) for a in example.actions]


def _logged(label, first: int) -> LoggedLabel | None:
    """The parser's label as a position in ``actions`` (its action ids start at ``first``)."""
    return None if label is None else LoggedLabel(label.action - first, label.cost, label.prob)
