"""River regressors as RegCB oracles, with bounds by VW's sensitivity rule or, for River's
Bayesian linear regression, the exact ridge ellipsoid.

Each model is a clone of a River regressor (or pipeline) that learns one example at a time
from ``{feature index: value}`` dicts. The version space of a gradient learner has no closed
form, so the bounds follow VW's ``--regcb``: ask how far the prediction would move toward
a fake label just outside the reward range per unit of importance weight (the sensitivity),
and move it as far as the loss budget allows (:func:`regcb_stream.bounds.sensitivity_bounds`).
``linear_model.BayesianLinearRegression`` is ridge regression (``l2 = alpha / beta``) and
reports its posterior variance, which gives the ridge oracle's own bounds
(:func:`regcb_stream.bounds.ellipsoid_bounds`).
"""

from __future__ import annotations

import copy
import inspect
import pickle

import numpy as np
from river import compose, linear_model, optim

from regcb_stream.bounds import ellipsoid_bounds, sensitivity_bounds
from regcb_stream.oracles.base import Oracle
from regcb_stream.parameters import check_oracle_arguments

# The weight trial: a few examples, then one learned with weight 1 and with weight 10.
_WARM_UP = (({0: 1.0, 1: 0.0}, 0.0), ({0: 0.0, 1: 1.0}, 1.0), ({0: 1.0, 1: 1.0}, 0.5),
            ({0: -1.0, 1: 0.5}, 0.2))
_TRIAL = ({0: 0.5, 1: -1.0}, 2.0)


