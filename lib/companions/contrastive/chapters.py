"""The part's chapters: ids, parameters (with the reason for each default) and presets.

Presets: ``smoke`` (< 60 s on 2 cores), ``default`` (the rendered book, < 5 min), ``paper`` (the
sizes of [001] Appendix A.2: ``d1 = 500``, 100 repeats; ``d = 9`` of [001] Exp. 5 and [000] Fig. 1;
``m = 30`` of [000] Fig. 1, since [001] gives no m; a GPU is expected).
"""

from __future__ import annotations

from companions.contrastive.training import Setup
from companions.scale import Chapter, Choice, Float, Int, ListOf, register_chapter

DATA = {
    "d": Int(2, 4096, doc="number of features (dictionary atoms); 9 in both papers' experiments"),
    "n_maj": Int(
        1, 4095, doc="number of majority features; 5 of 9 in [000] Fig. 1 and [001] Exp. 5"
    ),
    "eps_max": Float(
        0, 100, low_open=True, doc="frequency of majority features (Definition 3.1); 1"
    ),
    "eps_min": Float(0, 100, low_open=True, doc="frequency of minority features (Definition 3.1)"),
    "d1": Int(3, 1_000_000, doc="token dimension; 500 in [001] A.2"),
    "L": Int(1, 1024, doc="tokens per sample (unstated; 4)"),
    "p0": Float(
        0,
        1,
        low_open=True,
        doc=(
            "activation probability of a feature with eps = 1 (theory: "
            "loglog d / d, too small at d = 9)"
        ),
    ),
    "mag_low": Float(
        0, 1, high_open=True, doc="token magnitudes |z| ~ U[mag_low, 1] (Assumption 3.2: |z| <= 1)"
    ),
    "token_q": Float(
        0,
        1,
        low_open=True,
        doc=(
            "augmentation: probability that a token of a view carries an active feature "
            "(>= 1 token)"
        ),
    ),
    "nsr": Float(0, 1000, doc="noise-to-signal ratio sigma^2 d1 ([001] A.2)"),
    "m": Int(
        1,
        100_000,
        doc="number of neurons; 30 in [000] Fig. 1 ([001] gives no m; its Fig. 6 shows 24)",
    ),
    "gamma": Float(
        0,
        1,
        high_open=True,
        doc="slack constant of Definition B.1 (28); [000] asks gamma c0 < 0.001",
    ),
}

TRAIN = {
    "sigma0": Float(0, 10, low_open=True, doc="initialisation scale w ~ N(0, sigma0^2 I)"),
    "K": Int(2, 1_000_000, doc="batch size (pairs per step, fresh each step)"),
    "n_neg": Int(0, 1_000_000, doc="negatives per anchor, in-batch; 0 means all K - 1"),
    "tau": Float(0, 1e6, low_open=True, doc="InfoNCE temperature"),
    "grad_scale": Choice(
        ("paper", "standard"),
        doc=(
            "'paper': the update of eq (21) (= tau x true gradient); "
            "'standard': the true gradient of (1)"
        ),
    ),
    "eta": Float(0, 100, low_open=True, doc="learning rate"),
    "lam": Float(0, 1, doc="weight decay lambda (decoupled: w <- (1 - eta lam) w - eta g)"),
    "attention": Choice(
        ("uniform", "softmax"),
        doc="frozen identity attention: uniform (exact closed forms) or softmax",
    ),
    "att_scale": Float(0, 1e6, doc="softmax score scale (used with attention='softmax')"),
    "steps": Int(1, 10_000_000, doc="gradient steps"),
    "repeats": Int(
        1, 100_000, doc="independent runs (own dictionary, initialisation, data) per setting"
    ),
}

BIAS = {
    "c_b": Float(
        0,
        100,
        low_open=True,
        doc="bias constant: b(T1) = c_b sqrt(2 log d / d) ||w(T1)||; 1 in the theory, 0.3 at d = 9",
    ),
    "t1_rule": Choice(
        ("mean", "min"),
        doc="T1 detection: mean or min over neurons of ||M^T w||^2/||w||^2 >= 1/2 ((34) asks min)",
    ),
}


EVAL = {  # the evaluations of [001] Experiments 3-4, and how many runs train at once
    "test_pairs": Int(10, 10_000_000, doc="test pairs (5000 in [001] Exps 3-4)"),
    "train_pairs": Int(
        10, 10_000_000, doc="training pairs of the regression head (1000 in [001] Exp 4)"
    ),
    "reg_target": Choice(
        ("mean", "support"),
        doc="Experiment 4 target (unstated): signed mean latent code, or feature indicators",
    ),
    "chunk": Int(1, 1_000_000, doc="runs trained at once (memory)"),
}


