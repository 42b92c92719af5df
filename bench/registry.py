"""Every benchmark behind the numbers in README.md and docs/results/, in the order they run.

Each :class:`Experiment` is a module run as ``python -m MODULE ARGS`` from the repository's
root: the paper's harness (``python -m bench``, :mod:`bench.harness`) or a module of
:mod:`bench.experiments`. ``inputs`` names what it reads that others write (an experiment
earlier in :data:`EXPERIMENTS`, or a committed file); ``outputs`` the files it writes, paths
from the repository's root: its report in ``docs/results/``, its committed data in
``bench/results/`` and the run caches in ``results/`` (not committed; a run resumes from
them) that a later experiment reads.

From the repository root (the whole list takes several hours on 2 cores)::

    .venv/bin/python -m bench.registry                     # every experiment, in order
    .venv/bin/python -m bench.registry defaults unseen_streams   # these, in registry order
    .venv/bin/python -m bench.registry --list              # name, inputs, outputs

>>> names = [e.name for e in EXPERIMENTS]
>>> names.index("defaults") < names.index("random_features") < names.index("unseen_streams")
True
>>> writer("docs/results/defaults.md").module
'bench.experiments.defaults'
"""

from __future__ import annotations

import argparse
import pathlib
import subprocess
import sys
from typing import NamedTuple

ROOT = pathlib.Path(__file__).resolve().parents[1]
HARNESS = "bench"  # python -m bench: the paper's harness (bench/__main__.py)
PAPER_REPORT = "docs/results/paper_evaluation.md"
#: what each run of the harness writes (the second adds families to the first's runs and
#: writes the report and figures again, from all of them)
HARNESS_OUTPUTS = (PAPER_REPORT, "docs/results/figures/validation.png",
                   "docs/results/figures/cdf.png", "docs/results/figures/width.png",
                   "results/harness/results.jsonl")


class Experiment(NamedTuple):
    """A benchmark: ``python -m module *args``, what it reads and what it writes."""

    name: str
    module: str
    args: tuple[str, ...] = ()
    inputs: tuple[str, ...] = ()  # experiments' names, or files (from the repository's root)
    outputs: tuple[str, ...] = ()  # files, from the repository's root

    @property
    def command(self) -> list[str]:
        return [sys.executable, "-m", self.module, *self.args]


def _experiment(name: str, *args: str, inputs: tuple[str, ...] = (), data: tuple[str, ...] = (),
                report: str | None = None) -> Experiment:
    """``bench.experiments.<name>``, writing ``docs/results/<report or name>.md`` and
    ``data``."""
    return Experiment(name, f"bench.experiments.{name}", args, inputs,
                      (f"docs/results/{report or name}.md", *data))


