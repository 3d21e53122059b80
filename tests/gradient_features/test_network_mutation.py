"""companions.gradient_features.network where the mutants of issue 23 found it untested: the
parameter checks' names, the boundaries <w, x> = b, cos = 1 - gamma and ||G|| = B_G, the scale,
precision and reproducibility of the initialisation (3.9), and the three trainers' first steps
(gradient descent, Adam) and minibatches against steps worked out by hand."""

from __future__ import annotations

import pytest
import torch

from companions.gradient_features import network

F64 = torch.float64


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def _adam_first_step(p, g, lr):
    """Adam's first step from zero moments: both bias corrections cancel (m^ = g, v^ = g^2), so
    the step is lr * g / (|g| + eps), eps = 1e-8 (torch's default)."""
    return p - lr * g / (g.abs() + 1e-8)


def _hinge_grads(a, W, b, X, y):
    """The gradients of sum_s mean_l max(0, 1 - y g(x)) in (a, W), with g written out here."""
    a = a.clone().requires_grad_(True)
    W = W.clone().requires_grad_(True)
    g = (torch.relu(torch.einsum("snd,skd->snk", X, W) - b[:, None, :]) * a[:, None, :]).sum(-1)
    loss = torch.clamp(1 - y * g, min=0).mean(-1).sum()
    return torch.autograd.grad(loss, [a, W])


def _problem(S=2, n=12, d=3, N=5, seed=0):
    g = _gen(seed)
    net = network.Net(
        torch.randn(S, N, generator=g, dtype=F64),
        torch.randn(S, N, d, generator=g, dtype=F64),
        0.1 * torch.randn(S, N, generator=g, dtype=F64),
    )
    X = torch.randn(S, n, d, generator=g, dtype=F64)
    y = torch.sign(torch.randn(S, n, generator=g, dtype=F64))
    return net, X, y


# -- Net, accuracy, hinge, cone -----------------------------------------------------------------


def test_detach_is_an_equal_copy_without_graph():
    a = torch.tensor([[1.0, -2.0]], requires_grad=True)
    W = torch.tensor([[[0.5], [1.5]]], requires_grad=True)
    b = torch.tensor([[0.25, -0.25]], requires_grad=True)
    net = network.Net(a * 1, W * 1, b * 1)
    copy = net.detach()
    assert isinstance(copy, network.Net)
    for got, want in ((copy.a, a), (copy.W, W), (copy.b, b)):
        assert torch.equal(got, want.detach()) and not got.requires_grad
    copy.a[0, 0] = 9.0
    assert float(net.a.detach()[0, 0]) == 1.0  # a copy, not a view


def test_accuracy_and_hinge_by_hand():
    out = torch.tensor([[0.5, -2.0, 0.0], [1.0, 1.0, 1.0]], dtype=F64)
    y = torch.tensor([[1.0, 1.0, 1.0], [1.0, -1.0, 1.0]], dtype=F64)
    # seed 0: signs (1, -1, 0), only the first right (a zero output is wrong); seed 1: 2 of 3
    assert network.accuracy(out, y).tolist() == pytest.approx([1 / 3, 2 / 3], abs=1e-15)
    # max(0, 1 - y out): seed 0 (0.5, 3, 1), seed 1 (0, 2, 0)
    assert network.seedwise_hinge(out, y).tolist() == pytest.approx([1.5, 2 / 3], abs=1e-15)


def test_cone_cosine_divides_by_the_norm():
    G = torch.tensor([[3.0, 4.0], [0.0, 0.0]], dtype=F64)  # norms 5 and 0
    D = torch.eye(2, dtype=F64)
    assert network.cone_cosine(G, D).tolist() == [[0.6, 0.8], [0.0, 0.0]]


def test_feature_hits_boundaries_and_gamma_zero():
    G = torch.tensor([[3.0, 4.0]], dtype=F64)  # ||G|| = 5, cosine with e1 is 3/5
    D = torch.tensor([[1.0, 0.0]], dtype=F64)
    assert 1 - 0.4 == 0.6  # the cosine sits exactly on the cone's edge: |cos| > 1 - gamma fails
    assert not bool(network.feature_hits(G, D, 0.4, 1.0)[0, 0])
    assert bool(network.feature_hits(G, D, 0.41, 1.0)[0, 0])
    # ||G|| = B_G exactly counts (>=)
    assert bool(network.feature_hits(G, D, 0.41, 5.0)[0, 0])
    assert not bool(network.feature_hits(G, D, 0.41, 5.0 + 1e-9)[0, 0])
    with pytest.raises(ValueError, match="'gamma'"):
        network.feature_hits(G, D, 0.0, 1.0)


# -- the activation boundary <w, x> = b -----------------------------------------------------------


