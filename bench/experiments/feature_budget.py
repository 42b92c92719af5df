"""The random-features model's budget (``RegCB(mellowness=...)``) under its ridge penalty
chosen by GCV, chosen on the 56 public streams.

The random-features class's mellowness (3e-3, ``docs/results/feature_ridge.md``) was chosen
with the penalty fixed at 1, where a smaller budget let the regret grow almost linearly on
the long realizable problem (1.67 to 1.79 at 200,000 rounds for 1e-3 and 3e-4). The penalty
is now chosen by each learner from its labels (``l2="gcv"``, ``docs/results/noisy_rewards.md``),
and the streams where ``RegCB()`` trails VW's tuned envelope are all noisy ones where VW's
winner explores little (mellowness 1e-7 or 1e-8, or epsilon 1e-8). Each value of
:data:`MELLOWNESS` runs ``RegCB(mellowness=...)`` as ``bench/setting_study.py``
runs a setting's values (the 56 public streams, the realizable problem and its long form)
and is chosen as it chooses them.

From the repository root::

    .venv/bin/python -m bench.experiments.feature_budget [--jobs 2] [--reps 5]   # ~1 h

Runs are kept in ``results/feature_budget.jsonl`` (resumable); writes
``docs/results/feature_budget.md``.
"""

from __future__ import annotations

from bench import setting_study
from bench.experiments.noisy_rewards import peers_section
from bench.experiments.radial_features import stream_table
from bench.provenance import stamp
from regcb_stream import defaults

CLASS = "random features"
MELLOWNESS = (3e-3, 1e-3, 6e-4)  # the first: the class's default before this study
BEFORE = MELLOWNESS[0]


def label(m: float) -> str:
    return f"`mellowness={m:g}`"


def report(rows: list[dict], command: str) -> str:
    means = setting_study.means(rows, "mellowness")
    largest = setting_study.growth(rows, "mellowness")
    ok = setting_study.eligible(largest, MELLOWNESS)
    held, chosen = setting_study.held_out(means, ok)
    lines = [
        "# The random-features model's budget under its GCV penalty "
        "(`RegCB(mellowness=...)`)", "",
        f"- command: `{command}`",
        f"- {stamp()}; {len(rows)} runs, {sum(r['seconds'] for r in rows):.0f} s of runs",
        "- protocol, streams and rule: the docstrings of `bench/experiments/feature_budget.py`"
        " and `bench/setting_study.py`; `RegCB(mellowness=...)` with every other "
        f"default; the class's mellowness now: {defaults.MODEL_CLASSES[CLASS].mellowness:g}"]
    lines += setting_study.eligibility_table(largest, MELLOWNESS, "mellowness",
                                              lambda m: f"{m:g}")
    lines += stream_table(means, MELLOWNESS, held, label, lambda m: f"{m:g}")
    lines.append("")
    for m in MELLOWNESS[1:]:
        lines.append(f"- {label(m)} minus {label(BEFORE)}, mean over the 56 streams (its "
                     "standard error): " + ", ".join(
                         f"{what} {setting_study.difference(means, m, BEFORE, rounds)}"
                         for what, rounds in (("whole runs", None), ("first 500 rounds", 500),
                                              ("first 2,000 rounds", 2000))))
    lines += setting_study.choice_lines(means, held, chosen, BEFORE, label)
    lines += peers_section(means, MELLOWNESS, label)
    lines += setting_study.unseen_bars(means, MELLOWNESS, label)
    if chosen != defaults.MODEL_CLASSES[CLASS].mellowness:
        lines += ["", f"The class's mellowness ({defaults.MODEL_CLASSES[CLASS].mellowness:g}) is "
                  "not the value chosen: set it in `regcb_stream/defaults.py`."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    setting_study.main(__spec__.name, __doc__.split("\n\n")[0], "mellowness", MELLOWNESS,
                       report, argv)


if __name__ == "__main__":
    main()
