"""Unit tests of companions.contrastive.pruning ([001] Algorithm 1, eq. (5), Theorem 3.2, Appendix
F): each one fails on a plausible wrong implementation."""

import math
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
import sympy as sp
import torch

from companions import losses
from companions.contrastive import data as cd
from companions.contrastive import model as cm
from companions.contrastive import pruning as pr
from companions.contrastive import theory as th
from companions.contrastive import training as tr

SEED_001 = Path("/work/shared/seeds/001_4649f4726ba76075.txt")


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def _setup(**kw):
    base = dict(
        d=4, n_maj=2, d1=20, m=6, K=8, n_neg=7, sigma0=0.3, eta=0.05, lam=0.01, tau=2.0, bias=False
    )
    base.update(kw)
    return tr.Setup(**base)


def _aligned_weights(M, norms, feats, noise=0.0, seed=0):
    """``w_i = norms[r, i] M_{feats[r, i]} + noise``: neurons with known norm and dominant
    feature."""
    R, d1, _ = M.shape
    cols = M.transpose(-1, -2)[torch.arange(R)[:, None], torch.as_tensor(feats)]  # (R, m, d1)
    W = torch.as_tensor(norms, dtype=torch.float64)[..., None] * cols
    return W + noise * torch.randn(W.shape, generator=gen(seed), dtype=torch.float64)


# ---------------------------------------------------------------------------------------------
# 1. magnitude_mask / pruned_count
# ---------------------------------------------------------------------------------------------


def test_magnitude_mask_prunes_the_floor_alpha_m_smallest_norms():
    """Catches pruning the largest norms, ceil/round instead of floor, or one global top-k across
    runs."""
    m, d1 = 10, 12
    norms = torch.tensor(
        [
            [5.0, 0.3, 7.0, 0.1, 2.0, 9.0, 0.2, 4.0, 8.0, 6.0],
            [0.05, 3.0, 2.0, 1.0, 9.0, 8.0, 7.0, 6.0, 5.0, 4.0],
        ],
        dtype=torch.float64,
    )
    dirs = torch.randn(2, m, d1, generator=gen(), dtype=torch.float64)
    W = norms[..., None] * dirs / dirs.norm(dim=-1, keepdim=True)
    mask = pr.magnitude_mask(W, 0.35)  # floor(3.5) = 3 per run
    assert mask.shape == (2, m) and mask.dtype == W.dtype
    assert (mask == 0).sum(-1).tolist() == [3, 3]
    assert set(torch.nonzero(mask[0] == 0).flatten().tolist()) == {1, 3, 6}
    assert set(torch.nonzero(mask[1] == 0).flatten().tolist()) == {0, 2, 3}  # per run, not global
    assert bool(((mask == 0) | (mask == 1)).all())
    assert torch.equal(pr.magnitude_mask(W, 0.0), torch.ones(2, m, dtype=torch.float64))
    assert (pr.magnitude_mask(W, 0.99) == 0).sum(-1).tolist() == [9, 9]
    assert pr.pruned_count(10, 0.35) == 3 and pr.pruned_count(10, 0.09) == 0
    assert pr.pruned_count(100, 0.29) == 29  # 0.29 * 100 = 28.999999999999996 in floating point


def test_magnitude_mask_ties_broken_by_index():
    """Catches an unstable sort that prunes an arbitrary member of a tie."""
    W = torch.ones(1, 6, 4, dtype=torch.float64)
    W[0, 4] *= 3
    assert torch.nonzero(pr.magnitude_mask(W, 0.5)[0] == 0).flatten().tolist() == [0, 1, 2]


@pytest.mark.parametrize("alpha", [-0.1, 1.0, 1.5, "x", None])
def test_bad_alpha_raises_naming_alpha(alpha):
    """Catches silently accepting a ratio outside [0, 1) (e.g. alpha = 1 pruning every neuron)."""
    W = torch.ones(1, 4, 3, dtype=torch.float64)
    with pytest.raises(ValueError, match="alpha"):
        pr.magnitude_mask(W, alpha)
    with pytest.raises(ValueError, match="alpha"):
        pr.Pruner(alpha=alpha)


# ---------------------------------------------------------------------------------------------
# 2. Eq. (5): masked logits, unmasked neuron factors
# ---------------------------------------------------------------------------------------------


def _batch_and_weights(s, R=2, seed=0, wscale=0.5):
    M = cd.dictionary(R, s.d1, s.d, gen(seed))
    probs = cd.activation_probs(cd.eps_vector(s.d, s.n_maj, 1.0, 0.3), 0.6)[None].repeat(R, 1)
    batch = cd.sample_batch(
        M,
        probs,
        sigma=torch.full((R,), 0.2, dtype=torch.float64),
        K=s.K,
        L=s.L,
        mag_low=s.mag_low,
        q=1.0,
        generator=gen(seed + 1),
    )
    W = cm.init_weights(R, s.m, d1=s.d1, sigma0=wscale, generator=gen(seed + 2))
    return M, batch, W


