"""Unit tests of companions.contrastive: each one fails on a plausible wrong implementation."""

import math

import pytest
import sympy as sp
import torch

from companions.contrastive import data as cd
from companions.contrastive import metrics as cmet
from companions.contrastive import model as cm
from companions.contrastive import theory as th
from companions.contrastive import training as tr


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_eps_vector_and_probs():
    eps = cd.eps_vector(9, 5, 1.0, 0.3)
    assert eps == [1.0] * 5 + [0.3] * 4
    assert torch.allclose(
        cd.activation_probs(eps, 0.25), torch.tensor([0.25] * 5 + [0.075] * 4, dtype=torch.float64)
    )
    assert float(cd.activation_probs([10.0], 0.25)[0]) == 1.0


def test_dictionary_is_column_orthonormal():
    M = cd.dictionary(3, 50, 7, gen())
    assert torch.allclose(
        M.transpose(-1, -2) @ M, torch.eye(7, dtype=torch.float64).expand(3, 7, 7), atol=1e-12
    )


def test_latents_share_support_and_sign_across_views_and_tokens():
    zx, zy = cd.sample_latents(
        cd.activation_probs([1.0, 0.5, 0.2], 0.5)[None].repeat(2, 1), 400, 4, 0.5, 0.6, gen()
    )
    sx, sy = zx.sum(-2), zy.sum(-2)
    assert torch.equal(sx != 0, sy != 0) and torch.equal(
        torch.sign(sx), torch.sign(sy)
    )  # Assumption 3.4
    sign_tokens = torch.sign(zx)
    assert bool(
        ((sign_tokens == torch.sign(sx).unsqueeze(-2)) | (sign_tokens == 0)).all()
    )  # Assumption 3.2(ii)
    assert float(zx.abs().max()) <= 1.0


def test_kappa_closed_form_matches_monte_carlo():
    for q in (1.0, 0.5):
        probs = cd.activation_probs([1.0, 0.3], 0.25)[None]
        zx, zy = cd.sample_latents(probs, 200_000, 4, 0.5, q, gen(1))
        mc = (zx.sum(-2) * zy.sum(-2)).mean(-2)[0]
        exact = cd.kappa([1.0, 0.3], 0.25, 4, 0.5, q)
        assert torch.allclose(mc, exact, rtol=0.03), (q, mc, exact)


def test_kappa_symbolic_equals_closed_form():
    for L in (1, 3, 4):
        derived, closed, (p, a, q) = th.kappa_symbolic(L)
        assert sp.simplify(derived - closed) == 0
    assert abs(float(closed.subs({p: 0.25, a: 0.5, q: 1})) - 2.25) < 1e-12
    wrong = p * (L * q * (1 + a) / 2) ** 2  # forgetting the conditioning on N >= 1
    assert sp.simplify(derived - wrong) != 0


def test_pooled_batch_has_the_token_mean_law():
    M = cd.dictionary(1, 30, 3, gen())
    probs = cd.activation_probs([1.0, 1.0, 1.0], 0.0001)[None]  # almost no signal: pure noise
    sigma = torch.tensor([0.5])
    pooled = cd.sample_batch(
        M, probs, sigma=sigma, K=20000, L=4, mag_low=0.5, q=1.0, generator=gen(2), pooled=True
    )
    tokens = cd.sample_batch(
        M, probs, sigma=sigma, K=20000, L=4, mag_low=0.5, q=1.0, generator=gen(3), pooled=False
    )
    assert abs(float(pooled.x.var()) - 0.25 / 4) < 0.003
    assert abs(float(tokens.x.mean(-2).var()) - 0.25 / 4) < 0.003


