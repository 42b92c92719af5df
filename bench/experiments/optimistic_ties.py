"""The optimistic rule's ties at the top of the reward range (`RegCB(ties=...)`), chosen on
the 56 public streams.

RegCB.Optimistic plays an action of the largest upper bound, and the bounds are clipped to
the reward range. Every stream of the harness pays the top of the range (1) for the right
action, and with the optimistic prior every action starts at the top; on the noisy variants
the wrong actions pay Bernoulli(mu) with mu up to 0.99. So the upper bounds of several
actions, the best one and some the learner already knows to be worse, keep reaching the top
together, and ``ties="shared"`` (``RegCB()``'s until this choice) spreads the mass evenly
over them. Breaking those ties by the fit plays the tied action of the largest prediction
(``"fit"``) or of the largest prediction clipped to the range (``"clipped"``: predictions
above the top still tie). Any maximizer of the upper bound keeps the algorithm's regret
bound; which one is a matter of measurement.

Each rule of :data:`TIE_RULES` runs ``RegCB(ties=...)`` as
``bench/setting_study.py`` runs a setting's values (the 56 public streams, the
realizable problem and its long form; the optimistic variant: elimination has no such
ties), and is chosen as it chooses them.

From the repository root::

    .venv/bin/python -m bench.experiments.optimistic_ties [--jobs 2] [--reps 5]   # ~1 h

Runs are kept in ``results/optimistic_ties.jsonl`` (resumable); writes
``docs/results/optimistic_ties.md``.
"""

from __future__ import annotations

from bench import setting_study
from bench.experiments.noisy_rewards import peers_section
from bench.experiments.radial_features import STREAMS, stream_table
from bench.provenance import stamp
from regcb_stream import defaults
from regcb_stream.rules import TIE_RULES


def report(rows: list[dict], command: str) -> str:
    means = setting_study.means(rows, "ties")
    largest = setting_study.growth(rows, "ties")
    held, chosen = setting_study.held_out(means, setting_study.eligible(largest, TIE_RULES))
    lines = [
        "# The optimistic rule's ties at the top of the reward range (`RegCB(ties=...)`)", "",
        f"- command: `{command}`",
        f"- {stamp()}; {len(rows)} runs, {sum(r['seconds'] for r in rows):.0f} s of runs",
        "- protocol, streams and rule: the docstring of "
        "`bench/experiments/optimistic_ties.py`; `RegCB(ties=...)` with every other "
        f"default; `RegCB()`'s ties now: `{defaults.TIES!r}`"]
    lines += setting_study.eligibility_table(largest, TIE_RULES, "ties")
    lines += stream_table(means, TIE_RULES, held)
    lines += ["", "At or above `ties='shared'`: " + "; ".join(
        f"`{t}` on {sum(means[(t, s)] >= means[('shared', s)] for s in STREAMS)}/56 streams, "
        f"the first 500 rounds on "
        f"{sum(means[(t, s, 500)] >= means[('shared', s, 500)] for s in STREAMS)}/56"
        for t in TIE_RULES[1:]) + "."]
    lines.append("")
    for t in TIE_RULES[1:]:
        lines.append(f"- `{t}` minus `shared`, mean over the 56 streams (its standard error): "
                     + ", ".join(f"{label} {setting_study.difference(means, t, 'shared', rounds)}"
                                 for label, rounds in (("whole runs", None),
                                                       ("first 500 rounds", 500))))
    lines += setting_study.choice_lines(means, held, chosen, "shared", lambda t: f"`{t}`")
    lines += peers_section(means, TIE_RULES, lambda ties: f"`ties={ties!r}`")
    lines += setting_study.unseen_bars(means, TIE_RULES, lambda ties: f"`ties={ties!r}`")
    if chosen != defaults.TIES:
        lines += ["", f"`RegCB()`'s ties (`{defaults.TIES}`) are not the rule chosen: set "
                  "`TIES` in `regcb_stream/defaults.py`."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    setting_study.main(__spec__.name, __doc__.split("\n\n")[0], "ties", TIE_RULES, report,
                       argv)


if __name__ == "__main__":
    main()
