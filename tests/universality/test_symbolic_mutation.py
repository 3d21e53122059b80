"""Mutation tests of companions.universality.symbolic (issue 23): each expected value is worked
out by hand in a comment or computed by a second implementation in this file."""

import itertools
import math
import random
from fractions import Fraction

import pytest
import sympy as sp
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from companions.universality import symbolic as usym

POS = dict(positive=True)


# -- _expect: moments 1, 0, 1, 0 of a standard normal ----------------------------------------------
def test_expect_uses_the_standard_normal_moments():
    x, y = sp.symbols("x y")
    c = sp.Symbol("c")
    assert usym._expect(sp.Integer(5), [x, y]) == 5  # E[const] = const
    assert usym._expect(x, [x, y]) == 0  # E[x] = 0
    assert usym._expect(x**2, [x, y]) == 1  # E[x^2] = 1
    assert usym._expect(x**3, [x, y]) == 0  # E[x^3] = 0
    assert usym._expect(x**2 * y**2, [x, y]) == 1  # independent: 1 * 1
    assert usym._expect(x**2 * y, [x, y]) == 0
    # E[(c + 2x + 3y)^2] = c^2 + 4 + 9
    assert sp.expand(usym._expect((c + 2 * x + 3 * y) ** 2, [x, y]) - (c**2 + 13)) == 0
    assert sp.expand(usym._expect(7 * c * x**2 - 3 * y**3 + 2, [x, y]) - (7 * c + 2)) == 0


# -- Theorem 7.1, linear h -------------------------------------------------------------------------
def _minus_frobenius_spurious(k, n_r, n_u):
    """Closed form of the residual without resampling, by hand: with z+ = z,
    -E||h(z)||^2 + ||E h||^2 + E||W M (xbar - mu)||^2 = -tr(W M Sigma M^T W^T) + tr(W M Sigma_R
    M^T W^T) = -||W M[:, U] A_U||_F^2 (Sigma = blockdiag(A_R A_R^T, A_U A_U^T))."""
    d = n_r + n_u
    W = sp.Matrix(k, d, lambda i, j: sp.Symbol(f"w{i}{j}"))
    M = sp.Matrix(d, d, lambda i, j: sp.Symbol(f"m{i}{j}"))
    AU = sp.Matrix(n_u, n_u, lambda i, j: sp.Symbol(f"b{i}{j}"))
    B = W * M[:, n_r:] * AU
    return -sum(e**2 for e in B)


@pytest.mark.parametrize("k,n_r,n_u", [(1, 1, 1), (2, 1, 1), (1, 1, 2)])
def test_theorem_7_1_linear_closed_forms(k, n_r, n_u):
    out = usym.theorem_7_1_linear(k=k, n_r=n_r, n_u=n_u)
    assert out["residual"] == 0
    assert sp.expand(out["without_resampling"] - _minus_frobenius_spurious(k, n_r, n_u)) == 0


# -- Theorem 7.1, exact finite model ---------------------------------------------------------------
def _exact_by_hand(n_r, n_u, k, seed):
    """The same random model (same draws in the same order) and both sides by a second route:
    with ell(t) = -t and z+ independent of z given z_R, E[h(z)^T h(z+)] = sum_a p(a) ||phi(a)||^2
    and E[h(z)^T h(z-)] = ||phi0||^2, so lhs = -sum_a p(a) ||phi(a)||^2 + ||phi0||^2."""
    rng = random.Random(seed)
    wr = [rng.randint(1, 9) for _ in range(n_r)]
    wu = [rng.randint(1, 9) for _ in range(n_u)]
    pr = [Fraction(x, sum(wr)) for x in wr]
    pu = [Fraction(x, sum(wu)) for x in wu]
    h = {}
    for a in range(n_r):
        for b in range(n_u):
            h[a, b] = [Fraction(rng.randint(-9, 9), rng.randint(1, 7)) for _ in range(k)]
    phi = [[sum(pu[b] * h[a, b][i] for b in range(n_u)) for i in range(k)] for a in range(n_r)]
    phi0 = [sum(pr[a] * phi[a][i] for a in range(n_r)) for i in range(k)]
    sq = sum(pr[a] * sum(x * x for x in phi[a]) for a in range(n_r))
    lhs = -sq + sum(x * x for x in phi0)
    return lhs


@pytest.mark.parametrize("n_r,n_u,k,seed", [(2, 2, 2, 0), (3, 1, 3, 5), (1, 3, 1, 2)])
def test_theorem_7_1_exact_matches_a_second_route(n_r, n_u, k, seed):
    out = usym.theorem_7_1_exact(n_r=n_r, n_u=n_u, k=k, seed=seed)
    want = _exact_by_hand(n_r, n_u, k, seed)
    assert out["lhs"] == want and out["rhs"] == want
    assert type(out["lhs"]) is Fraction and type(out["rhs"]) is Fraction


