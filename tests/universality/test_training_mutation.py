"""companions.universality.training against a second implementation of its steps: the batch of
(7.6)-(7.7), the loss (F.38) written out here, one or two projected gradient steps, the defaults
(initial scale, loss, the fine-tuning's Dykstra tolerance) and the argument checks (issue 23)."""

from __future__ import annotations

import math

import pytest
import torch

from companions.universality import data as ud
from companions.universality import theory as uth
from companions.universality import training as utr

F64 = torch.float64


def gen(k=0):
    return torch.Generator().manual_seed(k)


@pytest.fixture
def small():
    lay = ud.Layout(2, 4, 2, 2)  # k = 6 invariant features, d = 8
    return lay, ud.dictionary(lay.d, gen(14))


def ref_loss(W, x, xp, loss="logistic"):
    """(F.38) written out: t_i = <W x_i, W x+_i - mean_j W x_j>, then mean ell(t_i)."""
    h, hp = x @ W.T, xp @ W.T
    t = (h * (hp - h.mean(0, keepdim=True))).sum(1)
    ell = {
        "logistic": lambda t: torch.log1p(torch.exp(-t)),
        "linear": lambda t: -t,
        "exponential": lambda t: torch.exp(-t),
    }[loss]
    return ell(t).mean()


def ref_batch(lay, M, tasks, batch, g, resample=True):
    """The draws in the library's order: z (task ids, then Gaussians), then the fresh z_U+."""
    z, _ = ud.sample_z(lay, tasks, batch, g, dtype=F64)
    zp = ud.positive(lay, z, g) if resample else z.clone()
    return z @ M.T, zp @ M.T


def ref_descent(W, lay, M, tasks, steps, batch, lr, g, project, loss="logistic", resample=True):
    W, trace = W.clone(), []
    for _ in range(steps):
        x, xp = ref_batch(lay, M, tasks, batch, g, resample)
        Wg = W.clone().requires_grad_(True)
        value = ref_loss(Wg, x, xp, loss)
        (grad,) = torch.autograd.grad(value, Wg)
        W = project(W - lr * grad)
        trace.append(float(value.detach()))
    return W, trace


def test_contrastive_loss_default_is_logistic_and_the_loss_is_passed_on():
    g = gen(1)
    W, x, xp = (torch.randn(3, 5, generator=g, dtype=F64) for _ in range(3))
    W = W[:2]
    assert float(utr.contrastive_loss(W, x, xp)) == pytest.approx(float(ref_loss(W, x, xp)))
    for loss in ("linear", "exponential"):
        got = float(utr.contrastive_loss(W, x, xp, loss))
        assert got == pytest.approx(float(ref_loss(W, x, xp, loss)))
    # the linear loss is -mean t, a value the logistic one cannot take here
    assert float(utr.contrastive_loss(W, x, xp, "linear")) != pytest.approx(
        float(utr.contrastive_loss(W, x, xp))
    )


def test_batch_resamples_only_the_spurious_features_by_default(small):
    lay, M = small
    x, xp = utr._batch(lay, M, tasks=[0, 1], batch=16, generator=gen(3), device="cpu", dtype=F64)
    rx, rxp = ref_batch(lay, M, [0, 1], 16, gen(3))
    assert x.dtype == F64 and torch.allclose(x, rx, atol=1e-14)
    assert torch.allclose(xp, rxp, atol=1e-14)
    z, zp = x @ M, xp @ M  # M is orthonormal: back to the hidden coordinates
    assert torch.allclose(z[:, : lay.k], zp[:, : lay.k], atol=1e-12)
    assert float((z[:, lay.k :] - zp[:, lay.k :]).abs().min()) > 1e-6
    # the control keeps z's own z_U
    x, xp = utr._batch(
        lay, M, tasks=[0, 1], batch=16, generator=gen(3), device="cpu", dtype=F64, resample_u=False
    )
    assert torch.equal(x, xp)


