"""What the chapter measures, shaped for its registered claims, and the tables and figures it
shows. The claims and their rules live in :mod:`companions.gemfilter.chapters`; nothing here
decides a claim: each ``*_measurements`` function returns ``{claim id: measured value}`` for
``ledger.record``."""

from __future__ import annotations

import numpy as np
import sympy as sp

from companions import plots
from companions.gemfilter import complexity as gc
from companions.gemfilter import experiments as gx
from companions.gemfilter import tables
from companions.stats import mean_and_se

#: The case study's point for the prompt-memory erratum: LLaMA 3.1 8B (32 layers, 8 key-value
#: heads of dimension 128), n = 128K, k = 1024.
CASE_STUDY = {"m": 32, "h": 8, "d": 128, "n": 128 * 1024, "k": 1024}


def complexity_measurements() -> dict:
    """Theorem 9.3 / G.4 in sympy: the case study's generation memory against the table
    (residuals), and the printed standard prompt memory minus SnapKV's at :data:`CASE_STUDY`."""
    der = gc.derived()
    h, d, n, k, w = gc.h, gc.d, gc.n, gc.k, gc.w
    stated = {"standard": w / (h * d) + 2 * n, "snapkv": w / (h * d) + 4 * k}
    stated["gemfilter"] = stated["snapkv"]
    gaps = {key: sp.simplify(der["gen_mem_over_mhd"][key] - stated[key]) for key in gc.METHODS}
    printed = der["printed_std_minus_snap"].subs({getattr(gc, s): v for s, v in CASE_STUDY.items()})
    return {
        "case-study-generation-memory": [
            gaps["snapkv"],
            gaps["gemfilter"],
            gaps["standard"] - 2 * k,
        ],
        "standard-prompt-memory": int(printed),
    }


def speedup_table() -> str:
    """Markdown: each model's m/r with the text's filter layer r and with the released code's
    0-based index (r + 1 layers run), beside the stated 2.4x."""
    rows = [
        "| model | m | r (text) | m/r | m/(r + 1) (released code) | stated |",
        "|---|---|---|---|---|---|",
    ]
    for name, shape in tables.MODELS.items():
        m, r = shape["m"], shape["r"]
        rows.append(
            f"| {name} | {m} | {r} | {float(gc.prompt_speedup(m, r)):.2f} | "
            f"{float(gc.prompt_speedup(m, r + 1)):.2f} | {tables.SPEEDUP_STATED}× |"
        )
    return "\n".join(rows)


def _totals(row) -> tuple[int, int]:
    std = row["std"]["prefill_flops"] + row["std"]["gen_flops"]
    gem = row["filter_flops"] + row["gem"]["prefill_flops"] + row["gem"]["gen_flops"]
    return std, gem


def flop_ratios(rows) -> list[float]:
    """GemFilter's total FLOPs over standard generation's, per row of the cost sweep."""
    return [gem / std for std, gem in map(_totals, rows)]


def cost_measurements(rows, cfg) -> dict:
    """The counts of :func:`experiments.cost_sweep` against this book's closed forms (gaps, in
    FLOPs) and the ratio at the largest n over r/m."""
    shape = (cfg.width, cfg.heads, cfg.kv_heads, cfg.mlp)
    gaps = []
    for row in rows:
        n = row["n"]
        gaps.append(
            row["std"]["prefill_flops"]
            - gc.prefill_flops(
                n,
                cfg.layers,
                width=cfg.width,
                heads=cfg.heads,
                kv_heads=cfg.kv_heads,
                mlp=cfg.mlp,
                vocab=cfg.fillers + 3,
            )
        )
        gaps.append(row["filter_flops"] - gc.filter_flops(n, cfg.cost_r, *shape))
    return {
        "flop-count-closed-form": gaps,
        "flop-ratio-tends-to-r-over-m": flop_ratios(rows)[-1] / (cfg.cost_r / cfg.layers),
    }


