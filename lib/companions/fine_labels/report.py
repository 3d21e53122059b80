"""The three chapters' figures and tables: each function takes what the runs returned and draws or
writes it; nothing here decides a claim."""

from __future__ import annotations

import math

import matplotlib
import numpy as np
import torch

from companions import plots
from companions.fine_labels import tables as ftab


def _mean_se(values) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard error over the last axis (seeds)."""
    a = np.asarray(values, dtype=float)
    return a.mean(-1), a.std(-1, ddof=1) / math.sqrt(a.shape[-1])


# -------------------------------------------------------------------------------------------------
# fine-labels-model
# -------------------------------------------------------------------------------------------------
def figure_sample(easy: torch.Tensor, hard: torch.Tensor, k: int):
    """One easy and one hard sample (P, d) as d x P images, the first 2 + 2k + 6 rows."""
    d = easy.shape[-1]
    fig, axes = plots.subplots(1, 2, width=3.4, height=3.6)
    rows = min(d, 2 + 2 * k + 6)
    for ax, X, name in zip(axes[0], (easy, hard), ("easy", "hard")):
        img = X[:, :rows].T.numpy()
        lim = float(np.abs(img).max())
        ax.imshow(img, cmap="RdBu_r", vmin=-lim, vmax=lim, aspect="auto")
        ax.set(title=f"{name} sample", xlabel="patch p", ylabel="dictionary element")
        ax.set_yticks([0, 1, 2, 2 + k], ["v+", "v-", "v+,0", "v-,0"])
        ax.grid(False)
    fig.tight_layout()
    return fig


def literal_count_table(coarse: dict, fine: dict) -> str:
    """Markdown: the expected lucky neurons per feature with the literal widths, by d."""
    rows = ["| $d$ | coarse | fine |", "|---|---|---|"]
    rows += [f"| {d:.0e} | {coarse[d]:.3f} | {fine[d]:.3f} |" for d in coarse]
    return "\n".join(rows)


# -------------------------------------------------------------------------------------------------
# fine-labels-coarse
# -------------------------------------------------------------------------------------------------
def figure_ratio(t, ratios: torch.Tensor, responses: torch.Tensor, k: int):
    """Left: the per-detector growth ratio over training (L, S, 2), every seed and output; right:
    the representation ratio R_y(v_y) / mean_c R_y(v_(y,c)) (L, S, 2), log scale."""
    fig, axes = plots.subplots(1, 2, width=3.4, height=3.0)
    for j in range(ratios.shape[1]):
        for y in range(2):
            axes[0, 0].plot(t[1:], ratios[1:, j, y], color=plots.color(0), lw=0.8, alpha=0.6)
            axes[0, 1].plot(t[1:], responses[1:, j, y], color=plots.color(1), lw=0.8, alpha=0.6)
    axes[0, 0].axhline(k, color="k", ls="--", lw=1)
    axes[0, 0].set(xlabel="step t", ylabel="A common / A subclass", ylim=(0, 2 * k))
    axes[0, 1].axhline(k, color="k", ls="--", lw=1)
    axes[0, 1].set(xlabel="step t", ylabel="R common / R subclass", yscale="log")
    fig.tight_layout()
    return fig


def figure_margin(t, margin, phi, c_eff, half):
    """Left: the mean margin per seed (L, S); right: the mean of e^F + F per seed, with dashed
    lines of slope C_eff from the start of the fitted half (``half``, a mask over t)."""
    fig, axes = plots.subplots(1, 2, width=3.4, height=3.0)
    for j in range(margin.shape[1]):
        c = plots.color(j)
        axes[0, 0].plot(t, margin[:, j], color=c, lw=1)
        axes[0, 1].plot(t, phi[:, j], color=c, lw=1)
        x0 = float(phi[half, j][0])
        axes[0, 1].plot(t[half], x0 + c_eff[j] * (t[half] - t[half][0]), color=c, ls="--", lw=0.8)
    axes[0, 0].set(xlabel="step t", ylabel="margin")
    axes[0, 1].set(xlabel="step t", ylabel="exp(margin) + margin")
    fig.tight_layout()
    return fig


def figure_accuracy(t, acc: dict, onset: float | None = None):
    """Accuracy over training, mean over seeds with one standard error: ``acc[name]`` (L, S).
    ``onset``: this book's estimate of the step at which feature noise starts to fire (dotted)."""
    fig, axes = plots.subplots(1, 1, width=5.0, height=3.2)
    ax = axes[0, 0]
    for i, (name, a) in enumerate(acc.items()):
        mu, se = _mean_se(np.asarray(a))
        ax.plot(t, mu, "o-", ms=2.5, color=plots.color(i), label=name)
        ax.fill_between(t, mu - se, mu + se, color=plots.color(i), alpha=0.25)
    if onset is not None:
        ax.axvline(onset, color="k", ls=":", lw=0.8)
    ax.set_xscale("symlog", linthresh=2)
    ax.set(xlabel="step t", ylabel="accuracy", ylim=(-0.02, 1.02), xlim=(0, None))
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def noise_onset_table(rows: list[tuple]) -> str:
    """Markdown: (quantity, value) rows of the feature-noise onset derivation."""
    out = ["| quantity | this run |", "|---|---|"]
    out += [f"| {name} | {value} |" for name, value in rows]
    return "\n".join(out)