def _eq5_by_hand(W, b, batch, s, mask):
    """Eq. (5) written out: g_i = (1/K) sum_k [sum_k' (P_mask[k,k'] - 1[k=k']) h_i(Y_k')] grad
    h_i(X_k)."""
    L = s.L
    px, py = batch.x @ W.transpose(-1, -2), batch.y @ W.transpose(-1, -2)  # (R, K, m)
    hx = L * (torch.relu(px - b[:, None]) - torch.relu(-px - b[:, None]))
    hy = L * (torch.relu(py - b[:, None]) - torch.relu(-py - b[:, None]))
    dh = L * (px.abs() > b[:, None]).to(W.dtype)  # d h_i(X) / d <w_i, xbar>
    S = (hx * mask[:, None]) @ (hy * mask[:, None]).transpose(-1, -2) / s.tau
    K = s.K
    offs = (torch.arange(K)[None, :] - torch.arange(K)[:, None]) % K
    S = S.masked_fill(offs > s.n_neg, float("-inf"))
    C = torch.softmax(S, -1) - torch.eye(K, dtype=W.dtype)
    coef = (C @ hy) * dh  # (R, K, m)
    return torch.einsum("rki,rkd->rid", coef, batch.x) / K * s.c_tau


def test_all_ones_mask_equals_no_mask():
    """Catches a masked path that differs from the vanilla one when nothing is pruned."""
    s = _setup()
    _, batch, W = _batch_and_weights(s)
    b = torch.zeros(2, s.m, dtype=torch.float64)
    g0, loss0, lp0 = tr.gradient(W, b, batch, s)
    g1, loss1, lp1 = tr.gradient(W, b, batch, s, mask=torch.ones(2, s.m, dtype=torch.float64))
    assert (
        torch.allclose(g0, g1, atol=1e-12, rtol=0)
        and torch.allclose(loss0, loss1)
        and torch.allclose(lp0, lp1)
    )


@pytest.mark.parametrize("kw", [dict(), dict(n_neg=3), dict(grad_scale="standard", tau=0.7)])
def test_masked_gradient_is_eq5_by_hand(kw):
    """Catches straight-through masking (zero gradient for pruned neurons), masked neuron factors,
    or masked logits not used (P from the full model), against eq. (5) written out at b = 0."""
    s = _setup(**kw)
    _, batch, W = _batch_and_weights(s)
    b = torch.zeros(2, s.m, dtype=torch.float64)
    mask = torch.ones(2, s.m, dtype=torch.float64)
    mask[0, [1, 4]] = 0
    mask[1, 0] = 0
    g, _, _ = tr.gradient(W, b, batch, s, mask=mask)
    ref = _eq5_by_hand(W, b, batch, s, mask)
    assert torch.allclose(g, ref, atol=1e-10, rtol=0), (g - ref).abs().max()
    # a pruned neuron keeps a full-size gradient (not straight-through)
    for r, i in ((0, 1), (0, 4), (1, 0)):
        assert float(g[r, i].norm()) > 1e-3 * float(g[r].norm(dim=-1).max())
    # straight-through: the gradient of the masked loss; it vanishes on pruned neurons, so differs
    # from (5)
    Wg = W.clone().requires_grad_(True)
    hx = cm.features(Wg, batch.x, b, s.L, mask=mask)
    hy = cm.features(Wg, batch.y, b, s.L, mask=mask).detach()
    (st,) = torch.autograd.grad(tr.info_nce(hx, hy, s.tau, s.n_neg).sum(), Wg)
    assert float(st[0, 1].abs().max()) == 0.0 and not torch.allclose(
        g, st * s.tau * s.c_tau, atol=1e-6
    )
    # kept neurons: masked logits change their gradient too
    g_full, _, _ = tr.gradient(W, b, batch, s)
    assert float((g[0, 0] - g_full[0, 0]).norm()) > 1e-6 * float(g_full[0, 0].norm())
    assert torch.allclose(
        _eq5_by_hand(W, b, batch, s, torch.ones_like(mask)), g_full, atol=1e-10, rtol=0
    )


def test_masked_gradient_eq5_with_a_bias():
    """Catches neuron factors taken from the masked model, or the bias ignored, when b > 0 (BReLU
    active)."""
    s = _setup()
    _, batch, W = _batch_and_weights(s, wscale=0.5)
    b = torch.full((2, s.m), 0.15, dtype=torch.float64)
    mask = torch.ones(2, s.m, dtype=torch.float64)
    mask[:, 2] = 0
    g, _, _ = tr.gradient(W, b, batch, s, mask=mask)
    assert torch.allclose(g, _eq5_by_hand(W, b, batch, s, mask), atol=1e-10, rtol=0)


# ---------------------------------------------------------------------------------------------
# 3. Pruner and PruneLog
# ---------------------------------------------------------------------------------------------


def test_pruner_magnitude_start_every_and_log():
    """Catches masking before `start`, recomputing the mask every step despite `every`, step
    numbering relative to 0 instead of `start`, or a log with wrong ids / dominant features."""
    R, m, d1, d = 2, 8, 20, 4
    M = cd.dictionary(R, d1, d, gen())
    feats = torch.tensor([[0, 1, 2, 3, 0, 1, 2, 3], [3, 2, 1, 0, 3, 2, 1, 0]])
    base = torch.arange(1.0, m + 1, dtype=torch.float64).repeat(R, 1)  # neuron 0 smallest
    W_a = _aligned_weights(M, base, feats)
    W_b = _aligned_weights(M, base.flip(-1), feats)  # neuron m-1 smallest
    p = pr.Pruner(alpha=0.25, start=3, every=2)  # floor(2) = 2 pruned
    for t in range(3):
        assert p(t, W_a, M) is None
    m3 = p(3, W_a, M).clone()
    assert torch.nonzero(m3[0] == 0).flatten().tolist() == [0, 1]
    m4 = p(4, W_b, M)  # between recomputations: unchanged although W changed
    assert torch.equal(m4, m3)
    m5 = p(5, W_b, M)
    assert torch.nonzero(m5[1] == 0).flatten().tolist() == [6, 7]
    log = p.log.stack()
    assert log.steps.tolist() == [3, 4, 5]
    assert sorted(log.ids[0, 0].tolist()) == [0, 1] and sorted(log.ids[2, 1].tolist()) == [6, 7]
    # dominant feature of the logged ids, cos^2 ~ 1, norms as built
    assert log.dominant[0, 0].tolist() == feats[0, log.ids[0, 0]].tolist()
    assert log.dominant[2, 1].tolist() == feats[1, log.ids[2, 1]].tolist()
    assert torch.allclose(log.cos2, torch.ones_like(log.cos2), atol=1e-5)
    assert sorted(log.norm[2, 0].tolist()) == [1.0, 2.0]


