"""PNG plots of a report (optional extra ``kanon-duckdb[plot]``, matplotlib).

One figure per metric against k with one line per algorithm, in the style of the papers' figures
(e.g. cof-mondrian-outliers.txt Figs. 4-7: DM, C_avg, GCP and query error vs k), and an overview
grid of all of them. Uses the non-interactive Agg backend, so it works without a display.
"""
from __future__ import annotations

import math
import os

from .errors import InvalidParameterError

# (column in the report rows, axis label, log-scale y?)
METRICS = (
    ("gcp", "GCP (fraction)", False),
    ("gen_total_il", "GenTotal-IL", False),
    ("dm", "Discernibility metric (DM)", True),
    ("cavg", "Normalized avg. class size C_avg", True),
    ("cm", "Classification metric CM", False),
    ("query_error", "Query error (mean relative error)", True),
    ("query_error_median", "Query error (median relative error)", True),
    ("seconds", "Runtime (s)", True),
)
_MARKERS = "osD^v<>ph*"


def require_matplotlib():
    """Import matplotlib with the Agg backend or raise a clear error naming the extra."""
    try:
        import matplotlib
    except ImportError as exc:  # pragma: no cover - matplotlib is installed in CI
        raise InvalidParameterError(
            "plots need matplotlib; install kanon-duckdb[plot] (pip install 'kanon-duckdb[plot]')"
        ) from exc
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    return plt


def _series(rows, metric):
    """{algo: ([k...], [value...])} with rows lacking the metric left out, sorted by k."""
    out = {}
    for r in rows:
        v = r.get(metric)
        if v is None or (isinstance(v, float) and math.isnan(v)):
            continue
        out.setdefault(r["algo"], []).append((r["k"], float(v)))
    return {a: tuple(map(list, zip(*sorted(pts)))) for a, pts in out.items()}


def _draw(ax, rows, metric, label, logy, title=None, baseline=None):
    series = _series(rows, metric)
    ks = sorted({r["k"] for r in rows})
    for i, (algo, (xs, ys)) in enumerate(sorted(series.items())):
        ax.plot(xs, ys, marker=_MARKERS[i % len(_MARKERS)], label=algo, linewidth=1.6, markersize=5)
    if baseline is not None:
        ax.axhline(baseline, color="black", linestyle="--", linewidth=1.2, label="raw data")
    if len(ks) > 1 and ks[-1] / max(ks[0], 1) >= 8:
        ax.set_xscale("log")
    ax.set_xticks(ks)
    ax.set_xticklabels([str(k) for k in ks])
    ax.minorticks_off()
    if logy and any(y > 0 for _, ys in series.values() for y in ys):
        positive = [y for _, ys in series.values() for y in ys if y > 0]
        if max(positive) / min(positive) >= 20:
            ax.set_yscale("log")
            label = f"{label} (log scale)"
    ax.set_xlabel("k")
    ax.set_ylabel(label)
    ax.set_title(title or label)
    ax.grid(True, alpha=0.3)
    if series:
        ax.legend(fontsize=8)
    else:
        ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes)


def plot_report(rows, out_dir, title="", extra=(), baselines=None):
    """Write one PNG per metric present in ``rows`` plus ``overview.png``.

    rows: list of dicts with keys algo, k and the METRICS columns (None = missing).
    extra: more (column, axis label, log y) to plot, e.g. classifier accuracy columns.
    baselines: {column: value} drawn as a dashed "raw data" line (e.g. accuracy on raw data).
    Returns {metric: path} (and 'overview').
    """
    plt = require_matplotlib()
    os.makedirs(out_dir, exist_ok=True)
    baselines = baselines or {}
    paths = {}
    present = [(m, lab, logy) for m, lab, logy in tuple(METRICS) + tuple(extra) if _series(rows, m)]
    for metric, label, logy in present:
        fig, ax = plt.subplots(figsize=(6.0, 4.2), dpi=100)
        _draw(ax, rows, metric, label, logy, title=f"{label} vs k" + (f" ({title})" if title else ""),
              baseline=baselines.get(metric))
        fig.tight_layout()
        path = os.path.join(out_dir, f"{metric}.png")
        fig.savefig(path)
        plt.close(fig)
        paths[metric] = path
    if present:
        ncol = 3 if len(present) > 4 else 2
        nrow = math.ceil(len(present) / ncol)
        fig, axes = plt.subplots(nrow, ncol, figsize=(5.0 * ncol, 3.6 * nrow), dpi=90, squeeze=False)
        for ax, (metric, label, logy) in zip(axes.flat, present):
            _draw(ax, rows, metric, label, logy, baseline=baselines.get(metric))
        for ax in list(axes.flat)[len(present):]:
            ax.axis("off")
        if title:
            fig.suptitle(title)
            fig.tight_layout(rect=(0, 0, 1, 1 - 0.35 / (3.6 * nrow)))
        else:
            fig.tight_layout()
        path = os.path.join(out_dir, "overview.png")
        fig.savefig(path)
        plt.close(fig)
        paths["overview"] = path
    return paths
