"""The part's one-call experiments (companions.contrastive.experiments): each test fails on a
plausible wrong implementation (a wrong population step, a slope of the energy instead of its
square root, arms that do not share their seed, categories that do not add up)."""

import math

import pytest
import torch

from companions.contrastive import data as cd
from companions.contrastive import experiments as cx
from companions.contrastive import theory as th
from companions.contrastive import training as tr


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


SMALL = dict(d=9, n_maj=5, d1=40, m=6, K=64, n_neg=63, sigma0=1e-3)


def test_lucky_rows_exact_columns_and_an_empty_lucky_set():
    rows = cx.lucky_rows([9, 100], [0.5, 1.0], 0.01, 20_000, gen(1))
    by = {(r["d"], r["rho"]): r for r in rows}
    assert len(rows) == 4
    empty = by[9, 0.5]  # c1 log d / d = 8.08 log 9 / 9 > 1: no neuron can be lucky
    assert empty["threshold"] == pytest.approx(th.c1(0.5, 0.01) * math.log(9) / 9)
    assert empty["threshold"] > 1 and empty["lucky_first"] == 0 and empty["lucky_mc"] is None
    assert empty["ordinary"] == pytest.approx(th.prob_ordinary(9, 0.5, 0.01))
    assert empty["n_i"] == pytest.approx(9 * empty["ordinary"])
    seen = by[9, 1.0]  # threshold 2.02 log 9 / 9 = 0.49 < 1: Pr[first condition] = 0.04
    assert seen["lucky_mc"] is not None
    # both conditions of (27) are rarer than the first one alone (with Monte Carlo slack)
    assert 0 < seen["lucky_mc"] <= seen["lucky_first"] + 4 * math.sqrt(seen["lucky_first"] / 20_000)


def test_gradient_scale_is_one_per_feature_and_sees_a_wrong_scale():
    s = tr.Setup(**SMALL, eta=0.01, lam=0.0, bias=False)
    eps = cd.eps_vector(9, 5, 1.0, 0.3)
    mu, se = cx.gradient_scale(s, eps, 0.45, batches=60, generators=(gen(2), gen(3), gen(4)))
    assert mu.shape == (9,) and bool((se > 0).all())
    assert bool(((mu - 1).abs() <= 4 * se).all()), (mu, se)
    # the true gradient of (1) at tau = 2 is half the paper's (21): the population step scales
    # with c_tau too, so the ratio stays 1; a gradient that forgot c_tau would give 2
    s2 = tr.Setup(**SMALL, eta=0.01, lam=0.0, bias=False, tau=2.0, grad_scale="standard")
    mu2, se2 = cx.gradient_scale(s2, eps, 0.45, batches=60, generators=(gen(2), gen(3), gen(4)))
    assert bool(((mu2 - 1).abs() <= 4 * se2).all()), (mu2, se2)


def test_rate_slopes_are_the_slopes_of_log_sqrt_energy():
    h = tr.History()
    h.steps = torch.arange(0, 101, 10)
    t = h.steps.double()
    # two runs, three neurons, two features; E_j = 3 a_j(t)^2 with a_j = exp(rate t)
    rates = torch.tensor([[0.02, 0.005], [0.01, -0.003]], dtype=torch.float64)  # (R, d)
    a = torch.exp(t[:, None, None] * rates[None])  # (T, R, d)
    h.A = a[:, :, None, :].expand(-1, -1, 3, -1).float()
    got = cx.rate_slopes(h, start=0.2)
    assert torch.allclose(got.double(), rates, atol=1e-6)
    with pytest.raises(ValueError, match="'start'"):
        cx.rate_slopes(h, start=0.99)


def test_t1_sweep_measures_the_rule_the_monte_carlo_simulates():
    s = tr.Setup(**{**SMALL, "m": 10, "sigma0": 1e-4}, eta=0.01, lam=0.0, bias=False)
    out = cx.t1_sweep(s, 0.3, nsr=0.45, d1_values=[50, 200], generator_of=gen, mc_runs=100)
    assert list(out) == [50, 200]
    for d1, r in out.items():
        assert r["measured"] == pytest.approx(sum(r["runs"]) / 2)
        assert r["mc_sd"] > 0 and r["energy"] > 0
        # the runs are two draws of the simulated law: within 4 of its standard errors
        assert abs(r["measured"] - r["mc"]) <= 4 * r["mc_sd"] / math.sqrt(2) + 1, (d1, r)
    assert out[200]["measured"] > out[50]["measured"]  # more noise directions: a longer stage 1


def test_sweep_arms_share_their_seed_and_read_every_statistic():
    s = tr.Setup(**SMALL, eta=0.02, lam=1e-3, c_b=0.3)
    e, n, _ = cd.run_grid([0.3, 1.0], [0.45], 1)
    kw = dict(chunk=4, test_pairs=200, train_pairs=100, test_seed=5, eval_chunk=2)
    stats = cx.sweep_arms(
        s, e, n, 60, lambda: gen(7), arms={"a": None, "b": None}, log_every=20, **kw
    )
    assert list(stats) == ["a", "b"] and list(stats["a"]) == list(cx.SWEEP_STATISTICS)
    for key in cx.SWEEP_STATISTICS:
        assert stats["a"][key].shape == (2,)
        assert torch.equal(stats["a"][key], stats["b"][key])  # same seed: the same runs


def test_width_sweep_categories_add_up():
    s = tr.Setup(**SMALL, eta=0.02, lam=1e-3, c_b=0.3)
    out = cx.width_sweep(
        s,
        [6, 12],
        eps_min=0.3,
        nsr=0.45,
        steps=60,
        repeats=2,
        alpha=0.2,
        every=1,
        generator_of=lambda m: gen(m),
    )
    assert [w["m"] for w in out] == [6, 12]
    for w in out:
        total = sum(w["categories"][k] for k in ("minority", "majority", "unaligned"))
        assert torch.allclose(total.double(), torch.ones(2, dtype=torch.float64))
        assert bool(((w["share"] >= 0) & (w["share"] <= 1)).all())
