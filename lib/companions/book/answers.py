"""Answer checkers for graded questions: a student's answer compared by meaning, not form.

The hidden test cells of the chapters call these, so they need nothing beyond numpy and sympy:
a chapter downloaded to Colab imports them with only the package's own dependencies installed.
"""

from __future__ import annotations

import random

import sympy as sp


def same_expression(answer, expected, samples: int = 5, tolerance: float = 1e-9) -> bool:
    """Whether a student's sympy expression equals ``expected``: symbols are matched by name
    (so ``Symbol('kappa')`` and ``Symbol('kappa', positive=True)`` are the same), then the
    difference is simplified; if sympy cannot decide, it is evaluated at random points in [1.5, 3.5]
    (where a symbol that cancels, as in ``p*x/p``, cannot change the value). Text is not an answer:
    sympy would ``eval`` it (``strict=True`` refuses it), and a grader never runs a student's
    code."""
    try:
        answer = sp.sympify(answer, strict=True)
    except (sp.SympifyError, TypeError):
        return False
    expected = sp.sympify(expected)
    by_name = {s.name: s for s in expected.free_symbols}
    answer = answer.subs({s: by_name[s.name] for s in answer.free_symbols if s.name in by_name})
    difference = sp.simplify(answer - expected)
    if difference == 0:
        return True
    rng = random.Random(0)
    # A symbol the expected form lacks may still cancel (p/p); evaluate at random points to decide.
    symbols = sorted(difference.free_symbols | expected.free_symbols, key=lambda s: s.name)
    for _ in range(samples):
        point = {s: sp.Float(rng.uniform(1.5, 3.5)) for s in symbols}
        try:
            value = complex(sp.N(difference.subs(point)))
            scale = abs(complex(sp.N(expected.subs(point))))
        except (TypeError, ValueError):
            return False
        if not abs(value) <= tolerance * max(1.0, scale):
            return False
    return True


def close_to(answer, expected: float, relative: float = 0.0, absolute: float = 0.0) -> bool:
    """Whether a numerical answer is within the tolerance the question states:
    ``|answer - expected| <= absolute + relative * |expected|``. Non-numbers are wrong."""
    try:
        value = float(answer)
    except (TypeError, ValueError):
        return False
    return abs(value - expected) <= absolute + relative * abs(expected)
