"""Tests of domain_generalization/symbolic.py written for its mutants (issue 23, mutation testing).

- Each sympy check returns exactly the keys and values worked out by hand below (not copied from
  the output): residuals 0, the moments of U[0, 1] and D_gamma, the factors of (E.41), the
  erratum's sum of squared ranges and its crossing gamma = 3/8, f(1) = 25/146 and f'.
- ``appendix_e``: the measurements in order, and each registered claim fails when any one of its
  inputs is made wrong (the functions it reads are replaced by stand-ins).
"""

from __future__ import annotations

import pytest
import sympy as sp

from companions.domain_generalization import symbolic

g = sp.Symbol("gamma", real=True)
r_ = sp.Symbol("r", real=True)
d_ = sp.Symbol("d", real=True)
rp = sp.Symbol("r", positive=True)


def test_lemma_e_1_returns_exact_zeros_and_true():
    out = symbolic.lemma_e_1()
    assert list(out) == [
        "derivative",
        "second",
        "third",
        "shift",
        "shift_positive",
        "two_s_minus_one_is_tanh",
    ]
    assert all(out[k] == 0 for k in ("derivative", "second", "third", "shift"))
    assert out["shift_positive"] is True and out["two_s_minus_one_is_tanh"] is True


def test_lemma_e_3_moments_by_hand():
    # U[0, 1]: mean 1/2, E x^2 = 1/3, variance 1/12. D_gamma: density 1/2 - gamma on [-1, 0] and
    # 1/2 + gamma on [0, 1]: mass 1, mean -(1/2 - gamma)/2 + (1/2 + gamma)/2 = gamma, E x^2 = 1/3
    out = symbolic.lemma_e_3()
    assert list(out) == ["mean_u", "var_u", "mean_g", "mass_g", "var_g_residual"]
    assert out["mean_u"] == sp.Rational(1, 2) and out["var_u"] == sp.Rational(1, 12)
    assert out["mean_g"] == g and out["mass_g"] == 1 and out["var_g_residual"] == 0


def test_lemma_e_4_and_e47_e53_residuals_are_exactly_zero():
    assert symbolic.lemma_e_4() == {"first": 0, "second": 0}
    assert symbolic.steps_e47_e53() == {"e47": 0, "e50": 0, "e52": 0, "e53": 0}


def test_hoeffding_exponent_on_numbers():
    # 2 t^2 / sum of squared ranges: t = 3, sum 4 -> 18 / 4
    assert symbolic.hoeffding_exponent(3, 4) == pytest.approx(4.5)
    assert symbolic.hoeffding_exponent(sp.Integer(1), sp.Integer(8)) == sp.Rational(1, 4)


def test_steps_e38_e41_factors_of_e41():
    # by hand: 3/(4g) - 1/(2g - 2/sqrt r) = (6g - 6/sqrt r - 4g) / (4g (2g - 2/sqrt r))
    #        = (g - 3/sqrt r) / (4g (g - 1/sqrt r)) = sqrt(r) (g - 3/sqrt r) / (4g (g sqrt r - 1)),
    # the form the ledger note prints: ratio sqrt(r), denominator 4 g (g sqrt r - 1)
    out = symbolic.steps_e38_e41()
    assert list(out) == ["e39", "e41_ratio", "e41_den", "e40"]
    assert out["e39"] == 0 and out["e40"] == 0
    assert out["e41_ratio"] == sp.sqrt(rp) and out["e41_ratio"].is_positive
    assert out["e41_den"] == 4 * g * (g * sp.sqrt(rp) - 1)
    lhs = sp.Rational(3, 4) / g - 1 / (2 * g - 2 / sp.sqrt(rp))
    rhs = out["e41_ratio"] * (g - 3 / sp.sqrt(rp)) / out["e41_den"]
    assert sp.simplify(lhs - rhs) == 0


def test_hoeffding_ranges_by_hand():
    out = symbolic.hoeffding_ranges()
    assert list(out) == [
        "true_sum",
        "excess",
        "crossing",
        "f_at_1",
        "corrected_minus_rf",
        "f_increasing",
    ]
    # r terms of range 3/(4 gamma), d - r terms of range 2
    assert sp.simplify(out["true_sum"] - (9 * r_ / (16 * g**2) + 4 * (d_ - r_))) == 0
    # excess = r (9/(16 gamma^2) - 4) = -r (8 gamma - 3)(8 gamma + 3) / (16 gamma^2), factored
    assert sp.simplify(out["excess"] - r_ * (sp.Rational(9, 16) / g**2 - 4)) == 0
    assert out["excess"] == sp.factor(out["excess"])
    assert out["excess"] == -r_ * (8 * g - 3) * (8 * g + 3) / (16 * g**2)
    # 9/(16 gamma^2) = 4 at gamma = 3/8 only (gamma > 0); f(1) = 2 (5/8)^2 / (73/16) = 25/146
    assert out["crossing"] == [sp.Rational(3, 8)]
    assert out["f_at_1"] == sp.Rational(25, 146)
    assert out["corrected_minus_rf"] == 0 and out["f_increasing"] is True


