"""The chapters of the part "Feature emergence from inputs" and their parameters (see each notebook)."""

from __future__ import annotations

from companions.scale import Chapter, Choice, Float, Int, register_chapter

TARGET = register_chapter(Chapter(
    id="emergence-target",
    title="A network that represents the target (Lemma 2.5)",
    notebook="book/emergence/target-network.md",
    params={
        "k_max": Int(1, 9, doc="largest k of the exhaustive exact check of Lemma 2.5"),
        "mu_denominator": Int(1, 64, doc="mu runs over {0, 1/q, ..., k} with q = mu_denominator"),
        "d": Int(2, 100_000, doc="input dimension of the float64 spot check"),
        "D": Int(2, 100_000, doc="number of dictionary patterns"),
        "k": Int(1, 1000, doc="number of class-relevant patterns of the float64 spot check"),
        "n": Int(1, 10_000_000, doc="sampled points of the float64 spot check"),
    },
    presets={
        "smoke": dict(k_max=5, mu_denominator=4, d=64, D=32, k=5, n=4000),
        "default": dict(k_max=7, mu_denominator=7, d=100, D=50, k=5, n=20000),
        "paper": dict(k_max=8, mu_denominator=7, d=500, D=100, k=5, n=50000),
    },
    checks=(lambda p: None if p["k"] <= p["D"] <= p["d"] else
            f"parameters 'k' = {p['k']}, 'D' = {p['D']}, 'd' = {p['d']} are not allowed: need k <= D <= d",),
))
