"""Unit tests of the gradient-feature topic: each closed form and training step against an
independent computation, at points where a plausible bug would not cancel."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import torch

from companions import boolean
from companions.gradient_features import data, experiments, network, theory


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


# -- network ---------------------------------------------------------------------------------


def test_symmetric_init_output_is_zero_and_pattern():
    net = network.symmetric_init(
        2, 5, d=7, sigma_a=0.7, sigma_w=0.3, b_tilde=0.4, generator=_gen(), dtype=torch.float64
    )
    assert net.width == 20
    X = torch.randn(2, 50, 7, generator=_gen(1), dtype=torch.float64)
    assert float(network.forward(net, X).abs().max()) < 1e-12
    m = 5
    assert torch.equal(net.W[:, m : 2 * m], -net.W[:, :m])
    assert torch.equal(net.b[:, m : 2 * m], -net.b[:, :m])
    assert torch.equal(net.W[:, 2 * m :], net.W[:, : 2 * m])
    assert torch.equal(net.a[:, 2 * m :], -net.a[:, : 2 * m])
    assert torch.all(net.b[:, :m] == 0.4)


def test_symmetric_init_rejects_bad_parameters():
    with pytest.raises(ValueError, match="sigma_w"):
        network.symmetric_init(1, 2, d=3, sigma_a=1.0, sigma_w=0.0, b_tilde=1.0, generator=_gen())
    with pytest.raises(ValueError, match="'m'"):
        network.symmetric_init(1, 0, d=3, sigma_a=1.0, sigma_w=1.0, b_tilde=1.0, generator=_gen())


def test_simplified_gradient_matches_a_loop():
    W = torch.randn(1, 3, 4, generator=_gen(2), dtype=torch.float64)
    b = torch.tensor([[0.1, -0.2, 0.3]], dtype=torch.float64)
    X = torch.randn(1, 30, 4, generator=_gen(3), dtype=torch.float64)
    y = torch.sign(torch.randn(1, 30, generator=_gen(4), dtype=torch.float64))
    G = network.simplified_gradient(W, b, X, y)
    for i in range(3):
        ref = sum(y[0, j] * X[0, j] * float(X[0, j] @ W[0, i] > b[0, i]) for j in range(30)) / 30
        assert torch.allclose(G[0, i], ref)


def test_first_step_equals_autograd_with_full_weight_decay():
    mix = data.orthogonal_mixture(12, 4, 1.0, 1.0)
    net0 = network.symmetric_init(
        2, 6, d=12, sigma_a=1.3, sigma_w=0.4, b_tilde=0.5, generator=_gen(5), dtype=torch.float64
    )
    X, y = mix.sample(2, 200, _gen(6), torch.float64)
    closed = network.first_step(net0, X, y, 0.7)
    auto = network.autograd_step(net0, X, y, 0.7, 1 / 0.7)
    assert torch.allclose(closed.W, auto.W, atol=1e-12)
    assert torch.allclose(closed.a, auto.a, atol=1e-12)
    # with a different weight decay the initial weights survive: the closed form must not match
    other = network.autograd_step(net0, X, y, 0.7, 0.5 / 0.7)
    assert not torch.allclose(closed.W, other.W, atol=1e-6)


def test_mirror_relation_with_nonzero_eyx():
    mix = data.orthogonal_mixture(10, 2, 1.0, 1.0)
    m, eta = 8, 0.3
    net0 = network.symmetric_init(
        1, m, d=10, sigma_a=1.0, sigma_w=0.5, b_tilde=0.3, generator=_gen(7), dtype=torch.float64
    )
    X, y = mix.sample(1, 500, _gen(8), torch.float64)
    net1 = network.first_step(net0, X, y, eta)
    eyx = (y[0, :, None] * X[0]).mean(0)
    assert float(eyx.norm()) > 0.5
    pred = net1.W[0, :m] - eta * net0.a[0, :m, None] * eyx
    assert torch.allclose(net1.W[0, m : 2 * m], pred, atol=1e-12)
    assert torch.allclose(net1.W[0, 2 * m :], -net1.W[0, : 2 * m])


def test_feature_hits_and_cone():
    G = torch.tensor([[1.0, 0.0], [0.8, 0.6], [0.1, 0.0], [-1.0, 0.01]])
    D = torch.tensor([[1.0, 0.0]])
    hits = network.feature_hits(G, D, 0.1, 0.5)[:, 0]
    assert hits.tolist() == [True, False, False, True]
    with pytest.raises(ValueError, match="gamma"):
        network.feature_hits(G, D, 1.0, 0.0)


def test_training_reduces_hinge_and_seeds_stay_independent():
    mix = data.xor_mixture(8, 0.5)
    net0 = network.symmetric_init(
        2, 8, d=8, sigma_a=1.0, sigma_w=8**-0.5, b_tilde=0.5, generator=_gen(9)
    )
    X, y = mix.sample(2, 400, _gen(10))
    net1 = network.first_step(net0, X, y, 0.5)
    before = network.seedwise_hinge(network.forward(net1, X), y)
    after_net = network.train(net1, X, y=y, steps=60, lr=1e-2)
    after = network.seedwise_hinge(network.forward(after_net, X), y)
    assert torch.all(after < before)
    # training seed 0 alone gives the same seed-0 result
    single = network.Net(net1.a[:1], net1.W[:1], net1.b[:1])
    alone = network.train(single, X[:1], y=y[:1], steps=60, lr=1e-2)
    assert torch.allclose(alone.W[0], after_net.W[0], atol=1e-5)
    frozen = network.train(net1, X, y=y, steps=10, lr=1e-2, train_first_layer=False)
    assert torch.equal(frozen.W, net1.W)
    with pytest.raises(ValueError, match="optimizer"):
        network.train(net1, X, y=y, steps=1, lr=1e-2, optimizer="sgd")


def test_a_dry_run_keeps_the_first_step_of_each_trainer(monkeypatch):
    mix = data.xor_mixture(6, 0.5)
    net0 = network.symmetric_init(
        2, 4, d=6, sigma_a=1.0, sigma_w=6**-0.5, b_tilde=0.5, generator=_gen(16)
    )
    X, y = mix.sample(2, 50, _gen(17))
    kw = dict(batch=10, progress=False)

    def runs(steps):
        g = _gen(18)
        net = network.train(net0, X, y=y, steps=steps, lr=1e-2, generator=g, **kw)
        ntk = network.train_ntk(net0, X, y=y, steps=steps, lr=1e-2, generator=g, **kw)
        lin = network.train_linear(X, y, steps=steps, lr=1e-2, generator=g, **kw)
        return net.W, ntk(X), lin(X)

    one, many = runs(1), runs(20)
    assert not any(torch.equal(a, b) for a, b in zip(one, many))
    monkeypatch.setenv("COMPANIONS_DRY_RUN", "1")
    assert all(torch.equal(a, b) for a, b in zip(one, runs(20)))


def test_ntk_model_is_the_linearisation():
    net0 = network.symmetric_init(
        1, 3, d=5, sigma_a=1.0, sigma_w=0.5, b_tilde=0.2, generator=_gen(11), dtype=torch.float64
    )
    X = torch.randn(1, 20, 5, generator=_gen(12), dtype=torch.float64)
    dW = torch.randn(net0.W.shape, generator=_gen(13), dtype=torch.float64)
    da = torch.randn(net0.a.shape, generator=_gen(14), dtype=torch.float64)
    eps = 1e-6
    moved = network.Net(net0.a + eps * da, net0.W + eps * dW, net0.b)
    finite = (network.forward(moved, X) - network.forward(net0, X)) / eps
    assert torch.allclose(network.ntk_output(net0, dW, da, X), finite, atol=1e-4)
    y = torch.sign(torch.randn(1, 20, generator=_gen(15), dtype=torch.float64))
    f = network.train_ntk(net0, X, y=y, steps=30, lr=1e-2)
    assert float(network.seedwise_hinge(f(X), y)[0]) < 1.0


# -- data ------------------------------------------------------------------------------------


def test_parity_sampler_frequencies_and_labels():
    par = data.Parity(20, 3, 3, 0.1, 0.2)
    X, y = par.sample(1, 40_000, _gen(14), torch.float64)
    A = X[0, :, :9]
    structured = (A == 0).any(1)
    assert abs(float(structured.double().mean()) - 0.6) < 0.02
    assert torch.equal(y[0], par.label(A))
    bg = X[0, :, 9:]
    assert abs(float((bg == 1).double().mean()) - 0.2) < 0.01
    eyx = (y[0, :, None] * X[0]).mean(0)
    assert abs(float(eyx[:9].mean()) - 0.2) < 0.02
    with pytest.raises(ValueError, match="p_A"):
        data.Parity(20, 3, 3, 0.2, 0.1)
    with pytest.raises(ValueError, match="'r'"):
        data.Parity(20, 3, 2, 0.1, 0.1)


def test_mixture_sampler_moments():
    mix = data.xor_mixture(6, 0.5)
    X, y = mix.sample(1, 40_000, _gen(15), torch.float64)
    assert abs(float(y.mean())) < 0.02
    pos = X[0][y[0] > 0]
    assert abs(float(pos[:, 0].abs().mean()) - math.sqrt(6)) < 0.05
    assert float(experiments.expected_yx(mix).norm()) == 0.0


# -- theory ----------------------------------------------------------------------------------


def test_majority_coefficients_enumeration_and_printed_typo():
    enum = theory.majority_coefficients_enumerated(7)
    for k in (1, 3, 5, 7):
        assert enum[k] == theory.majority_coefficient(7, k)
    assert enum[3] == Fraction(-3, 32) * Fraction(1, 1) or enum[3] < 0
    assert theory.majority_coefficient(7, 3, printed=True) != enum[3]
    assert theory.majority_coefficient(7, 1, printed=True) == enum[1]  # same when k = 1
    with pytest.raises(ValueError, match="'d'"):
        theory.majority_coefficient(8, 3)


def test_lemma_b63_corrected_against_enumeration():
    rng = np.random.default_rng(0)
    for k in (2, 4):
        A = list(range(k))
        for _ in range(3):
            w = rng.choice([-1, 1], 9)
            g = theory.uniform_parity_gradient(w, 0.5 - 1 / k, A, 9)
            assert g == theory.lemma_b63_prediction(w, A, 9)
            assert g != theory.lemma_b63_prediction(w, A, 9, printed=True)


def test_parity_ground_truth_and_eyx():
    for k, r in ((3, 1), (5, 1), (3, 3)):
        res = theory.parity_ground_truth_margins(k, r)
        assert res["min_margin"] == 1 and res["xor_on_uniform"]
    # the wrong sign convention (B.551's, for even k) fails for odd k
    assert theory.parity_ground_truth_margins(3, 1, sign_start=0)["min_margin"] < 1
    assert theory.parity_expected_yx(5, 1, Fraction(1, 4)) == [Fraction(1, 2)] * 5
    assert set(theory.parity_expected_yx(3, 3, Fraction(1, 10))) == {Fraction(1, 5)}


def test_gstar_hinge_closed_form_against_monte_carlo():
    own, others = theory.mixture_ground_truth_hinge(300, 4, 1.0, 1.0, 8.0)
    mix = data.orthogonal_mixture(300, 4, 1.0, 1.0)
    X, y = mix.sample(1, 20_000, _gen(16), torch.float64)
    h = (1 - y[0] * theory.mixture_ground_truth(mix, 8.0, X[0])).clamp(min=0)
    se = float(h.std()) / math.sqrt(20_000)
    assert abs(10**own + 10**others - float(h.mean())) < 4 * se
    assert theory.mixture_ground_truth_hinge(1000, 4, 1.0, 1.0, 8.0)[0] < math.log10(
        theory.mixture_hinge_bound(1000, 8.0)
    )


def test_theorem_3_12_terms_scale():
    base = theory.theorem_3_12_terms(
        2, 0.1, gamma=0.01, B_G=1.0, B_a1=1.0, B_a2=1.0, B_b=1.0, B_x1=1.0, eps=0.1, delta=0.1
    )
    # (3.10) is a sum of three terms: 2^4 * 1/(0.1 * 0.1^4) + 1/sqrt(0.1) + log(20)^2 / 0.1
    expected = 16 / (0.1 * 0.1**4) + 1 / math.sqrt(0.1) + math.log(20) ** 2 / 0.1
    assert base["log10_m"] == pytest.approx(math.log10(expected), abs=1e-9)
    assert base["error_term"] == pytest.approx(2 * math.sqrt(0.02))
    assert theory.prop_3_23_bound(2, 1.0, 3) == pytest.approx(
        0.5 - math.sqrt(2) / (8 * math.sqrt(2))
    )


def test_boolean_cube_transform():
    Z = boolean.cube(4)
    f = Z[:, 0] * Z[:, 2]
    coef = boolean.walsh_hadamard(f)
    assert coef[boolean.subset_index([0, 2])] == 16
    assert sum(abs(int(c)) for c in coef) == 16
    with pytest.raises(ValueError, match="power of two"):
        boolean.walsh_hadamard(np.arange(6))


def test_population_fraction_nested_cones():
    mix = data.orthogonal_mixture(20, 2, 1.0, 1.0)
    p, se = experiments.population_fraction(
        mix,
        mix.directions,
        gammas=[0.1, 0.3],
        B_G=0.5,
        sigma_w=20**-0.5,
        b_tilde=1.0,
        neurons=500,
        n=2000,
        generator=_gen(17),
    )
    assert p.shape == (2, 2) and torch.all(se > 0) and torch.all((p > 0) & (p < 1))
    assert torch.all(p[0] <= p[1])  # nested cones


def test_multi_index_symbolic_and_alignment():
    mi = theory.multi_index_symbolic()
    assert mi["second_moment"] == 1 and mi["mean"] == 0 and mi["linear"] == [0, 0]
    assert mi["rank"] == 2
    assert float(mi["kappa"]) == pytest.approx((math.sqrt(6) + math.sqrt(2)) / 2)
    # the label is de-meaned in law: a sample mean near 0 and unit second moment
    X = torch.randn(1, 200_000, 4, generator=_gen(19), dtype=torch.float64)
    y = theory.multi_index_label(X)
    assert abs(float(y.mean())) < 0.01 and abs(float(y.pow(2).mean()) - 1) < 0.02
    align = experiments.multi_index_alignment(20, 5000, 2, 32, _gen(20))
    assert torch.all(align["init"] < 0.6) and torch.all(align["step"] > align["init"])


def test_uniform_parity_init_pattern_and_run():
    net = experiments.uniform_parity_init(2, 6, 9, 4, _gen(21), torch.float64)
    assert set(net.a.unique().tolist()) <= {-1.0, 1.0}
    assert set(net.W.unique().tolist()) <= {-1.0, 1.0}
    assert set((net.b[:, :6] * 4).round().unique().tolist()) <= set(range(-3, 4))
    X = 2.0 * torch.randint(0, 2, (2, 30, 9), generator=_gen(22)).double() - 1
    assert float(network.forward(net, X).abs().max()) == 0.0
    with pytest.raises(ValueError, match="'k'"):
        experiments.uniform_parity_init(1, 2, 5, 0, _gen())
    eta = 1 / (2 * abs(float(theory.majority_coefficient(11, 1))))
    out = experiments.uniform_parity_run(
        11,
        2,
        seeds=2,
        m=16,
        n=20_000,
        n_test=500,
        steps=20,
        lr=1e-2,
        batch=64,
        generator=_gen(23),
        eta1=eta,
    )
    # the corrected Lemma B.63: |w^(1)_j| = 1/(2k) on A, up to sampling noise
    assert float(out["w_in_A"].mean()) == pytest.approx(0.25, abs=0.02)
    assert float(out["w_out_A"].mean()) < 0.1


def test_compare_methods_shapes():
    mix = data.xor_mixture(10, 0.5)
    out = experiments.compare_methods(
        mix,
        2,
        m=4,
        n=100,
        n_test=100,
        sigma_a=1.0,
        sigma_w=10**-0.5,
        b_tilde=0.5,
        eta1=0.2,
        steps=5,
        lr=1e-2,
        batch=50,
        generator=_gen(24),
    )
    assert set(out) == {"network", "frozen", "rf", "ntk", "linear"}
    assert all(v.shape == (2,) and torch.all((v >= 0) & (v <= 1)) for v in out.values())


def test_mixture_sample_is_mean_plus_sigma_times_the_same_noise():
    mix = data.orthogonal_mixture(6, 4, 1.5, 0.7)
    X, y = mix.sample(2, 50, _gen(21), torch.float64)
    g = _gen(21)  # the formula written out, with the sampler's draws in the sampler's order
    comp = torch.multinomial(mix.weights.double(), 100, True, generator=g).reshape(2, 50)
    noise = torch.randn(2, 50, 6, generator=g, dtype=torch.float64)
    assert torch.equal(X, mix.means.double()[comp] + mix.sigmas.double()[comp][..., None] * noise)
    assert torch.equal(y, mix.labels.double()[comp])
