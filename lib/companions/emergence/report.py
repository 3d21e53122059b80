"""The emergence chapters' figures and tables, moved out of the chapters' cells.

Each ``figure_*`` draws one figure and returns it (a chapter cell assigns it, ``fig = ...``, so
that it is shown once); each ``*_table`` returns Markdown. Nothing here computes a claim.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from companions import plots, stats
from companions.emergence import theory as th


def _mean_se(values) -> str:
    mean, se, _ = stats.mean_and_se(list(values))
    return f"{mean:.4f} ± {se:.4f}"


# -------------------------------------------------------------------------------------------------
# emergence-target
# -------------------------------------------------------------------------------------------------
def figure_target(k: int = 5, P=(1, 3, 5), mu=Fraction(5, 2)):
    """Lemma 2.5's network as a function of ``S`` (exact rationals on a fine grid), with the
    labels at ``S = 0..k``."""
    P = set(P)
    net_ = th.target_network(k, P, mu)
    fig, axes = plots.subplots(1, 1, width=7.0, height=3.4)
    ax = axes[0, 0]
    S_grid = np.linspace(-0.7, k + 0.7, 1201)
    out = [float(th.target_output(net_, Fraction(s).limit_denominator(10**4), mu)) for s in S_grid]
    label = f"$g^*$ (candidate {net_['candidate']}) as a function of $S$"
    ax.plot(S_grid, out, color=plots.color(0), label=label)
    labels = [1 if s in P else -1 for s in range(k + 1)]
    ax.scatter(range(k + 1), labels, color=plots.color(1), zorder=3, label="label $y$ at $S$")
    ax.set_xlabel("$S=\\sum_{j\\in A}\\tilde\\phi_j$")
    ax.set_ylabel("network output")
    ax.set_title(f"Lemma 2.5: parity labels, $k={k}$, $\\mu={mu}$")
    ax.legend(loc="lower right")
    return fig


def bounds_table(k: int = 5, P=(1, 3, 5), mus=(Fraction(5, 2), Fraction(0), Fraction(1, 3))):
    """How tight Lemma 2.5's bounds are, at a few ``mu`` (exact rationals)."""
    rows = []
    for mu in mus:
        r = th.lemma_2_5_report(k, set(P), mu)
        rows.append(
            f"| {mu} | {r['candidate']} | {r['max_a']} ({32 * k}) | {r['min_b']} (1/{32 * k}) | "
            f"{r['max_b']} (1/2) | {r['max_pre']} (1) |"
        )
    return (
        "| $\\mu$ | candidate | $\\max|a^*|$ (bound) | $\\min|b^*|$ (bound) | "
        "$\\max|b^*|$ (bound) | max pre-activation (bound) |\n|---|---|---|---|---|---|\n"
        + "\n".join(rows)
    )


def a29_table(noise: dict) -> str:
    """Lemma A.29 on noisy points: per noise level, the fraction with ``y g* < 1``, the proof's
    bound, and the least margin among the points with ``|eps_x| <= 1/8``."""
    rows = [
        f"| {s_:.4f} | {float(r['below'].mean()):.4f} | {r['bound']:.4f} | "
        f"{float(r['margin'][r['good']].min()):.4f} |"
        for s_, r in noise.items()
    ]
    return (
        "| $\\sqrt k\\,\\sigma_\\zeta$ | points with $yg^*<1$ | the proof's bound | "
        "least margin where $|\\epsilon_x|\\le1/8$ |\n|---|---|---|---|\n" + "\n".join(rows)
    )


# -------------------------------------------------------------------------------------------------
# emergence-first-steps
# -------------------------------------------------------------------------------------------------
def step_table(summary: dict, digits: int = 4) -> str:
    """:func:`analysis.step_summary` as a table: max and median ``|cos(w_i, v)|`` and the median
    signal-to-noise ratio per step."""
    rows = [
        f"| {name} | {v['max_cos']:.{digits}f} | {v['median_cos']:.{digits}f} | "
        f"{v['median_rho']:.3g} |"
        for name, v in summary.items()
    ]
    return (
        "| | max $|\\cos(w_i,v)|$ | median $|\\cos(w_i,v)|$ | median signal/noise $\\rho$ |\n"
        "|---|---|---|---|\n" + "\n".join(rows)
    )


