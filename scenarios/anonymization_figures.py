"""The figures of ``local_anonymization``'s report: query-error boxes, dependence heat maps, ε per phase.

Each function returns a :class:`~scenarios.plots.FigureSpec` that
:func:`scenarios.anonymization_report.build_result` adds to the report:

- :func:`query_error_boxplot` — the count-query relative errors (main paper 6.5, eq. 16) of every
  protocol, labelled with the ε per party it spent;
- :func:`dependence_plot` — every attribute pair's dependence (|Pearson|, eq. 8, or Cramér's V,
  eq. 9) in the true data beside the controller's estimate;
- :func:`epsilon_plot` — ε per respondent, one stacked bar per protocol and one segment per phase.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.figure import Figure as MplFigure

from scenarios.plots import CustomPlot, FigureSpec, phase_colour
from scenarios.report import RR_INDEPENDENT_JOINT

__all__ = ["dependence_plot", "epsilon_plot", "query_error_boxplot"]


def query_error_boxplot(errors: Mapping[str, np.ndarray], sigma: float, epsilon: Mapping[str, float]) -> FigureSpec:
    """Boxes of the query errors, each labelled with the ε per party its protocol spent
    (``epsilon``: per base protocol, sequential composition, median over parties)."""
    def eps_of(label: str) -> str:
        e = epsilon[label.split("+")[0]]
        return "ε = ∞" if math.isinf(e) else f"ε = {e:.3g}"

    def draw(fig: MplFigure) -> None:
        ax = fig.add_subplot()
        data = [v[np.isfinite(v)].ravel() * 100 for v in errors.values()]
        ax.boxplot(data, showfliers=False)
        ax.set_xticks(range(1, len(errors) + 1))
        ax.set_xticklabels([f"{k.replace('+', chr(10) + '+')}\n{eps_of(k)}" for k in errors], fontsize="small")
        ax.set_ylabel("relative error of count queries (%)")
        ax.grid(True, axis="y", alpha=0.3)

    return CustomPlot(
        filename="query_errors.png",
        title=f"Count-query relative error (eq. 16), σ = {sigma:g}",
        draw=draw,
        caption=("Boxes: quartiles over all queries and runs, orange line the median; whiskers reach "
                 "the furthest error within 1.5 IQR of the box; outliers hidden. Under each box the ε per "
                 "party its protocol spent (sequential composition; +Adjustment is post-processing, it "
                 "spends nothing more)" + ("; the budgets differ, so the boxes are not a comparison at equal ε."
                                           if len({v for v in epsilon.values()}) > 1 else ".")
                 + (" " + RR_INDEPENDENT_JOINT if any(k.startswith("RR-Independent") for k in errors) else "")),
    )


def dependence_plot(true_dep: np.ndarray, est_dep: np.ndarray | None, names: Sequence[str],
                    found: str, method: str) -> FigureSpec:
    """Heat maps of every attribute pair's dependence: the true data beside the controller's
    estimate (``est_dep``, ``None`` without a dependence phase); ``found`` names the clusters
    Algorithm 1 found in run 1."""
    estimate = f"controller's estimate\n(RR-Clusters, dependence {method}, run 1)"
    def draw(fig: MplFigure) -> None:
        panels = [("true data", true_dep)] + ([(estimate, est_dep)] if est_dep is not None else [])
        for k, (title, values) in enumerate(panels):
            ax = fig.add_subplot(1, len(panels), k + 1)
            image = ax.imshow(values, vmin=0, vmax=1, cmap="viridis")
            ax.set_title(title, fontsize="small")
            ax.set_xticks(range(len(names)))
            ax.set_xticklabels(names, fontsize="x-small", rotation=90)
            ax.set_yticks(range(len(names)))
            ax.set_yticklabels(names, fontsize="x-small")
            ax.set_xlabel("attribute", fontsize="small")
            ax.set_ylabel("attribute", fontsize="small")
            bar = fig.colorbar(image, ax=ax, shrink=0.8)
            bar.set_label("dependence (|Pearson| / Cramér's V)", fontsize="small")

    return CustomPlot(
        filename="dependence.png",
        title="Attribute dependences: truth vs what the controller estimated",
        draw=draw,
        size=(8.0, 4.0),
        caption=f"Dependence of every attribute pair (|Pearson| for two ordinal attributes, else Cramér's V; "
                f"1 on the diagonal): left the true data, right what the controller estimated in RR-Clusters' "
                f"dependence phase (method {method}, run 1; RR-Independent estimates no dependence). Clusters "
                f"found by Algorithm 1 (run 1): {found}.",
    )


def epsilon_plot(sequential: Mapping[str, Mapping[str, Any]], bases: Sequence[str],
                 budget: float | None = None) -> FigureSpec:
    """ε per party, one stacked bar per protocol (one segment per phase it ran, the finite ones
    first); a phase with ε = ∞ runs off the top of the axes, its top cut off, with an arrow and
    ∞ above it, so that no height can be read as its value."""
    spent = {b: sorted(((ph, float(v["median"])) for ph, v in sequential[b]["by_phase"].items()),
                       key=lambda item: math.isinf(item[1])) for b in bases}  # finite phases at the bottom
    finite_tops = [sum(v for _, v in spent[b] if math.isfinite(v)) for b in bases]
    any_inf = any(math.isinf(v) for b in bases for _, v in spent[b])
    ceiling = (max(max(finite_tops, default=0.0), budget or 0.0) or 1.0) * (1.45 if any_inf else 1.15)

    def draw(fig: MplFigure) -> None:
        ax = fig.add_subplot()
        labelled: set[str] = set()
        for x, b in enumerate(bases):
            bottom = 0.0
            for ph, v in spent[b]:
                infinite = math.isinf(v)
                height = 2 * ceiling if infinite else v  # ∞: past the top of the axes, cut off there
                ax.bar(x, height, 0.55, bottom=bottom, color=phase_colour(ph), hatch="//" if infinite else None,
                       edgecolor="black", linewidth=0.6, label=None if ph in labelled else ph)
                labelled.add(ph)
                if infinite:
                    ax.annotate("∞", xy=(x, ceiling * 1.01), xytext=(x, ceiling * 1.11), annotation_clip=False,
                                ha="center", va="bottom", fontsize="x-large", fontweight="bold",
                                arrowprops={"arrowstyle": "<|-", "linewidth": 2.0, "color": "black"})
                    ax.text(x, (bottom + ceiling) / 2, f"{ph}\nε = ∞\n(no DP guarantee)", ha="center", va="center",
                            fontsize="small", fontweight="bold",
                            bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.85, "pad": 2})
                else:
                    ax.text(x, bottom + height / 2, f"{v:.3g}", ha="center", va="center", fontsize="small",
                            color="white")
                    bottom += height
            total = sum(v for _, v in spent[b])
            if math.isinf(total):
                ax.text(x + 0.3, ceiling, " total ∞", ha="left", va="bottom", fontsize="small")
            else:
                ax.text(x, bottom, f"total {total:.3g}", ha="center", va="bottom", fontsize="small")
        ax.set_xticks(range(len(bases)))
        ax.set_xticklabels(bases)
        ax.set_xlim(-0.7, len(bases) - 0.3)
        ax.set_ylim(0, ceiling)
        if any_inf:
            ax.spines["top"].set_visible(False)  # the axis is open upwards: ∞ has no height
        ax.set_ylabel("ε per respondent (eq. 4, natural log)")
        if budget is not None:
            ax.axhline(budget, color="black", linestyle="--", linewidth=1.0, label=f"budget ε = {budget:g}")
        ax.legend(title="phase", fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
        ax.grid(True, axis="y", alpha=0.3)

    caption = ("One bar per protocol, one segment per phase it runs (median over parties of the ε each "
               "party spent in that phase); the bar's total is the ε per party under sequential "
               "composition. RR-Clusters spends a dependence phase and a cluster phase, RR-Independent "
               "one attribute phase."
               + ("" if budget is None else f" Dashed line: the budget, ε = {budget:g} per respondent, planned "
                                            "before the data; no bar may pass it."))
    if any_inf:
        caption += (" A hatched segment that runs off the top (arrow, ∞) is ε = ∞ (dependence 4.2 releases "
                    "exact bivariate tables: no DP guarantee): it has no height to read; the finite phases "
                    "are stacked below it.")
    return CustomPlot(
        filename="epsilon_by_phase.png",
        title="ε spent per respondent, by protocol and phase",
        draw=draw,
        size=(7.4, 4.6),
        caption=caption,
    )
