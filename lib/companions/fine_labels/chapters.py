"""The three chapters of the fine-grained-labels part: their parameters and presets per scale.

The paper has no simulations; every size below is this book's (the map's Section 5), chosen by a
target detector count, not by the paper's asymptotic formulas (which need d >~ 1e122).
"""

from __future__ import annotations

from companions.scale import (
    Chapter,
    Choice,
    Float,
    Int,
    ListOf,
    is_power_of_two,
    nearest_int,
    register_chapter,
)

_POS = dict(low=0.0, low_open=True)

DATA = {
    "d": Int(8, 100_000, doc="patch dimension d (= dictionary size; Definition 4.1)"),
    "k": Int(1, 1000, doc="subclasses per superclass, k_+ = k_- (Section 4.1)"),
    "P": Int(2, 100_000, doc="patches per sample P"),
    "s_star": Int(1, 10_000, doc="common (and subclass) patches per easy sample, s^*"),
    "patch_counts": Choice(
        ("exact", "bernoulli"),
        doc="'exact': s^* patches of each kind; 'bernoulli': the paper's sampling (App. B.1)",
    ),
    "iota": Float(0.0, 1.0, high_open=True, doc="alpha_p uniform on [sqrt(1-iota), sqrt(1+iota)]"),
    "noise": Float(**_POS, doc="sigma_zeta sqrt(d): the norm of a noise patch"),
    "s_dagger": Int(0, 10_000, doc="feature-noise patches of a hard sample, s^dagger"),
    "alpha_dagger": ListOf(
        Float(0.0, 10.0), min_len=2, max_len=2, doc="[lower, upper] of alpha^dagger (uniform)"
    ),
    "star": Float(**_POS, doc="sigma_zeta* sqrt(d): the norm of the distracting patch zeta^*"),
}
NET = {
    "m": Int(1, 1_000_000, doc="neurons per output (coarse and fine alike; see the chapter)"),
    "tau": Float(**_POS, doc="initial threshold in units of sigma0: b(0) = -tau sigma0"),
    "sigma0": Float(**_POS, doc="initialisation scale sigma0"),
    "eta": Float(**_POS, doc="step size eta of eq. (16)"),
    "lam_b": Float(1.0, None, low_open=True, doc="bias rate of eq. (18) (paper: log^5 d)"),
    "slack": Float(0.0, 100.0, doc="detector-set slack delta in sd of <w(0), zeta>"),
    "N": Int(2, 1_000_000, doc="fresh batch size per step (a multiple of 2k)"),
    "seeds": Int(2, 64, doc="independent runs, trained together as one tensor"),
    "n_test": Int(2, 1_000_000, doc="easy and hard test samples per seed (a multiple of 2k)"),
}


def _checks(p):
    if p["d"] < 2 + 2 * p["k"]:
        return f"parameter 'd' = {p['d']} is not allowed: it must be >= 2 + 2k = {2 + 2 * p['k']}"
    if p["patch_counts"] == "exact" and p["P"] < 2 * p["s_star"] + p["s_dagger"] + 1:
        return (
            f"parameter 'P' = {p['P']} is not allowed: exact counts need P >= 2 s_star + "
            f"s_dagger + 1 = {2 * p['s_star'] + p['s_dagger'] + 1}"
        )
    for name in ("N", "n_test"):
        if p[name] % (2 * p["k"]):
            return f"parameter {name!r} = {p[name]} is not allowed: it must be a multiple of 2k"
    lo, hi = p["alpha_dagger"]
    if lo > hi:
        return f"parameter 'alpha_dagger' = {list(p['alpha_dagger'])} is not allowed: lower > upper"
    if "groups" in p and any(p["k"] % g for g in p["groups"]):
        return f"parameter 'groups' = {list(p['groups'])} is not allowed: each must divide k"
    return None


def _snap(v: dict, t: float) -> dict:
    """Between the presets (``companions.scale.between``): ``k`` a power of two, ``N`` and
    ``n_test`` multiples of ``2k``, and every group size a divisor of ``k``."""
    v["k"] = nearest_int(v["k"], is_power_of_two)
    for name in ("N", "n_test"):
        v[name] = nearest_int(v[name], lambda n: n % (2 * v["k"]) == 0)
    if "groups" in v:
        v["groups"] = list(
            dict.fromkeys(nearest_int(g, lambda n: v["k"] % n == 0) for g in v["groups"])
        )
    return v


def _both(smoke, default, paper, extra_s=None, extra_d=None, extra_p=None):
    return {
        "smoke": {**smoke, **(extra_s or {})},
        "default": {**default, **(extra_d or {})},
        "paper": {**paper, **(extra_p or {})},
    }