class RiverOracle(Oracle):
    """A River regressor per model, with sensitivity bounds.

    The models are fresh clones of ``regressor`` (one per action for the product class,
    a single one for the joint class), fed the nonzero features of a row as ``{index:
    value}`` (so a scaler's statistics count only nonzero occurrences). Learning calls
    ``learn_one(x, y, w=weight)`` on the live model (with ``normalize``, ``w=weight /
    ||x||^2``). A rebuild freezes the models that learned since the last one; decisions use
    the frozen state.

    For ``linear_model.BayesianLinearRegression`` (with ``sensitivity="auto"``) the bounds
    are exact: its posterior after ``n`` examples is that of ridge regression with ``l2 =
    alpha / beta``, and its predictive variance ``1 / beta + x^T S x`` gives ``phi^T A^-1
    phi = beta x^T S x``, so the bounds are the ridge oracle's ellipsoid (``alpha=1,
    beta=1`` is the paper's ridge; not with ``smoothing``, which averages the examples'
    statistics instead of summing them, so the posterior and the bounds stop narrowing as
    labels come). It takes
    no weight, so an example of weight ``w`` is learned as ``(sqrt(w) x, sqrt(w) y)``,
    which is the weighted least-squares step exactly (the model has no intercept; the
    rows carry RegCB's constant feature).

    For other regressors, the sensitivity toward a fake label (``high + 1`` for the upper
    bound, ``low - 1`` for the lower) is found in one of two ways:

    - closed form, for ``linear_model.LinearRegression`` with ``optim.SGD``, squared loss,
      no ``l1``/``l2`` and zero initial weights: one step with weight ``w`` on label ``y``
      moves the prediction ``p`` at ``x`` by ``-2 w (p - y) (lr ||x||^2 + intercept_lr)``
      (rates at the model's step count), exactly linear in ``w``: the sensitivity is
      ``2 |p - y| (lr ||x||^2 + intercept_lr)`` (River's gradient clipping included; with
      ``normalize``, divided by ``||x||^2``). With ``optim.AdaGrad`` the step divides
      each feature's move by the root of its squared gradients so far, the probe's own
      included, ``lr x_i^2 / sqrt(G_i + g^2 x_i^2 + eps)`` for the probe's gradient ``g``:
      the same as the probe's, in closed form. Vectorized over contexts and actions;
      freezing copies the weights (and AdaGrad's sums) into arrays, O(D) per model that
      learned.
    - a probe, for any other regressor: copy the frozen model, learn the fake example with
      ``probe_weight``, and divide the change of the prediction at ``x`` by that weight.
      Cost per (context, action) and bound side: one copy (unpickling: 8 us for a linear
      model, 130 us for a small Hoeffding tree), one ``learn_one``, one ``predict_one``.
      Freezing pickles and unpickles each model that learned: a deep copy, O(model size).

    Other regressors that would drop the weight are refused with a ``ValueError``: by
    signature (``learn_one`` without ``w``, or a pipeline whose last step lacks it) and by a
    trial (one example learned with ``w=1`` and ``w=10`` moves the prediction to the same
    place; a trial where neither moves it is inconclusive and accepted).

    Parameters
    ----------
    regressor
        A River regressor or pipeline that honours sample weights; used as a template
        (cloned, never trained). It must be picklable.
    reward_range
        ``(low, high)`` of the rewards, which places the fake labels (``RegCB`` sets it to
        its own on its copy of the oracle).
    sensitivity
        ``"auto"`` (closed form when it applies, else the probe) or ``"probe"``.
    probe_weight
        Importance weight of the probe example.
    normalize
        Divide each example's weight by ``||x||^2`` (the row's squared norm, constant
        feature included; an all-zero row keeps its weight): normalized steps (NLMS) for
        gradient learners, so an SGD rate below 2 cannot diverge whatever the features'
        scale. Refused for the Bayesian regression, which solves its least squares exactly.

    Examples
    --------
    >>> from river import optim
    >>> oracle = RiverOracle(linear_model.LinearRegression(optim.SGD(0.1), intercept_lr=0.1))
    >>> oracle.grow(n_models=1, dim=2)
    >>> for x, y in [([1.0, 0.0], 1.0), ([1.0, 1.0], 0.0)] * 20:
    ...     oracle.learn(np.array(x), 0, y)
    >>> oracle.rebuild()
    >>> phi = np.array([[[1.0, 0.0]]])
    >>> prediction, low, high = oracle.bounds(phi, np.array([0]), budget=0.05)
    >>> [round(float(v[0, 0]), 3) for v in (low, prediction, high)]
    [0.821, 0.922, 1.025]
    >>> exact = RiverOracle(linear_model.BayesianLinearRegression())
    >>> exact.grow(n_models=1, dim=2)
    >>> for x, y in [([1.0, 0.0], 1.0), ([1.0, 1.0], 0.0)] * 20:
    ...     exact.learn(np.array(x), 0, y)
    >>> exact.rebuild()
    >>> prediction, low, high = exact.bounds(phi, np.array([0]), budget=0.05)
    >>> [round(float(v[0, 0]), 3) for v in (low, prediction, high)]
    [0.863, 0.911, 0.959]
    >>> RiverOracle(linear_model.PARegressor())
    Traceback (most recent call last):
    ...
    ValueError: the 'regressor' parameter of RiverOracle must be a regressor that honours ...

    """

    def __init__(self, regressor, *, reward_range: tuple[float, float] = (0.0, 1.0),
                 sensitivity: str = "auto", probe_weight: float = 1.0,
                 normalize: bool = False):
        check_oracle_arguments(RiverOracle, self, locals())
        lo, hi = (float(v) for v in reward_range)
        self._bayes = type(regressor) is linear_model.BayesianLinearRegression
        if normalize and self._bayes:
            raise ValueError("normalize is for gradient learners; BayesianLinearRegression "
                             "solves its least squares exactly")
        if not self._bayes:
            _check_regressor(regressor)
        self.regressor = regressor
        self.reward_range = (lo, hi)
        self.sensitivity = sensitivity
        self.probe_weight = float(probe_weight)
        self.normalize = bool(normalize)
        self._posterior = sensitivity == "auto" and self._bayes
        self._closed = sensitivity == "auto" and _closed_form(regressor)
        self._adagrad = self._closed and type(regressor.optimizer) is optim.AdaGrad
        self._live: list = []
        self._frozen: list = []  # probe: the frozen models, and pickled to copy for probes
        self._blobs: list[bytes] = []
        self._dirty: set[int] = set()
        self._coef = np.zeros((0, 0))  # closed form: frozen weights, intercepts, rates
        self._intercept = np.zeros(0)
        self._rates = np.zeros((0, 2))
        self._g2 = np.zeros((0, 0))  # AdaGrad's closed form: frozen sums of squared gradients

    @property
    def uses_closed_form(self) -> bool:
        """Whether the bounds come in closed form (linear regression by SGD or AdaGrad, or
        the exact ellipsoid of Bayesian linear regression) rather than by probing."""
        return self._closed or self._posterior

    @property
    def regressors(self) -> list:
        """The live regressor of each model (clones of ``regressor``)."""
        return list(self._live)

    def grow(self, n_models: int, dim: int, max_dim: int | None = None) -> None:
        """Add fresh clones of the regressor as new models (and room for new features in
        the closed form's weight array)."""
        m0, d0 = self._coef.shape
        m, d = max(n_models, m0), max(dim, d0)
        if (m, d) == (m0, d0):
            return
        self._coef = np.pad(self._coef, ((0, m - m0), (0, d - d0)))
        self._g2 = np.pad(self._g2, ((0, m - m0), (0, d - d0)))
        self._intercept = np.r_[self._intercept, np.zeros(m - m0)]
        self._rates = np.r_[self._rates, np.zeros((m - m0, 2))]
        for model in range(m0, m):
            self._live.append(self.regressor.clone())
            self._frozen.append(None)
            self._blobs.append(b"")
            self._freeze(model)

    def learn(self, x: np.ndarray, model: int, y: float, weight: float = 1.0) -> None:
        """``learn_one(x, y, w=weight)`` on the live copy of ``model``."""
        self._learn_one(self._live[model], self._dict(x), float(y), float(weight))
        self._dirty.add(model)

    def rebuild(self) -> None:
        """Freeze the models that learned since the last rebuild."""
        for model in sorted(self._dirty):
            self._freeze(model)
        self._dirty.clear()

    def predict(self, phi: np.ndarray, models) -> np.ndarray:
        """Predictions of the frozen models, shape ``(n, K)``."""
        ids = np.arange(len(self._live))[models]
        if self._closed:
            return self._linear(phi, ids)[0]
        out = np.empty(phi.shape[:2])
        for i, k, x in self._cells(phi):
            out[i, k] = self._frozen[ids[k]].predict_one(x)
        return out

    def bounds(self, phi: np.ndarray, models, budget: float):
        """Prediction and the sensitivity bounds below and above it, unclipped."""
        ids = np.arange(len(self._live))[models]
        lo, hi = self.reward_range
        if self._posterior:
            prediction, variance = (np.empty(phi.shape[:2]) for _ in range(2))
            beta = self.regressor.beta
            for i, k, x in self._cells(phi):
                posterior = self._frozen[ids[k]].predict_one(x, with_dist=True)
                prediction[i, k] = posterior.mu
                variance[i, k] = max(beta * posterior.sigma ** 2 - 1.0, 0.0)
            return (prediction, *ellipsoid_bounds(prediction, variance, budget))
        if self._closed:
            prediction, sq_norm = self._linear(phi, ids)
            scale = np.where(sq_norm > 0, sq_norm, 1.0) if self.normalize else 1.0
            up = self._gradient(hi + 1.0 - prediction, scale)  # River's clipped gradient
            down = self._gradient(prediction - (lo - 1.0), scale)
            if self._adagrad:
                pw = self.probe_weight
                up, down = (g * self._adagrad_step(phi, ids, g * pw) for g in (up, down))
            else:
                step = self._rates[ids, 0] * sq_norm + self._rates[ids, 1]
                up, down = up * step, down * step
        else:
            prediction, up, down = (np.empty(phi.shape[:2]) for _ in range(3))
            for i, k, x in self._cells(phi):
                model = ids[k]
                prediction[i, k] = p = self._frozen[model].predict_one(x)
                up[i, k] = self._probe(model, x, hi + 1.0, p)
                down[i, k] = self._probe(model, x, lo - 1.0, p)
        return (prediction, *sensitivity_bounds(prediction, up, down, budget, self.reward_range))

    # -- internals ---------------------------------------------------------------------

    def _freeze(self, model: int) -> None:
        live = self._live[model]
        if self._closed:
            weights = live.weights
            self._coef[model] = 0.0
            self._coef[model, list(weights)] = list(weights.values())
            self._intercept[model] = live.intercept
            t = live.optimizer.n_iterations
            self._rates[model] = (live.optimizer.lr.get(t), live.intercept_lr.get(t))
            if self._adagrad:
                g2 = live.optimizer.g2
                self._g2[model] = 0.0
                self._g2[model, list(g2)] = list(g2.values())
        else:
            self._blobs[model] = pickle.dumps(live, pickle.HIGHEST_PROTOCOL)
            self._frozen[model] = pickle.loads(self._blobs[model])

    def _learn_one(self, model, x: dict, y: float, weight: float) -> None:
        if self.normalize:
            weight /= sum(v * v for v in x.values()) or 1.0  # an all-zero row: as it is
        if self._bayes:  # weighted least squares through the rows: exact, no intercept
            root = weight ** 0.5
            model.learn_one({key: value * root for key, value in x.items()}, y * root)
        else:
            model.learn_one(x, y, w=weight)

    def _probe(self, model: int, x: dict, label: float, before: float) -> float:
        """Change of the prediction at ``x`` per unit weight after learning ``label``."""
        twin = pickle.loads(self._blobs[model])
        self._learn_one(twin, x, label, self.probe_weight)
        return abs(twin.predict_one(x) - before) / self.probe_weight

    def _gradient(self, distance: np.ndarray, scale=1.0) -> np.ndarray:
        """River's clipped gradient of the probe, per unit weight (``scale``: the probe's
        weight is divided by it, ``||x||^2`` when normalized)."""
        pw, clip = self.probe_weight, self.regressor.clip_gradient
        return np.minimum(2.0 * np.abs(distance) * pw / scale, clip) / pw

    def _adagrad_step(self, phi: np.ndarray, ids: np.ndarray, grad: np.ndarray) -> np.ndarray:
        """How far one AdaGrad step moves the prediction per unit of its loss gradient
        ``grad`` (the probe's, clipped; ``(n, K)``): ``lr sum_i x_i^2 / sqrt(G_i + grad^2
        x_i^2 + eps) + intercept_lr``, River's step, which adds its own squared gradient
        to the sums ``G`` before dividing by them."""
        g2, eps = self._g2[ids, : phi.shape[-1]], self.regressor.optimizer.eps
        out = np.empty(phi.shape[:2])
        for start in range(0, len(phi), 256):  # (256, K, D) at a time
            x2 = np.square(phi[start : start + 256])
            c2 = np.square(grad[start : start + 256])[..., None]
            out[start : start + 256] = (x2 / np.sqrt(g2 + c2 * x2 + eps)).sum(axis=-1)
        return self._rates[ids, 0] * out + self._rates[ids, 1]

    def _linear(self, phi: np.ndarray, ids: np.ndarray):
        """Frozen linear predictions and ``||x||^2``, each ``(n, K)``."""
        coef, intercept = self._coef[ids, : phi.shape[-1]], self._intercept[ids]
        if phi.strides[1] == 0:  # product class: one context row for every action
            x = phi[:, 0, :]
            return x @ coef.T + intercept, np.einsum("nd,nd->n", x, x)[:, None]
        return np.einsum("nkd,kd->nk", phi, coef) + intercept, np.einsum("nkd,nkd->nk", phi, phi)

    def _cells(self, phi: np.ndarray):
        """``(row, column, feature dict)`` for every cell, one dict per row when shared."""
        shared = phi.strides[1] == 0
        for i in range(phi.shape[0]):
            row = self._dict(phi[i, 0]) if shared else None
            for k in range(phi.shape[1]):
                yield i, k, row if shared else self._dict(phi[i, k])

    @staticmethod
    def _dict(x: np.ndarray) -> dict:
        index = np.flatnonzero(x)
        return dict(zip(index.tolist(), x[index].tolist()))


