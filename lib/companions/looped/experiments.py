"""Figure 8.1: the experiment of Section 8.6, and the condition numbers the source reports."""

from __future__ import annotations

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
    condition_number,
    exact_error_curves,
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
    loops: int,
    trials: int,
    alpha: float,
    generator: torch.Generator,
    dtype=torch.float64,
    device="cpu",
    faithful: bool = True,
) -> ConvergenceRun:
    """Section 8.6 for one ``n``: Gaussian X, theta* on the sphere, q^(0) = 0, eta = 1/||X^T X||."""
    X, theta, y = sample_prompts(trials, n, d, generator, dtype, device)
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


#: The average condition numbers the source reports for n = 16, 32, 64, 128 (Section 8.6).
PAPER_KAPPA_MEANS = {16: 4.57, 32: 3.13, 64: 2.07, 128: 1.62}


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


def depth_verdict(trained_at_T, trained_at_4T, construction_at_T: float, reach: float = 1.25):
    """The trained model's depth extrapolation, decided only on the seeds whose error at the
    trained depth ``T`` came within ``reach`` times the construction's (training reached it):
    ``(agrees, reached, text)``. ``agrees`` says whether the error at ``4T`` exceeds the error at
    ``T`` (mean log ratio over those seeds > 0, :func:`companions.stats.decide`), ``None`` when
    fewer than two seeds reached or the mean is too noisy to place."""
    import math

    from companions.stats import decide, mean_and_se

    pairs = [
        (float(a), float(b))
        for a, b in zip(trained_at_T, trained_at_4T)
        if float(a) <= reach * construction_at_T
    ]
    if len(pairs) < 2:
        return None, len(pairs), f"{len(pairs)} of {len(trained_at_T)} seeds reached"
    mean, se, n = mean_and_se([math.log(b / a) for a, b in pairs])
    return decide(mean, se, n), n, f"log(err 4T / err T) = {mean:.2f} ± {se:.2f} (SE, {n} seeds)"