def _check(p):
    if p["n_maj"] >= p["d"]:
        return f"parameter 'n_maj' = {p['n_maj']} is not allowed: expected n_maj < d = {p['d']}"
    if p["d1"] <= p["d"]:
        return f"parameter 'd1' = {p['d1']} is not allowed: expected d1 > d = {p['d']}"
    if p["eps_min"] > p["eps_max"]:
        return (
            f"parameter 'eps_min' = {p['eps_min']} is not allowed: "
            f"expected eps_min <= eps_max = {p['eps_max']}"
        )
    if "K" in p and p["n_neg"] > p["K"] - 1:
        return (
            f"parameter 'n_neg' = {p['n_neg']} is not allowed: "
            f"expected n_neg <= K - 1 = {p['K'] - 1} (0 means K - 1)"
        )
    for key in ("sweep_eps", "exp34_eps", "accel_eps"):
        if key in p and max(p[key]) > p["eps_max"]:
            return (
                f"parameter '{key}' = {list(p[key])} is not allowed: "
                f"every value must be <= eps_max = {p['eps_max']}"
            )
    if "alpha" in p and int(p["alpha"] * min(list(p.get("m_grid", [])) + [p["m"]]) + 1e-9) < 1:
        return (
            f"parameter 'alpha' = {p['alpha']} is not allowed: "
            "floor(alpha m) must be >= 1 for every width "
            f"(m = {p['m']}, m_grid = {list(p.get('m_grid', []))}); Appendix F asks alpha >= 1/m"
        )
    if "d_grid" in p and min(p["d_grid"]) < 3:
        return (
            f"parameter 'd_grid' = {list(p['d_grid'])} is not allowed: "
            "every d must be >= 3 (loglog d > 0)"
        )
    return None


def setup_from(cfg, **override) -> Setup:
    """The :class:`Setup` of a chapter's resolved parameters (``override`` replaces fields)."""
    fields = {
        k: cfg[k]
        for k in (
            "d",
            "n_maj",
            "eps_max",
            "d1",
            "L",
            "p0",
            "mag_low",
            "token_q",
            "m",
            "sigma0",
            "K",
            "tau",
            "grad_scale",
            "eta",
            "lam",
            "attention",
            "att_scale",
        )
    }
    fields["n_neg"] = cfg["n_neg"] or cfg["K"] - 1
    for key in ("c_b", "t1_rule"):
        if key in cfg:
            fields[key] = cfg[key]
    fields.update(override)
    return Setup(**fields)


# Shared values. Reasons: d, n_maj, m, d1 from the papers' experiments; L = 4, p0 = 0.25,
# mag_low = 0.5, token_q = 1 make one or two features active per sample at d = 9 (data.py);
# NSR 0.45 is [001] A.2's middle level; gamma = 0.01 ("a small constant").
_DATA = dict(
    d=9,
    n_maj=5,
    eps_max=1.0,
    eps_min=0.3,
    d1=500,
    L=4,
    p0=0.25,
    mag_low=0.5,
    token_q=1.0,
    nsr=0.45,
    m=30,
    gamma=0.01,
)
# tau = 1 and the paper's gradient convention (c_tau = 1); eta = 0.02 and sigma0 = 1e-3 put T1 near
# 50 steps; lam = 1e-3 is small against the feature rates (2.25 eps per unit eta) but keeps norms
# bounded.
_TRAIN = dict(
    sigma0=1e-3,
    K=128,
    n_neg=0,
    tau=1.0,
    grad_scale="paper",
    eta=0.02,
    lam=1e-3,
    attention="uniform",
    att_scale=0.0,
)

