"""A trained looped transformer (exploratory; not in the source)."""

from __future__ import annotations

import math

import torch

from companions.incontext import sample_prompts
from companions.looped.construction import input_matrix, looped_transformer_gram
from companions.looped.theory import prediction_error
from companions.train import fit


class LoopedLinearTransformer(torch.nn.Module):
    """Definition 8.7 with learnable Q, P shared by every loop and a fixed step size ``eta``.
    Uses the Gram form of the loop (:func:`looped_transformer_gram`): ``C = Z_{1:n}^T Z_{1:n}``
    once per prompt, then O(d^2) per loop; equal to the masked form (checked in the chapter and
    the tests)."""

    def __init__(
        self,
        d: int,
        eta: float,
        init_scale: float = 0.1,
        generator: torch.Generator | None = None,
        dtype=torch.float64,
    ):
        super().__init__()
        self.eta = eta
        self.Q = torch.nn.Parameter(
            init_scale * torch.randn(d + 1, d + 1, generator=generator, dtype=dtype)
        )
        self.P = torch.nn.Parameter(
            init_scale * torch.randn(d + 1, d + 1, generator=generator, dtype=dtype)
        )

    def forward(self, Z0: torch.Tensor, loops: int, trajectory: bool = False):
        out, _ = looped_transformer_gram(
            Z0, self.Q, self.P, self.eta, loops=loops, trajectory=trajectory
        )
        return out


def sample_training_batch(
    batch: int, n: int, d: int, generator: torch.Generator, dtype=torch.float64, device="cpu"
):
    """A batch of prompts with queries ``alpha ~ +-U[0.5, 2]``: returns ``(Z0, theta*, alpha)``."""
    X, theta, y = sample_prompts(batch, n, d, generator, dtype=dtype, device=device)
    sign = torch.where(torch.rand(batch, generator=generator) < 0.5, -1.0, 1.0).to(dtype)
    alpha = (sign * (0.5 + 1.5 * torch.rand(batch, generator=generator, dtype=dtype))).to(device)
    return input_matrix(X, y, alpha), theta, alpha


def fixed_step_for_gaussian(n: int, d: int) -> float:
    """(D5) A prompt-independent step size for Gaussian X: ``1 / (sqrt n + sqrt d)^2``, the inverse
    of the typical ``lambda_max(X^T X)``."""
    return 1.0 / (math.sqrt(n) + math.sqrt(d)) ** 2


def train_looped_transformer(
    d: int,
    n: int,
    *,
    loops: int,
    steps: int,
    batch: int,
    generator: torch.Generator,
    lr: float = 1e-2,
    device="cpu",
    desc: str = "looped TF",
    dtype=torch.float32,
    progress: bool = True,
):
    """Learn Q, P (shared by every loop, fixed step ``1/(sqrt n + sqrt d)^2``) by Adam on
    ``E(<TF(Z0), theta*> - alpha)^2`` with ``loops`` loops unrolled and a fresh batch every step.
    Trains in ``dtype`` (float32 by default) and returns ``(model, history)`` with the model cast
    to float64 for the chapter's checks."""
    model, loss = looped_training_problem(
        d, n, loops=loops, batch=batch, generator=generator, device=device, dtype=dtype
    )
    history = fit(loss, model.parameters(), steps=steps, lr=lr, desc=desc, progress=progress)
    return model.to(torch.float64), history


def looped_training_problem(
    d: int, n: int, *, loops: int, batch: int, generator: torch.Generator, device="cpu", dtype=None
):
    """The model and the loss closure ``loss(step)`` that :func:`train_looped_transformer` fits
    (also what ``python -m companions bench`` times). Initial weights are drawn in float64 and
    cast to ``dtype`` (float32 by default), so every dtype starts from the same weights; the
    prompts are drawn in ``dtype``."""
    dtype = torch.float32 if dtype is None else dtype
    model = LoopedLinearTransformer(d, fixed_step_for_gaussian(n, d), generator=generator).to(
        device=device, dtype=dtype
    )

    def loss(step):  # prompts drawn in ``dtype`` (float32 Gaussians are drawn 5x faster)
        Z0, theta, alpha = sample_training_batch(batch, n, d, generator, dtype, device)
        return (((model(Z0, loops) * theta).sum(-1) - alpha) ** 2).mean()

    return model, loss


def distance_to_construction(Q: torch.Tensor, P: torch.Tensor) -> dict:
    """How far learned weights are from the construction family ``Q = a I``,
    ``P = b blockdiag(I_d, 0)`` (any a, b > 0 with ``eta a b`` fixed loops the same GD). Returns the
    best ``a``, ``b`` (least squares) and the relative residuals ``||Q - a I|| / ||Q||`` and
    ``||P - b P0|| / ||P||``."""
    d = Q.shape[-1] - 1
    eye = torch.eye(d + 1, dtype=Q.dtype, device=Q.device)
    P0 = eye.clone()
    P0[d, d] = 0
    a = float((Q * eye).sum() / (eye * eye).sum())
    b = float((P * P0).sum() / (P0 * P0).sum())
    return {
        "a": a,
        "b": b,
        "q_residual": float((Q - a * eye).norm() / Q.norm()),
        "p_residual": float((P - b * P0).norm() / P.norm()),
    }


def depth_curve(
    model_fn, Z0: torch.Tensor, theta: torch.Tensor, alpha: torch.Tensor, loops: int
) -> torch.Tensor:
    """Mean prediction error after 0..loops loops, for ``model_fn(Z0, loops, trajectory=True)``."""
    with torch.no_grad():
        outs = model_fn(Z0, loops, trajectory=True)
    return prediction_error(outs, theta, alpha).mean(-1)


def train_seeds(
    d: int,
    n: int,
    *,
    loops: int,
    steps: int,
    batch: int,
    seeds: int,
    generator_for,
    device="cpu",
):
    """``seeds`` independent runs of :func:`train_looped_transformer`, seed ``s`` drawing from
    ``generator_for(50 + s)``: returns ``(models, histories)``."""
    models, histories = [], []
    for s in range(seeds):
        model, history = train_looped_transformer(
            d,
            n,
            loops=loops,
            steps=steps,
            batch=batch,
            generator=generator_for(50 + s),
            device=device,
            desc=f"seed {s}",
        )
        models.append(model)
        histories.append(history)
    return models, histories