def test_pruner_every_one_times_pruned():
    """Catches a times_pruned that counts steps or runs wrong when the pruned set moves every
    step."""
    R, m, d1 = 2, 6, 10
    M = cd.dictionary(R, d1, 3, gen())
    p = pr.Pruner(alpha=0.34, every=1)  # floor(2.04) = 2
    expected = torch.zeros(R, m, dtype=torch.long)
    for t in range(5):
        W = torch.randn(R, m, d1, generator=gen(10 + t), dtype=torch.float64)
        mask = p(t, W, M)
        assert torch.equal(mask, pr.magnitude_mask(W, 0.34))
        expected += (mask == 0).long()
    assert torch.equal(p.log.times_pruned(m), expected)
    assert int(expected.sum()) == 5 * R * 2


def test_pruner_oracle_is_the_fixed_complement():
    """Catches an oracle mask that keeps (instead of prunes) the oracle set or follows the
    weights."""
    R, m, d1 = 2, 6, 10
    M = cd.dictionary(R, d1, 3, gen())
    oracle = torch.zeros(R, m, dtype=torch.bool)
    oracle[0, [1, 3]] = True
    oracle[1, [0, 5]] = True
    p = pr.Pruner(rule="oracle", oracle=oracle, start=2)
    assert p(0, torch.randn(R, m, d1, generator=gen(1), dtype=torch.float64), M) is None
    for t in range(2, 6):
        mask = p(t, torch.randn(R, m, d1, generator=gen(t), dtype=torch.float64), M)
        assert torch.equal(mask, (~oracle).double())
    assert torch.equal(p.log.times_pruned(m), 4 * oracle.long())


@pytest.mark.parametrize(
    "kw, name",
    [
        (dict(rule="random"), "rule"),
        (dict(rule="oracle"), "oracle"),
        (dict(oracle=torch.zeros(1, 3, dtype=torch.bool)), "oracle"),
        (dict(start=-1), "start"),
        (dict(every=0), "every"),
        (dict(start=1.5), "start"),
        (dict(log_every=0), "log_every"),
    ],
)
def test_pruner_bad_parameters_raise(kw, name):
    """Catches a Pruner that accepts an unknown rule, an oracle rule without its set, or a negative
    start."""
    with pytest.raises(ValueError, match=name):
        pr.Pruner(**kw)


def test_prunelog_categories_hand_built():
    """Catches majority / minority swapped (dominant >= n_maj is minority), unaligned neurons
    counted as aligned, or fractions normalised per step instead of per pruned neuron-step."""
    R, m, d1, d, n_maj = 2, 6, 20, 4, 2
    M = cd.dictionary(R, d1, d, gen())
    # run 0: neuron 0 -> minority feature 3, neuron 1 -> majority feature 0, neuron 2 unaligned
    # run 1: neurons 0, 1 -> minority (2, 3), neuron 2 -> majority 1
    feats = torch.tensor([[3, 0, 0, 1, 2, 3], [2, 3, 1, 0, 1, 2]])
    W = _aligned_weights(M, torch.ones(R, m), feats)
    v = torch.randn(d1, generator=gen(7), dtype=torch.float64)
    v = v - M[0] @ (M[0].T @ v)  # orthogonal to every feature of run 0
    W[0, 2] = v / v.norm()
    oracle = torch.zeros(R, m, dtype=torch.bool)
    oracle[:, :3] = True
    p = pr.Pruner(rule="oracle", oracle=oracle)
    for t in range(3):
        p(t, W, M)
    cat = p.log.categories(n_maj)
    total = cat["minority"] + cat["majority"] + cat["unaligned"]
    assert torch.allclose(total, torch.ones(R, dtype=total.dtype))
    third = torch.tensor([1 / 3, 2 / 3])
    assert torch.allclose(cat["minority"], third.to(cat["minority"].dtype))
    assert torch.allclose(cat["majority"], torch.tensor([1 / 3, 1 / 3]).to(cat["majority"].dtype))
    assert torch.allclose(cat["unaligned"], torch.tensor([1 / 3, 0.0]).to(cat["unaligned"].dtype))


def test_prunelog_ragged_oracle_counts_only_pruned_neurons():
    """Catches a log that, for runs with fewer pruned neurons than others, records kept neurons as
    pruned."""
    R, m, d1 = 2, 5, 10
    M = cd.dictionary(R, d1, 3, gen())
    W = torch.randn(R, m, d1, generator=gen(1), dtype=torch.float64)
    oracle = torch.zeros(R, m, dtype=torch.bool)
    oracle[0, [1, 3]] = True
    oracle[1, 2] = True  # oracle_set returns fewer than k where a run has fewer specialists
    p = pr.Pruner(rule="oracle", oracle=oracle)
    for t in range(3):
        p(t, W, M)
    assert torch.equal(p.log.times_pruned(m), 3 * oracle.long())


