"""The gradient-feature chapters (dissertation Chapter 3 and Appendix B): parameters and presets."""

from __future__ import annotations

from companions.scale import Chapter, Float, Int, ListOf, nearest_int, register_chapter

_GAMMA = Float(0.0, 1.0, low_open=True, high_open=True)


def _check_framework(p):
    if p["r"] % 2 or p["r"] > p["d"]:
        return f"parameter 'r' = {p['r']} is not allowed: it must be even and at most d = {p['d']}"
    if sorted(p["gammas"]) != list(p["gammas"]):
        return f"parameter 'gammas' = {list(p['gammas'])} is not allowed: it must be increasing"
    return None


def _even(n: int) -> bool:
    return n % 2 == 0


def _odd(n: int) -> bool:
    return n % 2 == 1


def _snap_framework(v: dict, t: float) -> dict:
    """Between the presets (``companions.scale.between``): ``r`` even."""
    v["r"] = nearest_int(v["r"], _even, low=2)
    return v


FRAMEWORK = register_chapter(
    Chapter(
        id="gradient-framework",
        title="Gradient features: the framework and its guarantee",
        notebook="book/gradient-features/framework.md",
        params={
            "d": Int(4, 100_000, doc="input dimension of the running example (a Gaussian mixture)"),
            "r": Int(
                2, 1000, doc="components of the mixture (orthogonal means, alternating labels)"
            ),
            "mean_norm": Float(0.0, 100.0, low_open=True, doc="||mu_j|| / sqrt(d) (B_mu1 = B_mu2)"),
            "sigma": Float(0.0, 100.0, low_open=True, doc="standard deviation of each component"),
            "m": Int(2, 1_000_000, doc="neurons per block of (3.9); the network has 4m"),
            "n": Int(10, 10_000_000, doc="training points per seed for the first step"),
            "seeds": Int(2, 1000, doc="independent seeds (initialisation and data)"),
            "b_tilde": Float(0.0, 1e6, low_open=True, doc="the bias b~ of (3.9)"),
            "eta1": Float(0.0, 1e6, low_open=True, doc="first step size eta^(1), lambda = 1/eta"),
            "gammas": ListOf(_GAMMA, min_len=2, doc="cone widths gamma of Definition 3.7"),
            "bg_fraction": Float(
                0.0, 1.0, high_open=True, doc="B_G as a fraction of Lemma 3.17's leading term"
            ),
            "pop_neurons": Int(100, 10_000_000, doc="fresh weights of the population estimate"),
            "pop_n": Int(100, 10_000_000, doc="fresh points of the population estimate"),
            "rademacher_draws": Int(10, 1_000_000, doc="sign vectors of the Rademacher estimate"),
            "mi_d": Int(3, 100_000, doc="dimension of the multiple-index example (B.5.7)"),
            "mi_n": Int(100, 100_000_000, doc="samples of its first step (Algorithm 7)"),
            "mi_m": Int(2, 1_000_000, doc="neurons of its first step"),
        },
        presets={
            "smoke": dict(
                d=50,
                r=4,
                mean_norm=1.0,
                sigma=1.0,
                m=128,
                n=2000,
                seeds=3,
                b_tilde=1.0,
                eta1=0.2,
                gammas=[0.05, 0.1, 0.2, 0.4],
                bg_fraction=0.5,
                pop_neurons=2000,
                pop_n=10_000,
                rademacher_draws=200,
                mi_d=30,
                mi_n=20_000,
                mi_m=128,
            ),
            "default": dict(
                d=100,
                r=4,
                mean_norm=1.0,
                sigma=1.0,
                m=512,
                n=10_000,
                seeds=5,
                b_tilde=1.0,
                eta1=0.2,
                gammas=[0.02, 0.05, 0.1, 0.2, 0.4],
                bg_fraction=0.5,
                pop_neurons=10_000,
                pop_n=50_000,
                rademacher_draws=1000,
                mi_d=50,
                mi_n=50_000,
                mi_m=256,
            ),
            "paper": dict(
                d=1000,
                r=8,
                mean_norm=1.0,
                sigma=1.0,
                m=10_000,
                n=200_000,
                seeds=10,
                b_tilde=1.0,
                eta1=0.2,
                gammas=[0.01, 0.02, 0.05, 0.1, 0.2, 0.4],
                bg_fraction=0.5,
                pop_neurons=100_000,
                pop_n=500_000,
                rademacher_draws=5000,
                mi_d=100,
                mi_n=300_000,
                mi_m=1024,
            ),
        },
        checks=(_check_framework,),
        snap=_snap_framework,
    )
)


