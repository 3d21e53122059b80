"""companions.emergence.baselines where the mutants of issue 23 found it untested: the RF head's
and the NTK's first Adam steps worked out by hand (from zero, Adam's first steps on a constant
gradient are ``lr sign(-grad)``), the minibatch draws, the norm ball, the recorded history, the
progress bars, the linearised network at the edges z = 0 and z = 1 of sigma', the standardised
probe against a Newton solution of the same problem, and kernel ridge regression against a
direct numpy computation."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import torch

from companions.emergence import baselines, network

F64 = torch.float64


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def _next(g):
    return torch.randint(10**9, (4,), generator=g).tolist()


# -- the RF head: train_linear_head --------------------------------------------------------------


F_ROW = torch.tensor([1.0, -2.0, 0.5], dtype=F64)


def test_head_first_steps_are_adam_sign_steps():
    # every row is F_ROW and y = +1: the hinge's gradient is -F_ROW while y <F, a> < 1, and
    # Adam's first steps on a constant gradient g move by lr g / |g| (eps = 1e-8 aside)
    F, y = F_ROW.repeat(4, 1), torch.ones(4, dtype=F64)
    a, hist = baselines.train_linear_head(
        F, y, steps=2, batch=2, generator=_gen(), lr=0.1, progress=False
    )
    assert torch.allclose(a, 0.2 * torch.sign(F_ROW), rtol=1e-6) and not a.requires_grad
    assert hist == {"step": []}  # nothing recorded without evaluate
    a1, _ = baselines.train_linear_head(
        F, y, steps=1, batch=2, generator=_gen(), progress=False
    )  # default lr 1e-2
    assert torch.allclose(a1, 0.01 * torch.sign(F_ROW), rtol=1e-6)


def test_head_draws_minibatches_of_min_batch_n_rows_once_per_step():
    F = torch.tensor([[1.0, 1.0], [-3.0, 1.0], [0.5, -2.0]], dtype=F64)
    y = torch.tensor([1.0, 1.0, -1.0], dtype=F64)
    g = _gen(4)
    baselines.train_linear_head(F, y, steps=3, batch=5, generator=g, progress=False)
    ref = _gen(4)
    for _ in range(3):
        torch.randint(3, (3,), generator=ref)  # min(batch = 5, n = 3) rows a step
    assert _next(g) == _next(ref)
    # one row a step: the first step is lr sign(y_i F_i) for the row drawn
    i = int(torch.randint(3, (1,), generator=_gen(7)))
    a, _ = baselines.train_linear_head(
        F, y, steps=1, batch=1, generator=_gen(7), lr=0.1, progress=False
    )
    assert torch.allclose(a, 0.1 * torch.sign(y[i] * F[i]), rtol=1e-6)


def test_head_projects_on_the_ball_only_outside_it():
    F, y = F_ROW.repeat(4, 1), torch.ones(4, dtype=F64)
    a, _ = baselines.train_linear_head(
        F, y, steps=1, batch=4, generator=_gen(), lr=0.1, progress=False, max_norm=0.1
    )
    # one step gives 0.1 sign(F_ROW), of norm 0.1 sqrt(3): scaled back onto the ball
    assert torch.allclose(a, 0.1 * torch.sign(F_ROW) / math.sqrt(3), rtol=1e-6)
    inside, _ = baselines.train_linear_head(
        F, y, steps=1, batch=4, generator=_gen(), lr=0.1, progress=False, max_norm=1
    )
    assert torch.allclose(inside, 0.1 * torch.sign(F_ROW), rtol=1e-6)


def test_head_history_records_step_0_every_eval_every_and_the_last():
    F, y = F_ROW.repeat(4, 1), torch.ones(4, dtype=F64)
    seen = []

    def evaluate(a):
        seen.append(a.requires_grad)
        return {"norm": a.norm(), "first": a[0]}

    a, hist = baselines.train_linear_head(
        F,
        y,
        steps=5,
        batch=4,
        generator=_gen(),
        lr=0.01,
        evaluate=evaluate,
        eval_every=2,
        progress=False,
    )
    assert hist["step"] == [0, 2, 4, 5] and seen == [False] * 4
    assert hist["norm"][0] == 0.0 and all(isinstance(v, float) for v in hist["norm"])
    # each step adds 0.01 sign(F_ROW) while the margin 0.035 t stays below 1
    for t, first in zip(hist["step"], hist["first"]):
        assert first == pytest.approx(0.01 * t, rel=1e-5, abs=1e-12)
    _, hist = baselines.train_linear_head(
        F,
        y,
        steps=12,
        batch=4,
        generator=_gen(),
        evaluate=lambda a: {"n": a.norm()},
        progress=False,
    )
    assert hist["step"] == [0, 10, 12]  # eval_every defaults to 10


def test_head_progress_bar_is_named_and_can_be_silenced(capsys):
    F, y = F_ROW.repeat(2, 1), torch.ones(2, dtype=F64)
    baselines.train_linear_head(F, y, steps=2, batch=2, generator=_gen(), desc="my-head")
    assert "my-head" in capsys.readouterr().err
    baselines.train_linear_head(F, y, steps=2, batch=2, generator=_gen())
    assert re.search(r"(^|\r)head: ", capsys.readouterr().err)  # the default name, shown
    baselines.train_linear_head(
        F, y, steps=2, batch=2, generator=_gen(), desc="my-head", progress=False
    )
    assert capsys.readouterr().err == ""


# -- the linearised network and the NTK ------------------------------------------------------


def _p0():
    # d = 1; z = x w + b at x = 1: 0.5 (inside (0, 1)), 1.2 (above), 0 and 1 (the edges)
    return network.Params(
        torch.tensor([[1.0], [1.0], [0.0], [0.0]], dtype=F64),
        torch.tensor([-0.5, 0.2, 0.0, 1.0], dtype=F64),
        torch.tensor([2.0, -1.0, 3.0, 5.0], dtype=F64),
    )


def test_linearised_parameters_start_at_zero():
    p0 = _p0()
    lin = baselines.Linearised(p0)
    params = lin.parameters()
    assert [t.shape for t in params] == [p0.W.shape, p0.b.shape, p0.a.shape]
    assert params[0] is lin.dW and params[1] is lin.db and params[2] is lin.da
    assert all(t.requires_grad and not t.any() for t in params)
    assert lin.p0 is p0
    assert float(lin(torch.ones(3, 1, dtype=F64)).detach().abs().max()) == 0.0


def test_linearised_output_by_hand_with_sigma_prime_open_at_0_and_1():
    lin = baselines.Linearised(_p0())
    with torch.no_grad():
        lin.dW.copy_(torch.tensor([[0.1], [0.2], [0.3], [0.4]], dtype=F64))
        lin.db.copy_(torch.tensor([0.01, 0.02, 0.03, 0.04], dtype=F64))
        lin.da.copy_(torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=F64))
        out = lin(torch.ones(1, 1, dtype=F64))
    # sigma'(z) = I[0 < z < 1]: only neuron 0 has a slope: (0.1 + 0.01) * 2;
    # sigma(z) = min(1, max(z, 0)) = 0.5, 1, 0, 1 against da: 0.5 + 2 + 0 + 4
    assert float(out[0]) == pytest.approx(0.22 + 6.5, rel=1e-14)


def test_ntk_first_step_is_an_adam_sign_step_on_each_parameter():
    X, y = torch.ones(3, 1, dtype=F64), torch.ones(3, dtype=F64)
    model, hist = baselines.train_ntk(
        _p0(), X, y=y, steps=1, batch=2, generator=_gen(), lr=0.1, progress=False
    )
    # gradient of the hinge at output 0: -y a_i sigma'(z_i) x for dW, the same without x for db,
    # -y sigma(z_i) for da; a zero gradient leaves its coordinate at 0
    assert torch.allclose(model.dW, torch.tensor([[0.1], [0.0], [0.0], [0.0]], dtype=F64))
    assert torch.allclose(model.db, torch.tensor([0.1, 0.0, 0.0, 0.0], dtype=F64))
    assert torch.allclose(model.da, torch.tensor([0.1, 0.1, 0.0, 0.1], dtype=F64))
    assert hist == {"step": []}
    model, _ = baselines.train_ntk(
        _p0(), X, y=y, steps=1, batch=2, generator=_gen(), progress=False
    )  # lr 1e-2
    assert torch.allclose(model.da, torch.tensor([0.01, 0.01, 0.0, 0.01], dtype=F64))


def test_ntk_minibatches_history_and_progress(capsys):
    X = torch.tensor([[1.0], [-0.5], [0.3]], dtype=F64)
    y = torch.tensor([1.0, -1.0, 1.0], dtype=F64)
    g = _gen(5)
    seen = []

    def evaluate(model):
        seen.append(torch.is_grad_enabled())
        return {"out": model(X)[0]}

    model, hist = baselines.train_ntk(
        _p0(),
        X,
        y=y,
        steps=5,
        batch=7,
        generator=g,
        evaluate=evaluate,
        eval_every=2,
        progress=False,
    )
    ref = _gen(5)
    for _ in range(5):
        torch.randint(3, (3,), generator=ref)  # min(batch = 7, n = 3) rows a step
    assert _next(g) == _next(ref)
    assert hist["step"] == [0, 2, 4, 5] and hist["out"][0] == 0.0 and seen == [False] * 4
    assert isinstance(model, baselines.Linearised)
    assert capsys.readouterr().err == ""
    _, hist = baselines.train_ntk(
        _p0(), X, y=y, steps=12, batch=3, generator=_gen(), evaluate=lambda m: {"o": 0.0}
    )
    assert hist["step"] == [0, 10, 12]  # eval_every defaults to 10
    assert re.search(r"(^|\r)NTK: ", capsys.readouterr().err)  # named NTK, shown by default


# -- the standardised probe --------------------------------------------------------------------


def _newton_logistic(Z, y, ridge, iters=50):
    """argmin mean softplus(-y <Z, w>) + ridge ||w[:-1]||^2, by Newton's method (numpy)."""
    Z, y = np.asarray(Z, float), np.asarray(y, float)
    n, p = Z.shape
    reg = np.full(p, 2 * ridge)
    reg[-1] = 0.0
    w = np.zeros(p)
    for _ in range(iters):
        m = y * (Z @ w)
        s = 1 / (1 + np.exp(m))  # sigmoid(-m)
        grad = -(Z.T @ (y * s)) / n + reg * w
        H = (Z.T * (s * (1 - s))) @ Z / n + np.diag(reg)
        w -= np.linalg.solve(H, grad)
    return w


