"""The markdown report of a sweep: headline bar, claims, aggregate losses, widths, tables."""

from __future__ import annotations

import numpy as np

from bench.harness import aggregate as ag
from bench.harness import claims
from bench.harness import headline as hl
from bench.harness.algorithms import FAMILIES
from bench.harness.problems import STREAMS, UCI_STREAMS

PROTOCOL = """## Protocol

- Streams: the 8 UCI sets (adult with the paper's preprocessing), their noisy variants
  (rewards drawn from the paper's mean matrices) and the Yahoo learning-to-rank sample as an
  ADF problem (each query a round, its first 6 documents the actions, reward relevance / 4);
  standardized features. Repetition k (0-4) seeds the permutation, the holdout split and
  the noisy draws, identical for every algorithm, and the uniforms that draw the actions.
- Holdout: the last 20 % of each permuted stream, at most 300 rows (standard error of a
  validation reward averaged over the 5 repetitions ≈ 0.012). Validation reward
  (the expected reward ``mean Σ_a pmf(a) r(a)`` of the current decision rule on the holdout,
  without learning) every T/15 rounds and at 100, 300 and 1,000; progressive reward = mean
  reward of the actions played on the training rounds.
- RegCB: this package's learner with a constant β on the normalized risk (the budget is
  β × labels; the families marked "β on the summed loss" hold β itself, as the paper's
  experiments' ``BinSearch`` does, so their version space shrinks as labels come). The
  paper's protocol: ridge oracle
  (``l2 = 1``, prior 0) on the ``sqrt2`` epoch schedule (one ``decide_many``/``learn_many``
  per epoch block, identical to round-by-round play), and River oracles likewise: linear
  regression by normalized SGD (rate 1/√t, each step divided by ``||x||²``; also with
  online updates) and by AdaGrad (rate 0.1), and ``BayesianLinearRegression`` (exact
  ridge bounds from its posterior variance: the paper's ridge computed by River). Our
  recommended configuration: the optimistic ridge (``RidgeOracle(l2=10,
  prior="optimistic")``: predictions shrink toward the best reward, so an action not yet
  tried looks good, as with VW's zero-initialized costs) with online updates (rebuilt after
  every label, as VW's explorers learn). RegCB with the paper's GB5 (LightGBM, 100 trees of
  depth 5, leaf values refit in closed form within ``sqrt2`` epochs) is in the sweep, and
  so are the baselines with GB5 below; the paper's ridge with online updates is run as the
  reference of the River oracles with online updates. Left out of the default sweep
  (``--families`` adds them): RegCB with VW's regressor (``bench/experiments/oracles.py``
  measures it), the optimistic ridge on ``sqrt2`` epochs, River's Bayesian linear
  regression (the paper's ridge, decision for decision, at ~50x its CPU seconds), and the
  ridge and GB5 families with β on the summed loss.
- Baselines (ridge, ``sqrt2`` schedule): ε-Greedy (exploration ``max(1/√t, ε)``, weights
  1/p), Bootstrap (8 Poisson(1)-weighted replicates, ``Mean + sqrt(β Var)``), ILTCB (Agarwal
  et al. 2014: the paper's coordinate descent over ridge argmax policies, ridge regression
  as the argmax oracle, ``μ = min(1/2K, c sqrt(1/(K τ)))``), SquareCB
  (inverse gap weighting, ``γ_t = c sqrt(K t)``); ε-Greedy, Bootstrap and ILTCB also with
  GB5 (the trees RegCB-GB5 uses; ILTCB's argmax oracle refits their leaf values by a
  boosting pass on splits grown as the history doubles); VW's
  ``--cb_explore_adf -q sa`` explorers ``--regcb``, ``--regcbopt``, ``--squarecb``,
  ``--epsilon``, ``--bag``, ``--cover`` on the same rounds (cost 1 − r, online updates).
  Supervised: ridge on every action's reward (the validation curve at t uses the first t
  rounds; its final value is the paper's line).
- What a new user gets: ``RegCB()`` with no arguments (``docs/results/defaults.md`` and
  ``docs/results/random_features.md`` say how the defaults were chosen), next to each VW explorer
  at its default setting and River's ``bandit.LinUCBDisjoint`` (its default ``alpha = 1``
  and its ``alpha`` grid as a tuned family; UCI streams only).
- 8 log-spaced parameter values per family (grids in
  ``bench/harness/algorithms.py``), 5 repetitions. RegCB curves use the best
  fixed parameter (highest mean validation over the checkpoints); baselines are shown as
  the pointwise maximum over their parameters (the paper's convention) and best fixed.
"""


def cdf_families(agg: dict) -> list[str]:
    """The algorithms compared in the normalized-loss aggregates: ridge RegCB (paper
    protocol), the baselines and VW's explorers (not the supervised reference)."""
    regcb = [f for f in claims.REGCB if f in hl.present(agg)]
    return regcb + [f for f in hl.present(agg) if FAMILIES[f].kind in ("baseline", "vw")]