def test_pair_moments_match_kappa_and_the_noise_law(monkeypatch):
    d1, L, nsr = 40, 3, 0.8
    M = cd.dictionary(1, d1, 2, gen(4))
    probs = cd.activation_probs([1.0, 0.3], 0.25)[None]
    sigma = torch.tensor([math.sqrt(nsr / d1)])
    v = torch.randn(d1, generator=gen(5), dtype=torch.float64)
    v = v - M[0] @ (M[0].T @ v)
    v = v / v.norm()
    mc = cd.pair_moments(
        M,
        probs,
        sigma=sigma,
        pairs=50_000,
        L=L,
        mag_low=0.5,
        q=1.0,
        v=v,
        generator=gen(6),
        chunk=7_000,
    )
    assert mc.pairs == 50_000
    exact = cd.kappa([1.0, 0.3], 0.25, L, 0.5)
    z = (mc.mean.diagonal() - exact) / mc.se.diagonal()
    assert z.abs().max() < 4, z
    assert abs(float(mc.mean[0, 1])) < 4 * float(mc.se[0, 1])  # independent features: 0
    assert abs(mc.noise_energy - nsr) < 0.03 * nsr
    # <u, v> has variance L sigma^2 per view, independent across views: the product has standard
    # deviation L sigma^2, so the mean's standard error is L sigma^2 / sqrt(pairs)
    exact_se = L * sigma.item() ** 2 / math.sqrt(50_000)
    assert mc.noise_cross_se == pytest.approx(exact_se, rel=0.05)
    assert abs(mc.noise_cross) < 5 * exact_se
    monkeypatch.setenv("COMPANIONS_DRY_RUN", "1")  # a dry run draws the first chunk only
    assert (
        cd.pair_moments(
            M,
            probs,
            sigma=sigma,
            pairs=50_000,
            L=L,
            mag_low=0.5,
            q=1.0,
            v=v,
            generator=gen(6),
            chunk=7_000,
        ).pairs
        == 7_000
    )
    with pytest.raises(ValueError, match="'pairs'"):
        cd.pair_moments(
            M, probs, sigma=sigma, pairs=0, L=L, mag_low=0.5, q=1.0, v=v, generator=gen(6)
        )


def test_brelu():
    s = torch.linspace(-2, 2, 41, dtype=torch.float64)
    assert torch.equal(cm.brelu(s, torch.tensor(0.0, dtype=torch.float64)), s)
    b = torch.tensor(0.5, dtype=torch.float64)
    assert torch.allclose(cm.brelu(-s, b), -cm.brelu(s, b))
    assert torch.allclose(
        cm.brelu(s, b), torch.where(s.abs() > 0.5, s - 0.5 * torch.sign(s), torch.zeros_like(s))
    )


def test_uniform_attention_equals_softmax_with_zero_scale():
    M = cd.dictionary(2, 20, 3, gen())
    batch = cd.sample_batch(
        M,
        cd.activation_probs([1.0, 1, 1], 0.5)[None].repeat(2, 1),
        sigma=torch.tensor([0.3, 0.3]),
        K=5,
        L=4,
        mag_low=0.5,
        q=1.0,
        generator=gen(1),
        pooled=False,
    )
    W = cm.init_weights(2, 6, d1=20, sigma0=1.0, generator=gen(2))
    b = torch.full((2, 6), 0.2, dtype=torch.float64)
    h_tokens = cm.features(W, batch.x, b, 4, att_scale=0.0)
    h_pooled = cm.features(W, batch.x.mean(-2), b, 4)
    assert torch.allclose(h_tokens, h_pooled)


def _setup(**kw):
    base = dict(
        d=4,
        n_maj=2,
        d1=12,
        m=5,
        K=16,
        n_neg=15,
        sigma0=0.3,
        eta=0.05,
        lam=0.01,
        tau=2.0,
        bias=False,
    )
    base.update(kw)
    return tr.Setup(**base)


def test_surrogate_gradient_is_tau_times_infonce_gradient():
    s = _setup()
    M = cd.dictionary(2, s.d1, s.d, gen())
    batch = cd.sample_batch(
        M,
        cd.activation_probs([1, 1, 0.3, 0.3], 0.5)[None].repeat(2, 1),
        sigma=torch.tensor([0.2, 0.2]),
        K=s.K,
        L=s.L,
        mag_low=s.mag_low,
        q=1.0,
        generator=gen(1),
    )
    W = cm.init_weights(2, s.m, d1=s.d1, sigma0=0.5, generator=gen(2))
    b = torch.zeros(2, s.m, dtype=torch.float64)
    Wg = W.clone().requires_grad_(True)
    loss = tr.info_nce(
        cm.features(Wg, batch.x, b, s.L), cm.features(Wg, batch.y, b, s.L), s.tau, s.n_neg
    ).sum()
    (auto,) = torch.autograd.grad(loss, Wg)
    g, _, _ = tr.gradient(W, b, batch, s)  # paper convention: c_tau = 1
    assert torch.allclose(g, s.tau * auto, atol=1e-12)
    g_std, _, _ = tr.gradient(W, b, batch, _setup(grad_scale="standard"))
    assert torch.allclose(g_std, auto, atol=1e-12)
    ones = torch.ones(2, s.m, dtype=torch.float64)
    g_mask, _, _ = tr.gradient(W, b, batch, s, mask=ones)
    assert torch.allclose(g_mask, g, atol=1e-14)


