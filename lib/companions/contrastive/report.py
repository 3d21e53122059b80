"""The part's figures and tables: each function takes what a chapter computed and draws or writes
it; nothing here computes a claim. A figure function returns its figure (the chapter assigns it,
``fig = report.figure_...(...)``, so it is shown once); a table function returns Markdown."""

from __future__ import annotations

import math

import numpy as np
import torch

from companions import plots
from companions.contrastive import theory
from companions.contrastive.metrics import by_config


def _fmt_row(cells) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def markdown_table(header, rows) -> str:
    """A Markdown table: ``header`` (a list of column titles) and ``rows`` (lists of cells)."""
    lines = [_fmt_row(header), "|" + "---|" * len(header)]
    return "\n".join(lines + [_fmt_row(r) for r in rows])


# ---------------------------------------------------------------------------------------------
# The setting
# ---------------------------------------------------------------------------------------------
def moment_table(moments: torch.Tensor) -> str:
    """The Monte Carlo moments ``E[<u_Y, M_j><u_X, M_j'>]`` (rows j, columns j')."""
    d = moments.shape[1]
    rows = [[j, *(f"{v:.3f}" for v in row)] for j, row in enumerate(moments.tolist())]
    return markdown_table(["j \\ j'", *range(d)], rows)


def figure_init_alignment(u2: torch.Tensor, d: int, t_ordinary: float, t_lucky: float):
    """The initial ``u_j^2`` of every (neuron, feature) pair against its exact law
    ``Beta(1/2, (d-1)/2)``, with Definition B.1's two thresholds (the lucky one drawn at 1 when it
    is above 1)."""
    fig, axes = plots.subplots(1, 1, width=5.5, height=3.4)
    ax = axes[0, 0]
    grid = np.linspace(1e-3, 1, 400)
    log_beta = math.lgamma(0.5) + math.lgamma((d - 1) / 2) - math.lgamma(d / 2)
    dens = np.exp(-0.5 * np.log(grid) + (d - 3) / 2 * np.log1p(-grid + 1e-15) - log_beta)
    ax.hist(u2.numpy(), bins=60, density=True, alpha=0.5, label=f"{u2.numel()} initial pairs")
    ax.plot(grid, dens, "k", lw=1.2, label=r"Beta$(1/2,(d-1)/2)$")
    ax.axvline(t_ordinary, color=plots.color(1), ls="--", label=r"$c_2\log d/d$ (ordinary)")
    ax.axvline(
        min(t_lucky, 1.0),
        color=plots.color(2),
        ls=":",
        label=rf"$c_1\log d/d={t_lucky:.2f}$ (lucky)",
    )
    ax.set(xlabel=r"$u_j^2=\langle w^{(0)},M_j\rangle^2/\|MM^\top w^{(0)}\|^2$", ylabel="density")
    ax.set(ylim=(0, 8))
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def lucky_table(rows: list[dict], gamma: float) -> str:
    """Definition B.1's exact probabilities beside the papers' rates, one row per ``(d, rho)``
    (:func:`companions.contrastive.experiments.lucky_rows`)."""
    header = [
        "d",
        "ρ",
        "c₁ log d / d",
        "Pr[i ∈ M_j] exact",
        "E\\|N_i\\| exact",
        "paper d^(1−ρ²(1−γ))",
        "Pr[lucky]",
        "paper d^(−(1+γ)/ρ²)",
    ]
    out = []
    for r in rows:
        d, rho = r["d"], r["rho"]
        if r["lucky_mc"] is not None:
            lucky = f"{r['lucky_mc']:.3g}"
        else:
            lucky = "0" if r["lucky_first"] == 0 else f"≤ {r['lucky_first']:.3g}"
        out.append(
            [
                d,
                rho,
                f"{r['threshold']:.3f}",
                f"{r['ordinary']:.4g}",
                f"{r['n_i']:.3g}",
                f"{d ** (1 - rho**2 * (1 - gamma)):.3g}",
                lucky,
                f"{d ** (-(1 + gamma) / rho**2):.3g}",
            ]
        )
    return markdown_table(header, out)