def test_theorem_7_1_exact_defaults():
    # the signature's defaults: n_r = 3, n_u = 2, k = 2, seed = 0
    out = usym.theorem_7_1_exact()
    want = _exact_by_hand(3, 2, 2, 0)
    assert out["lhs"] == want and out["rhs"] == want
    assert want != 0


# -- Proposition F.8 (exponential loss) and the sqrt(r) erratum ------------------------------------
def test_f8_exponential_stationary_point_by_hand():
    # d/da [-(s/2)(log(1 + 2a) + log(1 + 2(2 - a)/T))] = -(s/2)(2/(1 + 2a) - 2/(T + 4 - 2a)),
    # zero at 1 + 2a = T + 4 - 2a, a = (T + 3)/4; at a = 1: -s(1/3 - 1/(T + 2)) = -s(T-1)/(3(T+2))
    out = usym.f8_exponential_stationary_point()
    T, s = sp.symbols("T s", **POS)
    assert out["T"] == T and out["s"] == s
    assert len(out["critical"]) == 1
    assert sp.simplify(out["critical"][0] - (T + 3) / 4) == 0
    assert sp.simplify(out["slope_at_1"] + s * (T - 1) / (3 * (T + 2))) == 0


def test_sqrt_r_erratum_by_hand():
    # with v = u^2/2: F.8 = 4 L u sqrt((1 + T)/(2m)) sqrt(r (T + 1)/(2T)) = 2 L u (T + 1)
    # sqrt(r/(m T)); 7.4 = 4 L u sqrt(r/m); main text L u sqrt(T/m).
    out = usym.sqrt_r_erratum()
    T, r = sp.symbols("T r", **POS)
    assert out["T"] == T and out["r"] == r
    for tv, rv in [(2, 3), (3, 7), (sp.Rational(1, 4), 5)]:
        at = {T: tv, r: rv}
        want = (tv + 1) / (2 * sp.sqrt(tv))
        assert sp.simplify(out["ratio"].subs(at) - want) == 0
        assert sp.simplify(out["ratio_target"].subs(at) - want) == 0
        assert sp.simplify(out["versus_main_text"].subs(at) - 2 * (tv + 1) * sp.sqrt(rv) / tv) == 0
    assert out["limit_r"] == sp.oo


# -- the XOR example -------------------------------------------------------------------------------
def test_xor_constants_are_the_sources():
    # Appendix F.1.1: z_R on the four sign pairs, h on the unit square's vertices (a bijection)
    assert usym.XOR_POINTS == ((-1, -1), (-1, 1), (1, -1), (1, 1))
    assert usym.XOR_SQUARE == ((-1.0, 0.0), (1.0, 0.0), (0.0, -1.0), (0.0, 1.0))


def _xor_loss_loop(h):
    """(1/16) sum_{z, z-} log(1 + exp(-(h(z).h(z) - h(z).h(z-)))), by a double loop."""
    total = 0.0
    for i in range(4):
        for j in range(4):
            t = float(h[i] @ h[i] - h[i] @ h[j])
            total += math.log1p(math.exp(-t))
    return total / 16


def test_xor_loss_against_a_loop_and_batched():
    g = torch.Generator().manual_seed(3)
    h = torch.randn(3, 2, 4, 2, generator=g, dtype=torch.float64)
    got = usym.xor_loss(h)
    assert got.shape == (3, 2)
    for a in range(3):
        for b in range(2):
            assert float(got[a, b]) == pytest.approx(_xor_loss_loop(h[a, b]), rel=1e-12)


def test_xor_square_value_by_counting_pairs():
    # square: 4 pairs z = z- (t = 0), 8 orthogonal (t = 1), 4 opposite (t = 2)
    want = (4 * math.log(2) + 8 * math.log(1 + math.exp(-1)) + 4 * math.log(1 + math.exp(-2))) / 16
    assert usym.xor_square_value() == pytest.approx(want, rel=1e-14)


def _h(theta):
    return torch.stack([torch.cos(theta), torch.sin(theta)], -1)


def test_xor_restarts_start_and_first_adam_step():
    # steps = 0: the loss at the start, theta ~ U[0, 2 pi) from the generator's first draws
    theta0 = torch.rand(5, 4, generator=torch.Generator().manual_seed(9), dtype=torch.float64)
    theta0 = theta0 * 2 * math.pi
    got = usym.xor_restarts(5, 0, torch.Generator().manual_seed(9))
    assert got.dtype == torch.float64 and got.shape == (5,)
    assert torch.allclose(got, usym.xor_loss(_h(theta0)), rtol=0, atol=1e-15)
    # Adam's first step (bias-corrected m = g, v = g^2, eps = 1e-8) with lr = 0.05 is
    # -0.05 g / (|g| + eps): every angle moves by 0.05 against its gradient's sign
    th = theta0.clone().requires_grad_()
    usym.xor_loss(_h(th)).sum().backward()
    theta1 = theta0 - 0.05 * th.grad / (th.grad.abs() + 1e-8)
    got1 = usym.xor_restarts(5, 1, torch.Generator().manual_seed(9))
    assert torch.allclose(got1, usym.xor_loss(_h(theta1)), rtol=0, atol=1e-9)


