"""companions.emergence.analysis where the mutants of issue 23 found it untested: the
signal/noise ratio and the step summary by hand, the gradient terms' background part against the
exact population terms, epsilon_e in its simplified closed form, the probes as the composition of
the baselines they name, decided's three directions and its errors, the text of a mean, and the
two seed-level experiments (first_steps_stats, lemma_a18_drift) against their definitions."""

from __future__ import annotations

import math
import re
from fractions import Fraction

import pytest
import torch

from companions import stats
from companions.emergence import analysis, baselines, data, network, theory

F64 = torch.float64


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def _eye_dist():
    """d = 4, D = 3, M = the first three unit vectors, A = {0, 1}."""
    return data.parity_mixture(
        4, 3, k=2, p_o=Fraction(1, 2), generator=_gen(), A=(0, 1), M=torch.eye(4)[:, :3]
    )


def test_signal_noise_by_hand():
    dist = _eye_dist()
    W = torch.tensor(
        [[3.0, 4.0, 12.0, 0.0], [0.0, 0.0, 1.0, 2.0], [1.0, 0.0, 0.0, 1.0], [0.3, 0.4, 0.0, 0.0]],
        dtype=F64,
    )
    rho = analysis.signal_noise(W, dist)
    # ||(w_0, w_1)|| / ||(w_2, w_3)||; the last has no noise: 0.5 / the smallest normal float
    assert rho[:3].tolist() == pytest.approx([5 / 12, 0.0, 1.0], rel=1e-15)
    assert float(rho[3]) == pytest.approx(0.5 / torch.finfo(F64).tiny, rel=1e-12)
    rho32 = analysis.signal_noise(W.float(), dist)
    assert rho32.dtype == torch.float32
    assert rho32[:3].tolist() == pytest.approx([5 / 12, 0.0, 1.0], rel=1e-6)


def test_step_summary_by_hand():
    dist = _eye_dist()  # v = e_0 + e_1
    W1 = torch.tensor(
        [[1.0, 1.0, 0.0, 0.0], [-1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]], dtype=F64
    )
    W2 = torch.tensor([[1.0, -1.0, 1.0, 0.0], [0.0, -2.0, 0.0, 2.0]], dtype=F64)
    p = {
        "one": network.Params(W1, torch.zeros(3, dtype=F64), torch.ones(3, dtype=F64)),
        "two": network.Params(W2, torch.zeros(2, dtype=F64), torch.ones(2, dtype=F64)),
    }
    out = analysis.step_summary(p, dist)
    # |cos| = 1, 1/sqrt(2), 0; rho = inf-like, 1/0 -> huge, 0: median of three is the middle one
    assert out["one"]["max_cos"] == pytest.approx(1.0)
    assert out["one"]["median_cos"] == pytest.approx(1 / math.sqrt(2))
    assert out["one"]["median_rho"] > 1e300
    # |cos| = 0, 1/2 (torch's median of two is the lower); rho = 1, 1 (sqrt(2)/sqrt(2), 2/2)
    assert out["two"]["max_cos"] == pytest.approx(0.5)
    assert out["two"]["median_cos"] == pytest.approx(0.0, abs=1e-15)
    assert out["two"]["median_rho"] == pytest.approx(1.0)
    assert set(out) == {"one", "two"} and set(out["one"]) == {"max_cos", "median_cos", "median_rho"}
    narrow = analysis.step_summary({"one": p["one"].to(torch.float32)}, dist)  # v is cast to W's
    assert narrow["one"]["median_cos"] == pytest.approx(1 / math.sqrt(2), rel=1e-6)


