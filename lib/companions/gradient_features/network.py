"""The two-layer ReLU network (3.1), its symmetric initialisation (3.9), the simplified gradient
vector (3.4), gradient-feature cones (3.5) and the training of Algorithm 1, batched over seeds.

Every tensor carries a leading seed axis ``S``: ``W`` is ``(S, N, d)``, ``a`` and ``b`` are
``(S, N)``, inputs ``X`` are ``(S, n, d)`` and labels ``y`` are ``(S, n)``. Seeds never mix: the
loss is the sum over seeds of each seed's mean loss, so each seed's gradient is its own.

``g(x) = sum_i a_i sigma(<w_i, x> - b_i)`` with the plain ReLU and a *minus* bias; ``b`` is never
trained (Section 3.3).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from companions.train import progress as progress_bar

#: ``l'(0)`` of the hinge loss ``l(z) = max(0, 1 - z)`` (Assumption 3.1: ``|l'(0)| = Theta(1)``).
HINGE_SLOPE_AT_ZERO = -1.0


@dataclass
class Net:
    """A batch of networks: ``a`` (S, N), ``W`` (S, N, d), ``b`` (S, N)."""

    a: torch.Tensor
    W: torch.Tensor
    b: torch.Tensor

    def detach(self) -> "Net":
        return Net(self.a.detach().clone(), self.W.detach().clone(), self.b.detach().clone())

    @property
    def width(self) -> int:
        return self.W.shape[1]


def _positive(name: str, value: float) -> None:
    if not value > 0:
        raise ValueError(f"parameter '{name}' = {value} is not allowed: it must be > 0")


def symmetric_init(
    seeds: int,
    m: int,
    *,
    d: int,
    sigma_a: float,
    sigma_w: float,
    b_tilde: float,
    generator: torch.Generator,
    dtype=torch.float32,
    device="cpu",
) -> Net:
    """The initialisation (3.9) with ``4m`` neurons: for ``i <= m``, ``a_i ~ N(0, sigma_a^2)``,
    ``w_i ~ N(0, sigma_w^2 I)``, ``b_i = b~``; neurons ``m+1..2m`` are ``(-a, -w, -b)`` and
    neurons ``2m+1..4m`` are ``(-a, w, b)`` of the first ``2m``, so that ``g^(0) = 0``."""
    for name, value in (("sigma_a", sigma_a), ("sigma_w", sigma_w), ("b_tilde", b_tilde)):
        _positive(name, value)
    if m < 1:
        raise ValueError(f"parameter 'm' = {m} is not allowed: it must be >= 1")
    a = torch.randn(seeds, m, generator=generator, dtype=torch.float64) * sigma_a
    W = torch.randn(seeds, m, d, generator=generator, dtype=torch.float64) * sigma_w
    b = torch.full((seeds, m), float(b_tilde), dtype=torch.float64)
    a, W, b = torch.cat([a, -a], 1), torch.cat([W, -W], 1), torch.cat([b, -b], 1)
    a, W, b = torch.cat([a, -a], 1), torch.cat([W, W], 1), torch.cat([b, b], 1)
    return Net(*(t.to(device=device, dtype=dtype) for t in (a, W, b)))


def hidden(net: Net, X: torch.Tensor) -> torch.Tensor:
    """The neurons' outputs ``sigma(<w_i, x> - b_i)``, shape (S, n, N)."""
    Z = X @ net.W.transpose(1, 2)
    Z -= net.b[:, None, :]  # in place: (S, n, N) is 0.8 GB at gradient-framework's default
    return Z.relu_()


def forward(net: Net, X: torch.Tensor) -> torch.Tensor:
    """``g(x)`` of (3.1), shape (S, n)."""
    return (hidden(net, X) * net.a[:, None, :]).sum(-1)


