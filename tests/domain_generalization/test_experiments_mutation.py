"""Tests of domain_generalization/experiments.py written for its mutants (issue 23).

- ``mean_se``, ``decide``, ``both_above``: values worked out by hand, the boundaries of each rule
  (a tie with no spread, the degrees of freedom n - 1), and ``decide`` against a second
  implementation of its docstring (hypothesis).
- ``domain_gammas`` and ``sample_sums_domains``: closed forms (even spacing, mean gamma_bar), the
  sign of S_U where a domain's gamma is +-1/2 (every environmental coordinate agrees, or none
  does), and the draws in chunks against a second implementation of the docstring's sampler.
- The sweeps and the two trained experiments: each is run on a tiny problem and compared with
  the docstring's recipe written out here from the library's building blocks (the same
  generator, the same order of draws), plus the facts the recipes pin (OOD at -gamma, accuracy
  = count / samples, ERM-NU at 0 is ERM).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from companions.domain_generalization import data, experiments, theory, training
from companions.stats import t_critical


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


# -- mean_se, decide, both_above -----------------------------------------------------------------
def test_mean_se_by_hand():
    # [1, 2, 3, 4]: mean 5/2, sample variance (9/4 + 1/4 + 1/4 + 9/4) / 3 = 5/3, se sqrt(5/3) / 2
    m, se = experiments.mean_se([1.0, 2.0, 3.0, 4.0])
    assert m == pytest.approx(2.5) and se == pytest.approx(math.sqrt(5 / 3) / 2)
    assert experiments.mean_se([5.0, 5.0]) == (5.0, 0.0)
    # exact numbers are converted to floats first: [1/2, 3/2] has mean 1, se sqrt(1/2) / sqrt(2)
    assert experiments.mean_se([Fraction(1, 2), Fraction(3, 2)]) == (1.0, pytest.approx(0.5))
    for bad in ([], [1.0]):
        msg = f"parameter 'values' has {len(bad)} item\\(s\\): a standard error needs two or more"
        with pytest.raises(ValueError, match=f"^{msg}$"):
            experiments.mean_se(bad)


def test_decide_boundaries_and_degrees_of_freedom():
    # se = 0: the interval is the point effect; a tie with the margin is not above it
    assert experiments.decide(0.2, 0.0, 0.2, 5) is False
    assert experiments.decide(0.3, 0.0, 0.2, 2) is True
    assert experiments.decide(0.1, 0.0, 0.2, 2) is False
    # n = 3: t_{0.975, 2} = 4.303 (n: 3.182, n - 2: 12.71). 1 - 4.303 * 0.25 < 0 < 1 - 3.182 * 0.25
    assert experiments.decide(1.0, 0.25, 0.0, 3) is None
    # 1 - 4.303 * 0.1 > 0 > 1 - 12.71 * 0.1
    assert experiments.decide(1.0, 0.1, 0.0, 3) is True
    # below: -1 + 4.303 * 0.1 <= 0; undecided from below: -1 + 4.303 * 0.25 > 0
    assert experiments.decide(-1.0, 0.1, 0.0, 3) is False
    assert experiments.decide(-1.0, 0.25, 0.0, 3) is None
    with pytest.raises(ValueError, match="^parameter 'n' = 1 is not allowed: a standard error"):
        experiments.decide(0.5, 0.1, 0.2, 1)
    with pytest.raises(ValueError, match="'n' = 0 "):
        experiments.decide(0.5, 0.1, 0.2, 0)
    assert experiments.decide(0.5, 0.1, 0.2, 2) is None  # n = 2 is allowed


def _decide(effect, se, margin, n):
    c = t_critical(n - 1)
    lo, hi = effect - c * se, effect + c * se
    return True if lo > margin else (False if hi <= margin else None)


@settings(max_examples=60, deadline=None)
@given(
    st.floats(-3, 3),
    st.floats(0, 2),
    st.floats(-1, 1),
    st.integers(2, 40),
)
def test_decide_matches_its_docstring(effect, se, margin, n):
    assert experiments.decide(effect, se, margin, n) is _decide(effect, se, margin, n)


def test_both_above_truth_table():
    table = {
        (True, True): True,
        (True, None): None,
        (None, True): None,
        (None, None): None,
        (True, False): False,
        (False, True): False,
        (False, None): False,
        (None, False): False,
        (False, False): False,
    }
    for (a, b), want in table.items():
        assert experiments.both_above(a, b) is want


# -- domains -------------------------------------------------------------------------------------
def test_domain_gammas_even_spacing():
    assert experiments.domain_gammas(0.3, 1, 0.1) == [0.3]
    assert experiments.domain_gammas(0.3, 2, 0.1) == pytest.approx([0.2, 0.4])
    g5 = experiments.domain_gammas(0.0, 5, 0.2)
    assert g5 == pytest.approx([-0.2, -0.1, 0.0, 0.1, 0.2])
    g4 = experiments.domain_gammas(0.25, 4, 0.15)
    assert g4 == pytest.approx([0.1, 0.2, 0.3, 0.4]) and np.mean(g4) == pytest.approx(0.25)


def test_sample_sums_domains_signs_at_gamma_half():
    n, r, d = 300, 3, 8
    s_r, s_u = experiments.sample_sums_domains(n, r, d=d, gammas=[0.5], generator=gen(1))
    assert s_r.shape == (n,) and s_u.shape == (n,)
    assert s_r.dtype == torch.float64 and s_u.dtype == torch.float64
    # gamma = 1/2: every environmental coordinate is +U[0, 1]; R coordinates are U[0, 1]
    assert bool((s_u > 0).all()) and bool((s_u < d - r).all())
    assert bool((s_r > 0).all()) and bool((s_r < r).all())
    assert float(s_u.mean()) == pytest.approx((d - r) / 2, abs=0.15)
    assert float(s_r.mean()) == pytest.approx(r / 2, abs=0.15)
    _, s_u = experiments.sample_sums_domains(n, r, d=d, gammas=[-0.5], generator=gen(2))
    assert bool((s_u < 0).all()) and bool((s_u > -(d - r)).all())
    # two domains +-1/2, drawn per example with probability 1/2 each
    _, s_u = experiments.sample_sums_domains(4000, r, d=d, gammas=[0.5, -0.5], generator=gen(3))
    assert float((s_u > 0).double().mean()) == pytest.approx(0.5, abs=0.03)


def _sums_domains(n, r, d, gammas, generator, chunk):
    """The docstring's sampler: per example a uniform domain e, R coordinates U[0, 1], each U
    coordinate U[0, 1] with the sign + w.p. 1/2 + gamma_e; drawn chunk by chunk."""
    g = torch.tensor(gammas, dtype=torch.float64)
    out_r, out_u = [], []
    done = 0
    while done < n:
        m = min(chunk, n - done)
        e = torch.randint(len(gammas), (m,), generator=generator)
        z_r = torch.rand(m, r, generator=generator, dtype=torch.float64)
        u = torch.rand(m, d - r, generator=generator, dtype=torch.float64)
        sign = torch.rand(m, d - r, generator=generator, dtype=torch.float64) < 0.5 + g[e][:, None]
        out_r.append(z_r.sum(1))
        out_u.append((u * (2 * sign.double() - 1)).sum(1))
        done += m
    return torch.cat(out_r), torch.cat(out_u)


def test_sample_sums_domains_in_chunks_against_a_second_sampler():
    got = experiments.sample_sums_domains(
        25, 2, d=6, gammas=[0.1, -0.3, 0.4], generator=gen(4), chunk=10
    )
    want = _sums_domains(25, 2, 6, [0.1, -0.3, 0.4], gen(4), chunk=10)
    assert torch.allclose(got[0], want[0], rtol=0, atol=1e-12)
    assert torch.allclose(got[1], want[1], rtol=0, atol=1e-12)
    # the default chunk is 10_000 rows (the signature's constant)
    got = experiments.sample_sums_domains(10_003, 1, d=2, gammas=[0.2], generator=gen(5))
    want = _sums_domains(10_003, 1, 2, [0.2], gen(5), chunk=10_000)
    assert torch.equal(got[0], want[0]) and torch.allclose(got[1], want[1], rtol=0, atol=1e-12)


def test_sample_sums_domains_sign_threshold_is_strict_and_in_float64():
    # The sign of a U coordinate is + exactly when its uniform draw is below 1/2 + gamma_e. With
    # gamma = x - 1/2 for the first row's sign draw x (exact in float64: 1/2 + gamma == x), the
    # draw is not below the threshold, so the sign is -. A seed is taken where 1/2 + gamma
    # rounded through float32 would land above x (so a float32 gamma would flip the sign).
    for seed in range(200):
        g = gen(seed)
        torch.randint(1, (1,), generator=g)
        torch.rand(1, 1, generator=g, dtype=torch.float64)  # z_r
        torch.rand(1, 1, generator=g, dtype=torch.float64)  # u
        x = float(torch.rand(1, 1, generator=g, dtype=torch.float64))
        gamma = x - 0.5
        thr32 = float(0.5 + torch.tensor([gamma], dtype=torch.float32))
        if 0.5 + gamma == x and thr32 > x:
            break
    else:
        raise AssertionError("no seed found")
    s_r, s_u = experiments.sample_sums_domains(1, 1, d=2, gammas=[gamma], generator=gen(seed))
    assert float(s_u) < 0 < float(s_r)


# -- the sweeps ----------------------------------------------------------------------------------
def test_population_sweep_is_its_recipe():
    r, d, gamma, lams, samples, repeats = 3, 9, 0.45, [0.01, 0.5], 300, 2
    ps = experiments.population_sweep(
        r,
        d,
        gamma=gamma,
        lambdas=lams,
        samples=samples,
        repeats=repeats,
        generator=gen(6),
        progress=False,
    )
    g = gen(6)
    assert ps.lambdas == (0.01, 0.5) and ps.samples == samples
    for k in range(repeats):
        s_r, s_u = data.sample_sums(samples, r, d=d, gamma=gamma, generator=g)
        o_r, o_u = data.sample_sums(samples, r, d=d, gamma=-gamma, generator=g)
        for j, lam in enumerate(lams):
            opt = theory.solve_l2(s_r, s_u, lam=lam, r=r, d=d)
            assert (ps.alpha[k, j], ps.beta[k, j]) == (opt.alpha, opt.beta)
            assert ps.ood_correct[k, j] == theory.ood_correct(opt.alpha, opt.beta, o_r, o_u)
            l1 = theory.solve_l1(s_r, s_u, lam=lam, r=r, d=d, gamma=gamma)
            assert (ps.l1_alpha[k, j], ps.l1_beta[k, j]) == (l1.alpha, l1.beta)
            assert (ps.l1_slack[k, j], ps.l1_slack_se[k, j]) == (l1.kkt_slack, l1.kkt_slack_se)
            assert ps.l1_ood_correct[k, j] == theory.ood_correct(l1.alpha, l1.beta, o_r, o_u)
    assert (ps.l1_beta[:, 0] > 0).all()  # lam = 0.01: the KKT slack is < 0, both weights move
    for a in (ps.alpha, ps.beta, ps.ood_correct, ps.l1_alpha, ps.l1_beta, ps.l1_slack):
        assert a.shape == (repeats, len(lams))


def test_domain_sweep_is_its_recipe():
    r, d, gbar, spread, counts, samples, repeats = 2, 8, 0.3, 0.1, [1, 3], 200, 2
    res = experiments.domain_sweep(
        r,
        d,
        gamma_bar=gbar,
        spread=spread,
        counts=counts,
        lam_l2=0.2,
        lam_l1=0.01,
        samples=samples,
        repeats=repeats,
        generator=gen(7),
        progress=False,
    )
    assert res.counts == (1, 3)
    assert res.gammas[1] == [0.3] and res.gammas[3] == pytest.approx([0.2, 0.3, 0.4])
    g = gen(7)
    for k in range(repeats):
        o_r, o_u = data.sample_sums(samples, r, d=d, gamma=-gbar, generator=g)
        for j, c in enumerate(counts):
            s_r, s_u = experiments.sample_sums_domains(
                samples, r, d=d, gammas=res.gammas[c], generator=g
            )
            opt = theory.solve_l2(s_r, s_u, lam=0.2, r=r, d=d)
            k2 = theory.ood_correct(opt.alpha, opt.beta, o_r, o_u)
            assert res.l2_ood_correct[k, j] == k2 and res.l2_ood[k, j] == k2 / samples
            o1 = theory.solve_l1(s_r, s_u, lam=0.01, r=r, d=d, gamma=gbar)
            assert res.l1_ood[k, j] == theory.ood_correct(o1.alpha, o1.beta, o_r, o_u) / samples
            assert o1.beta > 0  # lam_l1 = 0.01: the KKT slack is < 0, so S_U is used
    assert res.l2_ood.shape == res.l1_ood.shape == res.l2_ood_correct.shape == (2, 2)


def test_d_sweep_is_its_recipe():
    r, d_values, gamma, lam, samples, repeats = 3, [5, 12], 0.3, 0.5, 250, 2
    ds = experiments.d_sweep(
        r,
        d_values,
        gamma=gamma,
        lam=lam,
        samples=samples,
        repeats=repeats,
        generator=gen(8),
        progress=False,
    )
    assert ds.d_values == (5, 12)
    g = gen(8)
    for k in range(repeats):
        for j, d in enumerate(d_values):
            s_r, s_u = data.sample_sums(samples, r, d=d, gamma=gamma, generator=g)
            o_r, o_u = data.sample_sums(samples, r, d=d, gamma=-gamma, generator=g)
            opt = theory.solve_l2(s_r, s_u, lam=lam, r=r, d=d)
            assert (ds.alpha[k, j], ds.beta[k, j]) == (opt.alpha, opt.beta)
            acc = theory.ood_correct(opt.alpha, opt.beta, o_r, o_u) / samples
            assert ds.ood_accuracy[k, j] == acc
            normal = theory.normal_ood_accuracy(opt.alpha, opt.beta, r, d, gamma)
            assert ds.normal_accuracy[k, j] == normal
    assert ds.alpha.shape == ds.normal_accuracy.shape == (2, 2)


# -- the trained experiments ---------------------------------------------------------------------
def test_two_d_experiment_is_its_recipe():
    n, n_test, steps, lr, lam, seeds = 40, 60, 4, 0.5, 0.3, 2
    res = experiments.two_d_experiment(
        n,
        n_test,
        steps=steps,
        lr=lr,
        lam=lam,
        seeds=seeds,
        generator_for=lambda s: gen(30 + s),
        progress=False,
    )
    assert list(res.runs) == ["ERM", "ERM-NU"]
    for s in range(seeds):
        g = gen(30 + s)
        x, y = data.sample_two_d(n, 0.7, g)  # ID: x2 agrees with y w.p. 0.7
        xi, yi = data.sample_two_d(n_test, 0.7, g)
        xo, yo = data.sample_two_d(n_test, 0.3, g)  # OOD: 0.3
        init = g.get_state()
        for method, weight in (("ERM", 0.0), ("ERM-NU", lam)):
            g.set_state(init)
            run = training.train_two_d(x, y, lam=weight, steps=steps, lr=lr, generator=g)
            got = res.runs[method][s]
            assert torch.equal(got.A, run.A) and torch.equal(got.u, run.u)
            assert torch.equal(got.b, run.b)
            assert res.id_acc[method][s] == run.accuracy(xi, yi)
            assert res.ood_acc[method][s] == run.accuracy(xo, yo)
            w = run.direction()
            assert res.slope[method][s] == float(w[1] / w[0])
            assert res.singular_values[method][s] == torch.linalg.svdvals(x @ run.A.T).tolist()
    assert len(res.singular_values["ERM"][0]) == 2
    # lam > 0: ERM-NU is not ERM
    assert not torch.equal(res.runs["ERM"][0].A, res.runs["ERM-NU"][0].A)


def test_task_experiment_is_its_recipe():
    c = dict(r=2, d=6, gammas=[0.2, 0.4], n=30, test=50, steps=4, batch=4, lr=0.05)
    methods = {"erm": ("erm", 0.0), "nu": ("nu", 0.2)}
    res = experiments.task_experiment(c, methods, 2, lambda s: gen(40 + s), progress=False)
    assert res.methods == methods and res.methods is not methods
    for s in range(2):
        g = gen(40 + s)
        x, y, dom = data.sample_domains(c["n"], c["r"], c["d"], c["gammas"], g)
        # the unseen domain: -mean(gammas) = -0.3
        xo, yo, _ = data.sample_domains(c["test"], c["r"], c["d"], [-0.3], g)
        state = g.get_state()
        for name, (method, lam) in methods.items():
            g.set_state(state)
            run = training.train_gated(
                x,
                y,
                domain=dom,
                method=method,
                lam=lam,
                steps=4,
                batch_per_domain=4,
                lr=0.05,
                generator=g,
            )
            assert torch.equal(res.w[name][s], run.w)
            assert res.id_acc[name][s] == training.gated_accuracy(run.w, x, y)
            assert res.ood_acc[name][s] == training.gated_accuracy(run.w, xo, yo)
            assert res.stable_rank[name][s] == float(theory.stable_rank(xo * run.w))
    assert not torch.equal(res.w["erm"][0], res.w["nu"][0])