def test_sample_gradient_terms_background_and_unit_against_the_population():
    dist = data.parity_mixture(12, 8, k=3, p_o=Fraction(1, 3), generator=_gen())
    grid, prob = dist.support()
    counts = (prob * 2**16).round().long()
    X = dist.inputs(grid).repeat_interleave(counts, dim=0)
    y = dist.labels(grid).repeat_interleave(counts)
    w = (prob * 2**16 - counts).abs().max()
    assert float(w) < 0.5  # the repeated support is the population up to 1/2 of 2^-16 each
    p0 = network.symmetric_init(
        2, 12, k=3, sigma_tilde=dist.sigma, gamma=float(dist.gamma), generator=_gen(3)
    )
    p0.a[1] = -2.5 * p0.a[1]  # a second neuron of another scale and sign
    terms = analysis.sample_gradient_terms(p0, X, y, dist, 0.3)
    bg = [j for j in range(8) if j not in dist.A]
    assert terms["T_A"].shape == (4, 3) and terms["T_bg"].shape == (4, 5)
    assert terms["unit"] == pytest.approx(float(dist.gamma) / dist.sigma, rel=1e-15)
    for i in (0, 1):
        exact = theory.gradient_terms(dist, p0.W[i], float(p0.b[i]), 0.3)
        n = float(counts.sum())
        scale = float(prob.sum()) * 2**16 / n
        assert torch.allclose(terms["T_bg"][i], exact["T"][bg] * scale, atol=2e-4)
        assert torch.allclose(terms["T_A"][i], exact["T"][list(dist.A)] * scale, atol=2e-4)
        assert float(terms["beta"][i]) == pytest.approx(exact["beta"], abs=2e-4)


def test_sample_gradient_terms_in_float32():
    dist = data.parity_mixture(12, 8, k=3, p_o=Fraction(1, 3), generator=_gen())
    x, y, _ = dist.sample(64, _gen(1), dtype=torch.float32)
    p0 = network.symmetric_init(
        2, 12, k=3, sigma_tilde=dist.sigma, gamma=float(dist.gamma), generator=_gen(3)
    )
    wide = analysis.sample_gradient_terms(p0, x.double(), y.double(), dist, 0.3)
    narrow = analysis.sample_gradient_terms(p0.to(torch.float32), x, y, dist, 0.3)
    assert narrow["T_A"].dtype == torch.float32
    assert torch.allclose(narrow["T_bg"].double(), wide["T_bg"], rtol=1e-3, atol=1e-4)


def test_epsilon_e_closed_form():
    # sigma_phi^2 sigma~^2 = p_o (1 - p_o): eps = (k L^(1/2) + L^(3/2)) / sqrt(p_o (1-p_o) (D-k))
    for p_o, D, k, m, delta in ((Fraction(1, 2), 10, 3, 10, 0.1), (Fraction(1, 5), 9, 2, 7, 0.3)):
        dist = data.parity_mixture(D, D, k=k, p_o=p_o, generator=_gen())
        L = math.log(D * m / delta)
        want = (k * math.sqrt(L) + L**1.5) / math.sqrt(float(p_o * (1 - p_o)) * (D - k))
        assert analysis.epsilon_e(dist, m, delta) == pytest.approx(want, rel=1e-12)
    L = math.log(10 * 10 / 0.1)  # delta defaults to 0.1
    dist = data.parity_mixture(10, 10, k=3, p_o=Fraction(1, 2), generator=_gen())
    assert analysis.epsilon_e(dist, 10) == pytest.approx(
        (3 * math.sqrt(L) + L**1.5) / math.sqrt(0.25 * 7), rel=1e-12
    )