def test_oracle_set_and_specialists():
    """Catches an oracle set that takes non-specialists, ignores `feature` per run, or exceeds k."""
    R, m, d1, d = 2, 6, 20, 4
    M = cd.dictionary(R, d1, d, gen())
    feats = torch.tensor([[3, 3, 3, 0, 1, 2], [2, 0, 1, 2, 3, 0]])
    norms = torch.tensor([[1.0, 2.0, 3.0, 0.5, 1.0, 1.0], [1.0] * 6])
    W = _aligned_weights(M, norms, feats, noise=0.02, seed=3)
    spec = pr.specialists(W, M)
    assert torch.equal(spec.any(-1), torch.ones(R, m, dtype=torch.bool))
    assert torch.equal(spec.float().argmax(-1), feats)
    P = pr.oracle_set(W, M, torch.tensor([3, 2]), k=2)
    assert P.sum(-1).tolist() == [2, 2]
    assert bool((feats[P.nonzero(as_tuple=True)] == torch.tensor([3, 3, 2, 2])).all())
    assert P.tolist()[1] == [True, False, False, True, False, False]
    P1 = pr.oracle_set(W, M, torch.tensor([1, 3]), k=3)  # one specialist each: fewer than k
    assert P1.sum(-1).tolist() == [1, 1]
    assert int(pr.strongest_minority_feature(W, M, 2)[0]) in (2, 3)


# ---------------------------------------------------------------------------------------------
# 4. training.resume
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def checkpoint():
    s = tr.Setup(
        d=6,
        n_maj=3,
        d1=40,
        m=12,
        K=32,
        n_neg=31,
        sigma0=0.05,
        eta=0.1,
        lam=0.001,
        tau=1.0,
        bias=True,
        t1_steps=20,
    )
    ck = tr.train(
        s,
        torch.full((3,), 0.3),
        nsr=torch.full((3,), 0.1),
        steps=60,
        generator=gen(0),
        progress=False,
        log_every=10,
    )
    return s, ck


def test_resume_is_reproducible_and_continues_the_step_count(checkpoint):
    """Catches a resume that restarts the step count at 0, ignores the generator, or re-initialises
    W."""
    s, ck = checkpoint
    a = tr.resume(s, ck, steps=15, generator=gen(5), progress=False, log_every=5)
    b = tr.resume(s, ck, steps=15, generator=gen(5), progress=False, log_every=5)
    c = tr.resume(s, ck, steps=15, generator=gen(6), progress=False, log_every=5)
    assert torch.equal(a.W, b.W) and not torch.allclose(a.W, c.W)
    assert int(a.steps[0]) == int(ck.steps[-1]) == 60 and int(a.steps[-1]) == 75
    # the first recorded state is the checkpoint's, bias schedule included (not a fresh b = 0)
    assert torch.allclose(a.A[0], ck.A[-1]) and torch.equal(a.b[0], ck.schedule.b.float())
    assert float(ck.schedule.b.abs().max()) > 0
    assert (
        torch.equal(a.M, ck.M) and torch.equal(a.probs, ck.probs) and torch.equal(a.sigma, ck.sigma)
    )
    assert not torch.allclose(a.W, ck.W)


def test_resume_leaves_the_checkpoint_untouched(checkpoint):
    """Catches a resume that updates the checkpoint's weights or bias schedule in place."""
    s, ck = checkpoint
    W0, b0, t10, stage0 = (
        ck.W.clone(),
        ck.schedule.b.clone(),
        ck.schedule.t1.clone(),
        ck.schedule.stage.clone(),
    )
    h = tr.resume(s, ck, steps=10, generator=gen(1), progress=False)
    assert torch.equal(ck.W, W0) and torch.equal(ck.schedule.b, b0)
    assert torch.equal(ck.schedule.t1, t10) and torch.equal(ck.schedule.stage, stage0)
    assert not torch.equal(h.b_final, b0)  # the resumed copy did move


def test_resume_passes_absolute_steps_to_the_mask_hook(checkpoint):
    """Catches step numbers passed to `masks` relative to the resume point (a Pruner start never
    reached)."""
    s, ck = checkpoint
    seen = []

    def hook(t, W, M):
        seen.append(t)
        return None

    tr.resume(s, ck, steps=4, generator=gen(2), progress=False, masks=hook)
    assert seen == [60, 61, 62, 63]
    p = pr.Pruner(alpha=0.2, start=62)
    tr.resume(s, ck, steps=5, generator=gen(2), progress=False, masks=p)
    assert p.log.stack().steps.tolist() == [62, 63, 64]


