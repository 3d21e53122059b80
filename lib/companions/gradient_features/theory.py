"""Closed forms and exact checks of Chapter 3 / Appendix B.

* Theorem 3.12 (3.10)-(3.13): the width, time and error terms of the guarantee, in log10 with
  every Theta/O constant set to 1, for given gradient-feature parameters;
* Lemma 3.14: its error term, and the width at which it falls below a target;
* Lemma 3.17: the mixture-of-Gaussians ground truth ``g*`` and its hinge-loss bound;
* Lemma 3.21 / (B.469)-(B.470) and (B.551): the parity ground truths, in integer arithmetic;
* Remark B.45: ``E[y x]`` of the parity distribution, exactly;
* Proposition 3.23: the fixed-feature bound;
* Theorem B.69: its requirements on ``n``, ``m`` and ``T`` with the constants set to 1;
* (B.480) / (B.547) and Lemma B.63: the Fourier coefficients of Majority and the one-step gradient
  of uniform parity, exactly by enumeration of the cube.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import sympy as sp
import torch

from companions.boolean import cube, subset_index, walsh_hadamard

# ---------------------------------------------------------------------------------------------
# Theorem 3.12
# ---------------------------------------------------------------------------------------------


def theorem_3_12_terms(r, p, *, gamma, B_G, B_a1, B_a2, B_b, B_x1, eps, delta, b_tilde=0.0) -> dict:
    """log10 of the requirements (3.10) on ``m`` and (3.11) on ``T`` (with ``m`` at (3.10)), and the
    error term ``r B_a1 B_x1 sqrt(2 gamma)`` of (3.13) (its ``n``-term dropped, i.e.
    ``n -> infinity``), every Theta/O constant set to 1."""
    for name, v in (("p", p), ("B_G", B_G), ("eps", eps), ("delta", delta)):
        if not v > 0:
            raise ValueError(f"parameter '{name}' = {v} is not allowed: it must be > 0")
    log10 = math.log10
    lead = (
        4 * (log10(r * B_a1 * B_x1) + 0.5 * (log10(B_b) - log10(B_G))) - log10(p) - 4 * log10(eps)
    )
    terms = [lead, -0.5 * log10(delta), 2 * log10(max(math.log(r / delta), 1e-300)) - log10(p)]
    top = max(terms)
    log_m = top + log10(sum(10 ** (t - top) for t in terms))  # the sum (3.10), in log10
    log_mp4 = (log_m + log10(p)) / 4
    first = 10 ** (log10(math.sqrt(r) * B_a2 * B_b * B_x1) - log_mp4)
    second = math.sqrt(max(log_m * math.log(10), 1.0)) / math.sqrt(B_b * B_G) + 10 ** (
        -log10(B_x1) - log_mp4
    )
    log_T = log10(first + 10**log_m * b_tilde if b_tilde else first) + log10(second) - log10(eps)
    return {
        "log10_m": log_m,
        "log10_T": log_T,
        "error_term": r * B_a1 * B_x1 * math.sqrt(2 * gamma),
    }


# ---------------------------------------------------------------------------------------------
# Mixtures of Gaussians: Lemma 3.17
# ---------------------------------------------------------------------------------------------


def mixture_scales(mixture, tau: float) -> dict:
    """The quantities of Assumption 3.15 / Lemma 3.17 for a :class:`~.data.Mixture`:
    ``B_mu1, B_mu2, sigma_B, sigma_B+, p_B`` and ``c = sqrt(tau log d) sigma_B+``. ``p_B`` is the
    smallest *overall* component weight, as (B.289) uses ``p_l`` (the definition's ``q(x | y) =
    sum_{j in S(y)} p_j N_j`` would make ``p_j`` a within-class weight, twice as large)."""
    d = mixture.d
    mu_tilde = mixture.means.norm(dim=1) / math.sqrt(d)
    B_mu1, B_mu2 = float(mu_tilde.min()), float(mu_tilde.max())
    sigma_B = float(mixture.sigmas.max())
    sigma_plus = max(sigma_B, B_mu2)
    p_B = float(mixture.weights.min())
    c = math.sqrt(tau * math.log(d)) * sigma_plus
    return dict(B_mu1=B_mu1, B_mu2=B_mu2, sigma_B=sigma_B, sigma_plus=sigma_plus, p_B=p_B, c=c)


def mixture_ground_truth(mixture, tau: float, X: torch.Tensor) -> torch.Tensor:
    """``g*(x) = sum_j y_(j) / c * sigma(<D_j, x> - 2 c)`` of Lemma 3.17, ``c = sqrt(tau log d)
    sigma_B+``, for inputs ``X`` (..., d)."""
    c = mixture_scales(mixture, tau)["c"]
    D = mixture.directions.to(X.dtype)
    return (torch.relu(X @ D.T - 2 * c) * mixture.labels.to(X.dtype)).sum(-1) / c


def mixture_ground_truth_hinge(d: int, r: int, mean_norm: float, sigma: float, tau: float):
    """This book's Lipschitz upper bound on the hinge loss of Lemma 3.17's ``g*`` for
    :func:`~.data.orthogonal_mixture` (mpmath, 60 digits): on component ``j`` the projections
    ``t_l = <D_l, x>`` are independent,
    ``t_j ~ N(mean_norm sqrt(d), sigma^2)`` and ``t_l ~ N(0, sigma^2)``. The hinge is 1-Lipschitz
    in ``g``, so it is at most ``E[(1 - sigma(t_j - 2c)/c)_+] + (r - 1) E[sigma(t_l - 2c)]/c``,
    both in closed form with ``Phi`` and ``phi``. Returns ``(own, others)``, the two terms, as
    ``log10`` (``-inf`` for an exact zero) since they fall far below float range."""
    import mpmath as mp

    mp.mp.dps = 60
    c = mp.sqrt(tau * mp.log(d)) * sigma
    mu = mean_norm * mp.sqrt(d)
    Phi = mp.ncdf

    def phi(z):
        return mp.npdf(z)

    a, b = (2 * c - mu) / sigma, (3 * c - mu) / sigma
    # (1 - (t - 2c)/c)_+ is 1 for t <= 2c, (3c - t)/c on (2c, 3c), 0 above
    own = Phi(a) + ((3 * c - mu) * (Phi(b) - Phi(a)) + sigma * (phi(b) - phi(a))) / c
    z = 2 * c / sigma
    others = (r - 1) * sigma * (phi(z) - z * (1 - Phi(z))) / c
    return tuple(float(mp.log10(v)) if v > 0 else float("-inf") for v in (own, others))


def mixture_ground_truth_hinge_log10(
    d: int, r: int, mean_norm: float, sigma: float, tau: float
) -> float:
    """``log10`` of :func:`mixture_ground_truth_hinge`'s upper bound, its two terms added without
    leaving float range."""
    own, others = mixture_ground_truth_hinge(d, r, mean_norm, sigma, tau)
    top, low = max(own, others), min(own, others)
    if top == -math.inf:
        return top
    return top + math.log10(1 + 10 ** (low - top))


def mixture_hinge_bound(d: int, tau: float) -> float:
    """Lemma 3.17's bound on the hinge loss of ``g*``: ``3/d^tau + 4/(d^(0.9 tau - 1)
    sqrt(tau log d))``."""
    return 3 / d**tau + 4 / (d ** (0.9 * tau - 1) * math.sqrt(tau * math.log(d)))


def lemma_3_17_parameters(mixture, tau: float) -> dict:
    """Lemma 3.17's ``p`` (the Theta in the exponent set to 1), ``gamma`` and the leading term of
    ``B_G``, and the ``B_F = (B_a1, B_a2, B_b)`` and ``B_x1`` of the ground truth (B.5.2)."""
    s = mixture_scales(mixture, tau)
    d, r = mixture.d, mixture.means.shape[0]
    root = math.sqrt(tau * math.log(d))
    log10_p = math.log10(s["B_mu1"] / (root * s["sigma_plus"])) - tau * s["sigma_plus"] ** 2 / s[
        "B_mu1"
    ] ** 2 * math.log10(d)
    return dict(
        log10_p=log10_p,
        gamma=d ** -(0.9 * tau - 1.5),
        B_G=s["p_B"] * s["B_mu1"] * math.sqrt(d),
        B_a1=1 / (root * s["sigma_plus"]),
        B_a2=math.sqrt(r) / (root * s["sigma_plus"]),
        B_b=2 * root * s["sigma_plus"],
        B_x1=(s["B_mu2"] + s["sigma_plus"]) * math.sqrt(d),
        r=r,
    )


def theorem_3_18_error(r: int, d: int, tau: float) -> float:
    """The first term of Theorem 3.18's error bound, ``sqrt(2) r / d^(0.4 tau - 0.8)``."""
    return math.sqrt(2) * r / d ** (0.4 * tau - 0.8)


