"""Tests of companions.contrastive.data written against its surviving mutants (issue 23).

Expected values are closed forms of the generator's laws (``E|z|`` of ``U[mag_low, 1]``, the
mean of a Binomial conditioned on ``N >= 1``, Definition 3.1's frequencies), small cases worked
out by hand, and a second implementation of the sampler that replays the generator's draws in the
order the source makes them (support, sign, then per view magnitudes and token presence; then the
noise of each view), so that every draw's law, shape and dtype is pinned.
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from companions.contrastive import data as cd

F64 = torch.float64


def g(seed=0):
    return torch.Generator().manual_seed(seed)


# -- frequencies and moments -----------------------------------------------------------------------


def test_eps_vector_layout_and_bounds():
    assert cd.eps_vector(4, 1, 2, 0.5) == [2.0, 0.5, 0.5, 0.5]
    assert cd.eps_vector(3, 2, 1, 0.25) == [1.0, 1.0, 0.25]
    for n_maj in (0, 3, -1):
        with pytest.raises(ValueError, match=rf"'n_maj' = {n_maj} is not allowed: .*d = 3"):
            cd.eps_vector(3, n_maj, 1.0, 0.5)


def test_activation_probs_clamp_at_one_only():
    p = cd.activation_probs([4.0, 2.0, 1.0, 0.0], 0.5)
    assert p.dtype == F64 and p.tolist() == [1.0, 1.0, 0.5, 0.0]


@settings(max_examples=30, deadline=None)
@given(st.floats(0.0, 0.99))
def test_mean_magnitude_is_the_uniform_mean(a):
    # E|z| for |z| ~ U[a, 1]: the midpoint; check against the integral of the density 1 / (1 - a)
    assert math.isclose(cd.mean_magnitude(a), (1 - a**2) / (2 * (1 - a)), rel_tol=1e-12)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 8), st.floats(0.05, 1.0))
def test_expected_tokens_is_the_conditioned_binomial_mean(L, q):
    # sum_{n>=1} n C(L, n) q^n (1-q)^(L-n) / Pr(N >= 1), written out
    pmf = [math.comb(L, n) * q**n * (1 - q) ** (L - n) for n in range(L + 1)]
    want = sum(n * p for n, p in enumerate(pmf)) / sum(pmf[1:])
    assert math.isclose(cd.expected_tokens(L, q), want, rel_tol=1e-10)


def test_kappa_closed_form_and_default_q():
    eps = [1.0, 0.5]
    # q = 1: every token carries the feature, E N = L; p = (0.5, 0.25), E|z| = 3/4 at mag_low 1/2
    k = cd.kappa(eps, 0.5, 4, 0.5)
    assert torch.allclose(k, torch.tensor([0.5, 0.25], dtype=F64) * (4 * 0.75) ** 2)
    # q = 1/2, L = 2: E N = 1 / (1 - 1/4) = 4/3
    k = cd.kappa(eps, 0.5, 2, 0.0, q=0.5)
    assert torch.allclose(k, torch.tensor([0.5, 0.25], dtype=F64) * (4 / 3 * 0.5) ** 2)


def test_c_z_inverts_kappa():
    d = 9
    kap = 0.3 * 2.5 * math.log(math.log(d)) / d  # kappa_j = eps_j C_z loglog d / d with C_z 2.5
    assert math.isclose(cd.c_z(kap, 0.3, d), 2.5, rel_tol=1e-12)


# -- dictionary ------------------------------------------------------------------------------------


def test_dictionary_is_the_qr_of_a_float64_gaussian():
    M = cd.dictionary(2, 5, 3, g(4), dtype=torch.float32)
    G = torch.randn(2, 5, 3, generator=g(4), dtype=F64)
    Q, _ = torch.linalg.qr(G)
    assert M.dtype == torch.float32 and M.shape == (2, 5, 3)
    assert torch.allclose(M.double(), Q, atol=1e-6)
    M64 = cd.dictionary(2, 5, 3, g(4))
    assert M64.dtype == F64 and torch.equal(M64, Q)
    eye = torch.eye(3, dtype=F64).expand(2, 3, 3)
    assert torch.allclose(M64.transpose(-1, -2) @ M64, eye, atol=1e-12)


def test_dictionary_needs_d1_above_d():
    with pytest.raises(ValueError, match="'d1' = 3 is not allowed: expected d1 > d = 3"):
        cd.dictionary(1, 3, 3, g())
    assert cd.dictionary(1, 4, 3, g()).shape == (1, 4, 3)


# -- the sampler, replayed -------------------------------------------------------------------------


def _presence(R, K, d, L, q, gen):
    tok = torch.rand(R, K, L, d, generator=gen) < q
    empty = ~tok.any(-2)
    while bool(empty.any()):
        redraw = torch.rand(R, K, L, d, generator=gen) < q
        tok = torch.where(empty[:, :, None, :], redraw, tok)
        empty = ~tok.any(-2)
    return tok


def _latents(probs, K, L, mag_low, q, gen):
    """sample_latents written out: per (run, pair, feature) a support and a sign shared by both
    views and all tokens; per view and token a magnitude U[mag_low, 1], times the token presence
    when q < 1."""
    R, d = probs.shape
    support = torch.rand(R, K, d, generator=gen, dtype=F64) < probs[:, None, :]
    u = torch.rand(R, K, d, generator=gen)  # the sign's draw is a float32 one
    sign = 1.0 - 2.0 * (u < 0.5).to(F64)
    views = []
    for _ in range(2):
        mag = mag_low + (1 - mag_low) * torch.rand(R, K, L, d, generator=gen, dtype=F64)
        if q < 1.0:
            mag = mag * _presence(R, K, d, L, q, gen)
        views.append(support[:, :, None, :] * sign[:, :, None, :] * mag)
    return views


@pytest.mark.parametrize("q", [1.0, 0.5])
def test_sample_latents_replayed(q):
    probs = torch.tensor([[1.0, 0.5, 0.0], [0.25, 1.0, 0.75]], dtype=F64)
    zx, zy = cd.sample_latents(probs, 5, 3, 0.25, q, g(3))
    ex, ey = _latents(probs, 5, 3, 0.25, q, g(3))
    assert zx.dtype == F64 and zx.shape == (2, 5, 3, 3)
    assert torch.equal(zx, ex) and torch.equal(zy, ey)


def test_sample_latents_laws():
    probs = torch.tensor([[1.0, 0.0]], dtype=F64)
    zx, zy = cd.sample_latents(probs, 400, 2, 0.5, 1.0, g(1))
    a = zx[..., 0]
    # feature 0 always active: |z| in [1/2, 1]; feature 1 never; the two views share the sign
    assert bool((a.abs() >= 0.5).all() and (a.abs() <= 1).all())
    assert bool((zx[..., 1] == 0).all() and (zy[..., 1] == 0).all())
    assert torch.equal(torch.sign(zx[..., 0]), torch.sign(zy[..., 0]))
    # the sign is fair and shared by the tokens; the views' magnitudes differ
    signs = torch.sign(a[..., 0])
    assert abs(float(signs.mean())) < 0.15
    assert torch.equal(torch.sign(a[..., 1]), signs) and not torch.equal(zx, zy)


def test_token_presence_conditions_on_one_token():
    tok = cd._token_presence((3, 50, 2), 4, 0.1, g(2))
    assert tok.shape == (3, 50, 4, 2) and tok.dtype == torch.bool
    assert bool(tok.any(-2).all())  # every (run, pair, feature) has a token
    assert torch.equal(tok, _presence(3, 50, 2, 4, 0.1, g(2)))


def _batch(M, probs, sigma, K, L, mag_low, q, gen, pooled):
    zx, zy = _latents(probs, K, L, mag_low, q, gen)
    R, d1, _ = M.shape
    out = []
    for z in (zx, zy):
        if pooled:  # the token mean M zbar plus noise of sd sigma / sqrt(L), drawn in float32
            noise = torch.randn(R, K, d1, generator=gen).to(F64)
            x = (
                torch.einsum("rkd,red->rke", z.mean(-2), M)
                + noise * (sigma / L**0.5)[:, None, None]
            )
        else:
            noise = torch.randn(R, K, L, d1, generator=gen).to(F64)
            x = torch.einsum("rkld,red->rkle", z, M) + noise * sigma[:, None, None, None]
        out.append(x)
    return out, zx, zy


@pytest.mark.parametrize("pooled", [True, False])
def test_sample_batch_replayed(pooled):
    M = cd.dictionary(2, 6, 3, g(0))
    probs = torch.tensor([[1.0, 0.5, 0.25], [0.75, 0.0, 1.0]], dtype=F64)
    sigma = torch.tensor([0.5, 2.0], dtype=F64)
    b = cd.sample_batch(
        M, probs, sigma=sigma, K=4, L=3, mag_low=0.5, q=0.5, generator=g(9), pooled=pooled
    )
    (ex, ey), zx, zy = _batch(M, probs, sigma, 4, 3, 0.5, 0.5, g(9), pooled)
    assert b.pooled is pooled and b.x.dtype == F64
    assert torch.equal(b.zx, zx) and torch.equal(b.zy, zy)
    assert torch.allclose(b.x, ex, rtol=0, atol=1e-12)
    assert torch.allclose(b.y, ey, rtol=0, atol=1e-12)


@pytest.mark.parametrize("pooled", [True, False])
def test_sample_batch_in_float32_and_float64_noise(pooled):
    M = cd.dictionary(1, 5, 2, g(0), dtype=torch.float32)
    probs = torch.tensor([[1.0, 1.0]], dtype=F64)
    sigma = torch.tensor([0.5], dtype=F64)
    b = cd.sample_batch(
        M, probs, sigma=sigma, K=4, L=2, mag_low=0.5, q=1.0, generator=g(1), pooled=pooled
    )
    # "all arithmetic stays in M's dtype": views and codes in float32
    assert b.x.dtype == b.y.dtype == b.zx.dtype == b.zy.dtype == torch.float32
    # noise_dtype=float64: the Gaussian draws are float64 ones (from 16 draws on, torch's float32
    # and float64 normal streams differ; below, by the float32 rounding: hence rtol=0)
    b64 = cd.sample_batch(
        M.double(),
        probs,
        sigma=sigma,
        K=4,
        L=2,
        mag_low=0.5,
        q=1.0,
        generator=g(1),
        pooled=pooled,
        noise_dtype=F64,
    )
    gen = g(1)
    zx, _ = _latents(probs, 4, 2, 0.5, 1.0, gen)
    if pooled:
        noise = torch.randn(1, 4, 5, generator=gen, dtype=F64)
        want = zx.mean(-2) @ M.double().transpose(-1, -2) + noise * 0.5 / 2**0.5
    else:
        noise = torch.randn(1, 4, 2, 5, generator=gen, dtype=F64)
        want = zx @ M.double().transpose(-1, -2)[:, None] + noise * 0.5
    assert torch.allclose(b64.x, want, rtol=0, atol=1e-12)


def test_sample_batch_noise_variance():
    # no signal: the pooled views are the token-mean noise, variance sigma^2 / L per coordinate
    M = cd.dictionary(1, 8, 2, g(0))
    probs = torch.zeros(1, 2, dtype=F64)
    b = cd.sample_batch(
        M,
        probs,
        sigma=torch.tensor([2.0], dtype=F64),
        K=4000,
        L=4,
        mag_low=0.5,
        q=1.0,
        generator=g(5),
    )
    assert abs(float(b.x.var()) / (4.0 / 4) - 1) < 0.05
    t = cd.sample_batch(
        M,
        probs,
        sigma=torch.tensor([2.0], dtype=F64),
        K=500,
        L=4,
        mag_low=0.5,
        q=1.0,
        generator=g(6),
        pooled=False,
    )
    assert t.x.shape == (1, 500, 4, 8) and abs(float(t.x.var()) / 4.0 - 1) < 0.05


# -- sweeps ----------------------------------------------------------------------------------------


def test_run_grid_order_and_types():
    e, n, c = cd.run_grid([0.1, 1], [2, 3], 2)
    assert e.dtype == F64 and n.dtype == F64 and c.dtype == torch.long
    assert e.tolist() == [0.1, 0.1, 0.1, 0.1, 1.0, 1.0, 1.0, 1.0]
    assert n.tolist() == [2.0, 2.0, 3.0, 3.0, 2.0, 2.0, 3.0, 3.0]
    assert c.tolist() == [0, 0, 1, 1, 2, 2, 3, 3]


def test_sample_batch_scales_the_noise_in_float64():
    # a float32 sigma is read as float64 before sigma / sqrt(L) (the source's s): the pooled noise
    # scale is the float64 quotient, not a float32 one (they differ in the 8th digit)
    M = cd.dictionary(1, 5, 2, g(0))
    probs = torch.tensor([[0.5, 1.0]], dtype=F64)
    sigma = torch.tensor([0.1], dtype=torch.float32)
    b = cd.sample_batch(M, probs, sigma=sigma, K=6, L=3, mag_low=0.5, q=1.0, generator=g(2))
    (ex, ey), _, _ = _batch(M, probs, sigma.double(), 6, 3, 0.5, 1.0, g(2), True)
    assert torch.allclose(b.x, ex, rtol=0, atol=1e-14) and torch.allclose(
        b.y, ey, rtol=0, atol=1e-14
    )


@pytest.mark.parametrize("pooled", [True, False])
def test_sample_batch_float64_noise_cast_to_a_float32_dictionary(pooled):
    # float64 draws with a float32 M: the noise is cast to M's dtype, so are the views
    M = cd.dictionary(1, 5, 2, g(0), dtype=torch.float32)
    probs = torch.tensor([[1.0, 0.5]], dtype=F64)
    sigma = torch.tensor([0.5], dtype=F64)
    b = cd.sample_batch(
        M,
        probs,
        sigma=sigma,
        K=3,
        L=2,
        mag_low=0.5,
        q=1.0,
        generator=g(1),
        pooled=pooled,
        noise_dtype=F64,
    )
    assert b.x.dtype == b.y.dtype == torch.float32
