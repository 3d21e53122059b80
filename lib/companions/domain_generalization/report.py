"""The chapter's tables and figures, and its measurements shaped for the registered claims (in
:mod:`companions.domain_generalization.chapters`). Nothing here decides a claim: each
``*_measurements`` function returns ``{claim id: measured value}`` for ``ledger.record``."""

from __future__ import annotations

import math

import numpy as np
import torch

from companions import Undecided, plots
from companions.domain_generalization import data, theory
from companions.domain_generalization.experiments import (
    DomainSweep,
    DSweep,
    PopulationSweep,
    TaskResult,
    TwoDResult,
    mean_se,
)

_LOG_LAMBDA = dict(xscale="log", xlabel="λ")


def gate_ratio(res: TaskResult, name: str, r: int) -> float:
    """Mean |gate| on the environmental features over that on the invariant ones, all seeds."""
    w = torch.stack(res.w[name])
    return float(w[:, r:].abs().mean() / w[:, :r].abs().mean())


def task_table(res: TaskResult, r: int) -> str:
    """Markdown table of the trained task: per method its lambda, ID and OOD accuracy, the stable
    rank of its OOD features (mean +- standard error over seeds) and its gate ratio."""
    rows = [
        "| method | λ | ID accuracy | OOD accuracy | stable rank (OOD features) | "
        "mean abs gate U / R |",
        "|---|---|---|---|---|---|",
    ]
    for m, (_, lam) in res.methods.items():
        o, s = mean_se(res.ood_acc[m]), mean_se(res.stable_rank[m])
        rows.append(
            f"| {m} | {lam:g} | {np.mean(res.id_acc[m]):.4f} | {o[0]:.4f} ± {o[1]:.4f} | "
            f"{s[0]:.3f} ± {s[1]:.3f} | {gate_ratio(res, m, r):.3f} |"
        )
    return "\n".join(rows)


# -------------------------------------------------------------------------------------------------
# The population model (Section 6.4)
# -------------------------------------------------------------------------------------------------
def wilson_uppers(pop: PopulationSweep) -> list[float]:
    """Per lambda, the 95 % Wilson upper end of the ERM-l2 OOD accuracy over every OOD draw."""
    n = pop.samples * pop.alpha.shape[0]
    return [theory.wilson_upper(int(k), n) for k in pop.ood_correct.sum(0)]


def population_table(pop: PopulationSweep, hyp: dict, r: int, gamma: float) -> str:
    """Markdown: per lambda, alpha, beta, alpha/beta (mean +- standard error over repeats), the
    OOD accuracy with its Wilson upper end, and whether Proposition 6.3's hypotheses hold."""
    n_ood = pop.samples * pop.alpha.shape[0]
    rows = [
        "| λ | α | β | α/β | OOD accuracy (95% upper) | meets Prop. 6.3 |",
        "|---|---|---|---|---|---|",
    ]
    for j, (lam, up) in enumerate(zip(pop.lambdas, wilson_uppers(pop))):
        cells = [mean_se(v[:, j]) for v in (pop.alpha, pop.beta, pop.alpha / pop.beta)]
        shown = " | ".join(f"{m:.4f} ± {s:.1e}" for m, s in cells)
        rows.append(
            f"| {lam:g} | {shown} | {pop.ood_correct[:, j].sum() / n_ood:.4f} ({up:.1e}) | "
            f"{'yes' if all(hyp[lam].values()) else 'no'} |"
        )
    return "\n".join(rows) + (
        f"\n\nBounds at $r={r}$, $\\gamma={gamma}$: $1/\\sqrt r={1 / math.sqrt(r):.4f}$, "
        f"$3/(4\\gamma)={3 / (4 * gamma):.4f}$, $e^{{-r/10}}={theory.ood_bound(r):.2e}$; "
        f"$\\sqrt r e^{{-\\sqrt r/5}}={theory.lambda_floor(r):.3f}$ (the $\\lambda$ of "
        "Proposition 6.3 with its unstated $\\Omega$ constant taken as 1)."
    )


