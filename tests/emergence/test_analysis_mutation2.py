"""companions.emergence.analysis, second round of issue 23: what first_steps_stats hands on (the
rational p_o, the probes' seeds and batch) and its hinge-active fraction where ``y g^(1)`` reaches
1 (a stand-in first layer, since after a real step 1 the outputs stay far below 1), and
lemma_a18_drift's bounds at a step t >= 2 (a stand-in trajectory; on a real run the largest
ratio is at t = 1, where the ``eta^2 t (t-1)/2`` term vanishes) and at ``2 eta lam = 1``."""

from __future__ import annotations

from fractions import Fraction

import pytest
import torch

from companions.emergence import analysis, data, network

F64 = torch.float64
ARGS = dict(d=12, D=8, k=3, m=4, n=60, n_test=30, schedule="A.274", probe_steps=2)


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def _nearest(p, q_max):
    """The fraction nearest to ``p`` with denominator at most ``q_max``, by brute force."""
    best = min(
        (abs(Fraction(round(p * q), q) - Fraction(p)), q, Fraction(round(p * q), q))
        for q in range(1, q_max + 1)
    )
    return best[2]


def test_first_steps_stats_hands_on_p_o_and_the_probe_seeds(monkeypatch):
    seen, calls = [], []
    real_mixture, real_probes = data.parity_mixture, analysis.probes

    def mixture(d, D, *, p_o, **kw):
        seen.append(p_o)
        return real_mixture(d, D, p_o=Fraction(1, 2), **kw)

    def probes(p, x, *, steps, batch, generator, **kw):
        calls.append((steps, batch, generator.initial_seed()))
        return real_probes(p, x, steps=steps, batch=batch, generator=generator, **kw)

    monkeypatch.setattr(data, "parity_mixture", mixture)
    monkeypatch.setattr(analysis, "probes", probes)
    # 500/1001 has denominator 1001: the nearest fraction with denominator <= 1000 is another one
    p_o = 500 / 1001
    assert _nearest(p_o, 1000) != Fraction(500, 1001)
    analysis.first_steps_stats(p_o=p_o, seed=2, **ARGS)
    assert seen == [_nearest(p_o, 1000)]
    # the probes: batch 1000, generators seeded 20 + 1000 seed (One Step) and + 1 (Two Step)
    assert calls == [(2, 1000, 2020), (2, 1000, 2021)]


def _one_neuron(b):
    """A first layer whose output is the constant sigma_s(b) (W = 0, a = 1)."""
    return network.Params(
        torch.zeros(1, ARGS["d"], dtype=F64), torch.tensor([b], dtype=F64), torch.ones(1, dtype=F64)
    )


def _labels(seed):
    gen = _gen(10 + 1000 * seed)
    dist = data.parity_mixture(12, 8, k=3, p_o=Fraction(1, 2), generator=gen)
    _, y, _ = dist.sample(ARGS["n"], gen)
    return y


@pytest.mark.parametrize("b", [1.0, 10.0])
def test_first_steps_stats_hinge_active_where_y_g_reaches_one(monkeypatch, b):
    p = _one_neuron(b)
    monkeypatch.setattr(network, "first_two_steps", lambda p0, x, y, sched: (p, p))
    out = analysis.first_steps_stats(p_o=0.5, seed=1, **ARGS)
    y = _labels(1)
    s = network.schedule("A.274", 3, 4, 1.0, 1.0, 600)["step2"]["s"]
    assert s == 3**-2.0  # sigma_xi = 1/k^2 of (A.274)
    g = float(network.smoothed_relu(torch.tensor(b, dtype=F64), s))
    # b = 1: sigma_s(1) = Phi(1/s) + s phi(1/s) - s phi(0) < 1 = sigma_0(1): every point active;
    # b = 10: sigma_s(10) = 1 exactly (Phi = 1, phi = 0 in float64): y = +1 is not active
    assert (g < 1) if b == 1.0 else (g == 1.0)
    want = 1.0 if b == 1.0 else float((y == -1).double().mean())
    assert 0 < float((y == -1).double().mean()) < 1
    assert out["hinge_active"] == want


# -- lemma_a18_drift at t >= 2 -------------------------------------------------------------------


K, M, T, SEED = 3, 8, 9, 1  # eta = k^2 / (T m^(1/3)) = 9 / (9 * 2) = 1/2 exactly


def test_lemma_a18_drift_refuses_two_eta_lam_equal_to_one():
    with pytest.raises(ValueError, match="'lam' = 1.0 is not allowed: need 0 <= 2 eta lam < 1"):
        analysis.lemma_a18_drift(
            12, 8, k=K, m=M, n=40, steps=T, batch=10, seed=SEED, lam=1.0
        )  # 2 eta lam = 1


def test_lemma_a18_drift_bounds_at_step_two(monkeypatch):
    """A stand-in trajectory: nothing moves at t = 1, and at t = 2 b moves by half its bound and W
    by a quarter of its bound (the docstring's, with t = 2), a stays at a^(2)."""
    lam = 0.3
    got = {}

    def train_late(
        p2, x, *, y, steps, batch, generator, optimizer, lr, lam, eval_every, evaluate, **kw
    ):
        assert (steps, optimizer, eval_every) == (T, "theory", 1)
        eta, R = lr, float(x.norm(dim=1).max())
        a2, w2n = p2.a.abs(), p2.W.norm(dim=1)
        lin = eta**2 * 2 * 1 / 2 + 2 * eta * a2  # t = 2
        w_bound = 2 * 2 * eta * lam * w2n + R * lin
        e1 = torch.zeros_like(p2.W)
        e1[:, 0] = 1.0
        moved = network.Params(p2.W + 0.25 * w_bound.unsqueeze(1) * e1, p2.b + 0.5 * lin, p2.a)
        got.update(eta=eta, a2=a2)
        for p in [p2, p2, moved] + [p2] * (steps - 2):
            evaluate(p)
        return moved, {}

    monkeypatch.setattr(network, "train_late", train_late)
    out = analysis.lemma_a18_drift(12, 8, k=K, m=M, n=40, steps=T, batch=10, seed=SEED, lam=lam)
    assert got["eta"] == 0.5
    assert out["ratio_b"] == pytest.approx(0.5, rel=1e-12)
    assert out["ratio_w"] == pytest.approx(0.25, rel=1e-12)
    # a stays at a^(2): |a^(2)| / (eta t + |a^(2)|) is largest at t = 1
    a2 = got["a2"]
    assert out["ratio_a"] == pytest.approx(float((a2 / (0.5 + a2)).max()), rel=1e-12)
