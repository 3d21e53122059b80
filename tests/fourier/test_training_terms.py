"""companions.fourier.training: terms whose absence no other test measures.

- AdamW's decoupled weight decay, by one step against a run without it: the difference is
  exactly ``-lr * weight_decay * theta_0`` (the decay acts on the parameters before Adam's step).
- The learning-rate schedule (linear warm-up, cosine decay over the last ``decay_fraction``),
  pinned step by step against its closed form.
"""

from __future__ import annotations

import math

import pytest
import torch

from companions.fourier import training as ftr


def _one_step(weight_decay, lr=0.05):
    return ftr.train(
        5,
        2,
        widths=[4],
        steps=1,
        lr=lr,
        generator=torch.Generator().manual_seed(3),
        regularizer="adamw",
        weight_decay=weight_decay,
        dtype=torch.float64,
        progress=False,
    )


@pytest.mark.parametrize("wd", [0.1, 1.0])
def test_adamw_weight_decay_is_applied_once_per_step(wd):
    lr = 0.05
    off, on = _one_step(0.0, lr), _one_step(wd, lr)
    assert torch.equal(off.U0, on.U0) and torch.equal(off.W0, on.W0)
    assert torch.allclose(on.U - off.U, -lr * wd * on.U0, atol=1e-12)
    assert torch.allclose(on.W - off.W, -lr * wd * on.W0, atol=1e-12)
    assert float((on.U - off.U).abs().max()) > 1e-4  # measurable, not round-off


def test_weight_decay_is_ignored_by_the_penalised_objectives():
    runs = [
        ftr.train(
            5,
            2,
            widths=[4],
            steps=2,
            lr=0.05,
            generator=torch.Generator().manual_seed(3),
            weight_decay=wd,
            dtype=torch.float64,
            progress=False,
        )
        for wd in (0.0, 1.0)
    ]
    assert torch.equal(runs[0].U, runs[1].U) and torch.equal(runs[0].W, runs[1].W)


def _schedule(monkeypatch, steps, lr, **kwargs):
    seen = []

    def fake_step(*args, **kwargs):
        def step(rate):
            seen.append(rate)
            return 0.0

        return step

    monkeypatch.setattr(ftr, "training_step", fake_step)
    ftr.train(
        5,
        2,
        widths=[2],
        steps=steps,
        lr=lr,
        generator=torch.Generator().manual_seed(0),
        log_every=10**6,
        **kwargs,
        progress=False,
    )
    return seen


def test_learning_rate_schedule_is_pinned(monkeypatch):
    lr = 0.3
    got = _schedule(monkeypatch, 10, lr, warmup=4, decay_fraction=0.3)
    decay_from = 7  # int(10 * 0.7)
    expected = []
    for t in range(10):
        scale = min(1.0, (t + 1) / 4)
        if t >= decay_from:
            scale *= 0.5 * (1 + math.cos(math.pi * (t - decay_from) / 3))
        expected.append(lr * scale)
    assert got == pytest.approx(expected, rel=1e-12)
    assert got[:4] == pytest.approx([0.075, 0.15, 0.225, 0.3])
    assert got[7:] == pytest.approx([0.3, 0.225, 0.075])


def test_default_schedule_decays_over_the_last_fifth(monkeypatch):
    got = _schedule(monkeypatch, 10, 1.0)  # the defaults: no warm-up, decay over 0.2
    assert got[:8] == [1.0] * 8
    assert got[8:] == pytest.approx([1.0, 0.5])
    assert _schedule(monkeypatch, 4, 1.0, warmup=0, decay_fraction=0.0) == [1.0] * 4
