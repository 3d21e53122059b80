"""The answer checkers the hidden grading cells call (``companions.book.answers``)."""

import sympy as sp

from companions.book import answers


def test_same_expression_compares_meaning_not_form():
    k, e = sp.symbols("kappa eps", positive=True)
    expected = 2 * k * sp.log(1 / e)
    plain_k, plain_e = sp.symbols("kappa eps")  # no assumptions: still the same symbols by name
    assert answers.same_expression(-2 * plain_k * sp.log(plain_e), expected)
    assert answers.same_expression(sp.log(e ** (-2 * k)), expected)
    assert not answers.same_expression(k * sp.log(1 / e), expected)
    assert not answers.same_expression(2 * k * sp.log(1 / e) + sp.Symbol("z"), expected)
    p = sp.Symbol("p")
    assert answers.same_expression(
        sp.Mul(p, 2 * k * sp.log(1 / e), sp.Pow(p, -1), evaluate=False), expected
    )
    assert not answers.same_expression(..., expected)
    assert not answers.same_expression("not an expression (", expected)
    assert not answers.same_expression("not an expression (", expected)


def test_close_to_uses_the_stated_tolerance():
    assert answers.close_to(1.0009, 1.0, relative=1e-3)
    assert not answers.close_to(1.0011, 1.0, relative=1e-3)
    assert answers.close_to(0.05, 0.0, absolute=0.05)
    assert not answers.close_to(..., 1.0, relative=1.0)
    assert not answers.close_to(None, 1.0, relative=1.0)
