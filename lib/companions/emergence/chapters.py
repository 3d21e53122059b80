"""The chapters of the part "Feature emergence from inputs" and their parameters (see each
notebook)."""

from __future__ import annotations

from companions.scale import Chapter, Choice, Float, Int, ListOf, nearest_int, register_chapter

TARGET = register_chapter(
    Chapter(
        id="emergence-target",
        title="A network that represents the target (Lemma 2.5)",
        notebook="book/emergence/target-network.md",
        params={
            "k_max": Int(1, 9, doc="largest k of the exhaustive exact check of Lemma 2.5"),
            "mu_denominator": Int(
                1, 64, doc="mu runs over {0, 1/q, ..., k} with q = mu_denominator"
            ),
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
        checks=(
            lambda p: (
                None
                if p["k"] <= p["D"] <= p["d"]
                else (
                    f"parameters 'k' = {p['k']}, 'D' = {p['D']}, "
                    f"'d' = {p['d']} are not allowed: need k <= D <= d"
                )
            ),
        ),
    )
)


def _check_first_steps(p):
    if not p["k"] <= p["D"] <= p["d"]:
        return (
            f"parameters 'k' = {p['k']}, 'D' = {p['D']}, "
            f"'d' = {p['d']} are not allowed: need k <= D <= d"
        )
    if p["k"] % 2 == 0 or p["oracle_k"] % 2 == 0:
        return (
            f"parameters 'k' = {p['k']} and 'oracle_k' = {p['oracle_k']} "
            "must be odd (parity labels of D_A^mix)"
        )
    if not p["oracle_k"] < p["oracle_D"]:
        return (
            f"parameter 'oracle_D' = {p['oracle_D']} must exceed "
            f"oracle_k = {p['oracle_k']} (background patterns)"
        )
    return None


FIRST_STEPS = register_chapter(
    Chapter(
        id="emergence-first-steps",
        title="Feature emergence in the first steps (Lemma 2.6, Lemmas A.9-A.17)",
        notebook="book/emergence/first-steps.md",
        params={
            "d": Int(2, 100_000, doc="input dimension"),
            "D": Int(2, 100_000, doc="number of dictionary patterns"),
            "k": Int(1, 99, doc="number of class-relevant patterns (odd: parity labels)"),
            "p_o": Float(
                0.0,
                0.5,
                low_open=True,
                doc="background pattern probability (weight of the uniform part)",
            ),
            "m": Int(1, 100_000, doc="half the width: the network has 2m neurons"),
            "n": Int(10, 10_000_000, doc="training sample (the batch of the first two steps)"),
            "n_test": Int(10, 10_000_000, doc="test sample"),
            "schedule": Choice(
                ("A.214", "A.274"),
                doc="first-step schedule: Lemma A.17 (A.214) or Theorem A.20 (A.274)",
            ),
            "probe_steps": Int(1, 1_000_000, doc="Adam steps of the raw-feature probe"),
            "oracle_D": Int(2, 16, doc="D of the exact population (enumerated support)"),
            "oracle_k": Int(1, 15, doc="k of the exact population"),
            "oracle_m": Int(1, 1000, doc="m of the exact population run"),
            "seeds": Int(2, 100, doc="independent samples and initialisations of the two steps"),
        },
        presets={
            "smoke": dict(
                d=64,
                D=32,
                k=5,
                p_o=0.5,
                m=64,
                n=5000,
                n_test=2000,
                schedule="A.214",
                probe_steps=100,
                oracle_D=10,
                oracle_k=3,
                oracle_m=8,
                seeds=2,
            ),
            "default": dict(
                d=100,
                D=50,
                k=5,
                p_o=0.5,
                m=100,
                n=10000,
                n_test=5000,
                schedule="A.214",
                probe_steps=300,
                oracle_D=14,
                oracle_k=5,
                oracle_m=16,
                seeds=3,
            ),
            "paper": dict(
                d=500,
                D=100,
                k=5,
                p_o=0.5,
                m=300,
                n=50000,
                n_test=10000,
                schedule="A.214",
                probe_steps=600,
                oracle_D=16,
                oracle_k=5,
                oracle_m=32,
                seeds=5,
            ),
        },
        checks=(_check_first_steps,),
    )
)


def _check_fixed(p):
    if not p["k"] <= p["D"] <= p["d"]:
        return (
            f"parameters 'k' = {p['k']}, 'D' = {p['D']}, "
            f"'d' = {p['d']} are not allowed: need k <= D <= d"
        )
    if p["k"] % 2 == 0 or any(v % 2 == 0 for v in p["bound_k_values"]):
        return (
            "parameters 'k' and 'bound_k_values' must be odd (parity labels); "
            f"got {p['k']}, {list(p['bound_k_values'])}"
        )
    if not p["walsh_k"] <= p["walsh_D"]:
        return f"parameter 'walsh_k' = {p['walsh_k']} must be at most walsh_D = {p['walsh_D']}"
    if p["kernel_n"] > p["n"]:
        return f"parameter 'kernel_n' = {p['kernel_n']} must be at most n = {p['n']}"
    return None


def _snap_fixed(v: dict, t: float) -> dict:
    """Between the presets (``companions.scale.between``): every ``k`` odd (parity labels)."""
    v["k"] = nearest_int(v["k"], lambda n: n % 2 == 1)
    v["bound_k_values"] = list(
        dict.fromkeys(nearest_int(n, lambda n: n % 2 == 1) for n in v["bound_k_values"])
    )
    return v


FIXED = register_chapter(
    Chapter(
        id="emergence-fixed-features",
        title="Fixed features cannot learn it (Theorem 2.2, Corollary 2.3)",
        notebook="book/emergence/fixed-features.md",
        params={
            "d": Int(2, 100_000, doc="input dimension of the comparison"),
            "D": Int(2, 100_000, doc="number of dictionary patterns"),
            "k": Int(1, 99, doc="relevant patterns (odd)"),
            "m": Int(1, 100_000, doc="half the width (2m neurons, N = 2m random features)"),
            "n": Int(10, 10_000_000, doc="training sample"),
            "n_test": Int(10, 10_000_000, doc="test sample"),
            "steps": Int(
                1, 1_000_000, doc="steps after the first two (network), and steps of RF / NTK"
            ),
            "batch": Int(1, 1_000_000, doc="minibatch of the later steps"),
            "kernel_n": Int(10, 100_000, doc="training points of the kernel method"),
            "walsh_D": Int(2, 16, doc="cube dimension of the exact Fourier check"),
            "walsh_k": Int(1, 16, doc="parity degree of the exact Fourier check"),
            "walsh_N": Int(1, 4096, doc="number of features of the exact Fourier check"),
            "bound_k_values": ListOf(
                Int(1, 31), min_len=1, doc="k of the norm-constrained RF check (D = d = 16k)"
            ),
            "bound_B": Float(
                0.0, 1e6, low_open=True, doc="norm bound B of the constrained RF heads"
            ),
            "seeds": Int(2, 100, doc="independent runs of the comparison (data, init, training)"),
        },
        presets={
            "smoke": dict(
                d=64,
                D=32,
                k=5,
                m=64,
                n=6000,
                n_test=2000,
                steps=400,
                batch=1000,
                kernel_n=1500,
                walsh_D=10,
                walsh_k=3,
                walsh_N=8,
                bound_k_values=[5],
                bound_B=1.0,
                seeds=2,
            ),
            "default": dict(
                d=100,
                D=50,
                k=5,
                m=100,
                n=10000,
                n_test=5000,
                steps=600,
                batch=1000,
                kernel_n=3000,
                walsh_D=12,
                walsh_k=3,
                walsh_N=16,
                bound_k_values=[3, 5, 7],
                bound_B=1.0,
                seeds=3,
            ),
            "paper": dict(
                d=500,
                D=100,
                k=5,
                m=300,
                n=50000,
                n_test=10000,
                steps=600,
                batch=1000,
                kernel_n=10000,
                walsh_D=14,
                walsh_k=5,
                walsh_N=32,
                bound_k_values=[3, 5, 7, 9],
                bound_B=1.0,
                seeds=5,
            ),
        },
        checks=(_check_fixed,),
        snap=_snap_fixed,
    )
)


def _check_structure(p):
    if not p["k"] <= p["D"] <= p["d"]:
        return (
            f"parameters 'k' = {p['k']}, 'D' = {p['D']}, "
            f"'d' = {p['d']} are not allowed: need k <= D <= d"
        )
    if p["k"] % 2 == 0 or p["oracle_k"] % 2 == 0:
        return (
            f"parameters 'k' = {p['k']} and "
            f"'oracle_k' = {p['oracle_k']} must be odd (parity labels)"
        )
    if not p["sq_k"] <= p["sq_D"]:
        return f"parameter 'sq_k' = {p['sq_k']} must be at most sq_D = {p['sq_D']}"
    if not p["oracle_k"] < p["oracle_D"]:
        return f"parameter 'oracle_D' = {p['oracle_D']} must exceed oracle_k = {p['oracle_k']}"
    return None


STRUCTURE = register_chapter(
    Chapter(
        id="emergence-no-structure",
        title="Input structure is necessary (Theorem 2.4)",
        notebook="book/emergence/no-structure.md",
        params={
            "d": Int(2, 100_000, doc="input dimension"),
            "D": Int(2, 100_000, doc="number of dictionary patterns"),
            "k": Int(1, 99, doc="relevant patterns (odd)"),
            "m": Int(1, 100_000, doc="half the width"),
            "n": Int(10, 10_000_000, doc="training sample"),
            "n_test": Int(10, 10_000_000, doc="test sample"),
            "steps": Int(1, 1_000_000, doc="steps after the first two"),
            "batch": Int(1, 1_000_000, doc="minibatch of the later steps"),
            "sq_D": Int(2, 14, doc="D of the exact pairwise-uncorrelation check"),
            "sq_k": Int(1, 14, doc="k of the exact pairwise-uncorrelation check"),
            "oracle_D": Int(2, 16, doc="D of the exact population gradient"),
            "oracle_k": Int(1, 15, doc="k of the exact population gradient"),
            "seeds": Int(2, 100, doc="independent runs of the training comparison"),
        },
        presets={
            "smoke": dict(
                d=64,
                D=32,
                k=5,
                m=64,
                n=6000,
                n_test=2000,
                steps=400,
                batch=1000,
                sq_D=10,
                sq_k=3,
                oracle_D=10,
                oracle_k=3,
                seeds=2,
            ),
            "default": dict(
                d=100,
                D=50,
                k=5,
                m=100,
                n=10000,
                n_test=5000,
                steps=600,
                batch=1000,
                sq_D=12,
                sq_k=5,
                oracle_D=14,
                oracle_k=5,
                seeds=3,
            ),
            "paper": dict(
                d=500,
                D=100,
                k=5,
                m=300,
                n=50000,
                n_test=10000,
                steps=600,
                batch=1000,
                sq_D=14,
                sq_k=5,
                oracle_D=16,
                oracle_k=5,
                seeds=5,
            ),
        },
        checks=(_check_structure,),
    )
)


def _check_experiments(p):
    if not p["k"] <= p["D"] <= min(p["d"], *p["d_values"]):
        return (
            "parameters 'k', 'D', 'd', 'd_values' are not allowed: need k <= D <= every d "
            f"(got k={p['k']}, D={p['D']}, d={p['d']}, d_values={list(p['d_values'])})"
        )
    if p["k"] % 2 == 0:
        return f"parameter 'k' = {p['k']} must be odd (parity labels)"
    if not p["interval_k"] <= p["interval_D"] <= p["d"]:
        return (
            f"parameters 'interval_k' = {p['interval_k']}, "
            f"'interval_D' = {p['interval_D']} need interval_k <= interval_D <= d"
        )
    if len(p["n_values"]) != len(p["m_values"]):
        return (
            "parameters 'n_values' and 'm_values' must have the same "
            f"length (got {len(p['n_values'])} and {len(p['m_values'])})"
        )
    if any(not 0 < r < 1 for r in p["ratios"]):
        return f"parameter 'ratios' = {list(p['ratios'])} must lie in (0, 1)"
    return None


EXPERIMENTS = register_chapter(
    Chapter(
        id="emergence-experiments",
        title="The source's experiments (Tables A.1-A.5)",
        notebook="book/emergence/experiments.md",
        params={
            "d": Int(2, 100_000, doc="input dimension of Table A.1 (and A.4, A.5)"),
            "D": Int(2, 100_000, doc="dictionary size"),
            "k": Int(1, 99, doc="relevant patterns (odd, parity)"),
            "m": Int(1, 100_000, doc="half the width"),
            "n": Int(10, 10_000_000, doc="training sample"),
            "n_test": Int(10, 10_000_000, doc="test sample"),
            "steps": Int(1, 1_000_000, doc="steps T after the first two (and of RF / NTK)"),
            "batch": Int(1, 1_000_000, doc="minibatch of the later steps"),
            "probe_steps": Int(1, 1_000_000, doc="Adam steps of the raw One/Two-Step probes"),
            "seeds": Int(2, 100, doc="independent runs averaged (the source: 5)"),
            "interval_D": Int(2, 100_000, doc="D of the interval labeling (Table A.2)"),
            "interval_k": Int(1, 99, doc="k of the interval labeling; y = +1 iff S in [2k/3, k]"),
            "interval_m": Int(1, 100_000, doc="half the width for Table A.2"),
            "interval_steps": Int(1, 1_000_000, doc="T for Table A.2"),
            "d_values": ListOf(Int(2, 100_000), max_len=2, doc="input dimensions of Table A.3"),
            "ratios": ListOf(
                Float(0.0, 1.0, low_open=True, high_open=True),
                max_len=2,
                doc="negative-class fractions of Table A.4",
            ),
            "n_values": ListOf(Int(10, 10_000_000), max_len=2, doc="training sizes of Table A.5"),
            "m_values": ListOf(
                Int(1, 100_000),
                max_len=2,
                doc="half-widths for those sizes (the source shrinks m to 50 at n = 10,000)",
            ),
        },
        presets={
            "smoke": dict(
                d=48,
                D=24,
                k=5,
                m=32,
                n=3000,
                n_test=1000,
                steps=300,
                batch=1000,
                probe_steps=100,
                seeds=2,
                interval_D=24,
                interval_k=15,
                interval_m=16,
                interval_steps=100,
                d_values=[24, 96],
                ratios=[0.8],
                n_values=[1500],
                m_values=[8],
            ),
            "default": dict(
                d=100,
                D=50,
                k=5,
                m=100,
                n=10000,
                n_test=3000,
                steps=600,
                batch=1000,
                probe_steps=300,
                seeds=2,
                interval_D=50,
                interval_k=15,
                interval_m=50,
                interval_steps=200,
                d_values=[50, 200],
                ratios=[0.8, 0.9],
                n_values=[5000, 2000],
                m_values=[100, 17],
            ),
            "paper": dict(
                d=500,
                D=100,
                k=5,
                m=300,
                n=50000,
                n_test=10000,
                steps=600,
                batch=1000,
                probe_steps=600,
                seeds=5,
                interval_D=100,
                interval_k=30,
                interval_m=100,
                interval_steps=200,
                d_values=[100, 2000],
                ratios=[0.8, 0.9],
                n_values=[25000, 10000],
                m_values=[300, 50],
            ),
        },
        checks=(_check_experiments,),
    )
)
