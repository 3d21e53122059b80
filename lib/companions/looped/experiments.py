"""Figure 8.1: the experiment of Section 8.6, and the condition numbers the source reports."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from companions.incontext import sample_prompts
from companions.looped.construction import (
    construction_weights,
    gradient_descent,
    input_matrix,
    looped_transformer,
)
from companions.looped.theory import (
    bound_theorem_8_16,
    bound_theorem_8_25,
    bound_tight,
    condition_number,
    exact_error_curves,
    null_space_error,
    prediction_error,
    smoothness,
)
from companions.train import progress

#: Below this normalised squared error, float64 round-off dominates the computed error of the
#: transformer (it bottoms out near 1e-31): points below it are masked, not plotted or tested.
FLOAT64_FLOOR = 1e-26


@dataclass
class ConvergenceRun:
    """One ``n`` of Figure 8.1: ``trials`` prompts run through the constructed looped transformer
    with ``eta = 1/L`` (per prompt) and through plain GD."""

    n: int
    kappa: torch.Tensor  # (trials,)
    tf_sq: torch.Tensor  # (T+1, trials) ||theta_t - theta*||^2 from the transformer, normalised
    gd_sq: torch.Tensor  # (T+1, trials) the same from plain GD (8.2)
    exact_sq: torch.Tensor  # (T+1, trials) the same from the closed form (D1)
    tf_err: torch.Tensor  # (T+1, trials) |<TF, theta*> - alpha|
    exact_err: torch.Tensor  # (T+1, trials) the same from (D1)
    tf_minus_gd_per_loop: torch.Tensor  # (T+1,) max over trials of |TF/alpha - theta_GD|

    @property
    def tf_minus_gd(self) -> float:
        """max |TF/alpha - theta_GD| over loops and trials."""
        return float(self.tf_minus_gd_per_loop.max())

    @property
    def above_floor(self) -> torch.Tensor:
        return self.tf_sq > FLOAT64_FLOOR


def convergence_run(
    n: int,
    d: int,
    *,
    loops: int,
    trials: int,
    alpha: float,
    generator: torch.Generator,
    dtype=torch.float64,
    device="cpu",
    faithful: bool = True,
) -> ConvergenceRun:
    """Section 8.6 for one ``n``: Gaussian X, theta* on the sphere, q^(0) = 0, eta = 1/||X^T X||."""
    X, theta, y = sample_prompts(trials, n, d, generator, dtype=dtype, device=device)
    L = smoothness(X)
    etas = (1 / L).expand(loops, trials)
    Q, P = construction_weights(d, dtype, device)
    outs, _ = looped_transformer(
        input_matrix(X, y, alpha), Q, P, etas, faithful=faithful, trajectory=True
    )
    theta_tf = outs / alpha
    theta_gd = gradient_descent(X, y, etas)
    norm0 = (theta**2).sum(-1)  # ||theta^(0) - theta*||^2 with theta^(0) = 0
    exact_err, exact_sq = exact_error_curves(X, theta, alpha, 1 / L, loops)
    return ConvergenceRun(
        n=n,
        kappa=condition_number(X).cpu(),
        tf_sq=(((theta_tf - theta) ** 2).sum(-1) / norm0).cpu(),
        gd_sq=(((theta_gd - theta) ** 2).sum(-1) / norm0).cpu(),
        exact_sq=(exact_sq / norm0).cpu(),
        tf_err=prediction_error(outs, theta, alpha).cpu(),
        exact_err=exact_err.cpu(),
        tf_minus_gd_per_loop=(theta_tf - theta_gd).abs().amax(dim=(-2, -1)).cpu(),
    )


def kappa_distribution(
    n: int,
    d: int,
    *,
    draws: int,
    generator: torch.Generator,
    group: int = 10,
    dtype=torch.float64,
    device="cpu",
    max_elements: int = 2**24,
):
    """Condition numbers of ``draws`` Gaussian prompts, and the 5%-95% range of the mean of
    ``group`` of them (the paper averages 10 trials). Returns ``(kappas, (q05, q95))``. Prompts are
    drawn in chunks of at most ``max_elements`` numbers, so memory stays bounded at any ``n``,
    ``d``."""
    chunk = max(1, max_elements // (n * d))
    kappas = []
    for start in progress(range(0, draws, chunk), desc=f"kappa of {draws} prompts, n={n}"):
        size = min(chunk, draws - start)
        X = torch.randn(size, n, d, generator=generator, dtype=dtype).to(device)
        kappas.append(condition_number(X).cpu())
    kappas = torch.cat(kappas)  # fewer than `draws` only in a dry run, which cuts the loop
    groups = kappas[: (len(kappas) // group) * group].reshape(-1, group).mean(-1)
    return kappas, (float(groups.quantile(0.05)), float(groups.quantile(0.95)))


from companions.looped.paper import PAPER_D, PAPER_KAPPA_MEANS, PAPER_TRIALS  # noqa: E402,F401


def gap_per_trial(run: ConvergenceRun, t: int) -> torch.Tensor:
    """Figure 8.1's vertical gap at loop ``t``, one value per trial: the Theory line ``-t/kappa``
    minus the log of the transformer's normalised squared error (``(trials,)``). Raises where a
    trial is below :data:`FLOAT64_FLOOR` at ``t``: its log would be round-off."""
    if not 0 <= t < run.tf_sq.shape[0]:
        raise ValueError(
            f"parameter 't' = {t} is not allowed: expected 0 <= t <= {run.tf_sq.shape[0] - 1}"
        )
    if not bool(run.above_floor[t].all()):
        raise ValueError(
            f"parameter 't' = {t} is not allowed: some trial is below the float64 floor"
        )
    return -(t / run.kappa) - torch.log(run.tf_sq[t])


def depth_log_ratios(trained_at_T, trained_at_4T, construction_at_T: float, reach: float = 1.25):
    """The trained models' depth extrapolation, measured on the seeds whose error at the trained
    depth ``T`` came within ``reach`` times the construction's (training reached it): one
    ``log(error at 4T / error at T)`` per such seed (positive: looping on makes it worse)."""
    return [
        math.log(float(b) / float(a))
        for a, b in zip(trained_at_T, trained_at_4T)
        if float(a) <= reach * construction_at_T
    ]


def group_means(kappas: torch.Tensor, group: int) -> torch.Tensor:
    """Means of consecutive groups of ``group`` condition numbers (a leftover is dropped): draws
    of the ``group``-trial mean the source reports."""
    if group < 1 or len(kappas) < group:
        raise ValueError(f"parameter 'group' = {group} is not allowed: 1 to {len(kappas)}")
    return kappas[: (len(kappas) // group) * group].reshape(-1, group).mean(-1)


def bound_violations(runs: dict, alpha: float) -> dict:
    """Counts of (prompt, loop) points of Figure 8.1's runs above each bound, with a relative
    allowance of 1e-12 (the bounds are equalities at t = 0): ``{"8.16", "tight", "8.25"}`` each
    the transformer's count (where the bound is above 1e-12, or above the float64 floor for the
    squared distance of 8.25) plus the closed form D1's at every loop; ``points``: their number."""
    counts = {"8.16": 0, "tight": 0, "8.25": 0, "points": 0}

    def above(err, bound, where=None):
        bad = err > bound * (1 + 1e-12)
        return int((bad & where).sum()) if where is not None else int(bad.sum())

    for r in runs.values():
        t = torch.arange(r.tf_err.shape[0], dtype=torch.float64)[:, None]
        b16 = bound_theorem_8_16(r.kappa, t, alpha)
        btight = bound_tight(r.kappa, t, alpha)
        b25 = bound_theorem_8_25(r.kappa, t)
        counts["8.16"] += above(r.tf_err, b16, b16 > 1e-12) + above(r.exact_err, b16)
        counts["tight"] += above(r.tf_err, btight, btight > 1e-12) + above(r.exact_err, btight)
        counts["8.25"] += above(r.tf_sq, b25, r.above_floor) + above(r.exact_sq, b25)
        counts["points"] += r.tf_err.numel()
    return counts


