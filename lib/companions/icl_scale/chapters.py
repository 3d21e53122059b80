"""The icl-scale chapter: its parameters and their presets at each scale (Chapter 5, Section
5.4)."""

from __future__ import annotations

from companions.scale import (
    Chapter,
    Float,
    Int,
    ListOf,
    is_power_of_two,
    nearest_int,
    register_chapter,
)


def _check_parameter_pairs(p):
    """Constraints between parameters (a message naming the parameter, or None)."""
    lam = list(p["eigenvalues"])
    d = len(lam)
    if any(a <= b for a, b in zip(lam, lam[1:])):
        return (
            f"parameter 'eigenvalues' = {lam} is not allowed: they must be strictly decreasing "
            "(Theorem 5.4.1's optimum is unique only when lambda_r > lambda_(r+1))"
        )
    if len(p["task"]) != d:
        return (
            f"parameter 'task' has {len(p['task'])} coordinates: it needs one per eigenvalue "
            f"(d = {d})"
        )
    bad = [r for r in p["train_ranks"] if r > d]
    if bad:
        return f"parameter 'train_ranks' = {list(p['train_ranks'])} is not allowed: every r <= d"
    if sorted(set(p["eval_m"])) != list(p["eval_m"]):
        return f"parameter 'eval_m' = {list(p['eval_m'])} must be strictly increasing"
    if sorted(set(p["sigmas"])) != list(p["sigmas"]) or p["sigmas"][0] != 0:
        return f"parameter 'sigmas' = {list(p['sigmas'])} must increase strictly from 0"
    if sorted(set(p["flips"])) != list(p["flips"]) or p["flips"][0] != 0:
        return f"parameter 'flips' = {list(p['flips'])} must increase strictly from 0"
    return None


_PARAMS = {
    "eigenvalues": ListOf(
        Float(1e-6, 1e6),
        min_len=2,
        doc="the spectrum lambda_1 > ... > lambda_d of the input covariance Lambda (Section 5.4.1)",
    ),
    "n_train": Int(1, 1_000_000, doc="N, the examples per pretraining prompt (Section 5.4)"),
    "task": ListOf(
        Float(-1e3, 1e3),
        min_len=2,
        doc="coordinates of the evaluation task w in the eigenbasis Q (Theorem 5.4.2)",
    ),
    "eval_m": ListOf(
        Int(1, 1_000_000), min_len=2, doc="M, the in-context examples at evaluation (increasing)"
    ),
    "sigmas": ListOf(
        Float(0, 1e3), min_len=2, doc="label-noise levels sigma at evaluation (from 0, increasing)"
    ),
    "flips": ListOf(
        Float(0, 0.5), min_len=2, doc="probabilities of flipping an in-context label (from 0)"
    ),
    "mc_prompts": Int(1000, 100_000_000, doc="Monte Carlo prompts per estimate"),
    "random_models": Int(10, 10_000_000, doc="random rank-r models compared with the optimum"),
    "gd_starts": Int(1, 1000, doc="random starts of descent on the exact loss, per rank"),
    "gd_steps": Int(10, 1_000_000, doc="Adam steps of descent on the exact loss"),
    "train_ranks": ListOf(Int(1, 1000), min_len=1, doc="ranks r of the trained LSA"),
    "train_seeds": Int(2, 1000, doc="independent training runs per rank (two or more)"),
    "train_steps": Int(10, 10_000_000, doc="Adam steps on fresh prompts"),
    "train_batch": Int(8, 10_000_000, doc="prompts per Adam step (B)"),
    "train_lr": Float(0, 10, low_open=True, doc="Adam's initial learning rate (cosine decay)"),
}

_BASE = dict(eigenvalues=[4.0, 2.0, 1.0, 0.5], n_train=8, task=[1.0, -0.5, 0.8, 0.3])

