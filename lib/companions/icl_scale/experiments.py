"""Monte Carlo and training for Section 5.4: the population loss of Lemma 5.1 measured with the
full LSA of eq. (5.1), the evaluation loss of Theorems 5.4.2 and 5.4.3 (paired over ranks: every
rank sees the same prompts), and a rank-r LSA trained by Adam on fresh prompts (Theorem 5.4.1).

Monte Carlo runs in float64; training in float32. Every mean comes with its standard error.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import sympy as sp
import torch

from companions.claims import Estimate
from companions.icl_scale import data, model, theory
from companions.train import progress as progress_bar


def _estimate(x: torch.Tensor) -> Estimate:
    """The mean of ``x`` with its standard error and size (a :class:`companions.Estimate`)."""
    x = x.double()
    return Estimate(float(x.mean()), float(x.std() / math.sqrt(len(x))), len(x))


def against(est: Estimate, exact) -> tuple[float, float, float]:
    """``(estimate, standard error, exact value)``: a row for the rule ``WithinErrors``."""
    return est.mean, est.se, float(exact)


def mc_population_loss(
    U, u, *, eigenvalues, Q, N, trials, generator, chunk=50_000, device="cpu"
) -> Estimate:
    """``1/2 E (y_hat - <w, x_q>)^2`` with the full forward of eq. (5.1) on the embedding ``E``
    and the blocks of eq. (5.3), ``rho = N`` (Lemma 5.1's left side), over pretraining prompts,
    ``chunk`` at a time through :func:`companions.train.progress` (a dry run draws the first)."""
    W_PV, W_KQ = model.blocks(U.to(device, torch.float64), u)
    return mc_loss_of_blocks(
        W_PV,
        W_KQ,
        eigenvalues=eigenvalues,
        Q=Q,
        N=N,
        trials=trials,
        generator=generator,
        chunk=chunk,
        device=device,
    )


def mc_loss_of_blocks(
    W_PV, W_KQ, *, eigenvalues, Q, N, trials, generator, chunk=50_000, device="cpu"
) -> Estimate:
    """``1/2 E (y_hat - <w, x_q>)^2`` for any blocks ``W_PV, W_KQ`` of eq. (5.1) (for instance with
    ``w_21^KQ != 0``, outside Lemma 5.1), ``rho = N``, over pretraining prompts."""
    W_PV, W_KQ = W_PV.to(device, torch.float64), W_KQ.to(device, torch.float64)
    out = []
    for start in progress_bar(range(0, trials, chunk), desc=f"population loss, {trials} prompts"):
        b = min(chunk, trials - start)
        p = data.prompts(b, N, eigenvalues=eigenvalues, Q=Q, generator=generator, device=device)
        E = data.embed(p.X, p.y, p.xq)
        out.append(0.5 * (model.prediction(E, W_PV, W_KQ, N) - p.yq) ** 2)
    return _estimate(torch.cat(out).cpu())


@dataclass
class PairedLosses:
    """Squared errors of several models on the same prompts: ``losses`` of shape
    ``(models, trials)``."""

    losses: torch.Tensor

    def estimate(self, i: int) -> Estimate:
        return _estimate(self.losses[i])

    def difference(self, i: int, j: int) -> Estimate:
        """``L_i - L_j``, paired (same prompts), with its standard error."""
        return _estimate(self.losses[i] - self.losses[j])


def mc_evaluation_losses(
    Us, eigenvalues, *, Q, w, M, trials, generator, sigma=0.0, flip=0.0, chunk=50_000, device="cpu"
) -> PairedLosses:
    """``E (y_hat - <w, x_q>)^2`` (no 1/2, Theorem 5.4.2) for each ``U`` in ``Us`` with ``u = 1``
    and ``rho = M``, on evaluation prompts with a fixed task ``w``, label noise ``sigma`` and sign
    flips ``flip``; all models see the same prompts, drawn ``chunk`` at a time through
    :func:`companions.train.progress` (a dry run draws the first)."""
    Ws = [model.blocks(U.to(device, torch.float64), 1.0) for U in Us]
    out = []
    for start in progress_bar(range(0, trials, chunk), desc=f"evaluation, {trials} prompts"):
        b = min(chunk, trials - start)
        p = data.prompts(
            b,
            M,
            eigenvalues=eigenvalues,
            Q=Q,
            generator=generator,
            w=w,
            sigma=sigma,
            flip=flip,
            device=device,
        )
        E = data.embed(p.X, p.y, p.xq)
        out.append(
            torch.stack([(model.prediction(E, Wp, Wk, M) - p.yq) ** 2 for Wp, Wk in Ws]).cpu()
        )
    return PairedLosses(torch.cat(out, dim=1))


@dataclass
class TrainedLSA:
    r: int
    U: torch.Tensor  # u * U, float64, on the CPU
    losses: list[float]


def train_rank_r(
    r, eigenvalues, *, Q, N, steps, batch, lr, generator, device="cpu", progress=True
) -> TrainedLSA:
    """Adam with cosine decay on ``1/2 mean (y_hat - y_q)^2`` over fresh pretraining prompts
    (``B = batch`` per step) for the rank-r LSA ``U = (W^K)^T W^Q`` of Section 5.4, in float32.
    Returns the learned product ``u U`` (the loss depends on it alone, Lemma 5.1)."""
    d = Q.shape[0]
    net = model.LowRankLSA(d, r, generator).to(device)
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
    losses = []
    bar = progress_bar(range(steps), desc=f"rank {r}", disable=not progress, mininterval=1.0)
    for _ in bar:
        p = data.prompts(
            batch,
            N,
            eigenvalues=eigenvalues,
            Q=Q,
            generator=generator,
            dtype=torch.float32,
            device=device,
        )
        E = data.embed(p.X, p.y, p.xq)
        loss = 0.5 * ((net(E, N) - p.yq) ** 2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
        if not math.isfinite(losses[-1]):
            raise FloatingPointError(f"loss became {losses[-1]}: lower 'train_lr'")
    bar.close()
    with torch.no_grad():
        U = (net.u * net.U).double().cpu()
    return TrainedLSA(r, U, losses)


def trained_summary(run: TrainedLSA, eigenvalues, Q, N):
    """``(relative distance ||uU - U*||_F / ||U*||_F, excess population loss L - L*_r)``, the
    loss exact through Lemma 5.1 (float64)."""
    Qd = Q.double().cpu()
    Ustar = theory.optimal_U(Qd, [float(x) for x in eigenvalues], N, run.r)
    dist = float(torch.linalg.norm(run.U - Ustar) / torch.linalg.norm(Ustar))
    Lam = data.covariance(eigenvalues, Qd)
    L = float(theory.population_loss(run.U, 1.0, Lam, N))
    return dist, L - float(theory.optimal_loss([float(x) for x in eigenvalues], N, run.r))


def gd_population(r, Lam, *, N, steps, lr, generator, init_scale=0.3) -> torch.Tensor:
    """Adam on the exact population loss of Lemma 5.1 over the rank-r factors ``U = (W^K)^T W^Q``
    and ``u``, in float64 from a random start; returns ``u U``. The landscape check of Theorem
    5.4.1: a rank-constrained descent from random starts ends at ``U*``."""
    d = Lam.shape[0]
    WK = (init_scale * torch.randn(r, d, generator=generator, dtype=torch.float64)).requires_grad_()
    WQ = (init_scale * torch.randn(r, d, generator=generator, dtype=torch.float64)).requires_grad_()
    u = torch.ones((), dtype=torch.float64, requires_grad=True)
    opt = torch.optim.Adam([WK, WQ, u], lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
    for _ in range(steps):
        loss = theory.population_loss(WK.T @ WQ, u, Lam, N)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
    with torch.no_grad():
        return (u * WK.T @ WQ).detach()


# ---- the chapter's loops, kept here so that the page shows short calls -------------------------


def descent_distances(Q, eigenvalues, *, N, starts, steps, generator_for, lr=5e-2) -> list[float]:
    """Relative distances ``||uU - U*_r||_F / ||U*_r||_F`` after :func:`gd_population` from
    ``starts`` random starts per rank ``r = 1..d`` (start ``k`` of rank ``r`` draws from
    ``generator_for(100 r + k)``)."""
    d = Q.shape[0]
    Lam = data.covariance(eigenvalues, Q)
    out = []
    for r in range(1, d + 1):
        Ustar = theory.optimal_U(Q, eigenvalues, N, r)
        for k in range(starts):
            U = gd_population(r, Lam, N=N, steps=steps, lr=lr, generator=generator_for(100 * r + k))
            out.append(float(torch.linalg.norm(U - Ustar) / torch.linalg.norm(Ustar)))
    return out


def train_ranks(ranks, seeds, *, eigenvalues, Q, N, steps, batch, lr, generator_for, device="cpu"):
    """``{r: [(run, relative distance, excess loss), ...]}``: :func:`train_rank_r` for each rank,
    ``seeds`` runs each (run ``k`` of rank ``r`` draws from ``generator_for(1000 + 10 r + k)``)."""
    out = {}
    for r in ranks:
        out[r] = []
        for k in range(seeds):
            run = train_rank_r(
                r,
                eigenvalues,
                Q=Q.float(),
                N=N,
                steps=steps,
                batch=batch,
                lr=lr,
                generator=generator_for(1000 + 10 * r + k),
                device=device,
            )
            out[r].append((run, *trained_summary(run, eigenvalues, Q, N)))
    return out


def trained_table(trained, eigenvalues, Q, N):
    """``(Markdown table, {r: [relative distance of each seed]})`` for :func:`train_ranks`'s
    result: the distance over seeds (mean and standard error), the mean excess loss, the first
    seed's learned diagonal in the eigenbasis and the optimum's ``v*``."""
    rows = [
        "| r | relative distance (mean ± se) | excess loss (mean) | learned diag(Q^T uU Q) | v* |",
        "|---|---|---|---|---|",
    ]
    margins = {}
    for r, runs in trained.items():
        dist = torch.tensor([x[1] for x in runs], dtype=torch.float64)
        mean = float(dist.mean())
        se = float(dist.std() / math.sqrt(len(dist))) if len(dist) > 1 else float("nan")
        margins[r] = dist.tolist()
        diag = torch.diagonal(Q.T @ runs[0][0].U @ Q).tolist()
        vstar = theory.optimal_v(eigenvalues, N, r)
        excess = sum(x[2] for x in runs) / len(runs)
        rows.append(
            f"| {r} | {mean:.4f} ± {se:.4f} | {excess:.2e} | "
            f"{', '.join(f'{x:.3f}' for x in diag)} | {', '.join(f'{x:.3f}' for x in vstar)} |"
        )
    return "\n".join(rows), margins


def evaluation_grid(
    Us, eigenvalues, *, Q, w, eval_m, sigmas, trials, generator_for, closed, device
):
    """``({(M, sigma): PairedLosses}, rows)``: paired Monte Carlo of the evaluation loss of every
    model in ``Us`` for each ``M`` and ``sigma`` (cell ``(i, j)`` draws from
    ``generator_for(200 + 10 i + j)``); a row ``(estimate, se, closed(r, M, sigma))`` per rank and
    cell."""
    grid, rows = {}, []
    for i, M in enumerate(eval_m):
        for j, sigma in enumerate(sigmas):
            mc = mc_evaluation_losses(
                Us,
                eigenvalues,
                Q=Q,
                w=w,
                M=M,
                trials=trials,
                generator=generator_for(200 + 10 * i + j),
                sigma=sigma,
                device=device,
            )
            grid[M, sigma] = mc
            rows += [against(mc.estimate(r), closed(r, M, sigma)) for r in range(len(Us))]
    return grid, rows


def theorem_5_4_3_exact(eigenvalues, N, eval_m, s, noise_variances=(0, 1, 4)) -> list:
    """Residuals of Theorem 5.4.3's gap ``L(f_r') - L(f_1)`` against the difference of two
    instances of Theorem 5.4.2, for every ``M``, ``sigma^2`` and ``r' = 1..d`` (exact for rational
    inputs: every residual is 0 when the two agree)."""
    d = len(eigenvalues)
    zero = [0] * d
    return [
        theory.theorem_5_4_2(eigenvalues, N, M=M, sigma2=s2, s=s, xi=zero, r=r2)
        - theory.theorem_5_4_2(eigenvalues, N, M=M, sigma2=s2, s=s, xi=zero, r=1)
        - theory.theorem_5_4_3(eigenvalues, N, M=M, sigma2=s2, s=s, r=1, r2=r2)
        for M in eval_m
        for s2 in noise_variances
        for r2 in range(1, d + 1)
    ]


def theorem_5_4_3_rows(Us, eigenvalues, *, Q, N, s, M, sigmas, trials, generator_for, device):
    """Rows ``(estimate, se, Theorem 5.4.3)`` of paired Monte Carlo ``L(f_r') - L(f_1)``,
    ``r' = 2..d``, for a task with coordinates ``s`` (top direction only) and each ``sigma`` (draws
    from ``generator_for(300 + j)``)."""
    d = len(eigenvalues)
    w = Q @ torch.tensor([float(x) for x in s], dtype=torch.float64)
    rows = []
    for j, sigma in enumerate(sigmas):
        mc = mc_evaluation_losses(
            Us,
            eigenvalues,
            Q=Q,
            w=w,
            M=M,
            trials=trials,
            generator=generator_for(300 + j),
            sigma=sigma,
            device=device,
        )
        for r2 in range(2, d + 1):
            gap = theory.theorem_5_4_3(
                eigenvalues, N, M=M, sigma2=sigma**2, s=[float(x) for x in s], r=1, r2=r2
            )
            rows.append(against(mc.difference(r2, 1), gap))
    return rows


def flips_rows(Us, eigenvalues, *, Q, N, coords, M, flips, trials, generator_for, device):
    """``({f: PairedLosses}, rows)``: Monte Carlo evaluation losses with sign flips, a row
    ``(estimate, se, this book's closed form)`` (:func:`theory.evaluation_loss`) for every rank
    and flip (draws from ``generator_for(400 + j)``)."""
    w = Q @ torch.tensor(coords, dtype=torch.float64)
    mcs, rows = {}, []
    for j, f in enumerate(flips):
        mc = mcs[f] = mc_evaluation_losses(
            Us,
            eigenvalues,
            Q=Q,
            w=w,
            M=M,
            trials=trials,
            generator=generator_for(400 + j),
            flip=f,
            device=device,
        )
        for r in range(len(Us)):
            closed = theory.evaluation_loss(
                eigenvalues, theory.optimal_v(eigenvalues, N, r), coords, M, 0, f
            )
            rows.append(against(mc.estimate(r), closed))
    return mcs, rows


def theorem_5_4_1_exact(spectra, Ns, seed: int, c: int = 3):
    """Theorem 5.4.1 in exact rationals, in a non-diagonal rational basis (a Cayley transform):
    for each spectrum, ``N`` and ``r``, the residual ``L(U*, 1/c) - L*_r`` of the optimum against
    this book's closed form (:func:`theory.optimal_loss`), and the number of other choices of
    ``r`` kept directions that are not strictly worse than the top ``r`` (the proof's exchange
    argument). Returns ``(residuals, not_worse, rows)`` with a row ``(spectrum, N, r, v*, L*_r)``
    per case."""
    residuals, not_worse, rows = [], 0, []
    for j, lam in enumerate(spectra):
        Qj = theory.cayley_orthogonal(len(lam), seed + 7 + j)
        Lam_j = Qj * sp.diag(*lam) * Qj.T
        for Nj in Ns:
            for r in range(len(lam) + 1):
                Ustar = theory.optimal_U(Qj, lam, Nj, r, c=c)
                value = theory.population_loss(Ustar, sp.Rational(1, c), Lam_j, Nj)
                best = theory.optimal_loss(lam, Nj, r)
                residuals.append(sp.simplify(value - best))
                losses = theory.best_subset_losses(lam, Nj, r)
                top = tuple(range(r))
                not_worse += sum(bool(L <= losses[top]) for S, L in losses.items() if S != top)
                rows.append((lam, Nj, r, theory.optimal_v(lam, Nj, r), best))
    return residuals, not_worse, rows


def random_rank_r_gap(eigenvalues, Lam, N, models: int, generator) -> float:
    """The smallest ``L(U, best u) - L*_r`` over ``models`` random matrices of rank at most ``r``
    (Gaussian factors), for every ``r = 1..d`` (float64): negative would refute ``L*_r``."""
    d = len(eigenvalues)
    worst = math.inf
    for r in range(1, d + 1):
        A = torch.randn(models, d, r, generator=generator, dtype=torch.float64)
        B = torch.randn(models, r, d, generator=generator, dtype=torch.float64)
        best = theory.loss_at_best_u(A @ B, Lam, N)
        worst = min(worst, float(best.min()) - float(theory.optimal_loss(eigenvalues, N, r)))
    return worst