def test_xor_restarts_reach_the_square():
    got = usym.xor_restarts(6, 300, torch.Generator().manual_seed(0))
    best = usym.xor_square_value()
    assert float(got.min()) == pytest.approx(best, abs=1e-6)
    assert float(got.min()) >= best - 1e-9


# -- separability ----------------------------------------------------------------------------------
def _segments_meet(p1, p2, q1, q2):
    """Whether the closed segments [p1, p2] and [q1, q2] share a point, by solving
    p1 + s (p2 - p1) = q1 + t (q2 - q1) exactly (a second implementation)."""
    p1, p2, q1, q2 = [tuple(Fraction(c) for c in p) for p in (p1, p2, q1, q2)]
    dx, dy = p2[0] - p1[0], p2[1] - p1[1]
    ex, ey = q2[0] - q1[0], q2[1] - q1[1]
    det = dx * (-ey) - (-ex) * dy
    rx, ry = q1[0] - p1[0], q1[1] - p1[1]
    if det != 0:
        s = (rx * (-ey) - (-ex) * ry) / det
        t = (dx * ry - dy * rx) / det
        return 0 <= s <= 1 and 0 <= t <= 1
    if dx * ry - dy * rx != 0:  # parallel, not on one line
        return False
    # on one line: overlap of the projections onto the line's direction
    u = (dx, dy) if (dx, dy) != (0, 0) else (ex, ey)
    proj = [c[0] * u[0] + c[1] * u[1] for c in (p1, p2, q1, q2)]
    return max(min(proj[:2]), min(proj[2:])) <= min(max(proj[:2]), max(proj[2:]))


def _collinear(a, b, c):
    return (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0]) == 0


pt = st.tuples(st.integers(-4, 4), st.integers(-4, 4))


@settings(max_examples=150, deadline=None)
@given(st.lists(pt, min_size=4, max_size=4, unique=True))
def test_separable_matches_segment_intersection_in_general_position(pts):
    assume(not any(_collinear(*c) for c in itertools.combinations(pts, 3)))
    want = not _segments_meet(*pts)
    assert usym.separable(pts, [1, 1, -1, -1]) == want
    assert usym.separable([pts[2], pts[0], pts[3], pts[1]], [-1, 1, 0, 1]) == want


def test_separable_touching_and_label_checks():
    # q1 = (1, 0) lies inside the segment (0, 0)-(2, 0): the hulls touch, not strictly separable
    for q2 in [(1, 1), (1, -1), (3, 5), (-2, -7)]:
        assert not usym.separable([(0, 0), (2, 0), (1, 0), q2], [1, 1, -1, -1])
        assert not usym.separable([(1, 0), q2, (0, 0), (2, 0)], [1, 1, -1, -1])
    # an endpoint shared with the other segment's interior, the other way round
    assert not usym.separable([(0, 0), (4, 4), (2, 2), (5, 0)], [2, 3, 0, -1])
    assert usym.separable([(0, 0), (0, 1), (1, 0), (1, 1)], [1, 1, 0, 0])  # label 0 is negative
    square = [(0, 0), (0, 1), (1, 0), (1, 1)]
    msg = r"^separable\(\) handles two points per class$"
    for labels in ([1, 1, 1, -1], [1, -1, -1, -1], [0, 0, 0, 1]):
        with pytest.raises(ValueError, match=msg):
            usym.separable(square, labels)
    with pytest.raises(ValueError, match=msg):  # two positives, three negatives
        usym.separable(square + [(5, 5)], [1, 1, -1, -1, -1])
    with pytest.raises(ValueError, match=msg):  # three positives, two negatives
        usym.separable(square + [(5, 5)], [1, 1, 1, -1, -1])


def test_xor_fraction_non_separable_by_enumeration():
    # 24 bijections of the 4 points onto the square's vertices; label y = z_1 is not separable
    # exactly when the two +1 points land on opposite vertices: 8 of 24 (= 1/3)
    bad = 0
    for perm in itertools.permutations(range(4)):
        pos = [perm[i] for i, z in enumerate(usym.XOR_POINTS) if z[0] > 0]
        bad += sorted(pos) in ([0, 1], [2, 3])  # (-1,0)/(1,0) and (0,-1)/(0,1) are opposite
    assert bad == 8
    assert usym.xor_fraction_non_separable() == Fraction(bad, 24)
