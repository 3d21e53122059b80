"""The chapter's experiments: repeated Monte Carlo solutions of the population model, the d sweep,
the 2-D task and the trained multi-domain task, each returning plain arrays over repeats/seeds."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from companions.domain_generalization import data, theory, training
from companions.stats import t_critical
from companions.train import progress as progress_bar


def mean_se(values) -> tuple[float, float]:
    """Mean and standard error (sample standard deviation / sqrt(n)) of a 1-D sequence."""
    v = np.asarray(values, dtype=float)
    if v.size < 2:
        raise ValueError(
            f"parameter 'values' has {v.size} item(s): a standard error needs two or more"
        )
    return float(v.mean()), float(v.std(ddof=1) / math.sqrt(v.size))


def decide(effect: float, se: float, margin: float, n: int) -> bool | None:
    """Is ``effect`` (a mean over ``n`` seeds or repeats, standard error ``se``) above ``margin``?

    With c the two-sided 95 % Student-t critical value for n - 1 degrees of freedom: True if
    effect - c se > margin, False if effect + c se <= margin (the whole interval is at or below the
    margin, which includes an exact tie with no spread), None (inconclusive) otherwise."""
    if n < 2:
        raise ValueError(f"parameter 'n' = {n!r} is not allowed: a standard error needs n >= 2")
    c = t_critical(n - 1)
    if effect - c * se > margin:
        return True
    if effect + c * se <= margin:
        return False
    return None


def both_above(a: bool | None, b: bool | None) -> bool | None:
    """Conjunction of two decisions: False if either is False, None if either is undecided."""
    if a is False or b is False:
        return False
    if a is None or b is None:
        return None
    return True


@dataclass
class PopulationSweep:
    lambdas: tuple
    alpha: np.ndarray  # (repeats, lambdas), ERM-l2
    beta: np.ndarray
    ood_correct: np.ndarray  # ERM-l2 on fresh OOD draws, counts
    l1_alpha: np.ndarray
    l1_beta: np.ndarray
    l1_slack: np.ndarray  # lam - gamma E[-l'(alpha S_R)]
    l1_slack_se: np.ndarray
    l1_ood_correct: np.ndarray
    samples: int


def population_sweep(
    r: int,
    d: int,
    *,
    gamma: float,
    lambdas,
    samples: int,
    repeats: int,
    generator: torch.Generator,
    device=None,
    progress: bool = True,
) -> PopulationSweep:
    """ERM-l2 and ERM-l1 optima for each lambda, on ``repeats`` independent sets of ``samples`` ID
    draws; OOD accuracy on as many fresh OOD draws (the same draws for every lambda of a repeat)."""
    shape = (repeats, len(lambdas))
    out = {k: np.zeros(shape) for k in ("a", "b", "o", "a1", "b1", "s1", "se1", "o1")}
    for k in progress_bar(range(repeats), desc="population repeats", disable=not progress):
        s_r, s_u = data.sample_sums(
            samples, r, d=d, gamma=gamma, generator=generator, device=device
        )
        o_r, o_u = data.sample_sums(
            samples, r, d=d, gamma=-gamma, generator=generator, device=device
        )
        for j, lam in enumerate(lambdas):
            opt = theory.solve_l2(s_r, s_u, lam=lam, r=r, d=d)
            out["a"][k, j], out["b"][k, j] = opt.alpha, opt.beta
            out["o"][k, j] = theory.ood_correct(opt.alpha, opt.beta, o_r, o_u)
            l1 = theory.solve_l1(s_r, s_u, lam=lam, r=r, d=d, gamma=gamma)
            out["a1"][k, j], out["b1"][k, j], out["s1"][k, j], out["se1"][k, j] = (
                l1.alpha,
                l1.beta,
                l1.kkt_slack,
                l1.kkt_slack_se,
            )
            out["o1"][k, j] = theory.ood_correct(l1.alpha, l1.beta, o_r, o_u)
    return PopulationSweep(
        tuple(lambdas),
        out["a"],
        out["b"],
        out["o"],
        out["a1"],
        out["b1"],
        out["s1"],
        out["se1"],
        out["o1"],
        samples,
    )


def domain_gammas(gamma_bar: float, count: int, spread: float) -> list[float]:
    """``count`` training correlations spread evenly over [gamma_bar - spread, gamma_bar + spread]
    (their mean is gamma_bar; one domain sits at gamma_bar)."""
    if count == 1:
        return [gamma_bar]
    return [gamma_bar + spread * (2 * k / (count - 1) - 1) for k in range(count)]


def sample_sums_domains(
    n: int, r: int, *, d: int, gammas, generator: torch.Generator, chunk: int = 10_000, device=None
) -> tuple[torch.Tensor, torch.Tensor]:
    """(S_R, S_U) for n draws from a mixture of domains: per example a domain e is drawn uniformly
    from ``gammas``, then the environmental coordinates from D_{gamma_e} (Section 6.2.1's
    environments). The coordinates stay exchangeable within R and within U, which is all Lemma
    E.5's symmetry needs, so the reduced objective (E.10) still applies."""
    g = torch.tensor(list(gammas), dtype=torch.float64)
    s_r, s_u = [], []
    for start in range(0, n, chunk):
        m = min(chunk, n - start)
        e = torch.randint(len(g), (m,), generator=generator)
        z_r = torch.rand(m, r, generator=generator, dtype=torch.float64)
        u = torch.rand(m, d - r, generator=generator, dtype=torch.float64)
        pos = torch.rand(m, d - r, generator=generator, dtype=torch.float64) < 0.5 + g[e, None]
        s_r.append(z_r.sum(-1))
        s_u.append(torch.where(pos, u, -u).sum(-1))
    return torch.cat(s_r).to(device), torch.cat(s_u).to(device)


