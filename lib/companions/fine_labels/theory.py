"""Closed forms of the source and of this book's derivations (floats and mpmath).

Equation numbers are the source's (Hong, Cui, Fuxman, Chan, Luo; the text numbers its equations
1-239 in sequence). ``Q(x) = P[g >= x]`` for ``g ~ N(0, 1)``.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np


def Q(x):
    """Gaussian upper tail ``P[g >= x]``."""
    return 0.5 * math.erfc(x / math.sqrt(2))


def phi(x):
    return math.exp(-x * x / 2) / math.sqrt(2 * math.pi)


def mills_bounds(eps: float, paper: bool = True) -> tuple[float, float]:
    """Eq. (19)'s bounds on ``Q(eps)``: as printed (with the factor 1/2), or the correct ones
    ``phi(eps) eps / (eps^2 + 1) <= Q(eps) <= phi(eps) / eps``."""
    if eps <= 0:
        raise ValueError(f"parameter 'eps' = {eps} is not allowed: expected > 0")
    f = 0.5 if paper else 1.0
    return f * phi(eps) * eps / (eps**2 + 1), f * phi(eps) / eps


def c_b(c0: float, mode: str) -> float:
    """Bias constant of App. B.3.6: sqrt(4 + 2 c0) (coarse) or sqrt(2 + 2 c0) (fine)."""
    if mode not in ("coarse", "fine"):
        raise ValueError(f"parameter 'mode' = {mode!r} is not allowed: expected 'coarse' or 'fine'")
    if not 0 < c0 < 0.1:
        raise ValueError(f"parameter 'c0' = {c0} is not allowed: expected (0, 0.1) (B.3.5)")
    return math.sqrt((4 if mode == "coarse" else 2) + 2 * c0)


def paper_lucky_count(d: float, c0: float, mode: str) -> float:
    """``E|S^{*(0)}(v)| = m p1 (1 - p2)^(d-1)`` with the widths taken literally (constant 1):
    ``m = d^(2+2c0)`` (coarse, Section C) or ``d^(1+2c0)`` (fine, Section G); p1, p2 of eqs.
    (20)-(21) (mpmath, so ``d`` may be astronomically large)."""
    d = mpmath.mpf(d)
    L = mpmath.log(d)
    cb = mpmath.mpf(c_b(c0, mode))
    p1 = mpmath.ncdf(-cb * mpmath.sqrt(L + L**-5))
    p2 = mpmath.ncdf(-cb * mpmath.sqrt(L - L**-5))
    m = d ** ((2 if mode == "coarse" else 1) + 2 * c0)
    return float(m * p1 * (1 - p2) ** (d - 1))


def expected_detectors(m: int, tau: float, slack: float = 0.0) -> float:
    """``E|S^(0)(v)| = m Q(tau + slack)`` per output and feature, threshold in units of sigma0."""
    return m * Q(tau + slack)


def expected_singletons(m: int, tau: float, d: int) -> float:
    """``E|S^{*(0)}(v)| = m Q(tau) (1 - Q(tau))^(d-1)``: above ``tau sigma0`` on ``v`` and below it
    on every other dictionary element (Definition C.1 without the slack)."""
    q = Q(tau)
    return m * q * (1 - q) ** (d - 1)


def width_for(n_detectors: float, tau: float) -> int:
    """The width per output giving ``n_detectors`` expected detectors: ``ceil(n / Q(tau))``."""
    if n_detectors <= 0:
        raise ValueError(f"parameter 'n_detectors' = {n_detectors} is not allowed: expected > 0")
    return math.ceil(n_detectors / Q(tau))


def feasibility_log_d(degree: int = 15) -> float:
    """Smallest ``ln d`` with ``0.4 ln d >= (degree + 5) ln ln d``: B.3.4 (``k >= s^* log^5 d``,
    ``k <= d^0.4``) with B.3.10 (``s^* >= log^degree d``). This book's derivation."""
    f = lambda L: 0.4 * L - (degree + 5) * mpmath.log(L)  # noqa: E731
    return float(mpmath.findroot(f, 10 * (degree + 5) * math.log(10 * (degree + 5))))


def rho(k: int, s_dagger: int, alpha_bar: float, s_star: int) -> float:
    """``rho = k s^dagger alpha_bar^dagger / s^*`` (this book's ratio: after coarse training a hard
    sample is lost when rho exceeds about n_f / n_c ~ 1; the map, Section 3.1)."""
    return k * s_dagger * alpha_bar / s_star


def fine_step_ratio(k: int, logit_own: float, logit_cross: float) -> float:
    """Per-detector growth of the common feature over the fine one for a subclass output
    (Lemma G.2, eqs. 201-206): ``[(1 - l_own) - (k - 1) l_cross] / (1 - l_own)``; at
    initialisation (all logits 1/(2k)) it is ``k / (2k - 1)``."""
    return ((1 - logit_own) - (k - 1) * logit_cross) / (1 - logit_own)