def cost_table(rows, cfg) -> str:
    """Markdown: per n, the counted FLOPs, their ratio, and the cache after each prefill beside
    the theorem's 2 m h (.) d."""
    hd = cfg.width // cfg.heads
    out = [
        "| n | standard FLOPs | GemFilter FLOPs | ratio | cache after prefill: standard, "
        "GemFilter | 2 m h_kv d_h n, 2 m h_kv d_h k |",
        "|---|---|---|---|---|---|",
    ]
    for row, ratio in zip(rows, flop_ratios(rows)):
        std, gem = _totals(row)
        want = [
            gc.kv_cache_elements(x, cfg.layers, cfg.kv_heads, hd) for x in (row["n"], cfg.cost_k)
        ]
        out.append(
            f"| {row['n']} | {std:.3g} | {gem:.3g} | {ratio:.3f} | "
            f"{row['std']['cache_prefill']}, {row['gem']['cache_prefill']} | {want[0]}, {want[1]} |"
        )
    return "\n".join(out)


def figure_flops(rows, cfg):
    """GemFilter's FLOPs over standard's against n, with r/m."""
    fig, axes = plots.subplots(1, 1, width=5.0, height=3.2)
    ax = axes[0, 0]
    ax.plot(
        [row["n"] for row in rows],
        flop_ratios(rows),
        marker="o",
        color=plots.color(0),
        label="counted",
    )
    ax.axhline(
        cfg.cost_r / cfg.layers, ls="--", color="gray", label=f"r/m = {cfg.cost_r}/{cfg.layers}"
    )
    ax.set(xscale="log", xlabel="prompt length n", ylabel="FLOPs, GemFilter / standard")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def _diff(a, b) -> list[float]:
    return [x - y for x, y in zip(a, b)]


def needle_measurements(results, cfg) -> dict:
    """Per-seed accuracies (averaged over depths) of :func:`experiments.needle_study`, shaped for
    the claims on the trained models."""
    acc = lambda key, layer=None: gx.seed_means(results, key, layer)  # noqa: E731
    full, gem = acc("full"), acc("layer_acc", "chosen")
    return {
        "toy-solves-needle-task": full,
        "gemfilter-matches-full-context": _diff(full, gem),
        "gemfilter-beats-random": (gem, acc("random")),
        "filter-layer-rise-and-fall": {
            f"r = {r}": (gem, acc("layer_acc", r)) for r in sorted({1, cfg.layers})
        },
        "pooling-kernel-matters": (gem, acc("no_pool")),
        "row-selection-last-query": {
            "middle row": (gem, acc("middle_row")),
            "largest row": (gem, acc("largest_row")),
        },
        "printed-listing-sort": _diff(gem, acc("listing")),
    }


def _pm(values) -> str:
    mean, se, _ = mean_and_se(values)
    return f"{mean:.3f} ± {se:.3f}"


def needle_table(results, cfg) -> str:
    """Markdown: every variant's accuracy (mean ± standard error over seeds) and, per filter
    layer, how often the needle's value is among the selected tokens."""
    acc = lambda key, layer=None: _pm(gx.seed_means(results, key, layer))  # noqa: E731
    rows = ["| variant | accuracy | needle value kept |", "|---|---|---|"]
    rows.append(f"| full context (n = {cfg.n_test}) | {acc('full')} | 1 |")
    for r in range(1, cfg.layers + 1):
        rows.append(
            f"| GemFilter, layer {r}, k = {cfg.k} | {acc('layer_acc', r)} | {acc('layer_cov', r)} |"
        )
    for label, key, layer in (
        ("GemFilter, chosen layer r", "layer_acc", "chosen"),
        ("chosen layer, no pooling", "no_pool", None),
        ("chosen layer, listing's sort", "listing", None),
        ("chosen layer, middle row (Fig. G.3 a)", "middle_row", None),
        ("chosen layer, largest row (Fig. G.3 b)", "largest_row", None),
        (f"random k = {cfg.k}", "random", None),
    ):
        rows.append(f"| {label} | {acc(key, layer)} | |")
    chosen = [res.r for res in results]
    return "\n".join(rows) + f"\n\nChosen filter layers, by seed: {chosen}."