def test_pretrain_is_projected_gradient_descent_from_a_small_gaussian(small):
    lay, M = small
    W, trace = utr.pretrain(
        lay, M, tasks=[0, 1], steps=2, batch=16, lr=0.7, generator=gen(5), dtype=F64
    )
    g = gen(5)
    W0 = 0.01 * torch.randn(lay.k, lay.d, generator=g, dtype=F64)  # the default init_scale
    proj = lambda V: uth.project_representation(V, math.sqrt(lay.r))  # noqa: E731
    Wr, tr = ref_descent(W0, lay, M, [0, 1], 2, 16, 0.7, g, proj)
    assert W.dtype == F64 and torch.allclose(W, Wr, atol=1e-12)
    assert trace == pytest.approx(tr, rel=1e-12)
    # another loss is passed through to every step
    W, trace = utr.pretrain(
        lay, M, tasks=[0], steps=2, batch=16, lr=0.3, generator=gen(6), dtype=F64, loss="linear"
    )
    g = gen(6)
    W0 = 0.01 * torch.randn(lay.k, lay.d, generator=g, dtype=F64)
    Wr, tr = ref_descent(W0, lay, M, [0], 2, 16, 0.3, g, proj, loss="linear")
    assert torch.allclose(W, Wr, atol=1e-12) and trace == pytest.approx(tr, rel=1e-12)


def test_pretrain_projection_binds_and_the_control_skips_resampling(small):
    lay, M = small
    # a large initial scale: the first projection acts (||W0|| is far above 1)
    W, _ = utr.pretrain(
        lay,
        M,
        tasks=[0, 1],
        steps=1,
        batch=8,
        lr=0.5,
        generator=gen(7),
        dtype=F64,
        init_scale=2.0,
        resample_u=False,
    )
    g = gen(7)
    W0 = 2.0 * torch.randn(lay.k, lay.d, generator=g, dtype=F64)
    proj = lambda V: uth.project_representation(V, math.sqrt(lay.r))  # noqa: E731
    Wr, _ = ref_descent(W0, lay, M, [0, 1], 1, 8, 0.5, g, proj, resample=False)
    assert torch.allclose(W, Wr, atol=1e-12)
    sv = torch.linalg.svdvals(W)
    assert float(sv.max()) == pytest.approx(1.0) and float(sv.norm()) <= math.sqrt(lay.r) + 1e-9


def test_pretrain_runs_in_float32_by_default(small):
    lay, M = small
    W, trace = utr.pretrain(lay, M, tasks=[0, 1], steps=2, batch=16, lr=0.7, generator=gen(5))
    assert W.dtype == torch.float32 and W.shape == (lay.k, lay.d)
    W64, tr64 = utr.pretrain(
        lay, M, tasks=[0, 1], steps=2, batch=16, lr=0.7, generator=gen(5), dtype=F64
    )
    assert torch.allclose(W.double(), W64, atol=1e-5) and trace == pytest.approx(tr64, rel=1e-5)


def test_pretrain_checks_its_arguments_at_the_boundaries(small):
    lay, M = small
    # the smallest allowed values run: one step, a batch of two, any positive lr
    W, trace = utr.pretrain(
        lay, M, tasks=[0], steps=1, batch=2, lr=0.5, generator=gen(0), dtype=F64
    )
    assert len(trace) == 1 and W.shape == (lay.k, lay.d)
    utr.pretrain(lay, M, tasks=[0], steps=1, batch=2, lr=1.5, generator=gen(0))
    msg = r"parameters steps=1, batch=1, lr=1.0: need steps >= 1, batch >= 2, lr > 0"
    with pytest.raises(ValueError, match=msg):
        utr.pretrain(lay, M, tasks=[0], steps=1, batch=1, lr=1.0, generator=gen(0))
    for steps, batch, lr in ((0, 4, 1.0), (1, 4, 0.0), (1, 4, -1.0)):
        with pytest.raises(ValueError, match="need steps >= 1"):
            utr.pretrain(lay, M, tasks=[0], steps=steps, batch=batch, lr=lr, generator=gen(0))