def loss_table(agg: dict) -> list[str]:
    """Normalized relative loss per algorithm: data sets where best, ≤ 0.2, mean."""
    families = cdf_families(agg)
    cuts = [("all, 1,000 examples", STREAMS, 1000), ("all, end", STREAMS, None),
            ("clean UCI, end", [s for s in UCI_STREAMS if "-noise" not in s], None)]
    losses = [ag.relative_losses(agg, streams, families, cut) for _, streams, cut in cuts]
    head = " | ".join(f"{name}: best / ≤0.2 / mean" for name, _, _ in cuts)
    lines = [f"| algorithm | {head} |", "|---|" + "---:|" * len(cuts)]
    for f in families:
        cells = []
        for table in losses:
            v = np.array(list(table[f].values()))
            cells.append(f"{(v == 0).sum()} / {(v <= 0.2).sum()} / {v.mean():.2f} "
                         f"(of {len(v)})" if len(v) else "—")
        lines.append(f"| {FAMILIES[f].label} | " + " | ".join(cells) + " |")
    return lines


def width_table(agg: dict) -> list[str]:
    """Fitted width slopes next to the paper's."""
    lines = ["| stream | " + " | ".join(FAMILIES[f].label for f in claims.WIDTH_FAMILIES)
             + " | paper RegCB / Bootstrap (GB5) |",
             "|---|" + "---:|" * (len(claims.WIDTH_FAMILIES) + 1)]
    for row in claims.width_slopes(agg):
        cells = []
        for f in claims.WIDTH_FAMILIES:
            v = row[f]
            cells.append("—" if not v or v[0] is None else f"{v[0]:+.2f}" + (
                "" if v[1] is None else f" ({v[1]:g})"))
        paper = row["paper"]
        cells.append(f"{paper[0]:+.2f} / {paper[1]:+.2f}" if paper else "")
        lines.append(f"| {row['stream']} | " + " | ".join(cells) + " |")
    return lines


def plausible_table(agg: dict, streams=tuple(claims.PAPER_SLOPES),
                    rounds=(100, 1000, None)) -> list[str]:
    """The plausible-set size |A_t| (window-20 mean) of RegCB's best fixed settings at a few
    rounds (None: the last), on the streams the paper plots."""
    head = " | ".join(f"t = {t:,}" if t else "end" for t in rounds)
    lines = [f"| stream | family (β) | {head} |", "|---|---|" + "---:|" * len(rounds)]
    for stream in streams:
        for family in [f for f in claims.WIDTH_FAMILIES if f.startswith("regcb-")]:
            best = ag.best_fixed(agg, stream, family)
            diag = None if best is None else best.diagnostics
            if not diag or not len(diag["t"]):
                continue
            t, size = np.asarray(diag["t"]), np.asarray(diag["plausible"], dtype=float)
            picked = [size[min(np.searchsorted(t, r), len(t) - 1)] if r else size[-1]
                      for r in rounds]
            cells = ["—" if np.isnan(v) else f"{v:.2f}" for v in picked]
            param = "" if best.param is None else f" ({best.param:g})"
            lines.append(f"| {stream} | {FAMILIES[family].label}{param} | "
                         + " | ".join(cells) + " |")
    return lines


def stream_table(agg: dict, stream: str) -> list[str]:
    """Per-dataset table: every family's best fixed values and envelope."""
    lines = [("| algorithm | best fixed (validation) | final validation ± std "
              "| at 1,000 | envelope final | best progressive | run s |"),
             "|---|---|---:|---:|---:|---:|---:|"]
    for f in hl.present(agg):
        best = ag.best_fixed(agg, stream, f)
        if best is None:
            continue
        prog = ag.best_fixed(agg, stream, f, "progressive")
        at = ag.value_at(agg, stream, best.validation, 1000)
        env = ag.envelope(agg, stream, f)
        seconds = sum(s.seconds for s in ag.settings_of(agg, stream, f))
        param = "—" if best.param is None else f"{FAMILIES[f].param}={best.param:g}"
        lines.append(f"| {FAMILIES[f].label} | {param} | {best.validation[-1]:.4f} ± "
                     f"{best.final_std:.4f} | {'—' if at is None else f'{at:.4f}'} | "
                     f"{env[-1]:.4f} | {prog.progressive:.4f} | {seconds:.0f} |")
    return lines


def _paper_claims(agg: dict, families: list, regcb, baselines, bootstrap) -> list:
    """The paper's four headline claims for one oracle class."""
    return [
        ("RegCB beats the baselines on the clean UCI sets",
         claims.beats_baselines_clean(agg, baselines, regcb)),
        ("Bootstrap is close (or slightly ahead) on the noisy sets and yahoo",
         claims.bootstrap_close_noisy(agg, regcb=regcb, bootstrap=bootstrap)),
        ("RegCB is almost always within 20% of the best",
         claims.within_20_percent(agg, families, regcb)),
        ("Elimination is slightly ahead of optimistic in aggregate",
         claims.elimination_vs_optimistic(agg, families, regcb)),
    ]


