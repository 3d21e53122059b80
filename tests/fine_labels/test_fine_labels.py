"""Unit tests of companions.fine_labels: each one fails on a plausible wrong implementation."""

import math

import pytest
import sympy as sp
import torch

import companions
from companions.fine_labels import data as fdata
from companions.fine_labels import experiments as fx
from companions.fine_labels import model as fmodel
from companions.fine_labels import symbolic as fsym
from companions.fine_labels import tables as ftab
from companions.fine_labels import theory as fth
from companions.fine_labels import training as ftrain

DC = fdata.DataConfig(
    d=16, k=2, P=8, s_star=2, sigma_zeta=1e-4, s_dagger=2, alpha_dagger=(0.3, 0.5), sigma_star=0.5
)


def g(seed=0):
    return torch.Generator().manual_seed(seed)


# -- data ---------------------------------------------------------------------------------------
def test_balanced_labels_and_feature_indices():
    y, c = fdata.balanced_labels(3, 8, 2)
    assert y.shape == (3, 8)
    pairs = (y * 2 + c)[0].tolist()
    assert sorted(pairs) == [0, 0, 1, 1, 2, 2, 3, 3]
    assert fdata.fine_index(torch.tensor(1), torch.tensor(1), 2) == 5
    with pytest.raises(ValueError, match="'N'"):
        fdata.balanced_labels(1, 6, 2)


def test_easy_sample_has_exact_patches_on_the_right_features():
    X, y, c = fdata.sample(DC, 2, 8, False, g())
    big = X.abs() > 0.5  # (S, N, P, d): the feature entries (noise is 1e-4)
    for s in range(2):
        for n in range(8):
            cols = big[s, n].nonzero()[:, 1].tolist()
            assert sorted(cols) == sorted(
                [int(y[s, n])] * 2 + [2 + int(y[s, n]) * 2 + int(c[s, n])] * 2
            )
    assert torch.allclose(X[big], torch.ones(int(big.sum())), atol=1e-3)  # iota = 0


def test_hard_sample_structure():
    X, y, c = fdata.sample(DC, 1, 8, True, g(1))
    for n in range(8):
        yn = int(y[0, n])
        norms = X[0, n].norm(dim=-1)
        quiet = norms < 1  # every patch but zeta^*
        common = (X[0, n, :, yn].abs() > 0.1) & quiet
        other = X[0, n, :, 1 - yn]
        assert not bool(common.any())  # common patches became noise
        fn = (other > 0.25) & (other < 0.55) & quiet
        assert int(fn.sum()) == 2  # s_dagger feature-noise patches of v_{-y}
        assert int((norms > 0.5 * math.sqrt(16) * 0.5).sum()) >= 1  # one zeta* patch
        assert int((X[0, n, :, 2 + yn * 2 + int(c[0, n])] > 0.9).sum()) == 2


def test_bernoulli_counts_have_the_paper_law():
    dc = fdata.DataConfig(d=16, k=2, P=10, s_star=3, sigma_zeta=0.01, patch_counts="bernoulli")
    common, fine, _, _ = fdata.patch_roles(1, 40_000, dc, False, g(2))
    p_none = (1 - 3 / 10) ** 10
    assert abs(float((common.sum(-1) == 0).float().mean()) - p_none) < 4 * math.sqrt(
        p_none / 40_000
    )
    assert abs(float(fine.sum(-1).float().mean()) - 3) < 0.03
    assert not bool((common & fine).any())


def test_data_config_names_bad_parameters():
    with pytest.raises(ValueError, match="'patch_counts'"):
        fdata.DataConfig(d=16, k=2, P=8, s_star=2, sigma_zeta=0.1, patch_counts="poisson")
    with pytest.raises(ValueError, match="'P'"):
        fdata.DataConfig(d=16, k=2, P=4, s_star=2, sigma_zeta=0.1)
    with pytest.raises(ValueError, match="'d'"):
        fdata.DataConfig(d=5, k=2, P=8, s_star=2, sigma_zeta=0.1)
    assert DC.rho == pytest.approx(2 * 2 * 0.4 / 2)


