"""The chapter's figures and tables (Figure 8.1 and this book's additions): each function takes
what the experiments returned and draws or writes it; nothing here computes a claim."""

from __future__ import annotations

import math

import numpy as np
import torch

from companions import plots
from companions.looped.experiments import FLOAT64_FLOOR
from companions.looped.paper import PAPER_KAPPA_MEANS


def _mean_log(curves: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Mean over trials of the log of each curve; loops where some trial is masked give NaN."""
    logs = torch.log(curves.clamp_min(1e-300))
    if mask is not None:
        logs = torch.where(mask.all(-1, keepdim=True), logs, torch.nan)
    return logs.mean(-1)


def figure_tf_is_gd(runs: dict):
    """Left: mean log error of the transformer (lines) and of GD (dots every 10 loops), while all
    trials are above the float64 floor; right: their largest gap per loop."""
    fig, axes = plots.subplots(1, 2, width=5.2, height=3.6)
    for i, (n, r) in enumerate(runs.items()):
        loops = np.arange(r.tf_sq.shape[0])
        keep = r.above_floor.all(-1)
        axes[0, 0].plot(
            loops[keep], torch.log(r.tf_sq[keep]).mean(-1), color=plots.color(i), label=f"n={n}"
        )
        marks = loops[::10][keep[::10].numpy()]
        axes[0, 0].plot(marks, torch.log(r.gd_sq[marks]).mean(-1), "o", ms=3, color=plots.color(i))
        axes[0, 1].semilogy(loops, r.tf_minus_gd_per_loop.clamp_min(1e-18), color=plots.color(i))
    axes[0, 0].set(xlabel="loops t", ylabel="mean log normalised squared error")
    axes[0, 0].set_title("transformer (lines) and GD (dots)")
    axes[0, 1].set(xlabel="loops t", ylabel="max |TF/α − θ_GD|", ylim=(1e-18, 1e-12))
    axes[0, 1].set_title("gap, float64")
    axes[0, 0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def figure_8_1(runs: dict):
    """Figure 8.1 replicated: mean log error cut at the float64 floor (solid), the closed form D1
    (dotted), the Theory line ``-t/kappa`` averaged like the curves (dashed); right, every
    trial."""
    fig, axes = plots.subplots(1, 2, width=6.2, height=4.3)
    for i, (n, r) in enumerate(runs.items()):
        c, t = plots.color(i), np.arange(r.tf_sq.shape[0])
        theory = -(torch.arange(len(t))[:, None] / r.kappa).mean(-1)
        label = f"Emp n={n} (κ̄={r.kappa.mean():.2f})"
        axes[0, 0].plot(t, _mean_log(r.tf_sq, r.above_floor), color=c, label=label)
        axes[0, 0].plot(t, _mean_log(r.exact_sq), color=c, ls=":", lw=1)
        axes[0, 0].plot(t, theory, color=c, ls="--", lw=1.2)
        axes[0, 1].plot(t, torch.log(r.tf_sq.clamp_min(1e-300)), color=c, lw=0.6, alpha=0.6)
        axes[0, 1].plot([], [], color=c, label=f"n={n}")
    axes[0, 0].set(xlabel="loops t", ylabel="log normalised squared error", ylim=(-160, 5))
    axes[0, 0].set_title("Emp (solid), D1 (dotted), Theory (dashed)")
    axes[0, 1].axhline(math.log(FLOAT64_FLOOR), color="k", lw=0.8, ls="--", label="floor 1e-26")
    axes[0, 1].set(xlabel="loops t", ylim=(-100, 5))
    axes[0, 1].set_title("every float64 trial (exact zeros fall off)")
    axes[0, 0].legend(fontsize=8)
    axes[0, 1].legend(fontsize=8)
    fig.tight_layout()
    return fig


def kappa_table(runs: dict, many: dict, ranges: dict, d: int, trials: int) -> str:
    """Markdown: per n, the source's 10-trial mean kappa (where the setting is the source's), this
    run's, the mean over many draws (``many[n]``) and the central 90 % range of a 10-trial mean
    (``ranges[n]``)."""
    rows = [
        "| n | source's κ̄ (10 trials) | this run's κ̄ | E κ (many draws) | "
        "5–95 % range of a 10-trial mean |",
        "|---|---|---|---|---|",
    ]
    for n, r in runs.items():
        paper = PAPER_KAPPA_MEANS.get(n) if (d, trials) == (4, 10) else None
        lo, hi = ranges[n]
        rows.append(
            f"| {n} | {paper if paper else '—'} | {float(r.kappa.mean()):.2f} | "
            f"{many[n]:.2f} | [{lo:.2f}, {hi:.2f}] |"
        )
    return "\n".join(rows)


def slope_table(runs: dict, gaps: dict) -> str:
    """Markdown: per n, the slope of the mean log curve over loops 2 to 8 against the limit
    ``2 log(1 - 1/kappa)`` and the Theory slope ``-1/kappa`` (at the mean kappa), and the gap at
    t = 10 (``gaps[n]``)."""
    rows = [
        "| n | slope of the mean curve, t ∈ [2, 8] | 2 log(1 − 1/κ̄) | Theory: −1/κ̄ | "
        "gap at t = 10 (Theory − Emp) |",
        "|---|---|---|---|---|",
    ]
    for n, r in runs.items():
        kappa_bar = float(r.kappa.mean())
        curve = _mean_log(r.tf_sq, r.above_floor)
        slope = float((curve[8] - curve[2]) / 6)
        rows.append(
            f"| {n} | {slope:.2f} | {2 * math.log(1 - 1 / kappa_bar):.2f} | {-1 / kappa_bar:.2f} | "
            f"{gaps[n]:.1f} |"
        )
    return "\n".join(rows)


def figure_marchenko_pastur(median: dict, limit: dict, dims, ratios):
    """Median kappa against n/d for each d (``median[d, n/d]``), and the limit (dashed)."""
    fig, axes = plots.subplots(1, 1, width=6, height=3.8)
    ax = axes[0, 0]
    for i, dim in enumerate(dims):
        ax.plot(ratios, [median[dim, c] for c in ratios], "o-", color=plots.color(i))
        ax.lines[-1].set_label(f"median κ, d={dim}")
    ax.plot(ratios, [limit[c] for c in ratios], "k--", label="Marchenko–Pastur limit")
    ax.set(xscale="log", yscale="log", xlabel="n / d", ylabel="κ")
    ax.legend()
    fig.tight_layout()
    return fig


def trained_table(models, curves, built: torch.Tensor, k: int, depth: int, distance) -> str:
    """Markdown: per training seed, the error at the trained depth ``k`` and at ``depth`` beside
    the construction's, the distance to the construction family (``distance(Q, P)``) and the
    learned ``P_(d+1, d+1)``."""
    rows = [
        f"| seed | error at T = {k} | construction | error at T = {depth} | construction | "
        "‖Q − aI‖/‖Q‖ | ‖P − bP₀‖/‖P‖ | learned P_(d+1,d+1) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for s, (model, curve) in enumerate(zip(models, curves)):
        dist = distance(model.Q.detach(), model.P.detach())
        rows.append(
            f"| {s} | {float(curve[k]):.4f} | {float(built[k]):.4f} | {float(curve[depth]):.3g} | "
            f"{float(built[depth]):.2e} | {dist['q_residual']:.2f} | {dist['p_residual']:.2f} | "
            f"{float(model.P.detach()[-1, -1]):.3f} |"
        )
    return "\n".join(rows)


def figure_trained(histories, curves, built: torch.Tensor, k: int, model):
    """The trained looped transformers: training loss; mean error against the loops at test
    time beside the construction (dashed; grey line: the trained depth ``k``); one model's
    learned ``[Q | P]``."""
    fig, axes = plots.subplots(1, 3, width=4.2, height=3.6)
    for s, (history, curve) in enumerate(zip(histories, curves)):
        axes[0, 0].semilogy(history.steps, history.loss, color=plots.color(s), lw=1)
        axes[0, 1].semilogy(curve, color=plots.color(s), lw=1, label=f"trained, seed {s}")
    axes[0, 0].set(xlabel="Adam step", ylabel="training loss", title="training")
    axes[0, 1].semilogy(built.clamp_min(1e-17), "k--", label="construction (Lemma 8.13)")
    axes[0, 1].axvline(k, color="grey", lw=0.8)
    axes[0, 1].set(xlabel="loops at test time", ylabel="mean error", title="depth extrapolation")
    axes[0, 1].legend(fontsize=7)
    learned = torch.cat([model.Q.detach().cpu(), model.P.detach().cpu()], dim=1)
    top = float(learned.abs().max())
    im = axes[0, 2].imshow(learned, cmap="RdBu_r", vmin=-top, vmax=top)
    axes[0, 2].set(title="learned [Q | P], seed 0", xticks=[], yticks=[])
    axes[0, 2].grid(False)
    fig.colorbar(im, ax=axes[0, 2], shrink=0.8)
    fig.tight_layout()
    return fig


def fixed_step_tables(converged: dict, eta: float, err, stable, marks) -> str:
    """Markdown: the fraction of prompts converged for each ``c`` of ``eta = c / lambda_max``
    (``converged[c]``), then, for the one step size ``eta``, the mean error of the stable prompts
    after each number of loops in ``marks`` (``err``: loops x prompts)."""
    head = "| η = c/λ_max, c = | " + " | ".join(map(str, converged)) + " |"
    rule = "|---|" + "---|" * len(converged)
    row = "| converged (error < 1e-6) | " + " | ".join(f"{v:.2f}" for v in converged.values())
    loops = "| t | " + " | ".join(map(str, marks)) + " |"
    means = " | ".join(f"{float(err[t][stable].mean()):.3g}" for t in marks)
    return "\n".join(
        [
            head,
            rule,
            row + " |",
            "",
            f"One step size η = {eta:.4f}: {int(stable.sum())} of {len(stable)} prompts are "
            "stable; their mean error after t loops:",
            "",
            loops,
            "|---|" + "---|" * len(marks),
            f"| mean error | {means} |",
        ]
    )


def gap_table(runs: dict, gaps: dict) -> str:
    """Markdown: per n, the mean gap at t = 10 (``gaps[n]``) and the slope gap
    ``|2 log(1 - 1/kappa) + 1/kappa|`` at the mean kappa."""
    rows = ["| n | gap at t = 10 | slope gap at the mean κ |", "|---|---|---|"]
    for n in sorted(runs):
        kappa = float(runs[n].kappa.mean())
        slope = abs(2 * math.log(1 - 1 / kappa) + 1 / kappa)
        rows.append(f"| {n} | {gaps[n]:.2f} | {slope:.3f} |")
    return "\n".join(rows)