def test_negatives_mask_restricts_the_denominator():
    hx = torch.randn(1, 6, 3, generator=gen(), dtype=torch.float64)
    hy = torch.randn(1, 6, 3, generator=gen(1), dtype=torch.float64)
    S = (hx @ hy.transpose(-1, -2))[0]
    manual = (
        -sum(
            float(S[k, k] - torch.logsumexp(S[k, [(k + o) % 6 for o in range(3)]], 0))
            for k in range(6)
        )
        / 6
    )
    assert abs(float(tr.info_nce(hx, hy, 1.0, 2)[0]) - manual) < 1e-12


def test_paper_and_standard_conventions_give_the_same_trajectory():
    kw = dict(d=4, n_maj=2, d1=12, m=5, K=16, n_neg=15, sigma0=0.3, bias=True, c_b=0.3)
    a = tr.train(
        tr.Setup(**kw, tau=2.0, eta=0.05, lam=0.01),
        torch.tensor([0.5]),
        nsr=torch.tensor([0.1]),
        steps=30,
        generator=gen(),
        progress=False,
    )
    b = tr.train(
        tr.Setup(**kw, tau=2.0, eta=0.1, lam=0.005, grad_scale="standard"),
        torch.tensor([0.5]),
        nsr=torch.tensor([0.1]),
        steps=30,
        generator=gen(),
        progress=False,
    )
    assert torch.allclose(a.W, b.W, atol=1e-12)


def test_linear_regime_growth_matches_the_closed_form():
    s = tr.Setup(
        d=4, n_maj=2, d1=40, m=20, K=512, n_neg=511, sigma0=1e-4, eta=0.02, lam=0.0, bias=False
    )
    h = tr.train(
        s,
        torch.full((4,), 0.3),
        nsr=torch.full((4,), 0.2),
        steps=100,
        generator=gen(),
        progress=False,
        log_every=10,
    )
    E = (h.A.double() ** 2).sum(2)  # (T, R, d)
    slope = (0.5 * (torch.log(E[-1]) - torch.log(E[1])) / float(h.steps[-1] - h.steps[1])).mean(0)
    pred = torch.log(
        th.growth_rate(cd.kappa(cd.eps_vector(4, 2, 1, 0.3), s.p0, s.L, s.mag_low), s.eta, 0.0, 511)
    )
    assert torch.allclose(slope, pred, rtol=0.06), (slope, pred)
    wrong = torch.log(
        th.growth_rate(
            cd.kappa(cd.eps_vector(4, 2, 1, 0.3), s.p0, s.L, s.mag_low), s.eta, 0.0, 10**9
        )
        * 1.05
    )
    assert not torch.allclose(slope[:2], wrong[:2], rtol=0.02)
    assert (
        float((h.noise[-1] / h.noise[0] - 1).abs().mean()) < 0.02
    )  # noise directions stay put (features grow e^4)