def figure_two_clusters(p0, p1, p2, v):
    """Each neuron's cosine with ``v = sum_A M_j`` against its ``a_i^(0)``, at initialisation and
    after each forgetful step (Figure 2.2's two clusters)."""
    from companions.emergence import network as net

    fig, axes = plots.subplots(1, 3, width=4.2, height=3.4)
    a0 = p0.a.cpu()
    for ax, p, title in zip(
        axes[0], (p0, p1, p2), ("initialisation", "after step 1", "after step 2")
    ):
        c = net.cosines(p.W, v).cpu()
        ax.scatter(a0[a0 > 0], c[a0 > 0], s=8, color=plots.color(1), label="$a_i^{(0)}>0$")
        ax.scatter(a0[a0 < 0], c[a0 < 0], s=8, color=plots.color(4), label="$a_i^{(0)}<0$")
        ax.set_title(title)
        ax.set_xlabel("$a_i^{(0)}$")
        ax.set_ylim(-1.05, 1.05)
    axes[0, 0].set_ylabel("$\\cos(w_i, \\sum_{j\\in A}M_j)$")
    axes[0, 0].legend(loc="lower right")
    fig.tight_layout()
    return fig


def figure_gradient_terms(terms: dict):
    """Left: each neuron's mean gradient term on ``A`` (in units of ``gamma / sigma~``) against
    its ``beta``; right: the background terms (:func:`analysis.sample_gradient_terms`)."""
    fig, axes = plots.subplots(1, 2, width=4.6, height=3.4)
    TA = (terms["T_A"].mean(1) / terms["unit"]).cpu()
    beta = terms["beta"].cpu()
    axes[0, 0].scatter(beta, TA, s=8)
    lim = [0, float(max(beta.max(), TA.max())) * 1.05]
    axes[0, 0].plot(
        lim, lim, color=plots.color(7), lw=1, label="$T_j=\\beta\\gamma/\\tilde\\sigma$"
    )
    axes[0, 0].set_xlabel("$\\beta_i$ (estimated on the sample)")
    axes[0, 0].set_ylabel("mean$_{j\\in A}\\,T_{ij}\\;/\\;(\\gamma/\\tilde\\sigma)$")
    axes[0, 0].legend()
    bg = (terms["T_bg"] / terms["unit"]).flatten().cpu().numpy()
    axes[0, 1].hist(bg, bins=60, color=plots.color(2))
    axes[0, 1].set_xlabel("$T_{ij}/(\\gamma/\\tilde\\sigma)$, $j\\notin A$")
    axes[0, 1].set_ylabel("count")
    fig.tight_layout()
    return fig


def ceiling_table(ks=(3, 5)) -> str:
    """The best linear classifier on ``D_A^mix`` at ``p_o = 1/2``: the closed form, the
    enumeration of all halfspaces on ``z_A``, majority and ``ceiling_weights(k)``."""
    half, rows = Fraction(1, 2), []
    for k in ks:
        rows.append(
            f"| {k} | {th.linear_ceiling(k, half)} | {th.best_halfspace_accuracy(k, half)} | "
            f"{th.halfspace_accuracy([1] * k, 0, half)} | "
            f"{th.halfspace_accuracy(th.ceiling_weights(k), 0, half)} |"
        )
    return (
        "| $k$ | $\\mathrm{acc}_{\\rm lin}$ | best halfspace | majority | `ceiling_weights(k)` |\n"
        "|---|---|---|---|---|\n" + "\n".join(rows)
    )