def lemma_3_21_parameters(d: int, k: int, r: int, p_A: float, p_o: float, tau: float) -> dict:
    """Lemma 3.21's ``p`` (the Theta in the exponent set to 1), ``gamma`` and the leading term of
    ``B_G`` (3.15), the ``B_F`` of (B.470), and ``B_x1 = sqrt(E ||x||^2)`` of the parity
    distribution (``M = I``)."""
    log10_p = -math.log10(math.sqrt(tau * math.log(d))) - tau * r * math.log10(d)
    norm2 = (1 - 2 * r * p_A) * r * k + 2 * r * p_A * k + 2 * p_o * (d - r * k)
    return dict(
        log10_p=log10_p,
        gamma=float(d) ** -(tau - 2),
        B_G=math.sqrt(k) * p_A,
        B_a1=2 * math.sqrt(k),
        B_a2=2 * math.sqrt(r * k * (k + 1)),
        B_b=(k + 1) / math.sqrt(k),
        B_x1=math.sqrt(norm2),
        r=3 * r * (k + 1),
    )


def source_b_tilde(params: dict, root_of: float) -> float:
    """The bias the proofs of Theorems B.35 and B.52 choose, ``b~ = B_G^(1/4) B_a2 B_b^(3/4) /
    (sqrt(root_of) B_a1)``, its Theta constant 1: ``root_of`` is ``r`` in B.35 (mixtures) and
    ``tau`` in B.52 (parity), as printed."""
    return (
        params["B_G"] ** 0.25
        * params["B_a2"]
        * params["B_b"] ** 0.75
        / (math.sqrt(root_of) * params["B_a1"])
    )


