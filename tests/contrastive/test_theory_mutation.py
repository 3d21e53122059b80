"""companions.contrastive.theory's two Monte Carlo estimators where the mutants of issue 23 left
them untested: predicted_t1_mc's noise drawn in blocks of 1024 coordinates and summed in float64,
and prob_lucky_mc's second condition (the other coordinates below t2) and its chunked loop."""

from __future__ import annotations

import math

import pytest
import torch

from companions.contrastive import theory as ct

# -- predicted_t1_mc ----------------------------------------------------------------------------


def _draws(runs, m, d, n_noise, seed):
    """The draws predicted_t1_mc makes from a generator seeded ``seed``: ``a2`` (runs, m, d), then
    the noise in blocks of 1024 coordinates (the block size its source states), summed."""
    g = torch.Generator().manual_seed(seed)
    a2 = torch.randn(runs, m, d, generator=g, dtype=torch.float64) ** 2
    blocks = [min(1024, n_noise - lo) for lo in range(0, n_noise, 1024)]
    n2 = sum(
        (torch.randn(runs, m, k, generator=g, dtype=torch.float64) ** 2).sum(-1) for k in blocks
    )
    return a2, n2


def _t1_one_feature(a2, n2, lg):
    """d = 1, m = 1: the ratio a2 g^2t / (a2 g^2t + n2) reaches 1/2 first at
    t = max(0, ceil(ln(n2 / a2) / (2 ln g)))."""
    t = torch.ceil(torch.log(n2 / a2) / (2 * lg)).clamp(min=0)
    return t.flatten()


def test_predicted_t1_mc_sums_every_block_of_noise():
    # 1030 noise coordinates: a block of 1024 and one of 6; each run's T1 in closed form from the
    # same draws. A block dropped, overwritten, one coordinate short or long moves many runs' T1.
    kappa, d1, eta, n_neg, runs, seed = 0.2, 1031, 0.1, 1, 200, 11
    lg = math.log(1 + eta * (1 - 1 / (1 + n_neg)) * kappa)  # growth_rate with lam = 0, c_tau = 1
    a2, n2 = _draws(runs, 1, 1, d1 - 1, seed)
    want = _t1_one_feature(a2[..., 0], n2, lg)
    assert float(want.min()) > 0  # no run is done at t = 0
    mean, sd = ct.predicted_t1_mc(
        [kappa],
        d1,
        m=1,
        eta=eta,
        lam=0.0,
        n_neg=n_neg,
        runs=runs,
        generator=torch.Generator().manual_seed(seed),
    )
    assert mean == pytest.approx(float(want.mean()), rel=1e-12)
    assert sd == pytest.approx(float(want.std()), rel=1e-12)


def test_predicted_t1_mc_keeps_the_noise_norm_in_float64():
    # Run 0 is put on a knife edge: the growth is chosen so that at t = 1 its feature energy lies
    # halfway between ||noise||^2 in float64 and the same number rounded to float32. The float64
    # comparison decides T1 (1 if the energy is above ||noise||^2, else 2); float32 flips it.
    eta, n_neg, seed = 0.1, 1, 0
    a2, n2 = _draws(2, 1, 1, 1, seed)
    a, n64 = float(a2[0, 0, 0]), float(n2[0, 0])
    n32 = float(torch.tensor(n64, dtype=torch.float32))
    assert a < n64 and n32 != n64  # not done at t = 0; float32 does round this norm
    kappa = (math.sqrt((n64 + n32) / 2 / a) - 1) / (eta * (1 - 1 / (1 + n_neg)))
    lg = torch.log(ct.growth_rate([kappa], eta, 0.0, n_neg) / ct.noise_rate(eta, 0.0))
    fe = a * float(torch.exp(2 * lg))  # run 0's feature energy at t = 1
    assert min(n64, n32) < fe < max(n64, n32)
    t0 = 1.0 if fe >= n64 else 2.0
    t1 = float(_t1_one_feature(a2[1:, :, 0], n2[1:], float(lg))[0])  # run 1: far from an edge
    mean, sd = ct.predicted_t1_mc(
        [kappa],
        2,
        m=1,
        eta=eta,
        lam=0.0,
        n_neg=n_neg,
        runs=2,
        generator=torch.Generator().manual_seed(seed),
    )
    assert mean == (t0 + t1) / 2
    assert sd == pytest.approx(abs(t0 - t1) / math.sqrt(2), rel=1e-12)


# -- prob_lucky_mc ------------------------------------------------------------------------------


def test_prob_lucky_mc_second_condition_in_two_dimensions():
    # d = 2: u_1^2 ~ Beta(1/2, 1/2) (arcsine law, Pr[u^2 >= x] = 1 - (2/pi) asin(sqrt x)) and
    # u_2^2 = 1 - u_1^2, so both conditions read u_1^2 >= max(t1, 1 - t2). c1, c2 are plain
    # formulas of (rho, gamma); gamma = -0.9 puts 1 - t2 (0.605) above t1 (0.231), where the
    # second condition bites (in the papers' range, rho <= 1 <= 1 + gamma, it never does at d = 2).
    d, rho, gamma, draws = 2, math.sqrt(0.3), -0.9, 20_000
    t1, t2 = ct.c1(rho, gamma) * math.log(2) / 2, ct.c2(rho, gamma) * math.log(2) / 2
    assert 1 - t2 > t1 + 0.3
    p = 1 - 2 / math.pi * math.asin(math.sqrt(1 - t2))
    first_only = 1 - 2 / math.pi * math.asin(math.sqrt(t1))  # 0.68, not 0.43
    assert first_only - p > 0.2
    got = ct.prob_lucky_mc(d, rho, gamma, draws, torch.Generator().manual_seed(0))
    assert abs(got - p) < 5 * math.sqrt(p * (1 - p) / draws)


def test_prob_lucky_mc_counts_every_chunk_once():
    # t1 = 0 (gamma = -1: c1 = 0) and t2 >= 1 (c2 = 4 rho^2 = 64) make every draw lucky, so the
    # estimate is exactly 1 however the draws are chunked. d = 200: chunks of
    # 20_000_000 // 200 = 100_000 rows, so 100_016 draws take two. (The least draws that take two
    # chunks: about 2e7 numbers whatever d is, hence this test's second or so.)
    d, rho, gamma, draws = 200, 4.0, -1.0, 100_016
    assert ct.c1(rho, gamma) == 0 and ct.c2(rho, gamma) * math.log(d) / d >= 1
    assert ct.prob_lucky_mc(d, rho, gamma, draws, torch.Generator().manual_seed(4)) == 1.0
