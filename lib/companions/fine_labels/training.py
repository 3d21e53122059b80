"""Online SGD with the hand-set bias of eqs. (16)-(18) (and (177)-(178) for fine labels).

Every step draws a fresh balanced batch of easy samples (App. B.1 items 9-10), takes one step of
eq. (16) on ``W`` only (cross-entropy, ``a`` frozen), and lowers each neuron's bias by its own step
length over ``lam_b`` (eq. 18, the paper's ``lam_b = log^5 d``). All seeds train at once: the seed
axis is the leading axis of every tensor.
"""

from __future__ import annotations

import math
from typing import Callable

import torch

from companions.fine_labels import data as fdata
from companions.fine_labels import model as fmodel
from companions.train import progress as progress_bar


def label_dL_dF(scores_fn, F: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """``d L / d F`` (S, N, C) of the batch-mean cross-entropy of ``scores_fn(F)``; with
    ``scores_fn`` the identity this is ``(softmax(F) - onehot) / N``, eq. (17)."""
    F = F.detach().requires_grad_(True)
    scores = scores_fn(F)
    S, N, K = scores.shape
    loss = torch.nn.functional.cross_entropy(
        scores.reshape(S * N, K), labels.reshape(S * N), reduction="sum"
    )
    (grad,) = torch.autograd.grad(loss / N, F)
    return grad


def sgd_step(
    net: fmodel.Net,
    X: torch.Tensor,
    *,
    labels: torch.Tensor,
    eta: float,
    lam_b: float,
    scores_fn: Callable | None = None,
    before_update: Callable | None = None,
) -> torch.Tensor:
    """One step of eqs. (16) and (18) in place; returns ``F`` (S, N, C) before the step.

    ``w_r += (eta / (N P)) sum_n (1{y_n = c} - logit_c) sum_p relu'(.) x_p`` and
    ``b_r -= ||Delta w_r||_2 / lam_b``. ``scores_fn`` maps ``F`` to the trained logits (the
    identity for coarse or fine training; an aggregation for fine-tuning through ``hat F``);
    ``before_update(F)`` is called before the weights change."""
    if eta <= 0 or lam_b <= 0:
        raise ValueError(f"parameters 'eta' = {eta} and 'lam_b' = {lam_b} must be positive")
    S, N, P, d = X.shape
    Z = fmodel.preactivations(net, X).relu_()  # (S, N, P, C m), in place to save memory
    F = Z.sum(2).reshape(S, N, net.C, net.m).sum(-1)
    if before_update is not None:
        before_update(F)
    coef = label_dL_dF(scores_fn or (lambda f: f), F, labels)  # (S, N, C)
    per_neuron = coef.repeat_interleave(net.m, dim=-1)  # (S, N, C m)
    gate = Z.sign_().mul_(per_neuron[:, :, None, :])  # relu'(.) times dL/dF, in place
    grad = torch.bmm(gate.reshape(S, N * P, -1).transpose(1, 2), X.reshape(S, N * P, d))
    dW = -(eta / P) * grad
    net.W += dW
    net.b -= dW.norm(dim=-1) / lam_b
    return F


def off_diagonal_mask(C: int, k: int) -> torch.Tensor:
    """(C, 2 + 2k) bool: the features whose response an output must never gain (Theorem F.1
    point 3, coarse; Theorem G.1, fine): the other superclass's features, and for a subclass output
    the other subclasses' fine features."""
    feats = 2 + 2 * k
    sup = torch.zeros(feats, dtype=torch.long)
    sup[1] = 1
    sup[2 + k :] = 1
    sub = torch.full((feats,), -1, dtype=torch.long)
    sub[2:] = torch.arange(2 * k) % k
    mask = torch.zeros(C, feats, dtype=torch.bool)
    if C == 2:
        for o in range(2):
            mask[o] = sup != o
    elif C == 2 * k:
        for o in range(C):
            y, c = divmod(o, k)
            mask[o] = (sup != y) | ((sub >= 0) & (sub != c))
    else:
        raise ValueError(f"parameter 'C' = {C} is not allowed: expected 2 or 2k = {2 * k}")
    return mask


def own_features(C: int, k: int) -> torch.Tensor:
    """(C, 2 + 2k) bool: the features an output is trained to detect, with ``C = 2 g`` outputs of
    ``g`` label groups per superclass (``g = 1`` coarse, ``g = k`` fine): its superclass's common
    feature and the subclass features of its group. Their detectors are the ones eqs. (32), (34),
    (201), (204) follow; a detector of any other feature is pushed down and falls silent at a time
    set by its own ``w(0)``."""
    if C < 2 or C % 2 or k % (C // 2):
        raise ValueError(
            f"parameter 'C' = {C} is not allowed: expected 2 g with g dividing k = {k}"
        )
    g = C // 2
    mask = torch.zeros(C, 2 + 2 * k, dtype=torch.bool)
    for o in range(C):
        y, j = divmod(o, g)
        mask[o, y] = True
        for c in range(k):
            mask[o, 2 + y * k + c] = c // (k // g) == j
    return mask


def coarse_scores(F: torch.Tensor, how: str = "max") -> torch.Tensor:
    """Scores of the two superclasses from any model: ``F`` itself when it has two outputs."""
    return F if F.shape[-1] == 2 else fmodel.aggregate(F, F.shape[-1] // 2, how)


def evaluate(net, tests, how="max", scores=False):
    """``{name: accuracy (S,)}`` on the coarse target for each ``tests[name] = (X, y)`` (and the
    scores, with ``scores=True``)."""
    out, sc = {}, {}
    for name, (X, y) in tests.items():
        sc[name] = coarse_scores(fmodel.forward(net, X), how)
        out[name] = fmodel.accuracy(sc[name], fmodel.seen(y, sc[name]))
    return (out, sc) if scores else out


def train(
    net: fmodel.Net,
    dcfg: fdata.DataConfig,
    *,
    steps: int,
    N: int,
    eta: float,
    lam_b: float,
    labels_of: Callable,
    g: torch.Generator,
    log_times,
    tests: dict,
    tau_sigma0: float,
    delta: float,
    B: float | None = None,
    scores_fn: Callable | None = None,
    how: str = "max",
    W0: torch.Tensor | None = None,
    b0: torch.Tensor | None = None,
    n_noise: int = 256,
    progress: bool = True,
) -> dict:
    """Train ``net`` in place for ``steps`` fresh batches; log at ``log_times`` (steps done). The
    steps go through :func:`companions.train.progress` (its bar unless ``progress`` is False; a
    dry run takes the first, with the log before it).

    ``labels_of(y, c, g)`` gives the trained labels; ``tests`` maps names to ``(X, y)`` test sets
    (coarse target, read through ``how`` when the model has more than two outputs). Logged, each
    with a leading time axis: ``acc[name]`` (S,), the margin ``F_y - F_y'`` on ``tests['easy']``,
    ``A`` and ``R`` (S, C, 2+2k), the mean bias, the three invariants of Theorem F.1 / G.1, and
    ``spread`` (S,), the largest relative spread of the updates among the singleton detectors of
    one output and one of its own features (:func:`own_features`,
    :func:`companions.fine_labels.model.update_spread`). ``B`` (fine training) records
    ``T0(B)`` of Definition G.2 per seed (the first step at which some output ``F_y``, whatever
    the sample's label, reaches ``B`` on some sample of the batch) and the accuracies there.
    """
    if steps < 0 or N < 1:
        raise ValueError(f"parameters 'steps' = {steps} and 'N' = {N} must be >= 0 and >= 1")
    given, log_times = log_times, sorted(set(int(t) for t in log_times if 0 <= t <= steps))
    if not log_times:
        raise ValueError(
            f"parameter 'log_times' = {list(given)!r} has no time in [0, steps = {steps}]: "
            "nothing would be logged"
        )
    dev, dt = net.W.device, net.W.dtype
    S, k = net.W.shape[0], dcfg.k
    feats = torch.arange(2 + 2 * k, device=dev)
    W0 = net.W.clone() if W0 is None else W0
    b0 = net.b.clone() if b0 is None else b0
    det = fmodel.detectors(W0, feats, tau_sigma0 + delta)
    det_low = fmodel.detectors(W0, feats, tau_sigma0 - delta)
    single = fmodel.singleton_detectors(W0, feats, tau_sigma0 + delta, tau_sigma0 - delta)
    if net.C % 2 == 0 and k % (net.C // 2) == 0:  # the detectors of each output's own features
        single &= own_features(net.C, k).to(dev).repeat_interleave(net.m, 0)[None]
    off = (
        off_diagonal_mask(net.C, k).to(dev)
        if net.C in (2, 2 * k) and scores_fn is None
        else torch.zeros(net.C, 2 + 2 * k, dtype=torch.bool, device=dev)
    )
    R0 = torch.relu(W0[:, :, feats] + b0[..., None])  # (S, C m, F)
    keys = ("t", "margin", "A", "R", "bias", "nonact", "noise", "offdiag", "spread")
    hist = {k_: [] for k_ in keys}
    hist["acc"] = {name: [] for name in tests}
    T0 = torch.full((S,), -1, dtype=torch.long)
    at_T0 = {name: torch.full((S,), math.nan) for name in tests}
    Xe, ye = tests["easy"]

    def log(t):
        hist["t"].append(t)
        accs, scores = evaluate(net, tests, how, scores=True)
        for name, a in accs.items():
            hist["acc"][name].append(a.cpu())
        sc = scores["easy"]
        y_sc = fmodel.seen(ye, sc)
        right = sc.gather(-1, y_sc[..., None]).squeeze(-1)
        hist["margin"].append((right - sc.scatter(-1, y_sc[..., None], -math.inf).amax(-1)).cpu())
        hist["A"].append(fmodel.growth(net.W, W0, feats, det, net.C).cpu())
        hist["R"].append(fmodel.response(net, feats).cpu())
        hist["bias"].append(net.b.mean(-1).cpu())
        pre = net.W[:, :, feats] + net.b[..., None]  # clean unit patches
        hist["nonact"].append(((pre > 0) & ~det_low).sum((1, 2)).cpu())
        zeta = torch.randn(S, n_noise, dcfg.d, generator=g, dtype=dt) * dcfg.sigma_zeta
        pz = torch.bmm(zeta.to(dev), net.W.transpose(1, 2)) + net.b[:, None, :]
        hist["noise"].append((pz > 0).sum((1, 2)).cpu())
        gain = (torch.relu(pre) - R0).reshape(S, net.C, net.m, -1).amax(2)  # (S, C, F)
        gain = torch.where(off[None], gain, torch.full_like(gain, -math.inf))
        hist["offdiag"].append(gain.amax((1, 2)).cpu())
        hist["spread"].append(fmodel.update_spread(net.W, W0, single, net.C).cpu())

    for t in progress_bar(range(steps + 1), desc=f"SGD, {net.C} outputs", disable=not progress):
        if t in log_times:
            log(t)
        if t == steps:
            break
        X, y, c = fdata.sample(dcfg, S, N, hard=False, g=g, dtype=dt)
        lab = labels_of(y, c, g)
        X, lab = X.to(dev), lab.to(dev)

        def stop_time(Fb, t=t):  # Definition G.2: first t with some F_y(X_n) >= B, any output y
            crossed = (Fb.amax((1, 2)) >= B).cpu()
            new = crossed & (T0 < 0)
            if bool(new.any()):
                T0[new] = t
                for name, a in evaluate(net, tests, how).items():
                    at_T0[name][new] = a.cpu()[new]

        sgd_step(
            net,
            X,
            labels=lab,
            eta=eta,
            lam_b=lam_b,
            scores_fn=scores_fn,
            before_update=stop_time if B is not None else None,
        )
    out = {
        "t": torch.tensor(hist["t"]),
        "acc": {n: torch.stack(v) for n, v in hist["acc"].items()},
        "W0": W0,
        "b0": b0,
        "det": det.cpu(),
        "det_low": det_low.cpu(),
        "T0": T0,
        "at_T0": at_T0,
    }
    for key in keys[1:]:
        out[key] = torch.stack(hist[key])
    return out
