"""InfoNCE with StopGrad and weight decay (eqs (1)-(3), (21)), trained by plain gradient descent
with decoupled weight decay (Algorithm 1, line 7), vectorised over runs.

``grad_scale`` -- the papers' gradient convention, as an explicit option:

* ``"paper"`` (default): the update uses eq (21) / [000](15) literally. Differentiating (1) gives
  ``1/tau`` times (21), so (21) is the gradient of ``tau * ell`` (consistent with the pseudo-loss
  (118), ``-tau log(.)``); the closed forms of Stage 1 then hold with ``c_tau = 1``.
* ``"standard"``: the true gradient of (1), ``c_tau = 1 / tau``. The two give the same trajectory
  when ``eta -> eta tau`` and ``lam -> lam / tau`` (unit-tested).

The step computes the gradient through the surrogate ``sum_k (P_k - 1[k = pos]) <f(X), sg f(Y_k)>``
with ``P`` the (detached) softmax of the logits: its gradient is ``tau`` times that of (1), and it
is eq (5) of [001] when the logits come from a masked model and the neuron factors from the full
one. A forward-pass neuron ``mask`` therefore slots in without changing the step (``pruning.py``).

``n_neg`` -- number of negatives per anchor, taken in-batch: anchor ``k``'s negatives are the second
views of pairs ``k+1, ..., k+n_neg (mod K)``, independent of it (Assumption 3.4);
``|B| = 1 + n_neg``. The papers never fix it; the default ``K - 1`` (all in-batch, as SimCLR) is the
cheapest.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import torch

from companions import losses
from companions.contrastive import data as cdata
from companions.contrastive import model as cmodel
from companions.train import progress as progress_bar


@dataclass(frozen=True)
class Setup:
    """Every knob of one (vectorised) training run. Per-run ``eps_min`` and ``nsr`` come in as
    tensors to :func:`train`; the rest is shared by all runs. Defaults: the papers' sizes where
    given (``d = 9`` with 5 majority features from [001] Exp. 5, ``m = 30`` from [000] Fig. 1,
    ``d1 = 500`` from [001] A.2), otherwise chosen for a small-scale
    run that shows all three stages (reasons in ``data.py``, ``model.py`` and this module)."""

    d: int = 9
    n_maj: int = 5
    eps_max: float = 1.0
    d1: int = 500
    L: int = 4
    p0: float = 0.25
    mag_low: float = 0.5
    token_q: float = 1.0
    m: int = 30
    sigma0: float = 1e-3
    K: int = 128
    n_neg: int = 127
    tau: float = 1.0
    grad_scale: str = "paper"
    eta: float = 0.02
    lam: float = 1e-3
    c_b: float = 0.3
    t1_rule: str = "mean"
    t1_steps: int = 0
    post_t2: str = "norm"  # bias after T2: "norm" (this book's b ∝ ||w||) or "frozen" (b(T2))
    attention: str = "uniform"
    att_scale: float = 0.0
    bias: bool = True  # False: b = 0 throughout (the linear regime of Stage 1, indefinitely)

    def __post_init__(self):
        if self.grad_scale not in ("paper", "standard"):
            raise ValueError(
                f"parameter 'grad_scale' = {self.grad_scale!r} is not allowed: "
                "expected 'paper' or 'standard'"
            )
        if self.attention not in ("uniform", "softmax"):
            raise ValueError(
                f"parameter 'attention' = {self.attention!r} is not allowed: "
                "expected 'uniform' or 'softmax'"
            )
        if not 1 <= self.n_neg <= self.K - 1:
            raise ValueError(
                f"parameter 'n_neg' = {self.n_neg!r} is not allowed: "
                f"expected 1 <= n_neg <= K - 1 = {self.K - 1}"
            )

    @property
    def c_tau(self) -> float:
        return 1.0 if self.grad_scale == "paper" else 1.0 / self.tau

    @property
    def pooled(self) -> bool:
        return self.attention == "uniform"


def logits(hx: torch.Tensor, hy: torch.Tensor, tau: float, n_neg: int) -> torch.Tensor:
    """``sim(X_k, Y_k') / tau = <f(X_k), sg f(Y_k')> / tau``, ``(R, K, K)``, ``-inf`` outside
    ``B_k``."""
    K = hx.shape[1]
    S = hx @ hy.detach().transpose(-1, -2) / tau
    if n_neg < K - 1:
        S = S.masked_fill(~losses.negative_mask(K, n_neg, hx.device), float("-inf"))
    return S


def info_nce(hx: torch.Tensor, hy: torch.Tensor, tau: float, n_neg: int) -> torch.Tensor:
    """Eq (1) averaged over the batch (the data term of (3)), per run: ``(R,)``; the core's InfoNCE
    with the positives' side stopped (StopGrad)."""
    return losses.info_nce(hx, hy, tau, n_neg=n_neg, stop_grad=True)


