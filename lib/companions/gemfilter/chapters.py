"""The gemfilter chapter: its parameters and their presets at each scale (Chapter 9)."""

from __future__ import annotations

from companions.scale import Chapter, Float, Int, ListOf, nearest_int, register_chapter


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
    )
)
