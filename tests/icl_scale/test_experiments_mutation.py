"""companions.icl_scale.experiments against independent reimplementations (issue 23, mutation
testing).

- ``Estimate`` / ``PairedLosses``: means and standard errors by hand.
- ``mc_population_loss`` / ``mc_evaluation_losses``: the same prompts drawn chunk by chunk from the
  generator, the prediction through the reduced form ``(u / rho) sum_i y_i x_i^T U x_q`` (eq. 5.2,
  which tests/icl_scale/test_icl_scale.py checks against the full eq. 5.1).
- ``train_rank_r`` / ``gd_population``: ``torch.optim.Adam`` with cosine decay driven by hand.
- ``trained_summary``: the zero predictor, whose loss is ``tr(Lambda) / 2`` by hand.
- the chapter's loops: the seeds they hand out and the rows they build, with the Monte Carlo and
  the training replaced by recorders.
"""

from __future__ import annotations

import math
from fractions import Fraction as F

import pytest
import torch

from companions import stats
from companions.icl_scale import data, model, theory
from companions.icl_scale import experiments as ex

F64 = torch.float64
LAM = [2.0, 1.0, 0.5]


@pytest.fixture
def Q():
    return data.random_orthogonal(3, torch.Generator().manual_seed(2))


def test_estimate_by_hand():
    est = ex._estimate(torch.tensor([1, 2, 6]))  # integers: cast to float64
    assert est.mean == 3.0 and est.se == pytest.approx(math.sqrt(7 / 3), rel=1e-15)
    assert est.n == 3 and ex.against(est, F(5, 2)) == (3.0, est.se, 2.5)
    pl = ex.PairedLosses(torch.tensor([[1.0, 2.0, 6.0], [0.0, 0.0, 3.0]], dtype=F64))
    assert pl.estimate(1).mean == 1.0 and pl.estimate(1).se == pytest.approx(1.0)
    d = pl.difference(0, 1)  # (1, 2, 3)
    assert d.mean == 2.0 and d.se == pytest.approx(1 / math.sqrt(3))


def _reduced(p, U, u, rho):
    h = (p.y[..., None] * p.X).sum(1)
    return u * ((h @ U) * p.xq).sum(-1) / rho


def test_mc_population_loss_chunk_by_chunk(Q):
    g = torch.Generator().manual_seed(3)
    U = torch.randn(3, 3, generator=g, dtype=F64)
    est = ex.mc_population_loss(
        U,
        0.7,
        eigenvalues=LAM,
        Q=Q,
        N=5,
        trials=7,
        generator=torch.Generator().manual_seed(4),
        chunk=3,
    )
    g = torch.Generator().manual_seed(4)
    vals = []
    for b in (3, 3, 1):
        p = data.prompts(b, 5, eigenvalues=LAM, Q=Q, generator=g)
        vals.append(0.5 * (_reduced(p, U, 0.7, 5) - p.yq) ** 2)
    v = torch.cat(vals)
    assert est.mean == pytest.approx(float(v.mean()), rel=1e-12)
    assert est.se == pytest.approx(float(v.std() / math.sqrt(7)), rel=1e-12)
    # the default chunk holds every trial at once; a float32 U is used in float64
    U32 = U.float()
    est = ex.mc_population_loss(
        U32, 0.7, eigenvalues=LAM, Q=Q, N=5, trials=7, generator=torch.Generator().manual_seed(4)
    )
    p = data.prompts(7, 5, eigenvalues=LAM, Q=Q, generator=torch.Generator().manual_seed(4))
    v = 0.5 * (_reduced(p, U32.double(), 0.7, 5) - p.yq) ** 2
    assert est.mean == pytest.approx(float(v.mean()), rel=1e-12)


def test_a_dry_run_draws_the_first_chunk_of_each_monte_carlo(Q, monkeypatch):
    U = torch.randn(3, 3, generator=torch.Generator().manual_seed(3), dtype=F64)
    monkeypatch.setenv("COMPANIONS_DRY_RUN", "1")
    est = ex.mc_population_loss(
        U,
        0.7,
        eigenvalues=LAM,
        Q=Q,
        N=5,
        trials=7,
        generator=torch.Generator().manual_seed(4),
        chunk=3,
    )
    p = data.prompts(3, 5, eigenvalues=LAM, Q=Q, generator=torch.Generator().manual_seed(4))
    v = 0.5 * (_reduced(p, U, 0.7, 5) - p.yq) ** 2
    assert est.mean == pytest.approx(float(v.mean()), rel=1e-12)
    w = torch.ones(3, dtype=F64)
    pl = ex.mc_evaluation_losses(
        [U], LAM, Q=Q, w=w, M=4, trials=5, generator=torch.Generator().manual_seed(6), chunk=2
    )
    assert pl.losses.shape == (1, 2)