def _standardise(F, mean, std):
    return np.column_stack([(F - mean) / std, np.ones(len(F))])


@pytest.mark.parametrize("ridge", [1e-4, 0.05])
def test_standardised_probe_matches_newton(ridge):
    g = _gen(6)
    F = torch.randn(200, 3, generator=g, dtype=F64) * torch.tensor([1.0, 3.0, 0.2], dtype=F64)
    F = torch.cat([F, torch.full((200, 1), 2.0, dtype=F64)], 1)  # a constant feature
    y = torch.where(F[:, 0] + 0.3 * F[:, 1] + torch.randn(200, generator=g, dtype=F64) > 0.8, 1, -1)
    y = y.to(F64)
    Ftr, ytr, Fte, yte = F[:150], y[:150], F[150:], y[150:]
    r = baselines.standardised_probe(Ftr, ytr, Fte, yte, ridge=ridge)
    assert r["kept"] == 3
    Fn = Ftr.numpy()[:, :3]
    mean, std = Fn.mean(0), Fn.std(0, ddof=1)  # torch's std is the n - 1 one
    w = _newton_logistic(_standardise(Fn, mean, std), ytr.numpy(), ridge)
    pred_tr = np.sign(_standardise(Fn, mean, std) @ w)
    pred_te = np.sign(_standardise(Fte.numpy()[:, :3], mean, std) @ w)
    assert r["train"] == pytest.approx(np.mean(pred_tr == ytr.numpy()), abs=1e-12)
    assert r["test"] == pytest.approx(np.mean(pred_te == yte.numpy()), abs=1e-12)


