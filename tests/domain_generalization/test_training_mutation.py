"""companions.domain_generalization.training (and the penalties theory hands to Newton) against
second implementations: the batches drawn per domain, Adam and gradient-descent steps written out
here, the accuracy's strict inequality, the logging cadence and the progress bar (issue 23)."""

from __future__ import annotations

import inspect
import math

import pytest
import torch

from companions import train
from companions.domain_generalization import data, theory, training

F64 = torch.float64


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


@pytest.fixture
def domains():
    # two domains of 6 and 4 rows (not sorted by domain), 3 features, float64
    g = gen(3)
    x = torch.randn(10, 3, generator=g, dtype=F64)
    y = torch.tensor([1.0, -1, 1, 1, -1, -1, 1, -1, 1, 1], dtype=F64)
    dom = torch.tensor([1, 0, 1, 1, 0, 1, 1, 0, 0, 1])
    return x, y, dom


def fit_spy(monkeypatch):
    """Replace training.fit by a wrapper that records the arguments fit sees (defaults filled)."""
    seen = []
    sig = inspect.signature(train.fit)

    def spy(*args, **kwargs):
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        seen.append(dict(bound.arguments))
        return train.fit(*args, **kwargs)

    monkeypatch.setattr(training, "fit", spy)
    return seen


# -- accuracy: a tie is an error, any positive margin is right
def test_gated_accuracy_counts_ties_as_errors():
    w = torch.tensor([1.0, -1.0])
    x = torch.tensor([[1.0, 1.0], [2.0, 1.0], [1.0, 2.0], [0.5, 0.0], [-1.0, -1.0]])
    y = torch.tensor([1.0, 1.0, 1.0, 1.0, -1.0])
    # margins y <w, x>: 0 (tie), 1, -1, 0.5, 0 (tie): two of five right
    assert training.gated_accuracy(w, x, y) == pytest.approx(2 / 5)


def test_two_d_run_predicts_with_the_bias_added_and_counts_ties_as_errors():
    run = training.TwoDRun(
        torch.tensor([[2.0, 0.0], [0.0, 1.0]]), torch.tensor([0.5, 0.0]), torch.tensor(0.25), None
    )
    x = torch.tensor([[1.0, 5.0], [-1.0, 0.0], [-0.25, 3.0], [0.25, 0.0], [3.0, 1.0]])
    # A^T u = (1, 0): predict = x_1 + 0.25
    assert torch.allclose(run.predict(x), torch.tensor([1.25, -0.75, 0.0, 0.5, 3.25]))
    assert torch.equal(run.direction(), torch.tensor([1.0, 0.0]))
    y = torch.tensor([1.0, 1.0, 1.0, 1.0, -1.0])
    # margins 1.25, -0.75, 0 (tie), 0.5, -3.25: two of five right (0.5 counts, 0 does not)
    assert float(run.predict(x)[2]) == 0.0  # an exact tie, with y = +1
    assert run.accuracy(x, y) == pytest.approx(2 / 5)


def test_gated_loss_nuclear_penalty_without_the_batch_division():
    w = torch.tensor([1.0, -2.0])
    x = torch.eye(2)
    y = torch.ones(2)
    base = float(torch.nn.functional.softplus(-torch.tensor([1.0, -2.0])).mean())
    # features diag(1, -2): singular values 2 and 1, ||.||_* = 3, the text's (6.3) undivided
    got = training.gated_loss(w, x, y, "nu", 0.5, normalise=False)
    assert float(got) == pytest.approx(base + 0.5 * 3)


# -- train_gated: batches per domain, Adam by hand
def ref_batches(dom, b, g, steps):
    rows = [torch.nonzero(dom == e).flatten() for e in (0, 1)]  # domains in increasing order
    return [
        torch.cat([r[torch.randint(len(r), (b,), generator=g)] for r in rows]) for _ in range(steps)
    ]


def ref_adam(w, grads_of, steps, lr, b1=0.9, b2=0.999, eps=1e-8):
    """torch.optim.Adam's defaults written out (Kingma and Ba, with bias correction)."""
    m, v, losses = torch.zeros_like(w), torch.zeros_like(w), []
    for k in range(1, steps + 1):
        loss, g = grads_of(w, k - 1)
        losses.append(loss)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g**2
        w = w - lr * (m / (1 - b1**k)) / ((v / (1 - b2**k)).sqrt() + eps)
    return w, losses


