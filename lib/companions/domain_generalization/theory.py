"""The population objectives of Section 6.4, their optima, OOD accuracy, bounds, closed forms.

ERM-l2 (6.4) reduces, by Lemma E.5, to two numbers: w_j = alpha on R and beta on U, and
L^lam(alpha, beta) = E l(alpha S_R + beta S_U) + lam/2 (r alpha^2 + (d - r) beta^2) (E.10), with
S_R = sum_R z_j, S_U = sum_U z_j. The expectation is a Monte Carlo mean over draws of (S_R, S_U)
(``data.sample_sums``); the optimum is found by Newton's method in float64.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import torch


# -- the logistic loss (Lemma E.1)
def logistic(z: torch.Tensor) -> torch.Tensor:
    """l(z) = ln(1 + exp(-z)), computed stably."""
    return torch.nn.functional.softplus(-z)


def logistic_derivative(z: torch.Tensor) -> torch.Tensor:
    """l'(z) = -1 / (1 + exp(z)) (Lemma E.1 (2))."""
    return -torch.sigmoid(-z)


# -- ERM-l2 and ERM-l1 in the reduced (alpha, beta) form
def l2_objective(
    alpha: float, beta: float, *, s_r: torch.Tensor, s_u: torch.Tensor, lam: float, r: int, d: int
) -> float:
    """L^lam(alpha, beta) of (E.10): Monte Carlo mean of l(alpha S_R + beta S_U) plus penalty."""
    loss = logistic(alpha * s_r + beta * s_u).mean()
    return float(loss + lam / 2 * (r * alpha**2 + (d - r) * beta**2))


@dataclass
class Optimum:
    alpha: float
    beta: float
    iterations: int
    gradient_norm: float


def _newton(
    s: torch.Tensor, penalty_grad, penalty_hess, x0: torch.Tensor, tol: float, max_iter: int
) -> tuple[torch.Tensor, int, float]:
    """Damped Newton for mean(l(s @ x)) + penalty on a convex problem with few unknowns."""
    x = x0.clone()

    def value(x):
        return float(logistic(s @ x).mean()) + penalty_grad(x, value=True)

    gnorm = math.inf
    for it in range(1, max_iter + 1):
        m = s @ x
        sig = torch.sigmoid(-m)  # -l'(m)
        grad = -(s * sig[:, None]).mean(0) + penalty_grad(x)
        hess = (s.T * (sig * (1 - sig))) @ s / len(m) + penalty_hess(x)
        gnorm = float(grad.abs().max())
        if gnorm < tol:
            return x, it - 1, gnorm
        step = torch.linalg.solve(hess, grad)
        t, f0 = 1.0, value(x)
        while value(x - t * step) > f0 + 1e-15 and t > 1e-8:  # backtracking keeps it monotone
            t /= 2
        x = x - t * step
    return x, max_iter, gnorm


def solve_l2(
    s_r: torch.Tensor,
    s_u: torch.Tensor,
    *,
    lam: float,
    r: int,
    d: int,
    tol: float = 1e-12,
    max_iter: int = 100,
) -> Optimum:
    """The ERM-l2 optimum (alpha, beta) of (E.10) on the given draws (Newton, float64)."""
    if lam <= 0:
        raise ValueError(f"parameter 'lam' = {lam!r} is not allowed: expected a real number > 0")
    s = torch.stack([s_r, s_u], dim=-1).to(torch.float64)
    dims = torch.tensor([r, d - r], dtype=torch.float64, device=s.device)

    def pen_grad(x, value=False):
        return float(lam / 2 * (dims * x**2).sum()) if value else lam * dims * x

    x, it, g = _newton(
        s,
        pen_grad,
        lambda x: lam * torch.diag(dims),
        torch.zeros(2, dtype=torch.float64, device=s.device),
        tol,
        max_iter,
    )
    return Optimum(float(x[0]), float(x[1]), it, g)


def solve_full_l2(
    z: torch.Tensor, lam: float, tol: float = 1e-12, max_iter: int = 100
) -> torch.Tensor:
    """The ERM-l2 optimum w (d,) without the symmetry reduction, on draws z (n, d) (Lemma E.5)."""
    z = z.to(torch.float64)
    d = z.shape[-1]
    eye = torch.eye(d, dtype=torch.float64, device=z.device)

    def pen_grad(x, value=False):
        return float(lam / 2 * (x**2).sum()) if value else lam * x

    x, _, _ = _newton(
        z,
        pen_grad,
        lambda x: lam * eye,
        torch.zeros(d, dtype=torch.float64, device=z.device),
        tol,
        max_iter,
    )
    return x


