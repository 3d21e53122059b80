"""Mutation-killing tests of companions.looped.symbolic (issue 23).

Expected values are worked out by hand from the definitions (Definitions 8.5-8.6, Lemma 8.13,
Theorem 8.14, Theorem 8.17's condition), or are the shapes the docstrings state.
"""

import pytest
import sympy as sp

from companions.looped import symbolic as lsym


def test_symbolic_setting_names_assumptions_and_shapes():
    X, y, q0, alpha = lsym._symbolic_setting(2, 3)
    assert X.shape == (2, 3) and y.shape == (2, 1) and q0.shape == (3, 1)
    assert X[0, 0] == sp.Symbol("x_11", real=True)
    assert X[1, 2] == sp.Symbol("x_23", real=True)
    assert [y[i, 0] for i in range(2)] == [sp.Symbol(f"y_{i}", real=True) for i in (1, 2)]
    assert [q0[i, 0] for i in range(3)] == [sp.Symbol(f"q_{i}", real=True) for i in (1, 2, 3)]
    assert alpha == sp.Symbol("alpha", real=True, nonzero=True)
    assert alpha.is_real and alpha.is_nonzero


def test_symbolic_input_layout():
    X, y, q0, alpha = lsym._symbolic_setting(2, 1)
    Z = lsym._symbolic_input(X, y, q0, alpha)
    # Definition 8.5: [[X, y], [q0^T, alpha]]
    assert Z == sp.Matrix([[X[0, 0], y[0, 0]], [X[1, 0], y[1, 0]], [q0[0, 0], alpha]])


def test_symbolic_weights_by_hand():
    Q, P = lsym._symbolic_weights(2)
    assert Q == sp.eye(3)
    assert P == sp.Matrix([[1, 0, 0], [0, 1, 0], [0, 0, 0]])


def test_symbolic_attention_small_case_by_hand():
    # n = 2, d = 1, Q = P = I: only row 3 is nonzero; it is sum_j (z_3 . z_j) z_j.
    Z = sp.Matrix([[1, 2], [3, 4], [5, 6]])
    out = lsym._symbolic_attention(Z, sp.eye(2), sp.eye(2))
    # z_3 . z_1 = 17, z_3 . z_2 = 39 -> 17 (1, 2) + 39 (3, 4) = (134, 190)
    assert out == sp.Matrix([[0, 0], [0, 0], [134, 190]])
    # P and Q enter as written: (M o (Z Q Z^T)) Z P
    Q = sp.Matrix([[2, 0], [0, 0]])
    P = sp.Matrix([[0, 1], [0, 0]])
    out = lsym._symbolic_attention(Z, Q, P)
    # z_3^T Q z_j = 10 * x_j1: (10, 30); sum = 10 (1, 2) + 30 (3, 4) = (100, 140); P -> (0, 100)
    assert out == sp.Matrix([[0, 0], [0, 0], [0, 100]])


def test_lemma_8_13_defaults_are_n3_d2():
    res = lsym.symbolic_lemma_8_13()
    assert res["lemma"].shape == (4, 3) and res["lemma"].is_zero_matrix
    assert res["corner"] == 0


def test_lemma_8_13_residuals_are_zero_on_other_sizes():
    res = lsym.symbolic_lemma_8_13(2, 3)
    assert res["lemma"].shape == (3, 4) and res["lemma"].is_zero_matrix
    assert res["corner"] == 0


def test_theorem_8_14_residuals_and_shapes():
    res = lsym.symbolic_theorem_8_14(2, 2, 2)
    assert res["tf_minus_gd"].shape == (2, 1) and res["tf_minus_gd"].is_zero_matrix
    assert res["rows_changed"].shape == (2, 3) and res["rows_changed"].is_zero_matrix
    assert res["alpha_changed"] == 0
    assert len(res["hidden_state"]) == 2
    assert all(h.shape == (2, 1) and h.is_zero_matrix for h in res["hidden_state"])
    assert res["augmented_rank"] == 2  # n = 2 rows: [X | y] is 2 x 3, full row rank