def test_resume_with_oracle_pruning_grows_the_pruned_projection_faster():
    """Catches eq. (5) implemented as straight-through (pruned neurons frozen) or as no-op masking:
    pruning the j* specialists must speed up their own growth along M_{j*} (Theorem 3.2 (a))."""
    s = tr.Setup(
        d=6,
        n_maj=3,
        d1=40,
        m=12,
        K=32,
        n_neg=31,
        sigma0=0.05,
        eta=0.1,
        lam=0.0,
        tau=1.0,
        bias=False,
    )
    ck = tr.train(
        s,
        torch.full((3,), 0.3),
        nsr=torch.full((3,), 0.1),
        steps=60,
        generator=gen(0),
        progress=False,
    )
    M = ck.M.double()
    jstar = pr.strongest_minority_feature(ck.W, M, s.n_maj)
    assert bool((jstar >= s.n_maj).all())
    P = pr.oracle_set(ck.W, M, jstar, 2)
    assert bool((P.sum(-1) >= 1).all())
    a = tr.resume(s, ck, steps=30, generator=gen(5), progress=False)
    b = tr.resume(
        s, ck, steps=30, generator=gen(5), progress=False, masks=pr.Pruner(rule="oracle", oracle=P)
    )
    ga = pr.log_growth_per_step(pr.pruned_projection(a, P, jstar), a.steps)
    gb = pr.log_growth_per_step(pr.pruned_projection(b, P, jstar), b.steps)
    assert bool((gb > ga + 0.001).all()), (ga, gb)
    # other_feature_projection blanks exactly the column j* and keeps max_i |<w_i, M_j>| elsewhere
    oa = pr.other_feature_projection(a, jstar)
    assert int(torch.isnan(oa).sum()) == oa.shape[0] * 3 and bool(
        torch.isnan(oa[:, torch.arange(3), jstar]).all()
    )
    j = int((jstar[0] + 1) % s.d)
    assert torch.equal(oa[:, 0, j], a.A[:, 0, :, j].abs().max(-1).values)


# ---------------------------------------------------------------------------------------------
# 5. first_order_logit_change
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n_neg", [5, 2])
def test_first_order_logit_change_matches_finite_difference(n_neg):
    """Catches a wrong sign or a missing term in (211): the derivative of the softmax diagonal."""
    K = 6
    S = torch.randn(3, K, K, generator=gen(), dtype=torch.float64)
    if n_neg < K - 1:
        S = S.masked_fill(~losses.negative_mask(K, n_neg), float("-inf"))
    dS = 1e-6 * torch.randn(3, K, K, generator=gen(1), dtype=torch.float64)
    P = torch.softmax(S, -1)
    fd = torch.diagonal(torch.softmax(S + dS, -1) - P, dim1=-2, dim2=-1)
    fo = pr.first_order_logit_change(P, dS)
    assert fo.shape == (3, K)
    assert float(((fo - fd).abs() / fd.abs()).max()) < 1e-5
    # only the positive logit moves: ell'_p (1 - ell'_p) dS_p
    dpos = torch.diag_embed(torch.diagonal(dS, dim1=-2, dim2=-1))
    lp = torch.diagonal(P, dim1=-2, dim2=-1)
    assert torch.allclose(
        pr.first_order_logit_change(P, dpos), lp * (1 - lp) * torch.diagonal(dS, dim1=-2, dim2=-1)
    )


def test_softmax_derivatives_symbolic_gaps_vanish():
    """Catches a wrong (207): every gap between sympy's derivative and the stated form must simplify
    to 0."""
    for n in (1, 2, 3):
        gap_p, gaps_s = th.softmax_derivatives_symbolic(n)
        assert (
            sp.simplify(gap_p) == 0
            and len(gaps_s) == n
            and all(sp.simplify(g) == 0 for g in gaps_s)
        )


# ---------------------------------------------------------------------------------------------
# 6-7. logit_effect and linear_pair_moment
# ---------------------------------------------------------------------------------------------


def _hist_like(R=2, d1=30, d=4, n_maj=2, m=8, eps_min=0.3, scale=0.8, noise=0.05, seed=0):
    M = cd.dictionary(R, d1, d, gen(seed))
    feats = torch.arange(m).remainder(d).repeat(R, 1)
    norms = scale * (1 + torch.rand(R, m, generator=gen(seed + 1), dtype=torch.float64))
    W = _aligned_weights(M, norms, feats, noise=noise, seed=seed + 2)
    eps = torch.tensor(cd.eps_vector(d, n_maj, 1.0, eps_min), dtype=torch.float64).repeat(R, 1)
    s = tr.Setup(d=d, n_maj=n_maj, d1=d1, m=m, K=32, n_neg=31, tau=1.0, p0=0.5, bias=False)
    hist = SimpleNamespace(
        W=W,
        M=M,
        b_final=torch.zeros(R, m, dtype=torch.float64),
        eps=eps,
        probs=cd.activation_probs(eps, s.p0),
        sigma=torch.full((R,), 0.05, dtype=torch.float64),
    )
    return s, hist, feats


def test_logit_effect_empty_pruned_set_changes_nothing():
    """Catches a masked branch that differs from the full model when P is empty, or a nonzero (211)
    at dS = 0."""
    s, hist, _ = _hist_like()
    R = hist.W.shape[0]
    out = pr.logit_effect(
        hist,
        s,
        pruned=torch.zeros(R, s.m, dtype=torch.bool),
        feature=torch.tensor([3, 3]),
        batches=4,
        generator=gen(1),
    )
    for D in ("D1", "D2"):
        full, masked = out["one_minus_lp"][D]
        assert torch.allclose(full, masked, atol=1e-14, rtol=0) and bool((full > 0).all())
        assert (
            float(out["first_order"][D].abs().max()) == 0.0
            and float(out["actual"][D].abs().max()) == 0.0
        )
    assert float(out["pos"].abs().max()) == 0.0 and float(out["neg"].abs().max()) == 0.0


