"""The chapter's runs of pre-training, its tables and figures, and its measurements shaped for the
registered claims (in :mod:`companions.universality.chapters`). Nothing here decides a claim: each
``*_measurements`` function returns ``{claim id: measured value}`` for ``ledger.record``."""

from __future__ import annotations

import math

import numpy as np
import torch
from tqdm.std import tqdm

from companions import Estimate, plots
from companions.universality import experiments as ux
from companions.universality import theory as uth
from companions.universality import training as utr

#: The groups of coordinates whose loadings the chapter compares with the closed forms.
GROUPS = ("S", "P_1", "P_2", "U")


def groups(layout) -> dict:
    """The index sets of :data:`GROUPS`: the shared features, the first two tasks' private ones,
    and the spurious ones."""
    return {
        "S": layout.shared(),
        "P_1": layout.private(0),
        "P_2": layout.private(1),
        "U": layout.spurious(),
    }


def pretrain_runs(layout, M, cfg, generator_of, device) -> tuple[dict, dict]:
    """Pre-train on the first ``K`` tasks, ``K = 1..T``, ``cfg.seeds`` times each, and the controls
    (positives that keep ``z``'s own ``z_U``) at ``K = 1`` and ``K = T``. ``generator_of(i)`` gives
    the generator of run ``i`` (``1000 seed + K``, plus 500 for a control). Returns ``(reps,
    controls)``, each ``{K: [W per seed]}`` in float64 on the CPU."""

    def run(K, sd, resample_u=True):
        W, _ = utr.pretrain(
            layout,
            M,
            tasks=list(range(K)),
            steps=cfg.pre_steps,
            batch=cfg.pre_batch,
            lr=cfg.pre_lr,
            generator=generator_of(1000 * sd + K + (0 if resample_u else 500)),
            device=device,
            resample_u=resample_u,
        )
        return W.double().cpu()

    plan = [(K, sd) for K in range(1, cfg.T + 1) for sd in range(cfg.seeds)]
    trained = [run(K, sd) for K, sd in tqdm(plan, desc="pre-trainings")]
    reps = {K: trained[(K - 1) * cfg.seeds : K * cfg.seeds] for K in range(1, cfg.T + 1)}
    controls = {
        K: [run(K, sd, resample_u=False) for sd in range(cfg.seeds)]
        for K in tqdm((1, cfg.T), desc="controls (z_U kept)")
    }
    return reps, controls


def _group_means(Ws, M, idx) -> list[float]:
    return [float(uth.loadings(W, M)[idx].mean()) for W in Ws]


def loadings_table(layout, M, reps, controls) -> str:
    """Markdown: per pre-training (target task alone, mixture) and group, the mean squared loading
    over seeds and its closed form; and the spurious loading of the controls."""
    rows = ["| pre-training | group | mean a² ± s.e. | theory |", "|---|---|---|---|"]
    for K, name in ((1, "target"), (layout.T, "mixture")):
        theo = uth.theory_loadings(layout, range(K))
        for g, idx in groups(layout).items():
            mean, se = ux.mean_se(_group_means(reps[K], M, idx))
            rows.append(f"| {name} | {g} | {mean:.4f} ± {se:.4f} | {float(theo[idx].mean()):.4f} |")
        kept = np.mean(_group_means(controls[K], M, layout.spurious()))
        rows.append(f"| {name}, z_U kept (control) | U | {kept:.4f} | — |")
    return "\n".join(rows)


def loading_measurements(layout, M, reps, controls) -> dict:
    """Per claimed group, the mean squared loading per seed over its closed form; per
    pre-training, the control's spurious loading minus (7.7)'s, per seed."""
    out = {}
    for K, name in ((1, "target"), (layout.T, "mixture")):
        theo = uth.theory_loadings(layout, range(K))
        for g, idx in groups(layout).items():
            target = float(theo[idx].mean())
            if g == "U" or target == 0:  # shown, not claimed (see the chapter)
                continue
            key = f"loadings-{name}-{g.lower().replace('_', '')}"
            out[key] = [v / target for v in _group_means(reps[K], M, idx)]
        kept = np.array(_group_means(controls[K], M, layout.spurious()))
        removed = np.array(_group_means(reps[K], M, layout.spurious()))
        out[f"spurious-removed-{name}"] = (kept - removed).tolist()
    return out


