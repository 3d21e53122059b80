"""Pruning as a remedy for imbalance: [001] Algorithm 1, eq. (5), Theorem 3.2 and Appendix F.

Algorithm 1 (Forward Magnitude Pruning with Backward Unmasked Update): at iteration ``t`` mask the
fraction ``alpha`` of neurons with the smallest magnitude (line 4), encode with the masked weights
(line 5), and update *all* weights with eq. (5) (line 7). In eq. (5) the logits ``ell'_p, ell'_s``
come from the masked model while the neuron factors ``h_i(Y) grad h_i(X)`` are the unmasked ones
(the proof of Theorem F.1, (184)-(186), uses them so): a pruned neuron keeps its gradient, and
receives a larger one on the pairs whose positive logit the mask has lowered.
``training.gradient(..., mask=)`` computes exactly that; this module decides the mask and records
what it prunes.

Choices the paper leaves open, each a named parameter:

* magnitude: ``||w_i||_2`` (structured neuron pruning, "neurons with the smallest magnitude");
* the number pruned: ``floor(alpha m)`` (Appendix F: ``|P| = alpha m``, ``alpha in [1/m, n/m]``);
* ``every``: the mask is recomputed every ``every`` steps (Algorithm 1 says "at each iteration", the
  text "at each epoch"; one step here is one batch, so ``every = 1`` is the algorithm as written);
* ``start``: the first pruned step (Algorithm 1: 0; Theorem F.1: "starting from the pruning stage
  T4", after the vanilla dynamics have converged);
* ``rule = "oracle"``: a fixed pruned set ``P`` chosen by the caller, as Appendix F assumes
  (``P subset M*_{j*}``), to test the mechanism apart from the selection rule;
* ``rule = "minority"``: the ``floor(alpha m)`` neurons with the largest ``cos^2`` on the minority
  subspace, recomputed like the magnitude rule: the selection Remark 2 says magnitude pruning makes
  ("these neurons are associated with minority features"), made with knowledge of ``M``.

A neuron's *dominant feature* is ``argmax_j cos^2(w_i, M_j)``; it is a *specialist* of that feature
when the ``cos^2`` is at least ``threshold`` (0.25 by default), and *unaligned* otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from companions import losses
from companions.contrastive import data as cdata
from companions.contrastive import model as cmodel
from companions.contrastive import training as ctrain

RULES = ("magnitude", "oracle", "minority")


def pruned_count(m: int, alpha: float) -> int:
    """``floor(alpha m)`` neurons pruned (``|P| = alpha m``, Appendix F); ``alpha`` must lie in
    ``[0, 1)``."""
    if not (isinstance(alpha, (int, float)) and 0 <= alpha < 1):
        raise ValueError(
            f"parameter 'alpha' = {alpha!r} is not allowed: expected a pruning ratio 0 <= alpha < 1"
        )
    return int(math.floor(alpha * m + 1e-9))


def _mask_first(order_key: torch.Tensor, alpha: float) -> torch.Tensor:
    """``(R, m)`` mask, 0 at the ``floor(alpha m)`` neurons of each run that come first when sorted
    by ``order_key`` ascending (ties broken by index), 1 elsewhere."""
    R, m = order_key.shape
    mask = torch.ones(R, m, dtype=order_key.dtype, device=order_key.device)
    k = pruned_count(m, alpha)
    if k:
        mask.scatter_(1, order_key.argsort(dim=-1, stable=True)[:, :k], 0.0)
    return mask


def magnitude_mask(W: torch.Tensor, alpha: float) -> torch.Tensor:
    """Algorithm 1 line 4: ``(R, m)`` mask, 0 at the ``floor(alpha m)`` neurons of smallest
    ``||w_i||`` of each run, 1 elsewhere (ties broken by index)."""
    return _mask_first(W.norm(dim=-1), alpha)


def minority_mask(W: torch.Tensor, M: torch.Tensor, alpha: float, n_maj: int) -> torch.Tensor:
    """``(R, m)`` mask, 0 at the ``floor(alpha m)`` neurons with the largest
    ``sum_{j >= n_maj} cos^2(w_i, M_j)`` (ties broken by index)."""
    return _mask_first(-(cmodel.cosines(W, M)[..., n_maj:] ** 2).sum(-1), alpha)


def dominant_features(W: torch.Tensor, M: torch.Tensor):
    """``(dominant j (R, m), its cos^2 (R, m))`` of every neuron."""
    c2 = cmodel.cosines(W, M) ** 2
    best = c2.max(-1)
    return best.indices, best.values


def specialists(W: torch.Tensor, M: torch.Tensor, threshold: float = 0.25) -> torch.Tensor:
    """``(R, m, d)`` boolean: neuron ``i`` is a specialist of feature ``j`` (dominant feature ``j``,
    ``cos^2 >= threshold``)."""
    dom, c2 = dominant_features(W, M)
    onehot = torch.nn.functional.one_hot(dom, M.shape[-1]).bool()
    return onehot & (c2 >= threshold)[..., None]


def strongest_minority_feature(W: torch.Tensor, M: torch.Tensor, n_maj: int) -> torch.Tensor:
    """Per run, the minority feature ``j*`` with the largest ``max_i cos^2(w_i, M_j)``: the one
    Theorem 3.2 can be about (it needs lucky neurons of ``j*``), ``(R,)``."""
    c2 = cmodel.cosines(W, M) ** 2
    return n_maj + c2[..., n_maj:].max(-2).values.argmax(-1)


def oracle_set(
    W: torch.Tensor, M: torch.Tensor, feature: torch.Tensor, k: int, threshold: float = 0.25
) -> torch.Tensor:
    """Appendix F's pruned set ``P subset M*_{j*}``: per run, up to ``k`` specialists of
    ``feature[r]`` (largest ``cos^2`` first), ``(R, m)`` boolean. Fewer than ``k`` when the run has
    fewer specialists."""
    spec = specialists(W, M, threshold)
    R = W.shape[0]
    own = spec[torch.arange(R), :, feature]  # (R, m)
    score = torch.where(
        own,
        (cmodel.cosines(W, M) ** 2)[torch.arange(R), :, feature],
        torch.full_like(own, -1.0, dtype=W.dtype),
    )
    order = score.argsort(dim=-1, descending=True, stable=True)[:, :k]
    chosen = torch.zeros_like(own)
    chosen.scatter_(1, order, True)
    return chosen & own


@dataclass
class PruneLog:
    """What a :class:`Pruner` masked, one entry per pruned step: the step, and for each run the ids
    of the pruned neurons with their dominant feature, its ``cos^2`` and their norm (``(E, R, k)``
    after :meth:`stack`, ``k`` the most any run pruned; a run that pruned fewer is padded with id
    and feature ``-1``, ``cos^2`` and norm ``nan``)."""

    steps: list = field(default_factory=list)
    ids: list = field(default_factory=list)
    dominant: list = field(default_factory=list)
    cos2: list = field(default_factory=list)
    norm: list = field(default_factory=list)

    def stack(self) -> "PruneLog":
        if isinstance(self.ids, list) and self.ids:
            for name in ("ids", "dominant", "cos2", "norm"):
                setattr(self, name, torch.stack(getattr(self, name)))
            self.steps = torch.tensor(self.steps)
        return self

    def since(self, step: int) -> "PruneLog":
        """The entries of the steps ``>= step``, as a new (stacked) log."""
        self.stack()
        keep = self.steps >= step
        return PruneLog(
            steps=self.steps[keep],
            ids=self.ids[keep],
            dominant=self.dominant[keep],
            cos2=self.cos2[keep],
            norm=self.norm[keep],
        )

    def categories(self, n_maj: int, threshold: float = 0.25) -> dict:
        """Per run, the fraction of pruned neuron-steps that were a minority specialist, a majority
        specialist, or unaligned (``cos^2 <`` ``threshold`` on every feature): ``{name: (R,)}``."""
        self.stack()
        valid = self.ids >= 0
        aligned = (self.cos2 >= threshold) & valid
        minority = aligned & (self.dominant >= n_maj)
        majority = aligned & (self.dominant < n_maj) & (self.dominant >= 0)
        n = valid.sum((0, 2)).clamp_min(1)
        return {
            "minority": minority.sum((0, 2)) / n,
            "majority": majority.sum((0, 2)) / n,
            "unaligned": (valid & ~aligned).sum((0, 2)) / n,
        }

    def times_pruned(self, m: int) -> torch.Tensor:
        """``(R, m)``: how many logged steps each neuron spent pruned."""
        self.stack()
        E, R, k = self.ids.shape
        ids = self.ids.permute(1, 0, 2).reshape(R, E * k)
        counts = torch.zeros(R, m + 1, dtype=torch.long)
        counts.scatter_add_(
            1, torch.where(ids >= 0, ids, m), torch.ones(R, E * k, dtype=torch.long)
        )
        return counts[:, :m]


class Pruner:
    """Algorithm 1's line 4 as the ``masks`` hook of :func:`training.train` /
    :func:`training.resume`.

    ``rule = "magnitude"``: the ``floor(alpha m)`` smallest-norm neurons, recomputed every ``every``
    steps from ``start`` on; ``rule = "minority"``: the same count with the largest ``cos^2`` on the
    minority subspace (features ``n_maj..d-1``), recomputed alike; ``rule = "oracle"``: the fixed
    set ``oracle`` (``(R, m)`` boolean, e.g. :func:`oracle_set`), from ``start`` on. Before
    ``start`` no mask is applied (vanilla training). Every pruned step is recorded in ``self.log``
    (with ``log_every`` > 1, every ``log_every``-th)."""

    def __init__(
        self,
        *,
        alpha: float = 0.1,
        rule: str = "magnitude",
        start: int = 0,
        every: int = 1,
        oracle: torch.Tensor | None = None,
        log_every: int = 1,
        n_maj: int | None = None,
    ):
        if rule not in RULES:
            raise ValueError(f"parameter 'rule' = {rule!r} is not allowed: expected one of {RULES}")
        pruned_count(1, alpha)  # validates alpha
        if rule == "oracle" and oracle is None:
            raise ValueError(
                "parameter 'oracle' is required with rule='oracle': the (R, m) boolean pruned set"
            )
        if rule != "oracle" and oracle is not None:
            raise ValueError("parameter 'oracle' is only used with rule='oracle'")
        if rule == "minority" and not (isinstance(n_maj, int) and n_maj >= 1):
            raise ValueError(
                f"parameter 'n_maj' = {n_maj!r} is required with rule='minority': "
                "the number of majority features (>= 1)"
            )
        for name, value in (("start", start), ("every", every), ("log_every", log_every)):
            if not isinstance(value, int) or value < (0 if name == "start" else 1):
                raise ValueError(
                    f"parameter '{name}' = {value!r} is not allowed: "
                    f"expected an integer >= {0 if name == 'start' else 1}"
                )
        self.alpha, self.rule, self.start, self.every, self.log_every = (
            alpha,
            rule,
            start,
            every,
            log_every,
        )
        self.oracle, self.n_maj = oracle, n_maj
        self.mask = None
        self.log = PruneLog()

    def __call__(self, t: int, W: torch.Tensor, M: torch.Tensor):
        if t < self.start:
            return None
        if self.rule == "oracle":
            if self.mask is None:
                self.mask = (~self.oracle.to(W.device)).to(W.dtype)
        elif self.mask is None or (t - self.start) % self.every == 0:
            self.mask = (
                magnitude_mask(W, self.alpha)
                if self.rule == "magnitude"
                else minority_mask(W, M, self.alpha, self.n_maj)
            )
        if (t - self.start) % self.log_every == 0:
            self._record(t, W, M)
        return self.mask

    @torch.no_grad()
    def _record(self, t, W, M):
        pruned = self.mask == 0
        k = int(pruned.sum(-1).max()) if pruned.numel() else 0
        if k == 0:
            return
        # ids of the pruned neurons, per run; a run that pruned fewer than k is padded with -1
        ids = torch.argsort(pruned.to(torch.int8), dim=-1, descending=True, stable=True)[:, :k]
        valid = pruned.gather(1, ids)
        dom, c2 = dominant_features(W, M)
        nan = torch.tensor(float("nan"))
        self.log.steps.append(t)
        self.log.ids.append(torch.where(valid, ids, -1).cpu())
        self.log.dominant.append(torch.where(valid, dom.gather(1, ids), -1).cpu())
        self.log.cos2.append(torch.where(valid.cpu(), c2.gather(1, ids).float().cpu(), nan))
        self.log.norm.append(
            torch.where(valid.cpu(), W.norm(dim=-1).gather(1, ids).float().cpu(), nan)
        )


def eq5_gradient(
    W: torch.Tensor, b: torch.Tensor, batch: cdata.Batch, s: ctrain.Setup, mask: torch.Tensor
) -> torch.Tensor:
    """Eq. (5) written out, term by term, as a second implementation of the update direction that
    :func:`training.gradient` computes through its surrogate loss:
    ``g_i = c_tau (1/K) sum_k [(ell'_p - 1) h_i(Y_k) + sum_s ell'_s h_i(Y_s)] grad_{w_i} h_i(X_k)``,
    the weights ``ell'`` from the masked model, ``h_i`` and
    ``grad h_i = sum_r 1[|<w_i, z_r>| >= b_i] z_r`` from the full one (``z_r`` the attention
    outputs; uniform attention: ``L`` copies of the token mean)."""
    hx = cmodel.features(W, batch.x, b, s.L, s.att_scale)
    hy = cmodel.features(W, batch.y, b, s.L, s.att_scale)
    S = ctrain.logits(hx * mask[:, None, :], hy * mask[:, None, :], s.tau, s.n_neg)
    C = torch.softmax(S, -1) - torch.eye(s.K, dtype=W.dtype, device=W.device)
    coef = C @ hy  # (R, K, m): [(ell'_p - 1) h_i(Y_k) + sum_s ...]
    if batch.x.dim() == 3:  # uniform attention: L identical outputs
        z = batch.x[:, :, None, :].expand(-1, -1, s.L, -1)
    else:
        z = cmodel.attention_output(batch.x, s.att_scale)  # (R, K, L, d1)
    active = (torch.einsum("rkle,rme->rklm", z, W).abs() >= b[:, None, None, :]).to(W.dtype)
    grad_h = torch.einsum("rklm,rkle->rkme", active, z)  # (R, K, m, d1): grad_{w_i} h_i(X_k)
    return s.c_tau * torch.einsum("rkm,rkme->rme", coef, grad_h) / s.K


# ---------------------------------------------------------------------------------------------
# The mechanism: Lemmas F.1 and F.2 measured on fresh pairs
# ---------------------------------------------------------------------------------------------


def first_order_logit_change(P: torch.Tensor, dS: torch.Tensor) -> torch.Tensor:
    """(211): the first-order change of the positive weights ``ell'_p`` (the diagonal of ``P``, the
    softmax over each anchor's ``B``) when the logits ``S = u / tau`` move by ``dS``:
    ``ell'_p (dS_p - sum_k ell'_k dS_k)``, i.e.
    ``(1/tau)[ell'_p (1 - ell'_p) du_p - ell'_p sum_s ell'_s du_s]``."""
    lp = torch.diagonal(P, dim1=-2, dim2=-1)
    return lp * (torch.diagonal(dS, dim1=-2, dim2=-1) - (P * dS).sum(-1))


@torch.no_grad()
def logit_effect(
    hist,
    s: ctrain.Setup,
    *,
    pruned: torch.Tensor,
    feature: torch.Tensor,
    batches: int,
    generator: torch.Generator,
    shrink: float = 1.0,
    bias: bool = True,
    device=None,
) -> dict:
    """Lemma F.2 and Lemma F.1 on ``batches`` fresh batches of ``s.K`` pairs per run, with the
    weights of ``hist`` and the set ``pruned`` (``(R, m)`` boolean) masked in the forward pass.

    ``D1``: pairs whose anchor carries ``feature[r]`` (``M_{j*}``), ``D2``: the others. ``shrink``:
    the pruned neurons' outputs are multiplied by ``1 - shrink`` (1: pruned; small values: the
    derivative (207) / (211)). ``bias=False`` evaluates the network at ``b = 0`` (the regime in
    which Lemma F.3 and the proof of F.1 compute). ``device``: where to compute (default: the
    weights' device); on CUDA the pairs are drawn there, from a generator seeded by ``generator``.
    Returns per-run means ``(R,)``:

    * ``one_minus_lp`` -- ``{"D1": (full, masked), "D2": (full, masked)}``: ``E[1 - ell'_p]``;
    * ``first_order`` -- ``{"D1": ..., "D2": ...}``: the mean of (211)'s ``Delta ell'_p``, against
      the actual mean change ``actual``;
    * ``pos`` / ``neg`` -- ``E[sum_{i in P} h_i(X) h_i(Y)]`` and ``E[sum_{i in P} h_i(X) h_i(X_s)]``
      (Lemma F.1 (a), (b)), with their standard errors ``pos_se`` / ``neg_se``;
    * ``frac_D1`` -- the fraction of anchors in ``D1``.
    """
    dev = torch.device(device) if device is not None else hist.W.device
    if dev.type == "cuda" and generator.device.type != "cuda":
        generator = torch.Generator(device=dev).manual_seed(
            int(torch.randint(0, 2**62, (1,), generator=generator))
        )
    W, R = hist.W.to(dev), hist.W.shape[0]
    M = hist.M.to(device=dev, dtype=W.dtype)
    b = hist.b_final.to(dev) if bias else torch.zeros_like(hist.b_final, device=dev)
    pruned, feature = pruned.to(dev), feature.to(dev)
    keep = 1.0 - shrink * pruned.to(W.dtype)
    acc = {
        k: torch.zeros(R, dtype=torch.float64)
        for k in (
            "n1",
            "n2",
            "f1",
            "m1",
            "f2",
            "m2",
            "fo1",
            "fo2",
            "a1",
            "a2",
            "pos",
            "pos2",
            "neg",
            "neg2",
            "npos",
            "nneg",
        )
    }
    offdiag = ~torch.eye(s.K, dtype=torch.bool)
    if s.n_neg < s.K - 1:
        offdiag = offdiag & losses.negative_mask(s.K, s.n_neg)
    for _ in range(batches):
        batch = cdata.sample_batch(
            M,
            hist.probs,
            sigma=hist.sigma,
            K=s.K,
            L=s.L,
            mag_low=s.mag_low,
            q=s.token_q,
            generator=generator,
            pooled=s.pooled,
        )
        hx = cmodel.features(W, batch.x, b, s.L, s.att_scale)
        hy = cmodel.features(W, batch.y, b, s.L, s.att_scale)
        S_full = ctrain.logits(hx, hy, s.tau, s.n_neg)
        S_mask = ctrain.logits(hx * keep[:, None, :], hy * keep[:, None, :], s.tau, s.n_neg)
        P_full, P_mask = torch.softmax(S_full, -1), torch.softmax(S_mask, -1)
        lp_full, lp_mask = (
            torch.diagonal(P_full, dim1=-2, dim2=-1),
            torch.diagonal(P_mask, dim1=-2, dim2=-1),
        )
        hpx, hpy = hx * pruned[:, None, :], hy * pruned[:, None, :]
        # logit change of masking: u -> u - sum_{i in P} (1 - (1 - shrink)^2) h_i(X) h_i(Y')
        dS = -(1 - (1 - shrink) ** 2) * (hpx @ hpy.transpose(-1, -2)) / s.tau
        fo = first_order_logit_change(P_full, dS)
        in_d1 = (
            (batch.zx[torch.arange(R, device=dev), :, :, feature] != 0)
            .any(-1)
            .to(torch.float64)
            .cpu()
        )  # (R, K)
        cross = (hpx @ hpy.transpose(-1, -2)).cpu()  # (R, K, K)
        pos = torch.diagonal(cross, dim1=-2, dim2=-1)
        neg = cross[:, offdiag]
        for tag, w in (("1", in_d1), ("2", 1 - in_d1)):
            acc["n" + tag] += w.sum(-1)
            acc["f" + tag] += ((1 - lp_full).cpu() * w).sum(-1)
            acc["m" + tag] += ((1 - lp_mask).cpu() * w).sum(-1)
            acc["fo" + tag] += (fo.cpu() * w).sum(-1)
            acc["a" + tag] += ((lp_mask - lp_full).cpu() * w).sum(-1)
        acc["pos"] += pos.sum(-1)
        acc["pos2"] += (pos**2).sum(-1)
        acc["npos"] += pos.shape[-1]
        acc["neg"] += neg.sum(-1)
        acc["neg2"] += (neg**2).sum(-1)
        acc["nneg"] += neg.shape[-1]

    def mean(k, n):
        return acc[k] / acc[n].clamp_min(1)

    def se(k, n):
        mu = mean(k, n)
        return (
            (acc[k + "2"] / acc[n].clamp_min(1) - mu**2).clamp_min(0) / acc[n].clamp_min(1)
        ).sqrt()

    return {
        "one_minus_lp": {
            "D1": (mean("f1", "n1"), mean("m1", "n1")),
            "D2": (mean("f2", "n2"), mean("m2", "n2")),
        },
        "first_order": {"D1": mean("fo1", "n1"), "D2": mean("fo2", "n2")},
        "actual": {"D1": mean("a1", "n1"), "D2": mean("a2", "n2")},
        "pos": mean("pos", "npos"),
        "pos_se": se("pos", "npos"),
        "neg": mean("neg", "nneg"),
        "neg_se": se("neg", "nneg"),
        "frac_D1": acc["n1"] / (acc["n1"] + acc["n2"]),
    }


def linear_pair_moment(
    W: torch.Tensor, M: torch.Tensor, pruned: torch.Tensor, kappas: torch.Tensor
) -> torch.Tensor:
    """Lemma F.1 (a) as the proof computes it, (196): at ``b = 0`` with uniform attention,
    ``E[sum_{i in P} h_i(X) h_i(Y)] = sum_{i in P} sum_j <w_i, M_j>^2 kappa_j`` exactly for this
    book's generator (``kappa_j = E[hat z_j hat z_j^+] / L^2``, ``data.kappa``). ``kappas``:
    ``(R, d)``; returns ``(R,)``."""
    A2 = cmodel.alignment(W, M) ** 2  # (R, m, d)
    return ((A2 * kappas.to(A2.dtype)[:, None, :]).sum(-1) * pruned.to(A2.dtype)).sum(-1)


# ---------------------------------------------------------------------------------------------
# Growth of the pruned neurons (Theorem 3.2 (a), (b))
# ---------------------------------------------------------------------------------------------


def log_growth_per_step(A: torch.Tensor, steps: torch.Tensor) -> torch.Tensor:
    """Mean per-step log-growth ``(log|A_end| - log|A_start|) / (t_end - t_start)`` of a recorded
    projection ``A`` (``(T, ...)``), elementwise over the trailing dimensions."""
    span = float(steps[-1] - steps[0])
    return (A[-1].abs().clamp_min(1e-300).log() - A[0].abs().clamp_min(1e-300).log()) / span


def pruned_projection(hist, pruned: torch.Tensor, feature: torch.Tensor) -> torch.Tensor:
    """``(T, R)``: the mean over ``i in P`` of ``|<w_i, M_{j*}>|`` along a recorded history (``nan``
    for a run with an empty ``P``)."""
    T, R, m, _ = hist.A.shape
    A = hist.A.gather(3, feature.view(1, R, 1, 1).expand(T, R, m, 1)).squeeze(-1).abs()  # (T, R, m)
    w = pruned.to(A.dtype)
    return (A * w).sum(-1) / w.sum(-1)


def other_feature_projection(hist, feature: torch.Tensor) -> torch.Tensor:
    """``(T, R, d)``: ``max_i |<w_i, M_j>|`` along a recorded history, with the column ``j*`` set to
    ``nan``."""
    out = hist.A.abs().max(-2).values.clone()
    out[:, torch.arange(out.shape[1]), feature] = float("nan")
    return out


def minority_norm_gap(W: torch.Tensor, M: torch.Tensor, n_maj: int) -> torch.Tensor:
    """Remark 2 per run: ``log`` of the median norm of the minority specialists minus ``log`` of
    the median norm of every other neuron (majority specialists and unaligned ones), ``(R,)``;
    ``nan`` for a run without a minority specialist or without another neuron. Negative: the
    minority specialists are the smaller neurons."""
    spec = specialists(W, M)
    is_min = spec[..., n_maj:].any(-1)
    norms = W.norm(dim=-1).double()
    out = torch.full((W.shape[0],), float("nan"), dtype=torch.float64)
    for r in range(W.shape[0]):
        a, b = norms[r][is_min[r]], norms[r][~is_min[r]]
        if len(a) and len(b):
            out[r] = a.median().log() - b.median().log()
    return out


def majority_scale(W: torch.Tensor, M: torch.Tensor, spec_maj: torch.Tensor) -> torch.Tensor:
    """Per run, the mean ``|<w_i, M_j>|`` over the majority specialists ``spec_maj`` (``(R, m,
    n_maj)`` boolean, each neuron counted on its own feature), read from the weights ``W`` (those
    at the end of the window for Theorem 3.2 (c), not the checkpoint's), ``(R,)``."""
    A = cmodel.alignment(W, M)[..., : spec_maj.shape[-1]].abs()
    return (A * spec_maj).sum((1, 2)) / spec_maj.sum((1, 2)).clamp_min(1)


def other_feature_rate(hist, feature: torch.Tensor) -> torch.Tensor:
    """Theorem 3.2 (b) per run: the mean over ``j != j*`` of the per-step log-growth of
    ``max_i |<w_i, M_j>|`` over a recorded window, ``(R,)``."""
    oth = other_feature_projection(hist, feature)  # (T, R, d), nan at j*
    span = float(hist.steps[-1] - hist.steps[0])
    return torch.nanmean((oth[-1].double().log() - oth[0].double().log()) / span, -1)


# ---------------------------------------------------------------------------------------------
# [001] Table 2 (real data, transcribed)
# ---------------------------------------------------------------------------------------------

# (dataset, rho, acc w/o, sd, acc w/, sd, Delta20 w/o, sd, Delta20 w/, sd); sd None where the table
# gives none.
TABLE_2 = (
    ("CIFAR10-LT", 1, 90.93, None, 91.52, None, 1.54, None, 1.28, None),
    ("CIFAR10-LT", 10, 79.25, 1.03, 84.92, 0.67, 3.42, 1.02, 2.99, 0.92),
    ("CIFAR10-LT", 50, 75.58, 0.84, 83.60, 1.02, 3.92, 1.21, 3.35, 0.76),
    ("CIFAR10-LT", 100, 74.24, 0.82, 81.31, 0.94, 5.69, 1.35, 5.62, 0.99),
    ("CIFAR100-LT", 10, 51.21, 1.21, 56.33, 1.51, 2.45, 0.57, 1.37, 0.46),
    ("CIFAR100-LT", 50, 49.32, 0.45, 56.12, 0.32, 4.95, 1.02, 2.57, 0.92),
    ("CIFAR100-LT", 100, 47.12, 0.51, 54.93, 0.50, 7.11, 0.45, 4.38, 0.22),
    ("ImageNet-LT", 256, 63.21, None, 65.12, None, 8.47, None, 7.21, None),
)


def table2_rows() -> list[dict]:
    """Table 2 with the derived columns: accuracy gain, Delta20 change, and each difference in units
    of the two rows' standard deviations combined in quadrature (``None`` where the table gives
    none)."""
    rows = []
    for ds, rho, a0, sa0, a1, sa1, g0, sg0, g1, sg1 in TABLE_2:
        sa = math.hypot(sa0, sa1) if sa0 is not None else None
        sg = math.hypot(sg0, sg1) if sg0 is not None else None
        rows.append(
            dict(
                dataset=ds,
                rho=rho,
                gain=round(a1 - a0, 2),
                delta20_change=round(g1 - g0, 2),
                gain_in_sd=None if sa is None else round((a1 - a0) / sa, 2),
                delta20_change_in_sd=None if sg is None else round((g1 - g0) / sg, 2),
            )
        )
    return rows


def table2_measures() -> dict:
    """What the three statements of [001] Section 4 about Table 2 say of its own numbers (the
    chapter's registered rules decide them):

    * ``smallest_gain`` -- "pruning consistently improves accuracy across all datasets": the
      smallest accuracy gain over the rows;
    * ``smallest_gain_step`` -- "with improvements becoming more substantial as rho increases":
      the smallest change of the gain from one ``rho`` to the next of the same dataset (datasets
      with two rows or more), with ``steps`` ``{dataset: [changes]}``;
    * ``delta20_not_falling`` -- "pruning generally reduces Delta20": the rows where it does not
      fall (a tie counts as not falling).
    """
    rows = table2_rows()
    by_ds: dict = {}
    for r in rows:
        by_ds.setdefault(r["dataset"], []).append(r)
    steps = {
        ds: [round(b["gain"] - a["gain"], 2) for a, b in zip(rs, rs[1:])]
        for ds, rs in by_ds.items()
        if len(rs) > 1
    }
    return {
        "smallest_gain": min(r["gain"] for r in rows),
        "smallest_gain_step": min(x for xs in steps.values() for x in xs),
        "steps": steps,
        "delta20_not_falling": sum(r["delta20_change"] >= 0 for r in rows),
        "rows": len(rows),
    }