def render(records: list[dict], meta: dict) -> str:
    """The whole report."""
    agg = ag.average(records)
    rows = hl.comparisons(agg)
    score = hl.bar(rows)
    families = cdf_families(agg)
    verdicts = [(name, claim, verdict) for name, (regcb, baselines, boot) in
                claims.CLASSES.items() for claim, verdict in _paper_claims(
                    agg, [f for f in hl.present(agg) if f in regcb or f in baselines], regcb,
                    baselines, boot)]
    later = [
        ("RegCB beats every baseline on the clean UCI sets",
         claims.beats_baselines_clean(agg)),
        ("RegCB is almost always within 20% of the best of all",
         claims.within_20_percent(agg, families)),
    ]
    out = meta_lines(meta, records) + [PROTOCOL]
    out += ["## Headline: progressive reward, RegCB's best fixed setting vs VW's best explorer",
            "", *hl.headline_table(rows), "",
            ("¹ ridge RegCB (elimination or optimistic) on the paper's `sqrt2` schedule only. "
             "² full-information ridge, greedy, `sqrt2` schedule."), "",
            (f"**Bar: RegCB wins on {score['wins']}/{score['streams']} UCI streams (need "
             f"{score['need']}) and is within {hl.BAR_TOLERANCE} on "
             f"{score['close'] - score['wins']} of the other "
             f"{score['streams'] - score['wins']} → {'PASS' if score['pass'] else 'FAIL'}**"),
            "", *hl.losses_explained(rows), "",
            "## What a new user gets: the defaults next to the peers at theirs", "",
            *hl.defaults_table(agg), "",
            ("Progressive reward; the peers' columns are each at its own default setting "
             "(VW's `--cb_explore_adf -q sa` plus the flag; River's `LinUCBDisjoint()`), the "
             "tuned columns the best fixed setting per stream."), "",
            "## The paper's claims, one by one", "",
            ("As the paper states them, per oracle class: ridge RegCB against the paper's "
             "baselines with ridge (ε-Greedy, ILTCB, Bootstrap), and RegCB-GB5 against "
             "the same baselines with GB5; each with RegCB's constant β on the normalized "
             "risk (the paper's notation) and on the summed loss (what its experiments ran: "
             "its `BinSearch` compares summed losses with `R_min + β`, so the version space "
             "shrinks as labels come). "
             "\"not measured\": a family of the comparison has no runs."), "",
            "| claim | oracle class | verdict | evidence |", "|---|---|---|---|"]
    out += [f"| {claim} | {name} | **{v}** | {e} |" for name, claim, (v, e) in verdicts]
    out += ["", ("Against the later baselines as well (not the paper's claim: SquareCB, "
                 "published in 2020, and VW's explorers join the paper's three):"), "",
            "| claim | verdict | evidence |", "|---|---|---|"]
    out += [f"| {claim} | **{v}** | {e} |" for claim, (v, e) in later]
    out += ["", "## Confidence width (log-log slope of the window-20 width vs t)", "",
            *width_table(agg), "",
            ("Plausible-set size |A_t| (mean over a window of 20 rounds, best fixed setting; "
             "the paper plots it without numbers):"), "", *plausible_table(agg), "",
            "![width](figures/width.png)", "",
            "## Normalized relative loss (the paper's Fig. 2)", "", *loss_table(agg), "",
            "![cdf](figures/cdf.png)", "",
            "## RegCB's oracles on the clean UCI streams (best fixed progressive reward)", "",
            *hl.oracle_table(agg), "", "## Best fixed progressive reward per family", "",
            *hl.explorer_table(agg), "", "## Cost per family", "", *hl.cost_table(records),
            "", "## Per-dataset validation tables", "",
            "![validation](figures/validation.png)", ""]
    for stream in hl.streams_of(agg):
        out += [f"### {stream}", "", *stream_table(agg, stream), ""]
    return "\n".join(out) + "\n"


def meta_lines(meta: dict, records: list[dict]) -> list[str]:
    """Header: how the results were made and how long it took (each session of the sweep:
    runs of families added later, or beside it in another process, make more than one)."""
    run_seconds = sum(r["seconds"] for r in records)
    sessions = meta.get("sessions") or [{"command": meta.get("command", "python -m "
                                                               "bench"),
                                         "ran": len(records), "seconds": meta.get("wall", 0),
                                         "jobs": meta.get("jobs", "?")}]
    lines = ["# Benchmark results: RegCB against the paper's baselines and VW's explorers", "",
             (f"- runs: {len(records):,}; sum of per-run times {run_seconds:.0f} s; "
              f"{meta.get('nproc', '?')} cores; the sessions that made them (they may have "
              "run side by side):")]
    lines += [f"  - `{s['command']}`: {s['ran']:,} runs in {s['seconds']:.0f} s on "
              f"{s['jobs']} worker process(es)" for s in sessions]
    return lines + [f"- generated: {meta.get('date', '')}; code {meta.get('code', '')}", ""]
