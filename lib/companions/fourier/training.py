"""Training (Definition 4.1, Lemma 4.7, Theorem 4.9), vectorized over independent runs."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from companions.fourier.diagnostics import (
    balance,
    concentration,
    dominant_frequency,
    live_neurons,
    neuron_spectrum,
    phase_lock,
)
from companions.fourier.network import (
    dataset,
    forward,
    forward_table,
    gamma_star,
    margins,
    neuron_norms,
    norm_ab,
    table,
    untable,
)


@dataclass
class TrainRun:
    """Runs trained side by side. ``U (R, M, k, p)``, ``W (R, M, p)`` final parameters (neurons
    beyond a run's width stay exactly zero), ``U0``, ``W0`` the initial ones, ``widths (R,)``; the
    logs ``steps``, ``rho (T, R)`` = normalized margin / gamma*, ``loss (T, R)`` (cross-entropy
    only) and ``accuracy (T, R)`` on all of D_p; with a split (``train_fraction < 1``),
    ``train_accuracy (T, R)`` on the training inputs and ``test_accuracy (T, R)`` on the held-out
    ones, else ``None``. Parameters and logs are float64 whatever the training dtype (the logs are
    computed from the parameters cast to float64)."""

    U: torch.Tensor
    W: torch.Tensor
    U0: torch.Tensor
    W0: torch.Tensor
    widths: list
    steps: list = field(default_factory=list)
    rho: list = field(default_factory=list)
    loss: list = field(default_factory=list)
    accuracy: list = field(default_factory=list)
    train_accuracy: list | None = None
    test_accuracy: list | None = None


def init_network(
    runs: int,
    width: int,
    *,
    p: int,
    k: int,
    generator: torch.Generator,
    widths=None,
    dtype=torch.float64,
    device="cpu",
):
    """Entries i.i.d. ``N(0, 1/p)`` (the spec's proposal; the source does not give its
    initialization). With ``widths`` (one per run), neurons beyond a run's width are zero, and stay
    zero in training: their gradient, their penalty's gradient and AdamW's decay all vanish at zero
    for k >= 2. The draws are made in float64 and then cast, so every dtype starts from the same
    network (to its precision)."""
    U = torch.randn(runs, width, k, p, generator=generator, dtype=torch.float64) / math.sqrt(p)
    W = torch.randn(runs, width, p, generator=generator, dtype=torch.float64) / math.sqrt(p)
    if widths is not None:
        mask = (torch.arange(width)[None, :] < torch.tensor(widths)[:, None]).to(torch.float64)
        U, W = U * mask[..., None, None], W * mask[..., None]
    return U.to(device=device, dtype=dtype), W.to(device=device, dtype=dtype)


def train(
    p: int,
    k: int,
    *,
    widths: list[int],
    steps: int,
    lr: float,
    generator: torch.Generator,
    regularizer: str = "l2k1",
    lam: float = 1e-3,
    weight_decay: float = 0.0,
    batch: int = 0,
    log_every: int = 100,
    decay_fraction: float = 0.2,
    warmup: int = 0,
    dtype=torch.float32,
    device="cpu",
    desc: str = "training",
    progress: bool = True,
    train_fraction: float = 1.0,
) -> TrainRun:
    """Train one network per entry of ``widths`` (vectorized) on (a_1 + ... + a_k) mod p.

    ``regularizer='l2k1'``: Adam on ``L_lambda = CE + lambda ||theta||_{2,k+1}`` (Definition 4.1,
    the theory's objective); ``'adamw'``: AdamW with betas (0.9, 0.98) and decoupled
    ``weight_decay`` on CE alone (the source's experimental configuration, Appendix C.10.1);
    ``'l22'``: Adam on ``CE + lambda ||theta||_2^2`` (plain L2). ``batch = 0`` is full batch on all
    of D_p; otherwise minibatches drawn from ``generator``. The learning rate warms up linearly over
    ``warmup`` steps and decays by a cosine over the last ``decay_fraction`` of the steps. The
    normalized margin is measured on all of D_p every ``log_every`` steps and at the end.
    ``train_fraction < 1`` trains on a random part of D_p of that size (drawn from ``generator``
    after the initialisation, so the initial network does not depend on it; the source's
    experiments use 1/2, Appendix C.10.1) and logs the accuracy on that part and on the rest.

    Training runs in ``dtype`` (float32 by default: the step needs no more); the margins, losses and
    accuracies of the logs, and the returned parameters, are float64 (the parameters cast), so the
    bound ``rho <= 1`` is checked in float64. The step computes the hidden layer from contiguous
    tables ``E = table(U)`` with a hand-written backward (:func:`forward_table`); the same
    parameters as :func:`forward`, to round-off.
    """
    if regularizer not in ("l2k1", "adamw", "l22"):
        raise ValueError(
            f"parameter 'regularizer' = {regularizer!r} is not allowed: "
            "expected 'l2k1', 'adamw' or 'l22'"
        )
    if not 0 < train_fraction <= 1:
        raise ValueError(
            f"parameter 'train_fraction' = {train_fraction!r} is not allowed: "
            "expected a number in (0, 1]"
        )
    from companions.train import progress as progress_bar

    a, y = dataset(p, k, device=device)
    U, W = init_network(
        len(widths),
        max(widths),
        p=p,
        k=k,
        generator=generator,
        widths=widths,
        dtype=dtype,
        device=device,
    )
    held_out = kept = None
    if train_fraction < 1:
        n_train = round(train_fraction * a.shape[0])
        if not 0 < n_train < a.shape[0]:
            raise ValueError(
                f"parameter 'train_fraction' = {train_fraction!r} is not allowed: it leaves "
                f"{n_train} of the {a.shape[0]} inputs for training (need one or more on each side)"
            )
        order = torch.randperm(a.shape[0], generator=generator).to(device)
        held_out, kept = order[n_train:].sort().values, order[:n_train].sort().values
        a_train, y_train = a[kept], y[kept]
    else:
        a_train, y_train = a, y
    U64, W64 = U.double(), W.double()
    run = TrainRun(U64.clone(), W64.clone(), U64.clone(), W64.clone(), list(widths))
    if held_out is not None:
        run.train_accuracy, run.test_accuracy = [], []
    E, W = table(U).requires_grad_(True), W.clone().requires_grad_(True)
    if regularizer == "adamw":
        opt = torch.optim.AdamW([E, W], lr=lr, betas=(0.9, 0.98), weight_decay=weight_decay)
    else:
        opt = torch.optim.Adam([E, W], lr=lr)
    decay_from = int(steps * (1 - decay_fraction))

    def lr_at(t):
        scale = min(1.0, (t + 1) / warmup) if warmup else 1.0
        if t >= decay_from and steps > decay_from:
            scale *= 0.5 * (1 + math.cos(math.pi * (t - decay_from) / (steps - decay_from)))
        return lr * scale

    gs = gamma_star(p, k)
    n = a.shape[0]

    def log(t):  # over all of D_p, chunk by chunk (the full logits need not fit in memory)
        with torch.no_grad():
            U64, W64 = untable(E).double(), W.double()
            hmin, ce_sum, hits = None, 0.0, []
            # Through progress so that a dry run evaluates the first chunk only; no bar of its
            # own, since it runs inside the training bar.
            for i in progress_bar(range(0, n, 4096), desc="log over D_p", disable=True):
                logits = forward(U64, W64, a[i : i + 4096])
                yc = y[i : i + 4096]
                g = margins(logits, yc).amin(-1)
                hmin = g if hmin is None else torch.minimum(hmin, g)
                ce = torch.nn.functional.cross_entropy(
                    logits.reshape(-1, p), yc.repeat(len(widths)), reduction="none"
                )
                ce_sum = ce_sum + ce.reshape(len(widths), -1).sum(-1)
                hits.append(logits.argmax(-1) == yc)
            hits = torch.cat(hits, -1).double()
            seen = hits.shape[-1]  # n, except in a dry run
            run.steps.append(t)
            run.rho.append((hmin / norm_ab(U64, W64, k + 1).pow(k + 1) / gs).cpu())
            run.loss.append((ce_sum / seen).cpu())
            run.accuracy.append(hits.mean(-1).cpu())
            if held_out is not None:
                run.train_accuracy.append(hits[:, kept[kept < seen]].mean(-1).cpu())
                run.test_accuracy.append(hits[:, held_out[held_out < seen]].mean(-1).cpu())

    step = training_step(
        p,
        k,
        E=E,
        W=W,
        opt=opt,
        generator=generator,
        regularizer=regularizer,
        lam=lam,
        batch=batch,
        a=a_train,
        y=y_train,
        whole_set=held_out is None,
    )
    bar = progress_bar(range(steps), desc=desc, disable=not progress, mininterval=0.5)
    for t in bar:
        if t % log_every == 0:
            log(t)
        loss = step(lr_at(t))
        if not math.isfinite(loss):
            bar.close()
            raise FloatingPointError(f"loss became {loss} at step {t}: lower 'lr'")
    bar.close()
    log(steps)
    run.U, run.W = untable(E.detach()).double().contiguous(), W.detach().double()
    run.rho, run.loss, run.accuracy = (
        torch.stack(run.rho),
        torch.stack(run.loss),
        torch.stack(run.accuracy),
    )
    if held_out is not None:
        run.train_accuracy = torch.stack(run.train_accuracy)
        run.test_accuracy = torch.stack(run.test_accuracy)
    return run


def training_step(
    p,
    k,
    *,
    E,
    W,
    opt,
    generator,
    regularizer="l2k1",
    lam=1e-3,
    batch=0,
    a=None,
    y=None,
    whole_set=True,
):
    """One optimizer step of :func:`train` on the tables ``E (R, k, p, M)`` and ``W (R, M, p)``
    (leaf tensors that ``opt`` updates): returns ``step(lr) -> loss`` (a float, taken before the
    update; the update is made even if it is not finite). ``a``, ``y``: the training inputs,
    :func:`dataset`'s (all of D_p, in its order) if not given; ``whole_set=False`` says they are
    a part of D_p, so a full batch is taken over them rather than over D_p."""
    if a is None or y is None:
        a, y = dataset(p, k, device=E.device)
        whole_set = True
    runs, n = E.shape[0], a.shape[0]

    def step(lr: float) -> float:
        for group in opt.param_groups:
            group["lr"] = lr
        if batch:
            idx = torch.randint(0, n, (batch,), generator=generator).to(E.device)
            ab, yb = a[idx], y[idx]
        elif whole_set:
            ab, yb = None, y  # None: all of D_p, in the order of ``dataset``
        else:
            ab, yb = a, y
        logits = forward_table(E, W, ab)
        ce = torch.nn.functional.cross_entropy(
            logits.reshape(-1, p), yb.repeat(runs), reduction="none"
        )
        loss = ce.reshape(runs, -1).mean(-1).sum()
        if regularizer == "l2k1":
            loss = loss + lam * norm_ab(untable(E), W, k + 1).sum()
        elif regularizer == "l22":
            loss = loss + lam * (E.pow(2).sum((-1, -2, -3)) + W.pow(2).sum((-1, -2))).sum()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        value = float(loss.detach())
        opt.step()
        return value

    return step


def diagnostics(U: torch.Tensor, W: torch.Tensor, live_fraction: float = 0.1) -> dict:
    """Fourier diagnostics of one trained network ``U (M, k, p)``, ``W (M, p)``, over its live
    neurons (``||theta_i|| > live_fraction * max``): their number, folded-spectrum concentration
    (min, median), the frequencies they cover, the phase condition (min, median) and the balance
    (median)."""
    p = U.shape[-1]
    live = live_neurons(U, W, live_fraction)
    Ul, Wl = U[live], W[live]
    power = neuron_spectrum(Ul, Wl)
    conc = concentration(power)
    phase = phase_lock(Ul, Wl)
    bal = balance(Ul, Wl)
    freqs = dominant_frequency(power)
    return dict(
        live=int(live.sum()),
        width=int((neuron_norms(U, W) > 0).sum()),
        min_concentration=float(conc.min()),
        median_concentration=float(conc.median()),
        frequencies=sorted(set(freqs.tolist())),
        all_frequencies=sorted(set(freqs.tolist())) == list(range(1, (p - 1) // 2 + 1)),
        frequency_counts=torch.bincount(freqs, minlength=(p + 1) // 2)[1:].tolist(),
        min_phase_cos=float(phase.min()),
        median_phase_cos=float(phase.median()),
        median_balance=float(bal.median()),
    )