def test_logit_effect_first_order_matches_actual_and_lemma_f2():
    """Catches a (211) with the wrong scale (e.g. missing the 1 - (1 - shrink)^2 factor or 1/tau),
    and a D1 / D2 split by the wrong feature: pruning j*'s specialists raises E[1 - ell'_p] on D1
    (Lemma F.2)."""
    s, hist, feats = _hist_like()
    s = tr.Setup(**{**s.__dict__, "tau": 0.8})
    feature = torch.tensor([3, 2])
    pruned = feats == feature[:, None]
    small = pr.logit_effect(
        hist, s, pruned=pruned, feature=feature, batches=4, generator=gen(2), shrink=1e-5
    )
    for D in ("D1", "D2"):
        fo, act = small["first_order"][D], small["actual"][D]
        assert bool((fo.abs() > 0).all())
        assert float(((fo - act).abs() / act.abs()).max()) < 1e-3, (D, fo, act)
    full_prune = pr.logit_effect(
        hist, s, pruned=pruned, feature=feature, batches=8, generator=gen(3)
    )
    f1, m1 = full_prune["one_minus_lp"]["D1"]
    assert bool((m1 > f1).all())
    assert bool((full_prune["actual"]["D1"] < 0).all())  # the positive logit falls on D1
    assert bool((full_prune["actual"]["D1"].abs() > 3 * full_prune["actual"]["D2"].abs()).all())


def test_logit_effect_frac_d1_is_the_activation_probability():
    """Catches a D1 indicator read from the wrong feature axis or from the signed code (cancelling
    tokens)."""
    s, hist, feats = _hist_like(eps_min=0.4)
    feature = torch.tensor([2, 1])  # minority (p = 0.2) in run 0, majority (p = 0.5) in run 1
    batches = 30
    out = pr.logit_effect(
        hist,
        s,
        pruned=feats == feature[:, None],
        feature=feature,
        batches=batches,
        generator=gen(4),
    )
    p = hist.probs[torch.arange(2), feature]
    assert torch.allclose(p, torch.tensor([0.2, 0.5], dtype=torch.float64))
    n = batches * s.K
    se = (p * (1 - p) / n).sqrt()
    assert bool(((out["frac_D1"] - p).abs() < 4 * se).all()), (out["frac_D1"], p)
    assert bool(((out["frac_D1"] > 0) & (out["frac_D1"] < 1)).all())


def test_linear_pair_moment_matches_monte_carlo():
    """Catches a (196) with kappa_j missing, <w_i, M_j> not squared, or a sum over the wrong
    neurons; and a nonzero negative-pair moment (Lemma F.1 (b))."""
    s, hist, feats = _hist_like(noise=0.1)
    feature = torch.tensor([3, 0])
    pruned = (feats == feature[:, None]) | (torch.arange(s.m) == 1)[None]
    out = pr.logit_effect(
        hist, s, pruned=pruned, feature=feature, batches=60, generator=gen(5), bias=False
    )
    kap = cd.kappa(hist.eps, s.p0, s.L, s.mag_low, s.token_q)
    exact = pr.linear_pair_moment(hist.W, hist.M, pruned, kap)
    assert exact.shape == (2,) and bool((exact > 0).all())
    assert bool(((out["pos"] - exact).abs() < 4 * out["pos_se"]).all()), (
        out["pos"],
        exact,
        out["pos_se"],
    )
    assert bool((out["pos_se"] < 0.1 * exact).all())
    assert bool((out["neg"].abs() < 4 * out["neg_se"]).all()), (out["neg"], out["neg_se"])
    # by hand for one run: sum_{i in P} sum_j <w_i, M_j>^2 kappa_j
    A = hist.W[0] @ hist.M[0]
    assert abs(float(((A[pruned[0]] ** 2) * kap[0]).sum()) - float(exact[0])) < 1e-12
    wrong = pr.linear_pair_moment(hist.W, hist.M, pruned, torch.ones_like(kap))
    assert bool(((out["pos"] - wrong).abs() > 4 * out["pos_se"]).any())


def test_pruned_projection_and_log_growth():
    """Catches a projection averaged over all neurons instead of P, or a growth rate not per
    step."""
    T, R, m, d = 3, 2, 4, 3
    A = torch.zeros(T, R, m, d)
    A[:, :, :, 1] = torch.tensor([1.0, 2.0, 4.0])[:, None, None] * torch.arange(1.0, m + 1)
    A[:, 1, :, 2] = -5.0
    hist = SimpleNamespace(A=A)
    P = torch.tensor([[True, True, False, False], [False, False, False, True]])
    proj = pr.pruned_projection(hist, P, torch.tensor([1, 2]))
    assert torch.allclose(proj[:, 0], torch.tensor([1.5, 3.0, 6.0])) and torch.allclose(
        proj[:, 1], torch.full((3,), 5.0)
    )
    g = pr.log_growth_per_step(proj, torch.tensor([10, 20, 30]))
    assert torch.allclose(g, torch.tensor([math.log(4) / 20, 0.0]))


# ---------------------------------------------------------------------------------------------
# 8. theory: Appendix F.4
# ---------------------------------------------------------------------------------------------


def test_f4_symbolic_and_times():
    """Catches a wrong elapsed time in F.4, swapped linear / geometric times, or a wrong rate
    formula."""
    gap1, gap2, T, r, syms = th.f4_elapsed_time_symbolic()
    assert sp.simplify(gap1) == 0 and sp.simplify(gap2) == 0
    lin, geo = th.f4_times(1.0, 0.2, 0.01)
    assert lin > 0 and geo > 0 and geo < lin
    assert abs(lin - 400.0) < 1e-9 and abs(geo - math.log(5) / math.log(1.01)) < 1e-9
    lin, geo = th.f4_times(1.0, 0.2, 1e-8)
    assert abs(geo / lin - math.log(5) / 4) < 1e-6
    assert abs(th.prune_rate(0.02, 0.1, 0.3, 0.7) - 0.02 * 0.1 * 0.3 * 0.7) < 1e-15
    assert th.prune_rate(0.02, 0.2, 0.3, 0.7) == pytest.approx(
        2 * th.prune_rate(0.02, 0.1, 0.3, 0.7)
    )
    expr, (eps_s, d) = th.extra_rate_ratio_symbolic()
    assert sp.simplify(expr - d / eps_s) == 0