@dataclass
class DomainSweep:
    counts: tuple
    gammas: dict  # count -> training correlations
    l2_ood: np.ndarray  # (repeats, counts) OOD accuracy of the ERM-l2 optimum
    l1_ood: np.ndarray  # the same for ERM-l1
    l2_ood_correct: np.ndarray  # counts of correct OOD draws (for a Wilson bound)


def domain_sweep(
    r: int,
    d: int,
    *,
    gamma_bar: float,
    spread: float,
    counts,
    lam_l2: float,
    lam_l1: float,
    samples: int,
    repeats: int,
    generator: torch.Generator,
    device=None,
    progress: bool = True,
) -> DomainSweep:
    """ERM-l2 and ERM-l1 optima trained on a mixture of E_tr domains (correlations
    ``domain_gammas(gamma_bar, E_tr, spread)``), tested on the unseen domain -gamma_bar."""
    shape = (repeats, len(counts))
    l2, l1, k2 = np.zeros(shape), np.zeros(shape), np.zeros(shape)
    gam = {c: domain_gammas(gamma_bar, c, spread) for c in counts}
    for k in progress_bar(range(repeats), desc="domain sweep repeats", disable=not progress):
        o_r, o_u = data.sample_sums(
            samples, r, d=d, gamma=-gamma_bar, generator=generator, device=device
        )
        for j, c in enumerate(counts):
            s_r, s_u = sample_sums_domains(
                samples, r, d=d, gammas=gam[c], generator=generator, device=device
            )
            opt = theory.solve_l2(s_r, s_u, lam=lam_l2, r=r, d=d)
            k2[k, j] = theory.ood_correct(opt.alpha, opt.beta, o_r, o_u)
            l2[k, j] = k2[k, j] / samples
            o1 = theory.solve_l1(s_r, s_u, lam=lam_l1, r=r, d=d, gamma=gamma_bar)
            l1[k, j] = theory.ood_correct(o1.alpha, o1.beta, o_r, o_u) / samples
    return DomainSweep(tuple(counts), gam, l2, l1, k2)


@dataclass
class DSweep:
    d_values: tuple
    alpha: np.ndarray  # (repeats, len(d_values))
    beta: np.ndarray
    ood_accuracy: np.ndarray
    normal_accuracy: np.ndarray


def d_sweep(
    r: int,
    d_values,
    *,
    gamma: float,
    lam: float,
    samples: int,
    repeats: int,
    generator: torch.Generator,
    device=None,
    progress: bool = True,
) -> DSweep:
    """The ERM-l2 optimum and its OOD accuracy as the number of environmental features grows."""
    shape = (repeats, len(d_values))
    a, b, acc, normal = (np.zeros(shape) for _ in range(4))
    for k in progress_bar(range(repeats), desc="d sweep repeats", disable=not progress):
        for j, d in enumerate(d_values):
            s_r, s_u = data.sample_sums(
                samples, r, d=d, gamma=gamma, generator=generator, device=device
            )
            o_r, o_u = data.sample_sums(
                samples, r, d=d, gamma=-gamma, generator=generator, device=device
            )
            opt = theory.solve_l2(s_r, s_u, lam=lam, r=r, d=d)
            a[k, j], b[k, j] = opt.alpha, opt.beta
            acc[k, j] = theory.ood_correct(opt.alpha, opt.beta, o_r, o_u) / samples
            normal[k, j] = theory.normal_ood_accuracy(opt.alpha, opt.beta, r, d, gamma)
    return DSweep(tuple(d_values), a, b, acc, normal)


