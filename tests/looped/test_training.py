"""companions.looped.training: the batch's law, the step size, the depth curve against gradient
descent, and the trainer's dtypes and defaults."""

import math

import pytest
import torch

from companions.looped import construction as lc
from companions.looped import training as ltr


def test_training_batch_law_and_layout():
    g = torch.Generator().manual_seed(0)
    Z0, theta, alpha = ltr.sample_training_batch(4000, 6, 3, g)
    assert Z0.shape == (4000, 7, 4) and theta.shape == (4000, 3) and Z0.dtype == torch.float64
    assert torch.equal(Z0[:, 6, 3], alpha) and torch.equal(Z0[:, 6, :3], torch.zeros(4000, 3))
    assert torch.allclose(Z0[:, :6, 3], (Z0[:, :6, :3] @ theta.unsqueeze(-1)).squeeze(-1))
    a = alpha.abs()
    assert float(a.min()) >= 0.5 and float(a.max()) <= 2.0
    assert abs(float(a.mean()) - 1.25) < 5 * 0.433 / math.sqrt(4000)  # U[0.5, 2]: sd 1.5/sqrt 12
    assert abs(float((alpha > 0).double().mean()) - 0.5) < 5 * 0.5 / math.sqrt(4000)
    Z32, _, a32 = ltr.sample_training_batch(3, 6, 3, g, dtype=torch.float32)
    assert Z32.dtype == a32.dtype == torch.float32


def test_fixed_step_is_one_over_the_squared_edge():
    # (sqrt n + sqrt d)^2, the Marchenko-Pastur upper edge of X^T X: 1 / (4 + 3)^2
    assert ltr.fixed_step_for_gaussian(16, 9) == pytest.approx(1 / 49, rel=1e-15)


def test_depth_curve_of_the_construction_is_gradient_descent():
    g = torch.Generator().manual_seed(2)
    Z0, theta, alpha = ltr.sample_training_batch(50, 12, 3, g)
    Q, P = lc.construction_weights(3)
    eta = ltr.fixed_step_for_gaussian(12, 3)

    def model_fn(Z, loops, trajectory=False):
        return lc.looped_transformer_gram(Z, Q, P, eta, loops=loops, trajectory=trajectory)[0]

    curve = ltr.depth_curve(model_fn, Z0, theta, alpha, 6)
    assert curve.shape == (7,)
    assert float(curve[0]) == pytest.approx(float(alpha.abs().mean()), rel=1e-12)  # q = 0
    X, y = Z0[:, :12, :3], Z0[:, :12, 3]
    thetas = lc.gradient_descent(X, y, torch.full((6, 50), eta, dtype=torch.float64))
    gd = ((alpha.unsqueeze(-1) * thetas * theta).sum(-1) - alpha).abs().mean(-1)
    assert torch.allclose(curve[1:], gd[1:], rtol=1e-10)


def test_model_defaults_and_training_problem_dtypes():
    m = ltr.LoopedLinearTransformer(3, 0.1, generator=torch.Generator().manual_seed(4))
    assert m.Q.dtype == torch.float64 and m.Q.shape == (4, 4) and m.P.shape == (4, 4)
    ref = 0.1 * torch.randn(4, 4, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    assert torch.equal(m.Q.detach(), ref)
    model, loss = ltr.looped_training_problem(
        3, 8, loops=2, batch=5, generator=torch.Generator().manual_seed(4)
    )
    assert model.Q.dtype == torch.float32 and model.eta == ltr.fixed_step_for_gaussian(8, 3)
    assert torch.equal(model.Q.detach(), ref.float())  # drawn in float64, then cast
    value = loss(0)
    assert value.dtype == torch.float32 and value.shape == () and float(value.detach()) > 0


def test_both_weights_are_drawn_at_init_scale_and_the_batch_follows_the_generator():
    m = ltr.LoopedLinearTransformer(
        2, 0.1, init_scale=0.3, generator=torch.Generator().manual_seed(5)
    )
    g = torch.Generator().manual_seed(5)
    Q = 0.3 * torch.randn(3, 3, generator=g, dtype=torch.float64)
    P = 0.3 * torch.randn(3, 3, generator=g, dtype=torch.float64)
    assert torch.equal(m.Q.detach(), Q) and torch.equal(m.P.detach(), P)
    torch.manual_seed(0)
    a = ltr.sample_training_batch(20, 4, 2, torch.Generator().manual_seed(6))
    torch.manual_seed(1)
    b = ltr.sample_training_batch(20, 4, 2, torch.Generator().manual_seed(6))
    assert all(torch.equal(x, y) for x, y in zip(a, b))  # the generator alone decides


def test_forward_trajectory_and_the_learning_rate_reach_their_callees():
    m = ltr.LoopedLinearTransformer(2, 0.1, generator=torch.Generator().manual_seed(7))
    Z0, _, _ = ltr.sample_training_batch(5, 4, 2, torch.Generator().manual_seed(8))
    with torch.no_grad():
        assert m(Z0, 3).shape == (5, 2) and m(Z0, 3, trajectory=True).shape == (4, 5, 2)
    runs = [
        ltr.train_looped_transformer(
            2,
            4,
            loops=2,
            steps=3,
            batch=8,
            generator=torch.Generator().manual_seed(9),
            lr=lr,
            progress=False,
        )[0].Q  # fmt: skip
        for lr in (1e-2, 5e-2)
    ]
    assert not torch.allclose(runs[0], runs[1])


def test_distance_is_scale_free_and_exact_for_the_construction():
    Q, P = lc.construction_weights(3)
    exact = ltr.distance_to_construction(Q / 3, P / 3)  # 1/3: not a float32 number
    assert exact["q_residual"] < 1e-15 and exact["p_residual"] < 1e-15
    g = torch.Generator().manual_seed(10)
    Qn = Q + 0.1 * torch.randn(4, 4, generator=g, dtype=torch.float64)
    Pn = P + 0.1 * torch.randn(4, 4, generator=g, dtype=torch.float64)
    one, ten = ltr.distance_to_construction(Qn, Pn), ltr.distance_to_construction(10 * Qn, 10 * Pn)
    assert ten["q_residual"] == pytest.approx(one["q_residual"], rel=1e-12)
    assert ten["p_residual"] == pytest.approx(one["p_residual"], rel=1e-12)
    assert 0 < one["q_residual"] < 1 and 0 < one["p_residual"] < 1