SMOKE = dict(
    d=32, k=4, P=12, s_star=2, patch_counts="exact", iota=0.0, noise=0.03, s_dagger=2,
    alpha_dagger=[0.4, 0.6], star=1.5, m=128, tau=1.75, sigma0=1e-3, eta=0.1, lam_b=30.0,
    slack=6.0, N=64, seeds=4, n_test=256,
)  # fmt: skip
DEFAULT = dict(
    d=64, k=8, P=16, s_star=3, patch_counts="exact", iota=0.0, noise=0.03, s_dagger=2,
    alpha_dagger=[0.3, 0.5], star=1.0, m=128, tau=1.75, sigma0=1e-3, eta=0.05, lam_b=30.0,
    slack=6.0, N=128, seeds=6, n_test=512,
)  # fmt: skip
# paper: sized for a GPU and not yet run; the fine model then has 2k m = 32768 neurons,
# so one step holds seeds x N P x 32768 floats (8.6 GB at N = 128) on the GPU.
PAPER = dict(
    d=256, k=16, P=64, s_star=8, patch_counts="bernoulli", iota=1e-3, noise=0.03, s_dagger=4,
    alpha_dagger=[0.3, 0.5], star=2.0, m=1024, tau=2.5, sigma0=1e-4, eta=0.075, lam_b=30.0,
    slack=6.0, N=128, seeds=8, n_test=2048,
)  # fmt: skip

register_chapter(
    Chapter(
        id="fine-labels-model",
        title="The hierarchical multi-view model and its regime",
        notebook="book/fine-labels/model.md",
        params={
            **DATA,
            **NET,
            "n_count": Int(100, 10_000_000, doc="samples drawn for the patch-count statistics"),
        },
        presets=_both(
            SMOKE,
            DEFAULT,
            PAPER,
            {"n_count": 20_000, "patch_counts": "bernoulli"},
            {"n_count": 100_000, "patch_counts": "bernoulli"},
            {"n_count": 1_000_000},
        ),
        checks=(_checks,),
        snap=_snap,
    )
)

register_chapter(
    Chapter(
        id="fine-labels-coarse",
        title="Coarse training (Theorem 5.1)",
        notebook="book/fine-labels/coarse.md",
        params={
            **DATA,
            **NET,
            "steps": Int(10, 10_000_000, doc="coarse training steps (fresh batches)"),
            "n_logs": Int(4, 10_000, doc="logged times, spread over the run"),
        },
        presets=_both(
            SMOKE,
            DEFAULT,
            PAPER,
            {"steps": 120, "n_logs": 16},
            {"steps": 400, "n_logs": 30},
            {"steps": 3000, "n_logs": 60},
        ),
        checks=(_checks,),
        snap=_snap,
    )
)

register_chapter(
    Chapter(
        id="fine-labels-fine",
        title="Fine-grained training and transfer (Theorem 5.2)",
        notebook="book/fine-labels/fine.md",
        params={
            **DATA,
            **NET,
            "steps": Int(10, 10_000_000, doc="coarse training steps of the baseline"),
            "steps_fine": Int(4, 10_000_000, doc="fine-label training steps"),
            "steps_ft": Int(1, 10_000_000, doc="fine-tuning steps on coarse labels after them"),
            "B": Float(
                0.0, 0.4054651081081644, low_open=True, doc="stop level of T0(B), <= log 3/2"
            ),
            "n_logs": Int(4, 10_000, doc="logged times, spread over each run"),
            "alpha_grid": ListOf(
                Float(0.0, 10.0), min_len=2, doc="mean alpha^dagger of the phase diagram"
            ),
            "s_dagger_grid": ListOf(Int(0, 10_000), min_len=1, doc="s^dagger of the phase diagram"),
            "groups": ListOf(Int(1, 1000), min_len=2, doc="label groups per superclass (sweep)"),
            "sweep_steps": Int(4, 10_000_000, doc="training steps of each granularity run"),
        },
        presets=_both(
            SMOKE,
            DEFAULT,
            PAPER,
            dict(
                steps=120,
                steps_fine=30,
                steps_ft=15,
                B=0.4,
                n_logs=8,
                alpha_grid=[0.1, 0.25, 0.5, 1.0],
                s_dagger_grid=[1, 2],
                groups=[1, 2, 4],
                sweep_steps=30,
            ),
            dict(
                steps=400,
                steps_fine=60,
                steps_ft=40,
                B=0.4,
                n_logs=10,
                n_test=256,
                alpha_grid=[0.05, 0.1, 0.2, 0.4, 0.8, 1.6],
                s_dagger_grid=[1, 2],
                groups=[1, 2, 4, 8],
                sweep_steps=60,
            ),
            dict(
                steps=3000,
                steps_fine=400,
                steps_ft=500,
                B=0.4,
                n_logs=40,
                alpha_grid=[0.02, 0.05, 0.1, 0.2, 0.4, 0.8, 1.6],
                s_dagger_grid=[1, 2, 4],
                groups=[1, 2, 4, 8, 16],
                sweep_steps=400,
            ),
        ),  # fmt: skip
        checks=(_checks,),
        snap=_snap,
    )
)
