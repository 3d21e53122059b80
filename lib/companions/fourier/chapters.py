"""The Fourier chapters: their parameters, presets and checks (Chapter 4 and Appendix C)."""

from __future__ import annotations

from companions.fourier.network import construction_width, is_odd_prime
from companions.fourier.transformer import split_size
from companions.scale import (
    Chapter,
    Float,
    Int,
    ListOf,
    get_chapter,
    nearest_int,
    register_chapter,
    toward,
)


def _check_p(name: str, p: int):
    if not is_odd_prime(p):
        return (
            f"parameter {name!r} = {p} is not allowed: "
            "the source needs an odd prime p > 2 (Section 4.3.1)"
        )
    return None


def _check_exact(params):
    for name in ("p",):
        msg = _check_p(name, params[name])
        if msg:
            return msg
    for i, p in enumerate(params["p_values"]):
        msg = _check_p(f"p_values[{i}]", p)
        if msg:
            return msg
    size = params["p"] ** (params["k"] + 1) * construction_width(params["p"], params["k"])
    if size > 1e12:
        return (
            f"parameters 'p' = {params['p']} and 'k' = {params['k']} "
            "are not allowed together: the explicit network "
            f"evaluated on all p^k inputs costs p^(k+1) m* = {size:.3g} (at most 1e12)"
        )
    return None


def _check_training(params):
    msg = _check_p("p", params["p"])
    if msg:
        return msg
    if params["batch"] and params["batch"] > params["p"] ** params["k"]:
        return (
            f"parameter 'batch' = {params['batch']} is not allowed: "
            f"it exceeds |D_p| = p^k = {params['p'] ** params['k']}"
        )
    return None


def _prime(n: int) -> int:
    return nearest_int(n, is_odd_prime, low=3)


def _snap_exact(v: dict, t: float) -> dict:
    """Between the presets (``companions.scale.between``): every modulus an odd prime."""
    v["p"] = _prime(v["p"])
    v["p_values"] = list(dict.fromkeys(_prime(q) for q in v["p_values"]))
    return v


def _batch(presets: dict, t: float, full_now: int, full_default: int) -> int:
    """The batch a fraction ``t`` of the way between the ``presets``, where the default preset
    trains on the full batch (``batch`` 0, ``full_default`` inputs) and the paper preset on
    minibatches: the number of inputs a step sees moves geometrically from ``full_default`` to
    the paper's batch, and is the full batch again (0) where it reaches the ``full_now`` inputs
    there are. (Moved as a plain number, 0 to 1024, a step would see far fewer inputs at
    ``t = 0.05`` than at ``t = 0``.)"""
    start, end = presets["default"]["batch"], presets["paper"]["batch"]
    if t == 1 or start != 0:
        return round(toward(start, end, t))
    seen = round(toward(full_default, end, t))
    return 0 if seen >= full_now else seen


def _snap_training(v: dict, t: float) -> dict:
    """Between the presets: ``p`` an odd prime, the batch as :func:`_batch` says."""
    v["p"] = _prime(v["p"])
    presets = get_chapter("fourier-training").presets
    default = presets["default"]
    v["batch"] = _batch(presets, t, v["p"] ** v["k"], default["p"] ** default["k"])
    return v


def _snap_transformer(v: dict, t: float) -> dict:
    """Between the presets: every modulus an odd prime, the batch as :func:`_batch` says."""
    v["p"] = _prime(v["p"])
    v["grok_p"] = [_prime(q) for q in v["grok_p"]]
    presets = get_chapter("fourier-transformer").presets
    default = presets["default"]
    full_default = split_size(default["p"], default["k"], default["train_fraction"])
    full_now = split_size(v["p"], v["k"], v["train_fraction"])
    v["batch"] = _batch(presets, t, full_now, full_default)
    return v


