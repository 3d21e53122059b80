"""Unit tests of companions.losses: each one fails on a plausible wrong implementation."""

import math

import pytest
import torch

from companions import losses


def _rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def test_logistic_values_and_extreme_arguments():
    t = torch.tensor([-50.0, -25.0, 0.0, 3.0, 40.0], dtype=torch.float64)
    expected = torch.tensor([math.log1p(math.exp(-x)) if x > -30 else -x + math.exp(x) for x in t])
    # softplus' identity switch above 20 would be off by ~exp(-25) = 1.4e-11 at t = -25
    assert torch.allclose(losses.logistic(t), expected, rtol=0, atol=1e-14)
    assert losses.logistic(torch.tensor(0.0)) == pytest.approx(math.log(2))


def test_linear_and_exponential():
    t = torch.tensor([-1.0, 0.5])
    assert torch.equal(losses.linear(t), -t)
    assert torch.allclose(losses.exponential(t), torch.exp(-t))


def test_pair_contrastive_matches_a_loop():
    h, hp, hn = _rand(3, 7, 4, seed=1), _rand(3, 7, 4, seed=2), _rand(3, 7, 4, seed=3)
    out = losses.pair_contrastive(h, hp, hn, "logistic")
    assert out.shape == (3,)
    for b in range(3):
        vals = [math.log1p(math.exp(-float(h[b, i] @ (hp[b, i] - hn[b, i])))) for i in range(7)]
        assert float(out[b]) == pytest.approx(sum(vals) / 7, rel=1e-12)


def test_mean_negative_uses_the_batch_mean_or_a_given_center():
    h, hp = _rand(9, 3, seed=4), _rand(9, 3, seed=5)
    c = h.mean(0)
    expected = torch.log1p(torch.exp(-((h * (hp - c)).sum(-1)))).mean()
    assert float(losses.mean_negative_contrastive(h, hp)) == pytest.approx(
        float(expected), rel=1e-12
    )
    zero = torch.zeros(3, dtype=torch.float64)
    with_zero = losses.mean_negative_contrastive(h, hp, "linear", center=zero)
    assert float(with_zero) == pytest.approx(float(-(h * hp).sum(-1).mean()), rel=1e-12)
    # the batch mean is not the positives' mean
    assert float(losses.mean_negative_contrastive(h, hp)) != pytest.approx(
        float(losses.mean_negative_contrastive(h, hp, center=hp.mean(0))), rel=1e-6
    )


def test_info_nce_with_one_negative_is_the_logistic_pair_loss():
    h, hp, hn = _rand(16, 5, seed=6), _rand(16, 5, seed=7), _rand(16, 5, seed=8)
    tau = 0.2
    nce = losses.info_nce(h.unsqueeze(1), torch.stack([hp, hn], 1), tau)
    pair = losses.pair_contrastive(h, hp / tau, hn / tau, "logistic")
    assert float(nce.mean()) == pytest.approx(float(pair), rel=1e-13)


def test_info_nce_full_batch_is_cross_entropy_on_the_diagonal():
    hx, hy = _rand(6, 4, seed=9), _rand(6, 4, seed=10)
    logits = hx @ hy.T / 0.5
    expected = torch.nn.functional.cross_entropy(logits, torch.arange(6))
    assert float(losses.info_nce(hx, hy, 0.5)) == pytest.approx(float(expected), rel=1e-12)


def test_info_nce_window_and_stop_grad():
    hx = _rand(5, 3, seed=11).requires_grad_()
    hy = _rand(5, 3, seed=12).requires_grad_()
    mask = losses.negative_mask(5, 1)
    assert mask.sum() == 10 and mask[0, 1] and mask[4, 0] and not mask[0, 2]
    out = losses.info_nce(hx, hy, 1.0, n_neg=1)
    S = hx @ hy.T
    manual = torch.stack(
        [-(S[k, k] - torch.logsumexp(S[k, [k, (k + 1) % 5]], 0)) for k in range(5)]
    )
    assert float(out.detach()) == pytest.approx(float(manual.detach().mean()), rel=1e-12)
    losses.info_nce(hx, hy, 1.0, stop_grad=True).backward()
    assert hy.grad is None and hx.grad is not None
    with pytest.raises(ValueError, match="tau"):
        losses.info_nce(hx, hy, 0.0)
    with pytest.raises(ValueError, match="not one of"):
        losses.pair_contrastive(hx, hy, hy, "hinge")