@dataclass
class TwoDResult:
    id_acc: dict = field(default_factory=dict)  # method -> list over seeds
    ood_acc: dict = field(default_factory=dict)
    slope: dict = field(default_factory=dict)  # w2 / w1 of the learned classifier A^T u
    singular_values: dict = field(default_factory=dict)
    runs: dict = field(default_factory=dict)


def two_d_experiment(
    n: int,
    n_test: int,
    *,
    steps: int,
    lr: float,
    lam: float,
    seeds: int,
    generator_for,
    device=None,
    progress: bool = True,
) -> TwoDResult:
    """ERM and ERM-NU on the 2-D task (ID: x2 agrees with y w.p. 0.7; OOD: 0.3), per seed.

    ``generator_for(seed)`` returns the CPU generator of a seed (data and initialisation)."""
    res = TwoDResult()
    for s in range(seeds):
        gen = generator_for(s)
        x, y = data.sample_two_d(n, 0.7, gen)
        xi, yi = data.sample_two_d(n_test, 0.7, gen)
        xo, yo = data.sample_two_d(n_test, 0.3, gen)
        x, y, xi, yi, xo, yo = (t.to(device) for t in (x, y, xi, yi, xo, yo))
        init = gen.get_state()
        for method, weight in (("ERM", 0.0), ("ERM-NU", lam)):
            gen.set_state(init)  # both methods start from the same initialisation
            run = training.train_two_d(
                x,
                y,
                lam=weight,
                steps=steps,
                lr=lr,
                generator=gen,
                progress=progress,
                desc=f"2-D {method} seed {s}",
            )
            w = run.direction()
            res.id_acc.setdefault(method, []).append(run.accuracy(xi, yi))
            res.ood_acc.setdefault(method, []).append(run.accuracy(xo, yo))
            res.slope.setdefault(method, []).append(float(w[1] / w[0]))
            res.singular_values.setdefault(method, []).append(
                torch.linalg.svdvals(x @ run.A.T).cpu().tolist()
            )
            res.runs.setdefault(method, []).append(run)
    return res


@dataclass
class TaskResult:
    methods: dict  # name -> (method, lam)
    id_acc: dict = field(default_factory=dict)
    ood_acc: dict = field(default_factory=dict)
    stable_rank: dict = field(
        default_factory=dict
    )  # of the OOD feature matrix, standard definition
    w: dict = field(default_factory=dict)


def task_experiment(
    cfg_task: dict, methods: dict, seeds: int, generator_for, device=None, progress: bool = True
) -> TaskResult:
    """Train each method of ``methods`` (name -> (method, lam)) on the multi-domain task, per seed.

    ``cfg_task`` holds r, d, gammas, n, test, steps, batch, lr. The unseen domain has correlation
    -mean(gammas). Data are drawn once per seed and shared by the methods.
    """
    c = cfg_task
    res = TaskResult(dict(methods))
    gamma_test = -float(np.mean(c["gammas"]))
    for s in range(seeds):
        gen = generator_for(s)
        x, y, dom = data.sample_domains(c["n"], c["r"], c["d"], c["gammas"], gen)
        xo, yo, _ = data.sample_domains(c["test"], c["r"], c["d"], [gamma_test], gen)
        x, y, xo, yo = (t.to(device) for t in (x, y, xo, yo))
        state = gen.get_state()
        for name, (method, lam) in methods.items():
            gen.set_state(state)  # the same batches for every method
            run = training.train_gated(
                x,
                y,
                domain=dom,
                method=method,
                lam=lam,
                steps=c["steps"],
                batch_per_domain=c["batch"],
                lr=c["lr"],
                generator=gen,
                progress=progress,
                desc=f"{name} seed {s}",
            )
            res.id_acc.setdefault(name, []).append(training.gated_accuracy(run.w, x, y))
            res.ood_acc.setdefault(name, []).append(training.gated_accuracy(run.w, xo, yo))
            res.stable_rank.setdefault(name, []).append(float(theory.stable_rank(xo * run.w)))
            res.w.setdefault(name, []).append(run.w.cpu())
    return res
