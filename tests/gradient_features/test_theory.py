"""companions.gradient_features.theory: the parameter maps of Lemmas 3.17 and 3.21 and Theorem 3.18
at a non-trivial mixture, written out from the source's formulas, and guarantee() as the theorem's
terms of those parameters."""

import math

import pytest
import torch

from companions.gradient_features import data, theory


def _mixture():
    # unequal mean norms, sigmas and weights, so that min / max / which one are told apart
    means = torch.zeros(4, 9, dtype=torch.float64)
    for j, norm in enumerate((1.0, 1.5, 2.0, 0.8)):
        means[j, j] = norm * 3.0  # ||mu~_j|| = norm (sqrt d = 3)
    return data.Mixture(
        means,
        torch.tensor([0.5, 0.9, 0.7, 0.6], dtype=torch.float64),
        torch.tensor([1.0, -1.0, 1.0, -1.0], dtype=torch.float64),
        torch.tensor([0.1, 0.2, 0.3, 0.4], dtype=torch.float64),
    )


def test_mixture_scales_of_assumption_3_15():
    s = theory.mixture_scales(_mixture(), 2.0)
    assert s["B_mu1"] == pytest.approx(0.8) and s["B_mu2"] == pytest.approx(2.0)
    assert s["sigma_B"] == pytest.approx(0.9) and s["sigma_plus"] == pytest.approx(2.0)
    assert s["p_B"] == pytest.approx(0.1)
    assert s["c"] == pytest.approx(math.sqrt(2.0 * math.log(9)) * 2.0, rel=1e-14)


def test_lemma_3_17_parameters_written_out():
    tau, d = 2.0, 9
    par = theory.lemma_3_17_parameters(_mixture(), tau)
    root = math.sqrt(tau * math.log(d))
    expected = dict(
        log10_p=math.log10(0.8 / (root * 2.0)) - tau * 4.0 / 0.64 * math.log10(d),
        gamma=d ** -(0.9 * tau - 1.5),
        B_G=0.1 * 0.8 * 3.0,
        B_a1=1 / (root * 2.0),
        B_a2=2.0 / (root * 2.0),
        B_b=2 * root * 2.0,
        B_x1=(2.0 + 2.0) * 3.0,
        r=4,
    )
    assert par == pytest.approx(expected, rel=1e-13)


def test_lemma_3_21_parameters_and_the_norm_of_x():
    d, k, r, p_A, p_o, tau = 40, 3, 2, 0.2, 0.3, 4.0
    par = theory.lemma_3_21_parameters(d, k, r, p_A, p_o, tau)
    norm2 = (1 - 2 * r * p_A) * r * k + 2 * r * p_A * k + 2 * p_o * (d - r * k)
    expected = dict(
        log10_p=-math.log10(math.sqrt(tau * math.log(d))) - tau * r * math.log10(d),
        gamma=d ** -(tau - 2),
        B_G=math.sqrt(k) * p_A,
        B_a1=2 * math.sqrt(k),
        B_a2=2 * math.sqrt(r * k * (k + 1)),
        B_b=(k + 1) / math.sqrt(k),
        B_x1=math.sqrt(norm2),
        r=3 * r * (k + 1),
    )
    assert par == pytest.approx(expected, rel=1e-13)


def test_theorem_3_18_error_and_guarantee_of_the_parameters():
    assert theory.theorem_3_18_error(3, 100, 3.0) == pytest.approx(
        math.sqrt(2) * 3 / 100**0.4, rel=1e-14
    )
    par = theory.lemma_3_21_parameters(40, 3, 2, 0.2, 0.3, 4.0)
    for eps, delta in [(0.1, 0.1), (0.05, 0.2)]:
        got = theory.guarantee(par, eps, delta) if eps != 0.1 else theory.guarantee(par)
        want = theory.theorem_3_12_terms(
            par["r"],
            10 ** par["log10_p"],
            gamma=par["gamma"],
            B_G=par["B_G"],
            B_a1=par["B_a1"],
            B_a2=par["B_a2"],
            B_b=par["B_b"],
            B_x1=par["B_x1"],
            eps=eps,
            delta=delta,
        )
        assert got == pytest.approx(want, rel=1e-14)


@pytest.mark.parametrize("b_tilde", [0.0, 1e-3])
def test_theorem_3_12_terms_against_the_plain_formulas(b_tilde):
    # (3.10)-(3.13) with every constant 1, in plain floats (no overflow at these sizes), against
    # the log10 evaluation
    r, p, gamma, B_G, B_a1, B_a2, B_b, B_x1, eps, delta = 3, 0.2, 0.01, 0.5, 2, 3, 1.5, 4, 0.3, 0.05
    m = (r * B_a1 * B_x1) ** 4 * (B_b / B_G) ** 2 / (p * eps**4)
    m += delta**-0.5 + math.log(r / delta) ** 2 / p
    q = (m * p) ** 0.25
    first = math.sqrt(r) * B_a2 * B_b * B_x1 / q + m * b_tilde
    second = math.sqrt(math.log(m)) / math.sqrt(B_b * B_G) + 1 / (B_x1 * q)
    got = theory.theorem_3_12_terms(
        r,
        p,
        gamma=gamma,
        B_G=B_G,
        B_a1=B_a1,
        B_a2=B_a2,
        B_b=B_b,
        B_x1=B_x1,
        eps=eps,
        delta=delta,
        b_tilde=b_tilde,
    )
    assert got["log10_m"] == pytest.approx(math.log10(m), rel=1e-12)
    assert got["log10_T"] == pytest.approx(math.log10(first * second / eps), rel=1e-12)
    assert got["error_term"] == pytest.approx(r * B_a1 * B_x1 * math.sqrt(2 * gamma), rel=1e-14)
    for name in ("p", "B_G", "eps", "delta"):
        args = dict(p=p, B_G=B_G, eps=eps, delta=delta)
        args[name] = 0
        with pytest.raises(
            ValueError, match=rf"^parameter '{name}' = 0 is not allowed: it must be > 0$"
        ):
            theory.theorem_3_12_terms(
                r,
                args["p"],
                gamma=gamma,
                B_G=args["B_G"],
                B_a1=B_a1,
                B_a2=B_a2,
                B_b=B_b,
                B_x1=B_x1,
                eps=args["eps"],
                delta=args["delta"],
            )
