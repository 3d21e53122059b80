"""companions.icl_scale.theory: each closed form against an independent computation (the matrix
form, a limit, a symmetry), in exact rationals where the module promises exactness, on the torch
path as well as the sympy one, and at the boundaries of its parameters (a zero eigenvalue, r = 0).
"""

from fractions import Fraction as F

import pytest
import sympy as sp
import torch

from companions.icl_scale import data, theory

LAM = [4.0, 2.0, 1.0, 0.5]
LAM_Q = [F(4), F(2), F(1), F(1, 2)]


def _exact_setting(d=3, seed=2):
    """A rational orthogonal Q, a rational spectrum and Lambda = Q D Q^T, exactly."""
    Q = theory.cayley_orthogonal(d, seed)
    lam = [sp.Rational(9, 4), sp.Integer(1), sp.Rational(1, 4), sp.Rational(1, 8)][:d]
    return Q, lam, Q * sp.diag(*lam) * Q.T


def _float_setting():
    Q = data.random_orthogonal(4, torch.Generator().manual_seed(1))
    return Q, data.covariance(LAM, Q)


def test_the_sympy_path_stays_exact():
    Q, lam, Lam = _exact_setting()
    U = sp.Matrix(3, 3, [1, -2, sp.Rational(1, 3), 0, 2, 1, -1, 1, sp.Rational(1, 2)])
    C = theory.loss_constant(Lam)
    # U = 0 predicts 0: the loss is 1/2 E <w, x_q>^2 = tr(Lambda) / 2
    assert C == sum(lam) / 2 and isinstance(C, sp.Rational)
    assert theory.population_loss(sp.zeros(3, 3), 1, Lam, 5) == C
    for value in (
        theory.minimum_reduced_loss(Lam, 5),
        theory.gap_d4(U, sp.Rational(3, 5), Lam, Q * sp.diag(*map(sp.sqrt, lam)) * Q.T, 5),
        theory.population_loss(U, sp.Rational(3, 5), Lam, 5),
    ):
        assert isinstance(sp.nsimplify(value), sp.Rational) and value.is_Rational


def test_optimal_U_of_full_rank_is_gamma_inverse_exactly():
    # v_i* = 1 / lambda_i' for every i, so U* = Q diag(1/lambda') Q^T = Gamma^{-1}
    Q, lam, Lam = _exact_setting()
    N = 5
    assert theory.optimal_U(Q, lam, N, 3) == theory.gamma(Lam, N).inv()
    assert theory.optimal_U(Q, lam, N, 3, c=3) == 3 * theory.gamma(Lam, N).inv()
    U1 = theory.optimal_U(Q, lam, N, 1)
    assert U1.rank() == 1 and theory.population_loss(U1, 1, Lam, N) == theory.optimal_loss(
        lam, N, 1
    )


