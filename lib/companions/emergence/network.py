"""The two-layer network (2.2), its smoothed hinge loss (2.3), and the training process (2.4).

``g(x) = sum_{i=1}^{2m} a_i sigma(<w_i, x> + b_i)`` with the truncated ReLU
``sigma(z) = min(1, max(z, 0))``. The loss injects Gaussian noise ``xi ~ N(0, sigma_xi^2)`` inside
each neuron; the expectation is taken analytically:
``E_xi sigma(z + xi) = F(z) - F(z - 1)`` with ``F(u) = u Phi(u/s) + s phi(u/s)``, whose derivative
``Phi(z/s) - Phi((z-1)/s)`` is ``E_xi I[z + xi in (0, 1)]`` of Lemma A.6, (A.19)-(A.21).

Training (2.4):
``theta^(t) = theta^(t-1) - eta^(t) grad(L(g; sigma_xi^(t)) + R(g; lambda_a^(t), lambda_w^(t)))``
with ``R = sum_i lambda_a a_i^2 + lambda_w ||w_i||^2`` (biases are not regularised). The first two
steps use large weight decay (lambda_w^(1) = 1/(2 eta^(1)), lambda^(2) = 1/2 with eta^(2) = 1),
which erases the previous first-layer weights; the source gives two versions of the first step,
(A.214)-(A.215) (Lemma A.17) and (A.274)-(A.276) (Theorem A.20), both available as ``schedule``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from companions.train import progress as progress_bar

SCHEDULES = ("A.214", "A.274")
LATE_OPTIMIZERS = ("theory", "adam")


@dataclass
class Params:
    """``W`` (2m, d), ``b`` (2m,), ``a`` (2m,)."""

    W: torch.Tensor
    b: torch.Tensor
    a: torch.Tensor

    def detach(self) -> "Params":
        return Params(self.W.detach().clone(), self.b.detach().clone(), self.a.detach().clone())

    def to(self, dtype: torch.dtype) -> "Params":
        """The parameters in ``dtype`` (the same tensors when they are in it already)."""
        return Params(self.W.to(dtype), self.b.to(dtype), self.a.to(dtype))

    @property
    def width(self) -> int:
        return self.W.shape[0]


def symmetric_init(
    m: int,
    d: int,
    *,
    k: int,
    sigma_tilde: float,
    gamma: float,
    generator: torch.Generator,
    dtype=torch.float64,
    device="cpu",
) -> Params:
    """The "unbiased" initialisation of Section 2.3.1: for i in [m], ``w_i ~ N(0, sigma_w^2 I)``
    with ``sigma_w = 1/k``, ``b_i ~ N(0, sigma_b^2)`` with ``sigma_b = 1/k^2``,
    ``a_i ~ N(0, sigma_a^2)`` with ``sigma_a = sigma~^2 / (gamma k^2)``; then ``w_{m+i} = w_i``,
    ``b_{m+i} = b_i``, ``a_{m+i} = -a_i``, so that ``g^(0) = 0``."""
    if gamma <= 0:
        raise ValueError(
            f"parameter 'gamma' = {gamma} is not allowed: "
            "sigma_a = sigma~^2/(gamma k^2) needs gamma > 0"
        )
    W = torch.randn(m, d, generator=generator, dtype=torch.float64) / k
    b = torch.randn(m, generator=generator, dtype=torch.float64) / k**2
    a = torch.randn(m, generator=generator, dtype=torch.float64) * sigma_tilde**2 / (gamma * k**2)
    W, b, a = torch.cat([W, W]), torch.cat([b, b]), torch.cat([a, -a])
    return Params(
        W.to(device=device, dtype=dtype),
        b.to(device=device, dtype=dtype),
        a.to(device=device, dtype=dtype),
    )


def truncated_relu(z: torch.Tensor) -> torch.Tensor:
    """``sigma(z) = min(1, max(z, 0))`` of (2.2)."""
    return z.clamp(0.0, 1.0)


def smoothed_relu(z: torch.Tensor, s: float) -> torch.Tensor:
    """``E_xi sigma(z + xi)``, ``xi ~ N(0, s^2)``: ``F(z) - F(z - 1)``,
    ``F(u) = u Phi(u/s) + s phi(u/s)`` (the expectation inside (2.3)); the plain truncated ReLU when
    ``s = 0``."""
    if s == 0:
        return truncated_relu(z)

    def F(u):
        t = u / s
        return u * torch.special.ndtr(t) + s * torch.exp(-0.5 * t * t) / math.sqrt(2 * math.pi)

    return F(z) - F(z - 1)


def smoothed_relu_derivative(z: torch.Tensor, s: float) -> torch.Tensor:
    """``E_xi I[z + xi in (0, 1)] = Phi(z/s) - Phi((z-1)/s)`` (the factor in (A.19)-(A.20));
    ``I[z in (0, 1)]`` when ``s = 0``."""
    if s == 0:
        return ((z > 0) & (z < 1)).to(z.dtype)
    return torch.special.ndtr(z / s) - torch.special.ndtr((z - 1) / s)


def preactivations(p: Params, X: torch.Tensor) -> torch.Tensor:
    """``<w_i, x> + b_i`` for every input and neuron: ``(n, 2m)``, or ``(S, n, 2m)`` for ``S``
    networks stacked along a leading axis (``W`` of shape ``(S, 2m, d)``, ``X`` of
    ``(S, n, d)``)."""
    return X @ p.W.mT + p.b.unsqueeze(-2)


def _times_a(hidden: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
    """``sum_i a_i hidden_i`` over the last axis (a matrix-vector product, stacked or not)."""
    return (hidden @ a.unsqueeze(-1)).squeeze(-1)


def forward(p: Params, X: torch.Tensor, s: float = 0.0) -> torch.Tensor:
    """``g(x; xi)`` of (2.3) (``s = sigma_xi``; ``s = 0`` is the network (2.2))."""
    return _times_a(smoothed_relu(preactivations(p, X), s), p.a)


def features(p: Params, X: torch.Tensor) -> torch.Tensor:
    """The neurons' outputs ``sigma(<w_i, x> + b_i)``: the learned features."""
    return truncated_relu(preactivations(p, X))


