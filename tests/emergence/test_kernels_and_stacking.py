"""Corollary 2.3's explicit form (the Walsh coefficient of a radial kernel on the cube, the
kernel predictors' RKHS norm), the noisy inputs of Section A.8, and stacked (vectorised) training:
S networks at once get what each gets alone."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
import torch

from companions.emergence import baselines, data, theory
from companions.emergence import network as net

F64 = torch.float64


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


# -- Corollary 2.3 --------------------------------------------------------------------------------
@pytest.mark.parametrize("kernel", ["rbf", "laplace"])
@pytest.mark.parametrize("D,k", [(6, 1), (7, 3), (8, 2)])
def test_radial_walsh_coefficient_against_enumeration(kernel, D, k):
    """E_{x,x'}[chi_A(x) chi_A(x') K(x, x')] over all pairs of the cube, by brute force."""
    scale2, h = 0.3, 0.9
    pts = np.array(list(itertools.product([0, 1], repeat=D)), float)
    hamming = (pts[:, None, :] != pts[None, :, :]).sum(-1)
    K = baselines.KERNELS[kernel](torch.tensor(hamming * scale2), h).numpy()
    for A in ([0], list(range(k)), list(range(D - k, D))):
        if len(A) != k:
            continue
        chi = (2 * pts[:, A] - 1).prod(1)
        brute = float((chi[:, None] * chi[None, :] * K).mean())
        got = theory.radial_walsh_coefficient(kernel, D, k, scale2, h)
        assert got == pytest.approx(brute, rel=1e-10, abs=1e-15)


def test_radial_walsh_coefficient_rbf_is_a_product_and_tiny_for_large_d():
    """The RBF kernel is a product over coordinates: c_k = ((1-q)/2)^k ((1+q)/2)^(D-k), with
    q = exp(-s/(2h^2)); at D = 50 the sum cancels over 14 orders of magnitude."""
    s, h, D, k = 1 / 12.5, math.sqrt(2), 50, 5
    q = math.exp(-s / (2 * h * h))
    want = ((1 - q) / 2) ** k * ((1 + q) / 2) ** (D - k)
    assert theory.radial_walsh_coefficient("rbf", D, k, s, h) == pytest.approx(want, rel=1e-12)
    with pytest.raises(ValueError, match="'kernel'"):
        theory.radial_walsh_coefficient("poly", D, k, s, h)


def test_corollary_2_3_bound_by_hand():
    got = theory.corollary_2_3_bound(rkhs_norm=3.0, c_k=0.01, p_o=0.5)
    assert got == pytest.approx({"eps": 0.3, "uniform part": 0.7, "mixture": 0.35})


def test_the_bound_holds_for_a_kernel_predictor_on_the_cube():
    """Cauchy-Schwarz in the RKHS: a kernel predictor's exact correlation with a parity on the
    uniform cube is at most ||f||_H sqrt(c_k), for either kernel."""
    D, k, scale2 = 7, 3, 1 / 1.75
    pts = torch.tensor(list(itertools.product([0, 1], repeat=D)), dtype=F64)
    x = pts * math.sqrt(scale2)  # squared distances are scale2 times the Hamming distance
    y = (2 * pts[:, :k] - 1).prod(1)
    idx = torch.randperm(len(pts), generator=_gen(3))[:40]
    for kernel in ("rbf", "laplace"):
        kr = baselines.kernel_ridge(x[idx], y[idx], {"all": (x, y)}, kernel, ridge=1e-4)
        corr = float((y * kr["all outputs"]).mean())
        c_k = theory.radial_walsh_coefficient(kernel, D, k, scale2, kr["bandwidth"])
        assert abs(corr) <= kr["rkhs_norm"] * math.sqrt(c_k) * (1 + 1e-9)
        assert abs(corr) > 0.2 * kr["rkhs_norm"] * math.sqrt(c_k)  # and the bound is not loose


def test_kernel_ridge_laplace_matches_numpy():
    g = _gen(4)
    X, Xt = torch.randn(25, 3, generator=g, dtype=F64), torch.randn(10, 3, generator=g, dtype=F64)
    y = torch.sign(X[:, 0] + 0.1)
    r = baselines.kernel_ridge(X, y, {"t": (Xt, torch.sign(Xt[:, 0]))}, "laplace", 0.01, 0.8)
    Xn, Xtn = X.numpy(), Xt.numpy()
    K = np.exp(-np.sqrt(((Xn[:, None] - Xn[None]) ** 2).sum(-1)) / 0.8)
    alpha = np.linalg.solve(K + 0.01 * 25 * np.eye(25), y.numpy())
    Kt = np.exp(-np.sqrt(((Xtn[:, None] - Xn[None]) ** 2).sum(-1)) / 0.8)
    assert np.allclose(r["t outputs"].numpy(), Kt @ alpha)
    assert r["rkhs_norm"] == pytest.approx(math.sqrt(alpha @ K @ alpha))
    assert r["alpha_norm"] == pytest.approx(np.linalg.norm(alpha))
    with pytest.raises(ValueError, match="'kernel'"):
        baselines.kernel_ridge(X, y, {}, "cosine")


# -- Section A.8's noisy inputs -------------------------------------------------------------------
def test_noisy_sample_shift_and_normaliser():
    """<sigma~' sum_A M_j, x> = S - mu + eps_x with eps_x = sum_A <M_j, zeta>, sigma~'^2 =
    sigma~^2 + d sigma_zeta^2; eps_x has variance k sigma_zeta^2."""
    dist = data.parity_mixture(16, 8, k=3, p_o=Fraction(1, 2), generator=_gen(1))
    s = theory.noisy_sample(dist, 0.2, 20000, _gen(2))
    assert s["sigma"] == pytest.approx(math.sqrt(float(dist.sigma2) + 16 * 0.04))
    S = s["phi"][:, list(dist.A)].sum(1)
    proj = s["sigma"] * s["x"] @ dist.signal_direction
    assert torch.allclose(proj, S - float(dist.mu) + s["eps"], atol=1e-10)
    assert float(s["eps"].var()) == pytest.approx(3 * 0.04, rel=0.05)
    assert torch.equal(s["y"], dist.labels(s["phi"]))
    # the Lemma 2.5 network with the noisy normaliser sees (S - mu + eps)/(4k)
    star = theory.target_params(dist, sigma=s["sigma"])
    pre = net.preactivations(star, s["x"]) - star.b
    assert torch.allclose(pre[:, 0], (S - float(dist.mu) + s["eps"]) / 12, atol=1e-10)


# -- stacked training ------------------------------------------------------------------------------
def _stacked_setup(S=3, n=30, d=6, m=4):
    dists = [
        data.parity_mixture(d, 5, k=3, p_o=Fraction(1, 2), generator=_gen(s)) for s in range(S)
    ]
    draws = [dd.sample(n, _gen(10 + s))[:2] for s, dd in enumerate(dists)]
    X, y = torch.stack([t[0] for t in draws]), torch.stack([t[1] for t in draws])
    ps = [
        net.symmetric_init(
            m, d, k=3, sigma_tilde=dd.sigma, gamma=float(dd.gamma), generator=_gen(20 + s)
        )
        for s, dd in enumerate(dists)
    ]
    P = net.Params(*(torch.stack([getattr(p, f) for p in ps]) for f in ("W", "b", "a")))
    return X, y, ps, P


def test_gradients_and_forward_stacked_equal_one_by_one():
    X, y, ps, P = _stacked_setup()
    ps = [net.Params(p.W, p.b, p.a * torch.linspace(0.5, 1.5, len(p.a), dtype=F64)) for p in ps]
    P = net.Params(P.W, P.b, torch.stack([p.a for p in ps]))  # g != 0, so that signs count
    g = net.gradients(P, X, y, 0.1)
    out = net.forward(P, X, 0.1)
    for s, p in enumerate(ps):
        one = net.gradients(p, X[s], y[s], 0.1)
        for f in ("W", "b", "a"):
            assert torch.allclose(getattr(g, f)[s], getattr(one, f), rtol=1e-12, atol=1e-15)
        assert torch.allclose(out[s], net.forward(p, X[s], 0.1), rtol=1e-12, atol=1e-15)
    assert net.accuracy(P, X, y) == [net.accuracy(p, X[s], y[s]) for s, p in enumerate(ps)]


@pytest.mark.parametrize("optimizer", ["adam", "theory"])
def test_train_late_stacked_equals_one_by_one(optimizer):
    X, y, ps, P = _stacked_setup()
    kw = dict(optimizer=optimizer, lr=0.05, lam=0.01, eval_every=2, progress=False)
    got, hist = net.train_late(
        P,
        X,
        y=y,
        steps=5,
        batch=7,
        generator=[_gen(30 + s) for s in range(3)],
        **kw,
        evaluate=lambda q: {"loss": 0.0},
    )
    for s, p in enumerate(ps):
        one, _ = net.train_late(p, X[s], y=y[s], steps=5, batch=7, generator=_gen(30 + s), **kw)
        assert torch.allclose(got.W[s], one.W, rtol=1e-10, atol=1e-14)
        assert torch.allclose(got.a[s], one.a, rtol=1e-10, atol=1e-14)
    assert hist["step"] == [0, 2, 4, 5]


def test_linear_head_and_ntk_stacked_equal_one_by_one():
    X, y, ps, P = _stacked_setup()
    F = net.features(P, X)
    a, _ = baselines.train_linear_head(
        F,
        y,
        steps=6,
        batch=9,
        generator=[_gen(40 + s) for s in range(3)],
        max_norm=0.05,
        progress=False,
    )
    model, _ = baselines.train_ntk(
        P, X, y=y, steps=6, batch=9, generator=[_gen(50 + s) for s in range(3)], progress=False
    )
    for s, p in enumerate(ps):
        one, _ = baselines.train_linear_head(
            F[s], y[s], steps=6, batch=9, generator=_gen(40 + s), max_norm=0.05, progress=False
        )
        assert torch.allclose(a[s], one, rtol=1e-10, atol=1e-14)
        assert float(a[s].norm()) <= 0.05 + 1e-12  # the projection acts per network
        lone, _ = baselines.train_ntk(
            p, X[s], y=y[s], steps=6, batch=9, generator=_gen(50 + s), progress=False
        )
        with torch.no_grad():
            assert torch.allclose(model(X)[s], lone(X[s]), rtol=1e-10, atol=1e-14)


def test_class_weights_per_stacked_row():
    y = torch.tensor([[1.0, -1, -1, -1], [1.0, 1, 1, -1]], dtype=F64)
    w = net.class_weights(y)
    want = torch.tensor([[0.5, 1 / 6, 1 / 6, 1 / 6], [1 / 6, 1 / 6, 1 / 6, 0.5]], dtype=F64)
    assert torch.allclose(w, want)
    with pytest.raises(ValueError, match="single class"):
        net.class_weights(torch.tensor([[1.0, -1], [1.0, 1.0]]))


def test_draw_batch_and_take():
    idx = net.draw_batch(10, 4, [_gen(1), _gen(2)], "cpu")
    assert idx.shape == (2, 4)
    assert torch.equal(idx[1], torch.randint(10, (4,), generator=_gen(2)))
    X = torch.arange(2 * 10 * 3, dtype=F64).reshape(2, 10, 3)
    assert torch.equal(net.take(X, idx)[1], X[1][idx[1]])
    assert net.draw_batch(3, 8, _gen(0), "cpu").shape == (3,)  # capped at n


def test_parseval_check_counts_violations():
    num = theory.integer_features(6, 5, np.random.default_rng(0), L=6)
    assert theory.parseval_check(num, 6, 2)["parseval_violations"] == 0


# -- Theorem 2.1's rate algebra and (A.262) --------------------------------------------------------
def test_theorem_2_1_residuals_vanish_and_a_wrong_rate_would_not():
    import sympy as sp

    r = theory.theorem_2_1_rates()
    assert len(r["residuals"]) == 6 and all(x == 0 for x in r["residuals"])
    k, m, T, _ = r["symbols"]
    wrong = k**2 / (T * m ** sp.Rational(1, 2))  # another late rate than (A.276)'s
    assert sp.simplify(k**4 * wrong**2 * T**2 - k**8 / m ** sp.Rational(2, 3)) != 0


def test_weight_decay_alone_breaks_a262_as_printed():
    """A neuron whose gradient vanishes (inactive on every point) only decays:
    ||w^(t) - w^(2)|| = (1 - (1 - 2 eta lam)^s) ||w^(2)|| after s later steps, which exceeds
    (A.262)'s 2 eta lam ||w^(2)|| + eta^2 t^2 + t |a^(2)| (t = s + 2, a^(2) = 0) when
    ||w^(2)|| is large against eta, while the sum of (A.261), 2 s eta lam ||w^(2)||, holds."""
    eta, lam, w2 = 0.01, 0.5, 1.0
    s = np.arange(1, 40)
    drift = (1 - (1 - 2 * eta * lam) ** s) * w2
    printed = 2 * eta * lam * w2 + eta**2 * (s + 2) ** 2
    assert (drift > printed).any() and (drift <= 2 * s * eta * lam * w2 + 1e-15).all()


# -- the tables' configurations ---------------------------------------------------------------
def test_table_configurations_at_the_source_sizes_and_below():
    from companions.emergence import experiments

    paper = dict(
        d=500, D=100, k=5, m=300, n=50_000, steps=600, interval_D=100, interval_k=30,
        interval_m=100, interval_steps=200, d_values=[100, 2000], ratios=[0.8, 0.9],
        n_values=[25_000, 10_000], m_values=[300, 50],
    )  # fmt: skip
    got = experiments.table_configurations(**paper)
    assert [c["source"] for c in got.values()] == list(experiments.PAPER_TABLES)
    assert all(c["at_source_size"] for c in got.values())
    weighted = {key for key, c in got.items() if c["class_weighted"]}
    assert weighted == {"A.2", "A.4 ratio=0.8", "A.4 ratio=0.9"}
    assert got["A.5 n=10000"]["m"] == 50 and got["A.2"]["steps"] == 200
    small = experiments.table_configurations(**{**paper, "d": 100, "d_values": [50, 200]})
    assert "A.3 d=200" in small and small["A.3 d=200"]["source"] == "A.3 d=2000"
    assert not small["A.1"]["at_source_size"] and not small["A.4 ratio=0.9"]["at_source_size"]
    assert small["A.3 d=200"]["at_source_size"] is False  # 200 is not the source's 2000
    dist = got["A.2"]["make"](_gen(0))
    assert (dist.k, dist.D, dist.d) == (30, 100, 500)
    assert experiments.per_seed_points([{"rf": (0.5, 0.75, 0.1)}], "rf", 70.0) == [5.0]


def test_a29_rate_estimates_by_hand():
    below = torch.tensor([1.0, 0.0, 0.0, 1.0], dtype=F64)
    got = theory.a29_rate_estimates({1 / 16: {"below": below, "bound": 0.25}})
    (est,) = got.values()
    assert list(got) == ["0.0625"]
    assert est.mean == pytest.approx(0.25) and est.n == 4
    assert est.se == pytest.approx((0.5 * 0.5 / 8) ** 0.5)  # Agresti-Coull: p~ = (2 + 2)/(4 + 4)


def test_a29_rate_estimate_of_a_rare_event_is_not_certain():
    """No point below margin 1 in 20,000 does not prove a rate below a bound of 6.3e-5: the
    standard error stays near the rule of three's scale, so the rule cannot decide it."""
    below = torch.zeros(20_000, dtype=F64)
    (est,) = theory.a29_rate_estimates({1 / 32: {"below": below, "bound": 6.334e-5}}).values()
    assert est.mean == pytest.approx(-6.334e-5)
    assert est.se == pytest.approx((2 / 20_004 * (1 - 2 / 20_004) / 20_004) ** 0.5)
    assert est.mean + 1.96 * est.se > 0
