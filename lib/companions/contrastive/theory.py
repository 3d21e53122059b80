"""Closed forms of the two papers and of this book's exact computations for the generator.

Numbers in docstrings are [001]'s equations unless tagged [000]. "Exact" here means: exact for the
generator of ``data.py`` with uniform attention, in the population (infinite-batch) limit.
"""

from __future__ import annotations

import math

import mpmath
import sympy as sp
import torch

# ---------------------------------------------------------------------------------------------
# Stage 1: the linear regime (Lemma 3.1, [000] Theorem 3.1)
# ---------------------------------------------------------------------------------------------


def growth_rate(kappa_j, eta: float, lam: float, n_neg: int, c_tau: float = 1.0):
    """Per-step factor of ``<w, M_j>`` at ``b = 0`` with uniform logits and the population gradient:
    ``g_j = 1 - eta lam + eta c_tau (1 - 1/|B|) kappa_j`` with ``|B| = 1 + n_neg``.

    Lemma 3.1 (7) is this with ``kappa_j = eps_j C_z loglog d / d``, ``c_tau = 1`` and the factor
    ``1 - ell'_p ~ 1 - 1/|B|`` rounded to 1 (it is dropped in (253))."""
    B = 1 + n_neg
    return 1 - eta * lam + eta * c_tau * (1 - 1 / B) * torch.as_tensor(kappa_j, dtype=torch.float64)


def population_gradient(
    W: torch.Tensor, M: torch.Tensor, kappa_j, n_neg: int, c_tau: float = 1.0
) -> torch.Tensor:
    """The population data gradient at ``b = 0``, uniform attention and uniform logits (the step
    behind Lemma 3.1 (7)-(8)): ``-c_tau (1 - 1/|B|) W Sigma_+`` with
    ``Sigma_+ = sum_j kappa_j M_j M_j^T``.
    ``W``: ``(R, m, d1)``, ``M``: ``(R, d1, d)``; returns ``(R, m, d1)``."""
    k = torch.as_tensor(kappa_j, dtype=M.dtype, device=M.device)
    return -c_tau * (1 - 1 / (1 + n_neg)) * ((W @ M) * k) @ M.transpose(-1, -2)


def gradient_ratio_per_feature(
    g: torch.Tensor, g_pop: torch.Tensor, M: torch.Tensor
) -> torch.Tensor:
    """Per run and feature, the least-squares scale of the measured gradient's ``M_j`` component on
    the predicted one: ``<g M_j, g_pop M_j> / ||g_pop M_j||^2`` over neurons, ``(R, d)`` (1 if they
    agree)."""
    a, p = g @ M, g_pop @ M  # (R, m, d)
    return (a * p).sum(-2) / (p * p).sum(-2)


def noise_rate(eta: float, lam: float) -> float:
    """Per-step factor of every ``<w, M_perp>``: ``1 - eta lam`` (Lemma 3.1 (8); no systematic
    gradient, since the noise of the two views is independent, (183) / [000](37))."""
    return 1 - eta * lam


def predicted_t1(kappas, d1: int, eta: float, lam: float, n_neg: int, c_tau: float = 1.0) -> float:
    """Expected first ``t`` with ``||M M^T w||^2 >= ||w||^2 / 2`` (34) under the exact geometric
    growth, averaging over the initialisation: ``sum_j g_j^{2t} = (d1 - d) (1 - eta lam)^{2t}``
    (bisection)."""
    g = growth_rate(kappas, eta, lam, n_neg, c_tau)
    d = len(g)
    r = noise_rate(eta, lam)

    def f(t):
        return float(torch.log((g / r) ** (2 * t)).exp().sum()) - (d1 - d)

    lo, hi = 0.0, 1.0
    while f(hi) < 0:
        hi *= 2
        if hi > 1e9:
            return math.inf
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if f(mid) < 0 else (lo, mid)
    return (lo + hi) / 2


#: The last step :func:`predicted_t1_mc` evaluates: a run still below 1/2 there makes it return
#: ``(inf, nan)`` (a growth too slow to end stage 1 in any run the book makes).
T1_MC_MAX_STEPS = 10**7