def surrogate(hx: torch.Tensor, hy: torch.Tensor, P: torch.Tensor) -> torch.Tensor:
    """``(1/K) sum_k sum_k' (P_kk' - 1[k = k']) <f(X_k), sg f(Y_k')>`` per run: its gradient is eq
    (21) (= ``tau`` times the gradient of (1)) when ``P`` is the softmax of this model's logits, and
    eq (5) when ``P`` comes from a masked model."""
    K = hx.shape[1]
    C = P.detach() - torch.eye(K, dtype=P.dtype, device=P.device)
    return (C * (hx @ hy.detach().transpose(-1, -2))).sum((-1, -2)) / K


def gradient(
    W: torch.Tensor, b: torch.Tensor, batch: cdata.Batch, s: Setup, mask: torch.Tensor | None = None
):
    """The update direction ``g`` of Algorithm 1 line 7 (data term; weight decay is decoupled), the
    per-run InfoNCE loss and the positive logits ``ell'_p`` ``(R, K)``. With ``mask``, logits come
    from the masked model and neuron factors from the full one (eq (5))."""
    Wg = W.detach().requires_grad_(True)
    hx = cmodel.features(Wg, batch.x, b, s.L, s.att_scale)
    with torch.no_grad():
        hy = cmodel.features(W, batch.y, b, s.L, s.att_scale)
        if mask is None:
            S = logits(hx.detach(), hy, s.tau, s.n_neg)
        else:
            S = logits(hx.detach() * mask[:, None, :], hy * mask[:, None, :], s.tau, s.n_neg)
        P = torch.softmax(S, dim=-1)
        loss = -torch.diagonal(torch.log_softmax(S, dim=-1), dim1=-2, dim2=-1).mean(-1)
    sur = surrogate(hx, hy, P).sum()
    (g,) = torch.autograd.grad(sur, Wg)
    return g * s.c_tau, loss, torch.diagonal(P, dim1=-2, dim2=-1)


@torch.no_grad()
def batch_loss(W: torch.Tensor, b: torch.Tensor, batch: cdata.Batch, s: Setup) -> torch.Tensor:
    """Per-run InfoNCE loss (1) of a batch, ``(R,)``."""
    hx = cmodel.features(W, batch.x, b, s.L, s.att_scale)
    hy = cmodel.features(W, batch.y, b, s.L, s.att_scale)
    return info_nce(hx, hy, s.tau, s.n_neg)


@dataclass
class History:
    """What a run records every ``log_every`` steps (CPU tensors with the run dimension first but
    stacked over time in dimension 0): ``A`` ``(T, R, m, d)``, ``norm`` and ``noise`` ``(T, R, m)``,
    ``b`` ``(T, R, m)``, ``loss`` ``(T, R)``; plus ``t1``, ``t2`` ``(R,)`` and the final weights."""

    steps: list = field(default_factory=list)
    A: list = field(default_factory=list)
    norm: list = field(default_factory=list)
    noise: list = field(default_factory=list)
    b: list = field(default_factory=list)
    loss: list = field(default_factory=list)
    t1: torch.Tensor | None = None
    t2: torch.Tensor | None = None
    W: torch.Tensor | None = None
    W0: torch.Tensor | None = None
    M: torch.Tensor | None = None
    b_final: torch.Tensor | None = None
    schedule: "cmodel.BiasSchedule | None" = None
    hooks: list = field(default_factory=list)

    def stack(self) -> "History":
        for name in ("A", "norm", "noise", "b", "loss"):
            setattr(self, name, torch.stack(getattr(self, name)))
        self.steps = torch.tensor(self.steps)
        return self


