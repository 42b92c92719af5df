"""The defaults, declared once: per model class, the settings and the report that chose them.

What a learner runs with by default depends on what its first example shows, the *model
class*: contexts with actions as labels get random Fourier features, dense ones and dicts
of numbers alike (River's, the command line's VW features: a dict is the vector of its
first context's names, `features.encoder.named_dense`), except dicts of indicators (every
value 1: words, one-hot categories), which get the linear model; actions given as dicts of
features one joint model, whose default depends on whether some action has features of its
own (VW's ADF with ``-q sa``) or every action shares them (a ranking). Each class's
settings were chosen by leave-one-dataset-out on the public streams, each budget among
those whose regret does not grow linearly over 200,000 rounds of a realizable problem on
any of twelve seeds; the report of the choice is named in its row. The random features'
ridge penalty, and the further penalty of the random features, are chosen by each learner
from its own labels (``"evidence"``: `RidgeOracle`), 1 where it cannot choose (the epoch
schedules, the bounded oracle).

`resolve` turns a class and the user's explicit arguments into the settings, so that the
learner, the command and the documentation agree (the tests check the README's table and
the command's help against `MODEL_CLASSES`).

>>> resolve("linear")
Settings(l2=10.0, prior='optimistic', mellowness=0.0003)
>>> resolve("shared features", mellowness=0.01)
Settings(l2=3.0, prior='midpoint', mellowness=0.01)
"""

from __future__ import annotations

from typing import NamedTuple


class ClassDefaults(NamedTuple):
    """One model class's defaults: the default oracle's ridge penalty and prior, the
    budget's mellowness (VW's ``c`` of ``c ln(K n) span^2``), what the class is, and the
    report of the benchmark that chose them."""

    l2: float | str
    prior: str
    mellowness: float
    what: str
    report: str


MODEL_CLASSES = {
    "random features": ClassDefaults(
        "evidence", "optimistic", 3e-3, "contexts of numbers (arrays, dicts: River, the command's "
        "--cb_explore), actions as labels: 64 random Fourier features of each context's "
        "direction and log-length appended",
        "docs/results/penalty_evidence.md"),
    "linear": ClassDefaults(
        10.0, "optimistic", 3e-4, "dict contexts of indicators (every value 1: words, "
        "one-hot categories), or random_features=0", "docs/results/defaults.md"),
    "own features": ClassDefaults(
        1.0, "optimistic", 1e-2, "actions as feature dicts, some features their own (ADF "
        "with -q sa)", "docs/results/joint_budget.md"),
    "shared features": ClassDefaults(
        3.0, "midpoint", 1e-3, "actions as feature dicts sharing every feature (rankings)",
        "docs/results/joint_defaults.md"),
}
PROVISIONAL = "random features"  # the class a learner reports before its first example

VARIANT = "optimistic"  # RegCB.Optimistic (docs/results/defaults.md)
TIES = "clipped"  # the optimistic rule's ties at the top (docs/results/optimistic_ties.md)
SCHEDULE = "online"  # a rebuild after every label, rank-one updates
RANDOM_FEATURES = 64  # appended to dense contexts (docs/results/random_features.md)
VW_MELLOWNESS = 0.1  # VW's own default: the command's with VW's regressor (--oracle vw)


class Settings(NamedTuple):
    """What a learner of one model class runs with: its default oracle's ridge penalty and
    prior, and the mellowness of its budget."""

    l2: float | str
    prior: str
    mellowness: float


def model_class(kind: str, random_features: bool) -> str:
    """The model class of a learner whose first example showed ``kind`` (`Rows.kind`:
    ``"labels"``, ``"own features"`` or ``"shared features"``) and whose encoder maps
    dense contexts to random features."""
    if kind == "labels":
        return "random features" if random_features else "linear"
    return kind


def resolve(model_class: str, *, mellowness: float | None = None) -> Settings:
    """The settings of ``model_class``, the user's explicit ``mellowness`` taking its
    place (an oracle's own ``l2`` and ``prior`` take theirs: `RidgeOracle.bind`)."""
    row = MODEL_CLASSES[model_class]
    return Settings(row.l2, row.prior, row.mellowness if mellowness is None else mellowness)
