"""The learner of eqs. (2)/(14) and (176), vectorised over seeds, and what the proofs track.

``F_c(X) = sum_r a_{c,r} sum_p relu(<w_{c,r}, x_p> + b_{c,r})`` with ``a = 1`` frozen: a sum over
patches (not a mean), each output ``c`` with its own ``m`` neurons. Weights ``W`` have shape
``(S, C m, d)`` (output ``c`` owns rows ``c m .. c m + m - 1``), biases ``b`` shape ``(S, C m)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from companions.train import progress

AGGREGATIONS = ("max", "sum", "logsumexp")


@dataclass
class Net:
    W: torch.Tensor  # (S, C m, d)
    b: torch.Tensor  # (S, C m)
    C: int  # outputs
    m: int  # neurons per output

    def clone(self) -> "Net":
        return Net(self.W.clone(), self.b.clone(), self.C, self.m)


def init(
    S: int,
    C: int,
    *,
    m: int,
    d: int,
    sigma0: float,
    tau: float,
    g: torch.Generator,
    dtype: torch.dtype = torch.float32,
    device: str | torch.device = "cpu",
) -> Net:
    """``w ~ N(0, sigma0^2 I)``, ``b = -tau sigma0`` (App. B.2; the paper's
    ``tau = c_b sqrt(log d)``)."""
    for name, v in (("S", S), ("C", C), ("m", m), ("d", d)):
        if v < 1:
            raise ValueError(f"parameter {name!r} = {v} is not allowed: expected >= 1")
    if sigma0 <= 0:
        raise ValueError(f"parameter 'sigma0' = {sigma0} is not allowed: expected > 0")
    W = torch.randn(S, C * m, d, generator=g, dtype=dtype) * sigma0
    b = torch.full((S, C * m), -tau * sigma0, dtype=dtype)
    return Net(W.to(device), b.to(device), C, m)


def preactivations(net: Net, X: torch.Tensor) -> torch.Tensor:
    """``<w_r, x_p> + b_r`` of shape (S, N, P, C m)."""
    S, N, P, d = X.shape
    Z = torch.bmm(X.reshape(S, N * P, d), net.W.transpose(1, 2))
    Z += net.b[:, None, :]  # in place: the product is the largest array of a step
    return Z.reshape(S, N, P, -1)


def firing_rates(net: Net, X: torch.Tensor) -> tuple[float, float]:
    """The fractions of (neuron, patch) pairs of ``X`` on which eq. (39)'s two indicators fire:
    ``sigma'`` of the ReLU, ``1{<w, x> + b > 0}``, and the printed
    ``1{<w, x> >= b}``. Counted seed by seed, in place (at the paper preset the preactivations of
    all seeds take 4 GiB)."""
    relu = printed = n = 0
    for s in range(net.W.shape[0]):
        Z = preactivations(Net(net.W[s : s + 1], net.b[s : s + 1], net.C, net.m), X[s : s + 1])
        n += Z.numel()
        relu += int((Z > 0).sum())  # <w, x> + b > 0
        Z -= 2 * net.b[s, None, None, None, :]  # <w, x> - b
        printed += int((Z >= 0).sum())
    return relu / n, printed / n


def forward(net: Net, X: torch.Tensor, chunk: int = 512) -> torch.Tensor:
    """``F`` of shape (S, N, C), eq. (2) (coarse) or (176) (fine); in chunks of samples. The
    chunks go through :func:`companions.train.progress` without a bar, so a dry run evaluates the
    first only: ``F`` then covers the first ``chunk`` samples (see :func:`seen`)."""
    out = []
    for i in progress(range(0, X.shape[1], chunk), desc="forward", disable=True):
        h = preactivations(net, X[:, i : i + chunk]).relu_().sum(2)  # (S, n, C m): sum over patches
        out.append(h.reshape(h.shape[0], h.shape[1], net.C, net.m).sum(-1))
    return torch.cat(out, 1)


def seen(y: torch.Tensor, F: torch.Tensor) -> torch.Tensor:
    """The labels ``y`` (S, N) of the samples that ``F`` (S, n, C) scores: all of them, except
    in a dry run, where :func:`forward` stops after its first chunk."""
    return y[:, : F.shape[1]]


def aggregate(F: torch.Tensor, groups: int, how: str = "max") -> torch.Tensor:
    """Superclass scores (S, N, 2) from ``2 groups`` outputs: the max of Theorem 5.2
    (``hat F_y = max_c F_{y,c}``), or this book's alternatives, the sum and the log-sum-exp."""
    if how not in AGGREGATIONS:
        raise ValueError(
            f"parameter 'how' = {how!r} is not allowed: expected one of {AGGREGATIONS}"
        )
    if F.shape[-1] != 2 * groups:
        raise ValueError(f"F has {F.shape[-1]} outputs, not 2 groups = {2 * groups}")
    G = F.reshape(*F.shape[:-1], 2, groups)
    if how == "max":
        return G.amax(-1)
    if how == "sum":
        return G.sum(-1)
    return torch.logsumexp(G, -1)


