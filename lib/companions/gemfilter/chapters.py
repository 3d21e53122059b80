"""The gemfilter chapter: its parameters and their presets at each scale (Chapter 9)."""

from __future__ import annotations

from companions.claims import (
    Amendment,
    AtLeast,
    Claim,
    Close,
    DifferenceAbove,
    Every,
    Exact,
    MeanAbove,
    MeanBelow,
)
from companions.gemfilter.tables import AVERAGE_ALLOWANCE
from companions.scale import Chapter, Float, Int, ListOf, nearest_int, register_chapter

#: Margins, fixed in advance (accuracies are fractions in [0, 1]).
SOLVED = 0.9  # the model solves the task: full-context accuracy above 90 %
NEGLIGIBLE = 0.05  # "negligible performance loss": GemFilter within 5 points of the full context
BETTER = 0.25  # one selection is better than another: by more than 25 points
LIMIT_TOLERANCE = 0.05  # the FLOP ratio at the largest n within 5 % of r/m

_TRAINED = "per-seed accuracies, averaged over the needle depths, of the models trained here"
_SEEDS = (
    "more seeds of the same model (the note gives how many at this run's mean and spread; "
    "each seed trains one model, about half a minute at the default preset on this CPU)"
)
_AMENDED = "2026-12-05"