def test_train_gated_is_adam_on_batches_drawn_per_domain(domains, monkeypatch):
    x, y, dom = domains
    seen = []
    real = training.gated_loss
    monkeypatch.setattr(
        training, "gated_loss", lambda w, xb, yb, m, lam: seen.append(xb) or real(w, xb, yb, m, lam)
    )
    lam, lr = 0.1, 0.05
    run = training.train_gated(
        x, y, domain=dom, method="l2", lam=lam, steps=3, batch_per_domain=2, lr=lr, generator=gen(8)
    )
    idx = ref_batches(dom, 2, gen(8), 3)
    assert len(seen) == 3 and all(torch.equal(s, x[i]) for s, i in zip(seen, idx))
    for i in idx:  # two rows of domain 0, then two of domain 1
        assert dom[i].tolist() == [0, 0, 1, 1]

    def grads_of(w, step):
        xb, yb = x[idx[step]], y[idx[step]]
        m = xb @ w
        loss = torch.log1p(torch.exp(-yb * m)).mean() + lam / 2 * (w**2).sum()
        # d/dw mean log(1 + e^{-y m}) = -mean y x sigmoid(-y m); the penalty adds lam w
        g = -(yb * torch.sigmoid(-yb * m)) @ xb / len(yb) + lam * w
        return float(loss), g

    w0 = torch.full((3,), 0.01, dtype=F64)  # the default init
    w_ref, losses = ref_adam(w0, grads_of, 3, lr)
    assert run.w.dtype == F64 and torch.allclose(run.w, w_ref, atol=1e-12)
    assert run.history.steps == [0, 1, 2] and run.history.loss == pytest.approx(losses)


def test_train_gated_checks_and_smallest_batch(domains):
    x, y, dom = domains
    run = training.train_gated(
        x,
        y,
        domain=dom,
        method="erm",
        lam=0.0,
        steps=1,
        batch_per_domain=1,
        lr=0.1,
        generator=gen(0),
    )  # one row per domain
    assert run.w.shape == (3,)
    with pytest.raises(ValueError, match=r"parameter 'lam' = -0.1 is not allowed: expected a real"):
        training.train_gated(
            x,
            y,
            domain=dom,
            method="l2",
            lam=-0.1,
            steps=1,
            batch_per_domain=1,
            lr=0.1,
            generator=gen(0),
        )
    with pytest.raises(ValueError, match=r"parameter 'lam' = -0.5 is not allowed: expected a real"):
        training.train_two_d(x[:, :2], y, lam=-0.5, steps=1, lr=0.1, generator=gen(0))


@pytest.mark.parametrize("steps, logged", [(60, list(range(60))), (100, [*range(0, 100, 2), 99])])
def test_loss_is_logged_about_fifty_times(domains, steps, logged):
    # log_every = max(1, steps // 50): every step for 60, every other step (and the last) for 100
    x, y, dom = domains
    assert (
        training.train_gated(
            x,
            y,
            domain=dom,
            method="erm",
            lam=0.0,
            steps=steps,
            batch_per_domain=1,
            lr=0.01,
            generator=gen(),
        ).history.steps
        == logged
    )
    assert (
        training.train_two_d(
            x[:, :2], y, lam=0.0, steps=steps, lr=0.01, generator=gen()
        ).history.steps
        == logged
    )


def test_progress_bar_labels_and_visibility(domains, monkeypatch):
    x, y, dom = domains
    seen = fit_spy(monkeypatch)
    training.train_gated(
        x,
        y,
        domain=dom,
        method="l2",
        lam=0.25,
        steps=1,
        batch_per_domain=1,
        lr=0.1,
        generator=gen(),
    )
    training.train_gated(
        x,
        y,
        domain=dom,
        method="nu",
        lam=0.5,
        steps=1,
        batch_per_domain=1,
        lr=0.1,
        generator=gen(),
        progress=True,
        desc="mine",
    )
    training.train_two_d(x[:, :2], y, lam=0.0, steps=1, lr=0.1, generator=gen())
    training.train_two_d(
        x[:, :2], y, lam=1.5, steps=1, lr=0.1, generator=gen(), progress=True, desc="two"
    )
    got = [(s["desc"], s["progress"], s["optimizer"]) for s in seen]
    assert got == [
        ("l2 lam=0.25", False, "adam"),
        ("mine", True, "adam"),
        ("2-D lam=0", False, "sgd"),
        ("two", True, "sgd"),
    ]