EXACT = register_chapter(
    Chapter(
        id="fourier-max-margin",
        title="The exact max-margin network for k-input modular addition",
        notebook="book/fourier/max-margin.md",
        params={
            "p": Int(3, 199, doc="the modulus p (an odd prime) of the chapter's main example"),
            "k": Int(2, 8, doc="the number of inputs k of the main example"),
            "p_values": ListOf(Int(3, 199), doc="moduli of the construction sweep (odd primes)"),
            "k_values": ListOf(Int(2, 8), doc="numbers of inputs of the construction sweep"),
            "sweep_size": Int(
                1000,
                10**12,
                doc="largest p^(k+1) m* evaluated in the sweep (larger pairs are skipped)",
            ),
            "sympy_k_max": Int(
                2, 7, doc="largest k of the symbolic identities (Lemma C.16, eq. C.21)"
            ),
            "random_neurons": Int(
                10, 10**7, doc="random unit neurons drawn against gamma* (Lemma C.15)"
            ),
            "ascent_starts": Int(1, 10**5, doc="random starts of the single-neuron ascent"),
            "ascent_steps": Int(1, 10**6, doc="Adam steps of the single-neuron ascent"),
        },
        presets={
            "smoke": dict(
                p=5,
                k=3,
                p_values=[3, 5, 7],
                k_values=[2, 3],
                sweep_size=2 * 10**6,
                sympy_k_max=4,
                random_neurons=2000,
                ascent_starts=16,
                ascent_steps=1500,
            ),
            "default": dict(
                p=7,
                k=3,
                p_values=[3, 5, 7, 11],
                k_values=[2, 3, 4, 5],
                sweep_size=3 * 10**7,
                sympy_k_max=6,
                random_neurons=20000,
                ascent_starts=64,
                ascent_steps=3000,
            ),
            "paper": dict(
                p=47,
                k=4,
                p_values=[3, 5, 7, 11, 13, 23, 47, 97],
                k_values=[2, 3, 4, 5],
                sweep_size=5 * 10**10,
                sympy_k_max=7,
                random_neurons=10**5,
                ascent_starts=512,
                ascent_steps=5000,
            ),
        },
        checks=(_check_exact,),
        snap=_snap_exact,
    )
)

TRAINING = register_chapter(
    Chapter(
        id="fourier-training",
        title="Training finds the Fourier max-margin network",
        notebook="book/fourier/training.md",
        params={
            "p": Int(3, 199, doc="the modulus p (an odd prime)"),
            "k": Int(2, 8, doc="the number of inputs k"),
            "width_factor": Float(
                0.01, 100, doc="m = round(width_factor * m*), m* = 2^(2k-1)(p-1)/2"
            ),
            "steps": Int(1, 10**7, doc="optimizer steps of every run"),
            "lr": Float(
                0,
                10,
                low_open=True,
                doc="learning rate of every run (Adam, and AdamW for the comparison)",
            ),
            "lam": Float(
                0, 10, low_open=True, doc="lambda of the L_{2,k+1} penalty (Definition 4.1)"
            ),
            "weight_decay": Float(
                0, 10, low_open=True, doc="AdamW decoupled weight decay of the comparison run"
            ),
            "batch": Int(0, 10**8, doc="minibatch size; 0 = full batch over all of D_p"),
            "seeds": Int(1, 64, doc="independent runs of the L_{2,k+1} training"),
            "width_sweep": ListOf(Float(0.01, 100), doc="m / m* of the width sweep"),
            "log_every": Int(1, 10**6, doc="steps between margin evaluations"),
        },
        presets={
            "smoke": dict(
                p=11,
                k=2,
                width_factor=1.0,
                steps=4000,
                lr=0.1,
                lam=1e-3,
                weight_decay=5e-3,
                batch=0,
                seeds=4,
                width_sweep=[0.25, 0.5, 1.0, 2.0],
                log_every=100,
            ),
            "default": dict(
                p=11,
                k=2,
                width_factor=1.0,
                steps=10000,
                lr=0.1,
                lam=1e-3,
                weight_decay=5e-3,
                batch=0,
                seeds=6,
                width_sweep=[0.25, 0.5, 0.75, 1.0],
                log_every=200,
            ),
            "paper": dict(
                p=47,
                k=4,
                width_factor=1.0,
                steps=50000,
                lr=5e-3,
                lam=5e-3,
                weight_decay=5e-3,
                batch=1024,
                seeds=3,
                width_sweep=[0.25, 0.5, 1.0, 2.0],
                log_every=1000,
            ),
        },
        checks=(_check_training,),
        snap=_snap_training,
    )
)