CLAIMS = (
    Claim(
        id="case-study-generation-memory",
        source="Theorem 9.3 (case study)",
        kind="identity",
        statistic="the table's generation memory over m h d at t = k minus the case study's "
        "w/hd + 2n : w/hd + 4k : w/hd + 4k (the standard one less its 2t, which the case study "
        "drops for n >> t), sympy",
        rule=Exact(0),
        could_fail="a case study inconsistent with its own table (as its prompt-phase memory is) "
        "leaves a nonzero residual",
    ),
    Claim(
        id="standard-prompt-memory",
        source="Theorem 9.3 / G.4 (table and case study)",
        kind="erratum",
        statistic="the printed standard prompt memory m w + 2 m h d minus SnapKV's "
        "m w + 2 h n d + 2 m h k d, in elements, at LLaMA 3.1 8B's shape (m = 32, h = 8 key-value "
        "heads, d = 128) and the case study's n = 128K, k = 1024; the rule is the source's "
        "Appendix G.2: standard attention stores the whole KV cache, so it needs at least "
        "SnapKV's memory",
        rule=AtLeast(0),
        could_fail="a negative difference (differs) confirms the misprint: the printed 2 m h d "
        "is one token's cache, not n tokens'",
    ),
    Claim(
        id="flop-count-closed-form",
        source="this book (Definition 9.2's layers)",
        kind="identity",
        statistic="FlopCounterMode's count on the toy LLaMA (eager attention) minus this book's "
        "closed form, for the prefill and the first pass at every n of the cost sweep",
        rule=Exact(0),
        could_fail="a wrong closed form (a missing projection, n^2 for n) or a first pass "
        "running more layers than r leaves a nonzero gap",
    ),
    Claim(
        id="flop-ratio-tends-to-r-over-m",
        source="Theorem 9.3 (time, both phases)",
        kind="prediction",
        statistic="GemFilter's counted FLOPs (first pass, prefill of k tokens, t steps) over "
        "standard generation's, at the largest n of the cost sweep, divided by r/m",
        rule=Close(1.0, LIMIT_TOLERANCE),
        could_fail="if the prompt phase did not dominate, or the first pass cost more than r "
        "layers, the ratio would stay away from r/m",
        amended=(
            Amendment(
                _AMENDED,
                previous="within 5 % of r/m at the largest n, and below the ratio at the "
                "smallest n",
                reason="the second condition is implied once the first holds and the ratio at the "
                "smallest n is printed beside it; a rule with one number reads more plainly",
            ),
        ),
    ),
    Claim(
        id="longbench-averages",
        source="Tables 9.1, 9.2, G.1",
        kind="reproduction",
        statistic="every row's printed LongBench average minus the mean of its printed task "
        "scores, exact decimal arithmetic, by table (Table 9.1 by model)",
        rule=Every(Close(0.0, AVERAGE_ALLOWANCE)),
        could_fail="a transcription slip or a misprinted average puts a row beyond the rounding "
        "allowance of two-decimal numbers",
    ),
    Claim(
        id="toy-solves-needle-task",
        source="this book",
        kind="prediction",
        statistic=f"full-context accuracy, {_TRAINED}",
        rule=MeanAbove(SOLVED),
        could_fail="a model stuck on the loss plateau (chance is 1/fillers) leaves nothing for "
        "GemFilter to preserve",
        decides=_SEEDS,
    ),
    Claim(
        id="gemfilter-matches-full-context",
        source="Figure 9.4, Table 9.1 (negligible loss), mirrored at toy size",
        kind="prediction",
        statistic=f"full-context minus GemFilter accuracy at each model's chosen layer, {_TRAINED} "
        "(paired by seed)",
        rule=MeanBelow(NEGLIGIBLE),
        could_fail="a selection that drops the needle in some prompts, or a second pass that "
        "loses what the first kept, costs more than 5 points",
        decides="more seeds of the same model (the default preset's 4-layer decoder): about 9 "
        "at the spread of the default run of 2026-12 (a loss of 0.194 +- 0.076 over 6 seeds, "
        "one thread); the note gives the count for this run",
    ),
    Claim(
        id="gemfilter-beats-random",
        source="this book (selection is not chance)",
        kind="prediction",
        statistic=f"GemFilter minus k random tokens (the query kept), {_TRAINED}, paired by seed",
        rule=DifferenceAbove(BETTER, paired=True),
        could_fail="if the last query's scores did not point at the needle, GemFilter would "
        "answer no better than a random selection",
        decides=_SEEDS,
    ),
    Claim(
        id="filter-layer-rise-and-fall",
        source="Table 9.2, Figure 9.5 (accuracy rises, then falls with the filter layer), at toy "
        "size",
        kind="prediction",
        statistic=f"GemFilter at the chosen layer minus GemFilter at layer 1 and at layer m, "
        f"{_TRAINED}, paired by seed",
        rule=Every(DifferenceAbove(BETTER, paired=True)),
        could_fail="if every layer's last query found the needle, or none did, the chosen layer "
        "would not stand above both ends",
        decides=_SEEDS,
    ),
    Claim(
        id="pooling-kernel-matters",
        source="this book (Appendix G.4.2's kernel 5)",
        kind="prediction",
        statistic=f"GemFilter with the pooling kernel minus without it, at the chosen layer, "
        f"{_TRAINED}, paired by seed",
        rule=DifferenceAbove(BETTER, paired=True),
        could_fail="if the top-k kept the needle's value without its neighbours' help, pooling "
        "would change nothing",
        decides=_SEEDS,
    ),
    Claim(
        id="row-selection-last-query",
        source="Figure G.3 (the last query is essential), at toy size",
        kind="prediction",
        statistic=f"GemFilter (the last row) minus the same selection from the middle row and "
        f"from the row of largest l2 norm of the chosen layer's attention matrix, {_TRAINED}, "
        "paired by seed",
        rule=Every(DifferenceAbove(BETTER, paired=True)),
        could_fail="if any query's row pointed at the needle as well as the last one, the gap "
        "would vanish",
        decides=_SEEDS,
    ),
    Claim(
        id="printed-listing-sort",
        source="Appendix G.4.1 (listing, line 9)",
        kind="erratum",
        statistic=f"GemFilter as released minus GemFilter with the listing's "
        f"torch.sort(top_k_indices).indices, at the chosen layer, {_TRAINED}, paired by seed; "
        "the rule is the source's listing: it selects as the released code does, so it loses "
        f"less than {BETTER}",
        rule=MeanBelow(BETTER),
        could_fail="a loss above 25 points (differs) confirms the erratum: the listing keeps "
        "positions 0..k-1, not the selected ones",
        decides=_SEEDS,
    ),
)


def _check_parameter_pairs(p):
    """Constraints between parameters (a message naming the parameter, or None)."""
    for name in ("filter_layer", "cost_r"):
        if p[name] > p["layers"]:
            return (
                f"parameter {name!r} = {p[name]} is not allowed: "
                f"it must be at most layers = {p['layers']} (Algorithm 2 needs r <= m)"
            )
    if p["width"] % p["heads"]:
        return (
            f"parameter 'width' = {p['width']} is not allowed: "
            f"it must be a multiple of heads = {p['heads']}"
        )
    if p["heads"] % p["kv_heads"]:
        return (
            f"parameter 'kv_heads' = {p['kv_heads']} is not allowed: "
            f"it must divide heads = {p['heads']}"
        )
    if p["n_train"] < p["n_min"]:
        return f"parameter 'n_train' = {p['n_train']} is not allowed: it must be >= n_min"
    if p["k"] >= p["n_test"]:
        return (
            f"parameter 'k' = {p['k']} is not allowed: it must be below n_test = {p['n_test']} "
            "(Algorithm 2 needs k <= n; k = n selects everything)"
        )
    if p["cost_k"] > min(p["cost_n"]) or p["cost_t"] > min(p["cost_n"]):
        return (
            f"parameter 'cost_k' = {p['cost_k']} (or 'cost_t' = {p['cost_t']}) is not allowed: "
            f"Theorem 9.3 assumes n >= max(d, k, t), and min(cost_n) = {min(p['cost_n'])}"
        )
    if p["pool"] % 2 == 0:
        return f"parameter 'pool' = {p['pool']} is not allowed: the pooling kernel must be odd"
    return None


