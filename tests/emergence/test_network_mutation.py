"""companions.emergence.network where the mutants of issue 23 found it untested: the
initialisation's scales, pattern and checks, the truncated and smoothed ReLU against an integral
and at the edges z = 0, 1, the hinge's edge y g = 1, the weighted gradients and the literal step
(2.4), the schedules' every entry, class weights, cosines, and train_late's first steps (SGD with
weight decay, Adam) against steps worked out by hand."""

from __future__ import annotations

import math
import re

import mpmath as mp
import pytest
import torch

from companions.emergence import network

F64 = torch.float64


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def _params(m2=4, d=3, seed=0):
    g = _gen(seed)
    return network.Params(
        0.5 * torch.randn(m2, d, generator=g, dtype=F64),
        0.3 * torch.randn(m2, generator=g, dtype=F64),
        torch.randn(m2, generator=g, dtype=F64),
    )


def _data(n=10, d=3, seed=1):
    g = _gen(seed)
    X = torch.randn(n, d, generator=g, dtype=F64)
    y = torch.sign(torch.randn(n, generator=g, dtype=F64))
    return X, y


# -- Params and the initialisation -----------------------------------------------------------------


def test_params_detach_is_an_equal_copy_and_width_counts_rows():
    W = torch.ones(3, 2, requires_grad=True)
    b = torch.zeros(3, requires_grad=True)
    a = torch.full((3,), 2.0, requires_grad=True)
    p = network.Params(W * 1, b * 1, a * 1)
    q = p.detach()
    assert isinstance(q, network.Params) and q.width == 3
    for got, want in ((q.W, W), (q.b, b), (q.a, a)):
        assert torch.equal(got, want.detach()) and not got.requires_grad
    q.W[0, 0] = 5.0
    assert float(p.W.detach()[0, 0]) == 1.0


def test_symmetric_init_scales_pattern_and_precision():
    m, d, k, sigma_tilde, gamma = 3000, 2, 3, 1.5, 0.5
    p = network.symmetric_init(m, d, k=k, sigma_tilde=sigma_tilde, gamma=gamma, generator=_gen(3))
    assert p.width == 2 * m and p.W.dtype == F64
    # sigma_w = 1/3, sigma_b = 1/9, sigma_a = sigma~^2/(gamma k^2) = 2.25/4.5 = 0.5: sample stds
    # of 6000 / 3000 / 3000 normal draws, within 6 %
    assert float(p.W[:m].std()) == pytest.approx(1 / k, rel=0.06)
    assert float(p.b[:m].std()) == pytest.approx(1 / k**2, rel=0.06)
    assert float(p.a[:m].std()) == pytest.approx(sigma_tilde**2 / (gamma * k**2), rel=0.06)
    assert torch.equal(p.W[m:], p.W[:m]) and torch.equal(p.b[m:], p.b[:m])
    assert torch.equal(p.a[m:], -p.a[:m])
    for t in (p.W, p.b, p.a):  # float64 draws, not float32 ones widened
        assert not torch.equal(t.to(torch.float32).to(F64), t)
    with torch.random.fork_rng():  # the global generator moved: the draws must not change
        torch.manual_seed(1)
        again = network.symmetric_init(
            m, d, k=k, sigma_tilde=sigma_tilde, gamma=gamma, generator=_gen(3)
        )
    assert all(torch.equal(s, t) for s, t in zip((p.W, p.b, p.a), (again.W, again.b, again.a)))
    low = network.symmetric_init(
        2, 3, k=2, sigma_tilde=1.0, gamma=0.5, generator=_gen(3), dtype=torch.float32
    )
    assert {low.W.dtype, low.b.dtype, low.a.dtype} == {torch.float32}


def test_symmetric_init_needs_positive_gamma():
    msg = "parameter 'gamma' = 0.0 is not allowed: sigma_a = sigma~^2/(gamma k^2) needs gamma > 0"
    with pytest.raises(ValueError, match=f"^{re.escape(msg)}$"):
        network.symmetric_init(2, 3, k=2, sigma_tilde=1.0, gamma=0.0, generator=_gen())
    network.symmetric_init(
        2, 3, k=2, sigma_tilde=1.0, gamma=1e-9, generator=_gen()
    )  # any gamma > 0 is allowed


# -- activations, forward, loss, accuracy ----------------------------------------------------------