def test_batch_gradient_matches_the_population_step():
    s = tr.Setup(d=4, n_maj=2, d1=30, m=6, K=256, n_neg=255, sigma0=1e-3, bias=False)
    R = 400
    M = cd.dictionary(1, s.d1, s.d, gen(1)).expand(R, -1, -1)
    W = (s.sigma0 * torch.randn(1, s.m, s.d1, generator=gen(2), dtype=torch.float64)).expand(
        R, -1, -1
    )
    eps = cd.eps_vector(4, 2, 1.0, 0.3)
    kap = cd.kappa(eps, s.p0, s.L, s.mag_low)
    batch = cd.sample_batch(
        M,
        cd.activation_probs(eps, s.p0).expand(R, -1),
        sigma=torch.full((R,), 0.05, dtype=torch.float64),
        K=s.K,
        L=s.L,
        mag_low=s.mag_low,
        q=1.0,
        generator=gen(3),
    )
    g, _, _ = tr.gradient(W, torch.zeros(R, s.m, dtype=torch.float64), batch, s)
    r = th.gradient_ratio_per_feature(g, th.population_gradient(W, M, kap, s.n_neg), M)  # (R, d)
    mu, se = r.mean(0), r.std(0) / math.sqrt(R)
    assert ((mu - 1).abs() <= 4 * se).all() and (se < 0.05).all(), (mu, se)
    r_bad = th.gradient_ratio_per_feature(
        g, th.population_gradient(W, M, kap * torch.tensor([1, 1, 2, 2.0]), s.n_neg), M
    )
    assert ((r_bad.mean(0) - 1).abs() > 4 * se).any()  # a wrong minority kappa is detected


def test_bias_schedule_switches_on_at_t1_and_follows_the_norm():
    sch = cm.BiasSchedule(1, 2, d=9, eta=0.1, c_b=1.0, t1_steps=3)
    M = torch.eye(10, 9, dtype=torch.float64)[None]
    W = torch.ones(1, 2, 10, dtype=torch.float64)
    for t in range(3):
        sch.update(t, W, W, M)
    assert int(sch.t1[0]) == 3 and int(sch.stage[0]) == 2
    assert torch.allclose(sch.b, math.sqrt(2 * math.log(9) / 9) * W.norm(dim=-1))
    b0 = sch.b.clone()
    sch.update(3, W, W, M)  # norm unchanged: the (1 + eta/d) branch wins
    assert torch.allclose(sch.b, b0 * (1 + 0.1 / 9))
    sch.update(4, W, 4 * W, M)  # ||w||^2 grew 16 > d = 9 times: T2, and b followed the norm
    assert int(sch.t2[0]) == 5 and int(sch.stage[0]) == 3
    assert torch.allclose(sch.b, b0 * (1 + 0.1 / 9) * 4)


def test_bias_after_t2_follows_the_rule():
    M = torch.eye(10, 9, dtype=torch.float64)[None]
    W = torch.ones(1, 2, 10, dtype=torch.float64)
    out = {}
    for rule in cm.POST_T2_RULES:
        sch = cm.BiasSchedule(1, 2, d=9, eta=0.1, c_b=1.0, t1_steps=1, post_t2=rule)
        sch.update(0, W, W, M)  # T1
        sch.update(1, W, 4 * W, M)  # T2
        b_t2 = sch.b.clone()
        sch.update(2, 4 * W, 8 * W, M)  # stage 3: the norm doubles
        out[rule] = (sch.b / b_t2).flatten().tolist()
    assert out == {"norm": [2.0, 2.0], "frozen": [1.0, 1.0]}
    try:
        cm.BiasSchedule(1, 2, d=9, eta=0.1, c_b=1.0, post_t2="decay")
    except ValueError as err:
        assert "post_t2" in str(err)
    else:
        raise AssertionError("an unknown post_t2 rule must be refused")


def test_survival_threshold_includes_weight_decay():
    kap = torch.tensor([0.2, 0.1])
    lhs, thr = th.survives_bias_growth(kap, 3, 9, 0.01)
    assert torch.allclose(lhs, 0.75 * kap.double()) and math.isclose(thr, 1 / 9 + 0.01)
    # the threshold is where the projection's factor equals the bias branch's 1 + eta/d
    eta, k_star = 0.05, thr / 0.75
    g = th.growth_rate(torch.tensor([k_star], dtype=torch.float64), eta, 0.01, 3)
    assert math.isclose(float(g), 1 + eta / 9, rel_tol=1e-12)