def coarse_log_slope(eta, s_star, *, P, n_common, n_fine, k, lam_b):
    """This book's slope ``C_eff`` of ``exp(F) + F`` against ``t`` after the transient
    (Lemma E.4's ODE with the exact logistic factor):
    ``eta s*^2 (n_c + n_f / k)(1 - 1/lam_b)/(2P)``,
    ``n_c``, ``n_f`` the detectors active on a clean common / fine patch."""
    return eta * s_star**2 * (n_common + n_fine / k) * (1 - 1 / lam_b) / (2 * P)


def paper_log_slope(eta, s_star, P, k):
    """Lemma E.4's constant as printed: ``C = eta s^* / (2 k P)``."""
    return eta * s_star / (2 * k * P)


def harmonic_remainder(n: int) -> float:
    """``eps_n`` of Lemma E.10: ``sum_{j<n} 1/j = log n + gamma - 1/(2n) - eps_n``."""
    h = float(mpmath.harmonic(n - 1))
    return math.log(n) + float(mpmath.euler) - 1 / (2 * n) - h


def t0_scale(k, P, eta, s_star, n_det):
    """Corollary G.2.1 with its ``T0`` restored: ``T0(B) = Theta(k P / (eta s*^2 |S*|))``."""
    return k * P / (eta * s_star**2 * n_det)


def linear_fit_r2(t, y) -> tuple[float, float]:
    """Least-squares slope and coefficient of determination of ``y`` against ``t``."""
    t, y = np.asarray(t, float), np.asarray(y, float)
    A = np.vstack([t, np.ones_like(t)]).T
    coef, *_ = np.linalg.lstsq(A, y, rcond=None)
    resid = y - A @ coef
    ss = ((y - y.mean()) ** 2).sum()
    return float(coef[0]), float(1 - (resid**2).sum() / ss) if ss > 0 else float("nan")


def relu_mean(scale: float, tau: float) -> float:
    """``E relu(scale g - tau)`` for ``g ~ N(0, 1)``: ``scale (phi(a) - a Q(a))`` with
    ``a = tau / scale`` (the mean response of one neuron, in units of sigma0)."""
    if scale <= 0:
        raise ValueError(f"parameter 'scale' = {scale} is not allowed: expected > 0")
    a = tau / scale
    return scale * (phi(a) - a * Q(a))


def zeta_star_response(m: int, tau: float, norm: float) -> float:
    """Eq. (118) at finite size: the mean of ``sum_r relu(<w_r(0), zeta*> + b(0))`` over the ``m``
    neurons of an output, in units of sigma0, for a distracting patch of norm ``norm``
    (``<w_r(0), zeta*> ~ N(0, sigma0^2 ||zeta*||^2)``, ``b(0) = -tau sigma0``)."""
    return m * relu_mean(norm, tau)


def feature_response_at_init(m: int, tau: float, s_star: int) -> float:
    """What eq. (118) is compared with: the mean response of an output's ``m`` neurons at
    initialisation to the ``s*`` patches of one feature, ``s* m E relu(g - tau)``, in units of
    sigma0 (the proof's ``O(sigma0 sqrt(log d) s* d^c0)``)."""
    return s_star * m * relu_mean(1.0, tau)


def feature_noise_onset(w0: float, tau: float, alpha: float, lam_b: float) -> float:
    """This book's onset of the feature noise (the proof of Lemma E.8 calls it ``t_-``): the growth
    ``A`` of a common detector (with ``<w(0), v> = w0``, bias ``-tau`` and its fall ``A / lam_b``
    by eq. 18, all in units of sigma0) past which it fires on a feature-noise patch
    ``alpha v``: ``alpha (w0 + A) - tau - A / lam_b > 0``, i.e.
    ``A > (tau - alpha w0) / (alpha - 1 / lam_b)`` (0 if it fires already)."""
    if alpha <= 1 / lam_b:
        raise ValueError(
            f"parameter 'alpha' = {alpha} is not allowed: it must exceed 1 / lam_b = {1 / lam_b}"
        )
    return max(0.0, (tau - alpha * w0) / (alpha - 1 / lam_b))


def early_window_growth(w0, tau, *, alpha, lam_b, s_star, s_dagger, k) -> float:
    """This book's end of Theorem 5.1's early window (D3): the common growth ``A`` (units of
    sigma0) at which the wrong output's response to the ``s_dagger`` feature-noise patches,
    ``s_dagger (alpha (w0 + A) - tau - A / lam_b)``, overtakes the right output's response to the
    ``s_star`` subclass patches, ``s_star (w0 - tau + A / k)`` (its detectors grow k times slower,
    eq. D1; the same number of detectors on each side). ``inf`` when it never does: as A grows the
    comparison becomes ``rho (1 - 1/(lam_b alpha)) > 1``, eq. D5."""
    rate = s_dagger * (alpha - 1 / lam_b) - s_star / k
    if rate <= 0:
        return math.inf
    return max(0.0, (s_star * (w0 - tau) + s_dagger * (tau - alpha * w0)) / rate)
