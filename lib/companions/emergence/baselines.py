"""The fixed-feature baselines of Section A.7.1 and the One-Step / Two-Step probes.

* **Random features (RF)**: the first layer frozen at its initialisation ``(W^(0), b^(0))``, the
  second layer trained (from ``a = 0``) with the network's optimizer and number of steps.
* **NTK**: the network linearised at its initialisation,
  ``f(x) = <grad_theta g(x; theta_0), theta - theta_0>
  = sum_i a_i sigma'(z_i) (<dw_i, x> + db_i) + da_i sigma(z_i)`` (``g(.; theta_0) = 0``),
  trained as a linear model with the same optimizer and steps (the source: "take its NTK and learn
  a classifier on it"; Fang et al. 2021).
* **One Step / Two Step**: the first layer frozen after step 1 / step 2, a classifier trained on the
  features. The source says "train the best classifiers on top"; two readings are offered: the best
  linear classifier on *standardised* features (logistic regression by L-BFGS), and the network's
  own second-layer training on the *raw* features.
* **Kernel methods**: kernel ridge regression with an RBF or a Laplace kernel on +-1 labels
  (Corollary 2.3).
"""

from __future__ import annotations

import torch

from companions.emergence.network import (
    Params,
    as_number,
    draw_batch,
    features,
    preactivations,
    stacked_hinge,
    take,
    truncated_relu,
)
from companions.train import progress as progress_bar


def train_linear_head(
    F: torch.Tensor,
    y: torch.Tensor,
    *,
    steps: int,
    batch: int,
    generator: torch.Generator,
    lr: float = 1e-2,
    evaluate=None,
    eval_every: int = 10,
    desc: str = "head",
    progress: bool = True,
    max_norm: float | None = None,
):
    """Hinge loss on ``<F(x), a>`` with Adam from ``a = 0`` (the RF baseline's second layer).
    ``max_norm`` projects ``a`` on the ball ``||a|| <= B`` after each step (the class H_B of Theorem
    2.2). Features stacked along a leading axis, ``(S, n, N)``, train ``S`` heads at once, each on
    its own minibatches (``generator``: a list of ``S``)."""
    shape = F.shape[:-2] + F.shape[-1:]
    a = torch.zeros(shape, dtype=F.dtype, device=F.device, requires_grad=True)
    opt = torch.optim.Adam([a], lr=lr)
    history: dict[str, list] = {"step": []}
    n = F.shape[-2]

    def record(step):
        if evaluate is not None:
            history["step"].append(step)
            with torch.no_grad():
                for key, v in evaluate(a.detach()).items():
                    history.setdefault(key, []).append(as_number(v))

    record(0)
    for step in progress_bar(range(1, steps + 1), desc=desc, disable=not progress, mininterval=0.5):
        idx = draw_batch(n, batch, generator, F.device)
        loss = stacked_hinge(take(y, idx), linear(take(F, idx), a))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if max_norm is not None:
            with torch.no_grad():
                norm = a.norm(dim=-1, keepdim=True)
                a.mul_(torch.where(norm > max_norm, max_norm / norm, torch.ones_like(norm)))
        if step % eval_every == 0 or step == steps:
            record(step)
    return a.detach(), history