# ---------------------------------------------------------------------------------------------
# Stage 1
# ---------------------------------------------------------------------------------------------
def figure_stage1_rates(hist, pred: torch.Tensor, noise_rate: float, n_maj: int):
    """Left: the growth ``log sqrt(E_j(t) / E_j(0))`` of a majority and a minority feature in every
    run against ``t log g_j``; right: every neuron's noise-space norm over its start, with the
    predicted ``(1 - eta lam)^t``."""
    t = hist.steps.double()
    E = (hist.A**2).sum(2)  # (T, R, d)
    d = E.shape[-1]
    fig, axes = plots.subplots(1, 2, width=4.8, height=3.5)
    for j, lab in ((0, "majority feature 0"), (d - 1, f"minority feature {d - 1}")):
        c = plots.color(0 if j < n_maj else 1)
        axes[0, 0].plot(t, 0.5 * torch.log(E[:, :, j] / E[0, :, j]), color=c, lw=0.8, alpha=0.6)
        axes[0, 0].plot(t, t * pred[j], "k--" if j == 0 else "k:", lw=1.2, label=lab)
    axes[0, 0].set(xlabel="step t", ylabel=r"$\log\sqrt{E_j(t)/E_j(0)}$")
    axes[0, 0].set_title("feature growth (all runs)")
    axes[0, 0].legend(fontsize=7)
    ratio = (hist.noise / hist.noise[0]).flatten(1)
    axes[0, 1].plot(t, ratio, color=plots.color(2), lw=0.4, alpha=0.4)
    axes[0, 1].plot(t, noise_rate**t, "k--", lw=1.0)
    axes[0, 1].set(xlabel="step t", ylabel=r"$\|P_\perp w_i(t)\|/\|P_\perp w_i(0)\|$")
    axes[0, 1].set_title("noise directions (every neuron)")
    fig.tight_layout()
    return fig


def t1_table(sweep: dict, d: int, eta: float) -> str:
    """The length of stage 1 against ``d1`` (:func:`experiments.t1_sweep`), beside the papers'
    rates without their constants."""
    rows = []
    for d1, r in sweep.items():
        pp = theory.t1_papers(d, d1, eta)
        rows.append(
            [
                d1,
                f"{r['measured']:.1f}",
                f"{r['energy']:.1f}",
                f"{r['mc']:.1f} ± {r['mc_sd']:.1f}",
                f"{pp['000 (40)']:.0f}",
                f"{pp['001 (33)']:.0f}",
            ]
        )
    header = [
        "d₁",
        "T₁ measured",
        "T₁ exact (energy average)",
        "same rule, MC over init",
        "[000] (40)",
        "[001] (33)",
    ]
    return markdown_table(header, rows)