def test_cr_finetune_steps_project_onto_the_ball_with_the_stated_tolerance(small):
    lay, M = small
    W_star = uth.representation(uth.theory_loadings(lay, [0, 1]), M, k=lay.k)
    for gamma, fro in ((0.2, None), (0.2, 1.9)):
        W, trace = utr.cr_finetune(
            lay,
            M,
            W_star=W_star,
            target=0,
            gamma=gamma,
            steps=2,
            batch=32,
            lr=2.0,
            generator=gen(15),
            dtype=F64,
            fro=fro,
        )
        # CR_TOL = 1e-5 is the module's stated constant; at 1e-6 Dykstra stops ~1e-6 further on
        proj = lambda V: uth.project_cr(V, W_star, gamma, fro, tol=1e-5)  # noqa: E731
        Wr, tr = ref_descent(W_star, lay, M, [0], 2, 32, 2.0, gen(15), proj)
        assert W.dtype == F64 and torch.allclose(W, Wr, atol=1e-10), (gamma, fro)
        assert trace == pytest.approx(tr, rel=1e-12)
    # the Frobenius cap is active: W lies on it (the source's set would leave it above)
    assert float(W.norm()) == pytest.approx(1.9, abs=1e-9)
    # float32 by default
    W32, _ = utr.cr_finetune(
        lay, M, W_star=W_star, target=0, gamma=0.2, steps=2, batch=32, lr=2.0, generator=gen(15)
    )
    W64, _ = utr.cr_finetune(
        lay,
        M,
        W_star=W_star,
        target=0,
        gamma=0.2,
        steps=2,
        batch=32,
        lr=2.0,
        generator=gen(15),
        dtype=F64,
    )
    assert W32.dtype == torch.float32 and torch.allclose(W32.double(), W64, atol=1e-4)


def test_cr_finetune_all_passes_the_frobenius_cap(small):
    lay, M = small
    W_star = uth.representation(uth.theory_loadings(lay, [0, 1]), M, k=lay.k)
    # a wide ball (gamma = 1): the cap alone binds, and Dykstra stops after a few rounds
    outs = utr.cr_finetune_all(
        lay,
        M,
        Ws=[W_star],
        target=0,
        gamma=1.0,
        steps=1,
        batch=32,
        lr=2.0,
        seed_of=lambda sd: 40 + sd,
        fro=1.8,
    )
    for sd, W in enumerate(outs):
        one, _ = utr.cr_finetune(
            lay,
            M,
            W_star=W_star,
            target=0,
            gamma=1.0,
            steps=1,
            batch=32,
            lr=2.0,
            generator=gen(40 + sd),
            fro=1.8,
        )
        assert W.dtype == F64 and torch.allclose(W, one.double())
        assert float(W.norm()) == pytest.approx(1.8, abs=1e-4)


def test_progress_bars_are_labelled_and_hidden_unless_asked(small, monkeypatch):
    lay, M = small
    calls = []

    def spy(iterable, **options):
        calls.append(options)
        return iterable

    monkeypatch.setattr(utr, "progress_bar", spy)
    W_star = uth.representation(uth.theory_loadings(lay, [0, 1]), M, k=lay.k)
    utr.pretrain(lay, M, tasks=[0], steps=1, batch=4, lr=0.5, generator=gen(0))
    utr.pretrain(
        lay, M, tasks=[0], steps=1, batch=4, lr=0.5, generator=gen(0), progress=True, desc="pre"
    )
    utr.cr_finetune(
        lay, M, W_star=W_star, target=0, gamma=0.2, steps=1, batch=4, lr=0.5, generator=gen(0)
    )
    utr.cr_finetune(
        lay,
        M,
        W_star=W_star,
        target=0,
        gamma=0.2,
        steps=1,
        batch=4,
        lr=0.5,
        generator=gen(0),
        progress=True,
        desc="cr",
    )
    assert calls == [
        {"desc": "pre-training", "disable": True, "leave": False},
        {"desc": "pre", "disable": False, "leave": False},
        {"desc": "contrastive fine-tuning", "disable": True, "leave": False},
        {"desc": "cr", "disable": False, "leave": False},
    ]