def test_lemma_f2_margin_by_hand():
    """(181)'s pruning term alpha m p* / Xi_2^2 with Xi_2 = m d^(-rho^2): at m = 30, d = 9,
    rho = 0.5, Xi_2 = 30 / 9^0.25 = 30 / sqrt(3), so alpha m p* / Xi_2^2 = alpha p* 3 / 30.
    Catches a Xi_2 without its m, rho instead of rho^2, or the square of Xi_2 dropped."""
    assert th.lemma_f2_margin(0.1, 30, 9, 0.5, 0.125) == pytest.approx(0.1 * 0.125 * 3 / 30)
    # at rho = 1, Xi_2 = m / d: the term is alpha p* d^2 / m
    assert th.lemma_f2_margin(0.2, 10, 4, 1.0, 0.5) == pytest.approx(0.2 * 0.5 * 16 / 10)
    for bad in ((0.0, 30, 9, 0.5, 0.1), (0.1, 30, 9, 0.0, 0.1), (0.1, 30, 9, 0.5, 1.5)):
        with pytest.raises(ValueError, match="lemma_f2_margin"):
            th.lemma_f2_margin(*bad)


# ---------------------------------------------------------------------------------------------
# 9. Table 2
# ---------------------------------------------------------------------------------------------


def _parse_seed_table2():
    text = SEED_001.read_text(encoding="utf-8")
    start = text.index("Table 2: Linear probe accuracy")
    block = text[start : text.index("## 5 LIMITATION", start)]
    rows, dataset = [], None
    for line in block.splitlines():
        fields = line.split("\t")
        if len(fields) < 6 or not re.fullmatch(r"\d+", fields[1].strip()):
            continue
        dataset = fields[0].strip() or dataset
        cells = []
        for cell in fields[2:6]:
            nums = [float(x) for x in re.findall(r"\d+\.\d+", cell)]
            cells += [nums[0], nums[1] if len(nums) > 1 else None]
        rows.append((dataset, int(fields[1]), *cells))
    return rows


@pytest.mark.skipif(not SEED_001.exists(), reason="the seed text of [001] is not available")
def test_table2_is_transcribed_from_the_seed():
    """Catches a typo in the transcription of Table 2 (every number parsed from the seed's text)."""
    parsed = _parse_seed_table2()
    assert len(parsed) == 8
    assert list(pr.TABLE_2) == parsed


def test_table2_rows_and_measures():
    """Catches a gain computed the wrong way round, a monotonicity test with the wrong comparison,
    or a count of Delta20 reductions that includes ties / increases."""
    assert len(pr.TABLE_2) == 8
    rows = {(r["dataset"], r["rho"]): r for r in pr.table2_rows()}
    assert rows[("CIFAR10-LT", 50)]["gain"] == 8.02
    assert rows[("CIFAR100-LT", 100)]["delta20_change"] == -2.73
    assert rows[("CIFAR10-LT", 1)]["gain_in_sd"] is None
    assert rows[("CIFAR10-LT", 10)]["gain_in_sd"] == round(5.67 / math.hypot(1.03, 0.67), 2)
    got = pr.table2_measures()
    assert got["rows"] == 8 and got["smallest_gain"] == 0.59  # CIFAR10-LT rho = 1
    # CIFAR10-LT: 0.59, 5.67, 8.02, 7.07; CIFAR100-LT: 5.12, 6.80, 7.81
    assert got["steps"] == {"CIFAR10-LT": [5.08, 2.35, -0.95], "CIFAR100-LT": [1.68, 1.01]}
    assert got["smallest_gain_step"] == -0.95
    assert got["delta20_not_falling"] == 0


def test_table2_measures_on_a_hand_built_table(monkeypatch):
    """Catches a strict monotonicity test (equal gains are not a fall) or ties counted as Delta20
    reductions."""
    table = (
        ("A", 1, 50.0, None, 51.0, None, 2.0, None, 2.0, None),
        ("A", 10, 50.0, 1.0, 51.0, 1.0, 3.0, 1.0, 2.5, 1.0),
        ("A", 50, 50.0, 1.0, 52.5, 1.0, 3.0, 1.0, 3.5, 1.0),
        ("B", 10, 40.0, 0.5, 43.0, 0.5, 5.0, 0.5, 4.0, 0.5),
        ("B", 50, 40.0, 0.5, 42.0, 0.5, 5.0, 0.5, 4.0, 0.5),
        ("C", 5, 60.0, None, 59.5, None, 1.0, None, 0.5, None),
    )
    monkeypatch.setattr(pr, "TABLE_2", table)
    got = pr.table2_measures()
    assert got["rows"] == 6 and got["smallest_gain"] == -0.5  # C's gain is negative
    assert got["steps"] == {"A": [0.0, 1.5], "B": [-1.0]}  # C has one row: no step
    assert got["smallest_gain_step"] == -1.0
    assert got["delta20_not_falling"] == 2  # A rho=1 (a tie) and A rho=50 (a rise)
    rows = pr.table2_rows()
    assert (
        rows[1]["gain_in_sd"] == round(1.0 / math.sqrt(2), 2) and rows[2]["delta20_change"] == 0.5
    )