def test_mc_population_loss_default_chunk_is_50000(Q):
    U = 0.1 * torch.eye(3, dtype=F64)
    est = ex.mc_population_loss(
        U, 1.0, eigenvalues=LAM, Q=Q, N=1, trials=50_001, generator=torch.Generator().manual_seed(5)
    )
    g = torch.Generator().manual_seed(5)
    vals = []
    for b in (50_000, 1):
        p = data.prompts(b, 1, eigenvalues=LAM, Q=Q, generator=g)
        vals.append(0.5 * (_reduced(p, U, 1.0, 1) - p.yq) ** 2)
    assert est.mean == pytest.approx(float(torch.cat(vals).mean()), rel=1e-12)


@pytest.mark.parametrize("sigma, flip", [(0.0, 0.0), (0.5, 0.2)])
def test_mc_evaluation_losses_chunk_by_chunk(Q, sigma, flip):
    g = torch.Generator().manual_seed(5)
    Us = [torch.randn(3, 3, generator=g, dtype=F64) for _ in range(2)]
    w = torch.tensor([1.0, -0.5, 2.0], dtype=F64)
    pl = ex.mc_evaluation_losses(
        Us,
        LAM,
        Q=Q,
        w=w,
        M=4,
        trials=5,
        generator=torch.Generator().manual_seed(6),
        sigma=sigma,
        flip=flip,
        chunk=2,
    )
    g = torch.Generator().manual_seed(6)
    cols = []
    for b in (2, 2, 1):
        p = data.prompts(b, 4, eigenvalues=LAM, Q=Q, generator=g, w=w, sigma=sigma, flip=flip)
        cols.append(torch.stack([(_reduced(p, U, 1.0, 4) - p.yq) ** 2 for U in Us]))
    assert torch.allclose(pl.losses, torch.cat(cols, 1), rtol=1e-12)
    assert pl.losses.shape == (2, 5)
    full = ex.mc_evaluation_losses(
        Us, LAM, Q=Q, w=w, M=4, trials=5, generator=torch.Generator().manual_seed(6)
    )
    p = data.prompts(5, 4, eigenvalues=LAM, Q=Q, generator=torch.Generator().manual_seed(6), w=w)
    assert torch.allclose(full.losses[1], (_reduced(p, Us[1], 1.0, 4) - p.yq) ** 2, rtol=1e-12)