def _check_mixtures(p):
    if len(set(p["n_values"])) != len(p["n_values"]) or sorted(p["n_values"]) != list(
        p["n_values"]
    ):
        return f"parameter 'n_values' = {list(p['n_values'])} is not allowed: it must increase"
    return None


MIXTURES = register_chapter(
    Chapter(
        id="gradient-mixtures",
        title="Mixtures of Gaussians, and the XOR mixture beyond kernels",
        notebook="book/gradient-features/mixtures.md",
        params={
            "tau": Float(8.0, 1e6, doc="tau of Assumption 3.15 (at least 8)"),
            "gt_d": ListOf(Int(4, 10**9), min_len=1, doc="dimensions at which g* is evaluated"),
            "gt_samples": Int(1000, 100_000_000, doc="Monte Carlo points for g*'s hinge loss"),
            "d": Int(4, 100_000, doc="dimension of the XOR mixture (Assumption B.36)"),
            "sigma": Float(0.0, 100.0, low_open=True, doc="sigma_B of the XOR mixture"),
            "m": Int(2, 1_000_000, doc="neurons per block of (3.9); the network has 4m"),
            "n_values": ListOf(Int(10, 10_000_000), min_len=1, doc="training set sizes"),
            "n_test": Int(100, 10_000_000, doc="test points per seed"),
            "seeds": Int(2, 1000, doc="independent seeds"),
            "eta1": Float(0.0, 1e6, low_open=True, doc="first step size, lambda = 1/eta"),
            "steps": Int(1, 1_000_000, doc="Adam steps after the first step, every method"),
            "lr": Float(0.0, 10.0, low_open=True, doc="Adam learning rate, every method"),
            "batch": Int(1, 1_000_000, doc="minibatch size of the later steps"),
            "margin": Float(0.0, 1.0, doc="accuracy gap (fixed in advance) the predictions test"),
        },
        presets={
            "smoke": dict(
                tau=8.0,
                gt_d=[300, 1000, 10_000],
                gt_samples=20_000,
                d=100,
                sigma=2.0,
                m=64,
                n_values=[500],
                n_test=4000,
                seeds=3,
                eta1=0.2,
                steps=200,
                lr=1e-2,
                batch=256,
                margin=0.05,
            ),
            "default": dict(
                tau=8.0,
                gt_d=[300, 1000, 10_000, 100_000],
                gt_samples=200_000,
                d=100,
                sigma=2.0,
                m=128,
                n_values=[250, 500, 1000, 2000],
                n_test=10_000,
                seeds=5,
                eta1=0.2,
                steps=400,
                lr=1e-2,
                batch=256,
                margin=0.05,
            ),
            "paper": dict(
                tau=8.0,
                gt_d=[300, 1000, 10_000, 100_000, 1_000_000],
                gt_samples=1_000_000,
                d=200,
                sigma=2.0,
                m=512,
                n_values=[500, 1000, 2000, 4000, 8000, 16000],
                n_test=50_000,
                seeds=10,
                eta1=0.2,
                steps=2000,
                lr=1e-2,
                batch=512,
                margin=0.05,
            ),
        },
        checks=(_check_mixtures,),
    )
)


def _check_parities(p):
    if p["k"] % 2 == 0:
        return f"parameter 'k' = {p['k']} is not allowed: structured parity needs k odd"
    if p["p_A"] > 1 / (2 * max(p["r_values"])):
        return (
            f"parameter 'p_A' = {p['p_A']} is not allowed: the mixture needs p_A <= 1/(2r) for "
            f"every r in r_values = {list(p['r_values'])}"
        )
    if any(r % 2 == 0 for r in p["r_values"]):
        return f"parameter 'r_values' = {list(p['r_values'])} is not allowed: r must be odd"
    if max(p["r_values"]) * p["k"] > p["d"]:
        return f"parameter 'd' = {p['d']} is not allowed: it must be at least r k"
    if p["uniform_k"] % 2:
        return f"parameter 'uniform_k' = {p['uniform_k']} is not allowed: B.53 needs k even"
    if p["uniform_d"] % 2 == 0 or p["enum_d"] % 2 == 0:
        return "parameters 'uniform_d' and 'enum_d' must be odd (Majority's coefficients)"
    if p["uniform_k"] + 1 > p["enum_d"]:
        return f"parameter 'enum_d' = {p['enum_d']} is not allowed: it must exceed uniform_k"
    return None