def predicted_t1_mc(
    kappas,
    d1: int,
    *,
    m: int,
    eta: float,
    lam: float,
    n_neg: int,
    c_tau: float = 1.0,
    runs: int = 200,
    generator: torch.Generator | None = None,
) -> tuple[float, float]:
    """T1 under the exact geometric growth with the chapter's own rule: the first integer ``t`` at
    which the mean over the ``m`` neurons of ``||M M^T w_i||^2 / ||w_i||^2`` reaches 1/2 ((34),
    ``t1_rule="mean"``), by Monte Carlo over the Gaussian initialisation (``<w_i, M_j>`` and the
    ``d1 - d`` noise coordinates i.i.d.). Returns the mean and the standard deviation over ``runs``
    initialisations, or ``(inf, nan)`` when some run has not reached 1/2 by step
    :data:`T1_MC_MAX_STEPS`."""
    lg = torch.log(growth_rate(kappas, eta, lam, n_neg, c_tau) / noise_rate(eta, lam))
    d = len(lg)
    a2 = torch.randn(runs, m, d, generator=generator, dtype=torch.float64) ** 2
    n2 = torch.zeros(runs, m, dtype=torch.float64)
    for lo in range(0, d1 - d, 1024):  # chunked: bounded memory at large d1
        n2 += (
            torch.randn(runs, m, min(1024, d1 - d - lo), generator=generator, dtype=torch.float64)
            ** 2
        ).sum(-1)
    done = torch.full((runs,), -1.0, dtype=torch.float64)
    t = 0
    while bool((done < 0).any()):
        if t > T1_MC_MAX_STEPS:
            return math.inf, math.nan
        fe = (a2 * torch.exp(2 * t * lg)).sum(-1)
        hit = ((fe / (fe + n2)).mean(-1) >= 0.5) & (done < 0)
        done[hit] = float(t)
        t += 1
    return float(done.mean()), float(done.std())


def t1_papers(d: int, d1: int, eta: float) -> dict:
    """The two papers' stage-1 lengths without their Theta constants: [000](40)
    ``d log d / (eta loglog d)`` and [001] (33) ``d1 log d / (eta loglog d)``."""
    ll = math.log(math.log(d))
    return {"000 (40)": d * math.log(d) / (eta * ll), "001 (33)": d1 * math.log(d) / (eta * ll)}


# ---------------------------------------------------------------------------------------------
# Initial geometry: Definition B.1, Lemma B.2 ([000] Definition C.1, Lemma C.1)
# ---------------------------------------------------------------------------------------------


def c1(rho: float, gamma: float) -> float:
    """``c_1 = (eps_max / eps_min)^2 2 (1 + gamma)`` (28), ``rho = eps_min / eps_max``."""
    return 2 * (1 + gamma) / rho**2


def c2(rho: float, gamma: float) -> float:
    """``c_2 = (eps_min / eps_max)^2 2 (1 - gamma)`` (28)."""
    return 2 * (1 - gamma) * rho**2


def beta_tail(d: int, t: float) -> float:
    """``Pr[u^2 >= t]`` for ``u^2 = <w, M_j>^2 / ||M M^T w||^2 ~ Beta(1/2, (d-1)/2)`` (exact for a
    Gaussian ``w``, whatever ``sigma0`` and ``d1``); 0 when ``t >= 1``."""
    if t >= 1:
        return 0.0
    if t <= 0:
        return 1.0
    return float(1 - mpmath.betainc(0.5, (d - 1) / 2, 0, t, regularized=True))


def prob_ordinary(d: int, rho: float, gamma: float) -> float:
    """Exact ``Pr[i in M_j]`` of Definition B.1(a), (26): ``u^2 >= c_2 log d / d``."""
    return beta_tail(d, c2(rho, gamma) * math.log(d) / d)


