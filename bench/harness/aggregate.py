"""Averages over repetitions, parameter selection, envelopes and normalized relative loss.

Conventions (the paper's): a RegCB curve is its single best fixed parameter on the stream; a
baseline's curve is the pointwise maximum over its parameter values of the mean validation
reward (the generous "envelope"), and its best fixed parameter is reported too. The best
fixed parameter for validation maximizes the mean of the validation curve over its
checkpoints; for progressive reward it maximizes the mean progressive reward.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from bench.harness.algorithms import FAMILIES


@dataclass
class Setting:
    """One (stream, family, parameter), averaged over its repetitions."""

    stream: str
    family: str
    param: object
    t: np.ndarray
    validation: np.ndarray  # mean over repetitions, per checkpoint
    progressive: float
    progressive_std: float
    final_std: float
    reps: int
    seconds: float
    diagnostics: dict | None = field(default=None)


def average(records: list[dict]) -> dict[tuple, Setting]:
    """Group records by (stream, family, param) and average over repetitions."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in records:
        groups[(r["stream"], r["family"], r["param"])].append(r)
    out = {}
    for key, runs in groups.items():
        val = np.array([r["validation"] for r in runs])
        prog = np.array([r["progressive"] for r in runs])
        out[key] = Setting(*key, np.array(runs[0]["t"]), val.mean(axis=0), float(prog.mean()),
                           float(prog.std()), float(val[:, -1].std()), len(runs),
                           float(sum(r["seconds"] for r in runs)), _mean_diagnostics(runs))
    return out


def _mean_diagnostics(runs: list[dict]) -> dict | None:
    diags = [r["diagnostics"] for r in runs if r.get("diagnostics", {}).get("t")]
    if not diags or any(d["t"] != diags[0]["t"] for d in diags):
        return None
    return {"t": np.array(diags[0]["t"]),
            "width": np.mean([d["width"] for d in diags], axis=0),
            "plausible": np.mean([d["plausible"] for d in diags], axis=0)}


def settings_of(agg: dict, stream: str, family: str) -> list[Setting]:
    """Every parameter value of a family on a stream."""
    return [s for (st, fam, _), s in agg.items() if st == stream and fam == family]


def best_fixed(agg: dict, stream: str, family: str, metric: str = "validation"):
    """The best fixed setting (or None): ``metric`` is "validation" or "progressive"."""
    candidates = settings_of(agg, stream, family)
    if not candidates:
        return None
    key = (lambda s: s.validation.mean()) if metric == "validation" else (
        lambda s: s.progressive)
    return max(candidates, key=key)


def envelope(agg: dict, stream: str, family: str) -> np.ndarray | None:
    """Pointwise maximum over parameter values of the mean validation curve."""
    candidates = settings_of(agg, stream, family)
    return np.max([s.validation for s in candidates], axis=0) if candidates else None


def paper_curve(agg: dict, stream: str, family: str) -> np.ndarray | None:
    """The curve the paper plots: best fixed for RegCB, the envelope for the others."""
    if FAMILIES[family].kind == "regcb" or family == "supervised":
        best = best_fixed(agg, stream, family)
        return None if best is None else best.validation
    return envelope(agg, stream, family)


def value_at(agg: dict, stream: str, curve: np.ndarray, cutoff: int | None) -> float | None:
    """A curve's value at checkpoint ``cutoff`` (None: the last), None if not reached."""
    t = next(s.t for (st, _, _), s in agg.items() if st == stream)
    if cutoff is None:
        return float(curve[-1])
    hit = np.flatnonzero(t == cutoff)
    return float(curve[hit[0]]) if len(hit) else None


def relative_losses(agg: dict, streams, families, cutoff: int | None) -> dict[str, dict]:
    """Normalized relative loss per family and stream at a cutoff (best 0, worst 1).

    Streams whose training part is shorter than the cutoff are left out.
    """
    out: dict[str, dict] = {family: {} for family in families}
    for stream in streams:
        values = {}
        for family in families:
            curve = paper_curve(agg, stream, family)
            if curve is not None:
                values[family] = value_at(agg, stream, curve, cutoff)
        values = {f: v for f, v in values.items() if v is not None}
        if len(values) < 2:
            continue
        best, worst = max(values.values()), min(values.values())
        for family, v in values.items():
            out[family][stream] = (best - v) / (best - worst) if best > worst else 0.0
    return out


def width_slope(diagnostics: dict | None, min_t: int = 20) -> float | None:
    """Slope of the least-squares line of log(width) on log(t) (rounds ``>= min_t``)."""
    if diagnostics is None:
        return None
    t, width = diagnostics["t"], diagnostics["width"]
    keep = (t >= min_t) & (width > 0)
    if keep.sum() < 3:
        return None
    return float(np.polyfit(np.log(t[keep]), np.log(width[keep]), 1)[0])