# ---------------------------------------------------------------------------------------------
# Stage 2
# ---------------------------------------------------------------------------------------------
def figure_stage2(hist, best: torch.Tensor, n_maj: int, run: int = 0):
    """Left: the best neuron's ``|cos|`` with each feature in one run (majority solid, minority
    dashed), with T1 (dotted) and T2 (dash-dotted); right: every neuron's ``b / ||w||``."""
    t = hist.steps.double()
    fig, axes = plots.subplots(1, 2, width=4.8, height=3.5)
    for j in range(best.shape[-1]):
        maj = j < n_maj
        axes[0, 0].plot(
            t, best[:, run, j], color=plots.color(0 if maj else 1), ls="-" if maj else "--", lw=1
        )
    for x, ls in ((hist.t1[run], ":"), (hist.t2[run], "-.")):
        axes[0, 0].axvline(float(x), color="grey", ls=ls, lw=0.8)
    axes[0, 0].set(xlabel="step", ylabel=r"$\max_i|\cos(w_i,M_j)|$", title=f"run {run}")
    axes[0, 1].plot(t, (hist.b / hist.norm)[:, run], color=plots.color(2), lw=0.5, alpha=0.5)
    axes[0, 1].set(xlabel="step", ylabel=r"$b_i/\|w_i\|$", title=f"bias of every neuron, run {run}")
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------------------------------------
# Stage 3
# ---------------------------------------------------------------------------------------------
def figure_heatmaps(C2: torch.Tensor, n_maj: int):
    """``cos^2(w_i, M_j)`` of one run's neurons: the first 13 ([000] Figure 1) and the first 24
    ([001] Figure 6), majority features left of the white line."""
    m, d = C2.shape
    fig, axes = plots.subplots(1, 2, width=4.6, height=4.6)
    for ax, rows, title in (
        (axes[0, 0], min(13, m), "[000] Fig. 1: first 13 neurons"),
        (axes[0, 1], min(24, m), "[001] Fig. 6: first 24 neurons"),
    ):
        im = ax.imshow(C2[:rows].numpy(), cmap="viridis", vmin=0, vmax=1, aspect="auto")
        ax.axvline(n_maj - 0.5, color="w", lw=1)
        ax.set(xlabel="feature j (majority | minority)", ylabel="neuron i", title=title)
        ax.set_xticks(range(d))
        ax.grid(False)
    fig.colorbar(im, ax=axes[0, 1], shrink=0.8, label=r"$\cos^2(w_i, M_j)$")
    fig.tight_layout()
    return fig


def figure_001_fig1(hist, neuron: int, feature: int, run: int = 0):
    """[001] Figure 1 from a run: one neuron's projection on its dominant feature, on its largest
    non-dominant feature and on the noise space, with T1 and T2."""
    A_t = hist.A[:, run, neuron].abs()  # (T, d)
    others = torch.cat([A_t[:, :feature], A_t[:, feature + 1 :]], -1).max(-1).values
    fig, axes = plots.subplots(1, 1, width=6, height=3.6)
    ax = axes[0, 0]
    ax.semilogy(hist.steps, A_t[:, feature], color=plots.color(0), label=f"dominant {feature}")
    ax.semilogy(hist.steps, others, color=plots.color(1), label="largest non-dominant feature")
    ax.semilogy(
        hist.steps,
        hist.noise[:, run, neuron],
        color=plots.color(2),
        label=r"noise space $\|P_\perp w_i\|$",
    )
    for x, lab in ((hist.t1[run], "$T_1$"), (hist.t2[run], "$T_2$")):
        ax.axvline(float(x), color="grey", ls=":", lw=0.8)
        ax.text(float(x), ax.get_ylim()[1], lab, fontsize=8, va="top")
    ax.set(xlabel="step", ylabel="projection magnitude", title=f"neuron {neuron}, run {run}")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def n_i_table(rows: list[dict]) -> str:
    """Per ``eps_min``: the exact init-based ``E|N_i|``, the trained count, the single-feature
    neurons and the theorem's lower bound ``m d^-(eps_max/eps_min)^2``."""
    header = [
        "eps_min",
        "exact E\\|N_i\\| (init)",
        "trained mean #{j: cos² ≥ 0.1}",
        "single-feature neurons",
        "bound m d^-(eps_max/eps_min)²",
    ]
    body = [
        [r["eps"], f"{r['exact']:.2f}", f"{r['trained']:.2f}", f"{r['single']:.1f}"]
        + [f"{r['bound']:.2g}"]
        for r in rows
    ]
    return markdown_table(header, body)


