"""Projected gradient descent on the contrastive loss (F.38) over the class of Section 7.2.2, and
the contrastive fine-tuning (F.104)-(F.105) of Appendix F.2.4. Training runs in float32 by
default."""

from __future__ import annotations

import math

import torch

from companions import losses
from companions.train import progress as progress_bar
from companions.universality import data, theory

#: Dykstra's stopping tolerance in the fine-tuning (an iterate moving by less, in Frobenius norm);
#: float32 resolves about 1e-7 relative, so 1e-5 is reachable.
CR_TOL = 1e-5


def _batch(layout, M, *, tasks, batch, generator, device, dtype, resample_u=True):
    z, _ = data.sample_z(layout, tasks, batch, generator, dtype=dtype)
    zp = data.positive(layout, z, generator) if resample_u else z.clone()
    Mt = M.T.to(device, dtype)
    return z.to(device) @ Mt, zp.to(device) @ Mt


def contrastive_loss(W: torch.Tensor, x: torch.Tensor, x_pos: torch.Tensor, loss: str = "logistic"):
    """(F.38) on a batch: ``mean ell(<W x, W x+ - mean(W x)>)``; the mean estimates ``E
    phi(x-)``."""
    return losses.mean_negative_contrastive(x @ W.T, x_pos @ W.T, loss)


def _run(
    W,
    layout,
    *,
    M,
    tasks,
    steps,
    batch,
    lr,
    generator,
    device,
    dtype,
    project,
    loss,
    progress,
    desc,
    resample_u=True,
):
    W = W.to(device, dtype).clone()
    trace = []
    for _ in progress_bar(range(steps), desc=desc, disable=not progress, leave=False):
        x, xp = _batch(
            layout,
            M,
            tasks=tasks,
            batch=batch,
            generator=generator,
            device=device,
            dtype=dtype,
            resample_u=resample_u,
        )
        W.requires_grad_(True)
        value = contrastive_loss(W, x, xp, loss)
        (grad,) = torch.autograd.grad(value, W)
        with torch.no_grad():
            W = project(W - lr * grad)
        trace.append(float(value.detach()))
    return W.detach(), trace


def pretrain(
    layout: data.Layout,
    M: torch.Tensor,
    *,
    tasks,
    steps: int,
    batch: int,
    lr: float,
    generator: torch.Generator,
    device="cpu",
    dtype=torch.float32,
    init_scale: float = 0.01,
    loss: str = "logistic",
    progress: bool = False,
    desc: str = "pre-training",
    resample_u: bool = True,
):
    """Pre-train ``phi(x) = W x`` (``W`` of shape ``(k, d)``) on an even mixture of ``tasks`` by
    projected gradient descent onto ``{||W|| <= 1, ||W||_F <= sqrt(r)}``. ``resample_u=False`` is
    the control: the positive keeps ``z``'s own ``z_U`` instead of (7.7)'s fresh copy. Returns
    ``(W, losses per step)``."""
    if steps < 1 or batch < 2 or lr <= 0:
        raise ValueError(
            f"parameters steps={steps}, batch={batch}, lr={lr}: need steps >= 1, batch >= 2, lr > 0"
        )
    W0 = init_scale * torch.randn(layout.k, layout.d, generator=generator, dtype=torch.float64)
    fro = math.sqrt(layout.r)
    return _run(
        W0,
        layout,
        M=M,
        tasks=tasks,
        steps=steps,
        batch=batch,
        lr=lr,
        generator=generator,
        device=device,
        dtype=dtype,
        project=lambda W: theory.project_representation(W, fro),
        loss=loss,
        progress=progress,
        desc=desc,
        resample_u=resample_u,
    )


def cr_finetune(
    layout: data.Layout,
    M: torch.Tensor,
    *,
    W_star: torch.Tensor,
    target: int,
    gamma: float,
    steps: int,
    batch: int,
    lr: float,
    generator: torch.Generator,
    device="cpu",
    dtype=torch.float32,
    fro: float | None = None,
    loss: str = "logistic",
    progress: bool = False,
    desc: str = "contrastive fine-tuning",
):
    """(F.104)-(F.105): start at ``W*`` and minimise the contrastive loss on unlabeled data of task
    ``target`` over ``{||W - W*||_F <= gamma, ||W|| <= 1}`` (and ``||W||_F <= fro`` when given; the
    source drops that constraint). Returns ``(W, losses per step)``."""
    if gamma <= 0:
        raise ValueError(f"parameter 'gamma' = {gamma} is not allowed: it must be positive")
    Ws = W_star.to(device, dtype)
    return _run(
        W_star,
        layout,
        M=M,
        tasks=[target],
        steps=steps,
        batch=batch,
        lr=lr,
        generator=generator,
        device=device,
        dtype=dtype,
        project=lambda W: theory.project_cr(W, Ws, gamma, fro, tol=CR_TOL),
        loss=loss,
        progress=progress,
        desc=desc,
    )


def cr_finetune_all(
    layout, M, *, Ws, target, gamma, steps, batch, lr, seed_of, device="cpu", fro=None
):
    """``cr_finetune`` from each representation in ``Ws`` (seed ``sd`` draws its data with
    ``seed_of(sd)``); returns the fine-tuned matrices in float64 on the CPU."""
    out = []
    for sd, W in enumerate(Ws):
        g = torch.Generator().manual_seed(seed_of(sd))
        Wc, _ = cr_finetune(
            layout,
            M,
            W_star=W,
            target=target,
            gamma=gamma,
            steps=steps,
            batch=batch,
            lr=lr,
            generator=g,
            device=device,
            fro=fro,
        )
        out.append(Wc.double().cpu())
    return out
