"""The Fourier chapters' figures and tables (Figures 4.1-4.4 redrawn and this book's additions):
each function takes what the experiments returned and draws or writes it; nothing here decides a
claim. Tables are kept narrow (short headers, one number per cell) so that they fit the page."""

from __future__ import annotations

import numpy as np
import sympy as sp
import torch

from companions import plots
from companions.fourier import diagnostics as fdiag
from companions.fourier import network as fnet
from companions.fourier import transformer as ft


def _table(header: list[str], rows: list[list]) -> str:
    """A markdown table from a header and rows of already formatted cells."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


# -------------------------------------------------------------------------------------------------
# fourier-max-margin
# -------------------------------------------------------------------------------------------------
def gamma_table(ks, ps=(5, 7, 11)) -> str:
    """Lemma 4.10's closed form, simplified by sympy for each ``k`` in symbolic ``p``, and its
    value at a few primes (a derivation: the formula evaluated, nothing compared)."""
    rows = []
    for k in ks:
        g = sp.simplify(fnet.gamma_star_symbolic(None, k))
        rows.append([k, f"${sp.latex(g)}$", ", ".join(f"{fnet.gamma_star(p, k):.4g}" for p in ps)])
    return _table(["k", "$\\gamma^*$, symbolic $p$", "at $p$ = " + ", ".join(map(str, ps))], rows)


def construction_table(rep: dict) -> str:
    """The explicit network's report (:func:`companions.fourier.ascent.construction_report`) as a
    two-column table, numbers in six significant digits."""
    rows = [[k, f"{v:.6g}" if isinstance(v, float) else v] for k, v in rep.items()]
    return _table(["quantity", "value"], rows)


def sweep_table(reports: list[dict]) -> str:
    """One row per (p, k) of the construction sweep: width, gamma*, the relative gap of the
    normalized margin to it, the accuracy and the frequencies the neurons cover."""
    rows = [
        [
            r["p"],
            r["k"],
            r["m"],
            f"{r['gamma_star']:.6e}",
            f"{r['rel_gap']:.1e}",
            f"{r['accuracy']:.0%}",
            f"{len(r['frequencies'])} of {(r['p'] - 1) // 2}",
        ]
        for r in reports
    ]
    return _table(["p", "k", "m*", "γ*", "rel. gap", "accuracy", "frequencies"], rows)


def figure_construction_neurons(con, p: int, k: int):
    """Four neurons of the explicit network in the style of Figure 4.1: ``u_{i,1}`` (values and
    interpolant), its folded power, and the phases of its k + 1 vectors."""
    fig, axes = plots.subplots(4, 3, width=3.6, height=1.9)
    tt = torch.linspace(0, p - 1, 400)
    pick = [0, len(con.U) // 3, 2 * len(con.U) // 3, len(con.U) - 1]
    for r, i in enumerate(pick):
        u1 = con.U[i, 0].cpu()
        axes[r, 0].plot(tt, fdiag.trig_interpolant(u1, tt), color=plots.color(5), lw=1)
        axes[r, 0].plot(range(p), u1, "o", color=plots.color(1), ms=3)
        axes[r, 0].set(ylabel=f"neuron {i}", xticks=[])
        axes[r, 1].bar(range((p + 1) // 2), fdiag.folded_power(u1).numpy(), color=plots.color(0))
        axes[r, 1].set(xticks=range((p + 1) // 2))
        phases = [float(x) for x in con.phases_u[i].tolist() + [float(con.phase_w[i])]]
        axes[r, 2].bar(range(k + 1), phases, color=plots.color(2))
        labels = [f"u{j + 1}" for j in range(k)] + ["w"]
        axes[r, 2].set(xticks=range(k + 1), xticklabels=labels, ylim=(-3.3, 3.3))
    axes[0, 0].set_title("u_{i,1}(a): values and interpolant")
    axes[0, 1].set_title("folded power by frequency")
    axes[0, 2].set_title("phases θ (sum θ_u = θ_w mod 2π)")
    fig.tight_layout()
    return fig


# -------------------------------------------------------------------------------------------------
# fourier-training
# -------------------------------------------------------------------------------------------------
def figure_margin(run, seeds: int, title: str):
    """The main runs over training: normalized margin / gamma* (left) and the cross-entropy on
    D_p (right), one line per seed."""
    fig, axes = plots.subplots(1, 2, width=5.2, height=3.5)
    steps = np.array(run.steps)
    for i in range(seeds):
        axes[0, 0].plot(steps, run.rho[:, i], color=plots.color(i), label=f"seed {i}")
        axes[0, 1].semilogy(steps, run.loss[:, i], color=plots.color(i))
    axes[0, 0].axhline(1, color="k", ls="--", lw=1, label="γ* (Lemma 4.10)")
    axes[0, 0].set(xlabel="step", ylabel="normalized margin / γ*", ylim=(-0.2, 1.1), title=title)
    axes[0, 0].legend(fontsize=7)
    axes[0, 1].set(xlabel="step", ylabel="cross-entropy on D_p", title="training loss")
    fig.tight_layout()
    return fig


def _arrow(before: float, after: float) -> str:
    return f"{before:.3f} → {after:.3f}"


def diagnostics_table(init: list[dict], trained: list[dict]) -> str:
    """The Fourier diagnostics of each main run (:func:`companions.fourier.training.diagnostics`)
    at initialization and after training, one row per seed: the live neurons, the smallest and
    median folded-spectrum concentration and the smallest phase condition (initial → trained),
    the median balance and the live neurons per frequency after training."""
    rows = [
        [
            i,
            f"{d['live']} / {d['width']}",
            _arrow(d0["min_concentration"], d["min_concentration"]),
            _arrow(d0["median_concentration"], d["median_concentration"]),
            _arrow(d0["min_phase_cos"], d["min_phase_cos"]),
            f"{d['median_balance']:.3f}",
            " ".join(map(str, d["frequency_counts"])),
        ]
        for i, (d0, d) in enumerate(zip(init, trained))
    ]
    header = ["seed", "live / m", "min conc.", "median conc.", "min phase cos", "balance", "per ζ"]
    return _table(header, rows)


def figure_4_1(U: torch.Tensor, W: torch.Tensor, p: int, generator: torch.Generator):
    """Figure 4.1 redrawn: four random live neurons of one network, ``u_{i,1}`` as dots with the
    interpolant sharing its spectrum, and the folded power of all k + 1 vectors."""
    live = torch.nonzero(fdiag.live_neurons(U, W)).flatten()
    pick = live[torch.randperm(len(live), generator=generator)[:4]]
    fig, axes = plots.subplots(len(pick), 2, width=4.4, height=1.8)
    tt = torch.linspace(0, p - 1, 400)
    for r, i in enumerate(pick.tolist()):
        axes[r, 0].plot(tt, fdiag.trig_interpolant(U[i, 0], tt), color=plots.color(5), lw=1)
        axes[r, 0].plot(range(p), U[i, 0], "o", color=plots.color(1), ms=3)
        axes[r, 0].set(ylabel=f"neuron {i}")
        power = fdiag.neuron_spectrum(U[i : i + 1], W[i : i + 1])[0]
        axes[r, 1].bar(range((p + 1) // 2), power.numpy(), color=plots.color(0))
        axes[r, 1].set(xticks=range((p + 1) // 2))
    axes[0, 0].set_title("u_{i,1}(a), trained")
    axes[0, 1].set_title("folded power by frequency")
    axes[-1, 0].set_xlabel("a")
    axes[-1, 1].set_xlabel("frequency ζ")
    fig.tight_layout()
    return fig


def figure_4_2(U0, W0, U, W, counts: list[int]):
    """Figure 4.2 redrawn for one network: (a) live neurons per dominant frequency, (b)/(c) the
    folded maximum normalized power of ``u_{i,1}`` at initialization and trained, (d) the phase
    condition."""
    live0, live = fdiag.live_neurons(U0, W0), fdiag.live_neurons(U, W)
    fig, axes = plots.subplots(1, 4, width=3.1, height=2.8)
    freqs = range(1, len(counts) + 1)
    axes[0, 0].bar(freqs, counts, color=plots.color(0))
    axes[0, 0].set(xlabel="dominant frequency ζ", ylabel="live neurons", xticks=freqs)
    axes[0, 0].set_title("(a) frequencies")
    bins = np.linspace(0, 1, 21)
    axes[0, 1].hist(fdiag.vector_power(U0[live0]).cpu(), bins=bins, color=plots.color(1))
    axes[0, 1].set(xlabel="max normalized power", title="(b) at initialization")
    axes[0, 2].hist(fdiag.vector_power(U[live]).cpu(), bins=bins, color=plots.color(2))
    axes[0, 2].set(xlabel="max normalized power", title="(c) after training")
    phase = fdiag.phase_lock(U[live], W[live]).cpu()
    axes[0, 3].hist(phase, bins=np.linspace(-1, 1, 21), color=plots.color(3))
    axes[0, 3].set(xlabel="cos(Σθ_u − θ_w)", title="(d) phase condition")
    fig.tight_layout()
    return fig


def adamw_table(run, diags: list[dict], power: list[float]) -> str:
    """The AdamW runs, one row per seed: final normalized margin / gamma*, accuracy on the
    training half and on the held-out half, live neurons, median concentration, the 5th
    percentile of the folded power of ``u_{i,1}`` (Figure 4.2's statistic) and the frequencies
    used."""
    n = len(diags)
    rows = [
        [
            i,
            f"{float(run.rho[-1, i]):.3f}",
            f"{float(run.train_accuracy[-1, i]):.3f}",
            f"{float(run.test_accuracy[-1, i]):.3f}",
            f"{diags[i]['live']} / {diags[i]['width']}",
            f"{diags[i]['median_concentration']:.3f}",
            f"{power[i]:.3f}",
            len(diags[i]["frequencies"]),
        ]
        for i in range(n)
    ]
    header = ["seed", "final ρ", "train acc.", "held-out acc.", "live / m", "median conc."]
    return _table(header + ["power q05", "ζ used"], rows)


def figure_adamw(run, adamw, seeds: int, p: int, adamw_p: int):
    """Normalized margin / gamma* of every seed: the L_{2,k+1} penalty (Adam) and weight decay
    (AdamW), each against its own gamma*."""
    fig, axes = plots.subplots(1, 1, width=6, height=3.4)
    ax = axes[0, 0]
    for i in range(seeds):
        first = i == 0
        label = f"L_{{2,k+1}} penalty (Adam), p={p}" if first else None
        ax.plot(run.steps, run.rho[:, i], color=plots.color(0), lw=1.2, label=label)
        label = f"weight decay (AdamW), p={adamw_p}" if first else None
        ax.plot(adamw.steps, adamw.rho[:, i], color=plots.color(1), lw=1.2, label=label)
    ax.axhline(1, color="k", ls="--", lw=1, label="γ*")
    ax.set(xlabel="step", ylabel="normalized margin / γ*", ylim=(-1.1, 1.1))
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def width_table(factors, widths, rho, diags: list[dict]) -> str:
    """The width sweep: ``rho (T, n)`` over training for each width; final and largest rho, the
    live neurons, the frequencies used and the median concentration."""
    rows = [
        [
            f"{f:g}",
            m,
            f"{float(rho[-1, i]):.4f}",
            f"{float(rho[:, i].max()):.4f}",
            d["live"],
            len(d["frequencies"]),
            f"{d['median_concentration']:.3f}",
        ]
        for i, (f, m, d) in enumerate(zip(factors, widths, diags))
    ]
    header = ["m / m*", "m", "final ρ", "max ρ", "live", "ζ used", "median conc."]
    return _table(header, rows)


def figure_width(factors, rho, title: str):
    """Final and largest normalized margin / gamma* against m / m* (log scale)."""
    fig, axes = plots.subplots(1, 1, width=5, height=3.2)
    ax = axes[0, 0]
    ax.plot(factors, rho[-1], "o-", color=plots.color(0), label="final")
    ax.plot(factors, rho.max(0).values, "s--", color=plots.color(1), label="max over training")
    ax.legend(fontsize=8)
    ax.axhline(1, color="k", ls="--", lw=1)
    ax.axvline(1, color="grey", lw=0.8)
    ax.set(xscale="log", xlabel="m / m*", ylabel="normalized margin / γ*", title=title)
    fig.tight_layout()
    return fig


# -------------------------------------------------------------------------------------------------
# fourier-transformer
# -------------------------------------------------------------------------------------------------
def figure_4_3(A0: torch.Tensor, A1: torch.Tensor, p: int, heads: int = 4):
    """Figure 4.3 redrawn: ``heads`` heads' attention matrices at initialization and trained,
    and the trained head's 2-D power spectrum (zero frequency in the centre)."""
    show = list(range(min(heads, A1.shape[0])))
    fig, axes = plots.subplots(len(show), 3, width=3.0, height=2.6)
    half = p // 2
    for r, h in enumerate(show):
        for c, (mat, title) in enumerate(((A0[h], "A_h at init"), (A1[h], "A_h trained"))):
            lim = float(mat.abs().max())
            axes[r, c].imshow(mat, cmap="RdBu_r", vmin=-lim, vmax=lim)
            axes[r, c].set(title=title if r == 0 else None, xticks=[], yticks=[])
            axes[r, c].set(ylabel=f"head {h}" if c == 0 else None)
            axes[r, c].grid(False)
        spec = torch.fft.fftshift(ft.spectrum_2d(A1[h]))
        extent = (-half - 0.5, half + 0.5, half + 0.5, -half - 0.5)
        axes[r, 2].imshow(spec, cmap="viridis", extent=extent)
        axes[r, 2].set(title="2-D power, trained" if r == 0 else None)
        axes[r, 2].set(xlabel="key frequency" if r == len(show) - 1 else None)
        axes[r, 2].grid(False)
    fig.tight_layout()
    return fig


def figure_4_3_training(hist, p: int, k: int):
    """One Figure 4.3 run over training: train and test accuracy (left); the (±ζ1, ±ζ2) share and
    the top-4 share of the attention matrices' 2-D power, means over heads (right)."""
    fig, axes = plots.subplots(1, 2, width=4.6, height=3.2)
    axes[0, 0].plot(hist.steps, hist.train_acc, color=plots.color(0), label="train")
    axes[0, 0].plot(hist.steps, hist.test_acc, color=plots.color(1), label="test")
    axes[0, 0].set(xlabel="step", ylabel="accuracy", title=f"p={p}, k={k}")
    axes[0, 0].legend()
    axes[0, 1].plot(hist.steps, hist.kq_share, color=plots.color(2), label="(±ζ1, ±ζ2) share")
    axes[0, 1].plot(hist.steps, hist.kq_top4, color=plots.color(3), ls="--", label="top-4 share")
    axes[0, 1].axhline(0.5, color="k", lw=0.8)
    axes[0, 1].set(xlabel="step", ylabel="share of A_h's 2-D power", ylim=(0, 1))
    axes[0, 1].legend(fontsize=7)
    fig.tight_layout()
    return fig


def grokking_table(runs: list[dict]) -> str:
    """One row per grokking run: (p, k), p^k, seed, the first logged steps at which the training
    accuracy reaches 0.99 and the test accuracy 0.95, their gap and the final test accuracy."""

    def shown(x):
        return "not reached" if x is None else x

    rows = []
    for g in runs:
        both = g["t_test"] is not None and g["t_train"] is not None
        gap = g["t_test"] - g["t_train"] if both else "–"
        rows.append(
            [g["p"], g["k"], g["size"], g["seed"], shown(g["t_train"]), shown(g["t_test"]), gap]
            + [f"{g['final_test']:.3f}"]
        )
    header = ["p", "k", "p^k", "seed", "t_train", "t_test", "gap", "final test acc."]
    return _table(header, rows)


def figure_4_4(runs: list[dict], pairs: list[tuple[int, int]]):
    """Figure 4.4's runs: train and test accuracy over training, one panel per (p, k)."""
    fig, axes = plots.subplots(1, len(pairs), width=3.2, height=2.8)
    for i, (q, kk) in enumerate(pairs):
        for g in (g for g in runs if g["p"] == q and g["k"] == kk):
            h, first = g["hist"], g["seed"] == 0
            label = "train" if first else None
            axes[0, i].plot(h.steps, h.train_acc, color=plots.color(0), lw=1, label=label)
            label = "test" if first else None
            axes[0, i].plot(h.steps, h.test_acc, color=plots.color(1), lw=1, label=label)
        axes[0, i].set(title=f"k={kk}, p={q}", xlabel="step", ylim=(0, 1.02))
    axes[0, 0].set_ylabel("accuracy")
    axes[0, 0].legend(fontsize=7)
    fig.tight_layout()
    return fig