def test_minority_rule_prunes_the_most_minority_aligned_neurons():
    """Catches a 'minority' rule that ranks by the wrong subspace, the wrong direction, or ignores
    n_maj."""
    d1, d, n_maj = 20, 4, 2
    M = torch.eye(d1, dtype=torch.float64)[:, :d][None]  # M_j = e_j
    W = torch.zeros(1, 5, d1, dtype=torch.float64)
    W[0, 0, 0] = 1.0  # majority only
    W[0, 1, 2] = 1.0
    W[0, 1, 0] = 1.0  # half minority
    W[0, 2, 3] = 1.0  # pure minority
    W[0, 3, 10] = 1.0  # noise only
    W[0, 4, 1] = 3.0
    W[0, 4, 2] = 0.1  # majority, a little minority
    mask = pr.minority_mask(W, M, 0.4, n_maj)  # floor(0.4 * 5) = 2 pruned
    assert mask[0].tolist() == [1.0, 0.0, 0.0, 1.0, 1.0]
    p = pr.Pruner(alpha=0.4, rule="minority", n_maj=n_maj)
    assert torch.equal(p(0, W, M), mask)
    with pytest.raises(ValueError, match="n_maj"):
        pr.Pruner(alpha=0.4, rule="minority")


@pytest.mark.parametrize("attention", ["uniform", "softmax"])
def test_eq5_gradient_written_out_matches_the_training_step(attention):
    """Catches a training step (or a written-out eq. (5)) that masks h_i, drops the activation
    indicators, or takes the logits from the full model."""
    g = gen(11)
    s = tr.Setup(
        d1=40,
        m=8,
        K=16,
        n_neg=9,
        attention=attention,
        att_scale=0.5 if attention == "softmax" else 0.0,
        grad_scale="standard",
        tau=0.7,
    )
    M = cd.dictionary(2, s.d1, s.d, g)
    W = cm.init_weights(2, s.m, d1=s.d1, sigma0=0.3, generator=g)
    b = 0.1 * W.norm(dim=-1)
    probs = cd.activation_probs(torch.tensor([cd.eps_vector(s.d, s.n_maj, 1.0, 0.5)] * 2), 0.5)
    batch = cd.sample_batch(
        M,
        probs,
        sigma=torch.full((2,), 0.05),
        K=s.K,
        L=s.L,
        mag_low=s.mag_low,
        q=s.token_q,
        generator=g,
        pooled=attention == "uniform",
    )
    mask = pr.magnitude_mask(W, 0.25)
    g_train, _, _ = tr.gradient(W, b, batch, s, mask)
    g_eq5 = pr.eq5_gradient(W, b, batch, s, mask)
    assert torch.allclose(g_train, g_eq5, rtol=1e-10, atol=1e-13)
    g_full = pr.eq5_gradient(W, b, batch, s, torch.ones_like(mask))
    assert not torch.allclose(g_eq5, g_full)


def test_prunelog_since_keeps_the_later_steps_only():
    """Catches a filter that keeps the wrong steps or drops a field."""
    R, m, d1 = 1, 4, 8
    M = torch.eye(d1, dtype=torch.float64)[:, :3][None]
    p = pr.Pruner(alpha=0.25, rule="oracle", oracle=torch.tensor([[False, True, False, False]]))
    for t in range(6):
        p(t, torch.randn(R, m, d1, generator=gen(t), dtype=torch.float64), M)
    late = p.log.since(4)
    assert late.steps.tolist() == [4, 5]
    assert late.ids.shape == (
        2,
        1,
        1,
    ) and late.dominant.shape == late.cos2.shape == late.norm.shape == (2, 1, 1)
    assert torch.equal(late.times_pruned(m), torch.tensor([[0, 2, 0, 0]]))


def test_minority_norm_gap_compares_with_every_other_neuron():
    M = torch.eye(4, 3, dtype=torch.float64)[None]  # d1 = 4, d = 3, feature 2 the minority
    W = torch.zeros(1, 4, 4, dtype=torch.float64)
    W[0, 0, 0] = 4.0  # majority specialist
    W[0, 1, 1] = 1.0  # majority specialist, small
    W[0, 2, 2] = 0.5  # minority specialist
    W[0, 3, 3] = 2.0  # unaligned (noise direction only)
    gap = pr.minority_norm_gap(W, M, n_maj=2)
    assert torch.allclose(gap, torch.tensor([math.log(0.5) - math.log(2.0)], dtype=torch.float64))


def test_majority_scale_reads_the_given_weights():
    M = torch.eye(3, 2, dtype=torch.float64)[None]
    W = torch.tensor([[[2.0, 0.0, 0.1], [0.0, 4.0, 0.0]]], dtype=torch.float64)
    spec = torch.tensor([[[True], [False]]])  # neuron 0 is the specialist of feature 0
    assert torch.allclose(pr.majority_scale(W, M, spec), torch.tensor([2.0], dtype=torch.float64))
    assert torch.allclose(
        pr.majority_scale(3 * W, M, spec), torch.tensor([6.0], dtype=torch.float64)
    )


def test_other_feature_rate_skips_j_star():
    h = tr.History()
    h.steps = torch.tensor([0, 10])
    A = torch.ones(2, 1, 1, 3)
    A[1, 0, 0] = torch.tensor([math.exp(1.0), math.exp(0.2), math.exp(0.4)])
    h.A = A
    rate = pr.other_feature_rate(h, torch.tensor([0]))  # j* = 0 is left out
    assert torch.allclose(rate, torch.tensor([0.03], dtype=torch.float64), atol=1e-6)