def figure_loss(hist, runs: int, K: int):
    """The running average ``(1/T) sum_t L`` of the training batch's loss of the first ``runs``
    runs, against ``log K``."""
    loss = hist.loss[:, :runs].double()
    run_avg = loss.cumsum(0) / torch.arange(1, len(hist.steps) + 1)[:, None]
    fig, axes = plots.subplots(1, 1, width=6, height=3.2)
    ax = axes[0, 0]
    ax.plot(hist.steps, run_avg.numpy(), color=plots.color(0), lw=1)
    ax.axhline(math.log(K), color="grey", ls=":", lw=0.8)
    ax.set(xlabel="step T", ylabel=r"$\frac{1}{T}\sum_{t\leq T} L$")
    fig.tight_layout()
    return fig


def _errorbars(ax, eps, *, mu, sd, nsr, color_of, ls="-", offset=0.0, label=""):
    for k, nv in enumerate(nsr):
        ax.errorbar(
            np.asarray(eps, dtype=float) * (1 + offset),
            mu[:, k],
            yerr=sd[:, k],
            color=color_of(k),
            ls=ls if isinstance(ls, str) else ls[k % len(ls)],
            marker="o",
            ms=3,
            capsize=2,
            label=f"{label}NSR {nv:g}",
        )


def figure_sweeps(panels):
    """[001] Figures 2-5: per panel ``(values (R,), config_index (R,), eps grid, NSR grid,
    title)``, the mean and standard deviation over the repeats of each setting, one line per
    NSR."""
    fig, axes = plots.subplots(1, len(panels), width=3.3, height=3.2)
    for ax, (vals, cidx, eg, ng, title) in zip(axes[0], panels):
        mu, sd = (x.view(len(eg), len(ng)) for x in by_config(vals, cidx, len(eg) * len(ng)))
        _errorbars(ax, eg, mu=mu, sd=sd, nsr=ng, color_of=plots.color)
        ax.set(xlabel=r"$\epsilon_{\min}$", title=title)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------------------------------------
