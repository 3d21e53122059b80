"""Linear probes on a representation, the trade-off sweep, and decisions with uncertainty."""

from __future__ import annotations

import math

import torch

from companions.runtime import solve
from companions.stats import t_critical
from companions.universality import data


def mean_se(values) -> tuple[float, float]:
    """Mean and standard error of the mean (0 for a single value)."""
    v = torch.as_tensor(values, dtype=torch.float64).flatten()
    se = float(v.std() / math.sqrt(v.numel())) if v.numel() > 1 else 0.0
    return float(v.mean()), se


def decide_close(mean: float, se: float, target: float, margin: float, crit: float):
    """Agreement within a margin fixed in advance: True when ``|mean - target| + crit se <=
    margin``, False when ``|mean - target| - crit se > margin``, else None (the run cannot decide).
    ``crit`` is the critical value, e.g. ``t_critical(n - 1)`` for ``n`` seeds."""
    gap = abs(mean - target)
    if gap + crit * se <= margin:
        return True
    if gap - crit * se > margin:
        return False
    return None


def decide_positive(mean: float, se: float, crit: float):
    """An effect predicted positive: True when ``mean - crit se > 0``, False when ``mean + crit se
    < 0``, else None."""
    if mean - crit * se > 0:
        return True
    if mean + crit * se < 0:
        return False
    return None


def seeds_to_decide(se: float, n: int, gap: float, most: int = 100) -> int | None:
    """How many seeds would decide an effect ``gap`` away from its threshold at the spread seen
    with ``n`` seeds (standard error ``se``): the least ``n'`` with ``t_{n'-1} sd / sqrt(n') <
    |gap|``, ``sd = se sqrt(n)``; None above ``most``."""
    sd = se * math.sqrt(n)
    if sd == 0:
        return n
    for k in range(2, most + 1):
        if t_critical(k - 1) * sd / math.sqrt(k) < abs(gap):
            return k
    return None


def verdict(values, *, target=None, margin=None, hint: str = ""):
    """Decide a prediction over seeds with a Student-t 95 % interval: ``values`` positive (when
    ``target`` is None) or within ``margin`` of ``target``. Returns ``(agrees, mean, se, note)``
    where ``note`` names, when undecided, the number of seeds that would decide (and ``hint``, e.g.
    the scale that has them)."""
    mean, se = mean_se(values)
    n = len(values)
    crit = t_critical(n - 1)
    if target is None:
        agrees, gap = decide_positive(mean, se, crit), mean
    else:
        agrees = decide_close(mean, se, target, margin, crit)
        gap = margin - abs(mean - target)
    note = f"t_{{0.975,{n - 1}}} = {crit:.2f}"
    if agrees is None:
        k = seeds_to_decide(se, n, gap)
        more = f"about {k} seeds would decide" if k else "more than 100 seeds would be needed"
        note += f"; undecided with {n} seeds ({more} at this spread)"
        if hint:
            note += f"; {hint}"
    return agrees, mean, se, note


def _probe(W, M, *, layout, u_star, task, m, trials, generator, sign: bool, ridge: float = 0.0):
    """Fit the least-norm least-squares probe (or, with ``ridge > 0``, ridge regression with
    penalty ``ridge * ||u||^2`` per label, a soft form of the norm bound of (7.8)) on ``m`` labelled
    points of ``task``, ``trials`` times; return the effective coefficients on ``z`` (``(trials,
    d)``) and the task's support."""
    if ridge < 0:
        raise ValueError(f"parameter 'ridge' = {ridge} is not allowed: it must be >= 0")
    if m < 1:
        raise ValueError(f"parameter 'm' = {m} is not allowed: a probe needs at least one label")
    W64, M64 = W.detach().cpu().double(), M.cpu().double()
    z, _ = data.sample_z(layout, [task] * 1, trials * m, generator, dtype=torch.float64)
    z = z.reshape(trials, m, layout.d)
    u = u_star.cpu().double()
    y = z @ u
    if sign:
        y = torch.sign(y)
    F = z @ (W64 @ M64).T  # features W x = W M z
    if ridge > 0:  # argmin ||F u - y||^2 / m + ridge ||u||^2, in its kernel form
        gram = F @ F.transpose(-1, -2) + ridge * m * torch.eye(m, dtype=F.dtype)
        coef = (F.transpose(-1, -2) @ solve(gram, y.unsqueeze(-1))).squeeze(-1)
    else:
        coef = (torch.linalg.pinv(F) @ y.unsqueeze(-1)).squeeze(-1)  # least-norm solution
    w = coef @ (W64 @ M64)
    support = torch.cat([layout.task_features(task), layout.spurious()])
    return w, support