def test_standardised_probe_ridge_spares_the_intercept_and_shrinks_the_weights():
    # 1 feature, 90 % negatives, separable at x = 0: a weak ridge separates (accuracy 1); a strong
    # ridge (here 1) shrinks the weight until the unregularised intercept wins (all -1: 0.9)
    x = torch.cat([-torch.linspace(0.1, 3, 90), torch.linspace(0.1, 0.3, 10)]).to(F64)
    y = torch.cat([-torch.ones(90), torch.ones(10)]).to(F64)
    F = x.unsqueeze(1)
    Z = _standardise(F.numpy(), F.numpy().mean(0), F.numpy().std(0, ddof=1))
    for ridge in (1e-4, 1.0):
        w = _newton_logistic(Z, y.numpy(), ridge)
        want = np.mean(np.sign(Z @ w) == y.numpy())
        got = baselines.standardised_probe(F, y, F, y, ridge=ridge)
        assert got["train"] == pytest.approx(want, abs=1e-12) == got["test"]
    assert baselines.standardised_probe(F, y, F, y)["train"] == 1.0
    assert baselines.standardised_probe(F, y, F, y, ridge=1.0)["train"] == pytest.approx(0.9)


def test_standardised_probe_keeps_features_of_small_spread():
    g = _gen(8)
    F = torch.randn(60, 2, generator=g, dtype=F64) * 1e-3  # spread 1e-3: kept
    y = torch.where(F[:, 0] > 0, 1.0, -1.0).to(F64)
    r = baselines.standardised_probe(F, y, F, y)
    assert r["kept"] == 2 and r["train"] == 1.0


