"""The regression chapter's tables and figures: each function takes what the theory and the
experiments returned and writes or draws it; nothing here decides a claim."""

from __future__ import annotations

import numpy as np

from companions import plots
from companions.icl_scale import theory


def optimum_table(cases, shown_n: int) -> str:
    """Markdown: ``(spectrum, N, r, v*, L*_r)`` for the cases with ``N = shown_n``, and every
    case at full rank (:func:`companions.icl_scale.experiments.theorem_5_4_1_exact`'s rows)."""
    rows = ["| spectrum | N | r | v* | L*_r |", "|---|---|---|---|---|"]
    for lam, n, r, v, loss in cases:
        if n == shown_n or r == len(lam):
            spectrum = ", ".join(map(str, lam))
            rows.append(f"| {spectrum} | {n} | {r} | {', '.join(map(str, v))} | {loss} |")
    return "\n".join(rows)


def best_ranks(eigenvalues, N, task, eval_m, sigmas) -> dict:
    """``{(M, sigma): r}``: the rank with the lowest evaluation loss of Theorem 5.4.2 (closed
    form) for each ``M`` and noise level ``sigma``, for the task with coordinates ``task``."""
    d = len(eigenvalues)

    def loss(r, M, sigma):
        s, xi = list(task[:r]) + [0.0] * (d - r), [0.0] * r + list(task[r:])
        return theory.theorem_5_4_2(eigenvalues, N, M=M, sigma2=sigma**2, s=s, xi=xi, r=r)

    return {(M, x): min(range(d + 1), key=lambda r: loss(r, M, x)) for M in eval_m for x in sigmas}


def best_rank_table(best: dict, eval_m, sigmas) -> str:
    """Markdown: :func:`best_ranks` with a row per ``M`` and a column per ``sigma``."""
    head = "| M | " + " | ".join(f"σ = {x}" for x in sigmas) + " |"
    rows = [head, "|---|" + "---|" * len(sigmas)]
    rows += [f"| {M} | " + " | ".join(str(best[M, x]) for x in sigmas) + " |" for M in eval_m]
    return "\n".join(rows)


def best_rank_reading(best: dict, d: int, eval_m, sigmas) -> str:
    """One sentence on :func:`best_ranks`, chosen from the table: where a smaller model wins
    without noise (the finite number of examples), and whether noise lowers the best rank."""
    without = [M for M in eval_m if best[M, sigmas[0]] < d]
    lowered = [(M, x) for M in eval_m for x in sigmas[1:] if best[M, x] < best[M, sigmas[0]]]
    if without:
        text = (
            f"Without label noise a smaller model already wins at M in {without}: the finite "
            "number of examples, not the noise, makes it win there."
        )
    else:
        text = "Without label noise the full rank is best at every M of this grid."
    if lowered:
        cells = ", ".join(f"M = {M}, σ = {x}" for M, x in lowered)
        return text + f" Label noise lowers the best rank further at {cells}."
    return text + " Label noise does not lower the best rank anywhere on this grid."


def figure_tradeoff(closed, grid, d: int, ms, sigmas):
    """Evaluation loss against the rank: ``closed(r, M, sigma)`` (lines) and the Monte Carlo
    ``grid[M, sigma]`` (points, two standard errors), one panel per ``M`` in ``ms``."""
    fig, axes = plots.subplots(1, len(ms), width=3.5, height=3.4)
    rs = np.arange(d + 1)
    for ax, M in zip(axes[0], ms):
        for j, sigma in enumerate(sigmas):
            c = plots.color(j)
            ax.plot(rs, [closed(r, M, sigma) for r in rs], color=c, label=f"σ={sigma}")
            est = [grid[M, sigma].estimate(r) for r in rs]
            ax.errorbar(rs, [e.mean for e in est], yerr=[2 * e.se for e in est], fmt="o", color=c)
        ax.set(xlabel="rank r", ylabel="evaluation loss", title=f"M = {M}")
    axes[0, 0].legend(fontsize=8)
    fig.tight_layout()
    return fig