def figure_loadings(layout, M, reps):
    """Squared loadings of every coordinate after pre-training (seed 0) with the closed form."""
    fig, axes = plots.subplots(1, 2, width=4.6, height=3.0, sharey=True)
    for ax, K, title in ((axes[0, 0], 1, "target task only"), (axes[0, 1], layout.T, "mixture")):
        ax.bar(np.arange(layout.d), uth.loadings(reps[K][0], M).numpy(), color=plots.color(0))
        theo = uth.theory_loadings(layout, range(K)).numpy()
        ax.step(np.arange(layout.d), theo, "k--", where="mid", lw=1)
        ax.set(title=title, xlabel="coordinate j of z  [S | P_1 ... P_T | U]")
    axes[0, 0].set_ylabel("a_j² = ||(WM)_{:,j}||²")
    fig.tight_layout()
    return fig


def f8_measurements(f_vals, f_se, grid, samples) -> dict:
    """Proposition F.8 for the logistic loss: f(alpha) - f(1) at each alpha of ``grid`` with its
    standard error (common draws), as estimates over ``samples`` draws."""
    gaps = f_vals[:-1] - f_vals[-1]
    return {
        "f8-logistic-alpha-one": {
            f"α = {a:g}": Estimate(float(g), float(s), samples)
            for a, g, s in zip(grid, gaps, f_se[:-1])
        }
    }


def figure_excess(m_values, exact_curves, exact_other, small, trained, r):
    """Excess MSE of the least-norm probe against m: closed-form representations (lines), trained
    ones (markers, m < r), and the target-only representation on another task (grey)."""
    fig, axes = plots.subplots(1, 1, width=5.6, height=3.6)
    ax = axes[0, 0]
    for i, name in enumerate(exact_curves):
        ax.plot(m_values, exact_curves[name], color=plots.color(i), label=f"{name}, target task")
        c = trained[name]
        yerr = c.std(0) / math.sqrt(len(c))
        ax.errorbar(small, c.mean(0), yerr=yerr, fmt="o", color=plots.color(i))
    ax.plot(m_values, exact_other, color="grey", label="target only, another task")
    ax.axvline(r, color="k", ls=":", lw=1)
    ax.set(xlabel="labels m", ylabel="excess MSE")
    ax.set_yscale("symlog", linthresh=1e-3)
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def tradeoff_measurements(least_norm, ridge) -> dict:
    """The trade-off claims: target error and average accuracy at K = T minus K = 1, per seed,
    with the least-norm probe and with the ridge probe (arrays ``(K, seeds, 2)``)."""
    out = {}
    for prefix, pts in (("tradeoff-least-norm", least_norm), ("tradeoff", ridge)):
        for what, col in (("target-error", 0), ("average-accuracy", 1)):
            out[f"{prefix}-{what}-grows"] = (pts[-1, :, col] - pts[0, :, col]).tolist()
    return out


def figure_tradeoff(points, m_target):
    """This book's Figure 7.3: average and target accuracy against the number of pre-training
    tasks K (left), target error against average accuracy (right), ridge probe."""
    Ks = np.arange(1, points.shape[0] + 1)
    target_acc, average_acc = 1 - points[:, :, 0], points[:, :, 1]
    root = math.sqrt(points.shape[1])
    fig, axes = plots.subplots(1, 2, width=4.4, height=3.4)
    ax = axes[0, 0]
    ax.errorbar(
        Ks, average_acc.mean(1), yerr=average_acc.std(1) / root, marker="o",
        color=plots.color(1), label="average accuracy, all tasks",
    )  # fmt: skip
    ax.set(xlabel="pre-training tasks K", ylabel="average accuracy", xticks=Ks)
    twin = ax.twinx()
    twin.errorbar(
        Ks, target_acc.mean(1), yerr=target_acc.std(1) / root, marker="s",
        color=plots.color(0), label=f"target accuracy, m = {m_target}",
    )  # fmt: skip
    twin.set_ylabel("target accuracy")
    handles = [h for a in (ax, twin) for h in a.get_legend_handles_labels()[0]]
    ax.legend(handles, [h.get_label() for h in handles], fontsize=8, loc="center left")
    ax = axes[0, 1]
    ax.plot(average_acc.mean(1), points[:, :, 0].mean(1), "o-", color=plots.color(2))
    for K, x_, y_ in zip(Ks, average_acc.mean(1), points[:, :, 0].mean(1)):
        ax.annotate(f"K={K}", (x_, y_), fontsize=8)
    ax.set(xlabel="average accuracy across tasks", ylabel=f"target error, m = {m_target}")
    fig.tight_layout()
    return fig


