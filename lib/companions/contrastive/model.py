"""The Transformer-MLP encoder of eq (4) / [000](3): frozen identity attention, then ``m``
bilateral-ReLU neurons with a scheduled bias.

``h_i(X) = sum_r BReLU_{b_i}(<w_i, Attn(x^(r), X, X)>)``, ``BReLU_b(s) = ReLU(s-b) - ReLU(-s-b)``.
Only ``W = [w_1..w_m]`` is trained. ``W_Q = W_K = W_V = I`` are frozen ([000]: "we fix attention
layer weights to identity matrices"; [001] Algorithm 1 initialises them to I and analyses only w_i).

``attention`` (a named choice, the papers give no score scaling):

* ``"uniform"`` (default) -- every query attends equally to all tokens (``delta = 1`` in Lemma E.7),
  so each attention output is the token mean and ``h_i = L BReLU_b(<w_i, xbar>)``. The closed forms
  of Stage 1 are exact for it, and it costs ``L`` times less.
* ``"softmax"`` -- scores ``att_scale <x^(r), x^(l)>``, softmax over ``l``.

Every weight tensor has a leading run dimension: ``W`` is ``(R, m, d1)``, ``b`` is ``(R, m)``.
``mask`` (``(R, m)``, optional) multiplies the neurons' outputs in the forward pass: the hook for a
forward-pass neuron mask (pruning, Algorithm 1) without touching the training step.
"""

from __future__ import annotations

import copy
import math

import torch


