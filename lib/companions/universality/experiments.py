"""Linear probes on a representation, the trade-off sweep, and decisions with uncertainty."""

from __future__ import annotations

import math

import torch

from companions.universality import data


def mean_se(values) -> tuple[float, float]:
    """Mean and standard error of the mean (0 for a single value)."""
    v = torch.as_tensor(values, dtype=torch.float64).flatten()
    se = float(v.std() / math.sqrt(v.numel())) if v.numel() > 1 else 0.0
    return float(v.mean()), se


def decide_close(mean: float, se: float, target: float, margin: float, z: float = 2.0):
    """Agreement within a margin fixed in advance: True when ``|mean - target| + z se <= margin``,
    False when ``|mean - target| - z se > margin``, else None (the run cannot decide)."""
    gap = abs(mean - target)
    if gap + z * se <= margin:
        return True
    if gap - z * se > margin:
        return False
    return None


def decide_positive(mean: float, se: float, z: float = 2.0):
    """An effect predicted positive: True when ``mean - z se > 0``, False when ``mean + z se < 0``,
    else None."""
    if mean - z * se > 0:
        return True
    if mean + z * se < 0:
        return False
    return None


def _probe(W, M, layout, u_star, task, m, trials, generator, sign: bool):
    """Fit the least-norm least-squares probe on ``m`` labelled points of ``task``, ``trials``
    times; return the effective coefficients on ``z`` (``(trials, d)``) and the task's support."""
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
    coef = (torch.linalg.pinv(F) @ y.unsqueeze(-1)).squeeze(-1)  # least-norm solution
    w = coef @ (W64 @ M64)
    support = torch.cat([layout.task_features(task), layout.spurious()])
    return w, support


def probe_excess_mse(W, M, layout, u_star, task, m, trials, generator) -> torch.Tensor:
    """Noiseless regression ``y = u_t^{*T} z_{R_t}``: the exact population excess MSE of the
    least-norm probe, ``sum_{j in R_t u U} (w_j - u*_j)^2`` (those coordinates have unit variance
    on task t), per trial."""
    w, sup = _probe(W, M, layout, u_star, task, m, trials, generator, sign=False)
    return ((w[:, sup] - u_star.cpu().double()[sup]) ** 2).sum(-1)


def probe_accuracy(W, M, layout, u_star, task, m, trials, generator) -> torch.Tensor:
    """Binary labels ``y = sign(u_t^{*T} z)``, least-norm least-squares probe on ±1 labels: the
    exact test accuracy ``1 - angle(w, u*)/pi`` on the Gaussian task distribution, per trial."""
    w, sup = _probe(W, M, layout, u_star, task, m, trials, generator, sign=True)
    u = u_star.cpu().double()[sup]
    ws = w[:, sup]
    cos = (ws @ u) / (ws.norm(dim=-1) * u.norm()).clamp_min(1e-300)
    return 1 - torch.arccos(cos.clamp(-1, 1)) / math.pi


def tradeoff_point(
    W, M, layout, U, target: int, m_target: int, m_univ: int, trials: int, generator
) -> tuple[float, float]:
    """One point of the trade-off figure: (target error with ``m_target`` labels, average
    accuracy over all ``T`` tasks with ``m_univ`` labels each)."""
    err = 1 - float(
        probe_accuracy(W, M, layout, U[target], target, m_target, trials, generator).mean()
    )
    acc = (
        sum(
            float(probe_accuracy(W, M, layout, U[t], t, m_univ, trials, generator).mean())
            for t in range(layout.T)
        )
        / layout.T
    )
    return err, acc