def test_truncated_relu_and_its_derivative_at_the_edges():
    z = torch.tensor([-0.5, 0.0, 0.25, 1.0, 1.5], dtype=F64)
    assert network.truncated_relu(z).tolist() == [0.0, 0.0, 0.25, 1.0, 1.0]
    assert network.smoothed_relu(z, 0).tolist() == [0.0, 0.0, 0.25, 1.0, 1.0]
    # I[z in (0, 1)]: open at both ends
    assert network.smoothed_relu_derivative(z, 0).tolist() == [0.0, 0.0, 1.0, 0.0, 0.0]
    assert network.smoothed_relu_derivative(z, 0).dtype == F64


@pytest.mark.parametrize("s", [0.3, 1.0, 1.7])
def test_smoothed_relu_equals_the_integral(s):
    # E clamp(z + xi, 0, 1) = int_0^1 Pr[z + xi > t] dt = int_0^1 Phi((z - t)/s) dt, and its
    # derivative in z is Phi(z/s) - Phi((z-1)/s); both by mpmath
    z = torch.tensor([-0.8, 0.1, 0.6, 1.4], dtype=F64)
    got = network.smoothed_relu(z, s)
    slope = network.smoothed_relu_derivative(z, s)
    for i, zi in enumerate(z.tolist()):
        want = mp.quad(lambda t: mp.ncdf((zi - t) / s), [0, 1])
        assert float(got[i]) == pytest.approx(float(want), abs=1e-13)
        assert float(slope[i]) == pytest.approx(float(mp.ncdf(zi / s) - mp.ncdf((zi - 1) / s)))


def test_forward_features_hinge_and_accuracy_by_hand():
    # one input x = (1, 2); neurons z = <w, x> + b = 0.5, 2, -1 (sigma: 0.5, 1, 0)
    p = network.Params(
        torch.tensor([[0.5, 0.0], [1.0, 0.5], [0.0, -1.0]], dtype=F64),
        torch.tensor([0.0, 0.0, 1.0], dtype=F64),
        torch.tensor([2.0, -3.0, 5.0], dtype=F64),
    )
    X = torch.tensor([[1.0, 2.0], [0.0, 0.0]], dtype=F64)  # second input: z = 0, 0, 1
    assert network.preactivations(p, X).tolist() == [[0.5, 2.0, -1.0], [0.0, 0.0, 1.0]]
    assert network.features(p, X).tolist() == [[0.5, 1.0, 0.0], [0.0, 0.0, 1.0]]
    assert network.forward(p, X).tolist() == [1.0 - 3.0, 5.0]
    y = torch.tensor([1.0, 1.0], dtype=F64)
    # max(0, 1 - y g) = (3, 0): mean 1.5; signs (-1, 1): accuracy 1/2
    assert float(network.hinge(y, network.forward(p, X))) == 1.5
    assert network.accuracy(p, X, y) == 0.5
    assert isinstance(network.accuracy(p, X, y), float)
    zero = network.Params(p.W, p.b, torch.zeros(3, dtype=F64))
    assert network.accuracy(zero, X, y) == 0.0  # a zero output is wrong


# -- gradients and the step (2.4) ------------------------------------------------------------------


def test_gradients_count_a_margin_of_exactly_one():
    # one neuron, w = 0, b = 0.5: sigma = 0.5, slope 1; a = 2 gives g = 1 = y g: the hinge's
    # gradient is taken on y g <= 1, so u = y / n = 1
    p = network.Params(
        torch.zeros(1, 2, dtype=F64), torch.tensor([0.5], dtype=F64), torch.tensor([2.0], dtype=F64)
    )
    X = torch.tensor([[1.0, -3.0]], dtype=F64)
    g = network.gradients(p, X, torch.tensor([1.0], dtype=F64), 0.0)
    assert g.W.tolist() == [[-2.0, 6.0]] and g.b.tolist() == [-2.0] and g.a.tolist() == [-0.5]