def guarantee(params: dict, eps: float = 0.1, delta: float = 0.1, b_tilde: float = 0.0) -> dict:
    """:func:`theorem_3_12_terms` for the output of :func:`lemma_3_17_parameters` or
    :func:`lemma_3_21_parameters` (``r`` there is the ground truth's number of neurons);
    ``b_tilde`` enters the ``m b~`` term of (3.11)."""
    return theorem_3_12_terms(
        params["r"],
        10 ** params["log10_p"],
        gamma=params["gamma"],
        B_G=params["B_G"],
        B_a1=params["B_a1"],
        B_a2=params["B_a2"],
        B_b=params["B_b"],
        B_x1=params["B_x1"],
        eps=eps,
        delta=delta,
        b_tilde=b_tilde,
    )


def lemma_3_14_term(params: dict, log10_m: float) -> float:
    """Lemma 3.14's error term ``sqrt(2) r B_a1 B_x1 (sqrt(gamma) + sqrt(2 B_b / (sqrt(m p)
    B_G)))`` at ``m = 10^log10_m``, for the output of :func:`lemma_3_17_parameters` or
    :func:`lemma_3_21_parameters`. The hinge loss of the zero network is 1, so the term says
    something only below 1."""
    log10_mp = log10_m + params["log10_p"]
    width = math.sqrt(2 * params["B_b"] / params["B_G"]) * 10 ** (-log10_mp / 4)
    lead = math.sqrt(2) * params["r"] * params["B_a1"] * params["B_x1"]
    return lead * (math.sqrt(params["gamma"]) + width)


def lemma_3_14_width(params: dict, target: float = 1.0) -> float:
    """``log10 m`` at which :func:`lemma_3_14_term` falls to ``target``, or ``inf`` when its
    ``sqrt(gamma)`` part alone is already above ``target``."""
    lead = math.sqrt(2) * params["r"] * params["B_a1"] * params["B_x1"]
    room = target / lead - math.sqrt(params["gamma"])
    if room <= 0:
        return math.inf
    # sqrt(2 B_b / B_G) (m p)^(-1/4) = room
    return 4 * math.log10(math.sqrt(2 * params["B_b"] / params["B_G"]) / room) - params["log10_p"]


