"""companions.contrastive.theory where a plausible bug does not vanish: the (1 - 1/|B|) factor at
small batches, kappas that float32 cannot hold, roots below one, runs that hit at t = 0, chunked
noise of more than one chunk, and the degenerate dimension d = 1."""

from __future__ import annotations

import math

import pytest
import sympy as sp
import torch

from companions.contrastive import theory as ct


def test_population_gradient_is_the_growth_rate_step():
    # one data step w <- w - eta grad multiplies <w, M_j> by growth_rate(kappa_j, eta, 0, n_neg, c)
    g = torch.Generator().manual_seed(0)
    M, _ = torch.linalg.qr(torch.randn(2, 7, 3, generator=g, dtype=torch.float64))  # (R, d1, d)
    W = torch.randn(2, 5, 7, generator=g, dtype=torch.float64)
    kappa, eta = [0.3, 0.7, 0.1], 0.2
    for n_neg, c_tau in [(1, 1.0), (3, 2.0), (7, 0.5)]:
        grad = ct.population_gradient(W, M, kappa, n_neg, c_tau)
        step = (W - eta * grad) @ M
        rate = ct.growth_rate(kappa, eta, 0.0, n_neg, c_tau)
        assert torch.allclose(step, (W @ M) * rate, rtol=1e-13, atol=0)
        # the noise directions get no systematic gradient
        assert torch.allclose(grad @ (torch.eye(7, dtype=M.dtype) - M @ M.transpose(-1, -2)), 0 * W)


def test_predicted_t1_below_one_loop():
    # d1 = 2d: the features hold half the energy at t = 0 already; slightly above, the root is < 1
    kap = [0.5, 0.4]
    assert ct.predicted_t1(kap, 4, 0.1, 0.0, 3) == pytest.approx(0.0, abs=1e-12)
    t = ct.predicted_t1(kap, 5, 2.0, 0.0, 3)
    g = ct.growth_rate(kap, 2.0, 0.0, 3)
    assert 0 < t < 1 and float((g ** (2 * t)).sum()) == pytest.approx(3.0, rel=1e-9)


def test_predicted_t1_mc_counts_hits_at_t_zero_and_its_defaults():
    # one feature, two noise coordinates, a huge growth: every run is done by t = 1, and those
    # with a^2 >= n^2 at t = 0 (about a fifth) stay at 0
    gen = torch.Generator().manual_seed(3)
    mean, sd = ct.predicted_t1_mc(
        [50.0], 3, m=1, eta=1.0, lam=0.0, n_neg=1, runs=400, generator=gen
    )
    assert 0.5 < mean < 0.95 and sd > 0
    default = ct.predicted_t1_mc(
        [0.4], 40, m=5, eta=0.1, lam=0.0, n_neg=3, generator=torch.Generator().manual_seed(4)
    )
    explicit = ct.predicted_t1_mc(
        [0.4],
        40,
        m=5,
        eta=0.1,
        lam=0.0,
        n_neg=3,
        runs=200,
        generator=torch.Generator().manual_seed(4),
    )
    assert default == explicit


def _t1_unchunked(kappas, d1, m, eta, n_neg, runs, generator):
    """The mean rule of predicted_t1_mc, written directly: all d1 - d noise coordinates at once."""
    lg = torch.log(ct.growth_rate(kappas, eta, 0.0, n_neg))
    d = len(lg)
    a2 = torch.randn(runs, m, d, generator=generator, dtype=torch.float64) ** 2
    n2 = (torch.randn(runs, m, d1 - d, generator=generator, dtype=torch.float64) ** 2).sum(-1)
    t = torch.arange(400, dtype=torch.float64)
    fe = (a2.unsqueeze(-1) * torch.exp(2 * t * lg.reshape(1, 1, d, 1))).sum(-2)  # (runs, m, T)
    reached = (fe / (fe + n2.unsqueeze(-1))).mean(1) >= 0.5  # (runs, T)
    assert bool(reached[:, -1].all())
    return reached.double().argmax(-1).double()


def test_predicted_t1_mc_over_more_than_one_chunk_of_noise():
    # d1 - d = 2042 noise coordinates, drawn in two chunks of 1024: the same law as all at once
    kap, runs = [0.9, 0.6, 0.3, 0.1], 100
    gen = torch.Generator().manual_seed(5)
    mean, sd = ct.predicted_t1_mc(
        kap, 2046, m=30, eta=0.05, lam=0.0, n_neg=15, runs=runs, generator=gen
    )
    ref = _t1_unchunked(kap, 2046, 30, 0.05, 15, runs, torch.Generator().manual_seed(6))
    se = math.sqrt((sd**2 + float(ref.var())) / runs)
    assert abs(mean - float(ref.mean())) < 5 * se


def test_beta_tail_in_one_dimension():
    # d = 1: u^2 = 1 always
    assert ct.beta_tail(1, 1.0) == 0.0 and ct.beta_tail(1, 0.0) == 1.0


def test_symbolic_helpers_name_their_symbols_and_keep_their_defaults():
    derived, closed, (p, a, q) = ct.kappa_symbolic()  # L = 4 tokens
    assert [str(s) for s in (p, a, q)] == ["p", "a", "q"]
    L4 = p * (4 * q / (1 - (1 - q) ** 4) * (1 + a) / 2) ** 2
    assert sp.simplify(closed - L4) == 0 and sp.simplify(derived - L4) == 0
    *_, syms = ct.f4_elapsed_time_symbolic()
    assert [str(s) for s in syms] == [
        "epsilon_max",
        "epsilon_star",
        "d",
        "eta",
        "alpha",
        "C_z",
        "loglogd",
    ]
    _, (eps_s, d) = ct.extra_rate_ratio_symbolic()
    assert (str(eps_s), str(d)) == ("epsilon_star", "d")
    gap_p, gaps_s = ct.softmax_derivatives_symbolic()  # two negatives
    assert gap_p == 0 and len(gaps_s) == 2 and all(x == 0 for x in gaps_s)