def train(
    s: Setup,
    eps_min: torch.Tensor,
    *,
    nsr: torch.Tensor,
    steps: int,
    generator: torch.Generator,
    dtype=torch.float64,
    device="cpu",
    log_every: int = 10,
    progress: bool = True,
    desc: str = "training",
    masks=None,
    eps_max: torch.Tensor | None = None,
    draw_on_device: bool | None = None,
) -> History:
    """Train ``R = len(eps_min)`` independent runs at once (one per entry of ``eps_min`` / ``nsr``),
    each with its own dictionary, initialisation and data stream drawn from ``generator``.

    ``masks``: optional callable ``(t, W, M) -> (R, m)`` forward-pass neuron mask, or ``None`` for
    no mask at step ``t`` (the hook of Algorithm 1, see ``pruning.py``).
    ``eps_max``: optional per-run majority frequency ``(R,)`` (default: ``s.eps_max`` for every
    run).
    ``draw_on_device``: draw the per-step batches with a generator on ``device`` (seeded from
    ``generator``) instead of on the CPU. ``None``: only on CUDA, where CPU draws would dominate the
    paper scale (``R K d1`` Gaussians a step); dictionaries and initial weights always come from
    ``generator``. The recorded history is float32 (plots and slopes), the weights keep
    ``dtype``."""
    R = len(eps_min)
    if len(nsr) != R:
        raise ValueError("eps_min and nsr must have one entry per run")
    emax = [s.eps_max] * R if eps_max is None else [float(e) for e in eps_max]
    eps = torch.stack(
        [
            torch.tensor(
                cdata.eps_vector(s.d, s.n_maj, emax[r], float(eps_min[r])), dtype=torch.float64
            )
            for r in range(R)
        ]
    )
    probs = cdata.activation_probs(eps, s.p0)
    sigma = (nsr.to(torch.float64) / s.d1).sqrt()
    M = cdata.dictionary(R, s.d1, s.d, generator, dtype, device)
    W = cmodel.init_weights(
        R, s.m, d1=s.d1, sigma0=s.sigma0, generator=generator, dtype=dtype, device=device
    )
    sched = cmodel.BiasSchedule(
        R,
        s.m,
        d=s.d,
        eta=s.eta,
        c_b=s.c_b,
        t1_rule=s.t1_rule,
        t1_steps=s.t1_steps,
        dtype=dtype,
        device=device,
        post_t2=s.post_t2,
    )
    hist = History(W0=W.cpu().clone(), M=M.cpu())
    return _run(
        s,
        hist,
        W=W,
        M=M,
        sched=sched,
        eps=eps,
        probs=probs,
        sigma=sigma,
        t0=0,
        steps=steps,
        generator=generator,
        device=device,
        log_every=log_every,
        progress=progress,
        desc=desc,
        masks=masks,
        draw_on_device=draw_on_device,
    )


def resume(
    s: Setup,
    checkpoint: History,
    *,
    steps: int,
    generator: torch.Generator,
    device="cpu",
    log_every: int = 10,
    progress: bool = True,
    desc: str = "training",
    masks=None,
    draw_on_device: bool | None = None,
) -> History:
    """Continue the runs of ``checkpoint`` (a :func:`train` result) for ``steps`` more steps: its
    weights, dictionaries, frequencies, noise and bias schedule, a data stream drawn from
    ``generator``. Two calls with equally seeded generators see the same batches, so arms that
    differ only in ``masks`` (with and without pruning) are paired. Step numbers continue from the
    checkpoint's last one."""
    if checkpoint.schedule is None or checkpoint.W is None:
        raise ValueError(
            "parameter 'checkpoint' is not a finished training History "
            "(no weights or bias schedule)"
        )
    dtype = checkpoint.W.dtype
    W = checkpoint.W.to(device)
    M = checkpoint.M.to(device=device, dtype=dtype)
    sched = copy.deepcopy(checkpoint.schedule).to(device)
    hist = History(W0=checkpoint.W0, M=checkpoint.M)
    t0 = int(checkpoint.steps[-1])
    return _run(
        s,
        hist,
        W=W,
        M=M,
        sched=sched,
        eps=checkpoint.eps,
        probs=checkpoint.probs,
        sigma=checkpoint.sigma,
        t0=t0,
        steps=steps,
        generator=generator,
        device=device,
        log_every=log_every,
        progress=progress,
        desc=desc,
        masks=masks,
        draw_on_device=draw_on_device,
    )