def lemma_b34_mean_norm(d: int, tau: float, sigma_plus: float) -> float:
    """The smallest ``B_mu1`` the proof of Lemma B.34 (Lemma 3.17) allows:
    ``B_mu1 >= Omega(sigma_B+ sqrt(tau log d / d)) >= 4 sigma_B+ sqrt(tau log d / d)``."""
    return 4 * sigma_plus * math.sqrt(tau * math.log(d) / d)


def lemma_b34_smallest_d(tau: float, sigma_plus: float, B_mu1: float, most: int = 10**9) -> int:
    """The smallest ``d >= 3`` from which :func:`lemma_b34_mean_norm` stays at most ``B_mu1``
    (it decreases for ``d >= 3``), by bisection; ``most`` bounds the search."""
    if lemma_b34_mean_norm(most, tau, sigma_plus) > B_mu1:
        raise ValueError(f"no d <= {most} meets B_mu1 = {B_mu1} at tau = {tau}")
    lo, hi = 3, most  # f(hi) <= B_mu1
    if lemma_b34_mean_norm(lo, tau, sigma_plus) <= B_mu1:
        return lo
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if lemma_b34_mean_norm(mid, tau, sigma_plus) <= B_mu1:
            hi = mid
        else:
            lo = mid
    return hi


# ---------------------------------------------------------------------------------------------
# Parity: ground truths, E[yx], Proposition 3.23
# ---------------------------------------------------------------------------------------------


def _relu(z: int) -> int:
    return z if z > 0 else 0


def parity_ground_truth_block(k: int, s: int, sign_start: int = 1) -> int:
    """One block of (B.469) at ``<D_j, x> = s / sqrt(k)``, exactly: the ``sqrt(k)`` factors cancel,
    ``sum_{i=0}^k (-1)^(i + sign_start) [sigma(s - 2i + k + 1) - 2 sigma(s - 2i + k) +
    sigma(s - 2i + k - 1)]``. ``sign_start = 1`` is (B.469) (odd ``k``); ``0`` is (B.551)
    (uniform parity, even ``k``)."""
    total = 0
    for i in range(k + 1):
        bump = _relu(s - 2 * i + k + 1) - 2 * _relu(s - 2 * i + k) + _relu(s - 2 * i + k - 1)
        total += (-1) ** (i + sign_start) * bump
    return total


def parity_ground_truth_margins(k: int, r: int, sign_start: int = 1) -> dict:
    """``y g*(x)`` on every point of the support of the parity distribution's relevant part
    (every ``phi_A`` in ``{+-1}^(rk)`` and the ``2r`` structured patterns; the background does not
    enter since ``D_j`` is orthogonal to it), exactly. Returns the minimum margin and whether
    ``g* = sum_j XOR_j`` on the uniform part."""
    margins, xor_match = [], True
    for phi in itertools.product((-1, 1), repeat=r * k):
        blocks = [phi[j * k : (j + 1) * k] for j in range(r)]
        outs = [parity_ground_truth_block(k, sum(bl), sign_start) for bl in blocks]
        xors = [math.prod(bl) for bl in blocks]
        xor_match &= outs == xors
        y = 1 if sum(xors) > 0 else -1
        margins.append(y * sum(outs))
    for j in range(r):
        for sgn in (1, -1):
            outs = [
                parity_ground_truth_block(k, sgn * k if jj == j else 0, sign_start)
                for jj in range(r)
            ]
            y = sgn**k
            margins.append(y * sum(outs))
    return {"min_margin": min(margins), "xor_on_uniform": bool(xor_match), "points": len(margins)}


def parity_expected_yx(k: int, r: int, p_A) -> list[Fraction]:
    """``E[y phi_A]`` of the parity distribution, exactly (Fractions), by enumeration of the
    uniform part and the ``2r`` structured patterns; the background coordinates have
    ``E[y phi_l] = 0`` (independent, mean zero). Remark B.45 states ``E[y x] = 0``."""
    p_A = Fraction(p_A)
    rk = r * k
    total = [Fraction(0)] * rk
    weight_u = (1 - 2 * r * p_A) / 2**rk
    for phi in itertools.product((-1, 1), repeat=rk):
        y = 1 if sum(math.prod(phi[j * k : (j + 1) * k]) for j in range(r)) > 0 else -1
        for i in range(rk):
            total[i] += weight_u * y * phi[i]
    for j in range(r):
        for sgn in (1, -1):
            y = sgn**k
            for i in range(j * k, (j + 1) * k):
                total[i] += p_A * y * sgn
    return total