def rademacher_measurement(rad, se, low, lead) -> dict:
    """The Monte Carlo estimate of (F.75)'s term above the lower bound and below the upper one,
    each in standard errors."""
    return {"rademacher-two-sided": [(rad - low) / se, (lead - rad) / se]}


def theorem_7_2_table(results: dict) -> str:
    """Markdown: per norm B, the lowest losses found (free, invariant) and the free optimum's
    spread over z_U."""
    rows = [
        "| B | lowest loss, free | lowest loss, invariant | free − invariant "
        "| spread over z_U / B |",
        "|---|---|---|---|---|",
    ]
    for B, res in results.items():
        rows.append(
            f"| {B:g} | {res['free']:.10f} | {res['invariant']:.10f} | "
            f"{res['free'] - res['invariant']:+.2e} | {res['spread']:.1e} |"
        )
    return "\n".join(rows)


def symbolic_measurements(lin, ex71, t72, found, xor_value, f8) -> dict:
    """The symbolic section's claims from its computations: Theorem 7.1 (linear sympy and exact
    rational), Theorem 7.2 (1) per norm, the XOR restarts, and Proposition F.8 for exp(-t)."""
    T, s = f8["T"], f8["s"]
    crit = f8["critical"]
    return {
        "theorem-7-1-linear-sympy": [lin["residual"], lin["without_resampling"] != 0],
        "theorem-7-1-exact-rational": ex71["lhs"] - ex71["rhs"],
        "theorem-7-2-1-no-spurious": {
            f"B = {B:g}": res["free"] - res["invariant"] for B, res in t72.items()
        },
        "xor-square-optimal": float(found.min()) - xor_value,
        "f8-exponential-alpha-one": [
            len(crit) - 1,
            crit[0] - (T + 3) / 4,
            f8["slope_at_1"] - s * (1 - T) / (3 * (T + 2)),
        ],
    }


def cr_measurements(layout, M, cr, reps_T, errors, cfg) -> dict:
    """Proposition F.9's loadings after fine-tuning (per seed, over the prediction), the distance
    outside (F.105), the target error before minus after (``errors``: the errors before and
    after, per seed), and ||W_CR||_F^2 - r per seed."""
    err_mix, err_cr = errors
    target = uth.cr_sqrt_beta(cfg.T, cfg.s, cfg.gamma)
    sqrt_beta = [float(uth.loadings(W, M)[layout.private(0)].sqrt().mean()) for W in cr]
    alpha = [float(uth.loadings(W, M)[layout.shared()].mean()) for W in cr]
    return {
        "cr-sqrt-beta-f9": [v / target for v in sqrt_beta],
        "cr-alpha-stays-one": alpha,
        "cr-stays-in-f105": max(uth.cr_residual(Wc, W, cfg.gamma) for Wc, W in zip(cr, reps_T)),
        "cr-lowers-target-error": (np.array(err_mix) - np.array(err_cr)).tolist(),
        "cr-leaves-phi": [float(W.pow(2).sum()) - cfg.r for W in cr],
    }


def f8_quantile_gap(s: int, T: int, generator, alphas=(0.0, 0.25, 0.5, 0.75, 0.9)) -> float:
    """For F.8's stochastic-domination argument: the smallest gap between the quantiles of
    ``Z + Z_1/T`` and of ``alpha Z + (2 - alpha)/T Z_1`` (``Z, Z_1 ~ chi2_s``, 200 000 draws)
    over ``alphas`` and the levels 0.01..0.99."""
    Z = (torch.randn(200_000, s, generator=generator, dtype=torch.float64) ** 2).sum(1)
    Z1 = (torch.randn(200_000, s, generator=generator, dtype=torch.float64) ** 2).sum(1)
    levels = torch.linspace(0.01, 0.99, 99, dtype=torch.float64)
    q_one = torch.quantile(Z + Z1 / T, levels)
    return min(
        float((q_one - torch.quantile(a * Z + (2 - a) / T * Z1, levels)).min()) for a in alphas
    )