def _check_transformer(params):
    if not is_odd_prime(params["p"]):
        return f"parameter 'p' = {params['p']} is not allowed: the source needs an odd prime p > 2"
    if len(params["grok_p"]) != len(params["grok_k"]):
        return (
            f"parameters 'grok_p' = {list(params['grok_p'])} and "
            f"'grok_k' = {list(params['grok_k'])} are not allowed "
            "together: they pair up, so they need the same length"
        )
    for i, q in enumerate(params["grok_p"]):
        if not is_odd_prime(q):
            return f"parameter 'grok_p[{i}]' = {q} is not allowed: expected an odd prime"
    return None


TRANSFORMER = register_chapter(
    Chapter(
        id="fourier-transformer",
        title="Transformers on k-input modular addition: Fourier attention and grokking",
        notebook="book/fourier/transformer.md",
        params={
            "p": Int(3, 199, doc="modulus of the Figure 4.3 run"),
            "k": Int(2, 8, doc="number of inputs of the Figure 4.3 run"),
            "layers": Int(1, 8, doc="transformer layers of the Figure 4.3 run (the source: one)"),
            "grok_layers": Int(
                1, 8, doc="transformer layers of the grokking runs (Figure 4.4 says two)"
            ),
            "d_model": Int(8, 4096, doc="hidden dimension"),
            "heads": Int(1, 512, doc="attention heads per layer"),
            "d_head": Int(1, 1024, doc="dimension of each head's queries, keys and values"),
            "d_mlp": Int(1, 16384, doc="MLP width"),
            "steps": Int(1, 10**7, doc="AdamW steps of the Figure 4.3 run"),
            "grok_steps": Int(1, 10**7, doc="AdamW steps of each grokking run"),
            "lr": Float(0, 1, low_open=True, doc="AdamW learning rate"),
            "weight_decay": Float(0, 100, doc="AdamW weight decay"),
            "batch": Int(0, 10**8, doc="minibatch size; 0 = full batch on the training split"),
            "train_fraction": Float(
                0,
                1,
                low_open=True,
                high_open=True,
                doc="fraction of the p^k inputs used for training",
            ),
            "grok_p": ListOf(Int(3, 199), doc="moduli of the grokking runs (paired with grok_k)"),
            "grok_k": ListOf(Int(2, 8), doc="numbers of inputs of the grokking runs"),
            "grok_seeds": Int(1, 16, doc="seeds per grokking run"),
            "kq_seeds": Int(
                2, 16, doc="seeds of the Figure 4.3 run (its structure is decided over them)"
            ),
            "log_every": Int(1, 10**6, doc="steps between evaluations"),
        },
        presets={
            "smoke": dict(
                p=11,
                k=3,
                layers=1,
                grok_layers=1,
                d_model=32,
                heads=4,
                d_head=8,
                d_mlp=64,
                steps=300,
                grok_steps=200,
                lr=3e-3,
                weight_decay=1.0,
                batch=0,
                train_fraction=0.5,
                grok_p=[11, 5],
                grok_k=[2, 3],
                grok_seeds=1,
                kq_seeds=3,
                log_every=25,
            ),
            "default": dict(
                p=11,
                k=3,
                layers=1,
                grok_layers=1,
                d_model=64,
                heads=4,
                d_head=16,
                d_mlp=256,
                steps=700,
                grok_steps=600,
                lr=3e-3,
                weight_decay=1.0,
                batch=0,
                train_fraction=0.5,
                grok_p=[37, 11, 5],
                grok_k=[2, 3, 4],
                grok_seeds=1,
                kq_seeds=3,
                log_every=50,
            ),
            "paper": dict(
                p=31,
                k=4,
                layers=1,
                grok_layers=2,
                d_model=128,
                heads=160,
                d_head=32,
                d_mlp=512,
                steps=20000,
                grok_steps=20000,
                lr=1e-3,
                weight_decay=1e-3,
                batch=1024,
                train_fraction=0.5,
                grok_p=[97, 31, 11, 5],
                grok_k=[2, 3, 4, 5],
                grok_seeds=3,
                kq_seeds=3,
                log_every=250,
            ),
        },
        checks=(_check_transformer,),
        snap=_snap_transformer,
    )
)