def prop_3_23_bound(N: float, B: float, k: int) -> float:
    """Proposition 3.23: every ``h`` in ``H_B`` (``N`` features in ``[-1, 1]``, ``||w|| <= B``) has
    hinge loss at least ``1/2 - sqrt(N) B / (2^k sqrt(2))``."""
    return 0.5 - math.sqrt(N) * B / (2**k * math.sqrt(2))


# ---------------------------------------------------------------------------------------------
# Uniform parity: Majority's Fourier coefficients and Lemma B.63
# ---------------------------------------------------------------------------------------------


def majority_coefficient(d: int, k: int, printed: bool = False) -> Fraction:
    """``xi_k = hat Maj_d(S)`` for ``|S| = k`` odd, ``d`` odd (B.547; O'Donnell Theorem 5.19):
    ``(-1)^((k-1)/2) binom((d-1)/2, (k-1)/2) / binom(d-1, k-1) * 2^-(d-1) binom(d-1, (d-1)/2)``;
    0 for even ``k``. ``printed=True`` uses (B.480)'s numerator ``binom((d-1)/2, (d-1)/2)``."""
    if d % 2 == 0 or d < 1:
        raise ValueError(f"parameter 'd' = {d} is not allowed: Majority needs d odd")
    if not 0 <= k <= d:
        raise ValueError(f"parameter 'k' = {k} is not allowed: it must lie in [0, d]")
    if k % 2 == 0:
        return Fraction(0)
    h = (d - 1) // 2
    top = math.comb(h, h) if printed else math.comb(h, (k - 1) // 2)
    sign = -1 if ((k - 1) // 2) % 2 else 1
    return (
        sign * Fraction(top, math.comb(d - 1, k - 1)) * Fraction(math.comb(d - 1, h), 2 ** (d - 1))
    )


def majority_coefficients_enumerated(d: int) -> dict[int, Fraction]:
    """``hat Maj_d(S)`` by the Walsh-Hadamard transform of Majority on ``{+-1}^d``, one value per
    ``|S|`` (after checking that every ``S`` of a size has the same coefficient)."""
    if d % 2 == 0:
        raise ValueError(f"parameter 'd' = {d} is not allowed: Majority needs d odd")
    Z = cube(d)
    maj = np.sign(Z.sum(1)).astype(np.int64)
    coef = walsh_hadamard(maj)
    sizes = np.array([bin(i).count("1") for i in range(2**d)])
    out = {}
    for s in range(d + 1):
        vals = set(int(v) for v in coef[sizes == s])
        if len(vals) != 1:
            raise AssertionError(f"coefficients of size {s} differ: {sorted(vals)[:4]}")
        out[s] = Fraction(vals.pop(), 2**d)
    return out


def uniform_parity_gradient(w: np.ndarray, b: float, A, d: int) -> list[Fraction]:
    """``g_j = E[y I[<w, x> > b] x_j]`` (B.546) for ``x`` uniform on ``{+-1}^d`` and
    ``y = prod_{l in A} x_l``, exactly (every ``j``)."""
    Z = cube(d)
    y = Z[:, list(A)].prod(1)
    active = (Z @ np.asarray(w) > b).astype(np.int64)
    sums = (y * active)[:, None] * Z
    return [Fraction(int(v), 2**d) for v in sums.sum(0)]


def lemma_b63_prediction(w, A, d: int, factor=Fraction(1, 2), printed: bool = False):
    """Lemma B.63's gradient: for ``j in A``, ``factor * xi_(k-1) prod_{A \\ j} w_l``; for
    ``j not in A``, ``factor * xi_(k+1) prod_{A + j} w_l``. ``printed=True`` is the lemma as
    printed: no factor, ``xi_(k-1)`` in both cases (B.548)-(B.549)."""
    A = list(A)
    k = len(A)
    w = [int(v) for v in w]
    pa = math.prod(w[i] for i in A)
    out = []
    for j in range(d):
        if printed:
            xi = majority_coefficient(d, k - 1)
            sign = pa * w[j]
            out.append(xi * sign)
        elif j in A:
            out.append(factor * majority_coefficient(d, k - 1) * pa * w[j])
        else:
            out.append(factor * majority_coefficient(d, k + 1) * pa * w[j])
    return out


__all__ = [
    "theorem_3_12_terms",
    "mixture_scales",
    "mixture_ground_truth",
    "mixture_hinge_bound",
    "mixture_ground_truth_hinge",
    "mixture_ground_truth_hinge_log10",
    "lemma_3_17_parameters",
    "theorem_3_18_error",
    "lemma_3_21_parameters",
    "source_b_tilde",
    "guarantee",
    "lemma_3_14_term",
    "lemma_3_14_width",
    "lemma_b34_mean_norm",
    "lemma_b34_smallest_d",
    "theorem_b69_requirements",
    "parity_ground_truth_block",
    "parity_ground_truth_margins",
    "parity_expected_yx",
    "prop_3_23_bound",
    "majority_coefficient",
    "majority_coefficients_enumerated",
    "uniform_parity_gradient",
    "lemma_b63_prediction",
    "subset_index",
]


# ---------------------------------------------------------------------------------------------
# The multiple-index model (Section B.5.7)
# ---------------------------------------------------------------------------------------------


def multi_index_symbolic() -> dict:
    """The example ``g*(z) = ((z_1^2 - 1)/sqrt(2) + z_1 z_2)/sqrt(2)`` with ``z = U^T x``, ``z``
    standard Gaussian in R^2 (sympy.stats): ``E g*^2``, ``E g*``, ``E z g*`` (both removed by
    Algorithm 7's de-meaning), the expected Hessian ``H = E nabla^2 g*`` (B.560), its rank ``r``
    and ``kappa = ||H^+|| / sqrt(r)``."""
    from sympy.stats import E, Normal

    z1, z2 = Normal("z1", 0, 1), Normal("z2", 0, 1)
    a, b = sp.symbols("a b", real=True)
    g = ((a**2 - 1) / sp.sqrt(2) + a * b) / sp.sqrt(2)
    gz = g.subs({a: z1, b: z2})
    second = sp.simplify(E(gz**2))
    mean = sp.simplify(E(gz))
    linear = [sp.simplify(E(gz * z)) for z in (z1, z2)]
    H = sp.hessian(g, (a, b)).applyfunc(lambda e: sp.simplify(E(e.subs({a: z1, b: z2}))))
    rank = H.rank()
    eig = [sp.nsimplify(v) for v in H.eigenvals()]
    kappa = sp.simplify(1 / min(abs(v) for v in eig) / sp.sqrt(rank))
    return dict(second_moment=second, mean=mean, linear=linear, H=H, rank=rank, kappa=kappa)


def multi_index_label(X: torch.Tensor) -> torch.Tensor:
    """The example of :func:`multi_index_symbolic` with ``U = (e_1, e_2)``."""
    z1, z2 = X[..., 0], X[..., 1]
    return ((z1**2 - 1) / math.sqrt(2) + z1 * z2) / math.sqrt(2)


def theorem_b69_requirements(
    d: int, r: int, *, kappa: float, tau: int, n: int, m: int, eps: float, C_l: float = 1.0
) -> dict:
    """log10 of Theorem B.69's requirements with its Omega constants and ``C_l`` set to 1, at the
    ``log(n m d)`` of the given sizes: ``n >= d^2 r kappa^2 (C_l log nmd)^(tau+1) + m``,
    ``m >= r^tau kappa^(2 tau) (C_l log nmd)^(6 tau + 1) / eps``, ``T >= m^2 / eps`` (with ``m``
    at its requirement), and whether ``d >= kappa r^(3/2)`` (``C_d = 1``)."""
    log_nmd = C_l * math.log(n * m * d)
    log10_m = (
        tau * math.log10(r)
        + 2 * tau * math.log10(kappa)
        + (6 * tau + 1) * math.log10(log_nmd)
        - math.log10(eps)
    )
    n_need = d**2 * r * kappa**2 * log_nmd ** (tau + 1)
    log10_n = math.log10(n_need + 10**log10_m) if log10_m < 300 else log10_m
    return {
        "log10_m": log10_m,
        "log10_n": log10_n,
        "log10_T": 2 * log10_m - math.log10(eps),
        "d_ok": d >= kappa * r**1.5,
    }