def probe_excess_mse(W, M, *, layout, u_star, task, m, trials, generator) -> torch.Tensor:
    """Noiseless regression ``y = u_t^{*T} z_{R_t}``: the exact population excess MSE of the
    least-norm probe, ``sum_{j in R_t u U} (w_j - u*_j)^2`` (those coordinates have unit variance
    on task t), per trial."""
    w, sup = _probe(
        W,
        M,
        layout=layout,
        u_star=u_star,
        task=task,
        m=m,
        trials=trials,
        generator=generator,
        sign=False,
    )
    return ((w[:, sup] - u_star.cpu().double()[sup]) ** 2).sum(-1)


def probe_accuracy(W, M, *, layout, u_star, task, m, trials, generator, ridge=0.0) -> torch.Tensor:
    """Binary labels ``y = sign(u_t^{*T} z)``, least-squares probe on ±1 labels (least-norm, or
    ridge with ``ridge > 0``): the exact test accuracy ``1 - angle(w, u*)/pi`` on the Gaussian task
    distribution, per trial."""
    w, sup = _probe(
        W,
        M,
        layout=layout,
        u_star=u_star,
        task=task,
        m=m,
        trials=trials,
        generator=generator,
        sign=True,
        ridge=ridge,
    )
    u = u_star.cpu().double()[sup]
    ws = w[:, sup]
    cos = (ws @ u) / (ws.norm(dim=-1) * u.norm()).clamp_min(1e-300)
    return 1 - torch.arccos(cos.clamp(-1, 1)) / math.pi


def tradeoff_point(
    W, M, *, layout, U, target: int, m_target: int, m_univ: int, trials: int, generator, ridge=0.0
) -> tuple[float, float]:
    """One point of the trade-off figure: (target error with ``m_target`` labels, average
    accuracy over all ``T`` tasks with ``m_univ`` labels each), with the same probe throughout."""

    def acc(t, m):
        vals = probe_accuracy(
            W,
            M,
            layout=layout,
            u_star=U[t],
            task=t,
            m=m,
            trials=trials,
            generator=generator,
            ridge=ridge,
        )
        return float(vals.mean())

    return 1 - acc(target, m_target), sum(acc(t, m_univ) for t in range(layout.T)) / layout.T


def tradeoff_sweep(reps, M, *, layout, U, m_target, m_univ, trials, seed_of, ridge=0.0):
    """The trade-off figure's points: ``reps[K]`` lists the representations pre-trained on the
    first ``K`` tasks (one per seed); returns an array ``(len(reps), seeds, 2)`` of (target error on
    task 0, average accuracy over all tasks), probe samples drawn by ``seed_of(K, seed)``."""
    out = []
    for K in sorted(reps):
        row = []
        for sd, W in enumerate(reps[K]):
            g = torch.Generator().manual_seed(seed_of(K, sd))
            row.append(
                tradeoff_point(
                    W,
                    M,
                    layout=layout,
                    U=U,
                    target=0,
                    m_target=m_target,
                    m_univ=m_univ,
                    trials=trials,
                    generator=g,
                    ridge=ridge,
                )
            )
        out.append(row)
    return torch.tensor(out, dtype=torch.float64).numpy()


def target_errors(Ws, M, *, layout, u_star, m, trials, seed_of, ridge=0.0) -> list[float]:
    """Target-task (task 0) error of the binary probe with ``m`` labels on each representation in
    ``Ws``, probe samples drawn by ``seed_of(seed)`` (the same samples for equal seeds)."""
    errs = []
    for sd, W in enumerate(Ws):
        g = torch.Generator().manual_seed(seed_of(sd))
        acc = probe_accuracy(
            W, M, layout=layout, u_star=u_star, task=0, m=m, trials=trials, generator=g, ridge=ridge
        )
        errs.append(1 - float(acc.mean()))
    return errs


def excess_curve(W, M, *, layout, u_star, task, m_values, trials, seed_of) -> list[float]:
    """Mean excess MSE of the least-norm probe (``probe_excess_mse``) on ``task`` at each ``m`` in
    ``m_values``, probe samples drawn by ``seed_of(m)``."""
    out = []
    for m in m_values:
        g = torch.Generator().manual_seed(seed_of(m))
        out.append(
            float(
                probe_excess_mse(
                    W, M, layout=layout, u_star=u_star, task=task, m=m, trials=trials, generator=g
                ).mean()
            )
        )
    return out