SETTING = register_chapter(
    Chapter(
        id="contrastive-setting",
        title="Setting and initial geometry",
        notebook="book/contrastive/setting.md",
        params={
            **DATA,
            "mc_pairs": Int(100, 100_000_000, doc="pairs drawn to check the generator's moments"),
            "mc_draws": Int(
                100, 100_000_000, doc="Gaussian draws for the lucky-neuron probability"
            ),
            "d_grid": ListOf(
                Int(3, 1_000_000), min_len=2, doc="d values of the exact Definition B.1 table"
            ),
            "rho_grid": ListOf(
                Float(0, 1, low_open=True), min_len=2, doc="ratios eps_min / eps_max of that table"
            ),
        },
        presets={
            "smoke": dict(
                _DATA,
                d1=200,
                mc_pairs=20_000,
                mc_draws=20_000,
                d_grid=[9, 100, 1000],
                rho_grid=[0.5, 0.7, 1.0],
            ),
            "default": dict(
                _DATA,
                mc_pairs=100_000,
                mc_draws=200_000,
                d_grid=[9, 100, 1000],
                rho_grid=[0.3, 0.5, 0.7, 0.9, 1.0],
            ),
            "paper": dict(
                _DATA,
                mc_pairs=2_000_000,
                mc_draws=5_000_000,
                d_grid=[9, 100, 1000, 10_000],
                rho_grid=[0.1, 0.3, 0.5, 0.7, 0.9, 1.0],
            ),
        },
        checks=(_check,),
    )
)

STAGE1 = register_chapter(
    Chapter(
        id="contrastive-stage1",
        title="Stage 1: the linear regime",
        notebook="book/contrastive/stage1.md",
        params={
            **DATA,
            **TRAIN,
            "d1_values": ListOf(
                Int(10, 1_000_000), min_len=2, doc="token dimensions of the T1 scaling runs"
            ),
        },
        presets={
            # the rate check of the spec's prototype: K = 256, eta = 0.01, lam = 0, sigma0 = 1e-4
            "smoke": dict(
                _DATA,
                **dict(_TRAIN, K=256, eta=0.01, lam=0.0, sigma0=1e-4, steps=120, repeats=2),
                d1=300,
                d1_values=[50, 200, 800],
            ),
            "default": dict(
                _DATA,
                **dict(_TRAIN, K=256, eta=0.01, lam=0.0, sigma0=1e-4, steps=150, repeats=4),
                d1_values=[50, 200, 800, 3200],
            ),
            "paper": dict(
                _DATA,
                **dict(_TRAIN, K=256, eta=0.01, lam=0.0, sigma0=1e-4, steps=150, repeats=100),
                d1_values=[50, 200, 800, 3200, 12800],
            ),
        },
        checks=(_check,),
    )
)

STAGE2 = register_chapter(
    Chapter(
        id="contrastive-stage2",
        title="Stage 2: the bias switches on",
        notebook="book/contrastive/stage2.md",
        params={**DATA, **TRAIN, **BIAS},
        presets={
            "smoke": dict(_DATA, **_TRAIN, c_b=0.3, t1_rule="mean", d1=200, steps=700, repeats=2),
            "default": dict(_DATA, **_TRAIN, c_b=0.3, t1_rule="mean", steps=1200, repeats=4),
            "paper": dict(
                _DATA,
                **dict(_TRAIN, K=256, n_neg=0),
                c_b=0.3,
                t1_rule="mean",
                steps=3000,
                repeats=100,
            ),
        },
        checks=(_check,),
    )
)

STAGE3 = register_chapter(
    Chapter(
        id="contrastive-stage3",
        title="Stage 3 and the effect of imbalance",
        notebook="book/contrastive/stage3.md",
        params={
            **DATA,
            **TRAIN,
            **BIAS,
            "sweep_eps": ListOf(
                Float(0, 100, low_open=True),
                min_len=2,
                doc="eps_min values of Experiments 1-2 (Figs 2-3)",
            ),
            "sweep_nsr": ListOf(Float(0, 1000), doc="NSR values of Experiments 1-2"),
            "exp34_eps": ListOf(
                Float(0, 100, low_open=True),
                min_len=2,
                doc="eps_min values of Experiments 3-4 (Figs 4-5)",
            ),
            "exp34_nsr": ListOf(Float(0, 1000), doc="NSR values of Experiments 3-4"),
            **EVAL,
        },
        presets={
            "smoke": dict(
                _DATA,
                **_TRAIN,
                c_b=0.3,
                t1_rule="mean",
                d1=128,
                steps=500,
                repeats=2,  # two seeds: the fewest a standard error needs
                sweep_eps=[0.1, 0.5, 1.0],
                sweep_nsr=[0.45],
                exp34_eps=[0.05, 0.5],
                exp34_nsr=[1.25],
                test_pairs=1000,
                train_pairs=400,
                reg_target="mean",
                chunk=64,
            ),
            "default": dict(
                _DATA,
                **_TRAIN,
                c_b=0.3,
                t1_rule="mean",
                steps=800,
                repeats=4,  # four seeds per setting: t = 3.18 for the trend decisions
                sweep_eps=[0.1, 0.4, 0.7, 1.0],
                sweep_nsr=[0.05, 1.25],
                exp34_eps=[0.05, 0.25, 0.5],
                exp34_nsr=[1.25],
                test_pairs=2000,
                train_pairs=1000,
                reg_target="mean",
                chunk=64,
            ),
            "paper": dict(
                _DATA,
                **dict(_TRAIN, K=256),
                c_b=0.3,
                t1_rule="mean",
                steps=3000,
                repeats=100,
                sweep_eps=[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0],
                sweep_nsr=[0.05, 0.45, 1.25],
                exp34_eps=[0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5],
                exp34_nsr=[0.45, 1.25, 2.8125, 5.0],
                test_pairs=5000,
                train_pairs=1000,
                reg_target="mean",
                chunk=500,
            ),
        },
        checks=(_check,),
    )
)

