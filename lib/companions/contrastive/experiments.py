"""The part's experiments that a chapter runs in one call: each returns what was measured (the
chapter hands it to the ledger, whose registered rules decide); figures and tables are drawn by
``report.py``.

* :func:`lucky_rows` -- Definition B.1's exact probabilities and the lucky-set Monte Carlo;
* :func:`gradient_scale` -- the training gradient against the population step of stage 1;
* :func:`rate_slopes` -- per run and feature, the log-growth rate of the feature energy;
* :func:`t1_sweep` -- the length of stage 1 against ``d1``, measured and predicted;
* :func:`sweep_arms` -- [001] A.2's sweeps trained with and without pruning, and evaluated;
* :func:`width_sweep` -- what Algorithm 1 prunes, at several widths.
"""

from __future__ import annotations

import dataclasses
import math

import torch

from companions.contrastive import data as cdata
from companions.contrastive import metrics as cmet
from companions.contrastive import model as cmodel
from companions.contrastive import pruning as pr
from companions.contrastive import theory as th
from companions.contrastive import training as tr


# ---------------------------------------------------------------------------------------------
# The setting
# ---------------------------------------------------------------------------------------------
def lucky_rows(
    d_grid, rho_grid, gamma: float, draws: int, generator: torch.Generator
) -> list[dict]:
    """Per ``(d, rho)``: the lucky threshold ``c1 log d / d``, the exact ``Pr[i in M_j]`` and
    ``E|N_i|`` (Beta law), the exact probability of (27)'s first condition (an upper bound on
    ``Pr[lucky]``) and, where ``draws`` (a tenth of them for ``d >= 1000``) can see it (five
    expected hits or more), the Monte Carlo ``Pr[lucky]`` of both conditions (else ``None``)."""
    rows = []
    for d in d_grid:
        for rho in rho_grid:
            first = th.prob_lucky_first(d, rho, gamma)
            n = draws if d < 1000 else max(1000, draws // 10)
            mc = th.prob_lucky_mc(d, rho, gamma, n, generator) if first * n >= 5 else None
            rows.append(
                dict(
                    d=d,
                    rho=rho,
                    threshold=th.c1(rho, gamma) * math.log(d) / d,
                    ordinary=th.prob_ordinary(d, rho, gamma),
                    n_i=th.n_i_exact(d, rho, gamma),
                    lucky_first=first,
                    lucky_mc=mc,
                )
            )
    return rows


# ---------------------------------------------------------------------------------------------
# Stage 1
# ---------------------------------------------------------------------------------------------
def gradient_scale(
    s: tr.Setup,
    eps: list,
    nsr: float,
    *,
    batches: int,
    generators: tuple,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The training gradient at ``b = 0`` (``eps``: the run's frequencies, ``nsr``: its noise) on
    ``batches`` independent batches of ``s.K`` pairs at one
    fixed dictionary and initialisation (``generators``: three, for the dictionary, the weights and
    the batches), against the population step of stage 1 (:func:`theory.population_gradient`):
    per feature, the least-squares scale of the gradient's ``M_j`` component on the predicted one.
    Returns the mean over the batches and its standard error, ``(d,)`` each (1 if they agree)."""
    g_dict, g_init, g_data = generators
    kap = cdata.kappa(eps, s.p0, s.L, s.mag_low, s.token_q)
    M = cdata.dictionary(1, s.d1, s.d, g_dict).expand(batches, -1, -1)
    W = s.sigma0 * torch.randn(1, s.m, s.d1, generator=g_init, dtype=torch.float64)
    W = W.expand(batches, -1, -1)
    probs = cdata.activation_probs(eps, s.p0).expand(batches, -1)
    sigma = torch.full((batches,), math.sqrt(nsr / s.d1), dtype=torch.float64)
    batch = cdata.sample_batch(
        M,
        probs,
        sigma=sigma,
        K=s.K,
        L=s.L,
        mag_low=s.mag_low,
        q=s.token_q,
        generator=g_data,
        pooled=s.pooled,
    )
    g, _, _ = tr.gradient(W, torch.zeros(batches, s.m, dtype=torch.float64), batch, s)
    pop = th.population_gradient(W, M, kap, s.n_neg, s.c_tau)
    ratio = th.gradient_ratio_per_feature(g, pop, M)  # (batches, d)
    return ratio.mean(0), ratio.std(0) / math.sqrt(batches)


def rate_slopes(hist, start: float = 0.2) -> torch.Tensor:
    """Per run and feature, the least-squares slope in ``t`` of ``log sqrt(E_j(t))``, with
    ``E_j = sum_i <w_i, M_j>^2``, over the logged steps from the fraction ``start`` of the run on
    (after the initial transient): ``(R, d)``."""
    E = (hist.A**2).sum(2)  # (T, R, d)
    t = hist.steps.double()
    use = t >= start * float(t[-1])
    if int(use.sum()) < 2:
        raise ValueError("parameter 'start' leaves fewer than two logged steps to fit")
    tt = t[use] - t[use].mean()
    y = 0.5 * torch.log(E[use])
    return (y * tt[:, None, None]).sum(0) / (tt**2).sum()


def t1_sweep(
    s: tr.Setup,
    eps_min: float,
    *,
    nsr: float,
    d1_values,
    generator_of,
    runs: int = 2,
    mc_runs: int = 200,
    dtype=torch.float32,
    device="cpu",
) -> dict:
    """The length of stage 1 at each ``d1``: ``runs`` linear-regime runs (``s`` with ``bias=False``,
    ``d1`` replaced; 1.4 times the predicted length plus 5 steps), each run's T1 the first logged
    step where the mean over neurons of ``||M^T w||^2 / ||w||^2`` reaches 1/2 ((34), ``t1_rule =
    "mean"``). ``generator_of(k)``: a fresh generator for the seed offset ``k`` (20 + d1 for the
    runs, 30 + d1 for the Monte Carlo). Returns ``{d1: {"measured": mean over runs, "runs":
    [T1 per run], "energy": the energy-average prediction (theory.predicted_t1), "mc", "mc_sd":
    the Monte Carlo over the initialisation of the same rule}}``."""
    eps = cdata.eps_vector(s.d, s.n_maj, s.eps_max, eps_min)
    kap = cdata.kappa(eps, s.p0, s.L, s.mag_low, s.token_q)
    out = {}
    for d1 in d1_values:
        s1 = dataclasses.replace(s, d1=d1, bias=False)
        energy = th.predicted_t1(kap, d1, s1.eta, s1.lam, s1.n_neg, s1.c_tau)
        mc, mc_sd = th.predicted_t1_mc(
            kap,
            d1,
            m=s1.m,
            eta=s1.eta,
            lam=s1.lam,
            n_neg=s1.n_neg,
            c_tau=s1.c_tau,
            runs=mc_runs,
            generator=generator_of(30 + d1),
        )
        h = tr.train(
            s1,
            torch.full((runs,), eps_min, dtype=torch.float64),
            nsr=torch.full((runs,), nsr, dtype=torch.float64),
            steps=int(1.4 * energy) + 5,
            generator=generator_of(20 + d1),
            device=device,
            dtype=dtype,
            log_every=1,
            desc=f"T1 at d1={d1}",
        )
        frac = ((h.A**2).sum(-1) / h.norm**2).mean(-1)  # (T, runs), the rule (34) averaged
        per_run = []
        for r in range(runs):
            hit = torch.nonzero(frac[:, r] >= 0.5)
            if len(hit) == 0:
                raise ValueError(f"run {r} at d1 = {d1} did not reach T1: raise the steps")
            per_run.append(float(h.steps[hit[0, 0]]))
        out[d1] = dict(
            measured=sum(per_run) / runs, runs=per_run, energy=energy, mc=mc, mc_sd=mc_sd
        )
    return out


# ---------------------------------------------------------------------------------------------
# Pruning
# ---------------------------------------------------------------------------------------------
#: The statistics of [001] A.2 that :func:`sweep_arms` reads, by their figure.
SWEEP_STATISTICS = (
    "Fig. 2: # neurons |cos| ≥ 0.3",
    "Fig. 3: max |cos|",
    "Fig. 4: test cosine",
    "Fig. 5: 1 − R² (minority)",
    "test MSE",
)


def arm_statistics(hist, s: tr.Setup, *, test_pairs, train_pairs, test_seed, chunk, device, target):
    """[001] A.2's statistics of every run of ``hist`` (minority features averaged), keyed by
    :data:`SWEEP_STATISTICS`: the two alignment counts of the final weights and the evaluations
    of Experiments 3-4 (:func:`metrics.evaluate_runs`)."""
    n03, cmax = cmet.minority_alignment(cmodel.cosines(hist.W, hist.M.to(hist.W.dtype)), s.n_maj)
    cos_te, _, mse, r2m = cmet.evaluate_runs(
        hist,
        s,
        runs=slice(0, len(hist.W)),
        test_pairs=test_pairs,
        train_pairs=train_pairs,
        test_seed=test_seed,
        chunk=chunk,
        device=device,
        target=target,
    )
    return dict(zip(SWEEP_STATISTICS, (n03, cmax, cos_te, r2m, mse)))


def sweep_arms(s: tr.Setup, eps_min, nsr, steps: int, generator_of, *, arms: dict, **kw) -> dict:
    """Train the runs ``(eps_min, nsr)`` once per arm, every arm from the same seed
    (``generator_of()`` gives a fresh generator, the same each call), so the arms share their
    dictionaries, initialisations and batches; ``arms``: ``{name: masks factory or None}``
    (:func:`training.train_chunked`). ``kw``: ``chunk``, ``dtype``, ``device``, ``log_every`` for
    the training and ``test_pairs``, ``train_pairs``, ``test_seed``, ``eval_chunk``, ``target``
    for :func:`arm_statistics`. Returns ``{name: {statistic: (R,)}}``."""
    out = {}
    for name, factory in arms.items():
        h = tr.train_chunked(
            s,
            eps_min,
            nsr=nsr,
            steps=steps,
            generator=generator_of(),
            chunk=kw["chunk"],
            device=kw.get("device", "cpu"),
            dtype=kw.get("dtype", torch.float32),
            log_every=kw.get("log_every", 10),
            desc=f"Figs 2-5: {name}",
            masks_factory=factory,
        )
        out[name] = arm_statistics(
            h,
            s,
            test_pairs=kw["test_pairs"],
            train_pairs=kw["train_pairs"],
            test_seed=kw["test_seed"],
            chunk=kw["eval_chunk"],
            device=kw.get("device", "cpu"),
            target=kw.get("target", "mean"),
        )
    return out


def width_sweep(
    s: tr.Setup,
    widths,
    *,
    eps_min: float,
    nsr: float,
    steps: int,
    repeats: int,
    alpha: float,
    every: int,
    generator_of,
    dtype=torch.float32,
    device="cpu",
) -> list[dict]:
    """Algorithm 1 as written (magnitude pruning from ``t = 0``, every ``every`` steps) at each
    width ``m`` of ``widths``, ``repeats`` runs each (``generator_of(m)`` their generator): per
    width, ``{"m", "categories": {category: (R,)}, "share": (R,)}``, the fractions of pruned
    neuron-steps (logged every fifth step of the second half of training) that fell on minority
    specialists, majority specialists and unaligned neurons, and the share of minority
    specialists among all neurons at the end."""
    out = []
    for m in widths:
        sm = dataclasses.replace(s, m=m)
        em = torch.full((repeats,), eps_min, dtype=torch.float64)
        hook = pr.Pruner(alpha=alpha, rule="magnitude", every=every, log_every=5)
        h = tr.train(
            sm,
            em,
            nsr=torch.full_like(em, nsr),
            steps=steps,
            generator=generator_of(m),
            device=device,
            dtype=dtype,
            masks=hook,
            log_every=max(10, steps // 20),
            desc=f"width m = {m}",
        )
        cats = hook.log.since(steps // 2).categories(s.n_maj)  # once the neurons have specialised
        spec = pr.specialists(h.W, h.M.to(h.W.dtype))
        share = spec[..., s.n_maj :].any(-1).double().mean(-1)
        out.append(dict(m=m, categories=cats, share=share))
    return out