def figure_flips(eigenvalues, N, *, coords, M, flips, sigmas, flip_mc):
    """Left: evaluation loss against the flip probability for each rank (this book's closed form,
    lines; Monte Carlo ``flip_mc[f]``, points). Right: the same ranks against additive noise."""
    fig, axes = plots.subplots(1, 2, width=3.5, height=3.4)
    d = len(eigenvalues)
    fs = np.linspace(0, max(flips), 21)
    sg = np.linspace(0, 2 * max(sigmas), 21)
    for r in range(1, d + 1):
        c, v = plots.color(r), theory.optimal_v(eigenvalues, N, r)
        curve = [theory.evaluation_loss(eigenvalues, v, coords, M, 0, f) for f in fs]
        axes[0, 0].plot(fs, curve, color=c, label=f"r={r}")
        est = [flip_mc[f].estimate(r) for f in flips]
        axes[0, 0].errorbar(
            flips, [e.mean for e in est], yerr=[2 * e.se for e in est], fmt="o", color=c
        )
        noisy = [theory.evaluation_loss(eigenvalues, v, coords, M, x**2, 0) for x in sg]
        axes[0, 1].plot(sg, noisy, color=c)
    axes[0, 0].set(xlabel="flip probability f", ylabel="evaluation loss", title=f"M = {M}")
    axes[0, 1].set(xlabel="label noise σ", title=f"M = {M}")
    axes[0, 0].legend(fontsize=8)
    fig.tight_layout()
    return fig


def figure_parity_behaviour(results, eval_m, flips):
    """Accuracy of the two networks against ``M``, one colour per flip probability
    (``results[M, f] = (hinge, correct, hinge gap, accuracy gap)``, correct of shape
    ``(2, prompts)``): the small network solid, the large one dashed."""
    fig, axes = plots.subplots(1, 1, width=5.0, height=3.4)
    ax = axes[0, 0]
    for j, f in enumerate(flips):
        c = plots.color(j)
        ax.plot(eval_m, [results[M, f][1][0].mean() for M in eval_m], color=c, label=f"f={f}")
        ax.plot(eval_m, [results[M, f][1][1].mean() for M in eval_m], color=c, ls="--")
    ax.set(xscale="log", xlabel="M", ylabel="accuracy")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def parity_behaviour_table(results) -> str:
    """Markdown: per ``(M, f)`` of :func:`companions.icl_scale.parity.behaviour`, each network's
    accuracy and hinge loss, and the paired accuracy difference (small minus large)."""
    rows = [
        "| M | f | accuracy g1* | accuracy g2* | difference (g1 − g2) | hinge g1* | hinge g2* |",
        "|---|---|---|---|---|---|---|",
    ]
    for (M, f), (hinge, correct, _, gap) in results.items():
        rows.append(
            f"| {M} | {f} | {correct[0].mean():.3f} | {correct[1].mean():.3f} | "
            f"{gap.mean:+.3f} ± {gap.se:.3f} | {hinge[0].mean():.3f} | {hinge[1].mean():.3f} |"
        )
    return "\n".join(rows)


def flip_gap_table(gaps, flips, eigenvalues, N, task, M) -> str:
    """Markdown: per flip probability, the Monte Carlo gap ``L(f_d) - L(f_2)`` (``gaps``, one
    estimate per ``f``) beside this book's flipped-label formula at the optimal ``v`` of each
    rank, for the task with coordinates ``task``."""
    d = len(eigenvalues)
    full, two = theory.optimal_v(eigenvalues, N, d), theory.optimal_v(eigenvalues, N, min(2, d))
    rows = [f"| f | L(f_{d}) − L(f_2), Monte Carlo | the formula D2 |", "|---|---|---|"]
    for f, est in zip(flips, gaps):
        closed = theory.evaluation_loss(eigenvalues, full, task, M, 0, f) - theory.evaluation_loss(
            eigenvalues, two, task, M, 0, f
        )
        rows.append(f"| {f} | {est.mean:+.4f} ± {est.se:.4f} | {closed:+.4f} |")
    return f"At M = {M}, the chapter's task:\n\n" + "\n".join(rows)


def large_n_table(closed, grid, eigenvalues, task, M, sigma) -> tuple[str, float]:
    """Markdown, at one ``(M, sigma)``: per rank, Theorem 5.4.2 (``closed(r, M, sigma)``), the
    Monte Carlo ``grid[M, sigma]`` and the source's large-N approximation; and the largest
    relative gap of the approximation from the theorem."""
    d = len(eigenvalues)
    rows = ["| r | Theorem 5.4.2 | Monte Carlo | large-N approximation |", "|---|---|---|---|"]
    gap = 0.0
    for r in range(d + 1):
        est, exact = grid[M, sigma].estimate(r), closed(r, M, sigma)
        s, xi = list(task[:r]) + [0.0] * (d - r), [0.0] * r + list(task[r:])
        approx = theory.theorem_5_4_2_large_n(eigenvalues, M, sigma**2, s, xi, r)
        gap = max(gap, abs(approx / exact - 1))
        rows.append(f"| {r} | {exact:.4f} | {est.mean:.4f} ± {est.se:.4f} | {approx:.4f} |")
    return f"At M = {M}, σ = {sigma}:\n\n" + "\n".join(rows), gap