def test_simplified_gradient_and_ntk_leave_out_a_neuron_exactly_at_its_bias():
    W = torch.tensor([[[1.0, 0.0]]], dtype=F64)
    b = torch.tensor([[0.5]], dtype=F64)
    # <w, x_1> = 0.5 = b (inactive: the indicator is strict), <w, x_2> = 2 > b (active)
    X = torch.tensor([[[0.5, 1.0], [2.0, -1.0]]], dtype=F64)
    y = torch.tensor([[1.0, -1.0]], dtype=F64)
    G = network.simplified_gradient(W, b, X, y)
    assert G.tolist() == [[[-1.0, 0.5]]]  # (1/2) (-1) (2, -1)
    net0 = network.Net(torch.tensor([[2.0]], dtype=F64), W, b)
    dW = torch.tensor([[[1.0, 1.0]]], dtype=F64)
    da = torch.tensor([[3.0]], dtype=F64)
    # x_1: slope 0, relu(0) = 0 -> 0; x_2: 2 * <(1, 1), (2, -1)> + 3 * relu(1.5) = 2 + 4.5
    assert network.ntk_output(net0, dW, da, X).tolist() == [[0.0, 6.5]]


# -- initialisation (3.9) --------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["sigma_a", "sigma_w", "b_tilde"])
def test_symmetric_init_names_the_bad_parameter(name):
    kwargs = dict(sigma_a=1.0, sigma_w=1.0, b_tilde=1.0)
    kwargs[name] = -0.5
    with pytest.raises(ValueError, match=f"parameter '{name}' = -0.5"):
        network.symmetric_init(1, 2, d=3, generator=_gen(), **kwargs)


def test_symmetric_init_with_one_neuron_per_block():
    net = network.symmetric_init(
        1, 1, d=2, sigma_a=1.0, sigma_w=1.0, b_tilde=0.5, generator=_gen(), dtype=F64
    )
    assert net.width == 4
    assert net.b.tolist() == [[0.5, -0.5, 0.5, -0.5]]


def test_symmetric_init_scale_precision_and_reproducibility():
    m, sigma_a, sigma_w = 4000, 3.0, 0.2
    net = network.symmetric_init(
        1, m, d=2, sigma_a=sigma_a, sigma_w=sigma_w, b_tilde=0.5, generator=_gen(3), dtype=F64
    )
    # sample standard deviations of 4000 (a) and 8000 (W) normal draws: within 5 % of sigma
    assert float(net.a[0, :m].std()) == pytest.approx(sigma_a, rel=0.05)
    assert float(net.W[0, :m].std()) == pytest.approx(sigma_w, rel=0.05)
    # float64 asked: the draws are float64 draws, not float32 ones widened
    for t in (net.a, net.W):
        assert t.dtype == F64 and not torch.equal(t.to(torch.float32).to(F64), t)
    # the generator alone decides the draws
    with torch.random.fork_rng():  # the global generator moved: the draws must not change
        torch.manual_seed(123)
        again = network.symmetric_init(
            1, m, d=2, sigma_a=sigma_a, sigma_w=sigma_w, b_tilde=0.5, generator=_gen(3), dtype=F64
        )
    assert torch.equal(again.a, net.a) and torch.equal(again.W, net.W)


# -- first step and autograd step ------------------------------------------------------------------


def test_first_step_names_eta1_and_autograd_step_keeps_b():
    net, X, y = _problem()
    with pytest.raises(ValueError, match="parameter 'eta1' = 0"):
        network.first_step(net, X, y, 0.0)
    out = network.autograd_step(net, X, y, 0.1, 0.0)
    assert torch.equal(out.b, net.b) and out.b is not net.b


# -- train -----------------------------------------------------------------------------------------


def test_train_names_lr_and_accepts_gd():
    net, X, y = _problem()
    with pytest.raises(ValueError, match="parameter 'lr' = 0"):
        network.train(net, X, y=y, steps=1, lr=0.0)


def test_train_gd_is_two_plain_gradient_steps_and_ignores_batch():
    net, X, y = _problem(seed=1)
    lr = 0.05
    a, W = net.a, net.W
    for _ in range(2):
        ga, gW = _hinge_grads(a, W, net.b, X, y)
        a, W = a - lr * ga, W - lr * gW
    got = network.train(net, X, y=y, steps=2, lr=lr, optimizer="gd", batch=3, generator=_gen(9))
    assert torch.allclose(got.a, a, rtol=0, atol=1e-13)
    assert torch.allclose(got.W, W, rtol=0, atol=1e-13)
    assert torch.equal(got.b, net.b)


def test_train_adam_first_step_by_default_moves_both_layers():
    net, X, y = _problem(seed=2)
    lr = 0.05
    ga, gW = _hinge_grads(net.a, net.W, net.b, X, y)
    got = network.train(net, X, y=y, steps=1, lr=lr)
    assert torch.allclose(got.a, _adam_first_step(net.a, ga, lr), rtol=0, atol=1e-13)
    assert torch.allclose(got.W, _adam_first_step(net.W, gW, lr), rtol=0, atol=1e-13)


def _minibatch(n, batch, seed):
    return torch.randint(n, (batch,), generator=_gen(seed))


