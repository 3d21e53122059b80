"""companions.train.fit: one step against its closed form, and what the history records."""

from __future__ import annotations

import re

import pytest
import torch

from companions import train as T


def _param(values):
    return torch.nn.Parameter(torch.tensor(values, dtype=torch.float64))


def test_one_sgd_step_is_the_gradient_step():
    w, c, lr = _param([3.0, -1.0, 0.5]), torch.tensor([1.0, 2.0, 0.5], dtype=torch.float64), 0.3
    T.fit(
        lambda s: 0.5 * ((w - c) ** 2).sum(), [w], steps=1, lr=lr, optimizer="sgd", progress=False
    )
    expected = torch.tensor([3.0, -1.0, 0.5], dtype=torch.float64) * (1 - lr) + lr * c
    assert torch.allclose(w.detach(), expected, atol=1e-15)


def test_one_adam_step_moves_each_coordinate_by_lr_times_the_sign():
    # Adam's first step: m_hat = g, v_hat = g^2, so the step is lr * g / (|g| + eps)
    w, c, lr = _param([3.0, -1.0, 0.5]), torch.tensor([1.0, 2.0, 0.5], dtype=torch.float64), 0.01
    T.fit(lambda s: 0.5 * ((w - c) ** 2).sum(), [w], steps=1, lr=lr, progress=False)
    g = torch.tensor([2.0, -3.0, 0.0], dtype=torch.float64)
    expected = torch.tensor([3.0, -1.0, 0.5], dtype=torch.float64) - lr * g / (g.abs() + 1e-8)
    assert torch.allclose(w.detach(), expected, atol=1e-12)


def test_the_gradient_is_cleared_between_steps():
    # with a constant gradient 1, SGD moves by exactly lr per step (an accumulated gradient would
    # move by lr, 2 lr, 3 lr, ...)
    w = _param([0.0])
    T.fit(lambda s: w.sum(), [w], steps=5, lr=0.5, optimizer="sgd", progress=False)
    assert w.item() == pytest.approx(-2.5, abs=1e-15)


def test_history_records_every_log_every_steps_the_last_and_the_metrics():
    w = _param([0.0])
    seen = []

    def loss(step):
        seen.append(step)
        return (w - 100.0).abs().sum() + step, {"step_twice": 2 * step}

    hist = T.fit(loss, [w], steps=7, lr=1e-9, optimizer="sgd", log_every=3, progress=False)
    assert seen == list(range(7))
    assert hist.steps == [0, 3, 6]
    assert hist.loss == pytest.approx([100.0, 103.0, 106.0], abs=1e-6)
    assert hist.metrics == {"step_twice": [0.0, 6.0, 12.0]}
    assert all(type(x) is float for x in hist.loss + hist.metrics["step_twice"])
    assert not hist.stopped_early
    hist = T.fit(loss, [w], steps=8, lr=1e-9, optimizer="sgd", log_every=3, progress=False)
    assert hist.steps == [0, 3, 6, 7]  # the last step always


def test_stop_below_records_the_step_that_crossed_and_stops_there():
    w = _param([0.0])
    losses = [5.0, 4.0, 3.0, 0.5, 0.1]
    calls = []

    def loss(step):
        calls.append(step)
        return w.sum() * 0 + losses[step]

    hist = T.fit(loss, [w], steps=5, lr=0.1, log_every=100, stop_below=1.0, progress=False)
    assert calls == [0, 1, 2, 3]
    assert hist.steps == [0, 3] and hist.loss == [5.0, 0.5] and hist.stopped_early
    # a loss equal to the threshold does not stop
    hist = T.fit(loss, [w], steps=5, lr=0.1, log_every=100, stop_below=0.5, progress=False)
    assert hist.steps == [0, 4] and hist.stopped_early


def test_errors_name_the_value():
    w = _param([0.0])
    with pytest.raises(ValueError, match=r"'steps' = 0 is not allowed: expected an integer >= 1"):
        T.fit(lambda s: w.sum(), [w], steps=0, progress=False)
    with pytest.raises(ValueError, match=r"'lr' = -0.5 is not allowed: expected a real number > 0"):
        T.fit(lambda s: w.sum(), [w], steps=1, lr=-0.5, progress=False)
    with pytest.raises(ValueError, match=r"'optimizer' = 'x' .* \['adam', 'sgd'\]"):
        T.fit(lambda s: w.sum(), [w], steps=1, optimizer="x", progress=False)
    with pytest.raises(FloatingPointError, match="loss became inf at step 0: lower 'lr'"):
        T.fit(lambda s: w.sum() + float("inf"), [w], steps=1, progress=False)
    assert T.fit(lambda s: w.sum(), [w], steps=1, lr=1e-300, progress=False).steps == [0]


def test_the_progress_bar_is_shown_unless_disabled(capsys):
    w = _param([0.0])
    T.fit(lambda s: w.sum(), [w], steps=2, desc="my-run", progress=True)
    assert "my-run" in capsys.readouterr().err
    T.fit(lambda s: w.sum(), [w], steps=2, desc="my-run", progress=False)
    assert capsys.readouterr().err == ""


def test_defaults_are_pinned(capsys):
    # lr = 1e-2 (one SGD step of a unit gradient), log_every = 10, a bar named "training" that
    # shows the loss
    w = _param([0.0])
    hist = T.fit(lambda s: w.sum(), [w], steps=12, optimizer="sgd")
    assert w.item() == pytest.approx(-0.12, abs=1e-15)
    assert hist.steps == [0, 10, 11]
    err = capsys.readouterr().err
    assert re.search(r"(^|\r)training: ", err) and "loss=" in err
    w = _param([0.0])
    T.fit(lambda s: w.sum(), [w], steps=1, lr=0.5, progress=False)
    assert w.item() == pytest.approx(-0.5, abs=1e-6)  # Adam is the default: lr * sign(g)


def test_bar_shows_the_last_loss(capsys):
    w = _param([0.0])
    T.fit(lambda s: w.sum() * 0 + 0.123456, [w], steps=3, desc="x", log_every=1)
    assert "loss=0.123" in capsys.readouterr().err