def test_probes_are_the_standardised_probe_and_the_raw_head(capsys):
    g = _gen(2)
    p = network.Params(
        torch.randn(6, 3, generator=g, dtype=F64),
        0.3 * torch.randn(6, generator=g, dtype=F64),
        torch.ones(6, dtype=F64),
    )
    X, Xt = torch.randn(80, 3, generator=g, dtype=F64), torch.randn(40, 3, generator=g, dtype=F64)
    y, yt = torch.sign(X[:, 0] + 0.2), torch.sign(Xt[:, 0] + 0.2)
    out = analysis.probes(p, X, y=y, Xt=Xt, yt=yt, steps=7, batch=16, generator=_gen(5), lr=0.05)
    F, Ft = network.features(p, X), network.features(p, Xt)
    assert out["standardised"] == baselines.standardised_probe(F, y, Ft, yt)
    a, _ = baselines.train_linear_head(
        F, y, steps=7, batch=16, generator=_gen(5), lr=0.05, progress=False
    )
    assert out["raw"]["train"] == float((torch.sign(F @ a) == y).double().mean())
    assert out["raw"]["test"] == float((torch.sign(Ft @ a) == yt).double().mean())
    assert out["raw"]["output_spread"] == pytest.approx(float((Ft @ a).std()), rel=1e-12)
    assert capsys.readouterr().err == ""  # no progress bar by default
    default_lr = analysis.probes(p, X, y=y, Xt=Xt, yt=yt, steps=7, batch=16, generator=_gen(5))
    a, _ = baselines.train_linear_head(
        F, y, steps=7, batch=16, generator=_gen(5), progress=False
    )  # lr 1e-2
    assert default_lr["raw"]["output_spread"] == pytest.approx(float((Ft @ a).std()), rel=1e-12)
    analysis.probes(
        p,
        X,
        y=y,
        Xt=Xt,
        yt=yt,
        steps=2,
        batch=16,
        generator=_gen(5),
        progress=True,
        desc="my-probe",
    )
    assert "my-probe" in capsys.readouterr().err
    analysis.probes(p, X, y=y, Xt=Xt, yt=yt, steps=2, batch=16, generator=_gen(5), progress=True)
    assert re.search(r"(^|\r)probe: ", capsys.readouterr().err)  # the default name


VALUES = [1.0, 1.2, 0.8]  # mean 1, se = sqrt(0.04 / 3); t(2) = 4.303: half-width 0.497


def test_decided_above_below_within():
    mean, se, n = 1.0, math.sqrt(0.04 / 3), 3
    for direction, kw, want in [
        ("above", {"margin": 0.4}, True),
        ("above", {"margin": 0.6}, None),
        ("above", {"margin": 1.6}, False),
        ("below", {"margin": 1.6}, True),
        ("below", {"margin": 1.4}, None),
        ("below", {"margin": 0.4}, False),
        ("within", {"margin": 0.6, "target": 1.05}, True),  # 0.6 - 0.05 - 0.497 > 0
        ("within", {"margin": 0.6, "target": 1.2}, None),  # 0.4 -+ 0.497 straddles 0
        ("within", {"margin": 0.5, "target": 3.0}, False),
        ("within", {"margin": 0.5, "target": -1.0}, False),
    ]:
        verdict, m, s, k = analysis.decided(VALUES, direction=direction, **kw)
        assert verdict is want, (direction, kw)
        assert (m, k) == (pytest.approx(mean), n) and s == pytest.approx(se, rel=1e-12)
    assert analysis.decided(VALUES)[0] is True  # above 0 by default
    assert analysis.decided([-1.0, -1.2, -0.8])[0] is False
    assert analysis.decided(VALUES, 0.6)[0] is None  # margin is the second argument
    # against stats.decide, the documented rule, away from its edges
    assert analysis.decided(VALUES, 0.2, "below")[0] is stats.decide(-1.0, se, 3, -0.2)


def test_decided_refuses_a_missing_target_and_an_unknown_direction():
    with pytest.raises(ValueError, match="^parameter 'target' is needed with direction='within'$"):
        analysis.decided(VALUES, 0.5, "within")
    with pytest.raises(ValueError, match="'direction' = 'up' is not allowed: expected 'above'"):
        analysis.decided(VALUES, 0.5, "up")


def test_mean_se_text():
    assert analysis.mean_se_text(0.98764, 0.00123, 3) == "0.9876 +- 0.0012 (3 seeds)"
    assert analysis.mean_se_text(0.98764, 0.00123, 12, digits=2) == "0.99 +- 0.00 (12 seeds)"


# -- the seed-level experiments ------------------------------------------------------------------