def test_the_torch_path_agrees_with_the_matrix_forms():
    Q, Lam = _float_setting()
    N = 8
    Ginv = torch.linalg.inv(theory.gamma(Lam, N))
    minimum = theory.minimum_reduced_loss(Lam, N)
    assert isinstance(minimum, torch.Tensor)  # tensors in, a tensor out (not a sympy Float)
    assert float(minimum) == pytest.approx(float(theory.reduced_loss(Ginv, 1.0, Lam, N)), 1e-12)
    assert float(minimum) == pytest.approx(float(theory.optimal_loss(LAM, N, 4)) - 3.75, 1e-12)
    assert float(theory.loss_constant(Lam)) == pytest.approx(3.75, 1e-14)
    U = torch.randn(4, 4, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    Lam_sqrt = data.covariance_sqrt(LAM, Q)
    for u in (0.6, -1.3):
        lhs = theory.reduced_loss(U, u, Lam, N) - minimum
        assert isinstance(theory.gap_d4(U, u, Lam, Lam_sqrt, N), torch.Tensor)
        assert float(theory.gap_d4(U, u, Lam, Lam_sqrt, N)) == pytest.approx(float(lhs), 1e-11)


def test_diagonal_loss_is_the_matrix_loss_at_a_diagonal_U():
    Q, Lam = _float_setting()
    g = torch.Generator().manual_seed(4)
    for N in (3, 16):
        v = torch.randn(4, generator=g, dtype=torch.float64).tolist()
        U = Q @ torch.diag(torch.tensor(v, dtype=torch.float64)) @ Q.T
        expected = float(theory.population_loss(U, 1.0, Lam, N))
        assert theory.diagonal_loss(v, LAM, N) == pytest.approx(expected, 1e-12)
    v = [F(1, 3), F(-2), F(0), F(5, 7)]
    assert theory.diagonal_loss(v, LAM_Q, 6) == theory.diagonal_loss(v, LAM_Q, 6)
    Qs, lam, Lam_s = _exact_setting()
    v = [sp.Rational(1, 3), -2, sp.Rational(5, 7)]
    U = Qs * sp.diag(*v) * Qs.T
    assert theory.diagonal_loss(v, lam, 6) == theory.population_loss(U, 1, Lam_s, 6)


def test_every_subset_loss_is_its_closed_form():
    # with v_i = 1 / lambda_i' on S: L(S) = tr D / 2 - 1/2 sum_{i in S} N lambda_i^2 / lambda_i''
    # where lambda_i'' = (N + 1) lambda_i + tr D; the top-r subset is optimal_loss
    lam, N = [F(4), F(2), F(1), F(1, 2), F(0)], 6
    tr = sum(lam)
    losses = theory.best_subset_losses(lam, N, 2)
    assert len(losses) == 10
    for S, L in losses.items():
        assert L == tr / 2 - sum(N * lam[i] ** 2 / ((N + 1) * lam[i] + tr) for i in S) / 2
    assert losses[(0, 1)] == theory.optimal_loss(lam, N, 2)


def test_a_zero_eigenvalue_is_allowed_and_r_zero_is_the_zero_map():
    lam = [F(2), F(1), F(0)]
    assert theory.optimal_v(lam, 4, 3) == [F(4, 13), F(1, 2), F(4, 3)]  # N / ((N + 1) lambda_i + 3)
    assert theory.optimal_v(lam, 4, 2)[2] == 0
    assert theory.optimal_loss([F(0), F(0)], 4, 0) == 0
    assert theory.optimal_loss(lam, 4, 0) == F(3, 2)
    message = (
        r"^parameter 'eigenvalues' = \[1, 2\] is not allowed: Section 5.4.1 sorts them as "
        r"lambda_1 >= \.\.\. >= lambda_d >= 0$"
    )
    with pytest.raises(ValueError, match=message):
        theory.optimal_v([1, 2], 4, 1)
    with pytest.raises(ValueError, match="'eigenvalues'"):
        theory.optimal_v([1, -1], 4, 1)


def test_theorem_5_4_3_at_r_zero_and_its_message():
    # s supported on the first 0 directions is s = 0: the gap is the noise term alone
    lam, N, M, s2 = [F(4), F(2), F(1)], 8, 5, F(1, 4)
    zero = [0, 0, 0]
    for r2 in range(4):
        gap = theory.theorem_5_4_3(lam, N, M=M, sigma2=s2, s=zero, r=0, r2=r2)
        a = theory.theorem_5_4_2(lam, N, M=M, sigma2=s2, s=zero, xi=zero, r=r2)
        assert gap == a - theory.theorem_5_4_2(lam, N, M=M, sigma2=s2, s=zero, xi=zero, r=0)
    with pytest.raises(
        ValueError, match=r"^parameters 'r', 'r2' = 2, 1: expected 0 <= r <= r2 <= d$"
    ):
        theory.theorem_5_4_3(lam, N, M=M, sigma2=s2, s=zero, r=2, r2=1)


def test_theorem_5_4_2_large_n_is_its_limit():
    lam = [F(4), F(2), F(1), F(1)]
    w = [F(1), F(-1, 2), F(4, 5), F(3, 10)]
    M, s2 = 6, F(49, 100)
    for r in range(5):
        s, xi = w[:r] + [0] * (4 - r), [0] * r + w[r:]
        limit = theory.theorem_5_4_2_large_n(lam, M, s2, s, xi, r)
        far = theory.theorem_5_4_2(lam, 10**12, M=M, sigma2=s2, s=s, xi=xi, r=r)
        assert abs(far - limit) < F(1, 10**10)
        near = theory.theorem_5_4_2(lam, 10, M=M, sigma2=s2, s=s, xi=xi, r=r)
        if r:
            assert abs(near - limit) > F(1, 10**4)  # the approximation needs N lambda_r >> tr D


def test_evaluation_loss_symmetry_of_the_flips():
    # flipping with probability f is flipping with 1 - f and negating the prediction (U -> -U):
    # m = 1 - 2f changes sign, and the loss with -v at 1 - f is the loss with v at f
    lam = [F(3), F(2), F(1, 2)]
    v, w = [F(1, 4), F(-1, 3), F(2)], [F(1), F(-2), F(1, 2)]
    for f in (F(0), F(1, 10), F(3, 10)):
        a = theory.evaluation_loss(lam, v, w, 7, F(1, 4), f)
        b = theory.evaluation_loss(lam, [-x for x in v], w, 7, F(1, 4), 1 - f)
        assert a == b
    # a fair coin (f = 1/2) erases the labels: the bias is ||w||_D^2 for any v
    half = theory.evaluation_loss(lam, v, w, 7, 0, F(1, 2))
    wD = sum(x * y**2 for x, y in zip(lam, w))
    trV2D2 = sum(x**2 * y**2 for x, y in zip(lam, v))
    cubic = sum(x**3 * y**2 * z**2 for x, y, z in zip(lam, v, w))
    assert half == wD + (wD * trV2D2 + 2 * cubic) / 7
    assert theory.evaluation_loss(lam, v, w, 7) == theory.evaluation_loss(lam, v, w, 7, 0, 0)


@pytest.mark.parametrize("d, r, r2", [(None, None, None), (4, 1, 3), (3, 1, 2)])
def test_flip_gap_is_theorem_5_4_3_at_every_flip(d, r, r2):
    if d is None:  # the defaults, d = 4, r = 2, r2 = 4
        gap, dgap = theory.flip_gap_symbolic()
        d, r, r2 = 4, 2, 4
    else:
        gap, dgap = theory.flip_gap_symbolic(d, r, r2)
    assert dgap == 0
    sym = {str(x): x for x in gap.free_symbols}
    lam = [F(7), F(3), F(2), F(1, 2)][:d]
    s = [F(1), F(-3, 2), F(2)][:r] + [0] * (d - r)
    values = {sym[f"lambda{i + 1}"]: lam[i] for i in range(d)}
    values.update({sym[f"s{i + 1}"]: s[i] for i in range(r)})
    values.update({sym["N"]: 9, sym["M"]: 5, sym["sigma2"]: F(1, 3)})
    expected = theory.theorem_5_4_3(lam, 9, M=5, sigma2=F(1, 3), s=s, r=r, r2=r2)
    for f in (F(0), F(1, 5)):
        here = dict(values)
        if "f" in sym:
            here[sym["f"]] = f
        assert set(sym) <= {"f", "N", "M", "sigma2"} | {f"lambda{i + 1}" for i in range(d)} | {
            f"s{i + 1}" for i in range(r)
        }
        assert sp.Rational(gap.subs(here)) == sp.Rational(expected.numerator, expected.denominator)


def test_stationary_point_default_size():
    sol, claimed = theory.stationary_point_symbolic()
    assert len(sol) == 3 and all(sp.simplify(a - b) == 0 for a, b in zip(sol, claimed))
    names = {str(x) for e in sol for x in e.free_symbols}
    assert names == {"N", "lambda1", "lambda2", "lambda3"}  # as the docstring names them


def test_cayley_basis_is_reproducible_and_spans_its_entries():
    torch.manual_seed(0)
    a = theory.cayley_orthogonal(4, 11)
    torch.manual_seed(1)
    assert theory.cayley_orthogonal(4, 11) == a  # the seed alone decides, not the global RNG
    assert theory.cayley_orthogonal(4, 12) != a
    entries = set()
    for seed in range(30):
        Q = theory.cayley_orthogonal(4, seed)
        S = (sp.eye(4) - Q) * (sp.eye(4) + Q).inv()  # the Cayley transform is an involution
        assert S == -S.T and all(x.is_integer for x in S)
        entries |= {int(S[i, j]) for i in range(4) for j in range(i + 1, 4)}
    assert entries == set(range(-3, 4))  # above the diagonal: drawn from [-3, 3], each of them
