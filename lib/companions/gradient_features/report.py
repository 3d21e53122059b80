"""The gradient-feature chapters' figures and tables, out of their cells (numbers in, a figure or a
Markdown table out; nothing here decides a claim)."""

from __future__ import annotations

import numpy as np
import torch

from companions import plots, stats

#: The comparison methods of gradient-mixtures and gradient-parities, with their labels.
METHODS = {
    "network": "Algorithm 1",
    "frozen": "one step + second layer",
    "rf": "random features",
    "ntk": "NTK",
    "linear": "linear",
}


def _per_seed(counts: torch.Tensor, m: int) -> list[float]:
    """A (S, r) tensor of counts out of ``m`` as the per-seed fraction, mean over features."""
    return (counts.to(torch.float64) / m).mean(-1).tolist()


def figure_nice(gammas, plus, minus, m: int, population, neurons: int):
    """Lemma 3.13's nice fraction against the cone width: the run's neurons with ``s = +1`` and
    ``s = -1`` (mean over features and seeds, standard errors over seeds; ``plus``, ``minus`` are
    :func:`~.experiments.nice_counts`), and the independent estimate of ``p`` (``population``, the
    counts of :func:`~.experiments.population_counts` out of ``neurons``) with its half, the
    expectation (B.22)."""
    fig, axes = plots.subplots(1, 1, width=5.5, height=3.6)
    ax = axes[0, 0]
    for counts, label in ((plus, "this run, s = +1"), (minus, "this run, s = -1")):
        ms = [stats.mean_and_se(_per_seed(c, m))[:2] for c in counts]
        ax.errorbar(gammas, [a for a, _ in ms], [b for _, b in ms], marker="o", label=label)
    p = (population.to(torch.float64) / neurons).mean(-1).numpy()
    ax.plot(gammas, p / 2, "k--", marker="x", label="p / 2 (B.22), p independent")
    ax.plot(gammas, p, "k:", label="p, the two-sided cone")
    ax.set_xlabel("cone width γ")
    ax.set_ylabel("fraction of neurons")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def guarantee_table(rows) -> str:
    """Theorem 3.12's terms per case: ``rows`` of ``(name, params, terms, b_tilde)`` with the
    parameters of Lemma 3.17 or 3.21 and :func:`~.theory.guarantee`'s output."""
    head = (
        "| case | log10 p | γ | B_G | b̃ (the proof's) | log10 m (3.10) | log10 T (3.11) "
        "| r B_a1 B_x1 √(2γ) |\n|---|---|---|---|---|---|---|---|\n"
    )
    body = [
        f"| {name} | {prm['log10_p']:.1f} | {prm['gamma']:.1e} | {prm['B_G']:.3f} | {bt:.3g} | "
        f"{gt['log10_m']:.1f} | {gt['log10_T']:.1f} | {gt['error_term']:.1e} |"
        for name, prm, gt, bt in rows
    ]
    return head + "\n".join(body)


def theorem_3_4_table(run: dict) -> str:
    """The terms of Theorem 3.4's bound at each radius of the run, beside its losses."""
    rows = [
        "| B_a2 | OPT (test) | L(‖a¹‖² + B²)/T | (B.595) | bound | min over the ball (train) |",
        "|---|---|---|---|---|---|",
    ]
    for B, r in run["radii"].items():
        bound = r["opt_test"] + r["opt_term"] + r["complexity"]
        rows.append(
            f"| {B} | {r['opt_test']:.4f} | {r['opt_term']:.4f} | {r['complexity']:.4f} | "
            f"{bound:.4f} | {r['opt_train']:.4f} |"
        )
    losses = (
        f"\n\n$L$ = {run['L']:.2f}, $\\|\\mathbf a^{{(1)}}\\|^2$ = {run['a1_sq']:.3f}, "
        f"$\\|\\mathbf W^{{(1)}}\\|_F^2$ = {run['W_sq']:.2f}, $B_x$ = {run['B_x']:.2f}. Smallest "
        f"losses over the iterates: $\\eta=1/L$, train {run['one_over_L']['train']:.4f}, test "
        f"{run['one_over_L']['test']:.4f}; $\\eta^{{(t)}}=1/t$, train "
        f"{run['one_over_t']['train']:.4f}, test {run['one_over_t']['test']:.4f}."
    )
    return "\n".join(rows) + losses


def accuracy_summary(results: dict) -> dict:
    """``{case: {method: (mean, se)}}`` of per-seed accuracies ``{case: {method: values}}``."""
    return {
        case: {k: stats.mean_and_se(v.tolist())[:2] for k, v in res.items()}
        for case, res in results.items()
    }


def accuracy_table(summ: dict, first: str) -> str:
    """Mean ± standard error of each method's test accuracy, one row per case."""
    head = f"| {first} | " + " | ".join(METHODS[k] for k in METHODS) + " |"
    body = [
        f"| {case} | " + " | ".join(f"{s[k][0]:.3f} ± {s[k][1]:.3f}" for k in METHODS) + " |"
        for case, s in summ.items()
    ]
    return "\n".join([head, "|" + "---|" * (len(METHODS) + 1)] + body)


def figure_xor(summ: dict):
    """Test accuracy on the XOR mixture against the number of training points, per method."""
    fig, axes = plots.subplots(1, 1, width=5.5, height=3.6)
    ax = axes[0, 0]
    ns = list(summ)
    for k, label in METHODS.items():
        ax.errorbar(
            ns, [summ[n][k][0] for n in ns], [summ[n][k][1] for n in ns], marker="o", label=label
        )
    ax.set_xscale("log")
    ax.set_xlabel("training points n")
    ax.set_ylabel("test accuracy")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def figure_parity(summ: dict):
    """Test accuracy on structured parity, bars per number of blocks ``r`` and method."""
    fig, axes = plots.subplots(1, 1, width=5.5, height=3.6)
    ax = axes[0, 0]
    rs = list(summ)
    width = 0.8 / len(METHODS)
    for i, (k, label) in enumerate(METHODS.items()):
        xs = np.arange(len(rs)) + i * width
        ax.bar(
            xs,
            [summ[r][k][0] for r in rs],
            width,
            yerr=[summ[r][k][1] for r in rs],
            label=label,
        )
    ax.set_xticks(np.arange(len(rs)) + 0.4 - width / 2)
    ax.set_xticklabels([f"r = {r}" for r in rs])
    ax.set_ylim(0.4, 1.02)
    ax.set_ylabel("test accuracy")
    ax.legend(fontsize=8, ncol=3)
    fig.tight_layout()
    return fig


def hinge_table(rows) -> str:
    """Lemma 3.17 over the dimension: ``rows`` of ``(d, log10 upper bound, log10 lemma,
    smallest B_mu1 the proof allows)``, with B_mu1 = 1 here."""
    head = (
        "| d | 4σ√(τ log d / d) (B.34) | inside the hypotheses | log10 upper bound on the hinge "
        "of g* | log10 Lemma 3.17 |\n|---|---|---|---|---|\n"
    )
    return head + "\n".join(
        f"| {d} | {need:.2f} | {'yes' if need <= 1 else 'no'} | {own:.1f} | {lemma:.1f} |"
        for d, own, lemma, need in rows
    )
