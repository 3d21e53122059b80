"""Training with torch: the feature model of Section 6.4 (a learned gate per feature) under ERM,
ERM-l2, ERM-l1 and ERM-NU, and the 2-D task of Section 6.3.1 with a linear extractor.

The nuclear-norm penalty follows the source's implementation (zhmeishi/DG-NU, ``ERM_NU.update``):
lambda times the sum of the singular values of the batch's feature matrix, divided by the number
of rows. The text's (6.3) has no such division; ``normalise=False`` gives the text's version.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from companions.train import History, fit

METHODS = ("erm", "l2", "l1", "nu")


def nuclear_penalty(features: torch.Tensor, normalise: bool = True) -> torch.Tensor:
    """||Phi(X)||_* of a batch of features (rows), divided by the batch size if ``normalise``."""
    s = torch.linalg.svdvals(features).sum()
    return s / features.shape[0] if normalise else s


def gated_loss(
    w: torch.Tensor,
    x: torch.Tensor,
    y: torch.Tensor,
    method: str,
    lam: float,
    normalise: bool = True,
) -> torch.Tensor:
    """The objective on a batch: mean logistic loss of y <w, x> plus the method's penalty.

    Features are Phi(x) = w * x (a gate per coordinate, Section 6.4), the head sums them.
    ``erm``: none; ``l2``: lam/2 ||w||^2 (6.4); ``l1``: lam ||w||_1; ``nu``: lam ||Phi(X)||_* (6.3).
    """
    if method not in METHODS:
        raise ValueError(
            f"parameter 'method' = {method!r} is not allowed: expected one of {METHODS}"
        )
    feats = x * w
    loss = torch.nn.functional.softplus(-y * feats.sum(-1)).mean()
    if method == "l2":
        loss = loss + lam / 2 * (w**2).sum()
    elif method == "l1":
        loss = loss + lam * w.abs().sum()
    elif method == "nu":
        loss = loss + lam * nuclear_penalty(feats, normalise)
    return loss


@dataclass
class GatedRun:
    w: torch.Tensor
    history: History


def train_gated(
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    domain: torch.Tensor,
    method: str,
    lam: float,
    steps: int,
    batch_per_domain: int,
    lr: float,
    generator: torch.Generator,
    init: float = 0.01,
    progress: bool = False,
    desc: str = "",
) -> GatedRun:
    """Adam on the gates w; batches of ``batch_per_domain`` rows from every domain (DomainBed)."""
    if batch_per_domain < 1:
        raise ValueError(
            f"parameter 'batch_per_domain' = {batch_per_domain!r} is not allowed: expected >= 1"
        )
    if lam < 0:
        raise ValueError(f"parameter 'lam' = {lam!r} is not allowed: expected a real number >= 0")
    device = x.device
    w = torch.full((x.shape[-1],), init, dtype=x.dtype, device=device, requires_grad=True)
    rows = [torch.nonzero(domain == e).flatten() for e in torch.unique(domain)]

    def loss_fn(step):
        picks = [r[torch.randint(len(r), (batch_per_domain,), generator=generator)] for r in rows]
        idx = torch.cat(picks).to(device)
        return gated_loss(w, x[idx], y[idx], method, lam)

    history = fit(
        loss_fn,
        [w],
        steps=steps,
        lr=lr,
        optimizer="adam",
        log_every=max(1, steps // 50),
        desc=desc or f"{method} lam={lam:g}",
        progress=progress,
    )
    return GatedRun(w.detach(), history)


def gated_accuracy(w: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> float:
    """Fraction with y <w, x> > 0 (a tie counts as an error)."""
    return float(((y * (x @ w)) > 0).double().mean())


@dataclass
class TwoDRun:
    A: torch.Tensor
    u: torch.Tensor
    b: torch.Tensor
    history: History

    def predict(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.A.T @ self.u + self.b

    def accuracy(self, x: torch.Tensor, y: torch.Tensor) -> float:
        return float(((y * self.predict(x)) > 0).double().mean())

    def direction(self) -> torch.Tensor:
        """The classifier's weights on (x1, x2): A^T u."""
        return self.A.T @ self.u


def train_two_d(
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    lam: float,
    steps: int,
    lr: float,
    generator: torch.Generator,
    init_scale: float = 0.5,
    progress: bool = False,
    desc: str = "",
) -> TwoDRun:
    """Section 6.3.1: Phi(x) = A x (A 2x2), a linear head with bias, full-batch gradient descent on
    the logistic loss plus lam ||Phi(X)||_* / n (``lam = 0`` is ERM)."""
    if lam < 0:
        raise ValueError(f"parameter 'lam' = {lam!r} is not allowed: expected a real number >= 0")
    dev, dt = x.device, x.dtype
    A = (torch.randn(2, 2, generator=generator, dtype=dt) * init_scale).to(dev).requires_grad_()
    u = (torch.randn(2, generator=generator, dtype=dt) * init_scale).to(dev).requires_grad_()
    b = torch.zeros((), dtype=dt, device=dev, requires_grad=True)

    def loss_fn(step):
        feats = x @ A.T
        loss = torch.nn.functional.softplus(-y * (feats @ u + b)).mean()
        return loss + lam * nuclear_penalty(feats) if lam > 0 else loss

    history = fit(
        loss_fn,
        [A, u, b],
        steps=steps,
        lr=lr,
        optimizer="sgd",
        log_every=max(1, steps // 50),
        desc=desc or f"2-D lam={lam:g}",
        progress=progress,
    )
    return TwoDRun(A.detach(), u.detach(), b.detach(), history)