def accuracy(scores: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Per-seed accuracy (S,): a tie counts as a mistake (the paper's ``P[F_y <= F_y']``)."""
    right = scores.gather(-1, labels[..., None]).squeeze(-1)
    other = scores.scatter(-1, labels[..., None], -math.inf).amax(-1)
    return (right > other).float().mean(-1)


def feature_projections(net: Net, feats: torch.Tensor) -> torch.Tensor:
    """``<w_r, v>`` for the dictionary indices ``feats``: shape (S, C m, F)."""
    return net.W[:, :, feats]


def detectors(W0: torch.Tensor, feats: torch.Tensor, level: float) -> torch.Tensor:
    """Neurons with ``<w_r^(0), v> >= level`` for each feature: bool (S, C m, F). With
    ``level = tau sigma0 + delta`` these stand for S^{*(0)}(v) and with ``tau sigma0 - delta`` for
    S^{(0)}(v) (Definition C.1, its +-1/log^5 d slack replaced by ``delta``)."""
    return W0[:, :, feats] >= level


def growth(W: torch.Tensor, W0: torch.Tensor, feats, det: torch.Tensor, C: int):
    """``A_{o,v}(t)``: mean over detectors of output ``o`` of ``<w_r(t) - w_r(0), v>``,
    shape (S, C, F); NaN where an output has no detector of ``v``."""
    S, M, Fn = det.shape
    delta = (W - W0)[:, :, feats] * det
    tot = delta.reshape(S, C, M // C, Fn).sum(2)
    cnt = det.reshape(S, C, M // C, Fn).sum(2).to(tot.dtype)
    return torch.where(cnt > 0, tot / cnt.clamp(min=1), torch.full_like(tot, math.nan))


def response(net: Net, feats) -> torch.Tensor:
    """``R_o(v) = sum_r relu(<w_{o,r}, v> + b_{o,r})``: each output's response to a clean unit
    ``v`` patch (the representation strength of eqs. 7-13), shape (S, C, F)."""
    Z = torch.relu(net.W[:, :, feats] + net.b[..., None])
    S, M, Fn = Z.shape
    return Z.reshape(S, net.C, net.m, Fn).sum(2)


def singleton_detectors(W0: torch.Tensor, feats: torch.Tensor, high: float, low: float):
    """Neurons above ``high`` on one feature and below ``low`` on every other feature of
    ``feats``: bool (S, C m, F). The finite-size form of S^{*(0)}(v) (Definition C.1; the
    dictionary elements that are no feature never carry a patch's signal, so they do not count)."""
    proj = W0[:, :, feats]
    above = proj >= high
    others_low = (proj < low).sum(-1, keepdim=True) - (proj < low).to(torch.long)
    return above & (others_low == len(feats) - 1)


def update_spread(W: torch.Tensor, W0: torch.Tensor, single: torch.Tensor, C: int) -> torch.Tensor:
    """Eqs. (32), (34), (201), (204): the detectors of one feature in one output receive identical
    updates. Per seed (S,), the largest ``||dw_r - mean dw|| / ||mean dw||`` over the neurons of
    ``single`` (S, C m, F) grouped by (output, feature), with ``dw = W - W0`` in float64; NaN
    where no group has two neurons, or nothing has moved yet."""
    S, M, Fn = single.shape
    out = torch.full((S,), math.nan, dtype=torch.float64)
    s_idx, r_idx, f_idx = single.nonzero(as_tuple=True)
    if s_idx.numel() == 0:
        return out
    D = (W - W0)[s_idx, r_idx].double()  # (n, d): the updates of the listed neurons
    group = (s_idx * C + r_idx // (M // C)) * Fn + f_idx
    _, inv, counts = torch.unique(group, return_inverse=True, return_counts=True)
    mean = torch.zeros(len(counts), D.shape[1], dtype=D.dtype, device=D.device)
    mean = mean.index_add_(0, inv, D) / counts[:, None].to(D.dtype)
    norm = mean[inv].norm(dim=1)
    rel = (D - mean[inv]).norm(dim=1) / norm
    keep = (counts[inv] >= 2) & (norm > 0)
    for s in range(S):
        vals = rel[keep & (s_idx == s)]
        if vals.numel():
            out[s] = float(vals.max())
    return out