def _snap_parities(v: dict, t: float) -> dict:
    """Between the presets: every ``r`` odd, ``uniform_k`` even, ``uniform_d`` and ``enum_d``
    odd."""
    v["r_values"] = list(dict.fromkeys(nearest_int(r, _odd) for r in v["r_values"]))
    v["uniform_k"] = nearest_int(v["uniform_k"], _even, low=2)
    for name in ("uniform_d", "enum_d"):
        v[name] = nearest_int(v[name], _odd)
    return v


PARITIES = register_chapter(
    Chapter(
        id="gradient-parities",
        title="Parities: structured inputs, uniform inputs, and fixed features",
        notebook="book/gradient-features/parities.md",
        params={
            "d": Int(2, 100_000, doc="input dimension of structured parity"),
            "k": Int(1, 1000, doc="block size (odd)"),
            "r_values": ListOf(Int(1, 99), min_len=1, doc="numbers of blocks r (odd)"),
            "p_A": Float(0.0, 0.5, doc="weight of each structured pattern X_{j,+-}"),
            "p_o": Float(0.0, 0.5, doc="background: P(phi_l = +1) = P(phi_l = -1) = p_o"),
            "gt_k": ListOf(Int(1, 15), min_len=1, doc="odd k at which (B.469) is enumerated"),
            "gt_r": ListOf(Int(1, 5), min_len=1, doc="odd r at which (B.469) is enumerated"),
            "m": Int(2, 1_000_000, doc="neurons per block of (3.9); the network has 4m"),
            "n": Int(10, 10_000_000, doc="training points per seed"),
            "n_test": Int(100, 10_000_000, doc="test points per seed"),
            "seeds": Int(2, 1000, doc="independent seeds"),
            "eta1": Float(0.0, 1e6, low_open=True, doc="first step size, lambda = 1/eta"),
            "b_scale": Float(0.0, 100.0, low_open=True, doc="b~ = b_scale sqrt(r k log d) sigma_w"),
            "steps": Int(1, 1_000_000, doc="Adam steps after the first step, every method"),
            "lr": Float(0.0, 10.0, low_open=True, doc="Adam learning rate"),
            "batch": Int(1, 1_000_000, doc="minibatch size"),
            "margin": Float(0.0, 1.0, doc="accuracy gap (fixed in advance) the predictions test"),
            "enum_d": Int(3, 17, doc="odd dimension of the exact uniform-parity enumeration"),
            "uniform_d": Int(3, 1001, doc="odd dimension of the uniform-parity run"),
            "uniform_k": Int(2, 20, doc="even parity degree of the uniform-parity run"),
            "uniform_n": Int(100, 100_000_000, doc="samples of the uniform-parity first step"),
            "uniform_m": Int(2, 1_000_000, doc="neurons of the uniform-parity run"),
        },
        presets={
            "smoke": dict(
                d=50,
                k=5,
                r_values=[1, 3],
                p_A=0.1,
                p_o=0.05,
                gt_k=[1, 3, 5],
                gt_r=[1, 3],
                m=64,
                n=2000,
                n_test=4000,
                seeds=3,
                eta1=2.0,
                b_scale=1.0,
                steps=200,
                lr=1e-2,
                batch=256,
                margin=0.05,
                enum_d=9,
                uniform_d=15,
                uniform_k=2,
                uniform_n=20_000,
                uniform_m=64,
            ),
            "default": dict(
                d=100,
                k=5,
                r_values=[1, 3],
                p_A=0.1,
                p_o=0.05,
                gt_k=[1, 3, 5, 7],
                gt_r=[1, 3],
                m=128,
                n=10_000,
                n_test=10_000,
                seeds=5,
                eta1=2.0,
                b_scale=1.0,
                steps=300,
                lr=1e-2,
                batch=256,
                margin=0.05,
                enum_d=13,
                uniform_d=21,
                uniform_k=2,
                uniform_n=100_000,
                uniform_m=128,
            ),
            "paper": dict(
                d=200,
                k=5,
                r_values=[1, 3, 5],
                p_A=0.1,
                p_o=0.05,
                gt_k=[1, 3, 5, 7, 9],
                gt_r=[1, 3],
                m=2048,
                n=100_000,
                n_test=50_000,
                seeds=10,
                eta1=2.0,
                b_scale=1.0,
                steps=2000,
                lr=1e-2,
                batch=1024,
                margin=0.05,
                enum_d=17,
                uniform_d=41,
                uniform_k=4,
                uniform_n=2_000_000,
                uniform_m=2048,
            ),
        },
        checks=(_check_parities,),
        snap=_snap_parities,
    )
)
