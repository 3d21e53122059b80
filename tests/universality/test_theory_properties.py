"""Property tests (hypothesis) of companions.universality.theory: the closed forms' identities,
symmetries and scalings across their domain, not at a point where a slip vanishes."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from companions.universality import theory as uth

FAST = settings(max_examples=30, deadline=None, derandomize=True)
POS = st.floats(0.05, 5.0)


@FAST
@given(st.integers(1, 6), st.integers(1, 6), st.integers(1, 5), st.floats(0.0, 3.0))
def test_beta_spends_the_frobenius_budget(s, extra, T, alpha):
    r = s + extra
    beta = uth.beta_of_alpha(alpha, s, r, T)
    # s alpha + T (r - s) beta = r (the budget ||W||_F^2 = r) unless beta is capped at 1
    if beta < 1.0:
        assert s * alpha + T * (r - s) * beta == pytest.approx(r)
    else:
        assert s * alpha + T * (r - s) <= r + 1e-12
    assert uth.beta_of_alpha(1.0, s, r, T) == pytest.approx(min(1.0, 1 / T))
    assert uth.beta_of_alpha(alpha + 0.5, s, r, T) <= beta


@FAST
@given(POS, POS, POS, POS, POS)
def test_probe_norm_scalings_and_symmetry(v1, v2, a, b, c):
    p = uth.probe_norm(v1, v2, a, b)
    assert p == pytest.approx(math.sqrt(v1 / a + v2 / b))
    assert uth.probe_norm(v2, v1, b, a) == pytest.approx(p)
    assert uth.probe_norm(c * v1, c * v2, a, b) == pytest.approx(math.sqrt(c) * p)
    assert uth.probe_norm(v1, v2, c * a, c * b) == pytest.approx(p / math.sqrt(c))


@FAST
@given(POS, POS, POS, POS, st.integers(1, 5), st.integers(1, 5), st.integers(1, 50), POS)
def test_rademacher_terms_scale_and_order(v1, v2, a, b, s, extra, m, c):
    r = s + extra
    lead = uth.rademacher_leading(v1, v2, alpha=a, beta=b, s=s, r=r, m=m)
    assert lead == pytest.approx(uth.probe_norm(v1, v2, a, b) * math.sqrt((s * a + extra * b) / m))
    # scale-free in the loadings, 1/sqrt(m) in the sample size
    assert uth.rademacher_leading(v1, v2, alpha=c * a, beta=c * b, s=s, r=r, m=m) == pytest.approx(
        lead
    )
    assert uth.rademacher_leading(v1, v2, alpha=a, beta=b, s=s, r=r, m=4 * m) == pytest.approx(
        lead / 2
    )
    low = uth.rademacher_lower(v1, v2, alpha=a, beta=b, s=s, r=r, m=m)
    mu = m * (s * a + extra * b)
    expected = uth.probe_norm(v1, v2, a, b) / m * math.sqrt(max(mu - m * max(a, b), 0.0))
    assert low == pytest.approx(expected) and 0 <= low <= lead + 1e-12
    assert uth.rademacher_lower(v1, v2, alpha=b, beta=a, s=s, r=s + 1, m=m) == pytest.approx(
        uth.probe_norm(v1, v2, b, a) / m * math.sqrt(max(m * (s * b + a) - m * max(a, b), 0.0))
    )


@FAST
@given(st.integers(1, 8), st.integers(1, 9), st.floats(0.0, 2.0))
def test_cr_sqrt_beta_is_capped_and_grows_with_gamma(T, s, gamma):
    v = uth.cr_sqrt_beta(T, s, gamma)
    assert v == pytest.approx(min(1.0, math.sqrt(1 / T) + gamma / math.sqrt(s)))
    assert uth.cr_sqrt_beta(T, s, 0.0) == pytest.approx(math.sqrt(1 / T))
    assert uth.cr_sqrt_beta(T, s, gamma + 0.1) >= v


@FAST
@given(st.integers(1, 9), st.integers(1, 40), st.integers(1, 200), POS, POS)
def test_leading_terms_agree_at_one_task_and_scale(T, r, m, u, L):
    assert uth.leading_term_f8(1, r, m, u, L) == pytest.approx(uth.leading_term_74(r, m, u, L))
    assert uth.leading_term_74(r, m, u, L) == pytest.approx(4 * L * math.sqrt(r / m) * u)
    f8 = uth.leading_term_f8(T, r, m, u, L)
    v = u * u / 2
    assert f8 == pytest.approx(
        4 * L * math.sqrt((v + T * v) / m) * math.sqrt(r * (T + 1) / (2 * T))
    )
    assert uth.leading_term_f8(T, r, m, u) == pytest.approx(f8 / L)
    assert uth.leading_term_74(r, m, u) == pytest.approx(4 * math.sqrt(r / m) * u)


def _orthonormal(n, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.linalg.qr(torch.randn(n, n, generator=g, dtype=torch.float64))[0]


@FAST
@given(st.integers(2, 7), st.integers(0, 10**6))
def test_loadings_read_back_the_representation(d, seed):
    g = torch.Generator().manual_seed(seed)
    a2 = torch.rand(d, generator=g, dtype=torch.float64)
    M, Q = _orthonormal(d, seed + 1), _orthonormal(d, seed + 2)
    for W in (
        uth.representation(a2, M),
        uth.representation(a2, M, Q),
        uth.representation(a2, M, k=d),
    ):
        assert W.shape == (d, d)
        assert torch.allclose(uth.loadings(W, M), a2, atol=1e-12)
    # k rows keep the first k loadings
    W = uth.representation(a2, M, k=d - 1)
    assert W.shape == (d - 1, d)
    assert torch.allclose(uth.loadings(W, M), torch.cat([a2[:-1], a2.new_zeros(1)]), atol=1e-12)


@FAST
@given(
    st.lists(st.floats(0.0, 3.0), min_size=1, max_size=6),
    st.one_of(st.none(), st.floats(0.2, 3.0)),
)
def test_singular_value_projection_is_feasible_and_closest(values, fro):
    sv = torch.tensor(values, dtype=torch.float64)
    x = uth._project_singular_values(sv, fro)
    assert float(x.min()) >= 0 and float(x.max()) <= 1 + 1e-12
    if fro is not None:
        assert float(x.norm()) <= fro + 1e-9
    clipped = sv.clamp(max=1.0)
    if fro is None or float(clipped.norm()) <= fro:
        assert torch.equal(x, clipped)  # already feasible after clipping: nothing more to do
    else:
        assert float(x.norm()) == pytest.approx(fro, abs=1e-9)  # the ball is active
        # no feasible point on random directions from x is closer to sv
        g = torch.Generator().manual_seed(len(values))
        for _ in range(20):
            y = (x + 0.05 * torch.randn(len(values), generator=g, dtype=torch.float64)).clamp(0, 1)
            if float(y.norm()) <= fro:
                assert float((y - sv).norm()) >= float((x - sv).norm()) - 1e-9
    assert torch.allclose(uth._project_singular_values(x, fro), x, atol=1e-9)  # idempotent


def test_cr_residual_measures_both_constraints():
    Ws = torch.diag(torch.tensor([0.5, 0.5], dtype=torch.float64))
    assert uth.cr_residual(Ws, Ws, 0.1) == 0.0
    W = Ws + torch.tensor([[0.3, 0.0], [0.0, 0.0]], dtype=torch.float64)
    assert uth.cr_residual(W, Ws, 0.1) == pytest.approx(0.2)
    big = torch.diag(torch.tensor([1.5, 0.5], dtype=torch.float64))
    assert uth.cr_residual(big, big, 0.1) == pytest.approx(0.5)


def test_representation_is_q_a_m_transpose_in_the_loadings_dtype():
    d = 4
    a2 = torch.tensor([0.25, 1.0, 0.5, 0.0], dtype=torch.float64)
    M, Q = _orthonormal(d, 1), _orthonormal(d, 2)
    A = torch.diag(a2.sqrt())
    assert torch.allclose(uth.representation(a2, M), A @ M.T, atol=1e-15)
    assert torch.allclose(uth.representation(a2, M, Q), Q @ A @ M.T, atol=1e-15)
    Q2 = _orthonormal(2, 3)
    assert torch.allclose(uth.representation(a2, M, Q2, k=2), Q2 @ A[:2] @ M.T, atol=1e-15)
    # float32 dictionaries and rotations are taken in the loadings' float64
    W = uth.representation(a2, M.float(), Q.float())
    assert W.dtype == torch.float64
    assert uth.loadings(W.float(), M).dtype == torch.float64


def _mixture_reference(alphas, s, r, T, samples, seed):
    g = torch.Generator().manual_seed(seed)
    Z = (torch.randn(samples, s, generator=g, dtype=torch.float64) ** 2).sum(-1)
    Z1 = (torch.randn(samples, r - s, generator=g, dtype=torch.float64) ** 2).sum(-1)
    ell = lambda t: torch.logaddexp(torch.zeros_like(t), -t)  # noqa: E731
    vals = torch.stack([ell(a * Z + uth.beta_of_alpha(a, s, r, T) * Z1) for a in alphas])
    ref = ell(Z + uth.beta_of_alpha(1.0, s, r, T) * Z1)
    return vals.mean(-1), (vals - ref).std(-1) / math.sqrt(samples)


def test_mixture_objective_is_its_monte_carlo_definition():
    alphas = [0.5, 1.0, 1.5]
    f, se = uth.mixture_objective(
        alphas, 2, r=5, T=3, samples=400, generator=torch.Generator().manual_seed(4)
    )
    f_ref, se_ref = _mixture_reference(alphas, 2, 5, 3, 400, 4)
    assert f.dtype == se.dtype == torch.float64 and f.shape == se.shape == (3,)
    assert torch.allclose(f, f_ref, atol=1e-14) and torch.allclose(se, se_ref, atol=1e-14)
    assert float(se[1]) == 0.0  # f(1) - f(1) has no spread


def test_rademacher_mc_is_its_monte_carlo_definition():
    alpha, beta, v1, v2, s, r, m, draws = 0.8, 0.3, 0.5, 0.7, 2, 5, 6, 300
    mean, se = uth.rademacher_mc(
        alpha,
        beta,
        v1=v1,
        v2=v2,
        s=s,
        r=r,
        m=m,
        draws=draws,
        generator=torch.Generator().manual_seed(5),
    )
    g = torch.Generator().manual_seed(5)
    Zs = torch.randn(draws, m, r, generator=g, dtype=torch.float64).sum(1)
    scale = torch.tensor([math.sqrt(alpha)] * s + [math.sqrt(beta)] * (r - s), dtype=torch.float64)
    vals = uth.probe_norm(v1, v2, alpha, beta) / m * (Zs * scale).norm(dim=-1)
    # (the library builds the scale in float32 before casting: 1e-8 relative, far below the SE)
    assert mean == pytest.approx(float(vals.mean()), rel=1e-6)
    assert se == pytest.approx(float(vals.std()) / math.sqrt(draws), rel=1e-6)


def test_project_cr_is_the_projection_onto_the_intersection():
    # with W* = 0 the set is {||W||_F <= gamma, ||W|| <= 1}: the projection acts on the singular
    # values, so it is project_representation with fro = gamma (Dykstra must find the closest
    # point, not just a feasible one)
    g = torch.Generator().manual_seed(9)
    W = 1.5 * torch.randn(4, 3, generator=g, dtype=torch.float64)
    Ws = torch.zeros_like(W)
    for gamma in (0.5, 1.3, 2.0):
        got = uth.project_cr(W, Ws, gamma, tol=1e-12, max_iters=20000)
        assert torch.allclose(got, uth.project_representation(W, gamma), atol=1e-6)
    # a Frobenius cap of its own (a large ball around W*)
    got = uth.project_cr(W, Ws, 100.0, fro=1.2, tol=1e-12, max_iters=20000)
    assert torch.allclose(got, uth.project_representation(W, 1.2), atol=1e-6)
    # a point already inside is left where it is
    inside = 0.1 * W / float(torch.linalg.matrix_norm(W, ord=2))
    assert torch.allclose(uth.project_cr(inside, Ws, 1.0), inside, atol=1e-15)
    # the default tolerance is tight
    Wt = torch.randn(4, 3, generator=g, dtype=torch.float64)
    Wt = 0.8 * Wt / float(torch.linalg.matrix_norm(Wt, ord=2))  # the set is not empty
    assert uth.cr_residual(uth.project_cr(W, Wt, 0.5), Wt, 0.5) < 1e-5


def test_project_cr_stops_at_max_iters(monkeypatch):
    calls = []
    real = uth.project_representation

    def counting(Z, fro):
        calls.append(1)
        return real(Z, fro)

    monkeypatch.setattr(uth, "project_representation", counting)
    W = torch.eye(2, dtype=torch.float64) * 3
    uth.project_cr(W, torch.zeros_like(W), 0.5, tol=-1.0)  # never converges: the cap decides
    assert len(calls) == 2000
    calls.clear()
    uth.project_cr(W, torch.zeros_like(W), 0.5, tol=-1.0, max_iters=7)
    assert len(calls) == 7


def test_singular_value_projection_edges():
    sv = torch.tensor([2.0, 1.0, 0.5], dtype=torch.float64)
    # fro = 2: the values clipped at 1 have norm^2 = 2.25 <= 4, nothing more to do
    assert torch.equal(
        uth._project_singular_values(sv, 2.0), torch.tensor([1.0, 1.0, 0.5]).double()
    )
    # on the boundary of the ball: kept
    on = torch.tensor([0.6, 0.8], dtype=torch.float64)
    assert torch.equal(uth._project_singular_values(on, 1.0), on)
    x = uth._project_singular_values(torch.tensor([3.0, 3.0, 3.0], dtype=torch.float64), 1.5)
    assert torch.allclose(x, torch.full((3,), 1.5 / math.sqrt(3), dtype=torch.float64))
    x = uth._project_singular_values(torch.tensor([5.0, 1.0, 1.0], dtype=torch.float64), 1.5)
    assert float(x[0]) == 1.0 and float(x.norm()) == pytest.approx(1.5)
    with pytest.raises(
        ValueError, match="no projection onto the ball of radius 0.0: it must exceed 0"
    ):
        uth._project_singular_values(torch.tensor([1.0, 1.0], dtype=torch.float64), 0.0)


def test_singular_value_projection_with_many_values_clipped():
    # fro = 2.5: five values clipped at 1, the other three scaled by the same factor, onto the ball
    sv = torch.tensor([10.0] * 5 + [1.2] * 3, dtype=torch.float64)
    x = uth._project_singular_values(sv, 2.5)
    scale = math.sqrt(3 * 1.2**2 / (2.5**2 - 5))
    assert torch.allclose(x, torch.tensor([1.0] * 5 + [1.2 / scale] * 3, dtype=torch.float64))
    assert float(x.norm()) == pytest.approx(2.5)
    # fro = 3: eight clipped (more than 2 fro = 6 of them)
    sv = torch.tensor([5.0] * 8 + [2.0] * 3, dtype=torch.float64)
    x = uth._project_singular_values(sv, 3.0)
    assert torch.allclose(x[:8], torch.ones(8, dtype=torch.float64))
    assert float(x.norm()) == pytest.approx(3.0)


def test_singular_value_projection_checks_the_ball_with_squares():
    sv = torch.tensor([0.8, 0.8, 0.8], dtype=torch.float64)  # sum x^2 = 1.92 > 1.69 >= sum x^3
    x = uth._project_singular_values(sv, 1.3)
    assert float(x.norm()) == pytest.approx(1.3)


def test_project_cr_default_tolerance_is_pinned(monkeypatch):
    calls = []
    real = uth.project_representation
    monkeypatch.setattr(
        uth, "project_representation", lambda Z, fro: calls.append(1) or real(Z, fro)
    )
    g = torch.Generator().manual_seed(0)
    W = 3 * torch.randn(5, 4, generator=g, dtype=torch.float64)
    Ws = torch.randn(5, 4, generator=g, dtype=torch.float64)
    Ws = 0.9 * Ws / float(torch.linalg.matrix_norm(Ws, ord=2))
    counts = []  # both constraints active: Dykstra needs about a hundred rounds to 1e-6
    for kwargs in ({}, {"tol": 1e-6}, {"tol": 1.000001}):
        calls.clear()
        uth.project_cr(W, Ws, 1.0, **kwargs)
        counts.append(len(calls))
    assert counts[0] == counts[1] > counts[2]