def accuracy(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Per-seed accuracy of ``sign(out)`` (a zero output counts as wrong), shape (S,)."""
    return (torch.sign(out) == y).to(torch.float64).mean(-1)


def seedwise_hinge(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Per-seed mean hinge loss, shape (S,)."""
    return (1 - y * out).clamp(min=0).mean(-1)


def smooth_hinge(z: torch.Tensor) -> torch.Tensor:
    """A smoothed hinge loss that meets Assumption 3.1 and is smooth, for Theorem 3.4's
    L-smoothness: ``1 - z`` for ``z <= 0``, ``(2 - z)^2 / 4`` on ``[0, 2]``, 0 above. It is convex,
    decreasing and 1-Lipschitz, with ``l(0) = 1``, ``l'(0) = -1``, ``l(inf) = 0`` and ``l'' <= 1/2``
    (:data:`SMOOTH_HINGE_CURVATURE`)."""
    middle = (2 - z).clamp(min=0) ** 2 / 4
    return torch.where(z <= 0, 1 - z, middle)


def smooth_hinge_slope(z: torch.Tensor) -> torch.Tensor:
    """The derivative of :func:`smooth_hinge`: ``-1`` for ``z <= 0``, ``-(2 - z)/2`` on
    ``[0, 2]``, 0 above."""
    return torch.where(z <= 0, -torch.ones_like(z), -(2 - z).clamp(min=0) / 2)


#: The largest second derivative of :func:`smooth_hinge` (on ``(0, 2)``).
SMOOTH_HINGE_CURVATURE = 0.5


def simplified_gradient(W: torch.Tensor, b: torch.Tensor, X: torch.Tensor, y: torch.Tensor):
    """The empirical simplified gradient vector (B.124) of Definition 3.5 (3.4),
    ``G~(w, b) = (1/n) sum_l y_l x_l I[<w, x_l> > b]``, for every row of ``W`` (S, N, d) with its
    bias ``b`` (S, N): shape (S, N, d)."""
    active = (X @ W.transpose(1, 2) > b[:, None, :]).to(X.dtype)  # (S, n, N)
    return torch.einsum("sn,snk,snd->skd", y, active, X) / X.shape[1]


def cone_cosine(G: torch.Tensor, D: torch.Tensor) -> torch.Tensor:
    """``<G, D> / ||G||`` for every vector of ``G`` (..., d) and every unit direction of ``D``
    (r, d): shape (..., r). The cone (3.5) is ``|cosine| > 1 - gamma``; a zero vector gets 0."""
    norm = G.norm(dim=-1, keepdim=True)
    return (G @ D.T) / norm.clamp(min=torch.finfo(G.dtype).tiny)


def feature_hits(G: torch.Tensor, D: torch.Tensor, gamma: float, B_G: float) -> torch.Tensor:
    """The event of Definition 3.7 (3.6) for each vector of ``G`` (..., d) and direction of ``D``:
    ``G in C_{D, gamma}`` and ``||G|| >= B_G``; boolean of shape (..., r)."""
    if not 0 < gamma < 1:
        raise ValueError(f"parameter 'gamma' = {gamma} is not allowed: it must lie in (0, 1)")
    inside = cone_cosine(G, D).abs() > 1 - gamma
    return inside & (G.norm(dim=-1, keepdim=True) >= B_G)


def first_step(net: Net, X: torch.Tensor, y: torch.Tensor, eta1: float) -> Net:
    """The first step of Algorithm 1 with ``lambda^(1) = 1/eta^(1)`` and the hinge loss, from the
    symmetric initialisation (``g^(0) = 0``, so ``l'(y g) = l'(0)`` everywhere), in closed form
    (B.16)-(B.17): ``w_i^(1) = -eta l'(0) a_i G~(w_i, b_i)`` and
    ``a_i^(1) = -eta l'(0) (1/n) sum_l y_l sigma(<w_i, x_l> - b_i)``."""
    _positive("eta1", eta1)
    G = simplified_gradient(net.W, net.b, X, y)
    W1 = -eta1 * HINGE_SLOPE_AT_ZERO * net.a[..., None] * G
    a1 = -eta1 * HINGE_SLOPE_AT_ZERO * torch.einsum("sn,snk->sk", y, hidden(net, X)) / X.shape[1]
    return Net(a1, W1, net.b.clone())


def autograd_step(net: Net, X: torch.Tensor, y: torch.Tensor, eta: float, lam: float) -> Net:
    """One step of Algorithm 1 by automatic differentiation of (3.2),
    ``L~(g) + lam/2 (||W||_F^2 + ||a||^2)`` (the check of :func:`first_step`)."""
    a = net.a.clone().requires_grad_(True)
    W = net.W.clone().requires_grad_(True)
    out = forward(Net(a, W, net.b), X)
    loss = seedwise_hinge(out, y).sum() + lam / 2 * (W.pow(2).sum() + a.pow(2).sum())
    ga, gW = torch.autograd.grad(loss, [a, W])
    return Net((a - eta * ga).detach(), (W - eta * gW).detach(), net.b.clone())


def train(
    net: Net,
    X: torch.Tensor,
    *,
    y: torch.Tensor,
    steps: int,
    lr: float,
    train_first_layer: bool = True,
    optimizer: str = "adam",
    batch: int | None = None,
    generator: torch.Generator | None = None,
    progress: bool = True,
) -> Net:
    """The later steps of Algorithm 1 (``lambda^(t) = 0``): the hinge loss on the training set,
    with ``a`` and (unless ``train_first_layer`` is False, Theorem 3.4's frozen first layer)
    ``W`` trained, ``b`` fixed. ``optimizer`` is ``'gd'`` (full-batch gradient descent with step
    ``lr``, the source's algorithm) or ``'adam'`` (minibatches of ``batch``). The steps go
    through :func:`companions.train.progress` (its bar unless ``progress`` is False)."""
    if optimizer not in ("gd", "adam"):
        raise ValueError(f"parameter 'optimizer' = {optimizer!r} is not allowed: 'gd' or 'adam'")
    _positive("lr", lr)
    a = net.a.clone().requires_grad_(True)
    W = net.W.clone().requires_grad_(train_first_layer)
    params = [a, W] if train_first_layer else [a]
    opt = torch.optim.Adam(params, lr=lr) if optimizer == "adam" else torch.optim.SGD(params, lr=lr)
    n = X.shape[1]
    for _ in progress_bar(range(steps), desc="Algorithm 1, later steps", disable=not progress):
        if optimizer == "adam" and batch is not None and batch < n:
            idx = torch.randint(n, (batch,), generator=generator).to(X.device)
            Xb, yb = X[:, idx], y[:, idx]
        else:
            Xb, yb = X, y
        loss = seedwise_hinge(forward(Net(a, W, net.b), Xb), yb).sum()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return Net(a.detach(), W.detach(), net.b.clone())


def ntk_output(net0: Net, dW: torch.Tensor, da: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
    """The network linearised at ``net0`` (``b`` fixed), evaluated at the displacement
    ``(dW, da)``: ``sum_i a_i I[<w_i, x> > b_i] <dw_i, x> + da_i sigma(<w_i, x> - b_i)``, the
    first-order change of ``g`` (plus ``g^(0)``, which is 0 after (3.9))."""
    z = X @ net0.W.transpose(1, 2) - net0.b[:, None, :]
    slope = net0.a[:, None, :] * (z > 0).to(X.dtype)
    return ((X @ dW.transpose(1, 2)) * slope).sum(-1) + (torch.relu(z) * da[:, None]).sum(-1)


def train_ntk(
    net0: Net,
    X: torch.Tensor,
    *,
    y: torch.Tensor,
    steps: int,
    lr: float,
    batch: int | None = None,
    generator: torch.Generator | None = None,
    progress: bool = True,
):
    """The NTK baseline: the network linearised at its initialisation (``g^(0) = 0``, ``b``
    fixed), ``f(x) = sum_i a_i I[<w_i, x> > b_i] <dw_i, x> + da_i sigma(<w_i, x> - b_i)``, trained
    with Adam on the hinge loss from ``dW = 0, da = 0``. Returns a function ``X -> f(X)``. The
    steps go through :func:`companions.train.progress` (its bar unless ``progress`` is False)."""
    dW = torch.zeros_like(net0.W, requires_grad=True)
    da = torch.zeros_like(net0.a, requires_grad=True)

    def model(Xb):
        return ntk_output(net0, dW, da, Xb)

    opt = torch.optim.Adam([dW, da], lr=lr)
    n = X.shape[1]
    for _ in progress_bar(range(steps), desc="NTK baseline", disable=not progress):
        if batch is not None and batch < n:
            idx = torch.randint(n, (batch,), generator=generator).to(X.device)
            Xb, yb = X[:, idx], y[:, idx]
        else:
            Xb, yb = X, y
        loss = seedwise_hinge(model(Xb), yb).sum()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    dW, da = dW.detach(), da.detach()
    return lambda Xe: model(Xe).detach()


def train_linear(X, y, *, steps: int, lr: float, batch=None, generator=None, progress: bool = True):
    """The linear baseline ``<v, x> + c`` (hinge loss, Adam), batched over seeds; returns
    ``X -> f(X)``. The steps go through :func:`companions.train.progress` (its bar unless
    ``progress`` is False)."""
    v = torch.zeros(X.shape[0], X.shape[2], dtype=X.dtype, device=X.device, requires_grad=True)
    c = torch.zeros(X.shape[0], 1, dtype=X.dtype, device=X.device, requires_grad=True)
    opt = torch.optim.Adam([v, c], lr=lr)
    n = X.shape[1]
    for _ in progress_bar(range(steps), desc="linear baseline", disable=not progress):
        if batch is not None and batch < n:
            idx = torch.randint(n, (batch,), generator=generator).to(X.device)
            Xb, yb = X[:, idx], y[:, idx]
        else:
            Xb, yb = X, y
        loss = seedwise_hinge(torch.einsum("snd,sd->sn", Xb, v) + c, yb).sum()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    v, c = v.detach(), c.detach()
    return lambda Xe: torch.einsum("snd,sd->sn", Xe, v) + c


__all__ = [
    "HINGE_SLOPE_AT_ZERO",
    "Net",
    "symmetric_init",
    "hidden",
    "forward",
    "accuracy",
    "seedwise_hinge",
    "smooth_hinge",
    "smooth_hinge_slope",
    "SMOOTH_HINGE_CURVATURE",
    "simplified_gradient",
    "cone_cosine",
    "feature_hits",
    "first_step",
    "autograd_step",
    "train",
    "ntk_output",
    "train_ntk",
    "train_linear",
]