def test_train_adam_minibatch_is_drawn_by_the_generator():
    net, X, y = _problem(n=12, d=3, seed=4)
    lr = 0.05
    # batch 4 < n = 12 (and > d = 3): one Adam step on the 4 points the generator draws
    idx = _minibatch(12, 4, 5)
    ga, gW = _hinge_grads(net.a, net.W, net.b, X[:, idx], y[:, idx])
    got = network.train(net, X, y=y, steps=1, lr=lr, batch=4, generator=_gen(5))
    assert torch.allclose(got.a, _adam_first_step(net.a, ga, lr), rtol=0, atol=1e-13)
    assert torch.allclose(got.W, _adam_first_step(net.W, gW, lr), rtol=0, atol=1e-13)
    # batch = n is the full batch (no draw with replacement)
    full = network.train(net, X, y=y, steps=1, lr=lr)
    same = network.train(net, X, y=y, steps=1, lr=lr, batch=12, generator=_gen(5))
    assert torch.equal(same.a, full.a) and torch.equal(same.W, full.W)


# -- train_ntk -------------------------------------------------------------------------------------


def test_train_ntk_first_adam_step_by_hand():
    net, X, y = _problem(seed=6)
    lr = 0.05
    z = torch.einsum("snd,skd->snk", X, net.W) - net.b[:, None, :]
    # at dW = da = 0 the output is 0 and every hinge is active: the gradients are
    # -(1/n) sum_l y_l a_i I[z > 0] x_l and -(1/n) sum_l y_l relu(z)
    n = X.shape[1]
    gW = -torch.einsum("sn,snk,snd->skd", y, (z > 0).to(F64), X) * net.a[..., None] / n
    ga = -torch.einsum("sn,snk->sk", y, torch.relu(z)) / n
    dW = _adam_first_step(torch.zeros_like(gW), gW, lr)
    da = _adam_first_step(torch.zeros_like(ga), ga, lr)
    Xe = torch.randn(2, 7, 3, generator=_gen(7), dtype=F64)
    ze = torch.einsum("snd,skd->snk", Xe, net.W) - net.b[:, None, :]
    want = (net.a[:, None, :] * (ze > 0) * torch.einsum("snd,skd->snk", Xe, dW)).sum(-1)
    want = want + (torch.relu(ze) * da[:, None, :]).sum(-1)
    f = network.train_ntk(net, X, y=y, steps=1, lr=lr)
    assert torch.allclose(f(Xe), want, rtol=0, atol=1e-12)
    # minibatch of 4 of 12 drawn by the generator: the same step on those points
    idx = _minibatch(12, 4, 8)
    on_batch = network.train_ntk(net, X[:, idx], y=y[:, idx], steps=1, lr=lr)
    drawn = network.train_ntk(net, X, y=y, steps=1, lr=lr, batch=4, generator=_gen(8))
    assert torch.allclose(drawn(Xe), on_batch(Xe), rtol=0, atol=1e-13)
    assert not torch.allclose(drawn(Xe), f(Xe), atol=1e-6)
    # batch = n is the full batch
    assert torch.equal(
        network.train_ntk(net, X, y=y, steps=1, lr=lr, batch=12, generator=_gen(8))(Xe), f(Xe)
    )


# -- train_linear ----------------------------------------------------------------------------------


def _linear_problem():
    X = torch.randn(2, 12, 3, generator=_gen(10), dtype=F64)
    # seed 0 has mean label +1/3, seed 1 has -2/3: the two biases move in opposite directions
    y = torch.tensor([[1.0] * 8 + [-1.0] * 4, [1.0] * 2 + [-1.0] * 10], dtype=F64)
    return X, y


def _linear_first_step(X, y, lr):
    # at v = 0, c = 0 every hinge is active: grad_v = -(1/n) sum y x, grad_c = -(1/n) sum y
    gv = -torch.einsum("sn,snd->sd", y, X) / X.shape[1]
    gc = -y.mean(-1, keepdim=True)
    return _adam_first_step(torch.zeros_like(gv), gv, lr), _adam_first_step(0 * gc, gc, lr)


def test_train_linear_first_adam_step_by_hand():
    X, y = _linear_problem()
    lr = 0.1
    v, c = _linear_first_step(X, y, lr)
    assert c[:, 0].tolist() == pytest.approx([0.1, -0.1], rel=1e-6)
    Xe = torch.randn(2, 5, 3, generator=_gen(11), dtype=F64)
    f = network.train_linear(X, y, steps=1, lr=lr)
    got = f(Xe)
    assert got.dtype == F64
    assert torch.allclose(got, torch.einsum("snd,sd->sn", Xe, v) + c, rtol=0, atol=1e-14)
    # batch = n is the full batch
    assert torch.equal(
        network.train_linear(X, y, steps=1, lr=lr, batch=12, generator=_gen(1))(Xe), got
    )


def test_train_linear_minibatch_is_drawn_by_the_generator():
    X, y = _linear_problem()
    lr = 0.1
    idx = _minibatch(12, 4, 12)  # batch 4 < n = 12, and > d = 3
    v, c = _linear_first_step(X[:, idx], y[:, idx], lr)
    Xe = torch.randn(2, 5, 3, generator=_gen(13), dtype=F64)
    f = network.train_linear(X, y, steps=1, lr=lr, batch=4, generator=_gen(12))
    assert torch.allclose(f(Xe), torch.einsum("snd,sd->sn", Xe, v) + c, rtol=0, atol=1e-14)