def lemma_6_1_gaps(pop: PopulationSweep, columns, r: int, gamma: float) -> dict:
    """Per lambda of ``columns`` (indices into the sweep), the four gaps of Lemma 6.1 (3) per
    repeat: beta, alpha - beta, 1/sqrt(r) - alpha, 3/(4 gamma) - alpha/beta."""
    out = {}
    for j in columns:
        a, b, lam = pop.alpha[:, j], pop.beta[:, j], pop.lambdas[j]
        out[f"λ = {lam:g}: β"] = b.tolist()
        out[f"λ = {lam:g}: α − β"] = (a - b).tolist()
        out[f"λ = {lam:g}: 1/√r − α"] = (1 / math.sqrt(r) - a).tolist()
        out[f"λ = {lam:g}: 3/(4γ) − α/β"] = (3 / (4 * gamma) - a / b).tolist()
    return out


def population_measurements(pop, hyp, r, gamma, spread_over_gap) -> dict:
    """The population section's claims: Lemma E.5's symmetry (``spread_over_gap``), Lemma 6.1 at
    the lambdas that meet its proof's condition and at the others, and the OOD accuracy against
    Proposition 6.3's exp(-r/10) at both (Wilson upper ends over the bound where the hypotheses
    hold, accuracies per repeat over the bound elsewhere)."""
    met = [j for j, lam in enumerate(pop.lambdas) if all(hyp[lam].values())]
    rest = [j for j in range(len(pop.lambdas)) if j not in met]
    bound, uppers = theory.ood_bound(r), wilson_uppers(pop)
    none_met = Undecided("no λ of this run meets Proposition 6.3's hypotheses")
    none_below = Undecided("every λ of this run meets Proposition 6.3's hypotheses")
    return {
        "lemma-e5-equal-weights": spread_over_gap,
        "lemma-6-1-bounds": lemma_6_1_gaps(pop, met, r, gamma) if met else none_met,
        "lemma-6-1-conclusion-below-lambda": (
            lemma_6_1_gaps(pop, rest, r, gamma) if rest else none_below
        ),
        "prop-6-3-l2-ood-bound": [uppers[j] / bound for j in met] if met else none_met,
        "l2-ood-bound-beyond-hypotheses": (
            {
                f"λ = {pop.lambdas[j]:g}": (pop.ood_correct[:, j] / pop.samples / bound).tolist()
                for j in rest
            }
            if rest
            else none_below
        ),
    }


def figure_lambda(pop: PopulationSweep, r: int, gamma: float):
    """The ERM-l2 optimum over lambda: the weights, alpha/beta against 3/(4 gamma), and the OOD
    accuracy (drawn at its Wilson upper end) of ERM-l2 and ERM-l1 against exp(-r/10)."""
    lams, n_ood = list(pop.lambdas), pop.samples * pop.alpha.shape[0]
    ms = {
        k: [mean_se(v[:, j]) for j in range(len(lams))]
        for k, v in {"α": pop.alpha, "β": pop.beta, "ratio": pop.alpha / pop.beta}.items()
    }
    fig, axes = plots.subplots(1, 3, width=4.0, height=3.2)
    ax = axes[0, 0]
    for key, marker in (("α", "o"), ("β", "s")):
        ax.errorbar(lams, *zip(*ms[key]), marker=marker, label=key)
    ax.axhline(1 / math.sqrt(r), color="k", ls="--", lw=1, label="1/√r")
    ax.set(**_LOG_LAMBDA, ylabel="weight", title="ERM-ℓ2 weights")
    ax.legend(fontsize=8)
    ax = axes[0, 1]
    ax.errorbar(lams, *zip(*ms["ratio"]), marker="o")
    ax.axhline(3 / (4 * gamma), color="k", ls="--", lw=1, label="3/(4γ)")
    ax.set(**_LOG_LAMBDA, ylabel="α/β", title="Lemma 6.1 (3)")
    ax.legend(fontsize=8)
    ax = axes[0, 2]
    shown = [max(k / n_ood, u) for k, u in zip(pop.ood_correct.sum(0), wilson_uppers(pop))]
    ax.plot(lams, shown, "o-", label="ERM-ℓ2 (≤)")
    ax.plot(lams, pop.l1_ood_correct.sum(0) / n_ood, "s-", label="ERM-ℓ1")
    ax.axhline(theory.ood_bound(r), color="k", ls="--", lw=1, label="$e^{-r/10}$")
    ax.set(**_LOG_LAMBDA, yscale="log", ylabel="OOD accuracy", ylim=(1e-6, 2))
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def l1_table(pop: PopulationSweep, live) -> str:
    """Markdown: the ERM-l1 optimum and its subgradient slack at the lambdas ``live``."""
    rows = ["| λ | ℓ1: α | ℓ1: β | slack (± se) |", "|---|---|---|---|"]
    for j in live:
        m, s = mean_se(pop.l1_slack[:, j])
        rows.append(
            f"| {pop.lambdas[j]:g} | {pop.l1_alpha[:, j].mean():.4f} | "
            f"{pop.l1_beta[:, j].mean():.4f} | {m:.3g} ± {s:.1g} |"
        )
    return "\n".join(rows)


