"""Mutation tests of companions.universality.symbolic, second round (issue 23): the default sizes
of theorem_7_1_linear. A call with the defaults takes ~15 s (the expectations over 7 noise
symbols), so here _expect is replaced by a recorder that returns 0: what is checked is which
symbols the function builds, i.e. the sizes it ran with."""

import sympy as sp

from companions.universality import symbolic as usym


def _record(monkeypatch):
    seen = []

    def expect(expr, noise):
        seen.append((frozenset(s.name for s in expr.free_symbols), [s.name for s in noise]))
        return sp.Integer(0)

    monkeypatch.setattr(usym, "_expect", expect)
    return seen


def _names(prefix, rows, cols):
    return {f"{prefix}{i}{j}" for i in range(rows) for j in range(cols)}


def test_theorem_7_1_linear_defaults_are_k_2_n_r_2_n_u_1(monkeypatch):
    # the signature's defaults: k = 2 outputs, n_r = 2, n_u = 1 (d = 3)
    seen = _record(monkeypatch)
    assert usym.theorem_7_1_linear() == {"residual": 0, "without_resampling": 0}
    assert len(seen) == 3  # the loss, the pca term, the loss without resampling
    # xi_R, xi_U, xi_U' (z+), xi_R'', xi_U'' (z-): 2 n_r + 3 n_u = 7 distinct noise symbols (their
    # names are the function's own business: they are integrated out)
    assert all(len(set(names)) == len(names) == 7 for _, names in seen)
    loss = seen[0][0]
    assert {s for s in loss if s[0] == "w"} == _names("w", 2, 3)  # W is k x d
    assert {s for s in loss if s[0] == "m" and s[1] != "u"} == _names("m", 3, 3)  # M is d x d
    assert {s for s in loss if s[0] == "a"} == _names("a", 2, 2)  # A_R is n_r x n_r
    assert {s for s in loss if s[0] == "b"} == _names("b", 1, 1)  # A_U is n_u x n_u
    assert {s for s in loss if s.startswith("mu")} == {"mu0", "mu1", "mu2"}
    # the same symbols as with the sizes passed
    first = list(seen)
    seen.clear()
    usym.theorem_7_1_linear(2, 2, 1)
    assert seen == first