def _run(
    s,
    hist,
    *,
    W,
    M,
    sched,
    eps,
    probs,
    sigma,
    t0,
    steps,
    generator,
    device,
    log_every,
    progress,
    desc,
    masks,
    draw_on_device,
) -> History:
    if draw_on_device is None:
        draw_on_device = torch.device(device).type == "cuda"
    if draw_on_device and torch.device(device).type != generator.device.type:
        seed = int(torch.randint(0, 2**62, (1,), generator=generator))
        generator = torch.Generator(device=device).manual_seed(seed)

    def record(t, loss):
        hist.steps.append(t)
        hist.A.append(cmodel.alignment(W, M).float().cpu())
        hist.norm.append(W.norm(dim=-1).float().cpu())
        hist.noise.append(cmodel.noise_norm(W, M).float().cpu())
        hist.b.append(sched.b.float().cpu())
        hist.loss.append(loss.float().cpu())

    bar = progress_bar(range(t0, t0 + steps), desc=desc, disable=not progress, mininterval=1.0)
    for t in bar:
        batch = cdata.sample_batch(
            M,
            probs,
            sigma=sigma,
            K=s.K,
            L=s.L,
            mag_low=s.mag_low,
            q=s.token_q,
            generator=generator,
            pooled=s.pooled,
        )
        mask = masks(t, W, M) if masks is not None else None
        g, loss, _ = gradient(W, sched.b, batch, s, mask)
        if (t - t0) % log_every == 0:
            record(t, loss)
        W_new = (1 - s.eta * s.lam) * W - s.eta * g
        if not bool(torch.isfinite(W_new).all()):
            bar.close()
            raise FloatingPointError(f"weights became non-finite at step {t}: lower 'eta'")
        if s.bias:
            sched.update(t, W, W_new, M)
        W = W_new
    bar.close()
    batch = cdata.sample_batch(
        M,
        probs,
        sigma=sigma,
        K=s.K,
        L=s.L,
        mag_low=s.mag_low,
        q=s.token_q,
        generator=generator,
        pooled=s.pooled,
    )
    record(t0 + steps, batch_loss(W, sched.b, batch, s))
    hist.t1, hist.t2, hist.W, hist.b_final = sched.t1.cpu(), sched.t2.cpu(), W.cpu(), sched.b.cpu()
    hist.schedule = sched
    hist.eps, hist.probs, hist.sigma = eps, probs, sigma
    return hist.stack()


def train_chunked(
    s: Setup,
    eps_min,
    *,
    nsr,
    steps,
    generator,
    chunk: int,
    desc: str = "training",
    masks_factory=None,
    **kw,
) -> History:
    """:func:`train` on at most ``chunk`` runs at a time (memory at paper scale), histories joined
    along the run dimension. ``masks_factory``: called once per chunk for that chunk's ``masks``
    hook (a hook keeps per-run state, e.g. a pruning log); the hooks are returned in
    ``History.hooks``."""
    starts = list(range(0, len(eps_min), chunk))
    hooks = [masks_factory() if masks_factory is not None else None for _ in starts]
    parts = [
        train(
            s,
            eps_min[i : i + chunk],
            nsr=nsr[i : i + chunk],
            steps=steps,
            generator=generator,
            masks=hook,
            desc=desc
            if len(starts) == 1
            else f"{desc} (runs {i}-{min(i + chunk, len(eps_min)) - 1})",
            **kw,
        )
        for i, hook in zip(starts, hooks)
    ]
    if len(parts) == 1:
        parts[0].hooks = hooks
        return parts[0]
    out = History()
    for name in ("A", "norm", "noise", "b", "loss"):
        setattr(out, name, torch.cat([getattr(p, name) for p in parts], dim=1))
    for name in ("t1", "t2", "W", "W0", "M", "b_final", "eps", "probs", "sigma"):
        setattr(out, name, torch.cat([getattr(p, name) for p in parts], dim=0))
    out.schedule = cmodel.BiasSchedule.cat([p.schedule for p in parts])
    out.steps = parts[0].steps
    out.hooks = hooks
    return out


def stage_index(hist: History, which: str, runs=None) -> list[int]:
    """Index into ``hist.steps`` of each run's ``T1`` or ``T2`` (``which``), for the runs ``runs``
    (default: all). A run that never reached it (recorded as ``-1``) raises a ``ValueError`` naming
    the parameter ``steps``, instead of silently reading step 0. A time between two logged steps
    maps to the first logged step at or after it."""
    if which not in ("t1", "t2"):
        raise ValueError(f"parameter 'which' = {which!r} is not allowed: expected 't1' or 't2'")
    times = getattr(hist, which)
    runs = range(len(times)) if runs is None else [int(r) for r in runs]
    missing = [r for r in runs if int(times[r]) < 0]
    if missing:
        raise ValueError(
            f"runs {missing} never reached {which.upper()} within {int(hist.steps[-1])} steps: "
            "raise parameter 'steps' (or, for T1, lower 'sigma0' less)"
        )
    last = len(hist.steps) - 1
    return [min(int(torch.searchsorted(hist.steps, times[r])), last) for r in runs]