def probe_table(pr: dict, longer: dict, ceiling: float, majority: float, steps: int) -> str:
    """Both readings of the One-Step and Two-Step probes on one sample, with the raw Two-Step
    probe trained ``longer`` (its train and test accuracy after ten times the Adam steps)."""
    rows = [
        f"| {name} | {r['standardised']['train']:.4f} / {r['standardised']['test']:.4f} | "
        f"{r['raw']['train']:.4f} / {r['raw']['test']:.4f} |"
        for name, r in (("One Step", pr["one"]), ("Two Step", pr["two"]))
    ]
    rows.append(
        f"| Two Step, raw, {10 * steps} Adam steps | | {longer['train']:.4f} / "
        f"{longer['test']:.4f} |"
    )
    return (
        f"| probe | standardised: train / test | raw (Adam, {steps} steps): train / test |\n"
        "|---|---|---|\n" + "\n".join(rows) + f"\n\nLinear ceiling {ceiling:.4f}; majority class "
        f"of the test set {majority:.4f}. The source: One Step 51.3 / 52.2, Two Step 100 / 100."
    )


def schedules_table(rows: dict) -> str:
    """Per schedule: ``eta^(1)``, ``sigma_xi``, the median cosines after steps 1 and 2, and the
    standardised probes' test accuracies (first sample)."""
    out = [
        f"| ({name}) | {r['eta']:.2e} | {r['s']:.3f} | {r['cos1']:.4f} / {r['cos2']:.4f} | "
        f"{r['one']:.4f} | {r['two']:.4f} |"
        for name, r in rows.items()
    ]
    return (
        "| schedule | $\\eta^{(1)}$ | $\\sigma_\\xi$ | median $|\\cos|$ step 1 / 2 | One Step | "
        "Two Step |\n|---|---|---|---|---|---|\n" + "\n".join(out)
    )


# -------------------------------------------------------------------------------------------------
# emergence-fixed-features
# -------------------------------------------------------------------------------------------------
def figure_bound():
    """Theorem 2.2's bound (linear reading), clipped at 0, against the number of features and
    against ``k``."""
    fig, axes = plots.subplots(1, 2, width=4.8, height=3.4)
    Ns = np.logspace(0, 14, 300)
    for i, k in enumerate((5, 11, 21)):
        for B, ls in ((1.0, "-"), (10.0, "--")):
            bound = [max(th.fixed_feature_bound(N, B, k, 0.5), 0) for N in Ns]
            axes[0, 0].plot(Ns, bound, ls, color=plots.color(i), label=f"$k={k}$, $B={B:g}$")
    axes[0, 0].set_xscale("log")
    axes[0, 0].set_xlabel("number of features $N$")
    axes[0, 0].set_ylabel("hinge-loss lower bound ($p_o=1/2$)")
    axes[0, 0].legend(fontsize=7)
    ks = np.arange(3, 32, 2)
    for i, (N, B) in enumerate(((10**3, 1.0), (10**6, 1.0), (10**6, 100.0))):
        axes[0, 1].plot(
            ks,
            [max(th.fixed_feature_bound(N, B, int(k), 0.5), 0) for k in ks],
            "o-",
            ms=3,
            color=plots.color(i),
            label=f"$N=10^{{{int(np.log10(N))}}}$, $B={B:g}$",
        )
    axes[0, 1].axhline(0.5, color=plots.color(7), lw=0.8)
    axes[0, 1].set_xlabel("$k$")
    axes[0, 1].legend(fontsize=7)
    fig.suptitle("Theorem 2.2: $p_o(1-\\sqrt{2N}B/2^k)$, clipped at 0")
    fig.tight_layout()
    return fig


FIXED_NAMES = {
    "network": "network (Adam)",
    "network-theory": "network (theory rate)",
    "rf": "random features",
    "ntk": "NTK",
    "kernel": "RBF kernel ridge",
    "laplace": "Laplace kernel ridge",
}


def comparison_table(runs: list, ceiling: float) -> str:
    """Mean ± standard error over the seeds of every method's train, test and uniform-part
    accuracy and max cosine (:func:`experiments.fixed_feature_comparison` results)."""
    rows = []
    for key, label in FIXED_NAMES.items():
        cos = (
            _mean_se(r[key]["cos"] for r in runs)
            if key in ("network", "network-theory", "rf")
            else "NA"
        )
        cells = [_mean_se(r[key][col] for r in runs) for col in ("train", "test", "uniform part")]
        rows.append(f"| {label} | {' | '.join(cells)} | {cos} |")
    return (
        "| method | train | test ($\\mathcal D^{\\rm mix}$) | test (uniform part) | max cos |\n"
        "|---|---|---|---|---|\n"
        + "\n".join(rows)
        + f"\n\nMean ± standard error over {len(runs)} seeds. Best linear classifier: "
        f"{ceiling:.4f} on the mixture, {2 * ceiling - 1:.4f} on the uniform part; chance 0.5."
    )