def _l1_alpha(s_r: torch.Tensor, lam: float, r: int, tol: float) -> float:
    """alpha >= 0 solving E[-l'(alpha S_R) S_R] = lam r (beta = 0), by bisection (0 if none).

    The left side decreases in alpha from E[S_R]/2 = r/4 at alpha = 0, so alpha = 0 for lam >= 1/4.
    """

    def excess(a: float) -> float:
        return float((torch.sigmoid(-a * s_r) * s_r).mean()) - lam * r

    if excess(0.0) <= 0:
        return 0.0
    lo, hi = 0.0, 1.0
    while excess(hi) > 0:
        lo, hi = hi, 2 * hi
    while hi - lo > tol * max(1.0, hi):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if excess(mid) > 0 else (lo, mid)
    return (lo + hi) / 2


@dataclass
class L1Optimum:
    alpha: float
    beta: float
    kkt_slack: float  # lam - gamma E[-l'(alpha S_R)]: beta = 0 is optimal iff >= 0
    kkt_slack_se: float


def solve_l1(
    s_r: torch.Tensor,
    s_u: torch.Tensor,
    *,
    lam: float,
    r: int,
    d: int,
    gamma: float,
    tol: float = 1e-12,
    max_iter: int = 100,
) -> L1Optimum:
    """ERM-l1: E l(alpha S_R + beta S_U) + lam (r |alpha| + (d - r) |beta|), this book's surrogate.

    ERM-rank (6.5) bounds ||w||_0, and ||w||_1 is the convex envelope of ||w||_0 on the box
    ||w||_inf <= 1, so ERM-l1 is ERM-rank's convex relaxation. (It is not the batch nuclear norm:
    the model's feature columns are correlated, so ||Z diag(w)||_* differs from ||w||_1.) Both
    weights are >= 0 at the optimum (a negative one can be flipped to lower the loss, as in
    (E.17)-(E.19)). First alpha is solved with beta = 0 (it is 0 for lam >= 1/4: the penalty then
    outweighs every feature); beta = 0 stays optimal iff the subgradient condition
    |dL/dbeta| <= lam (d - r) holds at beta = 0, which by the independence of S_R and S_U
    (E S_U = (d - r) gamma) reads gamma E[-l'(alpha S_R)] <= lam. If it fails, both are solved
    with beta > 0.
    """
    if lam <= 0:
        raise ValueError(f"parameter 'lam' = {lam!r} is not allowed: expected a real number > 0")
    s1 = s_r.to(torch.float64)
    alpha = _l1_alpha(s1, lam, r, tol)
    a = torch.tensor([alpha], dtype=torch.float64)
    s1 = s1[:, None]
    neg_lprime = torch.sigmoid(-a[0] * s1[:, 0])
    slack = lam - gamma * float(neg_lprime.mean())
    se = gamma * float(neg_lprime.std()) / math.sqrt(len(neg_lprime))
    if slack >= 0:
        return L1Optimum(float(a[0]), 0.0, slack, se)
    s = torch.stack([s_r, s_u], dim=-1).to(torch.float64)
    dims = torch.tensor([r, d - r], dtype=torch.float64, device=s.device)

    def pen2(x, value=False):
        return float(lam * (dims * x).sum()) if value else lam * dims

    x, _, _ = _newton(
        s,
        pen2,
        lambda x: torch.zeros(2, 2, dtype=torch.float64, device=s.device),
        torch.tensor([float(a[0]), 0.01], dtype=torch.float64, device=s.device),
        tol,
        max_iter,
    )
    return L1Optimum(float(x[0]), float(x[1]), slack, se)


# -- accuracy and its uncertainty
def ood_correct(alpha: float, beta: float, s_r: torch.Tensor, s_u: torch.Tensor) -> int:
    """How many draws have y f_w(x) = alpha S_R + beta S_U > 0 (strict: a tie is an error)."""
    return int(((alpha * s_r + beta * s_u) > 0).sum())


def wilson_upper(k: int, n: int, z: float = 1.96) -> float:
    """Upper end of the Wilson score interval for a proportion k / n (k = 0: z^2 / (n + z^2))."""
    if n <= 0 or not 0 <= k <= n:
        raise ValueError(
            f"parameter 'k' = {k!r} is not allowed with n = {n!r}: expected 0 <= k <= n, n > 0"
        )
    p = k / n
    centre = p + z * z / (2 * n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return min(1.0, (centre + half) / (1 + z * z / n))


def normal_ood_accuracy(alpha: float, beta: float, r: int, d: int, gamma: float) -> float:
    """This book's CLT approximation of the OOD accuracy of (alpha, beta) (OOD: U ~ D_-gamma).

    alpha S_R + beta S_U has mean alpha r / 2 - beta (d - r) gamma and variance
    alpha^2 r / 12 + beta^2 (d - r) (1/3 - gamma^2) (Lemma E.3); the accuracy is Phi(mean / sd).
    """
    mean = alpha * r / 2 - beta * (d - r) * gamma
    sd = math.sqrt(alpha**2 * r / 12 + beta**2 * (d - r) * (1 / 3 - gamma**2))
    return 0.5 * (1 + math.erf(mean / (sd * math.sqrt(2))))


# -- hypotheses and bounds of Proposition 6.3
def gamma_interval(r: int) -> tuple[float, float]:
    """The ID correlation range (3 / sqrt(r), 1/2) of Section 6.4 (empty for r <= 36)."""
    return 3 / math.sqrt(r), 0.5


def lambda_floor(r: int) -> float:
    """sqrt(r) exp(-sqrt(r)/5), the lambda of Proposition 6.3 up to its unstated Omega constant."""
    return math.sqrt(r) * math.exp(-math.sqrt(r) / 5)


def d_floor(r: int, gamma: float) -> float:
    """r / gamma^2 + r: Proposition 6.3 needs d above it."""
    return r / gamma**2 + r


def ood_bound(r: int) -> float:
    """exp(-r/10), Proposition 6.3's bound on the OOD accuracy of the ERM-l2 optimum."""
    return math.exp(-r / 10)


def hypotheses(r: int, d: int, gamma: float, lam: float, omega_constant: float = 1.0) -> dict:
    """Which hypotheses of Proposition 6.3 a configuration meets (the Omega constant as given)."""
    lo, hi = gamma_interval(r)
    return {
        "gamma": lo < gamma < hi,
        "d": d > d_floor(r, gamma),
        "lambda": lam > omega_constant * lambda_floor(r),
        "r": r >= 20,
    }


def hoeffding_t(r: int, d: int, gamma: float) -> float:
    """The deviation -3r/(8 gamma) + (d - r) gamma of (E.47)."""
    return -3 * r / (8 * gamma) + (d - r) * gamma


def hoeffding_exponent_as_printed(r: int, d: int, gamma: float) -> float:
    """The exponent of (E.49): 2 t^2 / (4 d), i.e. every summand taken to have range 2."""
    return 2 * hoeffding_t(r, d, gamma) ** 2 / (4 * d)


def hoeffding_exponent_corrected(r: int, d: int, gamma: float) -> float:
    """The exponent with the true ranges: 3/(4 gamma) for the r terms on R, 2 for the d - r on U."""
    return 2 * hoeffding_t(r, d, gamma) ** 2 / (9 * r / (16 * gamma**2) + 4 * (d - r))


def lemma_6_1_counterexample_lambda(r: int, d: int) -> float:
    """A lambda below which Lemma 6.1's "alpha < 1/sqrt(r)" is false (this book).

    If 0 <= beta < alpha < 1/sqrt(r) then alpha S_R + beta S_U <= d / sqrt(r), so the objective is
    at least c = l(d / sqrt(r)). But at (t, 0) it is at most E exp(-t S_R) + lam r t^2 / 2 =
    ((1 - e^-t)/t)^r + lam r t^2 / 2 (the uniform's moment generating function). Any lambda with
    that below c is a counterexample; this returns the supremum over t of such lambdas.
    """
    c = math.log1p(math.exp(-d / math.sqrt(r)))
    ts = torch.logspace(-1, 4, 20001, dtype=torch.float64)
    log_g = r * torch.log(-torch.expm1(-ts) / ts)
    g = torch.exp(log_g)
    lam = 2 * (c - g) / (r * ts**2)
    return max(0.0, float(lam.max()))


# -- the 2-D task of Section 6.3.1
def _h(t: float) -> float:
    """P(u > t v) for independent u, v ~ U[0, 1] and t >= 0."""
    return 1 - t / 2 if t <= 1 else 1 / (2 * t)


def two_d_accuracy(t: float, p_aligned: float) -> float:
    """Accuracy of sign(x1 + t x2) on the 2-D task whose x2 agrees with y w.p. ``p_aligned``.

    With x2 on the label's side the sum has the label's sign; otherwise it is right w.p. h(|t|).
    """
    if t >= 0:
        return p_aligned + (1 - p_aligned) * _h(t)
    return (1 - p_aligned) + p_aligned * _h(-t)


def two_d_t_for_accuracy(acc: float, p_aligned: float) -> float:
    """The t >= 0 at which ``two_d_accuracy(t, p_aligned) == acc`` (decreasing in t; bisection)."""
    lo, hi = 0.0, 1e6
    if not two_d_accuracy(hi, p_aligned) <= acc <= two_d_accuracy(0.0, p_aligned):
        raise ValueError(f"parameter 'acc' = {acc!r} is not allowed: not reached for t >= 0")
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if two_d_accuracy(mid, p_aligned) > acc else (lo, mid)
    return (lo + hi) / 2


def two_d_max_id_given_ood(ood: Fraction, p_id: Fraction) -> Fraction:
    """The largest ID accuracy of ANY classifier whose OOD accuracy is ``ood`` (exact, this book).

    The task is four rectangles (the quadrants of (x1, x2)); a classifier's accuracy a_Q on each is
    the same in ID and OOD, only the weights change. With S = a_Q1 + a_Q3 and T = a_Q2 + a_Q4 in
    [0, 2]: ID = (p S + (1 - p) T) / 2 and OOD = ((1 - p) S + p T) / 2 with p = ``p_id``. The
    maximum of a linear function on the segment {OOD = ood} of the box is at an end of it.
    """
    ood, p = Fraction(ood), Fraction(p_id)
    q = 1 - p
    ends = []
    for s in (Fraction(0), Fraction(2)):  # S fixed at a side of the box, T from the constraint
        t = (2 * ood - q * s) / p
        if 0 <= t <= 2:
            ends.append((s, t))
    for t in (Fraction(0), Fraction(2)):
        s = (2 * ood - p * t) / q
        if 0 <= s <= 2:
            ends.append((s, t))
    if not ends:
        raise ValueError(
            f"parameter 'ood' = {ood!r} is not allowed: no classifier has this OOD accuracy"
        )
    return max((p * s + q * t) / 2 for s, t in ends)


def two_d_max_id_given_ood_one_sided(ood: Fraction, p_id: Fraction) -> Fraction:
    """The same bound under the other reading: x2 | y = -1 ~ U[-1, 0] in both splits (exact).

    Three rectangles: (y = 1, x2 > 0) with ID weight p / 2 and OOD weight (1 - p) / 2,
    (y = 1, x2 < 0) with (1 - p) / 2 and p / 2, (y = -1) with 1/2 in both. A classifier's accuracies
    a, b, c on them lie in [0, 1]; the maximum of ID on {OOD = ood} is at a vertex, where two of the
    three sit at a bound, so the vertices are enumerated.
    """
    ood, p = Fraction(ood), Fraction(p_id)
    q = 1 - p
    w_id, w_ood = (p / 2, q / 2, Fraction(1, 2)), (q / 2, p / 2, Fraction(1, 2))
    best = None
    for free in range(3):
        others = [k for k in range(3) if k != free]
        for b0 in (Fraction(0), Fraction(1)):
            for b1 in (Fraction(0), Fraction(1)):
                x = [Fraction(0)] * 3
                x[others[0]], x[others[1]] = b0, b1
                rest = ood - w_ood[others[0]] * b0 - w_ood[others[1]] * b1
                x[free] = rest / w_ood[free]
                if 0 <= x[free] <= 1:
                    val = sum(w * v for w, v in zip(w_id, x))
                    best = val if best is None else max(best, val)
    if best is None:
        raise ValueError(
            f"parameter 'ood' = {ood!r} is not allowed: no classifier has this OOD accuracy"
        )
    return best


# -- matrices: nuclear norm and stable rank (Section 6.3.3)
def nuclear_norm(m: torch.Tensor) -> torch.Tensor:
    """||M||_*, the sum of the singular values."""
    return torch.linalg.svdvals(m).sum(-1)


def stable_rank(m: torch.Tensor) -> torch.Tensor:
    """The standard stable rank ||M||_F^2 / ||M||_2^2 (between 1 and rank M, scale-free)."""
    s = torch.linalg.svdvals(m)
    return (s**2).sum(-1) / s[..., 0] ** 2


def stable_rank_as_printed(m: torch.Tensor) -> torch.Tensor:
    """Section 6.3.3's printed formula ||M||_F^2 / ||M||_2 (scales like ||M||: not a rank)."""
    s = torch.linalg.svdvals(m)
    return (s**2).sum(-1) / s[..., 0]