def _first_steps_by_hand(seed, d=12, D=8, k=3, p_o=0.5, m=4, n=300, n_test=100, probe_steps=3):
    """first_steps_stats' docstring, step by step, with its seeds (10, 11, 20 + 1000 seed)."""
    gen = _gen(10 + 1000 * seed)
    dist = data.parity_mixture(d, D, k=k, p_o=Fraction(p_o), generator=gen)
    x, y, _ = dist.sample(n, gen)
    xt, yt, _ = dist.sample(n_test, gen)
    sched = network.schedule("A.274", k, m, dist.sigma, float(dist.gamma), 600)
    p0 = network.symmetric_init(
        m, d, k=k, sigma_tilde=dist.sigma, gamma=float(dist.gamma), generator=_gen(11 + 1000 * seed)
    )
    p1, p2 = network.first_two_steps(p0, x, y, sched)
    v = dist.signal_direction
    c1, c2 = network.cosines(p1.W, v), network.cosines(p2.W, v)
    terms = analysis.sample_gradient_terms(p0, x, y, dist, sched["step1"]["s"])
    ta = terms["T_A"].mean(1) / terms["unit"]
    beta = terms["beta"]
    # the least-squares slope through the origin of ta on beta
    slope = float(torch.linalg.lstsq(beta.unsqueeze(1), ta.unsqueeze(1)).solution)
    hinge = y * network.forward(p1, x, sched["step2"]["s"])
    want = {
        "sign_agree": float((torch.sign(c1) == torch.sign(p0.a)).double().mean()),
        "max_cos1": float(c1.abs().max()),
        "median_cos1": float(c1.abs().median()),
        "max_cos2": float(c2.abs().max()),
        "median_cos2": float(c2.abs().median()),
        "hinge_active": float((hinge < 1).double().mean()),
        "slope": slope,
    }
    for name, p, g in (("one", p1, 20 + 1000 * seed), ("two", p2, 21 + 1000 * seed)):
        pr = analysis.probes(
            p, x, y=y, Xt=xt, yt=yt, steps=probe_steps, batch=1000, generator=_gen(g)
        )
        want[f"{name}_std_test"] = pr["standardised"]["test"]
        want[f"{name}_raw_train"] = pr["raw"]["train"]
        want[f"{name}_raw_test"] = pr["raw"]["test"]
    return want


def test_first_steps_stats_against_its_definition():
    got = analysis.first_steps_stats(
        12, 8, k=3, p_o=0.5, m=4, n=300, n_test=100, schedule="A.274", probe_steps=3, seed=1
    )
    want = _first_steps_by_hand(1)
    assert set(got) == set(want)
    for key in want:
        assert got[key] == pytest.approx(want[key], rel=1e-9, abs=1e-12), key


def test_lemma_a18_drift_bounds_hold_and_rates_are_a276():
    k, m, T = 3, 64, 25  # 2 eta lam_max = 2 k^5 / (T m^(2/3) sigma~) < 1 needs T > 21.5 here
    out = analysis.lemma_a18_drift(12, 8, k=k, m=m, n=200, steps=T, batch=50, seed=0)
    gen = _gen(10)
    dist = data.parity_mixture(12, 8, k=k, p_o=Fraction(1, 2), generator=gen)
    x, _, _ = dist.sample(200, gen)
    assert out["eta"] == pytest.approx(k**2 / (T * m ** (1 / 3)), rel=1e-15)
    assert out["lam"] == pytest.approx(k**3 / (dist.sigma * m ** (1 / 3)), rel=1e-15)
    assert out["R"] == pytest.approx(float(x.norm(dim=1).max()), rel=1e-15)
    # Lemma A.18's recursion: every ratio at most 1, and positive once the weights move
    for key in ("ratio_a", "ratio_w", "ratio_b"):
        assert 0 < out[key] <= 1, key
    assert out["drift_w"] > 0 and out["max_a"] > 0
    assert (
        analysis.lemma_a18_drift(12, 8, k=k, m=m, n=200, steps=T, batch=50, seed=0, lam=0.0)["lam"]
        == 0.0
    )
    small = analysis.lemma_a18_drift(12, 8, k=k, m=m, n=200, steps=T, batch=50, seed=0, lam=0.01)
    assert small["lam"] == 0.01 and 0 < small["ratio_w"] <= 1
    with pytest.raises(ValueError, match="'lam' = -1 is not allowed: need 0 <= 2 eta lam < 1"):
        analysis.lemma_a18_drift(12, 8, k=k, m=m, n=200, steps=T, batch=50, seed=0, lam=-1)
    big = 0.6 / out["eta"]  # 2 eta lam = 1.2: refused
    with pytest.raises(ValueError, match="'lam'"):
        analysis.lemma_a18_drift(12, 8, k=k, m=m, n=200, steps=T, batch=50, seed=0, lam=big)