def figure_fixed_curves(runs: dict, ceiling: float):
    """Test accuracy on the mixture during training (one seed), with the kernels' levels, the
    best linear classifier and chance."""
    fig, axes = plots.subplots(1, 1, width=7.0, height=3.8)
    ax = axes[0, 0]
    for i, key in enumerate(("network", "network-theory", "rf", "ntk")):
        h = runs[key]["curve"]
        shift = 2 if key.startswith("network") else 0
        ax.plot(
            np.array(h["step"]) + shift, h["test"], color=plots.color(i), label=FIXED_NAMES[key]
        )
    for i, key in enumerate(("kernel", "laplace")):
        ax.axhline(runs[key]["test"], color=plots.color(4 + i), ls=":", label=FIXED_NAMES[key])
    ax.axhline(ceiling, color=plots.color(7), ls="--", lw=1, label="best linear classifier")
    ax.axhline(0.5, color=plots.color(7), lw=0.6)
    ax.set_xlabel("step (the network's first two steps are the forgetful ones)")
    ax.set_ylabel("test accuracy on the mixture")
    ax.set_ylim(0.4, 1.02)
    ax.legend(fontsize=8, loc="lower right")
    return fig


def kernel_table(runs: dict) -> str:
    """Corollary 2.3 in this book's explicit form for each kernel predictor of one seed: its
    norms, ``c_k``, ``eps = ||f||_H sqrt(c_k)``, the bounds and the measured hinge losses."""
    rows = []
    for key in ("kernel", "laplace"):
        r = runs[key]
        rows.append(
            f"| {FIXED_NAMES[key]} | {r['alpha_norm']:.3g} | {r['rkhs_norm']:.3g} | "
            f"{r['c_k']:.3g} | {r['eps']:.3g} | {r['bound_mixture']:.4f} | "
            f"{float(r['hinge'].mean()):.4f} | {r['bound_uniform_part']:.4f} | "
            f"{float(r['hinge uniform part'].mean()):.4f} |"
        )
    return (
        "| kernel | $\\|\\alpha\\|_2$ | $\\|f\\|_{\\mathcal H}$ | $c_k$ | $\\epsilon$ | "
        "bound on $\\mathcal D^{\\rm mix}$ | hinge on $\\mathcal D^{\\rm mix}$ | "
        "bound on $\\mathcal D^{(0)}$ | hinge on $\\mathcal D^{(0)}$ |\n"
        "|---|---|---|---|---|---|---|---|---|\n" + "\n".join(rows)
    )


# -------------------------------------------------------------------------------------------------
# emergence-no-structure
# -------------------------------------------------------------------------------------------------
STRUCTURE_NAMES = {"network": "network", "rf": "random features", "ntk": "NTK"}


def sq_table(cases) -> str:
    """Theorem 2.4's numbers for ``(D, k)`` pairs: ``binom(D, k)``, the queries (or ``1/tau``) it
    forces, and the error threshold."""
    rows = []
    for D, k in cases:
        q = th.sq_numbers(D, k)
        rows.append(
            f"| {D} | {k} | {q['sq_dim']:,} | {q['queries']:.4g} | "
            f"$1/2-{float(q['error_threshold_gap']):.3g}$ |"
        )
    return (
        "| $D$ | $k$ | $\\binom Dk$ | queries or $1/\\tau$ at least | error threshold |\n"
        "|---|---|---|---|---|\n" + "\n".join(rows)
    )