def test_beta_law_of_the_initial_alignment():
    g = torch.randn(200_000, 9, generator=gen(), dtype=torch.float64)
    u2 = g[:, 0] ** 2 / (g**2).sum(-1)
    for t in (0.05, 0.2, 0.48):
        assert abs(float((u2 >= t).double().mean()) - th.beta_tail(9, t)) < 0.004
    assert th.beta_tail(9, 1.2) == 0.0
    assert abs(th.prob_ordinary(9, 1.0, 0.01) - 0.025608) < 1e-5  # the spec's table


def test_predicted_t1_solves_its_equation():
    kap = cd.kappa(cd.eps_vector(9, 5, 1, 0.3), 0.25, 4, 0.5)
    t = th.predicted_t1(kap, 500, 0.02, 0.0, 127)
    g = th.growth_rate(kap, 0.02, 0.0, 127)
    assert abs(float((g ** (2 * t)).sum()) / 491 - 1) < 1e-6


def test_predicted_t1_mc_follows_the_mean_rule():
    kap = cd.kappa(cd.eps_vector(9, 5, 1.0, 0.3), 0.25, 4, 0.5)
    mean, sd = th.predicted_t1_mc(
        kap, 200, m=30, eta=0.01, lam=0.0, n_neg=255, runs=300, generator=gen()
    )
    lg = torch.log(th.growth_rate(kap, 0.01, 0.0, 255))
    # the median neuron crosses 1/2 near the energy-average time; the mean rule comes a little later
    assert (
        th.predicted_t1(kap, 200, 0.01, 0.0, 255)
        < mean
        < th.predicted_t1(kap, 200, 0.01, 0.0, 255) + 0.5 / float(lg[0])
    )
    assert 0 < sd < 0.2 * mean
    assert th.predicted_t1_mc(
        kap, 800, m=30, eta=0.01, lam=0.0, n_neg=255, runs=300, generator=gen()
    )[0] > mean + 0.5 * math.log(4) / float(lg[0])


def test_regression_recovers_a_linear_target_and_metrics_count():
    z = torch.randn(2, 300, 1, 3, generator=gen(), dtype=torch.float64)
    h = torch.cat(
        [
            z[:, :, 0] @ torch.randn(3, 3, generator=gen(1), dtype=torch.float64),
            torch.zeros(2, 300, 2, dtype=torch.float64),
        ],
        -1,
    )
    mse, r = cmet.regression_mse(
        h[:, :200], z[:, :200], h_test=h[:, 200:], z_test=z[:, 200:], n_maj=1
    )
    assert float(mse.max()) < 1e-8 and float(r.max()) < 1e-8
    C = torch.tensor([[[0.9, 0.1], [0.4, 0.5], [0.0, 0.2]]], dtype=torch.float64)
    assert cmet.n_aligned(C).tolist() == [[2, 1]]
    assert cmet.pure_neurons(C**2).tolist() == [[[True, False], [False, False], [False, False]]]
    assert cmet.mixed_neurons(C**2).tolist() == [[False, True, False]]


def test_chunked_training_and_evaluation_join_runs():
    s = tr.Setup(d=4, n_maj=2, d1=20, m=5, K=16, n_neg=15)
    em, ns = torch.tensor([0.5, 1.0, 0.2]), torch.tensor([0.1, 0.1, 0.5])
    whole = tr.train(s, em, nsr=ns, steps=20, generator=gen(), progress=False)
    parts = tr.train_chunked(s, em, nsr=ns, steps=20, generator=gen(), chunk=2, progress=False)
    assert parts.W.shape == whole.W.shape and parts.A.shape == whole.A.shape
    assert torch.allclose(parts.eps[:, -1], torch.tensor([0.5, 1.0, 0.2], dtype=torch.float64))
    cos, zero, mse, r2 = cmet.evaluate_runs(
        parts, s, runs=slice(1, 3), test_pairs=50, train_pairs=30, test_seed=3, chunk=1
    )
    assert (
        cos.shape == (2,)
        and bool(((cos >= -1) & (cos <= 1)).all())
        and bool(((zero >= 0) & (zero <= 1)).all())
    )
    assert bool((mse >= 0).all())


def test_regression_targets():
    z = torch.tensor([[[[0.5, 0.0], [1.0, 0.0]]]], dtype=torch.float64)  # (R=1, N=1, L=2, d=2)
    assert cmet.regression_target(z, "mean").tolist() == [[[0.75, 0.0]]]
    assert cmet.regression_target(z, "support").tolist() == [[[1.0, 0.0]]]