# -- appendix_e: the measurements the chapter records ---------------------------------------------
def _good():
    """Stand-in results that every registered rule accepts (the shapes of the real ones)."""
    return {
        "lemma_e_4": {"first": sp.Integer(0), "second": sp.Integer(0)},
        "steps_e38_e41": {
            "e39": sp.Integer(0),
            "e41_ratio": sp.Integer(2),
            "e41_den": sp.Integer(5),
            "e40": sp.Integer(0),
        },
        "steps_e47_e53": {k: sp.Integer(0) for k in ("e47", "e50", "e52", "e53")},
    }


def _statuses(monkeypatch, values):
    import companions

    for name, out in values.items():
        monkeypatch.setattr(symbolic, name, lambda out=out: dict(out))
    led = companions.Ledger(companions.preset("dg-nuclear-norm", "smoke"), device="cpu")
    got = symbolic.appendix_e()
    return [c["status"] for c in led.record({k: v for k, v in got.items() if k[:3] != "e49"})]


def test_appendix_e_measures_in_order(monkeypatch):
    v = _good()
    v["lemma_e_4"] = {"first": sp.Integer(3), "second": sp.Integer(4)}
    v["steps_e47_e53"] = {k: sp.Integer(i + 5) for i, k in enumerate(("e47", "e50", "e52", "e53"))}
    for name, out in v.items():
        monkeypatch.setattr(symbolic, name, lambda out=out: dict(out))
    got = symbolic.appendix_e()
    assert got["lemma-e4-exponents"] == [3, 4]
    assert got["lemma-e6-steps-e38-e41"] == [0, 0, True]
    assert got["prop-e8-steps-e47-e53"] == [5, 6, 7, 8]


# (function, key, wrong value, index of the claim that must fail)
_WRONG = [
    ("lemma_e_4", "first", sp.Integer(1), 0),
    ("lemma_e_4", "second", sp.Integer(1), 0),
    ("steps_e38_e41", "e39", sp.Integer(1), 1),
    ("steps_e38_e41", "e40", sp.Integer(1), 1),
    ("steps_e38_e41", "e41_ratio", sp.Integer(-2), 1),
    ("steps_e38_e41", "e41_ratio", sp.Integer(0), 1),
    ("steps_e38_e41", "e41_ratio", sp.Symbol("q", real=True), 1),  # sign unknown: not shown
    ("steps_e47_e53", "e47", sp.Integer(1), 2),
    ("steps_e47_e53", "e50", sp.Integer(1), 2),
    ("steps_e47_e53", "e52", sp.Integer(1), 2),
    ("steps_e47_e53", "e53", sp.Integer(1), 2),
]


def test_appendix_e_holds_on_good_inputs(monkeypatch):
    assert _statuses(monkeypatch, _good()) == ["holds"] * 3


@pytest.mark.parametrize("func, key, wrong, claim", _WRONG)
def test_appendix_e_each_wrong_input_fails_its_claim_only(monkeypatch, func, key, wrong, claim):
    v = _good()
    v[func][key] = wrong
    assert _statuses(monkeypatch, v) == ["fails" if i == claim else "holds" for i in range(3)]


def test_hoeffding_ranges_checks_the_numerator_of_f_prime(monkeypatch):
    # f'(c) = (c - 3/8)(8c + 21/4) / (9/16 + 4c)^2 by hand, so at c = 1 + u the numerator is
    # (u + 5/8)(8u + 53/4), a positive multiple of (8u + 5)(32u + 53): the polynomial whose
    # coefficients f_increasing tests must be that one (up to a positive constant)
    seen = []
    real = sp.Poly

    def spy(*args, **kw):
        seen.append(args)
        return real(*args, **kw)

    monkeypatch.setattr(symbolic.sp, "Poly", spy)
    assert symbolic.hoeffding_ranges()["f_increasing"] is True
    monkeypatch.undo()
    ((expr, gen),) = seen
    ratio = sp.simplify(expr / ((8 * gen + 5) * (32 * gen + 53)))
    assert ratio.is_number and ratio > 0