def test_train_rank_r_is_adam_with_cosine_decay(Q, monkeypatch):
    bars = []

    class Bar:
        def __init__(self, it, **kw):
            self.it, self.kw, self.closed = it, kw, False
            bars.append(self)

        def __iter__(self):
            return iter(self.it)

        def close(self):
            self.closed = True

    monkeypatch.setattr(ex, "progress_bar", Bar)
    run = ex.train_rank_r(
        2,
        LAM,
        Q=Q.float(),
        N=6,
        steps=5,
        batch=8,
        lr=0.05,
        generator=torch.Generator().manual_seed(7),
    )
    assert bars[0].kw == dict(desc="rank 2", disable=False, mininterval=1.0) and bars[0].closed
    g = torch.Generator().manual_seed(7)
    net = model.LowRankLSA(3, 2, g)
    opt = torch.optim.Adam(net.parameters(), lr=0.05)
    losses = []
    for t in range(5):
        for group in opt.param_groups:
            group["lr"] = 0.05 * (1 + math.cos(math.pi * t / 5)) / 2
        p = data.prompts(8, 6, eigenvalues=LAM, Q=Q.float(), generator=g, dtype=torch.float32)
        U = net.W_K.T @ net.W_Q
        h = (p.y[..., None] * p.X).sum(1)
        pred = net.u * ((h @ U) * p.xq).sum(-1) / 6
        loss = 0.5 * ((pred - p.yq) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    assert run.r == 2 and run.U.dtype == F64
    assert torch.allclose(run.U, (net.u * net.W_K.T @ net.W_Q).double(), atol=1e-5)
    assert run.losses == pytest.approx(losses, rel=1e-4)
    ex.train_rank_r(
        1,
        LAM,
        Q=Q.float(),
        N=6,
        steps=1,
        batch=2,
        lr=0.05,
        generator=torch.Generator(),
        progress=False,
    )
    assert bars[1].kw["disable"] is True and bars[1].kw["desc"] == "rank 1"
    with pytest.raises(FloatingPointError, match="loss became nan: lower 'train_lr'"):
        ex.train_rank_r(
            1,
            LAM,
            Q=Q.float() * math.nan,
            N=6,
            steps=3,
            batch=2,
            lr=0.05,
            generator=torch.Generator(),
        )


def test_trained_summary_of_the_optimum_and_of_zero(Q):
    Ustar = theory.optimal_U(Q, LAM, 6, 2)
    dist, excess = ex.trained_summary(ex.TrainedLSA(2, Ustar.clone(), []), LAM, Q, 6)
    assert dist == pytest.approx(0, abs=1e-12) and excess == pytest.approx(0, abs=1e-12)
    # U = 0 predicts 0: the loss is E <w, x>^2 / 2 = tr(Lambda) / 2, w ~ N(0, I)
    dist, excess = ex.trained_summary(ex.TrainedLSA(2, torch.zeros(3, 3, dtype=F64), []), LAM, Q, 6)
    assert dist == 1.0
    assert excess == pytest.approx(sum(LAM) / 2 - float(theory.optimal_loss(LAM, 6, 2)), rel=1e-12)
    # the distance is relative to ||U*||
    dist, _ = ex.trained_summary(ex.TrainedLSA(2, 3 * Ustar, []), LAM, Q, 6)
    assert dist == pytest.approx(2.0, rel=1e-12)


def test_gd_population_is_adam_on_the_exact_loss(Q):
    Lam = data.covariance(LAM, Q)
    got = ex.gd_population(
        2, Lam, N=6, steps=4, lr=0.1, generator=torch.Generator().manual_seed(8), init_scale=0.5
    )
    g = torch.Generator().manual_seed(8)
    WK = (0.5 * torch.randn(2, 3, generator=g, dtype=F64)).requires_grad_()
    WQ = (0.5 * torch.randn(2, 3, generator=g, dtype=F64)).requires_grad_()
    u = torch.tensor(1.0, dtype=F64, requires_grad=True)
    opt = torch.optim.Adam([WK, WQ, u], lr=0.1)
    for t in range(4):
        for group in opt.param_groups:
            group["lr"] = 0.1 * (1 + math.cos(math.pi * t / 4)) / 2
        loss = theory.population_loss(WK.T @ WQ, u, Lam, 6)
        opt.zero_grad()
        loss.backward()
        opt.step()
    # rtol too: u kept in float32 would be off by about 1e-8 relative
    assert torch.allclose(got, (u * WK.T @ WQ).detach(), rtol=1e-12, atol=1e-12)
    assert not got.requires_grad
    # the default start scale is 0.3
    got = ex.gd_population(1, Lam, N=6, steps=0, lr=0.1, generator=torch.Generator().manual_seed(8))
    g = torch.Generator().manual_seed(8)
    WK = 0.3 * torch.randn(1, 3, generator=g, dtype=F64)
    WQ = 0.3 * torch.randn(1, 3, generator=g, dtype=F64)
    assert torch.allclose(got, WK.T @ WQ, atol=1e-15)


def _plain_search(effect, se, n, margin, most):
    return next(
        (
            m
            for m in range(n + 1, most + 1)
            if stats.t_critical(m - 1) * se * math.sqrt(n / m) < abs(effect - margin)
        ),
        None,
    )


def test_descent_distances_seeds_and_distances(Q, monkeypatch):
    calls = []

    def fake(r, Lam, *, N, steps, lr, generator):
        calls.append((r, N, steps, lr, generator))
        assert torch.allclose(Lam, data.covariance(LAM, Q))
        return 3 * theory.optimal_U(Q, LAM, N, r)  # distance 2

    monkeypatch.setattr(ex, "gd_population", fake)
    out = ex.descent_distances(Q, LAM, N=6, starts=2, steps=11, generator_for=lambda s: s)
    assert out == pytest.approx([2.0] * 6, rel=1e-12)
    assert [c[4] for c in calls] == [100, 101, 200, 201, 300, 301]
    assert [c[0] for c in calls] == [1, 1, 2, 2, 3, 3]
    assert calls[0][1:4] == (6, 11, 5e-2)
    ex.descent_distances(Q, LAM, N=6, starts=1, steps=11, generator_for=lambda s: s, lr=0.2)
    assert calls[-1][3] == 0.2


def test_trained_table_rows_by_hand(Q):
    U1 = Q @ torch.diag(torch.tensor([0.5, 0.25, 0.0], dtype=F64)) @ Q.T
    U2 = Q @ torch.diag(torch.tensor([0.125, 0.5, 1.0], dtype=F64)) @ Q.T
    trained = {
        1: [(ex.TrainedLSA(1, U1, []), 0.1, 0.02), (ex.TrainedLSA(1, U2, []), 0.3, 0.04)],
        2: [(ex.TrainedLSA(2, U2, []), 0.2, 0.0), (ex.TrainedLSA(2, U1, []), 0.2, 0.0)],
    }
    table, distances = ex.trained_table(trained, LAM, Q, 6)
    assert distances == {1: [0.1, 0.3], 2: [0.2, 0.2]}  # one distance per seed, for the rule
    lines = table.split("\n")
    assert len(lines) == 4  # a row per rank
    # mean and standard error of the distances, and the first seed's learned diagonal in the
    # eigenbasis: U1's for r = 1, U2's for r = 2
    assert "0.2000 ± 0.1000" in lines[2] and "0.500, 0.250, 0.000" in lines[2]
    assert "0.2000 ± 0.0000" in lines[3] and "0.125, 0.500, 1.000" in lines[3]


def _recording_mc(record, values):
    def fake(Us, eigenvalues, *, Q, w, M, trials, generator, sigma=0.0, flip=0.0, device="cpu"):
        record.append(
            dict(M=M, w=w, trials=trials, g=generator, sigma=sigma, flip=flip, dev=device)
        )
        return ex.PairedLosses(values(len(Us), M, sigma, flip))

    return fake


def _losses(n_models, M, sigma, flip):
    # model r's losses: (r + M + sigma + flip) + (r + 1) (-1, 0, 1): mean r + M + sigma + flip,
    # se (r + 1) / sqrt(3); model r' minus model r: mean and se both grow with r' - r
    r = torch.arange(n_models, dtype=F64)[:, None]
    return r + M + sigma + flip + (r + 1) * torch.tensor([-1.0, 0.0, 1.0], dtype=F64)


# ---- second round: the default chunk, dtypes and devices of the Monte Carlo, the grid's values --


class _Stop(Exception):
    pass


def _recording_prediction(seen):
    def prediction(E, W_PV, W_KQ, rho):
        seen.append((E.device.type, W_PV.device.type, W_KQ.device.type, W_PV.dtype, rho))
        raise _Stop  # the meta device holds no data: stop once the placement is seen

    return prediction


def test_mc_losses_put_the_model_and_the_prompts_on_the_device(Q, monkeypatch):
    # the meta device stands in for an accelerator: blocks made on the CPU, or prompts left
    # there, show in the devices that reach the prediction
    seen = []
    monkeypatch.setattr(model, "prediction", _recording_prediction(seen))
    U = torch.eye(3, dtype=torch.float32)
    w = torch.ones(3, dtype=F64)
    with pytest.raises(_Stop):
        ex.mc_evaluation_losses(
            [U], LAM, Q=Q, w=w, M=4, trials=5, generator=torch.Generator(), device="meta"
        )
    with pytest.raises(_Stop):
        ex.mc_population_loss(
            U, 0.5, eigenvalues=LAM, Q=Q, N=4, trials=5, generator=torch.Generator(), device="meta"
        )
    assert seen == [("meta", "meta", "meta", F64, 4)] * 2


def test_mc_evaluation_losses_use_a_float32_U_in_float64(Q):
    g = torch.Generator().manual_seed(5)
    Us = [torch.randn(3, 3, generator=g, dtype=torch.float32) for _ in range(2)]
    w = torch.tensor([1.0, -0.5, 2.0], dtype=F64)
    pl = ex.mc_evaluation_losses(
        Us, LAM, Q=Q, w=w, M=4, trials=6, generator=torch.Generator().manual_seed(6)
    )
    p = data.prompts(6, 4, eigenvalues=LAM, Q=Q, generator=torch.Generator().manual_seed(6), w=w)
    want = torch.stack([(_reduced(p, U.double(), 1.0, 4) - p.yq) ** 2 for U in Us])
    assert pl.losses.dtype == F64 and torch.allclose(pl.losses, want, rtol=1e-12)


def test_mc_evaluation_losses_default_chunk_is_50000(Q):
    # the prompts are drawn chunk by chunk, so 50 001 trials show the default chunk
    U = 0.1 * torch.eye(3, dtype=F64)
    w = torch.tensor([1.0, 0.0, -1.0], dtype=F64)
    pl = ex.mc_evaluation_losses(
        [U], LAM, Q=Q, w=w, M=1, trials=50_001, generator=torch.Generator().manual_seed(5)
    )
    g = torch.Generator().manual_seed(5)
    cols = []
    for b in (50_000, 1):
        p = data.prompts(b, 1, eigenvalues=LAM, Q=Q, generator=g, w=w)
        cols.append((_reduced(p, U, 1.0, 1) - p.yq) ** 2)
    assert torch.allclose(pl.losses[0], torch.cat(cols), rtol=1e-12)


def test_train_rank_r_puts_the_net_and_the_prompts_on_the_device(Q, monkeypatch):
    # LowRankLSA.forward calls model.prediction: the first step shows where the net and E live
    seen = []
    monkeypatch.setattr(model, "prediction", _recording_prediction(seen))
    with pytest.raises(_Stop):
        ex.train_rank_r(
            2,
            LAM,
            Q=Q.float(),
            N=6,
            steps=3,
            batch=4,
            lr=0.05,
            generator=torch.Generator(),
            device="meta",
            progress=False,
        )
    assert seen == [("meta", "meta", "meta", torch.float32, 6)]