def steepest_excess(runs: dict) -> float:
    """The largest per-loop slope of the closed form's squared distance above its limit,
    ``max log(s_(t+1) / s_t) - 2 log(1 - 1/kappa)`` over prompts and loops (D2: never positive)."""
    excess = -math.inf
    for r in runs.values():
        per_step = torch.log(r.exact_sq[1:] / r.exact_sq[:-1])
        excess = max(excess, float((per_step - 2 * torch.log(1 - 1 / r.kappa)).max()))
    return excess


def float64_floor(runs: dict, settle: int = 10) -> tuple[float, float, int]:
    """Where the float64 curves stop falling: over the prompts whose smallest normalised squared
    error comes more than ``settle`` loops before the last (the curve then stays flat, at
    round-off), the range of those smallest errors and how many such prompts there are; exact
    zeros are left out. ``(nan, nan, 0)`` when every prompt is still falling at the end."""
    floors = []
    for r in runs.values():
        sq = r.tf_sq.where(r.tf_sq > 0, torch.inf)
        lows, at = sq.min(0)
        flat = (at < sq.shape[0] - 1 - settle) & torch.isfinite(lows)
        floors += lows[flat].tolist()
    if not floors:
        return math.nan, math.nan, 0
    return min(floors), max(floors), len(floors)


def null_space_run(
    n: int, d: int, *, loops: int, draws: int, alpha: float, generator, device="cpu"
):
    """(D6) Prompts with ``n < d`` looped ``loops`` times with ``eta = 1/L``: returns
    ``(error after the loops, the null-space limit, the bound on their gap)``, each ``(draws,)``;
    the bound is ``|alpha| ||P_row theta*||^2 (1 - 1/kappa_row)^loops``."""
    X, theta, y = sample_prompts(draws, n, d, generator, device=device)
    Q, P = construction_weights(d, device=device)
    out, _ = looped_transformer(
        input_matrix(X, y, alpha),
        Q,
        P=P,
        etas=(1 / smoothness(X)).expand(loops, -1),
        faithful=False,
    )
    err, limit = prediction_error(out, theta, alpha), null_space_error(X, theta, alpha)
    eig = torch.linalg.eigvalsh(X @ X.transpose(-1, -2))  # the nonzero eigenvalues of X^T X
    slack = abs(alpha) * (1 - limit / abs(alpha)) * (1 - eig[:, 0] / eig[:, -1]) ** loops
    return err.cpu(), limit.cpu(), slack.cpu()