def structure_table(pairs: list) -> str:
    """Mean ± standard error over the seeds: each method without structure, the network with
    it, and the initialisation's max cosine (:func:`experiments.structure_pair` results)."""
    rows = []
    for key, label in STRUCTURE_NAMES.items():
        cos = _mean_se(p["free"][key]["cos"] for p in pairs) if key != "ntk" else "NA"
        cells = [_mean_se(p["free"][key][col] for p in pairs) for col in ("train", "test")]
        rows.append(f"| {label} | {' | '.join(cells)} | {cos} |")
    ref = [_mean_se(p["ref"]["network"][col] for p in pairs) for col in ("train", "test", "cos")]
    rows.append(f"| network, with structure | {' | '.join(ref)} |")
    rows.append(
        f"| (initialisation, no structure) | | | {_mean_se(p['cos_init'] for p in pairs)} |"
    )
    return (
        "| method (no structure) | train | test | max cos |\n|---|---|---|---|\n"
        + "\n".join(rows)
        + f"\n\nMean ± standard error over {len(pairs)} seeds."
    )


def figure_no_structure(pair: dict):
    """Test accuracy during training without input structure and, for the network, with it
    (one seed)."""
    fig, axes = plots.subplots(1, 1, width=7.0, height=3.6)
    ax = axes[0, 0]
    for i, (key, label) in enumerate(STRUCTURE_NAMES.items()):
        h = pair["free"][key]["curve"]
        ax.plot(h["step"], h["test"], color=plots.color(i), label=f"{label}, no structure")
    h = pair["ref"]["network"]["curve"]
    ax.plot(h["step"], h["test"], color=plots.color(0), ls="--", label="network, with structure")
    ax.axhline(0.5, color=plots.color(7), lw=0.8)
    ax.set_xlabel("step after the two forgetful steps (Adam)")
    ax.set_ylabel("test accuracy")
    ax.set_ylim(0.4, 1.02)
    ax.legend(fontsize=8)
    return fig


# -------------------------------------------------------------------------------------------------
# emergence-experiments
# -------------------------------------------------------------------------------------------------
TABLE_METHODS = {
    "network": "Network",
    "ntk": "NTK",
    "rf": "RF",
    "one-step": "One Step",
    "two-step": "Two Step",
    "no-structure": "Network w/o structure",
}


