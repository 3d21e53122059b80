"""companions.emergence.baselines, second round of issue 23: the standardised probe's L-BFGS. On
an ill-conditioned problem (20 nearly collinear features of scales 1e-2 to 1e2) 20 iterations
(L-BFGS's own default) stop short of the optimum that Newton's method finds, where the probe's
200 do not; and the optimizer is built as the source states it (lr 1, ``max_iter = iters`` with
``iters = 200`` by default, the strong Wolfe line search), recorded around the real L-BFGS.
Constant features (zero spread) are dropped in float32 too, where 1e-300 rounds to 0: see
test_experiments_mutation2's float32 one-step probe."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from companions.emergence import baselines

from .test_baselines_mutation import _newton_logistic, _standardise

F64 = torch.float64


def _problem(n=300, p=20, corr=0.99, seed=0):
    g = torch.Generator().manual_seed(seed)
    base = torch.randn(n + 200, 1, generator=g, dtype=F64)
    scales = torch.logspace(-2, 2, p, dtype=F64)
    F = corr * base + (1 - corr) * torch.randn(n + 200, p, generator=g, dtype=F64) * scales
    w = torch.randn(p, generator=g, dtype=F64)
    y = torch.sign(F @ w + 0.5 * torch.randn(n + 200, generator=g, dtype=F64))
    return F[:n], y[:n], F[n:], y[n:]


def _newton_accuracies(Ftr, ytr, Fte, yte, ridge=1e-4):
    Fn = Ftr.numpy()
    mean, std = Fn.mean(0), Fn.std(0, ddof=1)  # torch's std is the n - 1 one
    w = _newton_logistic(_standardise(Fn, mean, std), ytr.numpy(), ridge)
    train = np.mean(np.sign(_standardise(Fn, mean, std) @ w) == ytr.numpy())
    test = np.mean(np.sign(_standardise(Fte.numpy(), mean, std) @ w) == yte.numpy())
    return train, test


def test_standardised_probe_reaches_newtons_optimum_where_20_iterations_do_not():
    Ftr, ytr, Fte, yte = _problem()
    train, test = _newton_accuracies(Ftr, ytr, Fte, yte)
    r = baselines.standardised_probe(Ftr, ytr, Fte, yte)
    assert r["kept"] == 20
    assert (r["train"], r["test"]) == (
        pytest.approx(train, abs=1e-12),
        pytest.approx(test, abs=1e-12),
    )
    short = baselines.standardised_probe(Ftr, ytr, Fte, yte, iters=20)
    assert short["train"] != pytest.approx(train, abs=1e-12)  # 20 iterations are not enough here


def test_standardised_probe_builds_lbfgs_as_stated(monkeypatch):
    real, built = torch.optim.LBFGS, []

    def lbfgs(params, **kw):
        built.append({"lr": 1, **kw})  # lr 1 is also L-BFGS's default: spelled out or not
        return real(params, **kw)

    monkeypatch.setattr(torch.optim, "LBFGS", lbfgs)
    Ftr, ytr, Fte, yte = _problem(n=60, p=3, seed=1)
    r = baselines.standardised_probe(Ftr, ytr, Fte, yte)
    baselines.standardised_probe(Ftr, ytr, Fte, yte, iters=7)
    assert built == [
        dict(lr=1, max_iter=200, line_search_fn="strong_wolfe"),
        dict(lr=1, max_iter=7, line_search_fn="strong_wolfe"),
    ]
    train, test = _newton_accuracies(Ftr, ytr, Fte, yte)
    assert r["train"] == pytest.approx(train, abs=1e-12)
    assert r["test"] == pytest.approx(test, abs=1e-12)
