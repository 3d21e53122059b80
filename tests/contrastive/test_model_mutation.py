"""Tests of companions.contrastive.model written against its surviving mutants (issue 23).

Expected values come from loops over runs, views, tokens and neurons written here (eq (4), the
softmax of identity attention, BReLU), from the initialisation replayed with the same generator,
from small cases worked out by hand (exact binary fractions, so that boundaries are hit exactly),
and from a loop-by-loop second implementation of the bias schedule's update (eq (285), (61),
(34)/(284) as the module's docstring states them).
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from companions.contrastive import model as cm

F64 = torch.float64


def g(seed=0):
    return torch.Generator().manual_seed(seed)


# -- brelu --------------------------------------------------------------------------------------


def test_brelu_small_case_by_hand():
    s = torch.tensor([-2.0, -0.5, -0.25, 0.0, 0.25, 0.5, 2.0], dtype=F64)
    b = torch.tensor(0.5, dtype=F64)
    # ReLU(s - 1/2) - ReLU(-s - 1/2): dead on [-1/2, 1/2], s -/+ 1/2 outside
    want = torch.tensor([-1.5, 0.0, 0.0, 0.0, 0.0, 0.0, 1.5], dtype=F64)
    assert torch.equal(cm.brelu(s, b), want)


@settings(max_examples=60, deadline=None)
@given(
    s=st.floats(-100, 100, allow_nan=False),
    b=st.floats(0, 50, allow_nan=False),
)
def test_brelu_is_a_soft_threshold(s, b):
    # for b >= 0: BReLU_b(s) = sign(s) max(|s| - b, 0), odd in s; the identity at b = 0
    got = float(cm.brelu(torch.tensor(s, dtype=F64), torch.tensor(b, dtype=F64)))
    assert got == pytest.approx(math.copysign(max(abs(s) - b, 0.0), s), abs=1e-12)
    neg = float(cm.brelu(torch.tensor(-s, dtype=F64), torch.tensor(b, dtype=F64)))
    assert neg == pytest.approx(-got, abs=1e-12)
    assert float(cm.brelu(torch.tensor(s, dtype=F64), torch.tensor(0.0, dtype=F64))) == s


# -- init_weights -------------------------------------------------------------------------------


def test_init_weights_replays_a_float64_gaussian_draw_times_sigma0():
    W = cm.init_weights(2, 3, d1=5, sigma0=0.25, generator=g(4))
    want = torch.randn(2, 3, 5, generator=g(4), dtype=F64) * 0.25  # w ~ N(0, sigma0^2 I)
    assert W.dtype == F64 and W.shape == (2, 3, 5)
    assert torch.equal(W, want)


def test_init_weights_draws_in_float64_then_casts():
    # the docstring's draw is in float64 whatever the dtype asked for: float32 weights are the
    # float64 draw rounded, not a float32 draw
    W = cm.init_weights(1, 4, d1=6, sigma0=2.0, generator=g(7), dtype=torch.float32)
    want = (torch.randn(1, 4, 6, generator=g(7), dtype=F64) * 2.0).float()
    assert W.dtype == torch.float32
    assert torch.equal(W, want)


# -- attention, preactivations, features -------------------------------------------------------


def _attention_by_hand(X, scale):
    """softmax_l(scale <x_r, x_l>) weighted sum of the tokens, for every (run, view, query r)."""
    R, K, L, e = X.shape
    out = torch.zeros_like(X)
    for i in range(R):
        for k in range(K):
            for r in range(L):
                sc = [scale * float(X[i, k, r] @ X[i, k, q]) for q in range(L)]
                top = max(sc)
                w = [math.exp(v - top) for v in sc]
                z = sum(w)
                for q in range(L):
                    out[i, k, r] += w[q] / z * X[i, k, q]
    return out


def _features_by_hand(W, views, b, L, scale, mask=None):
    """h_i = sum_r BReLU_{b_i}(<w_i, Attn_r>) (eq (4)) by loops; pooled views: L times one term."""
    R, m, _ = W.shape
    K = views.shape[1]
    att = None if views.dim() == 3 else _attention_by_hand(views, scale)
    h = torch.zeros(R, K, m, dtype=W.dtype)
    for i in range(R):
        for k in range(K):
            for j in range(m):
                bb = float(b[i, j])
                if att is None:
                    s = float(W[i, j] @ views[i, k])
                    h[i, k, j] = L * math.copysign(max(abs(s) - bb, 0.0), s)
                else:
                    for r in range(views.shape[2]):
                        s = float(W[i, j] @ att[i, k, r])
                        h[i, k, j] += math.copysign(max(abs(s) - bb, 0.0), s)
                if mask is not None:
                    h[i, k, j] *= float(mask[i, j])
    return h


def _setup(seed=0, R=2, m=3, K=4, L=3, e=5):
    gen = g(seed)
    W = torch.randn(R, m, e, generator=gen, dtype=F64)
    X = torch.randn(R, K, L, e, generator=gen, dtype=F64)
    b = 0.3 * torch.rand(R, m, generator=gen, dtype=F64)
    return W, X, b


def test_attention_output_is_the_softmax_of_scaled_dot_products():
    _, X, _ = _setup(1)
    for scale in (0.0, 0.7, -0.4):
        got = cm.attention_output(X, scale)
        assert got.shape == X.shape
        assert torch.allclose(got, _attention_by_hand(X, scale), atol=1e-12)


def test_attention_at_scale_zero_is_the_token_mean():
    _, X, _ = _setup(2)
    got = cm.attention_output(X, 0.0)
    assert torch.allclose(got, X.mean(-2, keepdim=True).expand_as(X), atol=1e-14)


def test_preactivations_pooled_and_per_token():
    W, X, _ = _setup(3)
    xbar = X.mean(-2)  # (R, K, e)
    got = cm.preactivations(W, xbar)
    want = torch.tensor(
        [[[float(W[i, j] @ xbar[i, k]) for j in range(3)] for k in range(4)] for i in range(2)],
        dtype=F64,
    )
    assert got.shape == (2, 4, 3) and torch.allclose(got, want, atol=1e-12)
    att = _attention_by_hand(X, 0.6)
    got4 = cm.preactivations(W, X, 0.6)
    want4 = torch.zeros(2, 4, 3, 3, dtype=F64)
    for i in range(2):
        for k in range(4):
            for r in range(3):
                for j in range(3):
                    want4[i, k, r, j] = float(W[i, j] @ att[i, k, r])
    assert got4.shape == (2, 4, 3, 3) and torch.allclose(got4, want4, atol=1e-12)


def test_preactivations_default_scale_is_uniform_attention():
    W, X, _ = _setup(4)
    # att_scale defaults to 0: every query sees the token mean
    want = (X.mean(-2) @ W.transpose(-1, -2))[:, :, None, :].expand(2, 4, 3, 3)
    assert torch.allclose(cm.preactivations(W, X), want, atol=1e-12)


@pytest.mark.parametrize("pooled", [True, False])
def test_features_against_loops(pooled):
    W, X, b = _setup(5)
    views = X.mean(-2) if pooled else X
    got = cm.features(W, views, b, 3, 0.8)
    assert got.shape == (2, 4, 3)
    assert torch.allclose(got, _features_by_hand(W, views, b, 3, 0.8), atol=1e-12)


def test_features_default_scale_and_pooled_agree_with_tokens():
    # uniform attention: every attention output is the token mean, so L queries sum to L times
    # one term; the per-token path at the default att_scale (0) must give the pooled features
    W, X, b = _setup(6)
    assert torch.allclose(cm.features(W, X, b, 3), cm.features(W, X.mean(-2), b, 3), atol=1e-12)


@pytest.mark.parametrize("pooled", [True, False])
def test_features_mask_multiplies_each_runs_neurons(pooled):
    W, X, b = _setup(7)
    views = X.mean(-2) if pooled else X
    mask = torch.tensor([[True, False, True], [False, True, True]])
    got = cm.features(W, views, b, 3, 0.5, mask=mask)
    assert got.dtype == F64
    want = _features_by_hand(W, views, b, 3, 0.5, mask=mask)
    assert torch.allclose(got, want, atol=1e-12)
    full = cm.features(W, views, b, 3, 0.5)
    assert torch.equal(got[0, :, 1], torch.zeros(4, dtype=F64))
    assert torch.equal(got[1, :, 2], full[1, :, 2])


# -- alignment, cosines, noise_norm, bias_constant ---------------------------------------------


def _orthonormal(e, d, seed):
    Q, _ = torch.linalg.qr(torch.randn(e, d, generator=g(seed), dtype=F64))
    return Q  # (e, d), orthonormal columns


def test_alignment_cosines_noise_norm_against_projections():
    # small weights (norm < 1): a clamp that binds above 1e-300 would show
    W = 1e-2 * torch.randn(2, 3, 6, generator=g(8), dtype=F64)
    M = torch.stack([_orthonormal(6, 2, 9), _orthonormal(6, 2, 10)])  # (R, e, d)
    A = cm.alignment(W, M)
    assert A.shape == (2, 3, 2)
    for i in range(2):
        for j in range(3):
            w = W[i, j]
            for f in range(2):
                assert float(A[i, j, f]) == pytest.approx(float(w @ M[i, :, f]), abs=1e-15)
                cos = float(w @ M[i, :, f]) / float(w.norm())
                assert float(cm.cosines(W, M)[i, j, f]) == pytest.approx(cos, rel=1e-12)
            perp = w - M[i] @ (M[i].T @ w)  # P_perp w
            assert float(cm.noise_norm(W, M)[i, j]) == pytest.approx(float(perp.norm()), rel=1e-9)
    assert cm.noise_norm(W, M).shape == (2, 3)


def test_cosines_and_noise_norm_small_case_by_hand():
    M = torch.tensor([[[1.0], [0.0], [0.0]]], dtype=F64)  # e_1 in R^3
    W = torch.tensor([[[0.3, 0.4, 0.0], [0.0, 0.0, 0.0], [0.5, 0.0, 0.0]]], dtype=F64)
    # w = (0.3, 0.4, 0): cos = 0.3 / 0.5; noise = 0.4. w = 0: cos 0 (clamped), noise 0.
    # w = 0.5 e_1: cos 1, noise sqrt(0.25 - 0.25) = 0
    cos = cm.cosines(W, M)
    assert cos.shape == (1, 3, 1)
    assert cos[0, :, 0].tolist() == pytest.approx([0.6, 0.0, 1.0], abs=1e-15)
    assert cm.noise_norm(W, M)[0].tolist() == pytest.approx([0.4, 0.0, 0.0], abs=1e-15)


def test_noise_norm_clamps_rounding_below_zero_to_zero():
    # w in the span of M: ||w||^2 - ||M^T w||^2 is 0 up to rounding, which may be negative;
    # the result must be 0, never nan
    M = _orthonormal(5, 2, 11)[None]
    W = (M[0] @ torch.randn(2, 50, generator=g(12), dtype=F64)).T[None]  # (1, 50, 5)
    nn = cm.noise_norm(W, M)
    assert bool(torch.isfinite(nn).all()) and float(nn.max()) < 1e-7


def test_bias_constant_closed_forms():
    # d = e^2: sqrt(2 * 2 / e^2) = 2 / e
    assert cm.bias_constant(math.e**2, 0.3) == pytest.approx(0.3 * 2 / math.e, rel=1e-14)
    # d = 9: sqrt(2 log 9 / 9) = 0.70 (the docstring's value), times c_b
    assert cm.bias_constant(9, 1.0) == pytest.approx(0.699, abs=1e-3)
    assert cm.bias_constant(9, 0.5) == pytest.approx(0.5 * math.sqrt(4 * math.log(3) / 9))


# -- BiasSchedule: construction, to, cat --------------------------------------------------------


def test_schedule_initial_state():
    s = cm.BiasSchedule(3, 4, d=9, eta=0.1, c_b=0.3, dtype=torch.float32)
    assert (s.d, s.eta, s.c_b, s.t1_rule, s.t1_steps, s.post_t2) == (9, 0.1, 0.3, "mean", 0, "norm")
    assert s.b.shape == (3, 4) and s.b.dtype == torch.float32 and not bool(s.b.any())
    assert s.norm_t1.shape == (3, 4) and s.norm_t1.dtype == torch.float32
    assert not bool(s.norm_t1.any())
    assert s.stage.dtype == torch.long and s.stage.tolist() == [1, 1, 1]
    assert s.t1.dtype == torch.long and s.t1.tolist() == [-1, -1, -1]
    assert s.t2.dtype == torch.long and s.t2.tolist() == [-1, -1, -1]
    d = cm.BiasSchedule(1, 1, d=4, eta=0.5, c_b=1.0, t1_rule="min", t1_steps=7, post_t2="frozen")
    assert (d.t1_rule, d.t1_steps, d.post_t2, d.b.dtype) == ("min", 7, "frozen", F64)
    assert d.norm_t1.dtype == F64  # float64 by default, as b (not torch's default float32)


def test_schedule_rejects_unknown_rules():
    with pytest.raises(
        ValueError,
        match=r"parameter 't1_rule' = 'max' is not allowed: expected one of 'mean', 'min'$",
    ):
        cm.BiasSchedule(1, 1, d=4, eta=0.1, c_b=0.3, t1_rule="max")
    with pytest.raises(
        ValueError,
        match=r"parameter 'post_t2' = 'grow' is not allowed: "
        r"expected one of \('norm', 'frozen'\)$",
    ):
        cm.BiasSchedule(1, 1, d=4, eta=0.1, c_b=0.3, post_t2="grow")
    assert cm.POST_T2_RULES == ("norm", "frozen")


def _filled(R=2, m=3, **kw):
    s = cm.BiasSchedule(R, m, d=4, eta=0.1, c_b=0.3, **kw)
    s.b = torch.arange(R * m, dtype=F64).reshape(R, m) / 8
    s.stage = torch.arange(R, dtype=torch.long) % 3 + 1
    s.t1 = torch.arange(R, dtype=torch.long) + 5
    s.t2 = torch.arange(R, dtype=torch.long) + 9
    s.norm_t1 = torch.arange(R * m, dtype=F64).reshape(R, m) / 4 + 1
    return s


def test_schedule_to_moves_every_state_tensor_and_returns_self():
    s = _filled()
    before = {n: getattr(s, n).clone() for n in cm.BiasSchedule._STATE}
    assert s.to("cpu") is s
    for n, v in before.items():
        assert torch.equal(getattr(s, n), v)
    # Tensor.to also takes a dtype: every one of the five state tensors is converted
    assert s.to(torch.float32) is s
    for n in ("b", "stage", "t1", "t2", "norm_t1"):
        assert getattr(s, n).dtype == torch.float32
        assert torch.equal(getattr(s, n), before[n].float())


def test_schedule_cat_joins_runs_and_keeps_settings():
    a, b = _filled(R=2, post_t2="frozen"), _filled(R=3, post_t2="frozen")
    b.b = b.b + 10
    b.stage = torch.tensor([3, 3, 2])
    a_b = a.b.clone()
    out = cm.BiasSchedule.cat([a, b])
    for n in ("b", "stage", "t1", "t2", "norm_t1"):
        assert torch.equal(getattr(out, n), torch.cat([getattr(a, n), getattr(b, n)]))
    assert (out.d, out.eta, out.c_b, out.post_t2) == (4, 0.1, 0.3, "frozen")
    assert out is not a and torch.equal(a.b, a_b) and a.b.shape == (2, 3)
    one = cm.BiasSchedule.cat([a])  # a single part is allowed
    assert torch.equal(one.b, a.b) and one is not a


# -- BiasSchedule.feature_fraction and update ---------------------------------------------------


def test_feature_fraction_mean_and_min_by_hand():
    M = torch.tensor([[[1.0], [0.0], [0.0]]], dtype=F64)
    # fractions ||M^T w||^2 / ||w||^2: (1, 0) -> 1; (1, 1) -> 1/2; (1, sqrt 3) -> 1/4
    W = torch.tensor([[[1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [1.0, 0.0, 3**0.5]]], dtype=F64)
    mean = cm.BiasSchedule(1, 3, d=4, eta=0.1, c_b=0.3).feature_fraction(W, M)
    low = cm.BiasSchedule(1, 3, d=4, eta=0.1, c_b=0.3, t1_rule="min").feature_fraction(W, M)
    assert mean.shape == (1,) and float(mean[0]) == pytest.approx(1.75 / 3, rel=1e-14)
    assert float(low[0]) == pytest.approx(0.25, rel=1e-14)
    # a zero weight vector: 0 / clamp, not nan
    Z = torch.zeros(1, 3, 3, dtype=F64)
    assert cm.BiasSchedule(1, 3, d=4, eta=0.1, c_b=0.3).feature_fraction(Z, M).tolist() == [0.0]
    # tiny weights: the ratio does not depend on the scale (a clamp above 1e-300 would)
    assert float(cm.BiasSchedule(1, 3, d=4, eta=0.1, c_b=0.3).feature_fraction(1e-3 * W, M)[0]) == (
        pytest.approx(1.75 / 3, rel=1e-12)
    )


def _update_by_loops(sched, t, W_old, W_new, M):
    """A second implementation of BiasSchedule.update, one run and one neuron at a time, from
    the rules its docstring states; returns (b, stage, t1, t2, norm_t1) as lists."""
    R, m, _ = W_old.shape
    d, eta = sched.d, sched.eta
    b = sched.b.tolist()
    stage, t1, t2 = sched.stage.tolist(), sched.t1.tolist(), sched.t2.tolist()
    nt1 = sched.norm_t1.tolist()
    const = sched.c_b * math.sqrt(2 * math.log(d) / d)
    for r in range(R):
        n_old = [float(W_old[r, i].norm()) for i in range(m)]
        n_new = [float(W_new[r, i].norm()) for i in range(m)]
        st0 = stage[r]
        for i in range(m):
            ratio = n_new[i] / max(n_old[i], 1e-300)
            if st0 == 2:  # (285)
                b[r][i] = max(b[r][i] * (1 + eta / d), b[r][i] * ratio)
            elif st0 == 3 and sched.post_t2 == "norm":
                b[r][i] = b[r][i] * ratio
        if st0 == 2 and any(n_new[i] ** 2 >= d * nt1[r][i] ** 2 for i in range(m)):  # (61)
            stage[r], t2[r] = 3, t + 1
        if st0 == 1:
            if sched.t1_steps > 0:
                start = t + 1 >= sched.t1_steps
            else:
                fr = [
                    float((W_new[r, i] @ M[r]).pow(2).sum()) / max(n_new[i] ** 2, 1e-300)
                    for i in range(m)
                ]
                start = (sum(fr) / m if sched.t1_rule == "mean" else min(fr)) >= 0.5
            if start:
                stage[r], t1[r] = 2, t + 1
                nt1[r] = n_new
                b[r] = [const * n for n in n_new]
    return b, stage, t1, t2, nt1


def _check_against_loops(sched, t, W_old, W_new, M):
    want = _update_by_loops(sched, t, W_old, W_new, M)
    sched.update(t, W_old, W_new, M)
    b, stage, t1, t2, nt1 = want
    assert torch.allclose(sched.b, torch.tensor(b, dtype=F64), rtol=1e-12, atol=0)
    assert sched.stage.tolist() == stage and sched.t1.tolist() == t1 and sched.t2.tolist() == t2
    assert torch.allclose(sched.norm_t1, torch.tensor(nt1, dtype=F64), rtol=1e-12, atol=0)
    return want


@pytest.mark.parametrize("post_t2", ["norm", "frozen"])
@pytest.mark.parametrize("t1_rule", ["mean", "min"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_update_against_loops_random_states(post_t2, t1_rule, seed):
    # six runs: two in each stage, small weights (norms ~ 0.01-0.1, below 1), random growth
    gen = g(100 + seed)
    R, m, e, d = 6, 3, 6, 3
    M = torch.stack([_orthonormal(e, d, 200 + seed * 10 + r) for r in range(R)])
    sched = cm.BiasSchedule(R, m, d=4, eta=0.3, c_b=0.4, t1_rule=t1_rule, post_t2=post_t2)
    sched.stage = torch.tensor([1, 1, 2, 2, 3, 3])
    sched.t1 = torch.tensor([-1, -1, 3, 4, 2, 1])
    sched.t2 = torch.tensor([-1, -1, -1, -1, 6, 7])
    sched.b = 0.01 * torch.rand(R, m, generator=gen, dtype=F64) * (sched.stage[:, None] > 1)
    W_old = 0.03 * torch.randn(R, m, e, generator=gen, dtype=F64)
    # ||w^(T1)|| from 0.55 to 0.8 times the current norm: with d = 4, T2 (61) is reached by a
    # neuron grown by more than 1.1-1.6, so some runs cross it at once, some later, some not
    rel = 0.55 + 0.25 * torch.rand(R, m, generator=gen, dtype=F64)
    sched.norm_t1 = rel * W_old.norm(dim=-1) * (sched.stage[:, None] > 1)
    # each neuron scaled by 0.9-1.3 (so both branches of (285) occur) and nudged
    W_new = W_old * (0.9 + 0.4 * torch.rand(R, m, 1, generator=gen, dtype=F64))
    W_new = W_new + 0.01 * torch.randn(R, m, e, generator=gen, dtype=F64)
    for t in range(3):
        _check_against_loops(sched, t, W_old, W_new, M)
        W_old, W_new = W_new, W_new * 1.2 + 0.01 * torch.randn(R, m, e, generator=gen, dtype=F64)


def test_stage1_to_2_at_a_feature_fraction_of_exactly_one_half():
    # (34) with ">= 1/2": w = (a, a, 0) against M = e_1 has fraction exactly 1/2 and starts Stage 2
    M = torch.tensor([[[1.0], [0.0], [0.0]]] * 2, dtype=F64)
    W_old = torch.zeros(2, 1, 3, dtype=F64) + 0.01
    W_new = torch.tensor([[[0.5, 0.5, 0.0]], [[0.5, 0.625, 0.0]]], dtype=F64)
    s = cm.BiasSchedule(2, 1, d=9, eta=0.1, c_b=0.3)
    s.update(6, W_old, W_new, M)
    n = 0.5 * math.sqrt(2)
    assert s.stage.tolist() == [2, 1] and s.t1.tolist() == [7, -1] and s.t2.tolist() == [-1, -1]
    # at T1, b = c_b sqrt(2 log d / d) ||w|| (284) and ||w^(T1)|| is stored
    assert float(s.b[0, 0]) == pytest.approx(0.3 * math.sqrt(2 * math.log(9) / 9) * n, rel=1e-14)
    assert float(s.norm_t1[0, 0]) == pytest.approx(n, rel=1e-14)
    assert float(s.b[1, 0]) == 0.0 and float(s.norm_t1[1, 0]) == 0.0


def test_stage1_fixed_t1_steps_starts_at_step_t1_steps():
    M = torch.tensor([[[1.0], [0.0]]], dtype=F64)
    W = torch.tensor([[[0.0, 0.25]]], dtype=F64)  # fraction 0: only t1_steps can start Stage 2
    s = cm.BiasSchedule(1, 1, d=4, eta=0.1, c_b=1.0, t1_steps=3)
    s.update(1, W, W, M)  # t + 1 = 2 < 3
    assert s.stage.tolist() == [1] and s.t1.tolist() == [-1]
    s.update(2, W, W, M)  # t + 1 = 3 >= 3
    assert s.stage.tolist() == [2] and s.t1.tolist() == [3]
    assert float(s.b[0, 0]) == pytest.approx(math.sqrt(2 * math.log(4) / 4) * 0.25, rel=1e-14)
    s.update(3, W, W, M)  # already in Stage 2: T1 stays 3, b grows by (1 + eta/d)
    assert s.t1.tolist() == [3]
    assert float(s.b[0, 0]) == pytest.approx(
        math.sqrt(2 * math.log(4) / 4) * 0.25 * 1.025, rel=1e-14
    )


def _stage2(b, norm_t1, d=4, eta=0.5, post_t2="norm"):
    s = cm.BiasSchedule(1, len(b), d=d, eta=eta, c_b=0.3, post_t2=post_t2)
    s.stage = torch.tensor([2])
    s.t1 = torch.tensor([3])
    s.b = torch.tensor([b], dtype=F64)
    s.norm_t1 = torch.tensor([norm_t1], dtype=F64)
    return s


def test_stage2_bias_takes_the_larger_branch_of_285():
    M = torch.tensor([[[1.0], [0.0]]], dtype=F64)
    # d = 4, eta = 1/2: 1 + eta/d = 1.125. Neuron 0 grows by 1.5 (norm branch), neuron 1 by 1
    # (the (1 + eta/d) branch); norms 0.25 -> 0.375 and 0.5 -> 0.5 (below 1)
    W_old = torch.tensor([[[0.0, 0.25], [0.0, 0.5]]], dtype=F64)
    W_new = torch.tensor([[[0.0, 0.375], [0.0, 0.5]]], dtype=F64)
    s = _stage2([0.25, 0.5], [0.25, 0.5])
    s.update(10, W_old, W_new, M)
    assert s.b[0].tolist() == [0.375, 0.5625]
    assert s.stage.tolist() == [2] and s.t2.tolist() == [-1]  # 0.375^2 < 4 * 0.25^2


def test_stage2_to_3_when_any_neuron_reaches_d_times_its_t1_norm_squared():
    M = torch.tensor([[[1.0], [0.0]]], dtype=F64)
    # d = 4, ||w^(T1)|| = 0.25: T2 when ||w||^2 >= 4 * 0.0625 = 0.25, i.e. ||w|| >= 0.5 (exact)
    W_old = torch.tensor([[[0.0, 0.25], [0.0, 0.25]]], dtype=F64)
    below = torch.tensor([[[0.0, 0.4375], [0.0, 0.25]]], dtype=F64)
    s = _stage2([0.125, 0.125], [0.25, 0.25])
    s.update(4, W_old, below, M)
    assert s.stage.tolist() == [2] and s.t2.tolist() == [-1]
    at = torch.tensor([[[0.0, 0.5], [0.0, 0.4375]]], dtype=F64)  # one neuron exactly at the bar
    s.update(5, below, at, M)
    assert s.stage.tolist() == [3] and s.t2.tolist() == [6] and s.t1.tolist() == [3]
    # the step that reaches T2 still used the Stage 2 rule: neuron 0 grows by 0.5/0.4375,
    # neuron 1 by 1.75 = 0.4375 / 0.25 (both above 1 + eta/d = 1.125); the first step grew
    # neuron 0 by 1.75 and neuron 1 (unchanged norm) by 1.125
    b0 = 0.125 * 1.75 * (0.5 / 0.4375)
    b1 = 0.125 * 1.125 * 1.75
    assert s.b[0].tolist() == pytest.approx([b0, b1], rel=1e-14)


@pytest.mark.parametrize("post_t2", ["norm", "frozen"])
def test_stage3_bias_follows_the_norm_or_stays(post_t2):
    M = torch.tensor([[[1.0], [0.0]]], dtype=F64)
    s = _stage2([0.125, 0.25], [0.125, 0.125], post_t2=post_t2)
    s.stage = torch.tensor([3])
    s.t2 = torch.tensor([8])
    W_old = torch.tensor([[[0.0, 0.5], [0.0, 0.25]]], dtype=F64)
    W_new = torch.tensor([[[0.0, 0.25], [0.0, 0.75]]], dtype=F64)  # ratios 1/2 and 3
    s.update(20, W_old, W_new, M)
    want = [0.0625, 0.75] if post_t2 == "norm" else [0.125, 0.25]
    assert s.b[0].tolist() == want
    assert s.stage.tolist() == [3] and s.t2.tolist() == [8] and s.t1.tolist() == [3]


def test_update_from_a_zero_norm_uses_the_clamped_ratio():
    # n_old = 0 in Stage 3 ("norm"): ratio = n_new / 1e-300, finite; b = 0 times it stays 0, and
    # with n_new = 0 as well the ratio is 0 / 1e-300 = 0, so b becomes 0 (not 0 / 0 = nan)
    M = torch.tensor([[[1.0], [0.0]]], dtype=F64)
    s = _stage2([0.0, 0.5], [0.125, 0.125])
    s.stage = torch.tensor([3])
    W_old = torch.zeros(1, 2, 2, dtype=F64)
    W_new = torch.tensor([[[0.0, 0.25], [0.0, 0.0]]], dtype=F64)
    s.update(0, W_old, W_new, M)
    assert s.b[0].tolist() == [0.0, 0.0]


def test_features_keep_the_weights_dtype_whatever_the_masks():
    # a float64 (or bool) mask on float32 weights: the features stay float32, the mask is cast
    W, X, b = _setup(8)
    W32, X32, b32 = W.float(), X.float(), b.float()
    want = _features_by_hand(W, X.mean(-2), b, 3, 0.0, mask=torch.tensor([[1, 0, 1], [0, 1, 1]]))
    for mask in (
        torch.tensor([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]], dtype=F64),
        torch.tensor([[True, False, True], [False, True, True]]),
    ):
        for views in (X32.mean(-2), X32):
            got = cm.features(W32, views, b32, 3, mask=mask)
            assert got.dtype == torch.float32
            assert torch.allclose(got.double(), want, rtol=1e-4, atol=1e-5)