def brelu(s: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``BReLU_b(s) = ReLU(s - b) - ReLU(-s - b)``; odd in ``s``, the identity at ``b = 0``."""
    return torch.relu(s - b) - torch.relu(-s - b)


def init_weights(
    runs: int,
    m: int,
    *,
    d1: int,
    sigma0: float,
    generator: torch.Generator,
    dtype=torch.float64,
    device="cpu",
):
    """``w_i^(0) ~ N(0, sigma0^2 I_{d1})`` (Algorithm 1, line 1), shape ``(R, m, d1)``."""
    W = (
        torch.randn(runs, m, d1, generator=generator, dtype=torch.float64, device=generator.device)
        * sigma0
    )
    return W.to(device=device, dtype=dtype)


def attention_output(tokens: torch.Tensor, att_scale: float) -> torch.Tensor:
    """Single-head self-attention with identity weights, every token a query: ``(R, K, L, d1)``."""
    scores = att_scale * tokens @ tokens.transpose(-1, -2)
    return torch.softmax(scores, dim=-1) @ tokens


def preactivations(W: torch.Tensor, views: torch.Tensor, att_scale: float = 0.0) -> torch.Tensor:
    """``<w_i, Attn(...)_r>``: ``(R, K, m)`` for pooled views (uniform attention), else
    ``(R, K, L, m)``."""
    if views.dim() == 3:
        return views @ W.transpose(-1, -2)
    Z = attention_output(views, att_scale)
    return torch.einsum("rkle,rme->rklm", Z, W)


def features(
    W: torch.Tensor,
    views: torch.Tensor,
    b: torch.Tensor,
    L: int,
    att_scale: float = 0.0,
    mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """The embedding ``f(X) = (h_1..h_m)``, ``(R, K, m)`` (eq (4)). Pooled views carry the token
    mean, whose attention output is the same for every query, so the sum over ``L`` queries is ``L``
    times one term."""
    s = preactivations(W, views, att_scale)
    if views.dim() == 3:
        h = L * brelu(s, b[:, None, :])
    else:
        h = brelu(s, b[:, None, None, :]).sum(-2)
    return h if mask is None else h * mask[:, None, :].to(h.dtype)


def alignment(W: torch.Tensor, M: torch.Tensor) -> torch.Tensor:
    """``A_ij = <w_i, M_j>``, ``(R, m, d)``."""
    return W @ M


def cosines(W: torch.Tensor, M: torch.Tensor) -> torch.Tensor:
    """``cos(w_i, M_j) = <w_i, M_j> / ||w_i||`` (``M_j`` unit), ``(R, m, d)``."""
    return alignment(W, M) / W.norm(dim=-1, keepdim=True).clamp_min(1e-300)


def noise_norm(W: torch.Tensor, M: torch.Tensor) -> torch.Tensor:
    """``||P_perp w_i||`` with ``P_perp = I - M M^T``: ``sqrt(||w||^2 - ||M^T w||^2)``,
    ``(R, m)``."""
    sq = (W * W).sum(-1) - (alignment(W, M) ** 2).sum(-1)
    return sq.clamp_min(0).sqrt()


def bias_constant(d: int, c_b: float) -> float:
    """``c_b sqrt(2 log d / d)``: the ratio ``b_i^(T1) / ||w_i^(T1)||`` (from (284) and Thm
    C.1(b,c)); ``c_b`` scales it down at small ``d``, where ``sqrt(2 log 9 / 9) = 0.70`` silences
    every neuron."""
    return c_b * math.sqrt(2 * math.log(d) / d)


#: Bias rules after ``T2`` (the papers give none): ``"norm"``, this book's ``b`` proportional to
#: ``||w||``; ``"frozen"``, ``b`` held at its ``T2`` value.
POST_T2_RULES = ("norm", "frozen")


class BiasSchedule:
    """The bias of every neuron, per run, through the three stages (the papers state it in proofs
    only).

    * Stage 1 (``t <= T1``): ``b = 0`` ([001] Lemma F.3, [000] Lemma D.1: "so that b_i^(t) = 0").
    * At ``T1``: ``b_i = c_b sqrt(2 log d / d) ||w_i||`` (equality in (284), forced by Thm C.1 /
      Lemma D.1).
    * Stage 2 (``T1 < t <= T2``), eq (285) / [000](70):
      ``b <- max(b (1 + eta/d), b ||w^(t+1)|| / ||w^(t)||)``.
    * Stage 3 (after ``T2``): not given by the papers (Theorem E.1(g) only bounds ``b`` from
      below). This book's rule, ``post_t2 = "norm"``: ``b`` stays proportional to ``||w_i||`` (the
      second branch of (285) only), since the first branch, kept forever, silences every neuron.
      The other arm, ``post_t2 = "frozen"``: ``b`` is held at its value at ``T2``.

    ``T1`` per run: ``t1_rule = "mean"`` -- first ``t`` with mean over neurons of
    ``||M^T w_i||^2 / ||w_i||^2 >= 1/2`` ((34) asks it of every neuron: ``"min"``), or a fixed
    ``t1_steps > 0``. ``T2`` per run: first ``t`` with ``max_i ||w_i||^2 >= d ||w_i^(T1)||^2`` (61).
    """

    def __init__(
        self,
        runs: int,
        m: int,
        *,
        d: int,
        eta: float,
        c_b: float,
        t1_rule: str = "mean",
        t1_steps: int = 0,
        dtype=torch.float64,
        device="cpu",
        post_t2: str = "norm",
    ):
        if t1_rule not in ("mean", "min"):
            raise ValueError(
                f"parameter 't1_rule' = {t1_rule!r} is not allowed: expected one of 'mean', 'min'"
            )
        if post_t2 not in POST_T2_RULES:
            raise ValueError(
                f"parameter 'post_t2' = {post_t2!r} is not allowed: expected one of {POST_T2_RULES}"
            )
        self.d, self.eta, self.c_b, self.t1_rule, self.t1_steps = d, eta, c_b, t1_rule, t1_steps
        self.post_t2 = post_t2
        self.b = torch.zeros(runs, m, dtype=dtype, device=device)
        self.stage = torch.ones(runs, dtype=torch.long, device=device)
        self.t1 = torch.full((runs,), -1, dtype=torch.long, device=device)
        self.t2 = torch.full((runs,), -1, dtype=torch.long, device=device)
        self.norm_t1 = torch.zeros(runs, m, dtype=dtype, device=device)

    _STATE = ("b", "stage", "t1", "t2", "norm_t1")

    def to(self, device) -> "BiasSchedule":
        """Move the per-run state to ``device`` (in place; returns ``self``)."""
        for name in self._STATE:
            setattr(self, name, getattr(self, name).to(device))
        return self

    @classmethod
    def cat(cls, parts: list["BiasSchedule"]) -> "BiasSchedule":
        """One schedule for the runs of ``parts`` (same settings), joined along the run
        dimension."""
        out = copy.copy(parts[0])
        for name in cls._STATE:
            setattr(out, name, torch.cat([getattr(p, name).cpu() for p in parts]))
        return out

    def feature_fraction(self, W: torch.Tensor, M: torch.Tensor) -> torch.Tensor:
        frac = (alignment(W, M) ** 2).sum(-1) / (W * W).sum(-1).clamp_min(1e-300)
        return frac.mean(-1) if self.t1_rule == "mean" else frac.min(-1).values

    @torch.no_grad()
    def update(self, t: int, W_old: torch.Tensor, W_new: torch.Tensor, M: torch.Tensor) -> None:
        """Advance the bias after the step ``W_old -> W_new`` taken at step ``t``."""
        n_old, n_new = W_old.norm(dim=-1), W_new.norm(dim=-1)
        ratio = n_new / n_old.clamp_min(1e-300)
        s2, s3 = (self.stage == 2)[:, None], (self.stage == 3)[:, None]
        grown = torch.maximum(self.b * (1 + self.eta / self.d), self.b * ratio)
        after = self.b * ratio if self.post_t2 == "norm" else self.b
        self.b = torch.where(s2, grown, torch.where(s3, after, self.b))
        # stage 2 -> 3 at T2 (61)
        reach = (n_new**2 >= self.d * self.norm_t1**2).any(-1) & (self.stage == 2)
        self.t2 = torch.where(reach, torch.full_like(self.t2, t + 1), self.t2)
        self.stage = torch.where(reach, torch.full_like(self.stage, 3), self.stage)
        # stage 1 -> 2 at T1
        if self.t1_steps > 0:
            start = torch.full_like(self.stage, t + 1 >= self.t1_steps, dtype=torch.bool)
        else:
            start = self.feature_fraction(W_new, M) >= 0.5
        start = start & (self.stage == 1)
        self.t1 = torch.where(start, torch.full_like(self.t1, t + 1), self.t1)
        self.norm_t1 = torch.where(start[:, None], n_new, self.norm_t1)
        self.b = torch.where(start[:, None], bias_constant(self.d, self.c_b) * n_new, self.b)
        self.stage = torch.where(start, torch.full_like(self.stage, 2), self.stage)