# -- train_two_d: gradient descent by hand
def test_train_two_d_is_gradient_descent_from_a_scaled_gaussian():
    x, y = data.sample_two_d(40, 0.7, gen(4))
    x = x.to(F64)
    y = y.to(F64)
    y[:25] = 1.0  # unbalanced labels: the bias moves
    for lam in (0.0, 0.3):
        run = training.train_two_d(x, y, lam=lam, steps=2, lr=0.4, generator=gen(9))
        g = gen(9)
        A = 0.5 * torch.randn(2, 2, generator=g, dtype=F64)  # the default init_scale
        u = 0.5 * torch.randn(2, generator=g, dtype=F64)
        b = torch.zeros((), dtype=F64)
        losses = []
        for _ in range(2):
            ps = [p.clone().requires_grad_(True) for p in (A, u, b)]
            feats = x @ ps[0].T
            loss = torch.log1p(torch.exp(-y * (feats @ ps[1] + ps[2]))).mean()
            loss = loss + lam * torch.linalg.svdvals(feats).sum() / len(y)
            grads = torch.autograd.grad(loss, ps)
            A, u, b = (p.detach() - 0.4 * gr for p, gr in zip(ps, grads))
            losses.append(float(loss.detach()))
        assert abs(float(b)) > 1e-3  # the bias is trained
        for got, want in ((run.A, A), (run.u, u), (run.b, b)):
            assert got.dtype == F64 and torch.allclose(got, want, atol=1e-12), lam
        assert run.history.loss == pytest.approx(losses, rel=1e-12)


# -- theory: the penalties and the line search of Newton's method
def test_l2_penalties_handed_to_newton_are_those_of_e10(monkeypatch):
    seen = []
    real = theory._newton

    def spy(s, pen, hess, x0, tol, max_iter):
        seen.append(pen)
        return real(s, pen, hess, x0, tol, max_iter)

    monkeypatch.setattr(theory, "_newton", spy)
    g = gen(5)
    s_r, s_u = torch.randn(50, generator=g, dtype=F64), torch.randn(50, generator=g, dtype=F64)
    theory.solve_l2(s_r, s_u, lam=0.3, r=2, d=5)
    theory.solve_full_l2(torch.randn(20, 4, generator=g, dtype=F64), 0.3)
    # (E.10): lam/2 (r alpha^2 + (d - r) beta^2) with r = 2, d = 5; Lemma E.5's lam/2 ||w||^2
    x = torch.tensor([0.7, -1.1], dtype=F64)
    assert seen[0](x, value=True) == pytest.approx(0.15 * (2 * 0.49 + 3 * 1.21))
    w = torch.tensor([0.7, -1.1, 2.0, 0.0], dtype=F64)
    assert seen[1](w, value=True) == pytest.approx(0.15 * (0.49 + 1.21 + 4.0))


def test_newton_backtracks_a_full_step_that_raises_the_objective():
    # one unknown, one sample s = 1: f(x) = ln(1 + e^{-x}) + lam/2 x^2 with lam = 0.01, from
    # x0 = -3.8. The full Newton step lands near 31 where f is 0.18 higher; half of it is lower.
    lam, x0 = 0.01, -3.8

    def f(x):
        return math.log1p(math.exp(-x)) + lam / 2 * x * x

    sg = 1 / (1 + math.exp(x0))  # sigmoid(-x0) = -l'(x0)
    step = (-sg + lam * x0) / (sg * (1 - sg) + lam)  # f'(x0) / f''(x0)
    assert 0.1 < f(x0 - step) - f(x0) < 0.5 and f(x0 - step / 2) < f(x0)

    def pen(x, value=False):
        return float(lam / 2 * (x**2).sum()) if value else lam * x

    s = torch.ones(1, 1, dtype=F64)
    x, it, _ = theory._newton(
        s, pen, lambda x: lam * torch.eye(1, dtype=F64), torch.tensor([x0], dtype=F64), 1e-12, 1
    )
    assert it == 1 and float(x[0]) == pytest.approx(x0 - step / 2, rel=1e-12)