def linear(F: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
    """``<F(x), a>`` for every row of ``F`` (stacked: one ``a`` per leading index)."""
    return (F @ a.unsqueeze(-1)).squeeze(-1)


class Linearised:
    """The network linearised at ``theta_0`` (the NTK model): parameters ``dW, db, da`` start at
    0."""

    def __init__(self, p0: Params):
        self.p0 = p0
        self.dW = torch.zeros_like(p0.W, requires_grad=True)
        self.db = torch.zeros_like(p0.b, requires_grad=True)
        self.da = torch.zeros_like(p0.a, requires_grad=True)

    def parameters(self):
        return [self.dW, self.db, self.da]

    def __call__(self, X: torch.Tensor) -> torch.Tensor:
        z = preactivations(self.p0, X)
        a = self.p0.a.unsqueeze(-2)
        slope = a * ((z > 0) & (z < 1)).to(X.dtype)  # a_i sigma'(z_i), sigma' as in (A.19)
        moved = X @ self.dW.mT + self.db.unsqueeze(-2)
        return (moved * slope).sum(-1) + linear(truncated_relu(z), self.da)


def train_ntk(
    p0: Params,
    X: torch.Tensor,
    *,
    y: torch.Tensor,
    steps: int,
    batch: int,
    generator: torch.Generator,
    lr: float = 1e-2,
    evaluate=None,
    eval_every: int = 10,
    progress: bool = True,
):
    """Train the linearised network with Adam (the NTK baseline); stacked networks and data (a
    leading axis) train at once, each on its own minibatches (``generator``: a list)."""
    model = Linearised(p0)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    history: dict[str, list] = {"step": []}
    n = X.shape[-2]

    def record(step):
        if evaluate is not None:
            history["step"].append(step)
            with torch.no_grad():
                for key, v in evaluate(model).items():
                    history.setdefault(key, []).append(as_number(v))

    record(0)
    for step in progress_bar(
        range(1, steps + 1), desc="NTK", disable=not progress, mininterval=0.5
    ):
        idx = draw_batch(n, batch, generator, X.device)
        loss = stacked_hinge(take(y, idx), model(take(X, idx)))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % eval_every == 0 or step == steps:
            record(step)
    return model, history


def standardised_probe(
    F_train: torch.Tensor,
    y_train: torch.Tensor,
    F_test: torch.Tensor,
    y_test: torch.Tensor,
    ridge: float = 1e-4,
    iters: int = 200,
) -> dict:
    """The best linear classifier on standardised features: L2-regularised logistic regression
    (L-BFGS). Constant features (zero spread) are dropped; returns train/test accuracy."""
    mean, std = F_train.mean(0), F_train.std(0)
    keep = std > 1e-300
    Ztr = torch.cat(
        [(F_train[:, keep] - mean[keep]) / std[keep], torch.ones_like(y_train).unsqueeze(1)], 1
    )
    Zte = torch.cat(
        [(F_test[:, keep] - mean[keep]) / std[keep], torch.ones_like(y_test).unsqueeze(1)], 1
    )
    w = torch.zeros(Ztr.shape[1], dtype=Ztr.dtype, device=Ztr.device, requires_grad=True)
    opt = torch.optim.LBFGS([w], lr=1, max_iter=iters, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = (
            torch.nn.functional.softplus(-y_train * (Ztr @ w)).mean() + ridge * (w[:-1] ** 2).sum()
        )
        loss.backward()
        return loss

    opt.step(closure)
    w = w.detach()
    return {
        "train": float((torch.sign(Ztr @ w) == y_train).double().mean()),
        "test": float((torch.sign(Zte @ w) == y_test).double().mean()),
        "kept": int(keep.sum()),
    }


def probe_features(p: Params, X: torch.Tensor) -> torch.Tensor:
    """The frozen first layer's outputs ``sigma(<w_i, x> + b_i)`` (the probes' features)."""
    return features(p, X)


#: Radial kernel profiles ``r(||x - x'||^2, h)`` of :func:`kernel_ridge`: Gaussian (RBF) and
#: Laplace (exponential of the distance); both shift-invariant and positive definite.
KERNELS = {
    "rbf": lambda d2, h: torch.exp(-d2 / (2 * h * h)),
    "laplace": lambda d2, h: torch.exp(-torch.sqrt(d2.clamp_min(0)) / h),
}


def kernel_ridge(
    X_train: torch.Tensor,
    y_train: torch.Tensor,
    evals: dict,
    kernel: str = "rbf",
    ridge: float = 1e-3,
    bandwidth: float | None = None,
) -> dict:
    """Kernel ridge regression ``f = sum_i alpha_i K(x_i, .)``, ``alpha = (K + ridge n I)^{-1} y``,
    on +-1 labels with a radial kernel of :data:`KERNELS` (``h`` = the median pairwise distance
    when not given). Returns the training accuracy, per evaluation set ``evals[name] = (X, y)`` its
    accuracy and outputs (``'<name> outputs'``), ``h``, ``||alpha||_2`` and the RKHS norm
    ``||f||_H = sqrt(alpha^T K alpha)`` (Corollary 2.3's two norms)."""
    if kernel not in KERNELS:
        raise ValueError(f"parameter 'kernel' = {kernel!r} is not allowed: one of {list(KERNELS)}")
    profile = KERNELS[kernel]
    d2 = torch.cdist(X_train, X_train) ** 2
    h = float(torch.sqrt(d2.median())) if bandwidth is None else bandwidth
    K = profile(d2, h)
    n = K.shape[0]
    alpha = torch.linalg.solve(
        K + ridge * n * torch.eye(n, dtype=K.dtype, device=K.device), y_train
    )
    out = {
        "train": float((torch.sign(K @ alpha) == y_train).double().mean()),
        "bandwidth": h,
        "alpha_norm": float(alpha.norm()),
        "rkhs_norm": float(torch.sqrt(alpha @ K @ alpha)),
    }
    for name, (X, y) in evals.items():
        f = profile(torch.cdist(X, X_train) ** 2, h) @ alpha
        out[name] = float((torch.sign(f) == y).double().mean())
        out[f"{name} outputs"] = f
    return out


def rbf_kernel_ridge(
    X_train: torch.Tensor,
    y_train: torch.Tensor,
    X_test: torch.Tensor,
    y_test: torch.Tensor,
    ridge: float = 1e-3,
    bandwidth: float | None = None,
) -> dict:
    """Kernel ridge regression with ``K(x, x') = exp(-||x - x'||^2 / (2 h^2))`` on +-1 labels
    (``h`` = median pairwise distance when not given); returns train/test accuracy and ``h``
    (:func:`kernel_ridge` with one evaluation set)."""
    r = kernel_ridge(X_train, y_train, {"test": (X_test, y_test)}, "rbf", ridge, bandwidth)
    return {key: r[key] for key in ("train", "test", "bandwidth", "alpha_norm")}