def d_table(dsw: DSweep, r: int, gamma: float) -> str:
    """Markdown: per d, the OOD accuracy (Monte Carlo), its normal approximation and alpha/beta;
    then the predicted turn r + (alpha/beta) r / (2 gamma) and where the accuracy first falls
    below one half."""
    acc = [mean_se(dsw.ood_accuracy[:, j]) for j in range(len(dsw.d_values))]
    rows = ["| d | OOD accuracy (MC) | normal approximation | α/β |", "|---|---|---|---|"]
    for j, (dv, (m, s)) in enumerate(zip(dsw.d_values, acc)):
        rows.append(
            f"| {dv} | {m:.4f} ± {s:.4f} | {dsw.normal_accuracy[:, j].mean():.4f} | "
            f"{(dsw.alpha[:, j] / dsw.beta[:, j]).mean():.3f} |"
        )
    turn = r + float((dsw.alpha / dsw.beta).mean()) * r / (2 * gamma)
    below = [dv for dv, (m, _) in zip(dsw.d_values, acc) if m < 0.5]
    return "\n".join(rows) + (
        f"\n\nPredicted turn $r+\\frac\\alpha\\beta\\frac r{{2\\gamma}}\\approx{turn:.0f}$; "
        "first $d$ of the sweep with OOD accuracy below one half: "
        f"{below[0] if below else 'none'}; Proposition 6.3 starts at "
        f"{theory.d_floor(r, gamma):.0f}."
    )