def figure_layers(results, cfg):
    """Accuracy and needle coverage against the filter layer, with the full context and random
    selection as lines."""
    fig, axes = plots.subplots(1, 1, width=5.0, height=3.4)
    ax = axes[0, 0]
    rs = list(range(1, cfg.layers + 1))
    for key, style, label in (("layer_acc", "-", "accuracy"), ("layer_cov", "--", "value kept")):
        st = [mean_and_se(gx.seed_means(results, key, r)) for r in rs]
        ax.errorbar(
            rs, [s[0] for s in st], yerr=[s[1] for s in st], ls=style, marker="o",
            color=plots.color(0), label=label, capsize=3,
        )  # fmt: skip
    ax.axhline(np.mean(gx.seed_means(results, "full")), color=plots.color(1), label="full context")
    ax.axhline(np.mean(gx.seed_means(results, "random")), color=plots.color(2), label="random k")
    ax.set(xlabel="filter layer r", ylabel="fraction", xticks=rs, ylim=(-0.02, 1.02))
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def figure_depth(results, cfg):
    """Accuracy against the needle's depth: full context, GemFilter at the chosen layer, random."""
    fig, axes = plots.subplots(1, 1, width=5.0, height=3.2)
    ax = axes[0, 0]
    for j, (label, get) in enumerate(
        (
            ("full context", lambda res: res.full),
            ("GemFilter, chosen r", lambda res: res.layer_acc[res.r]),
            ("random k", lambda res: res.random),
        )
    ):
        per = np.array([get(res) for res in results])
        se = per.std(axis=0, ddof=1) / np.sqrt(len(results))
        ax.errorbar(
            cfg.depths, per.mean(axis=0), yerr=se, marker="o", color=plots.color(j),
            label=label, capsize=3,
        )  # fmt: skip
    ax.set(xlabel="needle depth", ylabel="accuracy", ylim=(-0.02, 1.02))
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def paper_table(results, cfg) -> str:
    """Markdown: Table 9.1's averages for four methods, the needle averages of Figures G.1-G.4
    beside the toy's, and Table 9.2's averages by filter layer."""
    methods = ["All KV", "SnapKV-1024", "GemFilter-1024", "GemFilter-4096"]
    rows = [
        "| LongBench average (Table 9.1) | " + " | ".join(methods) + " |",
        "|---|" + "---|" * len(methods),
    ]
    for model_name, scores in tables.LONGBENCH_AVERAGE.items():
        rows.append(f"| {model_name} | " + " | ".join(f"{scores[m]:.2f}" for m in methods) + " |")
    rows += ["", "| Needle in a Haystack, average score (Figures G.1–G.4) | source | this book |"]
    rows.append("|---|---|---|")
    for (model_name, method), score in tables.NEEDLE_AVERAGE.items():
        rows.append(f"| {model_name}, {method} | {score:.3f} | |")
    full, gem = gx.seed_means(results, "full"), gx.seed_means(results, "layer_acc", "chosen")
    rows.append(f"| toy LLaMA ({cfg.layers} layers), full context | | {_pm(full)} |")
    rows.append(f"| toy, GemFilter-{cfg.k} (chosen layer) | | {_pm(gem)} |")
    for label, key in (("middle row", "middle_row"), ("largest row", "largest_row")):
        rows.append(
            f"| toy, {label}-{cfg.k} (chosen layer) | | {_pm(gx.seed_means(results, key))} |"
        )
    rows += [
        "",
        "| Filter layer (Table 9.2, LLaMA 3.1, 32 layers) | LongBench average |",
        "|---|---|",
    ]
    rows += [
        f"| layer {layer} | {score:.2f} |" for layer, score in tables.FILTER_LAYER_AVERAGE.items()
    ]
    return "\n".join(rows)


def averages_table() -> str:
    """Markdown: for every transcribed table, its rows, and the largest gap between a printed
    average and the mean of its printed scores."""
    gaps = tables.average_gaps()
    out = ["| table | rows | largest gap, printed average − mean of the scores |", "|---|---|---|"]
    for name, values in gaps.items():
        worst = max(values, key=abs)
        out.append(f"| {name} | {len(values)} | {worst:+.4f} |")
    return "\n".join(out)
