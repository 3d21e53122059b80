"""A trained looped transformer (exploratory; not in the source)."""

from __future__ import annotations

import math

import torch

from companions.incontext import sample_prompts
from companions.looped.construction import input_matrix, looped_transformer
from companions.looped.theory import prediction_error
from companions.train import fit


class LoopedLinearTransformer(torch.nn.Module):
    """Definition 8.7 with learnable Q, P shared by every loop and a fixed step size ``eta``.
    Uses the O(n d^2) last-row attention, equal to the masked form (checked in the chapter)."""

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
        out, _ = looped_transformer(
            Z0, self.Q, self.P, self.eta, loops=loops, faithful=False, trajectory=trajectory
        )
        return out


def sample_training_batch(
    batch: int, n: int, d: int, generator: torch.Generator, dtype=torch.float64, device="cpu"
):
    """A batch of prompts with queries ``alpha ~ +-U[0.5, 2]``: returns ``(Z0, theta*, alpha)``."""
    X, theta, y = sample_prompts(batch, n, d, generator, dtype, device)
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
    loops: int,
    steps: int,
    batch: int,
    generator: torch.Generator,
    lr: float = 1e-2,
    device="cpu",
    desc: str = "looped TF",
):
    """Learn Q, P (shared by every loop, fixed step ``1/(sqrt n + sqrt d)^2``) by Adam on
    ``E(<TF(Z0), theta*> - alpha)^2`` with ``loops`` loops unrolled and a fresh batch every step.
    Returns ``(model, history)``."""
    model = LoopedLinearTransformer(d, fixed_step_for_gaussian(n, d), generator=generator).to(
        device
    )

    def loss(step):
        Z0, theta, alpha = sample_training_batch(batch, n, d, generator, device=device)
        return (((model(Z0, loops) * theta).sum(-1) - alpha) ** 2).mean()

    return model, fit(loss, model.parameters(), steps, lr=lr, desc=desc)


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