def test_lemma_a18_drift_against_its_definition(capsys):
    """The docstring's three bounds on the trajectory of the later SGD steps, recomputed from the
    recorded parameters (seeds as in the source: 10, 11, 12 + 1000 seed)."""
    d, D, k, m, n, T, batch, seed = 12, 8, 3, 64, 200, 25, 50, 1
    got = analysis.lemma_a18_drift(d, D, k=k, m=m, n=n, steps=T, batch=batch, seed=seed)
    assert capsys.readouterr().err == ""  # no progress bar
    gen = _gen(10 + 1000 * seed)
    dist = data.parity_mixture(d, D, k=k, p_o=Fraction(1, 2), generator=gen)
    x, y, _ = dist.sample(n, gen)
    sched = network.schedule("A.214", k, m, dist.sigma, float(dist.gamma), T)
    p0 = network.symmetric_init(
        m, d, k=k, sigma_tilde=dist.sigma, gamma=float(dist.gamma), generator=_gen(11 + 1000 * seed)
    )
    _, p2 = network.first_two_steps(p0, x, y, sched)
    eta = k**2 / (T * m ** (1 / 3))  # (A.276)
    lam = k**3 / (dist.sigma * m ** (1 / 3))
    trajectory = []
    p_end, _ = network.train_late(
        p2,
        x,
        y=y,
        steps=T,
        batch=batch,
        generator=_gen(12 + 1000 * seed),
        optimizer="theory",
        lr=eta,
        lam=lam,
        eval_every=1,
        evaluate=lambda p: trajectory.append(p.detach()) or {},
        progress=False,
    )
    assert len(trajectory) == T + 1  # t = 0 (the two-step weights), 1, ..., T
    R = float(x.norm(dim=1).max())
    worst = {"a": 0.0, "w": 0.0, "b": 0.0, "a262": 0.0}
    for t, p in enumerate(trajectory[1:], start=1):
        a2 = p2.a.abs()
        lin = eta**2 * t * (t - 1) / 2 + t * eta * a2
        w_bound = 2 * t * eta * lam * p2.W.norm(dim=1) + R * lin
        # (A.262) as printed, with the source's step index t + 2
        printed = 2 * eta * lam * p2.W.norm(dim=1) + eta**2 * (t + 2) ** 2 + (t + 2) * a2
        worst["a"] = max(worst["a"], float((p.a.abs() / (eta * t + a2)).max()))
        worst["w"] = max(worst["w"], float(((p.W - p2.W).norm(dim=1) / w_bound).max()))
        worst["b"] = max(worst["b"], float(((p.b - p2.b).abs() / lin).max()))
        worst["a262"] = max(worst["a262"], float(((p.W - p2.W).norm(dim=1) / printed).max()))
    for key in ("a", "w", "b", "a262"):
        assert got[f"ratio_{key}"] == pytest.approx(worst[key], rel=1e-9), key
    assert got["eta"] == eta and got["lam"] == pytest.approx(lam, rel=1e-15)
    assert got["R"] == R
    drift = ((p_end.W - p2.W).norm(dim=1) / p2.W.norm(dim=1)).max()
    assert got["drift_w"] == pytest.approx(float(drift), rel=1e-9)
    assert got["max_a"] == pytest.approx(float(p_end.a.abs().max()), rel=1e-12)