def test_grouped_and_random_labels():
    y, c = fdata.balanced_labels(1, 16, 4)
    assert fdata.grouped_labels(y, c, 4, 4).tolist() == fdata.fine_labels(y, c, 4).tolist()
    assert fdata.grouped_labels(y, c, 4, 1).tolist() == y.tolist()
    assert set(fdata.grouped_labels(y, c, 4, 2)[0, :4].tolist()) == {0, 1}
    r = fdata.random_labels(y, 3, g())
    assert bool(((r // 3) == y).all()) and r.max() < 6
    with pytest.raises(ValueError, match="'groups'"):
        fdata.grouped_labels(y, c, 4, 3)


# -- model ---------------------------------------------------------------------------------------
def test_forward_is_eq_2_summed_over_patches():
    net = fmodel.init(2, 3, m=4, d=5, sigma0=1.0, tau=0.3, g=g())
    X = torch.randn(2, 6, 7, 5, generator=g(1))
    F = fmodel.forward(net, X, chunk=4)
    s, n, c = 1, 5, 2
    rows = range(c * 4, c * 4 + 4)
    want = sum(torch.relu(X[s, n, p] @ net.W[s, r] + net.b[s, r]) for r in rows for p in range(7))
    assert F.shape == (2, 6, 3)
    assert float(F[s, n, c]) == pytest.approx(float(want), rel=1e-5)
    assert float(net.b[0, 0]) == pytest.approx(-0.3)


def test_aggregate_and_accuracy():
    F = torch.tensor([[[1.0, 3.0, 2.0, 2.0]]])  # outputs (+,0), (+,1), (-,0), (-,1)
    assert fmodel.aggregate(F, 2, "max").tolist() == [[[3.0, 2.0]]]
    assert fmodel.aggregate(F, 2, "sum").tolist() == [[[4.0, 4.0]]]
    lse = fmodel.aggregate(F, 2, "logsumexp")
    assert float(lse[0, 0, 1]) == pytest.approx(2 + math.log(2))
    scores = torch.tensor([[[1.0, 0.0], [1.0, 1.0], [0.0, 2.0]]])
    labels = torch.tensor([[0, 0, 1]])
    assert float(fmodel.accuracy(scores, labels)[0]) == pytest.approx(2 / 3)  # tie is a mistake
    with pytest.raises(ValueError, match="'how'"):
        fmodel.aggregate(F, 2, "mean")


def test_detectors_growth_response():
    W0 = torch.zeros(1, 4, 3)
    W0[0, 0, 0] = 2.0
    W0[0, 2, 1] = 2.0
    W0[0, 3, 1] = 2.0
    det = fmodel.detectors(W0, torch.arange(3), 1.5)
    W = W0.clone()
    W[0, 2, 1] += 1.0
    W[0, 3, 1] += 3.0
    A = fmodel.growth(W, W0, torch.arange(3), det, 2)  # outputs own rows {0,1} and {2,3}
    assert float(A[0, 1, 1]) == pytest.approx(2.0)
    assert math.isnan(float(A[0, 0, 1]))
    net = fmodel.Net(W, torch.full((1, 4), -1.0), 2, 2)
    R = fmodel.response(net, torch.arange(3))
    assert float(R[0, 1, 1]) == pytest.approx(2.0 + 4.0)
    assert float(R[0, 0, 0]) == pytest.approx(1.0)


# -- training -----------------------------------------------------------------------------------
@pytest.mark.parametrize("agg", [None, "max"])
def test_sgd_step_is_eq_16_and_18(agg):
    net = fmodel.init(2, 4, m=3, d=6, sigma0=0.5, tau=0.1, g=g(3), dtype=torch.float64)
    X = torch.randn(2, 5, 4, 6, generator=g(4), dtype=torch.float64)
    labels = torch.randint(2 if agg else 4, (2, 5), generator=g(5))
    W = net.W.clone().requires_grad_(True)
    Z = torch.bmm(X.reshape(2, 20, 6), W.transpose(1, 2)) + net.b[:, None, :]
    F = torch.relu(Z).reshape(2, 5, 4, 12).sum(2).reshape(2, 5, 4, 3).sum(-1)
    sc = fmodel.aggregate(F, 2, "max") if agg else F
    loss = sum(torch.nn.functional.cross_entropy(sc[s], labels[s]) for s in range(2))
    (grad,) = torch.autograd.grad(loss, W)
    eta, lam = 0.3, 7.0
    b_old = net.b.clone()
    fn = (lambda f: fmodel.aggregate(f, 2, "max")) if agg else None
    ftrain.sgd_step(net, X, labels=labels, eta=eta, lam_b=lam, scores_fn=fn)
    want = W.detach() - eta / 4 * grad
    assert torch.allclose(net.W, want, atol=1e-12)
    dW = (want - W.detach()).norm(dim=-1)
    assert torch.allclose(net.b, b_old - dW / lam, atol=1e-12)


def test_off_diagonal_mask():
    m = ftrain.off_diagonal_mask(2, 2)  # features v+, v-, v+0, v+1, v-0, v-1
    assert m[0].tolist() == [False, True, False, False, True, True]
    f = ftrain.off_diagonal_mask(4, 2)
    assert f[1].tolist() == [False, True, True, False, True, True]  # output (+,1)
    with pytest.raises(ValueError, match="'C'"):
        ftrain.off_diagonal_mask(3, 2)


def test_short_coarse_run_step_one_ratio_is_k():
    cfg = companions.preset("fine-labels-coarse", "smoke", device="cpu", steps=10, n_logs=4)
    rt = companions.setup("cpu", 0, dtype="float32")
    tests = fx.test_sets(fx.data_config(cfg), cfg.seeds, 32, rt.generator(1), rt.device)
    net, h = fx.run(cfg, rt, kind="coarse", steps=cfg.steps, tests=tests)
    r = fx.common_fine_ratio(h["A"][1], cfg.k, 2)
    assert float(r.nanmean()) == pytest.approx(cfg.k, rel=0.01)
    assert h["t"].tolist()[:3] == [0, 1, 2]
    assert int(h["noise"].sum()) == 0


def test_fine_run_records_t0():
    cfg = companions.preset("fine-labels-fine", "smoke", device="cpu")
    rt = companions.setup("cpu", 0, dtype="float32")
    tests = fx.test_sets(fx.data_config(cfg), cfg.seeds, 16, rt.generator(1), rt.device)
    _, h = fx.run(cfg, rt, kind="fine", steps=20, tests=tests, B=cfg.B, n_logs=2)
    assert bool((h["T0"] > 0).all())
    assert not any(math.isnan(float(v)) for v in h["at_T0"]["easy"])


# -- theory and symbolic -------------------------------------------------------------------------
def test_mills_bounds_and_tails():
    lo, hi = fth.mills_bounds(1.0, paper=True)
    assert fth.Q(1.0) > hi  # the printed eq. (19) upper bound is false at eps = 1
    lo2, hi2 = fth.mills_bounds(1.0, paper=False)
    assert lo2 <= fth.Q(1.0) <= hi2
    assert fth.Q(0.0) == pytest.approx(0.5)
    assert fth.expected_singletons(100, 2.0, 10) == pytest.approx(
        100 * fth.Q(2) * (1 - fth.Q(2)) ** 9
    )
    assert fth.width_for(6, 2.0) == math.ceil(6 / fth.Q(2.0))
    with pytest.raises(ValueError, match="'mode'"):
        fth.c_b(0.05, "medium")


def test_feasibility_and_literal_counts():
    L = fth.feasibility_log_d(15)
    assert 0.4 * L == pytest.approx(20 * math.log(L), rel=1e-9)
    assert 122 < L / math.log(10) < 123
    assert fth.feasibility_log_d(16) > L
    assert 0.05 < fth.paper_lucky_count(64, 0.05, "coarse") < 0.2


def test_small_closed_forms():
    assert fth.rho(8, 2, 0.4, 3) == pytest.approx(8 * 0.8 / 3)
    assert fth.fine_step_ratio(5, 0.1, 0.1) == pytest.approx(5 / 9)
    assert fth.coarse_log_slope(
        0.1, 2, P=10, n_common=4, n_fine=8, k=4, lam_b=10.0
    ) == pytest.approx(0.1 * 4 * 6 * 0.9 / 20)
    assert fth.paper_log_slope(0.1, 2, 10, 4) == pytest.approx(0.2 / 80)
    for n in (2, 10, 500):
        assert 0 <= fth.harmonic_remainder(n) <= 1 / (8 * n * n)
    slope, r2 = fth.linear_fit_r2([0, 1, 2, 3], [1, 3, 5, 7])
    assert slope == pytest.approx(2) and r2 == pytest.approx(1)
    assert fth.t0_scale(4, 12, 0.1, 2, 5) == pytest.approx(48 / 2)


def test_symbolic_checks():
    assert all(fsym.prop_exponents().values())
    assert sp.simplify(fsym.tail_ratio_exponent() - sp.exp(-2 * (2 + fsym.c0) / fsym.L**5)) == 0
    assert fsym.eq26_identity()
    assert sp.simplify(fsym.eq29_union_bound() - fsym.d ** (2 * fsym.c0)) == 0
    assert sp.simplify(fsym.lemma_e4_ode() - sp.log(fsym.C * fsym.t + sp.exp(fsym.A0))) == 0
    assert fsym.phase1_counts(3, 128, 16, 8) == (192, 24)
    assert sp.simplify(fsym.fine_step_ratio_at_init() - fsym.k / (2 * fsym.k - 1)) == 0
    assert all(fsym.lemma_g2_interval().values())
    k = fsym.k
    assert fsym.nonnegative_for_k_at_least_1(1 / (3 * k * (6 * k - 1)))
    assert not fsym.nonnegative_for_k_at_least_1(k - 2)  # negative at k = 1


# -- experiments, tables, presets ----------------------------------------------------------------
def test_decisions():
    ok, (m, se, n) = fx.decide_within([4.0, 4.01, 3.99, 4.0], 4.0, 0.01)
    assert ok is True and n == 4
    assert fx.decide_within([5.0, 5.1, 4.9], 4.0, 0.01)[0] is False
    assert fx.decide_within([3.0, 5.0], 4.0, 0.01)[0] is None
    assert fx.decide_above([0.9, 0.95, 0.92], 0.5)[0] is True
    assert fx.decide_above([float("nan"), 0.9], 0.5)[0] is None


def test_common_fine_ratio():
    A = torch.ones(1, 2, 6)
    A[0, 0, 0] = 4.0
    A[0, 1, 1] = 2.0
    A[0, 1, 4] = 0.5  # v_{-,0}; v_{-,1} stays 1
    r = fx.common_fine_ratio(A, 2, 2)
    assert r[0].tolist() == pytest.approx([4.0, 2.0 / 0.75])
    Af = torch.ones(1, 4, 6)
    Af[0, 3, 1] = 3.0  # output (-,1): v_- over v_{-,1}
    assert float(fx.common_fine_ratio(Af, 2, 4)[0, 3]) == pytest.approx(3.0)


def test_tables_transcription():
    assert ftab.figure_2_curve()[4] == 77.53
    assert 100 - ftab.TABLE_5["Baseline"]["FT90"][0] == pytest.approx(ftab.TABLE_4[0][2], abs=5e-3)
    assert len(ftab.all_tables()) == 7


@pytest.mark.parametrize("chapter", ["fine-labels-model", "fine-labels-coarse", "fine-labels-fine"])
def test_presets_resolve_and_bad_values_are_named(chapter):
    for scale in ("smoke", "default", "paper"):
        companions.preset(chapter, scale)
    with pytest.raises(ValueError, match="'N'"):
        companions.preset(chapter, "smoke", N=65)
    with pytest.raises(ValueError, match="'d'"):
        companions.preset(chapter, "smoke", d=8, k=4)


def test_phase_grid_and_finetune_shapes():
    cfg = companions.preset("fine-labels-fine", "smoke", device="cpu", seeds=2, n_test=16)
    rt = companions.setup("cpu", 0, dtype="float32")
    net = fmodel.init(2, 2 * cfg.k, m=8, d=cfg.d, sigma0=cfg.sigma0, tau=cfg.tau, g=g())
    out = fx.phase_grid(
        cfg, rt, nets={"fine": (net, "max")}, alphas=[0.1, 0.5], s_daggers=[1, 2], n=16
    )
    assert out["fine"].shape == (2, 2, 2)
    assert ((out["fine"] >= 0) & (out["fine"] <= 1)).all()
    tests = fx.test_sets(fx.data_config(cfg), 2, 16, rt.generator(1), rt.device)
    W_before = net.W.clone()
    h = fx.finetune(cfg, rt, net=net, steps=3, tests=tests)
    assert h["t"].tolist()[-1] == 3 and not torch.equal(net.W, W_before)


def test_coarse_scores_reads_fine_models_through_the_aggregation():
    F = torch.tensor([[[0.0, 5.0, 1.0, 1.0]]])
    assert ftrain.coarse_scores(F, "max").tolist() == [[[5.0, 1.0]]]
    assert ftrain.coarse_scores(F[..., :2]).tolist() == [[[0.0, 5.0]]]


def test_decisions_keep_every_digit_of_the_seeds_values():
    from companions.fine_labels import experiments as fx

    # 0.1 + 1e-9 is not a float32: rounded to one, the three values would all be 0.1 exactly
    values = [0.1 + 1e-9, 0.1 - 1e-9, 0.1 + 3e-9]
    assert fx._finite(values) == values
    ok, (m, se, n) = fx.decide_above(values, 0.1)
    assert (m, n) == (pytest.approx(0.1 + 1e-9, rel=1e-12, abs=0), 3)
    assert se == pytest.approx(1.1547005383792515e-09, rel=1e-6)  # sd 2e-9 / sqrt(3)