def test_weighted_gradients_and_the_literal_step():
    p, (X, y) = _params(), _data()
    w = torch.rand(10, generator=_gen(2), dtype=F64)
    w = w / w.sum()
    s = 0.4
    Wr, br, ar = (t.clone().requires_grad_(True) for t in (p.W, p.b, p.a))
    out = network.forward(network.Params(Wr, br, ar), X, s)
    (w * torch.clamp(1 - y * out, min=0)).sum().backward()  # the weighted loss
    g = network.gradients(p, X, y, s, weights=w)
    for got, want in ((g.W, Wr.grad), (g.b, br.grad), (g.a, ar.grad)):
        assert torch.allclose(got, want, rtol=0, atol=1e-13)
    eta, lam_a, lam_w = 0.3, 0.7, 1.1
    q = network.gd_step(p, X, y=y, eta=eta, lam_a=lam_a, lam_w=lam_w, s=s, weights=w)
    assert torch.allclose(q.W, p.W - eta * (Wr.grad + 2 * lam_w * p.W), rtol=0, atol=1e-14)
    assert torch.allclose(q.b, p.b - eta * br.grad, rtol=0, atol=1e-14)  # b not regularised
    assert torch.allclose(q.a, p.a - eta * (ar.grad + 2 * lam_a * p.a), rtol=0, atol=1e-14)
    # the two forgetful steps are two such steps with the schedule's values, on the same weights
    sched = network.schedule("A.274", 3, 4, 1.2, 0.5, 50)
    p1, p2 = network.first_two_steps(p, X, y, sched, weights=w)
    st1, st2 = sched["step1"], sched["step2"]
    want1 = network.gd_step(
        p, X, y=y, eta=st1["eta"], lam_a=st1["lam_a"], lam_w=st1["lam_w"], s=st1["s"], weights=w
    )
    want2 = network.gd_step(want1, X, y=y, eta=1.0, lam_a=0.5, lam_w=0.5, s=st2["s"], weights=w)
    for got, want in ((p1, want1), (p2, want2)):
        assert all(
            torch.equal(s_, t) for s_, t in zip((got.W, got.b, got.a), (want.W, want.b, want.a))
        )


# -- schedule, class weights, cosines --------------------------------------------------------------


@pytest.mark.parametrize("name", network.SCHEDULES)
def test_schedule_every_entry(name):
    k, m, st, gamma, T = 3, 8, 1.5, 0.25, 40
    got = network.schedule(name, k, m, st, gamma, T)
    # (A.214): eta1 = gamma^2 sigma~ / (k m^3), s = k^-3/2; (A.274): sigma~^2, s = 1/k^2
    if name == "A.214":
        eta1, s = 0.0625 * 1.5 / (3 * 512), 3**-1.5
    else:
        eta1, s = 0.0625 * 2.25 / (3 * 512), 1 / 9
    assert got["step1"] == pytest.approx(dict(eta=eta1, lam_a=0.0, lam_w=1 / (2 * eta1), s=s))
    assert got["step2"] == pytest.approx(dict(eta=1.0, lam_a=0.5, lam_w=0.5, s=s))
    # m^(1/3) = 2: eta = k^2/(T m^(1/3)) = 9/80, lam_max = k^3/(sigma~ m^(1/3)) = 27/3 = 9
    assert got["late"] == pytest.approx(dict(eta=9 / 80, lam_max=9.0, s=0.0))
    assert set(got) == {"step1", "step2", "late"}


def test_schedule_names_the_bad_value():
    with pytest.raises(ValueError, match=r"parameter 'schedule' = 'A\.1' is not allowed"):
        network.schedule("A.1", 5, 100, 5.0, 0.25, 600)


def test_class_weights_by_hand_and_a_single_negative_class():
    y = torch.tensor([1.0, -1.0, -1.0, -1.0, 1.0], dtype=F64)
    # alpha_+ = 1/(2 * 2), alpha_- = 1/(2 * 3)
    assert network.class_weights(y).tolist() == pytest.approx([1 / 4, 1 / 6, 1 / 6, 1 / 6, 1 / 4])
    msg = "parameter 'y' has a single class: class weights (A.293) need both"
    with pytest.raises(ValueError, match=f"^{re.escape(msg)}$"):
        network.class_weights(-torch.ones(3))
    # one example of a class is enough: alpha_+ = 1/2, alpha_- = 1/(2 * 2)
    one = torch.tensor([-1.0, 1.0, -1.0], dtype=F64)
    assert network.class_weights(one).tolist() == [0.25, 0.5, 0.25]


def test_cosines_by_hand():
    W = torch.tensor([[3.0, 4.0], [0.0, 0.0], [-2.0, 0.0]], dtype=F64)
    v = torch.tensor([2.0, 0.0], dtype=F64)  # not a unit vector: its norm divides too
    assert network.cosines(W, v).tolist() == [0.6, 0.0, -1.0]


# -- train_late ------------------------------------------------------------------------------------


def _loss_grads(p, X, y, lam):
    Wr, br, ar = (t.clone().requires_grad_(True) for t in (p.W, p.b, p.a))
    out = network.forward(network.Params(Wr, br, ar), X)
    loss = torch.clamp(1 - y * out, min=0).mean() + lam * ((ar**2).sum() + (Wr**2).sum())
    loss.backward()
    return Wr.grad, br.grad, ar.grad


