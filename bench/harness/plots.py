"""Figures of a sweep (matplotlib, Agg backend): validation curves, loss CDFs, widths."""

from __future__ import annotations

import pathlib

import numpy as np

from bench.harness import aggregate as ag
from bench.harness import claims
from bench.harness.algorithms import FAMILIES
from bench.harness.problems import STREAMS, UCI_STREAMS

CURVES = ("regcb-elim:ridge", "regcb-opt:ridge", "egreedy", "bootstrap", "iltcb", "squarecb",
          "vw-regcbopt", "vw-bag", "vw-cover", "supervised")
WIDTH_STREAMS = tuple(claims.PAPER_SLOPES)  # the streams the paper plots widths of
DPI = 72


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _log_x(ax) -> None:
    """Log x axis with labels on the decades only."""
    from matplotlib.ticker import NullFormatter

    ax.set_xscale("log")
    ax.xaxis.set_minor_formatter(NullFormatter())


def _style(family: str) -> dict:
    styles = {"supervised": {"color": "black", "linestyle": ":"},
              "regcb-elim:ridge": {"color": "C3", "linewidth": 2},
              "regcb-opt:ridge": {"color": "C1", "linewidth": 2}}
    return styles.get(family, {"linestyle": "--" if family.startswith("vw-") else "-"})


def validation(agg: dict, path: pathlib.Path) -> None:
    """Validation reward vs t (log x) per stream: RegCB best fixed, others' envelopes."""
    plt = _pyplot()
    streams = [s for s in STREAMS if any(k[0] == s for k in agg)]
    cols = 3
    rows = -(-len(streams) // cols)
    height = 2.6 * rows + 1.0  # one inch at the bottom for the axis label and the legend
    fig, axes = plt.subplots(rows, cols, figsize=(12, height), squeeze=False)
    for ax, stream in zip(axes.flat, streams):
        t = next(s.t for (st, _, _), s in agg.items() if st == stream)
        for family in CURVES:
            curve = ag.paper_curve(agg, stream, family)
            if curve is not None:
                ax.plot(t, curve, label=FAMILIES[family].label, **_style(family))
        _log_x(ax)
        ax.set_title(stream, fontsize=9)
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[len(streams):]:
        ax.axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=5, fontsize=8)
    fig.supxlabel("training rounds t (log)", fontsize=9, y=0.8 / height)
    fig.supylabel("validation reward", fontsize=9)
    fig.tight_layout(rect=(0, 1.0 / height, 1, 1))
    fig.savefig(path, dpi=DPI)
    plt.close(fig)


def cdf(agg: dict, families: list[str], path: pathlib.Path) -> None:
    """Normalized-relative-loss CDFs: all at 1,000 examples, all at the end, clean UCI."""
    plt = _pyplot()
    clean = [s for s in UCI_STREAMS if "-noise" not in s]
    panels = [("all data sets, 1,000 examples", STREAMS, 1000),
              ("all data sets, end", STREAMS, None), ("clean UCI, end", clean, None)]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    grid = np.linspace(0, 1, 201)
    for ax, (title, streams, cut) in zip(axes, panels):
        losses = ag.relative_losses(agg, streams, families, cut)
        for family in families:
            v = np.array(list(losses[family].values()))
            if len(v):
                ax.plot(grid, (v[None, :] <= grid[:, None] + 1e-12).sum(axis=1),
                        label=FAMILIES[family].label, **_style(family))
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("normalized relative loss", fontsize=8)
        ax.tick_params(labelsize=7)
    axes[0].set_ylabel("data sets with this loss or less", fontsize=8)
    axes[-1].legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)


def widths(agg: dict, path: pathlib.Path) -> None:
    """Width of the optimistic action (log-log, with fitted lines) and plausible-set size."""
    plt = _pyplot()
    streams = [s for s in WIDTH_STREAMS if any(k[0] == s for k in agg)]
    if not streams:
        return
    fig, axes = plt.subplots(2, len(streams), figsize=(4.2 * len(streams), 6), squeeze=False)
    for col, stream in enumerate(streams):
        for family in ("regcb-opt:ridge", "regcb-opt:gb5", "regcb-opt:theory", "bootstrap"):
            best = ag.best_fixed(agg, stream, family)
            diag = None if best is None else best.diagnostics
            if diag is None:
                continue
            label = FAMILIES[family].label + ("" if best.param is None
                                              else f" β={best.param:g}")
            line, = axes[0, col].plot(diag["t"], diag["width"], label=label)
            slope = ag.width_slope(diag)
            if slope is not None:
                _fit_line(axes[0, col], diag, slope, line.get_color())
            axes[1, col].plot(diag["t"], diag["plausible"], label=label)
        axes[0, col].set_title(f"{stream}: width", fontsize=9)
        axes[1, col].set_title(f"{stream}: plausible-set size", fontsize=9)
        axes[0, col].set_yscale("log")
        for ax in axes[:, col]:
            _log_x(ax)
            if ax.get_legend_handles_labels()[0]:  # (none without width diagnostics)
                ax.legend(fontsize=7)
            ax.tick_params(labelsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)


def _fit_line(ax, diag: dict, slope: float, color) -> None:
    t, width = diag["t"], diag["width"]
    keep = (t >= 20) & (width > 0)
    intercept = np.mean(np.log(width[keep]) - slope * np.log(t[keep]))
    ax.plot(t[keep], np.exp(intercept) * t[keep] ** slope, color="black", linewidth=0.8)
    ax.text(t[keep][-1], np.exp(intercept) * t[keep][-1] ** slope, f"{slope:+.2f}",
            fontsize=7, color=color, ha="right", va="bottom")


def all_figures(agg: dict, families: list[str], directory: pathlib.Path) -> list[pathlib.Path]:
    """Write the three figures into ``directory``; return their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = [directory / name for name in ("validation.png", "cdf.png", "width.png")]
    validation(agg, paths[0])
    cdf(agg, families, paths[1])
    widths(agg, paths[2])
    return [p for p in paths if p.exists()]
