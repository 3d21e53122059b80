"""companions.fourier.network on small cases worked out by hand (issue 23, mutation testing): the
order and shapes of D_p, the widths, the class-weighted margin with a given weighting, the margins
of several runs at once, gamma*'s symbolic form, the odd-prime check."""

from __future__ import annotations

import math

import pytest
import sympy as sp
import torch

from companions.fourier import network as fnet

F64 = torch.float64


@pytest.mark.parametrize("p,k", [(5, 1), (3, 2), (5, 3)])
def test_dataset_is_lexicographic_base_p_digits(p, k):
    a, y = fnet.dataset(p, k)
    assert a.shape == (p**k, k) and a.dtype == torch.int64
    # row i is i written in base p, most significant digit first
    i = torch.arange(p**k)
    digits = torch.stack([(i // p ** (k - 1 - j)) % p for j in range(k)], dim=-1)
    assert torch.equal(a, digits)
    assert torch.equal(y, digits.sum(-1) % p) and y.shape == (p**k,)


def test_construction_width_is_an_integer_by_hand():
    # 2^(2k-1) (p-1)/2: (5, 2) -> 8 * 2, (7, 3) -> 32 * 3, (3, 1) -> 2 * 1, (11, 4) -> 128 * 5
    for (p, k), m in {(5, 2): 16, (7, 3): 96, (3, 1): 2, (11, 4): 640}.items():
        got = fnet.construction_width(p, k)
        assert got == m and type(got) is int


def test_class_weighted_margins_with_a_given_weighting_by_hand():
    logits = torch.tensor([[1.0, 5.0, 2.0], [0.0, -1.0, 3.0]], dtype=F64)
    y = torch.tensor([1, 0])
    # tau's entry at the label (9.0 and 0.5) is ignored
    tau = torch.tensor([[0.3, 9.0, 0.7], [0.5, 0.25, 0.75]], dtype=F64)
    # 5 - (0.3 * 1 + 0.7 * 2) = 3.3 and 0 - (0.25 * -1 + 0.75 * 3) = -2
    expected = torch.tensor([3.3, -2.0], dtype=F64)
    assert torch.allclose(fnet.class_weighted_margins(logits, y, tau), expected, atol=1e-15)
    # two runs at once (labels shared), the second the first doubled
    two = torch.stack([logits, 2 * logits])
    got = fnet.class_weighted_margins(two, y, tau)
    assert torch.allclose(got, torch.stack([expected, 2 * expected]), atol=1e-15)
    # the uniform weighting is tau = 1/(p-1) off the label
    uniform = torch.full((2, 3), 0.5, dtype=F64)
    assert torch.allclose(
        fnet.class_weighted_margins(two, y, uniform), fnet.class_weighted_margins(two, y)
    )


def test_margins_of_several_runs_by_hand():
    logits = torch.tensor(
        [[[1.0, 5.0, 2.0], [0.0, -1.0, 3.0]], [[4.0, 4.0, -2.0], [2.0, 1.0, 0.0]]], dtype=F64
    )
    y = torch.tensor([1, 0])
    # run 0: 5 - 2, 0 - 3; run 1: 4 - 4, 2 - 1
    expected = torch.tensor([[3.0, -3.0], [0.0, 1.0]], dtype=F64)
    assert torch.equal(fnet.margins(logits, y), expected)


def _margin_by_hand(U, W, a, y):
    X = torch.nn.functional.one_hot(a, U.shape[-1]).to(F64)  # (N, k, p)
    logits = torch.einsum("nkp,...mkp->...nm", X, U).pow(U.shape[-2]) @ W
    correct = logits.gather(-1, y.expand(*logits.shape[:-1]).unsqueeze(-1)).squeeze(-1)
    wrong = logits.masked_fill(torch.nn.functional.one_hot(y, U.shape[-1]).bool(), -math.inf)
    return (correct - wrong.amax(-1)).amin(-1)


@pytest.mark.parametrize("chunk", [None, 1, 7, 24, 25, 26, 4096])
def test_margin_and_normalized_margin_in_chunks(chunk):
    g = torch.Generator().manual_seed(3)
    U = torch.randn(2, 4, 2, 5, generator=g, dtype=F64)
    W = torch.randn(2, 4, 5, generator=g, dtype=F64)
    a, y = fnet.dataset(5, 2)
    h = _margin_by_hand(U, W, a, y)
    assert torch.allclose(fnet.margin(U, W, a, y, chunk), h, rtol=1e-12, atol=1e-12)
    sq = U.pow(2).sum((-1, -2)) + W.pow(2).sum(-1)
    norm3 = sq.pow(1.5).sum(-1)  # ||theta||_{2,3}^3
    assert torch.allclose(
        fnet.normalized_margin(U, W, a, y, chunk), h / norm3, rtol=1e-12, atol=1e-12
    )
    assert torch.allclose(fnet.normalized_margin(U, W, a, y), h / norm3, rtol=1e-12, atol=1e-12)


def test_norms_of_several_runs_and_other_exponents_by_hand():
    U = torch.zeros(2, 2, 2, 3, dtype=F64)
    W = torch.zeros(2, 2, 3, dtype=F64)
    U[0, 0, 0, 0], U[0, 0, 1, 2], W[0, 1, 1] = 3.0, 4.0, 12.0  # run 0: norms 5 and 12
    U[1, 1, 1, 1], W[1, 1, 0] = 1.0, 1.0  # run 1: norms 0 and sqrt(2)
    norms = torch.tensor([[5.0, 12.0], [0.0, math.sqrt(2)]], dtype=F64)
    assert torch.allclose(fnet.neuron_norms(U, W), norms, atol=1e-15)
    # b = 2: sqrt(25 + 144) = 13; b = 4: (625 + 20736)^(1/4); run 1: sqrt(2) for every b
    assert torch.allclose(
        fnet.norm_ab(U, W, 2), torch.tensor([13.0, math.sqrt(2)], dtype=F64), atol=1e-12
    )
    assert torch.allclose(
        fnet.norm_ab(U, W, 4),
        torch.tensor([(625 + 20736) ** 0.25, math.sqrt(2)], dtype=F64),
        atol=1e-12,
    )


def test_gamma_star_symbolic_in_symbols_matches_the_float_form():
    # the symbols carry their assumptions (a symbol's identity includes them)
    p, k = sp.Symbol("p", positive=True), sp.Symbol("k", positive=True, integer=True)
    expr = fnet.gamma_star_symbolic()
    assert expr.free_symbols == {p, k}
    for pv, kv in [(7, 3), (5, 2), (11, 4), (3, 1)]:
        value = expr.subs({p: pv, k: kv})
        assert value.is_number and float(value) == pytest.approx(fnet.gamma_star(pv, kv))
    assert sp.simplify(expr.subs({p: 7, k: 3}) - sp.Rational(1, 224)) == 0  # 3 / (16 * 7 * 6)
    only_p = fnet.gamma_star_symbolic(p=7)
    assert only_p.free_symbols == {k}
    assert sp.simplify(only_p.subs(k, 3) - sp.Rational(1, 224)) == 0
    only_k = fnet.gamma_star_symbolic(k=2)
    assert only_k.free_symbols == {p}
    # k = 2: 2 * 2 / (6^(3/2) (p - 1) p^(1/2))
    assert sp.simplify(only_k - 4 / (6 ** sp.Rational(3, 2) * (p - 1) * sp.sqrt(p))) == 0


def test_is_odd_prime_against_trial_division():
    got = [p for p in range(-3, 100) if fnet.is_odd_prime(p)]
    expected = [p for p in range(3, 100) if all(p % q for q in range(2, p))]
    assert got == expected
    assert got[:5] == [3, 5, 7, 11, 13] and not {2, 9, 25, 49} & set(got)  # squares of primes


@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("full", [True, False])
def test_forward_table_gradient_of_either_input_alone(k, full):
    """Only one of the tables and W requiring a gradient: that one's gradient is autograd's
    through forward (the hand-written backward computes what is asked, not less)."""
    p, m = 5, 3
    g = torch.Generator().manual_seed(12)
    U = torch.randn(2, m, k, p, generator=g, dtype=F64)
    W = torch.randn(2, m, p, generator=g, dtype=F64)
    a_all, _ = fnet.dataset(p, k)
    a = a_all if full else a_all[torch.randint(0, p**k, (30,), generator=g)]
    G = torch.randn(2, a.shape[0], p, generator=g, dtype=F64)
    U1, W1 = U.clone().requires_grad_(True), W.clone().requires_grad_(True)
    (fnet.forward(U1, W1, a) * G).sum().backward()

    E = fnet.table(U).requires_grad_(True)
    (fnet.forward_table(E, W, None if full else a) * G).sum().backward()
    assert torch.allclose(fnet.untable(E.grad), U1.grad, rtol=1e-12, atol=1e-10)

    W2 = W.clone().requires_grad_(True)
    (fnet.forward_table(fnet.table(U), W2, None if full else a) * G).sum().backward()
    assert torch.allclose(W2.grad, W1.grad, rtol=1e-12, atol=1e-10)


def test_table_is_a_contiguous_copy_and_untable_its_view():
    U = torch.randn(2, 3, 2, 5, generator=torch.Generator().manual_seed(13), dtype=F64)
    E = fnet.table(U)
    assert E.shape == (2, 2, 5, 3) and E.is_contiguous()  # the training step's layout
    assert E[1, 0, 4, 2] == U[1, 2, 0, 4]  # E[..., j, a, i] = u_{i,j}(a)
    E[1, 0, 4, 2] = 7.0
    assert U[1, 2, 0, 4] != 7.0 and fnet.untable(E)[1, 2, 0, 4] == 7.0