def test_train_late_theory_is_sgd_with_weight_decay_on_the_drawn_batch():
    p, (X, y) = _params(), _data(n=10)
    lr, lam = 0.2, 0.05
    idx = torch.randint(10, (4,), generator=_gen(5))
    gW, gb, ga = _loss_grads(p, X[idx], y[idx], lam)
    got, hist = network.train_late(
        p,
        X,
        y=y,
        steps=1,
        batch=4,
        generator=_gen(5),
        optimizer="theory",
        lr=lr,
        lam=lam,
        progress=False,
    )
    assert torch.allclose(got.W, p.W - lr * gW, rtol=0, atol=1e-14)
    assert torch.allclose(got.b, p.b - lr * gb, rtol=0, atol=1e-14)
    assert torch.allclose(got.a, p.a - lr * ga, rtol=0, atol=1e-14)
    assert hist == {"step": []}  # nothing recorded without evaluate
    assert not got.W.requires_grad


def _adam(p, g, lr):
    return p - lr * g / (g.abs() + 1e-8)  # Adam's first step from zero moments


def test_train_late_adam_default_lr_batch_capped_and_frozen_params():
    p, (X, y) = _params(seed=3), _data(n=6, seed=4)
    # batch 50 > n = 6: 6 draws (with replacement) from the generator
    idx = torch.randint(6, (6,), generator=_gen(6))
    gW, gb, ga = _loss_grads(p, X[idx], y[idx], 0.0)
    got, _ = network.train_late(p, X, y=y, steps=1, batch=50, generator=_gen(6), progress=False)
    assert torch.allclose(got.W, _adam(p.W, gW, 1e-2), rtol=0, atol=1e-14)
    assert torch.allclose(got.b, _adam(p.b, gb, 1e-2), rtol=0, atol=1e-14)
    assert torch.allclose(got.a, _adam(p.a, ga, 1e-2), rtol=0, atol=1e-14)
    only_a, _ = network.train_late(
        p, X, y=y, steps=1, batch=50, generator=_gen(6), lr=0.1, progress=False, train_params=("a",)
    )
    assert torch.equal(only_a.W, p.W) and torch.equal(only_a.b, p.b)
    assert torch.allclose(only_a.a, _adam(p.a, ga, 0.1), rtol=0, atol=1e-14)


def test_train_late_records_every_eval_every_steps_and_the_last():
    p, (X, y) = _params(), _data()
    seen = []

    def evaluate(q):
        seen.append(torch.is_grad_enabled())
        return {"hinge": network.hinge(y, network.forward(q, X)), "one": 1}

    _, hist = network.train_late(
        p,
        X,
        y=y,
        steps=7,
        batch=4,
        generator=_gen(),
        lr=0.01,
        eval_every=3,
        evaluate=evaluate,
        progress=False,
    )
    assert hist["step"] == [0, 3, 6, 7] and hist["one"] == [1.0] * 4
    assert all(isinstance(v, float) for v in hist["hinge"])
    assert hist["hinge"][0] == float(network.hinge(y, network.forward(p, X)))
    assert seen == [False] * 4  # evaluated without building a graph


def test_train_late_names_a_bad_optimizer():
    p, (X, y) = _params(), _data()
    with pytest.raises(ValueError, match=r"parameter 'optimizer' = 'sgd' is not allowed"):
        network.train_late(
            p, X, y=y, steps=1, batch=4, generator=_gen(), optimizer="sgd", progress=False
        )


def test_smoothed_relu_is_finite_far_out():
    z = torch.tensor([-40.0, 40.0], dtype=F64)
    assert network.smoothed_relu(z, 0.5).tolist() == pytest.approx([0.0, 1.0], abs=1e-15)
    assert math.isfinite(float(network.smoothed_relu_derivative(z, 0.5).sum()))


def test_train_late_default_eval_every_is_ten():
    p, (X, y) = _params(), _data()
    _, hist = network.train_late(
        p,
        X,
        y=y,
        steps=11,
        batch=4,
        generator=_gen(),
        evaluate=lambda q: {"one": 1},
        progress=False,
    )
    assert hist["step"] == [0, 10, 11]


def test_train_late_progress_bar_shows_its_label_only_when_asked(capsys):
    p, (X, y) = _params(), _data()
    network.train_late(p, X, y=y, steps=2, batch=4, generator=_gen(), lr=0.01, progress=False)
    assert capsys.readouterr().err == ""
    network.train_late(
        p, X, y=y, steps=2, batch=4, generator=_gen(), lr=0.01
    )  # progress on by default, desc "network"
    assert "network: " in capsys.readouterr().err
    network.train_late(p, X, y=y, steps=2, batch=4, generator=_gen(), lr=0.01, desc="late steps")
    assert "late steps: " in capsys.readouterr().err