def test_by_config_groups_repeats_by_config_index():
    """Catches a grouping that ignores the config index or averages over the wrong axis."""
    _, _, cidx = cd.run_grid([0.1, 0.5], [0.45, 1.25], 3)  # 4 configs x 3 repeats
    values = torch.arange(12, dtype=torch.float64)
    mu, sd = cmet.by_config(values, cidx, 4)
    assert mu.tolist() == [1.0, 4.0, 7.0, 10.0] and torch.allclose(
        sd, torch.ones(4, dtype=torch.float64)
    )
    mu1, sd1 = cmet.by_config(torch.tensor([2.0, 5.0]), torch.tensor([1, 0]), 2)
    assert mu1.tolist() == [5.0, 2.0] and sd1.tolist() == [0.0, 0.0]


def test_minority_alignment_uses_the_minority_columns():
    """Catches Figures 2-3 statistics taken over the majority columns, or without the absolute
    value."""
    C = torch.zeros(1, 3, 4, dtype=torch.float64)
    C[0, 0, 2], C[0, 1, 3], C[0, 2, 3], C[0, 2, 0] = -0.9, 0.2, 0.5, 1.0
    n03, cmax = cmet.minority_alignment(C, n_maj=2)
    assert n03.tolist() == [1.0] and cmax.tolist() == [0.7]


def test_stage_index_refuses_a_stage_never_reached():
    h = tr.History()
    h.steps = torch.tensor([0, 5, 10, 15])
    h.t1, h.t2 = torch.tensor([5, 7]), torch.tensor([15, -1])
    assert tr.stage_index(h, "t1") == [1, 2]  # 7 maps to the first logged step after it
    assert tr.stage_index(h, "t2", [0]) == [3]
    try:
        tr.stage_index(h, "t2")
    except ValueError as err:
        assert "[1]" in str(err) and "'steps'" in str(err)
    else:
        raise AssertionError("a run without T2 must raise, not read step 0")


def test_stage2_slopes_read_the_log_growth_between_t1_and_t2():
    h = tr.History()
    h.steps = torch.arange(0, 50, 10)  # 0 .. 40
    g = torch.tensor([0.01, 0.03])  # per-step log growth of two features
    A = torch.exp(h.steps[:, None].double() * g)  # (T, d)
    h.A = A[:, None, None, :].expand(5, 1, 2, 2).clone()  # (T, R=1, m=2, d=2)
    h.A[:, 0, 1] *= 0.5  # a weaker second neuron does not change the max
    h.t1, h.t2 = torch.tensor([10]), torch.tensor([40])
    s = cmet.stage2_slopes(h, [0])
    assert torch.allclose(s, g[None].double(), rtol=1e-6)


def test_trend_slopes_follow_the_run_grid_layout():
    eps = [0.1, 0.5, 1.0]
    e, n, _ = cd.run_grid(eps, [0.1, 2.0], 2)  # eps outer, nsr, repeats innermost
    rep = torch.arange(len(e)) % 2
    vals = torch.where(n < 1, 3.0 * e, -1.0 * e) + 0.1 * rep  # slope 3 at NSR 0.1, -1 at NSR 2
    s = cmet.trend_slopes(vals, eps, 2, 2)
    assert torch.allclose(s, torch.tensor([[3.0, 3.0], [-1.0, -1.0]], dtype=torch.float64))


def test_coefficient_ratio_of_pure_neurons():
    M = torch.eye(4, 3, dtype=torch.float64)[None]  # features 0, 1 majority, 2 minority
    W = torch.zeros(1, 3, 4, dtype=torch.float64)
    W[0, 0, 0], W[0, 1, 1], W[0, 2, 2] = 2.0, 4.0, 0.6
    assert torch.allclose(cmet.coefficient_ratio(W, M, 2), torch.tensor([0.2], dtype=torch.float64))
    W[0, 2] = torch.tensor([0.5, 0.5, 0.5, 0.0], dtype=torch.float64)  # mixed: no minority pure
    assert torch.isnan(cmet.coefficient_ratio(W, M, 2)).all()