def _closed_form(regressor) -> bool:
    """Whether the closed-form sensitivity applies (see :class:`RiverOracle`)."""
    return (type(regressor) is linear_model.LinearRegression
            and type(regressor.optimizer) in (optim.SGD, optim.AdaGrad)
            and type(regressor.loss) is optim.losses.Squared and regressor.l1 == regressor.l2 == 0
            and isinstance(regressor.initializer, optim.initializers.Zeros))


def _check_regressor(regressor) -> None:
    """Refuse, with an error naming it, a regressor that would drop the weight."""
    name = type(regressor).__name__
    try:
        pickle.dumps(regressor)
    except Exception as error:  # noqa: BLE001 - any pickling failure means the same thing
        raise ValueError(f"the 'regressor' parameter of RiverOracle must be picklable; {name}: "
                         f"{error}") from error
    if reason := _weight_refusal(regressor):
        raise ValueError(f"the 'regressor' parameter of RiverOracle must be a regressor that "
                         f"honours sample weights; {name} " + reason)


def _weight_refusal(regressor) -> str | None:
    """Why ``regressor`` would drop the importance weight, or None."""
    final = regressor
    while isinstance(final, compose.Pipeline):
        final = list(final.steps.values())[-1]
    if not _accepts_weight(final):
        if final is regressor:
            return "has no 'w' parameter in learn_one"
        return f"drops it: its last step, {type(final).__name__}, has no 'w' in learn_one"
    model, (x, y) = regressor.clone(), _TRIAL
    try:
        for features, target in _WARM_UP:
            model.learn_one(features, target)
        before, after = model.predict_one(x), []
        for weight in (1.0, 10.0):
            twin = copy.deepcopy(model)
            twin.learn_one(x, y, w=weight)
            after.append(twin.predict_one(x))
    except Exception as error:  # noqa: BLE001 - report whatever the regressor raised
        return f"failed on integer-keyed feature dicts ({type(error).__name__}: {error})"
    if after[0] == after[1] != before:
        return "ignores it: learning an example with w=1 or w=10 gives the same prediction"
    return None


def _accepts_weight(estimator) -> bool:
    params = inspect.signature(type(estimator).learn_one).parameters.values()
    return any(p.name == "w" or p.kind is p.VAR_KEYWORD for p in params)