CHAPTER = register_chapter(
    Chapter(
        id="icl-scale-regression",
        title="Smaller attention, fewer directions: the rank-r linear transformer in context",
        notebook="book/icl-scale/regression.md",
        params=_PARAMS,
        presets={
            "smoke": dict(
                _BASE,
                eval_m=[6, 32],
                sigmas=[0.0, 0.7],
                flips=[0.0, 0.3],
                mc_prompts=40_000,
                random_models=2000,
                gd_starts=1,
                gd_steps=600,
                train_ranks=[2],
                train_seeds=3,
                train_steps=800,
                train_batch=512,
                train_lr=3e-2,
            ),
            "default": dict(
                _BASE,
                eval_m=[4, 6, 16, 64],
                sigmas=[0.0, 0.35, 0.7, 1.4],
                flips=[0.0, 0.1, 0.2, 0.3, 0.4],
                mc_prompts=200_000,
                random_models=20_000,
                gd_starts=3,
                gd_steps=1500,
                train_ranks=[1, 2, 3, 4],
                train_seeds=3,
                train_steps=1200,
                train_batch=512,
                train_lr=3e-2,
            ),
            "paper": dict(
                eigenvalues=[float(20 - i) / 2 for i in range(20)],
                n_train=200,
                task=[1.0 / (1 + i) for i in range(20)],
                eval_m=[4, 8, 16, 64, 256],
                sigmas=[0.0, 0.5, 1.0, 2.0],
                flips=[0.0, 0.1, 0.2, 0.3, 0.4],
                mc_prompts=4_000_000,
                random_models=200_000,
                gd_starts=5,
                gd_steps=5000,
                train_ranks=[1, 5, 10, 20],
                train_seeds=5,
                train_steps=8000,
                train_batch=2048,
                train_lr=1e-2,
            ),
        },
        checks=(_check_parameter_pairs,),
    )
)


def _check_parity(p):
    """Constraints between the parity chapter's parameters."""
    for name in ("k", "d_eval"):
        n = p[name]
        if n < 2 or n & (n - 1):
            return f"parameter '{name}' = {n} is not allowed: Theorem 5.5.1 needs a power of 2"
    bad = [n for n in p["dims"] if n < 4 or n & (n - 1)]
    if bad:
        return f"parameter 'dims' = {list(p['dims'])} is not allowed: powers of 2, at least 4"
    if p["k"] >= p["d_eval"]:
        return f"parameter 'k' = {p['k']} is not allowed: it must be below d_eval = {p['d_eval']}"
    if sorted(set(p["flips"])) != list(p["flips"]) or p["flips"][0] != 0:
        return f"parameter 'flips' = {list(p['flips'])} must increase strictly from 0"
    return None


def _snap_parity(v: dict, t: float) -> dict:
    """Between the presets (``companions.scale.between``): ``k``, ``d_eval`` and every dimension
    powers of two (each dimension at least 4)."""
    for name in ("k", "d_eval"):
        v[name] = nearest_int(v[name], is_power_of_two, low=2)
    v["dims"] = list(dict.fromkeys(nearest_int(n, is_power_of_two, low=4) for n in v["dims"]))
    return v


PARITY = register_chapter(
    Chapter(
        id="icl-scale-parity",
        title="Sparse parity in context: the constructed small and large networks",
        notebook="book/icl-scale/parity.md",
        params={
            "gamma": Float(
                0, 0.25, low_open=True, high_open=True, doc="the correlation gamma (Section 5.5)"
            ),
            "dims": ListOf(
                Int(4, 1024), min_len=1, doc="dimensions d = 2^v2 checked exactly (Theorem 5.5.1)"
            ),
            "k": Int(2, 1024, doc="number of important features k = 2^v1 (a power of 2)"),
            "d_eval": Int(4, 1024, doc="d of the finite-M experiments (a power of 2, above k)"),
            "eval_m": ListOf(Int(1, 1_000_000), min_len=2, doc="in-context examples M"),
            "flips": ListOf(
                Float(0, 0.5), min_len=2, doc="probabilities of flipping an in-context label"
            ),
            "prompts": Int(100, 100_000_000, doc="evaluation prompts per (M, flip) cell"),
            "noise_draws": Int(100, 100_000_000, doc="draws of Xi per M (Theorem 5.5.2)"),
            "search_starts": Int(1, 100, doc="random starts of the small-norm search (d = 4)"),
            "search_steps": Int(10, 1_000_000, doc="Adam steps of the small-norm search"),
        },
        presets={
            "smoke": dict(
                gamma=0.2,
                dims=[4, 8],
                k=2,
                d_eval=8,
                eval_m=[16, 64],
                flips=[0.0, 0.2],
                prompts=4000,
                noise_draws=20000,
                search_starts=1,
                search_steps=1500,
            ),
            "default": dict(
                gamma=0.2,
                dims=[4, 8, 16],
                k=2,
                d_eval=8,
                eval_m=[8, 16, 64, 256],
                flips=[0.0, 0.1, 0.2, 0.3, 0.4],
                prompts=20000,
                noise_draws=200000,
                search_starts=3,
                search_steps=3000,
            ),
            "paper": dict(
                gamma=0.2,
                dims=[4, 8, 16, 32],
                k=4,
                d_eval=32,
                eval_m=[8, 16, 64, 256, 1024],
                flips=[0.0, 0.1, 0.2, 0.3, 0.4],
                prompts=200000,
                noise_draws=1000000,
                search_starts=10,
                search_steps=10000,
            ),
        },
        checks=(_check_parity,),
        snap=_snap_parity,
    )
)