def _pct(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "NA"
    return f"{value:.1f}"


def _cos(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "NA"
    return f"{value:.3f}"


def tables_table(means: dict, configs: dict, paper: dict) -> str:
    """The source's Tables A.1-A.5 and this run's, as one table: per configuration, rows of
    train %, test % and cosine, each cell "this run (the source)" (means over the seeds; One and
    Two Step are the standardised probes), and the raw probes' test accuracy and the test set's
    majority-class rate beside."""
    head = (
        "| configuration (the source's) | | "
        + " | ".join(TABLE_METHODS.values())
        + " | raw One / Two Step | majority |\n|---|---|"
        + "---|" * (len(TABLE_METHODS) + 2)
    )
    rows = []
    for label, res in means.items():
        src = paper[configs[label]["source"]]
        for i, what in enumerate(("train %", "test %", "cos")):
            fmt = _cos if i == 2 else _pct
            scale = 1 if i == 2 else 100
            cells = [f"{fmt(scale * res[key][i])} ({fmt(src[key][i])})" for key in TABLE_METHODS]
            extra = ["", ""]
            if i == 1:
                raw = [f"{100 * res[key][1]:.1f}" for key in ("one-step-raw", "two-step-raw")]
                extra = [
                    " / ".join(raw) if "one-step-raw" in res else "",
                    _pct(100 * res["majority"]),
                ]
            name = f"{label} ({configs[label]['source']})" if i == 0 else ""
            rows.append(f"| {name} | {what} | " + " | ".join(cells + extra) + " |")
    return head + "\n" + "\n".join(rows)


def figure_tables(means: dict, configs: dict, paper: dict):
    """Test accuracy of every method in every configuration (bars: this run, means over the
    seeds) and the source's numbers at its own sizes (black ticks)."""
    fig, axes = plots.subplots(1, 1, width=8.5, height=3.8)
    ax = axes[0, 0]
    keys = list(means)
    xs = np.arange(len(keys))
    width = 0.13
    for j, (key, name) in enumerate(TABLE_METHODS.items()):
        pos = xs + (j - 2.5) * width
        ax.bar(pos, [100 * means[k][key][1] for k in keys], width, color=plots.color(j), label=name)
        src = [paper[configs[k]["source"]][key][1] for k in keys]
        ax.scatter(pos, src, marker="_", s=60, color="black", zorder=3)
    ax.set_xticks(xs)
    ax.set_xticklabels(keys, fontsize=7, rotation=15)
    ax.set_ylabel("test accuracy (%)")
    ax.set_ylim(30, 102)
    ax.legend(fontsize=7, ncol=3, loc="lower left")
    ax.set_title("bars: this run; black ticks: the source")
    return fig


def sizes_table(cfg) -> str:
    """The source's sizes of Tables A.1-A.5 beside this run's."""
    pairs = ", ".join(f"$n={a}$ ($m={b}$)" for a, b in zip(cfg.n_values, cfg.m_values))
    ds = ", ".join(map(str, cfg.d_values))
    return (
        "| | the source | this run |\n|---|---|---|\n"
        "| Table A.1 | $d=500$, $D=100$, $k=5$, $m=300$, $n=50{,}000$, $T=600$ | "
        f"$d={cfg.d}$, $D={cfg.D}$, $k={cfg.k}$, $m={cfg.m}$, $n={cfg.n}$, $T={cfg.steps}$ |\n"
        "| Table A.2 | $D=100$, $k=30$, $m=100$, $T=200$ | "
        f"$D={cfg.interval_D}$, $k={cfg.interval_k}$, $m={cfg.interval_m}$, "
        f"$T={cfg.interval_steps}$ |\n"
        f"| Table A.3 | $d\\in\\{{100,2000\\}}$ | $d\\in\\{{{ds}\\}}$ |\n"
        f"| Table A.4 | negative fraction $0.8$, $0.9$ | {', '.join(map(str, cfg.ratios))} |\n"
        f"| Table A.5 | $n=25{{,}}000$ ($m=300$), $10{{,}}000$ ($m=50$) | {pairs} |\n"
        f"| seeds | 5 | {cfg.seeds} |"
    )


def weighting_text(weighting: list) -> str:
    """The interval labeling's class balance and the test accuracy after plain and class-weighted
    first steps, mean ± standard error over the seeds (:func:`experiments.weighting_pair`)."""
    return (
        f"$\\Pr[y=+1]\\approx{weighting[0]['positive_rate']:.3f}$. Test accuracy over "
        f"{len(weighting)} seeds: plain first steps {_mean_se(w['plain'] for w in weighting)} "
        f"(majority class {weighting[0]['majority']:.4f}), class-weighted (A.293) "
        f"{_mean_se(w['weighted'] for w in weighting)}."
    )


def smallest_gap_text(per_seed: dict, means: dict, configs: dict, keys) -> str:
    """Where the network's lead over the better of RF and NTK is smallest (mean over the seeds),
    with the network's train and test accuracy there."""
    gaps = {
        k: stats.mean_and_se([r["network"][1] - max(r["rf"][1], r["ntk"][1]) for r in per_seed[k]])[
            0
        ]
        for k in keys
    }
    worst = min(gaps, key=gaps.get)
    net_ = means[worst]["network"]
    return (
        f" The smallest gap is at {worst} (m = {configs[worst]['m']}, n = {configs[worst]['n']}): "
        f"{gaps[worst]:.3f}, where the network's train accuracy is {100 * net_[0]:.1f} % against "
        f"its test accuracy {100 * net_[1]:.1f} %."
    )


def no_structure_text(per_seed: dict, keys, sq: dict, cfg) -> str:
    """How many runs of the structure-free network pass 75 % test accuracy, beside the number of
    queries Theorem 2.4 forces at this run's D and k."""
    runs = [r["no-structure"][1] for k in keys for r in per_seed[k]]
    learned = sum(acc > 0.75 for acc in runs)
    return (
        f" Without structure the network passes 75 % test accuracy in {learned} of the "
        f"{len(runs)} runs; at D = {cfg.D}, k = {cfg.k} Theorem 2.4 forces only "
        f"{sq['queries']:.0f} queries, fewer than the {cfg.steps} minibatch steps, so it does not "
        "forbid learning the parity there."
    )