_COMMON = dict(
    layers=4,
    width=32,
    heads=4,
    kv_heads=2,
    mlp=64,
    fillers=32,
    batch=32,
    lr=3e-3,
    n_min=8,
    k=8,
    filter_layer=0,
    select_threshold=0.9,
    pool=5,
    depths=[0.0, 0.25, 0.5, 0.75, 1.0],
    cost_r=2,
    cost_k=8,
    cost_t=8,
)


def _snap(v: dict, t: float) -> dict:
    """Between the presets (``companions.scale.between``): ``heads`` a multiple of ``kv_heads``,
    ``width`` a multiple of ``heads``."""
    v["heads"] = nearest_int(v["heads"], lambda n: n % v["kv_heads"] == 0)
    v["width"] = nearest_int(v["width"], lambda n: n % v["heads"] == 0)
    return v


CHAPTER = register_chapter(
    Chapter(
        id="gemfilter",
        title="GemFilter: early layers find the tokens that matter",
        notebook="book/gemfilter/gemfilter.md",
        params={
            "layers": Int(2, 64, doc="decoder layers m of the toy LLaMA"),
            "width": Int(8, 4096, doc="hidden size of the toy LLaMA (a multiple of heads)"),
            "heads": Int(1, 64, doc="attention heads h"),
            "kv_heads": Int(1, 64, doc="key-value heads (grouped-query attention; divides heads)"),
            "mlp": Int(4, 16384, doc="intermediate size of the SwiGLU MLP"),
            "fillers": Int(4, 100_000, doc="filler (and value) tokens of the needle task"),
            "steps": Int(1, 1_000_000, doc="Adam steps per trained model"),
            "batch": Int(1, 100_000, doc="prompts per Adam step"),
            "lr": Float(0, 1, low_open=True, doc="Adam learning rate"),
            "n_min": Int(4, 1_000_000, doc="shortest training prompt"),
            "n_train": Int(4, 1_000_000, doc="longest training prompt"),
            "n_test": Int(5, 1_000_000, doc="length n of the test prompts"),
            "k": Int(1, 1_000_000, doc="tokens GemFilter keeps (below n_test)"),
            "filter_layer": Int(
                0,
                64,
                doc="GemFilter's filter layer r (1-based, <= layers); 0: chosen per trained model "
                "by the source's rule (the first layer whose selection keeps the needle)",
            ),
            "select_threshold": Float(
                0, 1, low_open=True, doc="needle coverage at which the rule picks a layer"
            ),
            "pool": Int(1, 101, doc="average-pooling kernel over the scores (odd; 1: none)"),
            "depths": ListOf(
                Float(0, 1), min_len=2, doc="needle depths of the test grid (0: first, 1: last)"
            ),
            "test_prompts": Int(2, 1_000_000, doc="test prompts per needle depth"),
            "seeds": Int(2, 1000, doc="independently trained models (two or more)"),
            "cost_n": ListOf(
                Int(8, 1_000_000), min_len=2, doc="prompt lengths n of the FLOP and cache count"
            ),
            "cost_r": Int(1, 64, doc="filter layer r of the FLOP and cache count"),
            "cost_k": Int(1, 1_000_000, doc="k of the FLOP and cache count"),
            "cost_t": Int(1, 1_000_000, doc="generated tokens t of the FLOP and cache count"),
        },
        presets={
            "smoke": dict(
                _COMMON,
                steps=300,
                n_train=24,
                n_test=24,
                test_prompts=40,
                seeds=3,
                cost_n=[64, 128, 256, 512],
            ),
            "default": dict(
                _COMMON,
                steps=1000,
                n_train=48,
                n_test=48,
                test_prompts=100,
                seeds=6,
                cost_n=[64, 128, 256, 512, 1024],
            ),
            "paper": dict(
                _COMMON,
                layers=8,
                width=64,
                heads=8,
                kv_heads=2,
                mlp=128,
                steps=4000,
                batch=64,
                n_train=128,
                n_test=128,
                k=16,
                test_prompts=400,
                seeds=8,
                depths=[0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0],
                cost_n=[128, 512, 2048, 8192],
                cost_k=16,
                cost_t=16,
            ),
        },
        checks=(_check_parameter_pairs,),
        snap=_snap,
        claims=CLAIMS,
    )
)
