"""The in-context regression data of Section 5.4: ``x ~ N(0, Lambda)``, ``w ~ N(0, I)``,
``y = <w, x>`` (pretraining), and the evaluation prompts of Section 5.4.2 (a fixed task ``w``,
``M`` examples, label noise ``N(0, sigma^2)``), with optional sign flips of the in-context labels
(this book's analogue of the label flips of Section 5.6).

Shapes: examples ``X`` ``(trials, n, d)``, labels ``y`` ``(trials, n)``, query ``xq``
``(trials, d)`` and its label ``yq`` ``(trials,)``; the embedding ``E`` of Section 5.3 is
``(trials, d+1, n+1)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from companions.incontext import sample_prompts


def random_orthogonal(d: int, generator: torch.Generator, dtype=torch.float64) -> torch.Tensor:
    """A Haar-random ``d x d`` orthogonal matrix (QR of a Gaussian matrix, signs fixed)."""
    A = torch.randn(d, d, generator=generator, dtype=dtype)
    Q, R = torch.linalg.qr(A)
    return Q * torch.sign(torch.diagonal(R)).unsqueeze(0)


def check_spectrum(eigenvalues) -> torch.Tensor:
    """The eigenvalues ``lambda_1 >= ... >= lambda_d >= 0`` of Section 5.4.1 as a float64
    tensor; a ValueError names the parameter otherwise."""
    lam = torch.as_tensor([float(x) for x in eigenvalues], dtype=torch.float64)
    if lam.ndim != 1 or len(lam) == 0:
        raise ValueError("parameter 'eigenvalues' must be a non-empty list")
    if (lam < 0).any() or (lam[1:] > lam[:-1]).any():
        raise ValueError(
            f"parameter 'eigenvalues' = {lam.tolist()} is not allowed: Section 5.4.1 sorts them "
            "as lambda_1 >= ... >= lambda_d >= 0"
        )
    return lam


def covariance(eigenvalues, Q: torch.Tensor) -> torch.Tensor:
    """``Lambda = Q D Q^T`` (Section 5.4.1)."""
    lam = check_spectrum(eigenvalues).to(Q.dtype)
    return (Q * lam) @ Q.T


def covariance_sqrt(eigenvalues, Q: torch.Tensor) -> torch.Tensor:
    """``Lambda^{1/2} = Q D^{1/2} Q^T``."""
    lam = check_spectrum(eigenvalues).to(Q.dtype)
    return (Q * lam.sqrt()) @ Q.T


@dataclass
class Prompts:
    X: torch.Tensor
    y: torch.Tensor
    xq: torch.Tensor
    yq: torch.Tensor
    w: torch.Tensor


def prompts(
    trials: int,
    n: int,
    *,
    eigenvalues,
    Q: torch.Tensor,
    generator: torch.Generator,
    w: torch.Tensor | None = None,
    sigma: float = 0.0,
    flip: float = 0.0,
    dtype=torch.float64,
    device="cpu",
) -> Prompts:
    """``trials`` prompts of ``n`` examples and a query.

    - ``w=None``: pretraining tasks ``w ~ N(0, I)`` (Section 5.4); otherwise the fixed
      evaluation task ``w`` of Section 5.4.2 for every prompt;
    - ``sigma``: in-context label noise ``eps_i ~ N(0, sigma^2)`` (Section 5.4.2);
    - ``flip``: each in-context label's sign is flipped with probability ``flip`` (this book).

    The query's label ``yq = <w, xq>`` is never noisy nor flipped. Draws are made on the CPU.
    """
    if sigma < 0:
        raise ValueError(f"parameter 'sigma' = {sigma} is not allowed: expected >= 0")
    if not 0 <= flip <= 1:
        raise ValueError(f"parameter 'flip' = {flip} is not allowed: expected in [0, 1]")
    d = Q.shape[0]
    L = covariance_sqrt(eigenvalues, Q.to("cpu", torch.float64))
    Xall, wt, yall = sample_prompts(
        trials, n + 1, d, generator, dtype=dtype, cov_sqrt=L, task="gaussian"
    )
    if w is not None:
        wt = torch.as_tensor(w, dtype=dtype).reshape(1, d).expand(trials, d).clone()
        yall = (Xall @ wt.unsqueeze(-1)).squeeze(-1)
    X, xq = Xall[:, :n], Xall[:, n]
    y, yq = yall[:, :n].clone(), yall[:, n]
    if sigma > 0:
        y = y + sigma * torch.randn(trials, n, generator=generator, dtype=dtype)
    if flip > 0:
        signs = torch.rand(trials, n, generator=generator, dtype=dtype) < flip
        y = torch.where(signs, -y, y)
    move = dict(device=device)
    return Prompts(X.to(**move), y.to(**move), xq.to(**move), yq.to(**move), wt.to(**move))


def embed(X: torch.Tensor, y: torch.Tensor, xq: torch.Tensor) -> torch.Tensor:
    """The embedding matrix ``E`` of Section 5.3: columns ``(x_i; y_i)`` and ``(x_q; 0)``."""
    top = torch.cat([X, xq.unsqueeze(-2)], dim=-2).transpose(-1, -2)  # (.., d, n+1)
    bottom = torch.cat([y, torch.zeros_like(y[..., :1])], dim=-1).unsqueeze(-2)
    return torch.cat([top, bottom], dim=-2)