PRUNING = register_chapter(
    Chapter(
        id="contrastive-pruning",
        title="Pruning reinforces minority features",
        notebook="book/contrastive/pruning.md",
        params={
            **DATA,
            **TRAIN,
            **BIAS,
            "alpha": Float(
                0,
                1,
                high_open=True,
                doc="pruning ratio: floor(alpha m) neurons masked (Algorithm 1 line 4)",
            ),
            "every": Int(
                1,
                10_000_000,
                doc=(
                    "steps between mask updates (Algorithm 1: 1, "
                    "'at each iteration'; the text: 'at each epoch')"
                ),
            ),
            "warm_steps": Int(
                1,
                10_000_000,
                doc="vanilla steps before pruning starts (Theorem F.1's T4: after convergence)",
            ),
            "window": Int(
                2,
                10_000_000,
                doc="steps after the checkpoint, with and without pruning (Theorem 3.2 (a), (b))",
            ),
            "accel_eps": ListOf(
                Float(0, 100, low_open=True), min_len=2, doc="eps_min values of the warm-start runs"
            ),
            "mech_batches": Int(1, 100_000, doc="fresh batches of K pairs for Lemmas F.1-F.2"),
            "sweep_eps": ListOf(
                Float(0, 100, low_open=True),
                min_len=2,
                doc="eps_min values of Figs 2-5 with and without pruning",
            ),
            "sweep_nsr": ListOf(
                Float(0, 1000), doc="NSR values of Figs 2-5 with and without pruning"
            ),
            "test_pairs": Int(10, 10_000_000, doc="test pairs (5000 in [001] Exps 3-4)"),
            "train_pairs": Int(
                10, 10_000_000, doc="training pairs of the regression head (1000 in [001] Exp 4)"
            ),
            "m_grid": ListOf(
                Int(2, 100_000),
                min_len=1,
                doc="widths m of the 'what does Algorithm 1 prune' sweep",
            ),
            **EVAL,
        },
        presets={
            "smoke": dict(
                _DATA,
                **_TRAIN,
                c_b=0.3,
                t1_rule="mean",
                d1=128,
                steps=500,
                repeats=1,
                alpha=0.1,
                every=1,
                warm_steps=600,
                window=150,
                accel_eps=[0.3, 0.5],
                mech_batches=6,
                sweep_eps=[0.1, 0.5, 1.0],
                sweep_nsr=[0.45],
                test_pairs=1000,
                train_pairs=400,
                reg_target="mean",
                m_grid=[30, 60],
                chunk=64,
            ),
            "default": dict(
                _DATA,
                **_TRAIN,
                c_b=0.3,
                t1_rule="mean",
                steps=800,
                repeats=2,
                alpha=0.1,
                every=1,
                warm_steps=1200,
                window=300,
                accel_eps=[0.3, 0.4, 0.5],
                mech_batches=20,
                sweep_eps=[0.1, 0.3, 0.5, 0.7, 1.0],
                sweep_nsr=[0.45],
                test_pairs=2000,
                train_pairs=1000,
                reg_target="mean",
                m_grid=[30, 60, 120],
                chunk=64,
            ),
            "paper": dict(
                _DATA,
                **dict(_TRAIN, K=256),
                c_b=0.3,
                t1_rule="mean",
                steps=3000,
                repeats=100,
                alpha=0.1,
                every=1,
                warm_steps=3000,
                window=1000,
                accel_eps=[0.2, 0.3, 0.4, 0.5],
                mech_batches=100,
                sweep_eps=[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0],
                sweep_nsr=[0.05, 0.45, 1.25],
                test_pairs=5000,
                train_pairs=1000,
                reg_target="mean",
                m_grid=[30, 60, 120, 240],
                chunk=500,
            ),
        },
        checks=(_check,),
    )
)