def prob_lucky_first(d: int, rho: float, gamma: float) -> float:
    """Exact probability of the first condition of (27): ``u^2 >= c_1 log d / d`` (both signs)."""
    return beta_tail(d, c1(rho, gamma) * math.log(d) / d)


def prob_lucky_mc(
    d: int, rho: float, gamma: float, draws: int, generator: torch.Generator
) -> float:
    """Monte Carlo ``Pr[i in M*_j]`` of (27), both conditions, from ``draws`` Gaussian
    ``d``-vectors."""
    t1, t2 = c1(rho, gamma) * math.log(d) / d, c2(rho, gamma) * math.log(d) / d
    if t1 >= 1:
        return 0.0
    hits, done = 0, 0
    while done < draws:
        n = min(200_000, max(1000, 20_000_000 // d), draws - done)  # bounded memory at large d
        g = torch.randn(n, d, generator=generator, dtype=torch.float64)
        u2 = g**2 / (g**2).sum(-1, keepdim=True)
        others = u2[:, 1:].max(-1).values if d > 1 else torch.zeros(n, dtype=torch.float64)
        hits += int(((u2[:, 0] >= t1) & (others <= t2)).sum())
        done += n
    return hits / draws


def paper_lucky_exponent(rho: float, gamma: float) -> float:
    """(236)/(239): ``Pr[A_i] ~ d^{-c_1/2}`` with ``c_1 / 2 = rho^{-2} (1 + gamma)``."""
    return c1(rho, gamma) / 2


def paper_prob_B(d: int, rho: float, gamma: float) -> dict:
    """(238)'s second line, ``Pr[B_i] = (1 - p_2)^{d-1} = e^{-d^{1-a}} = 1`` with ``a = c_2/2``,
    beside the value of ``(1 - p_2)^{d-1}`` with (237)'s ``p_2 = d^{-a} / sqrt(log d)`` and with the
    exact ``p_2`` of :func:`prob_ordinary` (still treating the ``d - 1`` conditions as independent,
    as (238) does)."""
    a = c2(rho, gamma) / 2
    p2_paper = d ** (-a) / math.sqrt(math.log(d))
    p2_exact = prob_ordinary(d, rho, gamma)
    return {
        "paper": 1.0,
        "exp(-d^(1-a))": math.exp(-(d ** (1 - a))),
        "(1-p2_paper)^(d-1)": (1 - p2_paper) ** (d - 1),
        "(1-p2_exact)^(d-1)": (1 - p2_exact) ** (d - 1),
    }


def n_i_exact(d: int, rho: float, gamma: float) -> float:
    """``E|N_i| = d Pr[i in M_j]`` (exact), to set beside (14) / Lemma B.2(d),
    ``d^{1 - rho^2 (1-gamma)}``."""
    return d * prob_ordinary(d, rho, gamma)


# ---------------------------------------------------------------------------------------------
# Stage 2 (Lemma 3.2, Theorem D.1; [000] Theorem 3.2)
# ---------------------------------------------------------------------------------------------


def stage2_time(
    kappa_j, eta: float, *, lam: float, n_neg: int, d: int, c_b: float, c_tau: float = 1.0
):
    """Steps for a lucky neuron of feature ``j`` to grow from the bias level
    ``c_b sqrt(2 log d/d) ||w||`` to ``sqrt(d) ||w||`` at the stage-1 rate (the argument of
    (310)-(312)): ``ln(sqrt(d) / (c_b sqrt(2 log d / d))) / ln g_j``."""
    g = growth_rate(kappa_j, eta, lam, n_neg, c_tau)
    return math.log(math.sqrt(d) / (c_b * math.sqrt(2 * math.log(d) / d))) / torch.log(g)


def survives_bias_growth(kappa_j, n_neg: int, d: int, lam: float, c_tau: float = 1.0):
    """A lucky neuron's projection, growing by ``g_j = 1 - eta lam + eta c_tau (1 - 1/|B|) kappa_j``
    per step (:func:`growth_rate`), outgrows the bias branch ``b (1 + eta/d)`` of (285) iff
    ``c_tau (1 - 1/|B|) kappa_j > 1/d + lam`` (from (282)-(290); ``eps_j C_z loglog d > 1`` in the
    papers' units, where ``lam`` is dropped). Weight decay ``lam`` shrinks the projection, not the
    bias branch, so it raises the threshold. Returns the left side and the threshold
    ``1/d + lam``."""
    if lam < 0:
        raise ValueError(f"parameter 'lam' = {lam} is not allowed: expected lam >= 0")
    lhs = c_tau * (1 - 1 / (1 + n_neg)) * torch.as_tensor(kappa_j, dtype=torch.float64)
    return lhs, 1.0 / d + lam


# ---------------------------------------------------------------------------------------------
# Symbolic derivations (sympy)
# ---------------------------------------------------------------------------------------------


def kappa_symbolic(L: int = 4):
    """``kappa = E[(sum_l z_l)(sum_l z_l^+)]`` for one feature of the generator with ``L`` tokens,
    derived from its definition: support Bernoulli(p) and sign shared by the views,
    ``N ~ Bin(L, q) | N >= 1`` tokens per view, each magnitude ``U[a, 1]``, views independent given
    (support, sign). Returns ``(derived, closed_form, (p, a, q))``; the closed form is
    :func:`data.kappa`."""
    p, a, q = sp.symbols("p a q", positive=True)
    x = sp.Symbol("x")
    mu = sp.integrate(x / (1 - a), (x, a, 1))  # E|z| for U[a, 1]
    EN = sum(k * sp.binomial(L, k) * q**k * (1 - q) ** (L - k) for k in range(1, L + 1)) / (
        1 - (1 - q) ** L
    )
    derived = p * (EN * mu) ** 2  # E[s^2 sg^2] = p, and E[sum_l |z_l|] = E[N] E|z| per view
    closed = p * (L * q / (1 - (1 - q) ** L) * (1 + a) / 2) ** 2
    return derived, closed, (p, a, q)


def stage1_recursion_symbolic():
    """One population step in the linear regime: for ``w = alpha M_j + beta v`` (``v`` a noise
    direction) returns the new ``(alpha, beta)`` under ``w <- (1 - eta lam) w + eta c (1 - 1/B)
    Sigma_+ w`` with ``Sigma_+ = kappa M_j M_j^T`` (the only nonzero block along ``M_j, v``).
    Together with the expected gradient this is Lemma 3.1 with equality."""
    alpha, beta, eta, lam, c, B, kap = sp.symbols("alpha beta eta lambda c B kappa", positive=True)
    Mj, v = sp.Matrix([1, 0]), sp.Matrix([0, 1])
    w = alpha * Mj + beta * v
    Sigma = kap * Mj * Mj.T  # E[u_X u_Y^T] restricted to span(M_j, v): the noise cross-moment is 0
    w_new = (1 - eta * lam) * w + eta * c * (1 - 1 / B) * Sigma * w
    return w_new, (alpha, beta, eta, lam, c, B, kap)


# ---------------------------------------------------------------------------------------------
# Pruning (Theorem 3.2, Theorem F.1, Lemma F.2)
# ---------------------------------------------------------------------------------------------


def softmax_derivatives_symbolic(n_neg: int = 2):
    """(205)-(207) derived: ``ell'_p`` as the softmax of ``(u_p, u_1..u_S) / tau`` differentiated by
    sympy. Returns ``(d ell'_p / d u_p - (1/tau) ell'_p (1 - ell'_p),
    [d ell'_p / d u_s + (1/tau) ell'_p ell'_s])``, every entry 0 after simplification when (207)
    holds."""
    tau = sp.Symbol("tau", positive=True)
    up = sp.Symbol("u_p", real=True)
    us = sp.symbols(f"u_1:{n_neg + 1}", real=True)
    Z = sp.exp(up / tau) + sum(sp.exp(u / tau) for u in us)
    lp = sp.exp(up / tau) / Z
    ls = [sp.exp(u / tau) / Z for u in us]
    gap_p = sp.simplify(sp.diff(lp, up) - lp * (1 - lp) / tau)
    gaps_s = [sp.simplify(sp.diff(lp, u) + lp * l_s / tau) for u, l_s in zip(us, ls)]
    return gap_p, gaps_s


def f4_elapsed_time_symbolic():
    """F.4's elapsed time ``T = (eps_max / eps* - 1) d / (eta alpha eps*^2 C_z loglog d)`` against
    the rate ``r = eta alpha eps*^2 C_z loglog d / d`` of (15) without its constant. Returns
    ``(T r - (eps_max/eps* - 1), (1 + T r) eps*/eps_max - 1, T, r, symbols)``: the first two
    simplify to 0, i.e. the linearised growth ``1 + T r`` lifts the vanilla upper end
    ``(eps*/eps_max) tau`` of (13) exactly to ``tau`` of (18)."""
    eps_max, eps_s, d, eta, alpha, Cz, lld = sp.symbols(
        "epsilon_max epsilon_star d eta alpha C_z loglogd", positive=True
    )
    T = (eps_max / eps_s - 1) * d / (eta * alpha * eps_s**2 * Cz * lld)
    r = eta * alpha * eps_s**2 * Cz * lld / d
    return (
        sp.simplify(T * r - (eps_max / eps_s - 1)),
        sp.simplify((1 + T * r) * eps_s / eps_max - 1),
        T,
        r,
        (eps_max, eps_s, d, eta, alpha, Cz, lld),
    )


def prune_rate(eta: float, alpha: float, eps_star: float, kappa_star: float) -> float:
    """The per-step extra rate of (15) without its ``Omega`` constant,
    ``eta alpha eps*^2 C_z loglog d / d``, written with this generator's
    ``kappa* = eps* C_z loglog d / d``: ``eta alpha eps* kappa*``."""
    return eta * alpha * eps_star * kappa_star


def lemma_f2_margin(alpha: float, m: int, d: int, rho: float, p_star: float) -> float:
    """The pruning term of (181), ``alpha m eps* (loglog d / d) / Xi_2^2``, with its ``Omega``
    constant set to 1: ``Xi_2 = d^(C_m - rho^2) = m d^(-rho^2)`` (Theorem 3.1, ``m = d^C_m``) and
    ``eps* loglog d / d``, the probability that a sample carries ``M_j*`` (Definition 3.1), read as
    this generator's activation probability ``p_star``. Hence ``alpha p_star d^(2 rho^2) / m``:
    the rise of ``E[1 - ell'_p]`` on D1 that Lemma F.2 says masking P brings, at the least."""
    if not (0 < alpha <= 1 and m >= 1 and d >= 2 and 0 < rho <= 1 and 0 <= p_star <= 1):
        raise ValueError(
            f"lemma_f2_margin({alpha}, {m}, {d}, {rho}, {p_star}): expected 0 < alpha <= 1, "
            "m >= 1, d >= 2, 0 < rho <= 1 and 0 <= p_star <= 1"
        )
    xi2 = m * d ** (-(rho**2))
    return alpha * m * p_star / xi2**2


def f4_times(eps_max: float, eps_star: float, rate: float) -> tuple[float, float]:
    """Steps for the minority coefficient to grow by ``eps_max / eps*`` at per-step rate ``rate``:
    F.4's linearised ``(eps_max/eps* - 1) / rate``, and the exact geometric
    ``log(eps_max/eps*) / log(1 + rate)`` (smaller, since ``log x < x - 1``)."""
    ratio = eps_max / eps_star
    return (ratio - 1) / rate, math.log(ratio) / math.log1p(rate)


def extra_rate_ratio_symbolic():
    """The extra growth of (15) over that of (16):
    ``(eps*^2 alpha / d) / (eps*^3 alpha / d^2) = d / eps*``."""
    eps_s, alpha, d, c = sp.symbols("epsilon_star alpha d c", positive=True)
    return sp.simplify((eps_s**2 * alpha * c / d) / (eps_s**3 * alpha * c / d**2)), (eps_s, d)
