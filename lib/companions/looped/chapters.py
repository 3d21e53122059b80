"""The looped-gd chapter: its parameters and their presets at each scale (Chapter 8)."""

from __future__ import annotations

from companions.scale import Chapter, Float, Int, ListOf, register_chapter


def _check_parameter_pairs(p):
    """Constraints between parameters (a message naming the parameter, or None)."""
    bad = [n for n in p["n_values"] if n <= p["d"]]
    if bad:
        return (
            f"parameter 'n_values' = {list(p['n_values'])} is not allowed: "
            f"every n must exceed d = {p['d']} "
            f"(Definition 8.10 needs X^T X invertible); the regime n <= d has its own section"
        )
    if p["train_n"] <= p["train_d"]:
        return (
            f"parameter 'train_n' = {p['train_n']} is not allowed: "
            f"it must exceed train_d = {p['train_d']}"
        )
    if p["alpha"] == 0:
        return "parameter 'alpha' = 0.0 is not allowed: Definition 8.4 needs a query alpha != 0"
    return None


CHAPTER = register_chapter(
    Chapter(
        id="looped-gd",
        title="Looped transformers learn in context by multi-step gradient descent",
        notebook="book/in-context/looped-gd.md",
        params={
            "d": Int(1, 512, doc="feature dimension of the prompt (Definition 8.2)"),
            "n_values": ListOf(
                Int(2, 1_000_000),
                min_len=2,
                doc="prompt lengths n of Figure 8.1 (two or more: the chapter compares them)",
            ),
            "loops": Int(1, 100_000, doc="number of loops T"),
            "trials": Int(1, 100_000, doc="prompts per n in Figure 8.1"),
            "alpha": Float(-1e6, 1e6, doc="the query alpha (nonzero)"),
            "kappa_draws": Int(
                10, 10_000_000, doc="prompts drawn per n for the distribution of kappa"
            ),
            "mp_dims": ListOf(
                Int(1, 4096),
                min_len=2,
                doc="dimensions d of the Marchenko-Pastur sweep (two or more)",
            ),
            "mp_ratios": ListOf(Int(2, 1024), doc="ratios n/d of the Marchenko-Pastur sweep"),
            "mp_draws": Int(
                20,
                1_000_000,
                doc="prompts per (d, n/d) in the Marchenko-Pastur sweep (in 10 batches)",
            ),
            "train_d": Int(1, 512, doc="d of the trained looped transformer"),
            "train_n": Int(2, 100_000, doc="n of the trained looped transformer"),
            "train_loops": Int(1, 1000, doc="loops unrolled while training"),
            "train_steps": Int(1, 1_000_000, doc="Adam steps"),
            "train_batch": Int(1, 1_000_000, doc="prompts per Adam step"),
            "train_seeds": Int(1, 1000, doc="independent training runs"),
        },
        presets={
            "smoke": dict(
                d=4,
                n_values=[16, 32, 64, 128],
                loops=200,
                trials=10,
                alpha=1.0,
                kappa_draws=2000,
                mp_dims=[4, 16],
                mp_ratios=[2, 4, 8, 16, 32],
                mp_draws=100,
                train_d=4,
                train_n=32,
                train_loops=10,
                train_steps=300,
                train_batch=128,
                train_seeds=2,
            ),
            "default": dict(
                d=4,
                n_values=[16, 32, 64, 128],
                loops=200,
                trials=10,
                alpha=1.0,
                kappa_draws=20000,
                mp_dims=[4, 16, 64],
                mp_ratios=[2, 4, 8, 16, 32],
                mp_draws=400,
                train_d=4,
                train_n=32,
                train_loops=10,
                train_steps=1500,
                train_batch=256,
                train_seeds=4,
            ),
            "paper": dict(
                d=4,
                n_values=[16, 32, 64, 128],
                loops=200,
                trials=10,
                alpha=1.0,
                kappa_draws=200000,
                mp_dims=[4, 16, 64, 256],
                mp_ratios=[2, 4, 8, 16, 32, 64],
                mp_draws=1000,
                train_d=16,
                train_n=256,
                train_loops=20,
                train_steps=5000,
                train_batch=512,
                train_seeds=8,
            ),
        },
        checks=(_check_parameter_pairs,),
    )
)