# -------------------------------------------------------------------------------------------------
# fine-labels-fine
# -------------------------------------------------------------------------------------------------
def aggregation_table(agg: dict, coarse_hard) -> str:
    """Markdown: hard accuracy of the fine model through each readout, and of the coarse model
    (mean ± standard error over seeds)."""
    rows = ["| readout | hard accuracy |", "|---|---|"]
    for how, v in agg.items():
        mu, se = _mean_se(np.asarray(v))
        rows.append(f"| fine, {how} | {mu:.3f} ± {se:.3f} |")
    mu, se = _mean_se(np.asarray(coarse_hard))
    rows.append(f"| coarse | {mu:.3f} ± {se:.3f} |")
    return "\n".join(rows)


def figure_head_to_head(coarse: dict, fine: dict, finetuned: dict, t0: float):
    """Easy (dashed) and hard (solid) accuracy, mean over seeds, of the coarse model, the fine
    model (max) and the fine-tuned one after it; the dotted line is the mean T0(B)."""
    fig, axes = plots.subplots(1, 1, width=5.6, height=3.4)
    ax = axes[0, 0]
    t_fine = fine["t"].numpy()
    runs = (
        (coarse["t"].numpy(), coarse, "coarse"),
        (t_fine, fine, "fine (max)"),
        (finetuned["t"].numpy() + t_fine[-1], finetuned, "fine-tuned"),
    )
    for i, (tt, h, name) in enumerate(runs):
        ax.plot(tt, h["acc"]["hard"].mean(1), color=plots.color(i), label=f"{name}, hard")
        ax.plot(tt, h["acc"]["easy"].mean(1), color=plots.color(i), ls="--", lw=1)
    ax.axvline(t0, color="k", lw=0.8, ls=":")
    ax.set_xscale("symlog", linthresh=1)
    ax.set(xlabel="step t", ylabel="accuracy", ylim=(-0.02, 1.02), xlim=(0, None))
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def figure_rho(rho: np.ndarray, grid: dict, s_daggers, k: int, fall: float):
    """Hard accuracy (mean over seeds) of the coarse and the fine model over the grid, against
    rho, one line per s_dagger; dotted: rho = 1, dashed: D6's 1.5k, dash-dotted: ``fall``."""
    fig, axes = plots.subplots(1, 1, width=5.0, height=3.4)
    ax = axes[0, 0]
    for i, sd in enumerate(s_daggers):
        shade = 0.5 + 0.5 * i / len(s_daggers)
        for j, (name, mark) in enumerate((("coarse", "o-"), ("fine", "s-"))):
            ax.plot(
                rho[i],
                grid[name][i].mean(-1),
                mark,
                color=plots.color(j),
                alpha=shade,
                label=f"{name}, s†={sd}",
            )
    ax.axvline(1, color="k", ls=":", lw=0.8)
    ax.axvline(1.5 * k, color="k", ls="--", lw=0.8)
    ax.axvline(fall, color="k", ls="-.", lw=0.8)
    ax.set(xscale="log", xlabel="rho", ylabel="hard accuracy", ylim=(-0.02, 1.02))
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    return fig


def figure_granularity(sweep: dict, random: dict, matched):
    """Left: Figure 2's curve and Table 8, transcribed. Right: hard accuracy against the number
    of label groups per superclass (``sweep[g]`` per seed), random sub-IDs (``random[g]``), and
    the coarse model at the random model's common growth (``matched``, at g = 1)."""
    fig, axes = plots.subplots(1, 2, width=3.4, height=3.0)
    curve = ftab.figure_2_curve()
    lv = sorted(curve)
    axes[0, 0].plot(lv, [curve[x] for x in lv], "o-", label="fine-tune (Fig. 2)")
    axes[0, 0].plot(lv, [ftab.TABLE_8[x][0] for x in lv], "s-", label="linear probe (Tab. 8)")
    axes[0, 0].set(xlabel="WordNet level (0 = leaf)", ylabel="ImageNet1k accuracy %")
    axes[0, 0].legend(fontsize=7)
    ax = axes[0, 1]
    gs = sorted(sweep)
    mu, se = _mean_se(np.stack([np.asarray(sweep[g]) for g in gs]))
    ax.errorbar(gs, mu, yerr=se, fmt="o-", color=plots.color(2), label="groups")
    rg = sorted(random)
    mu, se = _mean_se(np.stack([np.asarray(random[g]) for g in rg]))
    ax.errorbar(rg, mu, yerr=se, fmt="x", color=plots.color(3), label="random IDs")
    mu, se = _mean_se(np.asarray(matched))
    ax.errorbar([1], [mu], yerr=[se], fmt="D", color=plots.color(4), label="coarse, equal growth")
    ax.set(xscale="log", xlabel="label groups per superclass", ylabel="hard accuracy")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xticks(gs, [str(g) for g in gs])
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig
