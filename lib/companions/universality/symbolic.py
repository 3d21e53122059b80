"""Exact checks: Theorem 7.1 (sympy and exact rationals), Proposition F.8 for the exponential loss,
the leading terms of Propositions F.8 and 7.4, and the XOR example of Appendix F.1.1."""

from __future__ import annotations

import itertools
import math
import random
from fractions import Fraction

import sympy as sp
import torch

from companions import losses


def _expect(expr, noise) -> sp.Expr:
    """``E[expr]`` for a polynomial in independent standard normal ``noise`` symbols of degree <= 3
    in each (moments 1, 0, 1, 0)."""
    poly = sp.Poly(sp.expand(expr), *noise)
    moments = {0: 1, 1: 0, 2: 1, 3: 0}
    total = 0
    for powers, coeff in poly.terms():
        w = 1
        for p in powers:
            w *= moments[p]
        total += coeff * w
    return sp.expand(total)


def theorem_7_1_linear(k: int = 2, n_r: int = 2, n_u: int = 1) -> dict:
    """(F.2) with symbolic ``W`` (k x d), ``M`` (d x d), means ``mu`` and square roots ``A_R``,
    ``A_U`` of the covariances of ``z_R`` and ``z_U`` (``d = n_r + n_u``).

    ``z = mu + [A_R xi_R; A_U xi_U]``, ``z+`` shares ``xi_R`` and redraws ``xi_U`` (7.3), ``z-``
    redraws both; every expectation is taken monomial by monomial over the standard normal ``xi``.
    Returns the residual ``E[ell(h(z)^T (h(z+) - h(z-)))] + E||W (xbar - E xbar)||^2`` for ``ell(t)
    = -t`` (zero when (F.2) holds) and the same residual when ``z+`` keeps ``z``'s own ``z_U``
    (nonzero: the identity rests on the resampling of (7.3))."""
    d = n_r + n_u
    W = sp.Matrix(k, d, lambda i, j: sp.Symbol(f"w{i}{j}"))
    M = sp.Matrix(d, d, lambda i, j: sp.Symbol(f"m{i}{j}"))
    AR = sp.Matrix(n_r, n_r, lambda i, j: sp.Symbol(f"a{i}{j}"))
    AU = sp.Matrix(n_u, n_u, lambda i, j: sp.Symbol(f"b{i}{j}"))
    mu = sp.Matrix(d, 1, lambda i, _: sp.Symbol(f"mu{i}"))

    def noise(tag, n):
        return sp.Matrix(n, 1, lambda i, _: sp.Symbol(f"xi_{tag}{i}"))

    xr, xu, xu2, xr3, xu3 = (
        noise("r", n_r),
        noise("u", n_u),
        noise("u2", n_u),
        noise("r3", n_r),
        noise("u3", n_u),
    )
    xi = list(xr) + list(xu) + list(xu2) + list(xr3) + list(xu3)

    def z(r, u):
        return mu + sp.Matrix.vstack(AR * r, AU * u)

    def h(zz):
        return W * M * zz

    hz, hpos, hneg, hsame = h(z(xr, xu)), h(z(xr, xu2)), h(z(xr3, xu3)), h(z(xr, xu))
    loss = _expect(-(hz.T * (hpos - hneg))[0], xi)
    xbar = mu + sp.Matrix.vstack(AR * xr, sp.zeros(n_u, 1))  # E[x | z_R] in z coordinates
    pca = _expect(((W * M * (xbar - mu)).T * (W * M * (xbar - mu)))[0], xi)
    wrong = _expect(-(hz.T * (hsame - hneg))[0], xi)
    return {"residual": sp.expand(loss + pca), "without_resampling": sp.expand(wrong + pca)}


def theorem_7_1_exact(n_r: int = 3, n_u: int = 2, k: int = 2, seed: int = 0) -> dict:
    """(F.1) on a finite model with a nonlinear ``h``: ``z_R`` in ``n_r`` values, ``z_U`` in
    ``n_u``, random rational probabilities and a random rational table ``h(z_R, z_U)`` in ``Q^k``.
    Both sides are enumerated exactly with :class:`fractions.Fraction`."""
    rng = random.Random(seed)

    def probs(n):
        w = [rng.randint(1, 9) for _ in range(n)]
        return [Fraction(x, sum(w)) for x in w]

    pr, pu = probs(n_r), probs(n_u)
    h = {
        (a, b): [Fraction(rng.randint(-9, 9), rng.randint(1, 7)) for _ in range(k)]
        for a in range(n_r)
        for b in range(n_u)
    }

    def dot(x, y):
        return sum(p * q for p, q in zip(x, y))

    lhs = Fraction(0)  # E ell(h(z)^T (h(z+) - h(z-))) with ell(t) = -t
    for a, b, bp, a2, b2 in itertools.product(
        range(n_r), range(n_u), range(n_u), range(n_r), range(n_u)
    ):
        w = pr[a] * pu[b] * pu[bp] * pr[a2] * pu[b2]
        diff = [p - q for p, q in zip(h[(a, bp)], h[(a2, b2)])]
        lhs += w * -dot(h[(a, b)], diff)
    phi_zr = {
        a: [sum(pu[b] * h[(a, b)][i] for b in range(n_u)) for i in range(k)] for a in range(n_r)
    }
    phi0 = [sum(pr[a] * phi_zr[a][i] for a in range(n_r)) for i in range(k)]
    rhs = -sum(pr[a] * sum((phi_zr[a][i] - phi0[i]) ** 2 for i in range(k)) for a in range(n_r))
    return {"lhs": lhs, "rhs": rhs}


def f8_exponential_stationary_point() -> dict:
    """Proposition F.8 with ``ell(t) = exp(-t)``: ``E ell(alpha Z + (2 - alpha)/T Z_1)`` with
    ``Z, Z_1 ~ chi2_s`` is ``((1 + 2 alpha)(1 + 2 (2 - alpha)/T))^(-s/2)``. Its log-derivative in
    alpha vanishes at ``alpha = (T + 3)/4``, so on ``[0, 1]`` it is minimised at ``alpha = 1`` for
    every ``T >= 1``."""
    a, T, s = sp.symbols("alpha T s", positive=True)
    log_obj = -s / 2 * (sp.log(1 + 2 * a) + sp.log(1 + 2 * (2 - a) / T))
    crit = sp.solve(sp.diff(log_obj, a), a)
    slope_at_1 = sp.simplify(sp.diff(log_obj, a).subs(a, 1))
    return {"critical": crit, "slope_at_1": slope_at_1, "T": T, "s": s}


def sqrt_r_erratum() -> dict:
    """Leading terms of Proposition F.8 (``v1 = v2 = ||u||^2/2``) and 7.4, symbolically.

    ``ratio`` is F.8 / 7.4 (the source's "O(sqrt(T)) worse"), ``versus_main_text`` is F.8 divided
    by the main text's ``L sqrt(T/m) ||u||`` and ``limit_r`` its limit as ``r -> oo`` at fixed
    ``T``."""
    T, r, m, u, L = sp.symbols("T r m u L", positive=True)
    v = u**2 / 2
    f8 = 4 * L * sp.sqrt((v + T * v) / m) * sp.sqrt(r * (T + 1) / (2 * T))
    p74 = 4 * L * sp.sqrt(r / m) * u
    main = L * sp.sqrt(T / m) * u
    ratio = sp.simplify(f8 / p74)
    versus = sp.simplify(f8 / main)
    return {
        "ratio": ratio,
        "ratio_target": (sp.sqrt(T) + 1 / sp.sqrt(T)) / 2,
        "versus_main_text": versus,
        "limit_r": sp.limit(versus, r, sp.oo),
        "T": T,
        "r": r,
    }


# -- Appendix F.1.1: the XOR example ---------------------------------------------------------------

XOR_POINTS = ((-1, -1), (-1, 1), (1, -1), (1, 1))
XOR_SQUARE = (
    (-1.0, 0.0),
    (1.0, 0.0),
    (0.0, -1.0),
    (0.0, 1.0),
)  # h of the source, in XOR_POINTS order


def xor_loss(h: torch.Tensor) -> torch.Tensor:
    """Contrastive loss (7.1), logistic, ``U`` empty (so ``x+ = x``), ``z_R`` uniform on the four
    points, ``h`` of shape ``(..., 4, 2)``: ``(1/16) sum_{z, z-} ell(h(z)^T (h(z) - h(z-)))``."""
    t = (h * h).sum(-1).unsqueeze(-1) - h @ h.transpose(-1, -2)
    return losses.logistic(t).mean((-1, -2))


def xor_square_value() -> float:
    """The source's optimum, in closed form: ``ln2/4 + ln(1 + e^-1)/2 + ln(1 + e^-2)/4``."""
    return math.log(2) / 4 + math.log1p(math.exp(-1)) / 2 + math.log1p(math.exp(-2)) / 4


def xor_restarts(restarts: int, steps: int, generator: torch.Generator) -> torch.Tensor:
    """Minimise :func:`xor_loss` over unit-norm ``h`` (four angles) from random starts by Adam;
    returns the final loss of every restart (float64)."""
    theta = (
        torch.rand(restarts, 4, generator=generator, dtype=torch.float64) * 2 * math.pi
    ).requires_grad_()
    opt = torch.optim.Adam([theta], lr=0.05)
    for _ in range(steps):
        opt.zero_grad()
        h = torch.stack([torch.cos(theta), torch.sin(theta)], -1)
        xor_loss(h).sum().backward()
        opt.step()
    with torch.no_grad():
        return xor_loss(torch.stack([torch.cos(theta), torch.sin(theta)], -1))


def separable(points, labels) -> bool:
    """Whether two labelled point sets in the plane are strictly linearly separable (through any
    offset): checked exactly on the four-point configurations used here, by the fact that two
    finite sets are separable iff their convex hulls are disjoint; for two pairs of points that is
    iff the two segments do not intersect."""
    pos = [p for p, y in zip(points, labels) if y > 0]
    neg = [p for p, y in zip(points, labels) if y <= 0]
    if len(pos) != 2 or len(neg) != 2:
        raise ValueError("separable() handles two points per class")

    def orient(a, b, c):
        v = (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])
        return (v > 0) - (v < 0)

    (p1, p2), (q1, q2) = pos, neg
    o1, o2, o3, o4 = orient(p1, p2, q1), orient(p1, p2, q2), orient(q1, q2, p1), orient(q1, q2, p2)
    return not (o1 != o2 and o3 != o4)


def xor_fraction_non_separable() -> Fraction:
    """Over the 24 ways to place the four ``z_R`` on the square's vertices, the fraction where the
    label ``y = z_1`` is not linearly separable on the representation."""
    bad = 0
    perms = list(itertools.permutations(XOR_SQUARE))
    for perm in perms:
        bad += not separable(perm, [z[0] for z in XOR_POINTS])
    return Fraction(bad, len(perms))


# -- Theorem 7.2 (1) on a finite model ----------------------------------------------------------
def finite_model(
    n_r: int, n_u: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """A finite hidden model for Theorem 7.2: ``z_R`` in ``n_r`` values with probabilities ``p_R``
    and, given ``z_R = a``, ``z_U`` in ``n_u`` values with probabilities ``p_U[a]`` (both drawn at
    random, every value possible). ``g`` is the identity, so (A1) holds. Returns ``(p_R, p_U)``."""
    p_r = torch.rand(n_r, generator=generator, dtype=torch.float64) + 0.1
    p_u = torch.rand(n_r, n_u, generator=generator, dtype=torch.float64) + 0.1
    return p_r / p_r.sum(), p_u / p_u.sum(-1, keepdim=True)


def finite_contrastive_loss(
    phi: torch.Tensor, p_r: torch.Tensor, p_u: torch.Tensor
) -> torch.Tensor:
    """(7.1) with the logistic loss on the finite model, enumerated exactly: ``phi`` of shape
    ``(..., n_r, n_u, k)`` (a table ``phi(z_R, z_U)``). The positive shares ``z_R`` and draws
    ``z_U+`` from ``p_U[z_R]`` afresh (7.3); the negative is an independent draw of ``z``."""
    joint = p_r[:, None] * p_u  # P(z_R = a, z_U = b)
    pos = (phi[..., :, :, None, :] * phi[..., :, None, :, :]).sum(-1)  # phi(a,b).phi(a,b')
    neg = torch.einsum("...abk,...cdk->...abcd", phi, phi)  # phi(a,b).phi(c,d)
    t = pos[..., :, :, :, None, None] - neg[..., :, :, None, :, :]
    w = joint[:, :, None, None, None] * p_u[:, None, :, None, None] * joint[None, None, None]
    return (w * losses.logistic(t)).sum((-1, -2, -3, -4, -5))


def theorem_7_2_spurious(
    p_r: torch.Tensor,
    p_u: torch.Tensor,
    *,
    k: int,
    norm: float,
    restarts: int,
    steps: int,
    generator: torch.Generator,
) -> dict:
    """Theorem 7.2 (1) on the finite model: the lowest loss found over representations on the
    sphere of radius ``norm`` (A2) that may depend on ``z_U`` (``free``), and over those that
    depend on ``z_R`` only (``invariant``), each by L-BFGS from ``restarts`` random starts of
    ``steps`` iterations, in float64. ``spread``: the largest distance, over ``z_R``, between two
    values of the best free representation at different ``z_U``, over ``norm``."""
    n_r, n_u = p_u.shape

    def best(shape, expand):
        found = []
        for _ in range(restarts):
            v = torch.randn(*shape, k, generator=generator, dtype=torch.float64).requires_grad_()
            opt = torch.optim.LBFGS([v], max_iter=steps, line_search_fn="strong_wolfe")

            def closure(v=v, opt=opt):
                opt.zero_grad()
                loss = finite_contrastive_loss(
                    expand(norm * v / v.norm(dim=-1, keepdim=True)), p_r, p_u
                )
                loss.backward()
                return loss

            opt.step(closure)
            with torch.no_grad():
                phi = expand(norm * v / v.norm(dim=-1, keepdim=True))
                found.append((float(finite_contrastive_loss(phi, p_r, p_u)), phi))
        return min(found, key=lambda x: x[0])

    free, phi = best((n_r, n_u), lambda t: t)
    inv, _ = best((n_r,), lambda t: t[:, None, :].expand(n_r, n_u, k))
    spread = float((phi[:, :, None, :] - phi[:, None, :, :]).norm(dim=-1).max() / norm)
    return {"free": free, "invariant": inv, "spread": spread}