def figure_d(dsw: DSweep, r: int, gamma: float, lam: float):
    """OOD accuracy of the ERM-l2 optimum against d, with the normal approximation and the
    region where Proposition 6.3's d > r/gamma^2 + r holds."""
    acc = [mean_se(dsw.ood_accuracy[:, j]) for j in range(len(dsw.d_values))]
    floor = theory.d_floor(r, gamma)
    fig, axes = plots.subplots(1, 1, width=6, height=3.6)
    ax = axes[0, 0]
    ax.errorbar(dsw.d_values, *zip(*acc), marker="o", label="ERM-ℓ2, Monte Carlo")
    ax.plot(dsw.d_values, dsw.normal_accuracy.mean(0), "k:", label="normal approximation")
    right = max(max(dsw.d_values), floor) * 1.05
    ax.axvspan(floor, right, color="grey", alpha=0.2, label="d > r/γ² + r")
    ax.axhline(theory.ood_bound(r), color="k", ls="--", lw=1, label="$e^{-r/10}$")
    ax.set(xlabel="d", ylabel="OOD accuracy", title=f"r = {r}, γ = {gamma}, λ = {lam:g}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def domain_table(dom: DomainSweep) -> str:
    """Markdown: per number of training domains, their correlations and the OOD accuracies of the
    two optima (mean over repeats; ERM-l1 with its standard error)."""
    rows = [
        "| $E_{tr}$ | $\\gamma_e$ | ERM-ℓ2 OOD accuracy | ERM-ℓ1 OOD accuracy |",
        "|---|---|---|---|",
    ]
    for j, c in enumerate(dom.counts):
        m, s = mean_se(dom.l1_ood[:, j])
        rows.append(
            f"| {c} | {', '.join(f'{g:.3f}' for g in dom.gammas[c])} | "
            f"{dom.l2_ood[:, j].mean():.2e} | {m:.4f} ± {s:.4f} |"
        )
    return "\n".join(rows)


def figure_domains(dom: DomainSweep, r: int):
    """OOD accuracy of the two population optima against the number of training domains."""
    fig, axes = plots.subplots(1, 1, width=6, height=3.4)
    ax = axes[0, 0]
    for key, values, marker in (("ERM-ℓ2", dom.l2_ood, "o"), ("ERM-ℓ1", dom.l1_ood, "s")):
        stats = [mean_se(values[:, j]) for j in range(len(dom.counts))]
        ax.errorbar(dom.counts, *zip(*stats), marker=marker, label=key)
    ax.axhline(theory.ood_bound(r), color="k", ls="--", lw=1, label="$e^{-r/10}$")
    ax.set(xlabel="training domains $E_{tr}$", ylabel="OOD accuracy")
    ax.set_yscale("symlog", linthresh=1e-5)
    ax.set_ylim(0, 2)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


# -------------------------------------------------------------------------------------------------
# The 2-D example (Section 6.3.1)
# -------------------------------------------------------------------------------------------------
def two_d_table(toy: TwoDResult) -> str:
    """Markdown: per method, ID and OOD accuracy (mean +- standard error over seeds), the slope
    w2/w1 of the learned classifier and the singular values of Phi(X) (seed 0)."""
    rows = [
        "| method | ID accuracy | OOD accuracy | w₂/w₁ of Aᵀu | singular values of Φ(X) |",
        "|---|---|---|---|---|",
    ]
    for m in toy.ood_acc:
        (i, si), (o, so) = mean_se(toy.id_acc[m]), mean_se(toy.ood_acc[m])
        sv = ", ".join(f"{v:.3g}" for v in toy.singular_values[m][0])
        rows.append(
            f"| {m} | {i:.4f} ± {si:.4f} | {o:.4f} ± {so:.4f} | {np.mean(toy.slope[m]):.3f} | "
            f"{sv} |"
        )
    return "\n".join(rows)


def figure_two_d(toy: TwoDResult, generator: torch.Generator):
    """ID and OOD test points of the 2-D task with the boundaries ERM and ERM-NU learned (seed
    0)."""
    fig, axes = plots.subplots(1, 2, width=3.8, height=3.6)
    grid = torch.linspace(-1, 1, 50)
    for k, (p_al, title) in enumerate(((0.7, "ID"), (0.3, "OOD"))):
        xs, ys = data.sample_two_d(600, p_al, generator)
        ax = axes[0, k]
        ax.scatter(xs[:, 0], xs[:, 1], c=ys, cmap="cividis", s=4, alpha=0.6)
        for j, method in enumerate(("ERM", "ERM-NU")):
            run = toy.runs[method][0]
            w, b = run.direction().cpu(), float(run.b)
            ax.plot(grid, -(w[0] * grid + b) / w[1], color=plots.color(j + 1), label=method)
        ax.set(xlim=(-1, 1), ylim=(-1, 1), xlabel="x₁ (invariant)", ylabel="x₂ (environmental)")
        ax.set_title(title)
        ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return fig


def two_d_closed_form_rows(x, y, ood_values=(0.76, 0.94)) -> list[tuple[float, float, float]]:
    """(Monte Carlo, its binomial standard error, D1) for the OOD accuracy of sign(x1 + t x2) at
    the t that D1 gives for each accuracy of ``ood_values``, on OOD draws ``(x, y)``."""
    rows = []
    for target in ood_values:
        t_star = theory.two_d_t_for_accuracy(target, 0.3)
        mc = float(((x[:, 0] + t_star * x[:, 1]) * y > 0).double().mean())
        se = math.sqrt(target * (1 - target) / len(y))
        rows.append((mc, se, theory.two_d_accuracy(t_star, 0.3)))
    return rows


# -------------------------------------------------------------------------------------------------
# The trained multi-domain task
# -------------------------------------------------------------------------------------------------
def sweep_order(res: TaskResult, sweep) -> list[str]:
    """The methods along the nuclear-norm sweep: ERM (lambda = 0), then each lambda of ``sweep``
    (the method named ERM-NU where its lambda is the chapter's task_nu)."""
    by_lambda = {lam: name for name, (kind, lam) in res.methods.items() if kind == "nu"}
    return ["ERM"] + [by_lambda[lam] for lam in sweep]


def task_measurements(res: TaskResult, sweep) -> dict:
    """The trained task's claims: ERM-NU against ERM-l2 and ERM, the stable rank along the sweep
    and at its ends, and the OOD accuracy at the middle lambda against both ends."""
    order = sweep_order(res, sweep)
    ood, srank = res.ood_acc, res.stable_rank
    mid = order[1 + len(sweep) // 2]
    return {
        "task-nu-beats-l2-ood": (ood["ERM-NU"], ood["ERM-ℓ2"]),
        "task-nu-beats-erm-ood": (ood["ERM-NU"], ood["ERM"]),
        "figure-6-5-stable-rank-decreases": [srank[m] for m in order],
        "stable-rank-nu-below-erm": (srank["ERM"], srank[order[-1]]),
        "figure-6-5-ood-rises-then-falls": {
            "middle − ERM": (ood[mid], ood["ERM"]),
            "middle − last λ": (ood[mid], ood[order[-1]]),
        },
    }


def figure_task(res: TaskResult, sweep, r: int, d: int):
    """Left: OOD accuracy and stable rank along the sweep (ERM at the left end). Right: the gates
    of seed 0 under ERM-l2 and ERM-NU."""
    order = sweep_order(res, sweep)
    xs = [sweep[0] / 10] + list(sweep)
    fig, axes = plots.subplots(1, 2, width=4.6, height=3.4)
    ax = axes[0, 0]
    acc = [mean_se(res.ood_acc[m]) for m in order]
    ax.errorbar(xs, *zip(*acc), marker="o", color=plots.color(0), label="OOD accuracy")
    ax.set(xscale="log", xlabel="λ (leftmost point: ERM, λ = 0)", ylabel="OOD accuracy")
    ax.set_ylim(0, 1.05)
    ax2 = ax.twinx()
    srk = [mean_se(res.stable_rank[m]) for m in order]
    ax2.errorbar(xs, *zip(*srk), marker="s", color=plots.color(1), label="stable rank")
    ax2.set(ylabel="stable rank")
    ax2.grid(False)
    ax.legend(loc="center left", fontsize=8)
    ax2.legend(loc="center right", fontsize=8)
    ax = axes[0, 1]
    for j, m in enumerate(("ERM-ℓ2", "ERM-NU")):
        ax.bar(
            np.arange(d) + 0.4 * j,
            res.w[m][0].numpy(),
            width=0.4,
            label=m,
            color=plots.color(j + 2),
        )
    ax.axvline(r - 0.5, color="k", lw=0.8)
    ax.set(xlabel="feature (invariant left of the line)", ylabel="gate w_j", title="seed 0")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def l1_measurements(pop: PopulationSweep) -> dict:
    """D3's subgradient slack per repeat at each lambda < 1/4 of the sweep."""
    live = [j for j, lam in enumerate(pop.lambdas) if lam < 0.25]
    return {
        "l1-drops-environmental-features": {
            f"λ = {pop.lambdas[j]:g}": pop.l1_slack[:, j].tolist() for j in live
        }
    }


def d_measurements(dsw: DSweep) -> dict:
    """Per d, the Monte Carlo OOD accuracy minus its normal approximation, per repeat."""
    return {
        "ood-accuracy-normal-approximation": {
            f"d = {dv}": (dsw.ood_accuracy[:, j] - dsw.normal_accuracy[:, j]).tolist()
            for j, dv in enumerate(dsw.d_values)
        }
    }


def domain_measurements(dom: DomainSweep, r: int) -> dict:
    """Per number of training domains, the ERM-l2 OOD accuracy per repeat over exp(-r/10)."""
    bound = theory.ood_bound(r)
    return {
        "domain-count-l2-ood-bound": {
            f"E_tr = {c}": (dom.l2_ood[:, j] / bound).tolist() for j, c in enumerate(dom.counts)
        }
    }


def two_d_measurements(toy: TwoDResult, closed_rows) -> dict:
    """D1 against Monte Carlo (``closed_rows``), and the OOD accuracies of ERM and ERM-NU per
    seed."""
    return {
        "two-d-closed-form": closed_rows,
        "two-d-erm-ood": toy.ood_acc["ERM"],
        "two-d-erm-nu-ood": toy.ood_acc["ERM-NU"],
        "two-d-nu-raises-ood": (toy.ood_acc["ERM-NU"], toy.ood_acc["ERM"]),
    }
