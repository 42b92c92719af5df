"""RegCB next to coba's VW learners, in coba's sequential evaluation, with coba's plot.

    python examples/coba_experiment.py                      # vehicle, plot to docs/results/coba_vehicle.png
    python examples/coba_experiment.py out.png --dataset letter --take 2000 --seeds 3

Needs coba and matplotlib (``pip install "regcb-stream[coba]"``; without matplotlib the table
is printed and the plot skipped with a message), and the shared data folder
(``$REGCB_DATA`` or ``../shared/data``): a missing data set stops the example before coba runs
(coba would log the error and record nothing). Each environment is one shuffle of the
data set (``--seeds`` of them); the actions are the class indices as strings, so that coba's
VW learners see one indicator feature per action (an integer action would be a single
numeric feature to VW). coba passes VW the cost ``-reward``, so VW's RegCB learners get
``--cb_min_cost -1 --cb_max_cost 0``: with VW's default range [0, 1] its bounds are clipped
to a range the costs never reach, and VW --regcb plays almost uniformly (0.25 on vehicle).
"""

from __future__ import annotations

import argparse
import collections
import pathlib

from coba import (
    Environments,
    Experiment,
    SequentialCB,
    VowpalEpsilonLearner,
    VowpalRegcbLearner,
    VowpalSquarecbLearner,
)

from regcb_stream.datasets.uci import load_multiclass
from regcb_stream.integrations.coba import MulticlassEnvironment, RegCBLearner

LEARNERS = {  # legend label -> learner, in coba's learner_id order
    "RegCB.Elim (regcb-stream)": RegCBLearner("elimination"),  # the defaults otherwise
    "RegCB.Opt (regcb-stream)": RegCBLearner("optimistic"),
    # coba gives VW the cost -reward, in [-1, 0]; VW's RegCB clips its bounds to
    # [cb_min_cost, cb_max_cost], [0, 1] unless told (then VW --regcb plays ~uniformly)
    "VW --regcb": VowpalRegcbLearner("elimination", cb_min_cost=-1, cb_max_cost=0),
    "VW --regcbopt": VowpalRegcbLearner("optimistic", cb_min_cost=-1, cb_max_cost=0),
    "VW --squarecb": VowpalSquarecbLearner(),
    "VW --epsilon 0.05": VowpalEpsilonLearner(0.05),
}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", nargs="?", default="docs/results/coba_vehicle.png", help="plot file")
    parser.add_argument("--dataset", default="vehicle", help="a UCI set of bench.datasets")
    parser.add_argument("--take", type=int, help="rounds per environment (default: all)")
    parser.add_argument("--seeds", type=int, default=5, help="shuffles of the data set")
    args = parser.parse_args(argv)
    try:
        load_multiclass(args.dataset)
    except (FileNotFoundError, ValueError) as missing:
        parser.error(str(missing))
    environments = Environments.from_custom(*[
        MulticlassEnvironment(args.dataset, seed=seed, take=args.take)
        for seed in range(args.seeds)
    ])
    experiment = Experiment(environments, list(LEARNERS.values()), SequentialCB())
    result = experiment.run(quiet=True, processes=1)
    if not print_table(result):
        raise SystemExit("coba recorded no interaction for some learner: rerun with "
                         "Experiment.run(quiet=False) to see coba's log")
    try:
        import matplotlib
    except ModuleNotFoundError:
        print('plot skipped: matplotlib is not installed (pip install "regcb-stream[coba]")')
        return
    matplotlib.use("Agg")
    save_plot(result, args.out, f"{args.dataset}: progressive reward ({args.seeds} shuffles)")
    print(f"plot saved to {args.out}")


def save_plot(result, out: str, title: str) -> None:
    """coba's learner plot, on our own axes: with ``out=path`` coba anchors the legend below
    the axes and ``tight_layout`` then crops it, so we place the legend and save."""
    import matplotlib.pyplot as plt

    figure, ax = plt.subplots(figsize=(8, 5))
    result.plot_learners(l="learner_id", labels=list(LEARNERS), title=title, ax=ax, out=None)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    pathlib.Path(out).parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, dpi=150, bbox_inches="tight")
    plt.close(figure)


def print_table(result) -> bool:
    """Progressive (mean) reward per learner over all environments and rounds; whether every
    learner has some."""
    rewards = collections.defaultdict(list)
    for row in result.interactions.to_dicts():
        rewards[row["learner_id"]].append(row["reward"])
    for learner_id, name in enumerate(LEARNERS):
        values = rewards[learner_id]
        mean = f"{sum(values) / len(values):.4f}" if values else "   n/a"
        print(f"{name:34s} mean reward {mean} ({len(values)} rounds)")
    return all(rewards[learner_id] for learner_id in range(len(LEARNERS)))


if __name__ == "__main__":
    main()
