"""Tests of domain_generalization/symbolic.py written for its mutants (issue 23, mutation testing).

- Each sympy check returns exactly the keys and values worked out by hand below (not copied from
  the output): residuals 0, the moments of U[0, 1] and D_gamma, the factors of (E.41), the
  erratum's sum of squared ranges and its crossing gamma = 3/8, f(1) = 25/146 and f'.
- ``record_appendix_e``: every argument of the five ledger calls spelled out (the claim texts are
  pinned by the source), and each claim fails when any one of its inputs is made wrong (the
  functions it reads are replaced by stand-ins), so every ``and`` of its conditions is needed.
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


# -- record_appendix_e ---------------------------------------------------------------------------
class _Ledger:
    """Keeps every argument of every check."""

    def __init__(self):
        self.calls = []

    def check(self, *args, **kw):
        self.calls.append((args, kw))


_NOTES = [
    "sympy: residuals of l', l'' = s(1-s), l''' = -s(1-s)(2s-1) with "
    "2s-1 = tanh(z/2) > 0 on z > 0, and e^c(1+e^z) - (1+e^(z+c)) = e^c - 1 > 0 iff c > 0",
    "sympy: integrals of the two densities (and D_gamma has mass 1)",
    "sympy: Hoeffding's 2t^2 / sum (b-a)^2 with ranges 2 on U and 1 on R gives "
    "(d-r) gamma^2 / 2 and r/8",
    "sympy: (E.39) gap is (1-e^-x)(1/2-gamma) >= 0; 1 - e^-x <= x; "
    "3/(4g) - 1/(2g - 2/sqrt r) = sqrt(r)(g - 3/sqrt r) / (4g(g sqrt(r) - 1))",
    "sympy: the shift (E.47), the expansion (E.50), (E.52), and (E.53) as "
    "(4/10)((d-r) gamma^2 - r)",
]
_HEADS = [
    ("lemma-e1-logistic", "Lemma E.1", "identity"),
    ("lemma-e3-moments", "Lemma E.3", "identity"),
    ("lemma-e4-exponents", "Lemma E.4", "identity"),
    ("lemma-e6-steps-e38-e41", "Lemma E.6 (E.38-E.41)", "identity"),
    ("prop-e8-steps-e47-e53", "Proposition E.8 (E.47-E.53)", "identity"),
]


def _good():
    """Stand-in results that pass every check (the shapes of the real ones)."""
    return {
        "lemma_e_1": {
            "derivative": sp.Integer(0),
            "second": sp.Integer(0),
            "third": sp.Integer(0),
            "shift": sp.Integer(0),
            "shift_positive": True,
            "two_s_minus_one_is_tanh": True,
        },
        "lemma_e_3": {
            "mean_u": sp.Rational(1, 2),
            "var_u": sp.Rational(1, 12),
            "mean_g": g,
            "mass_g": sp.Integer(1),
            "var_g_residual": sp.Integer(0),
        },
        "lemma_e_4": {"first": sp.Integer(0), "second": sp.Integer(0)},
        "steps_e38_e41": {
            "e39": sp.Integer(0),
            "e41_ratio": sp.Integer(2),
            "e41_den": sp.Integer(5),
            "e40": sp.Integer(0),
        },
        "steps_e47_e53": {k: sp.Integer(0) for k in ("e47", "e50", "e52", "e53")},
    }


def _record(monkeypatch, values):
    for name, out in values.items():
        monkeypatch.setattr(symbolic, name, lambda out=out: dict(out))
    led = _Ledger()
    symbolic.record_appendix_e(led)
    return led.calls


def test_record_appendix_e_arguments_spelled_out(monkeypatch):
    calls = _record(monkeypatch, _good())
    assert [args for args, _ in calls] == _HEADS
    assert [kw["note"] for _, kw in calls] == _NOTES
    assert [set(kw) for _, kw in calls] == [
        {"holds", "expected", "observed", "tolerance", "note"}
    ] * 5
    assert [kw["holds"] for _, kw in calls] == [True] * 5
    assert [kw["tolerance"] for _, kw in calls] == [0] * 5
    assert [kw["expected"] for _, kw in calls] == [
        0,
        "1/2, 1/12; gamma, 1/3 - gamma^2",
        0,
        "0, 0, positive factor",
        0,
    ]
    assert [kw["observed"] for _, kw in calls] == [
        ["0", "0", "0", "0"],
        "1/2, 1/12; gamma, residual 0",
        ["0", "0"],
        ["0", "2", "5", "0"],
        ["0", "0", "0", "0"],
    ]


def test_record_appendix_e_observed_residuals_are_in_order(monkeypatch):
    v = _good()
    for i, k in enumerate(("derivative", "second", "third", "shift")):
        v["lemma_e_1"][k] = sp.Integer(i + 1)
    v["lemma_e_4"] = {"first": sp.Integer(3), "second": sp.Integer(4)}
    v["steps_e47_e53"] = {k: sp.Integer(i + 5) for i, k in enumerate(("e47", "e50", "e52", "e53"))}
    calls = _record(monkeypatch, v)
    assert calls[0][1]["observed"] == ["1", "2", "3", "4"]
    assert calls[2][1]["observed"] == ["3", "4"]
    assert calls[4][1]["observed"] == ["5", "6", "7", "8"]


# (function, key, wrong value, index of the claim that must fail)
_WRONG = [
    ("lemma_e_1", "derivative", sp.Integer(1), 0),
    ("lemma_e_1", "second", sp.Integer(1), 0),
    ("lemma_e_1", "third", sp.Integer(-1), 0),
    ("lemma_e_1", "shift", sp.Integer(1), 0),
    ("lemma_e_1", "shift_positive", False, 0),
    ("lemma_e_1", "two_s_minus_one_is_tanh", False, 0),
    ("lemma_e_3", "mean_u", sp.Rational(1, 3), 1),
    ("lemma_e_3", "var_u", sp.Rational(1, 3), 1),
    ("lemma_e_3", "mass_g", sp.Integer(2), 1),
    ("lemma_e_3", "mean_g", 2 * g, 1),
    ("lemma_e_3", "var_g_residual", sp.Integer(1), 1),
    ("lemma_e_4", "first", sp.Integer(1), 2),
    ("lemma_e_4", "second", sp.Integer(1), 2),
    ("steps_e38_e41", "e39", sp.Integer(1), 3),
    ("steps_e38_e41", "e40", sp.Integer(1), 3),
    ("steps_e38_e41", "e41_ratio", sp.Integer(-2), 3),
    ("steps_e38_e41", "e41_ratio", sp.Integer(0), 3),
    ("steps_e38_e41", "e41_ratio", sp.Symbol("q", real=True), 3),  # sign unknown: not shown
    ("steps_e47_e53", "e47", sp.Integer(1), 4),
    ("steps_e47_e53", "e50", sp.Integer(1), 4),
    ("steps_e47_e53", "e52", sp.Integer(1), 4),
    ("steps_e47_e53", "e53", sp.Integer(1), 4),
]


@pytest.mark.parametrize("func, key, wrong, claim", _WRONG)
def test_record_appendix_e_each_wrong_input_fails_its_claim_only(
    monkeypatch, func, key, wrong, claim
):
    v = _good()
    v[func][key] = wrong
    calls = _record(monkeypatch, v)
    holds = [kw["holds"] for _, kw in calls]
    assert holds == [i != claim for i in range(5)]


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