def test_theorem_8_14_hidden_state_per_loop_and_rank():
    res = lsym.symbolic_theorem_8_14(3, 1, 2)
    assert len(res["hidden_state"]) == 2
    assert all(h.is_zero_matrix for h in res["hidden_state"])
    assert res["augmented_rank"] == 2


def test_strong_convexity_defaults_and_sizes():
    assert lsym.symbolic_strong_convexity_identity() == 0
    assert lsym.symbolic_strong_convexity_identity(1, 1) == 0


def test_gatmiry_threshold_exact():
    res = lsym.symbolic_gatmiry_threshold()
    assert res["residual"] == 0
    assert res["slope_negative"] is True


def test_a_wrong_construction_shows_in_the_named_step_sizes(monkeypatch):
    # With P = I (the alpha column kept), one loop moves the alpha entry by
    # -eta_0 (q^T X^T y + alpha ||y||^2) (Lemma 8.13's corner): the residual names eta_0 > 0.
    monkeypatch.setattr(lsym, "_symbolic_weights", lambda d: (sp.eye(d + 1), sp.eye(d + 1)))
    res = lsym.symbolic_theorem_8_14(1, 1, 1)
    eta0 = sp.Symbol("eta_0", positive=True)
    x, y, q = (sp.Symbol(s, real=True) for s in ("x_11", "y_1", "q_1"))
    alpha = sp.Symbol("alpha", real=True, nonzero=True)
    assert sp.expand(res["alpha_changed"] + eta0 * (q * x * y + alpha * y**2)) == 0


def test_augmented_rank_is_the_generic_rank():
    # [X | y] is n x (d+1): at a generic point its rank is min(n, d+1) (d+1 when n > d: y is not
    # in the column space of X). A point with a zero denominator or too few distinct values fails.
    assert lsym.symbolic_theorem_8_14(3, 1, 1)["augmented_rank"] == 2
    assert lsym.symbolic_theorem_8_14(4, 1, 1)["augmented_rank"] == 2
    assert lsym.symbolic_theorem_8_14(3, 3, 1)["augmented_rank"] == 3


@pytest.mark.parametrize("n, d", [(4, 3), (5, 3), (5, 2), (4, 2), (2, 3)])
def test_augmented_rank_is_min_n_d_plus_1_at_larger_sizes(n, d):
    # The point used until the fix gave rank 3 at n = 4, d = 3 (its values repeat).
    assert lsym.symbolic_theorem_8_14(n, d, 1)["augmented_rank"] == min(n, d + 1)


def test_theorem_8_14_default_sizes_with_a_concrete_setting(monkeypatch):
    # The chapter's sizes n = 3, d = 2, loops = 3 are the defaults (pinned by the source and by
    # book/in-context/looped-gd.md). A concrete rational setting of the requested shape keeps the
    # default-size run fast; the residuals stay 0 (Theorem 8.14 holds for any X, y, q0, alpha).
    sizes = []

    def concrete(n, d):
        sizes.append((n, d))
        X = sp.Matrix(n, d, lambda i, j: sp.Rational(i + 2 * j + 1, j + 2))
        y = sp.Matrix(n, 1, lambda i, _: sp.Rational((-1) ** i * (i + 1)))
        q0 = sp.Matrix(d, 1, lambda i, _: sp.Rational(i - 1, 3))
        return X, y, q0, sp.Rational(3, 2)

    monkeypatch.setattr(lsym, "_symbolic_setting", concrete)
    res = lsym.symbolic_theorem_8_14()
    assert sizes == [(3, 2)]
    assert len(res["hidden_state"]) == 3
    assert res["rows_changed"].shape == (3, 3) and res["rows_changed"].is_zero_matrix
    assert res["tf_minus_gd"].shape == (2, 1) and res["tf_minus_gd"].is_zero_matrix