def test_probe_features_are_the_first_layer_outputs():
    p, X = _p0(), torch.tensor([[1.0], [0.25], [-2.0]], dtype=F64)
    want = (X @ p.W.T + p.b).clamp(0, 1)
    assert torch.equal(baselines.probe_features(p, X), want)


# -- kernel ridge regression -------------------------------------------------------------------


def _krr_numpy(Xtr, ytr, Xte, ridge, h=None):
    Xtr, ytr, Xte = (np.asarray(t, float) for t in (Xtr, ytr, Xte))
    d2 = ((Xtr[:, None, :] - Xtr[None, :, :]) ** 2).sum(-1)
    if h is None:  # the lower median of all n^2 squared distances (torch.median's convention)
        h = math.sqrt(np.sort(d2.ravel())[(d2.size - 1) // 2])
    K = np.exp(-d2 / (2 * h * h))
    alpha = np.linalg.solve(K + ridge * len(K) * np.eye(len(K)), ytr)
    dt = ((Xte[:, None, :] - Xtr[None, :, :]) ** 2).sum(-1)
    return h, alpha, np.sign(K @ alpha), np.sign(np.exp(-dt / (2 * h * h)) @ alpha)


@pytest.mark.parametrize("ridge,bandwidth", [(1e-3, None), (0.05, None), (1e-3, 0.7)])
def test_rbf_kernel_ridge_matches_numpy(ridge, bandwidth):
    g = _gen(9)
    X = torch.randn(40, 3, generator=g, dtype=F64)
    y = torch.sign(X[:, 0] * X[:, 1] + 0.1)
    Xt = torch.randn(30, 3, generator=g, dtype=F64)
    yt = torch.sign(Xt[:, 0] * Xt[:, 1] + 0.1)
    kw = {} if ridge == 1e-3 else {"ridge": ridge}
    r = baselines.rbf_kernel_ridge(X[:30], y[:30], Xt, yt, bandwidth=bandwidth, **kw)
    h, alpha, ptr, pte = _krr_numpy(X[:30], y[:30], Xt, ridge, bandwidth)
    assert r["bandwidth"] == pytest.approx(h, rel=1e-12)
    assert r["alpha_norm"] == pytest.approx(np.linalg.norm(alpha), rel=1e-11)
    assert r["train"] == pytest.approx(np.mean(ptr == y[:30].numpy()), abs=1e-12)
    assert r["test"] == pytest.approx(np.mean(pte == yt.numpy()), abs=1e-12)