#: the order ``make bench`` runs them in: each after the experiments it reads
EXPERIMENTS: tuple[Experiment, ...] = (
    Experiment("paper", HARNESS, (), (), HARNESS_OUTPUTS),
    Experiment("paper_families", HARNESS,
               ("--families", "regcb-elim:river_bayes", "regcb-opt:river_bayes",
                "regcb-elim:ridge-summed", "regcb-opt:ridge-summed",
                "regcb-elim:gb5-summed", "regcb-opt:gb5-summed"),
               ("paper",), HARNESS_OUTPUTS),
    _experiment("gb5_speed", "--baseline", "1d76a9b"),
    Experiment("gb5_speed_issue", "bench.experiments.gb5_speed",
               ("--workload", "issue", "--baseline", "c4f73be", "--pairs", "3",
                "--output", "docs/results/gb5_speed_issue.md"),
               (), ("docs/results/gb5_speed_issue.md",)),
    _experiment("gb5_width"),
    _experiment("progressive_reward", data=("bench/results/progressive_reward.jsonl",)),
    # --update: keeps the runs of its committed data, runs only the missing ones
    _experiment("oracles", "--update",
                inputs=("progressive_reward", "bench/results/oracles.jsonl"),
                data=("bench/results/oracles.jsonl",)),
    _experiment("ridge_prior"),
    _experiment("throughput"),
    _experiment("command_speed"),
    _experiment("speed_profile"),  # needs Linux perf
    _experiment("soak"),
    _experiment("oracle_trees"),
    # reads the harness's report (its per-family table)
    _experiment("defaults", inputs=("paper", "paper_families"),
                data=("results/defaults.jsonl",)),
    # these four read defaults' runs
    _experiment("random_features", inputs=("defaults",),
                data=("results/random_features.jsonl",)),
    _experiment("feature_ridge", inputs=("defaults",), data=("results/feature_ridge.jsonl",)),
    _experiment("model_selection", inputs=("defaults",),
                data=("results/model_selection.jsonl",)),
    _experiment("joint_budget", inputs=("defaults",), data=("results/joint_budget.jsonl",)),
    _experiment("joint_defaults", data=("results/joint_defaults.jsonl",)),
    _experiment("long_horizon", data=("results/long_horizon.jsonl",)),
    # reads random_features' report (the eligible settings) and runs
    _experiment("unseen_streams", inputs=("random_features",),
                data=("results/unseen_streams.jsonl",)),
    # reads defaults' report (VW's tuned envelope of the UCI streams)
    _experiment("radial_features", inputs=("defaults",),
                data=("results/radial_features.jsonl",)),
    # reads defaults' report and unseen_streams' runs (the peers of both stream sets)
    _experiment("optimistic_ties", inputs=("defaults", "unseen_streams"),
                data=("results/optimistic_ties.jsonl",)),
    _experiment("feature_budget", inputs=("defaults", "unseen_streams"),
                data=("results/feature_budget.jsonl",)),
    # reads unseen_streams' report (VW's winner per stream)
    _experiment("fresh_envelope", inputs=("unseen_streams",),
                data=("results/fresh_envelope.jsonl",)),
    _experiment("input_forms", data=("results/input_forms.jsonl",)),
    _experiment("slots_quality", data=("results/slots_quality.jsonl",)),  # issue 47
    _experiment("vw_slot_files"),  # clones VW's repository
    _experiment("slots_speed"),
    # reads defaults' report (VW's tuned envelope of the UCI streams)
    _experiment("noisy_rewards", inputs=("defaults",), data=("results/noisy_rewards.jsonl",)),
    # reads the reports of defaults, unseen_streams and noisy_rewards (VW's, River's, GCV's)
    _experiment("penalty_evidence", inputs=("defaults", "unseen_streams", "noisy_rewards"),
                data=("results/penalty_evidence.jsonl",)),
    # reads unseen_streams' report (VW's winner per stream)
    _experiment("noisy_gap", inputs=("unseen_streams",), data=("results/noisy_gap.jsonl",)),
    _experiment("forgetting", data=("results/forgetting.jsonl",)),
    _experiment("change_detection", data=("results/change_detection.jsonl",)),
    _experiment("auto_budget_cost"),
    _experiment("blas_threads"),
    _experiment("high_dim"),
    _experiment("bounded_quality", data=("results/bounded_quality.jsonl",)),
    _experiment("oracle_threshold"),
    _experiment("reliability"),
    _experiment("interrupts"),
    _experiment("fuzz"),  # every reader and entry point (issue 44)
    _experiment("delayed_rewards"),
    _experiment("dsjson_speed"),
    _experiment("explore_eval_coverage", "--multiplier", "min", report="explore_eval"),
    _experiment("compare_speed"),
    _experiment("dask_sweep"),
    _experiment("replica_refresh"),
    _experiment("parallel_replay"),
    _experiment("command_cluster"),
)
BY_NAME = {e.name: e for e in EXPERIMENTS}


def writer(path: str) -> Experiment:
    """The last experiment of the list that writes ``path``."""
    return [e for e in EXPERIMENTS if path in e.outputs][-1]


def table() -> str:
    """Name, inputs and outputs of every experiment, one line each, in order."""
    rows = [("name", "inputs", "outputs")] + [
        (e.name, ", ".join(e.inputs) or "-", ", ".join(e.outputs)) for e in EXPERIMENTS]
    widths = [max(len(row[i]) for row in rows) for i in range(2)]
    return "\n".join(f"{name:{widths[0]}}  {inputs:{widths[1]}}  {outputs}"
                     for name, inputs, outputs in rows)


def selected(names: list[str]) -> list[Experiment]:
    """The experiments named (all if none), in the registry's order."""
    unknown = sorted(set(names) - set(BY_NAME))
    if unknown:
        raise SystemExit(f"unknown experiments: {', '.join(unknown)} (see --list)")
    return [e for e in EXPERIMENTS if not names or e.name in names]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.registry",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help="experiments to run, in the registry's order (default: all)")
    parser.add_argument("--list", action="store_true", help="print name, inputs and outputs")
    args = parser.parse_args(argv)
    if args.list:
        print(table())
        return 0
    for experiment in selected(args.names):
        print(f"== {experiment.name}:", " ".join(["python -m", experiment.module,
                                                  *experiment.args]), flush=True)
        subprocess.run(experiment.command, check=True, cwd=ROOT)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