def hinge(y: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """``l(y, y^) = max{1 - y y^, 0}`` averaged (2.3)."""
    return (1 - y * out).clamp(min=0).mean()


def stacked_hinge(y: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """The hinge loss averaged over the last axis and summed over the leading ones: the sum of
    the losses of networks stacked along a leading axis, so that each one's gradient is its own
    (:func:`hinge` for a single network)."""
    return (1 - y * out).clamp(min=0).mean(-1).sum()


def draw_batch(n: int, batch: int, generator, device) -> torch.Tensor:
    """Minibatch indices: ``min(batch, n)`` draws from ``range(n)`` with ``generator``, or, with a
    list of generators (one per stacked network), a row of draws from each."""
    size = (min(batch, n),)
    if isinstance(generator, (list, tuple)):
        return torch.stack([torch.randint(n, size, generator=g) for g in generator]).to(device)
    return torch.randint(n, size, generator=generator).to(device)


def take(X: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """The rows ``idx`` of ``X``; with stacked data (a leading axis) and one row of indices per
    network, each network's own rows."""
    if idx.dim() == 1:
        return X[idx]
    return X[torch.arange(X.shape[0], device=X.device).unsqueeze(1), idx]


def as_number(v):
    """A float, or a list of floats for a tensor with a value per stacked network."""
    if isinstance(v, torch.Tensor) and v.dim():
        return v.tolist()
    if isinstance(v, (list, tuple)):
        return [float(x) for x in v]
    return float(v)


def accuracies(out: torch.Tensor, y: torch.Tensor):
    """The fraction of ``sign(out) == y``: a float, or a list of floats for stacked networks."""
    acc = (torch.sign(out) == y).double().mean(-1)
    return acc.tolist() if acc.dim() else float(acc)


def accuracy(p: Params, X: torch.Tensor, y: torch.Tensor):
    """The network's accuracy on ``(X, y)``: a float, or a list per stacked network."""
    return accuracies(forward(p, X), y)


def gradients(
    p: Params, X: torch.Tensor, y: torch.Tensor, s: float, weights: torch.Tensor | None = None
) -> Params:
    """``grad_theta L(g; sigma_xi)`` on the sample ``(X, y)``, written as in Lemma A.6:
    with ``u = y I[y g(x; xi) <= 1]`` and ``z = <w_i, x> + b_i``,
    ``dL/dw_i = -a_i E{u E_xi I[z + xi in (0,1)] x}`` (A.19), the same without ``x`` for ``b_i``
    (A.20), and ``dL/da_i = -E{u E_xi sigma(z + xi)}`` (A.21).
    ``weights`` (summing to 1) replace the uniform average: with the probabilities of an enumerated
    support they give the exact population gradient."""
    z = preactivations(p, X)
    hidden = smoothed_relu(z, s)  # (n, 2m), used twice
    out = _times_a(hidden, p.a)
    u = y * (y * out <= 1).to(X.dtype)
    u = u / X.shape[-2] if weights is None else u * weights
    act = smoothed_relu_derivative(z, s) * u.unsqueeze(-1)  # (n, 2m)
    gW = -(p.a.unsqueeze(-1) * (act.mT @ X))
    gb = -(p.a * act.sum(-2))
    ga = -_times_a(hidden.mT, u)
    return Params(gW, gb, ga)


def gd_step(
    p: Params,
    X: torch.Tensor,
    *,
    y: torch.Tensor,
    eta: float,
    lam_a: float,
    lam_w: float,
    s: float,
    weights: torch.Tensor | None = None,
) -> Params:
    """One update (2.4), written literally: ``theta - eta (grad L + grad R)``, with
    ``grad R = (2 lambda_a a, 2 lambda_w w, 0)``."""
    g = gradients(p, X, y, s, weights)
    return Params(
        p.W - eta * (g.W + 2 * lam_w * p.W), p.b - eta * g.b, p.a - eta * (g.a + 2 * lam_a * p.a)
    )


def schedule(name: str, k: int, m: int, sigma_tilde: float, gamma: float, T: int) -> dict:
    """The hyperparameters of the first two steps and of the later steps.

    ``'A.214'`` (Lemma A.17, (A.214)-(A.215)): ``eta^(1) = gamma^2 sigma~ / (k m^3)``,
    ``sigma_xi = k^{-3/2}``;
    ``'A.274'`` (Theorem A.20, (A.274)-(A.276)): ``eta^(1) = gamma^2 sigma~^2 / (k m^3)``,
    ``sigma_xi = 1/k^2``.
    Both: ``lambda_a^(1) = 0``, ``lambda_w^(1) = 1/(2 eta^(1))``; ``eta^(2) = 1``,
    ``lambda^(2) = 1/2``; later steps ``eta = k^2 / (T m^{1/3})``,
    ``lambda <= k^3 / (sigma~ m^{1/3})``, ``sigma_xi = 0`` (A.276).
    """
    if name not in SCHEDULES:
        raise ValueError(
            f"parameter 'schedule' = {name!r} is not allowed: expected one of {SCHEDULES}"
        )
    if name == "A.214":
        eta1, s = gamma**2 * sigma_tilde / (k * m**3), k**-1.5
    else:
        eta1, s = gamma**2 * sigma_tilde**2 / (k * m**3), k**-2.0
    return {
        "step1": dict(eta=eta1, lam_a=0.0, lam_w=1 / (2 * eta1), s=s),
        "step2": dict(eta=1.0, lam_a=0.5, lam_w=0.5, s=s),
        "late": dict(
            eta=k**2 / (T * m ** (1 / 3)), lam_max=k**3 / (sigma_tilde * m ** (1 / 3)), s=0.0
        ),
    }


def first_two_steps(
    p0: Params, X: torch.Tensor, y: torch.Tensor, sched: dict, weights: torch.Tensor | None = None
) -> tuple[Params, Params]:
    """The two large-weight-decay ("forgetful") steps on the batch ``(X, y)`` (or on an enumerated
    support with its probabilities as ``weights``): ``(theta^(1), theta^(2))``."""
    p1 = gd_step(p0, X, y=y, **sched["step1"], weights=weights)
    p2 = gd_step(p1, X, y=y, **sched["step2"], weights=weights)
    return p1, p2


def class_weights(y: torch.Tensor) -> torch.Tensor:
    """Per-example weights of the class-weighted loss (A.293) of the general setting (Section A.8):
    ``alpha_v = 1 / (2 Pr[y = v])`` with empirical class frequencies, normalised to sum to 1
    (per row for stacked labels, one row per network)."""
    if not bool(((y == 1) | (y == -1)).all()):
        bad = sorted({float(v) for v in y[(y != 1) & (y != -1)].unique()})[:3]
        raise ValueError(f"parameter 'y' must hold labels +1 and -1 only (found {bad})")
    pos = (y > 0).to(y.dtype)
    n_pos, n_neg = pos.sum(-1, keepdim=True), (1 - pos).sum(-1, keepdim=True)
    if bool((n_pos == 0).any() or (n_neg == 0).any()):
        raise ValueError("parameter 'y' has a single class: class weights (A.293) need both")
    return pos / (2 * n_pos) + (1 - pos) / (2 * n_neg)


def cosines(W: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """``cos(w_i, v)`` for every row of ``W`` (stacked: ``W`` of shape ``(S, 2m, d)`` and one ``v``
    per network, ``(S, d)``)."""
    dot = _times_a(W, v)
    return dot / (W.norm(dim=-1) * v.norm(dim=-1, keepdim=True)).clamp_min(
        torch.finfo(W.dtype).tiny
    )


def train_late(
    p2: Params,
    X: torch.Tensor,
    *,
    y: torch.Tensor,
    steps: int,
    batch: int,
    generator: torch.Generator,
    optimizer: str = "adam",
    lr: float | None = None,
    lam: float = 0.0,
    eval_every: int = 10,
    evaluate=None,
    desc: str = "network",
    progress: bool = True,
    train_params=("W", "b", "a"),
):
    """Steps t > 2 on minibatches of ``(X, y)`` with ``sigma_xi = 0``. Several networks train at
    once when their parameters and data are stacked along a leading axis, each on its own
    minibatches (``generator``: one per network), with the same updates as one by one.

    ``optimizer='theory'``: plain SGD with the caller's ``lr`` (the theory's ``k^2/(T m^{1/3})``)
    and weight decay ``lam`` as in (2.4); ``optimizer='adam'``: Adam (the practical choice).
    ``evaluate(params) -> dict`` is called every ``eval_every`` steps and at the end; returns
    ``(params, history)`` with ``history = {'step': [...], <metric>: [...]}``.
    """
    if optimizer not in LATE_OPTIMIZERS:
        raise ValueError(
            f"parameter 'optimizer' = {optimizer!r} is not allowed: "
            f"expected one of {LATE_OPTIMIZERS}"
        )
    tensors = {
        name: getattr(p2, name).detach().clone().requires_grad_(name in train_params)
        for name in ("W", "b", "a")
    }
    p = Params(tensors["W"], tensors["b"], tensors["a"])
    trainable = [tensors[name] for name in train_params]
    opt = (
        torch.optim.SGD(trainable, lr=lr)
        if optimizer == "theory"
        else torch.optim.Adam(trainable, lr=lr or 1e-2)
    )
    n = X.shape[-2]
    history: dict[str, list] = {"step": []}

    def record(step):
        if evaluate is not None:
            with torch.no_grad():
                values = evaluate(p)
            history["step"].append(step)
            for key, v in values.items():
                history.setdefault(key, []).append(as_number(v))

    record(0)
    for step in progress_bar(range(1, steps + 1), desc=desc, disable=not progress, mininterval=0.5):
        idx = draw_batch(n, batch, generator, X.device)
        loss = stacked_hinge(take(y, idx), forward(p, take(X, idx)))
        if lam:
            loss = loss + lam * ((p.a**2).sum() + (p.W**2).sum())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % eval_every == 0 or step == steps:
            record(step)
    return p.detach(), history