# Pruning
# ---------------------------------------------------------------------------------------------
def figure_pruning_norms(norms: torch.Tensor, is_maj, is_min, step: int):
    """Neuron norms at the checkpoint, one column per run, coloured by what the neuron learned."""
    R, m = norms.shape
    fig, axes = plots.subplots(1, 1, width=6.5, height=3.2)
    ax = axes[0, 0]
    rng = np.random.default_rng(0)
    for lab, sel, c in (
        ("majority specialist", is_maj, 0),
        ("minority specialist", is_min, 1),
        ("unaligned", ~(is_min | is_maj), 2),
    ):
        xs = np.repeat(np.arange(R)[:, None], m, 1)[sel.numpy()]
        jitter = rng.uniform(-0.2, 0.2, len(xs))
        ax.scatter(xs + jitter, norms[sel].numpy(), s=10, color=plots.color(c), label=lab)
    ax.set(xlabel="run", ylabel=r"$\|w_i\|$", title=f"t = {step}")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def figure_lemma_f2(one_minus_lp: dict):
    """``E[1 - ell'_p]`` per run, with the full model and with P masked, on D1 and on D2."""
    fig, axes = plots.subplots(1, 2, width=4.2, height=3.2)
    titles = {"D1": r"$D_1$: pairs with $M_{j^*}$", "D2": r"$D_2$: the others"}
    for ax, key in zip(axes[0], ("D1", "D2")):
        full, masked = one_minus_lp[key]
        x = np.arange(len(full))
        ax.bar(x - 0.2, full.numpy(), 0.4, color=plots.color(0), label="full model")
        ax.bar(x + 0.2, masked.numpy(), 0.4, color=plots.color(1), label="P masked")
        ax.set(xlabel="run", ylabel=r"$E[1-\ell'_p]$", title=titles[key], ylim=(0, 1))
    axes[0, 0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def f4_table(rows) -> str:
    """F.4's elapsed time, linear and geometric, per ``eps*``: rows ``(eps*, r, T_lin, T_geo)``."""
    body = [[e, f"{r:.2e}", f"{tl:.0f}", f"{tg:.0f}"] for e, r, tl, tg in rows]
    return markdown_table(["eps*", "r per step", "F.4 T (linear)", "geometric T"], body)


def first_order_table(first_order: torch.Tensor, actual: torch.Tensor, keep) -> str:
    """(211) at the full mask against the exact change of ``E[ell'_p]`` on D1, per run with P."""
    body = [
        [r, f"{float(first_order[r]):.4f}", f"{float(actual[r]):.4f}"]
        + [f"{float(first_order[r] / actual[r]):.2f}"]
        for r in range(len(first_order))
        if bool(keep[r])
    ]
    return markdown_table(["run", "D1: (211)", "D1: exact change", "ratio"], body)


def figure_acceleration(steps, proj: dict, others: dict, keep):
    """The window after the checkpoint, one line per run with P: left, the pruned neurons' mean
    projection on ``M_j*``; right, every other feature's best projection (mean over features)."""
    fig, axes = plots.subplots(1, 2, width=4.6, height=3.4)
    for k, (name, ls) in enumerate(zip(proj, ("-", "-", ":"))):
        c = plots.color(k)
        axes[0, 0].semilogy(steps, proj[name][:, keep].numpy(), color=c, ls=ls, lw=1.1, alpha=0.8)
        axes[0, 0].plot([], [], color=c, ls=ls, label=name)
        mean_others = torch.nanmean(others[name], -1)[:, keep].numpy()
        axes[0, 1].plot(steps, mean_others, color=c, ls=ls, lw=1.1, alpha=0.8)
    axes[0, 0].set(xlabel="step", ylabel=r"mean over $P$ of $|\langle w_i, M_{j^*}\rangle|$")
    axes[0, 1].set(
        xlabel="step", ylabel=r"mean over $j\neq j^*$ of $\max_i|\langle w_i,M_j\rangle|$"
    )
    axes[0, 0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def arm_ratio_table(ratio_end: dict, eps_runs: torch.Tensor, eps_grid, keep) -> str:
    """Per arm and ``eps*``: the mean over runs with P of the pruned neurons' coefficient over the
    majority specialists' (a dash where no run had P)."""
    body = []
    for name, v in ratio_end.items():
        cells = []
        for e in eps_grid:
            sel = (eps_runs == e) & keep
            cells.append(f"{float(v[sel].mean()):.2f}" if bool(sel.any()) else "—")
        body.append([name, *cells])
    return markdown_table(["arm", *(f"eps* = {e:g}" for e in eps_grid)], body)


def figure_pruning_sweeps(stats: dict, config_index, eps_grid, nsr_grid, repeats: int):
    """[001] Figures 2-5 with and without pruning: per statistic (the first four of each arm's
    dict), the mean and standard deviation over the repeats of each setting, one colour per arm
    (solid: the first NSR, dashed: the others)."""
    titles = list(next(iter(stats.values())))[:4]
    n_cfg = len(eps_grid) * len(nsr_grid)
    fig, axes = plots.subplots(1, 4, width=3.3, height=3.2)
    for ax, title in zip(axes[0], titles):
        for k, name in enumerate(stats):
            mu, sd = by_config(stats[name][title], config_index, n_cfg)
            mu, sd = mu.view(len(eps_grid), len(nsr_grid)), sd.view(len(eps_grid), len(nsr_grid))
            _errorbars(
                ax,
                eps_grid,
                mu=mu,
                sd=sd if repeats > 1 else torch.zeros_like(sd),
                nsr=nsr_grid,
                color_of=lambda q, k=k: plots.color(k),
                ls=("-", "--"),
                offset=0.02 * (k - 1),
                label=f"{name}, ",
            )
        ax.set(xlabel=r"$\epsilon_{\min}$", title=title)
    axes[0, 0].legend(fontsize=6)
    fig.tight_layout()
    return fig


def figure_pruned(width_rows):
    """What Algorithm 1 prunes: per setting, the fractions of pruned neuron-steps that fall on
    minority specialists, majority specialists and unaligned neurons (stacked), with the share of
    minority specialists among all neurons (dashes); ``width_rows``: ``(label, {category:
    fraction}, share)``."""
    fig, axes = plots.subplots(1, 1, width=9.0, height=3.2)
    ax = axes[0, 0]
    x = range(len(width_rows))
    bottom = np.zeros(len(width_rows))
    for k, cat in enumerate(("minority", "majority", "unaligned")):
        vals = np.array([r[1][cat] for r in width_rows])
        label = f"pruned: {cat} specialist" if cat != "unaligned" else "pruned: unaligned"
        ax.bar(x, vals, 0.6, bottom=bottom, color=plots.color(k), label=label)
        bottom += vals
    ax.scatter(
        x,
        [r[2] for r in width_rows],
        color="k",
        marker="_",
        s=300,
        zorder=3,
        label="share of minority specialists among all neurons",
    )
    ax.set(xticks=list(x), xticklabels=[r[0] for r in width_rows], ylim=(0, 1.05))
    ax.set(ylabel="fraction of pruned neuron-steps")
    ax.tick_params(axis="x", labelsize=7)
    ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return fig


def most_pruned_table(counts, dominant, cos2, norms, n_maj: int, top: int = 6) -> str:
    """The most-pruned neurons of one run: how often each was pruned, its dominant feature, that
    feature's ``cos^2`` and its norm at the end."""
    body = []
    for i in counts.argsort(descending=True)[:top].tolist():
        kind = "minority" if int(dominant[i]) >= n_maj else "majority"
        body.append(
            [i, int(counts[i]), f"{int(dominant[i])} ({kind})", f"{float(cos2[i]):.2f}"]
            + [f"{float(norms[i]):.3f}"]
        )
    header = ["neuron", "logged steps pruned", "dominant feature", "its cos²", "norm at the end"]
    return markdown_table(header, body)


def table2_markdown(table, rows) -> str:
    """[001] Table 2 as transcribed, with the gains and the changes of Delta20 (and each in units
    of the two rows' standard deviations)."""

    def pm(v, sd):
        return f"{v}" if sd is None else f"{v} ± {sd}"

    def dash(v):
        return "—" if v is None else v

    body = [
        [t[0], t[1], pm(t[2], t[3]), pm(t[4], t[5]), f"{r['gain']:+.2f}", dash(r["gain_in_sd"])]
        + [t[6], t[8], f"{r['delta20_change']:+.2f}", dash(r["delta20_change_in_sd"])]
        for t, r in zip(table, rows)
    ]
    header = ["dataset", "ρ", "acc. w/o", "acc. w/", "gain", "gain / sd", "Δ20 w/o", "Δ20 w/"]
    return markdown_table(header + ["change", "change / sd"], body)


def figure_table2(rows):
    """Table 2's gain from pruning and change of Delta20 against the class-count imbalance ratio,
    one line per dataset."""
    fig, axes = plots.subplots(1, 2, width=4.2, height=3.2)
    for k, ds in enumerate(dict.fromkeys(r["dataset"] for r in rows)):
        rr = [r for r in rows if r["dataset"] == ds]
        rho = [r["rho"] for r in rr]
        axes[0, 0].semilogx(
            rho, [r["gain"] for r in rr], marker="o", color=plots.color(k), label=ds
        )
        axes[0, 1].semilogx(
            rho, [r["delta20_change"] for r in rr], marker="o", color=plots.color(k)
        )
    axes[0, 0].set(xlabel=r"imbalance ratio $\rho$", ylabel="accuracy gain (points)")
    axes[0, 0].set_title("Table 2: gain from pruning")
    axes[0, 1].set(xlabel=r"imbalance ratio $\rho$", ylabel=r"change of $\Delta_{20}$")
    axes[0, 1].set_title(r"Table 2: $\Delta_{20}$")
    axes[0, 1].axhline(0, color="grey", lw=0.8)
    axes[0, 0].legend(fontsize=7)
    fig.tight_layout()
    return fig
