"""Tests of companions.gradient_features.data written against its surviving mutants (issue 23).

Expected values come from the definitions written out by hand for small cases ((B.233),
Assumption B.36, (B.396)-(B.399), Assumption B.53) and from loops over seeds and samples that draw
the same numbers from the same generator (a second implementation of the vectorised samplers).
"""

import math
import re

import pytest
import torch

from companions.gradient_features import data

F64 = torch.float64


def g(seed=0):
    return torch.Generator().manual_seed(seed)


def exact(msg):
    return "^" + re.escape(msg) + "$"


# -- Mixture --------------------------------------------------------------------------------------
def small_mixture():
    means = torch.tensor([[3.0, 4.0, 0.0, 0.0, 0.0], [0.0, 0.0, -2.0, 0.0, 0.0], [1, 1, 1, 1, 0]])
    return data.Mixture(
        means.double(),
        torch.tensor([0.5, 2.0, 1.0], dtype=F64),
        torch.tensor([1.0, -1.0, 1.0], dtype=F64),
        torch.tensor([0.2, 0.3, 0.5], dtype=F64),
    )


def test_mixture_d_and_directions_by_hand():
    mix = small_mixture()
    assert mix.d == 5  # (r, d) = (3, 5)
    want = torch.tensor(
        [[0.6, 0.8, 0, 0, 0], [0, 0, -1.0, 0, 0], [0.5, 0.5, 0.5, 0.5, 0]], dtype=F64
    )  # mu_j / ||mu_j||: norms 5, 2, 2
    torch.testing.assert_close(mix.directions, want, rtol=0, atol=1e-15)


def mixture_sample_by_hand(mix, seeds, n, seed):
    """(B.233): component j w.p. weights[j], x = mu_j + sigma_j z with z ~ N(0, I), y = y_(j)."""
    gen = g(seed)
    comp = torch.multinomial(mix.weights.double(), seeds * n, True, generator=gen).tolist()
    Z = torch.randn(seeds, n, mix.d, generator=gen, dtype=F64).tolist()
    X, y = [], []
    for s in range(seeds):
        X.append([])
        y.append([])
        for i in range(n):
            j = comp[s * n + i]
            mu, sig = mix.means[j].tolist(), float(mix.sigmas[j])
            X[s].append([mu[a] + sig * Z[s][i][a] for a in range(mix.d)])
            y[s].append(float(mix.labels[j]))
    return torch.tensor(X, dtype=F64), torch.tensor(y, dtype=F64), gen


def test_mixture_sample_matches_a_loop_over_samples():
    mix = small_mixture()
    gen = g(4)
    X, y = mix.sample(3, 40, gen, dtype=F64)
    Xw, yw, genw = mixture_sample_by_hand(mix, 3, 40, 4)
    assert X.shape == (3, 40, 5) and y.shape == (3, 40) and X.dtype == F64 and y.dtype == F64
    torch.testing.assert_close(X, Xw, rtol=1e-14, atol=1e-14)
    assert torch.equal(y, yw)
    assert set(y.flatten().tolist()) == {1.0, -1.0}
    assert torch.equal(torch.rand(3, generator=gen), torch.rand(3, generator=genw))


def test_mixture_sample_default_dtype_is_float32():
    X, y = small_mixture().sample(2, 5, g(1))
    assert X.dtype == torch.float32 and y.dtype == torch.float32
    Xw, yw, _ = mixture_sample_by_hand(small_mixture(), 2, 5, 1)
    torch.testing.assert_close(X, Xw.float())


# -- orthogonal and XOR mixtures ------------------------------------------------------------------
def test_orthogonal_mixture_by_hand():
    mix = data.orthogonal_mixture(9, 4, 1.5, 0.7)
    want = torch.zeros(4, 9, dtype=F64)
    for j in range(4):
        want[j, j] = 1.5 * 3.0  # mean_norm sqrt(d), sqrt(9) = 3
    assert torch.equal(mix.means, want)
    assert mix.means.dtype == F64
    assert mix.labels.tolist() == [1.0, -1.0, 1.0, -1.0] and mix.labels.dtype == F64
    assert mix.sigmas.tolist() == [0.7] * 4 and mix.sigmas.dtype == F64
    assert mix.weights.tolist() == [0.25] * 4 and mix.weights.dtype == F64
    edge = data.orthogonal_mixture(2, 2, 1.0, 2)  # r = 2 = d is allowed; an int sigma too
    assert edge.means.tolist() == [[math.sqrt(2), 0.0], [0.0, math.sqrt(2)]]
    assert edge.sigmas.dtype == F64 and edge.sigmas.tolist() == [2.0, 2.0]
    assert edge.weights.tolist() == [0.5, 0.5]


@pytest.mark.parametrize("r, d", [(0, 4), (1, 4), (3, 4), (6, 4), (-2, 4)])
def test_orthogonal_mixture_names_a_bad_r(r, d):
    msg = f"parameter 'r' = {r} is not allowed: it must be even, >= 2 and <= d = {d}"
    with pytest.raises(ValueError, match=exact(msg)):
        data.orthogonal_mixture(d, r, 1.0, 1.0)


@pytest.mark.parametrize(
    "mean_norm, sigma", [(0.0, 1.0), (-1.0, 1.0), (float("nan"), 1.0), (1.0, 0.0), (1.0, -0.5)]
)
def test_orthogonal_mixture_names_bad_scales(mean_norm, sigma):
    msg = "parameters 'mean_norm' and 'sigma' must be > 0"
    with pytest.raises(ValueError, match=exact(msg)):
        data.orthogonal_mixture(4, 2, mean_norm, sigma)


def test_xor_mixture_by_hand():
    mix = data.xor_mixture(4, 0.3)
    s = 2.0  # sqrt(d)
    want = [[s, 0, 0, 0], [-s, 0, 0, 0], [0, s, 0, 0], [0, -s, 0, 0]]  # mu_1 = -mu_2 = sqrt(d) e_1
    assert mix.means.tolist() == want and mix.means.dtype == F64
    assert mix.labels.tolist() == [1.0, 1.0, -1.0, -1.0] and mix.labels.dtype == F64
    assert mix.sigmas.tolist() == [0.3] * 4 and mix.sigmas.dtype == F64
    assert mix.weights.tolist() == [0.25] * 4 and mix.weights.dtype == F64
    edge = data.xor_mixture(2, 1)  # d = 2 is allowed; an int sigma becomes a float
    assert edge.means[0, 0] == math.sqrt(2) and edge.sigmas.dtype == F64


@pytest.mark.parametrize("d", [1, 0])
def test_xor_mixture_names_a_bad_d(d):
    with pytest.raises(
        ValueError, match=exact(f"parameter 'd' = {d} is not allowed: it must be >= 2")
    ):
        data.xor_mixture(d, 1.0)


@pytest.mark.parametrize("sigma", [0.0, -1.0, float("nan")])
def test_xor_mixture_names_a_bad_sigma(sigma):
    msg = f"parameter 'sigma' = {sigma} is not allowed: it must be > 0"
    with pytest.raises(ValueError, match=exact(msg)):
        data.xor_mixture(3, sigma)


# -- Parity ---------------------------------------------------------------------------------------
def test_parity_boundaries_that_are_allowed():
    data.Parity(d=1, k=1, r=1, p_A=0.0, p_o=0.0)  # r = k = 1, r k = d, p_A = p_o = 0
    data.Parity(d=6, k=2, r=3, p_A=1 / 6, p_o=0.5)  # p_A = 1/(2r), p_o = 1/2


@pytest.mark.parametrize(
    "kw, msg",
    [
        (dict(r=0), "parameter 'r' = 0 is not allowed: it must be odd and >= 1"),
        (dict(r=2), "parameter 'r' = 2 is not allowed: it must be odd and >= 1"),
        (dict(r=-1), "parameter 'r' = -1 is not allowed: it must be odd and >= 1"),
        (dict(k=0), "parameter 'k' = 0 is not allowed: it must be >= 1"),
        (dict(d=8), "parameter 'd' = 8 is not allowed: it must be >= r k"),
        (
            dict(p_A=0.17),
            "parameter 'p_A' = 0.17 is not allowed: the mixture needs 0 <= p_A <= 1/(2r) = "
            f"{1 / 6}",
        ),
        (
            dict(p_A=-0.01),
            "parameter 'p_A' = -0.01 is not allowed: the mixture needs 0 <= p_A <= 1/(2r) = "
            f"{1 / 6}",
        ),
        (dict(p_o=0.51), "parameter 'p_o' = 0.51 is not allowed: it must be in [0, 1/2]"),
        (dict(p_o=-0.1), "parameter 'p_o' = -0.1 is not allowed: it must be in [0, 1/2]"),
    ],
)
def test_parity_names_each_bad_parameter(kw, msg):
    base = dict(d=9, k=3, r=3, p_A=0.1, p_o=0.2)  # r k = 9
    base.update(kw)
    with pytest.raises(ValueError, match=exact(msg)):
        data.Parity(**base)


def test_parity_directions_by_hand():
    par = data.Parity(d=8, k=2, r=3, p_A=0.1, p_o=0.2)
    a = 1 / math.sqrt(2)  # D_j = sum_{l in A_j} e_l / sqrt(k)
    want = [
        [a, a, 0, 0, 0, 0, 0, 0],
        [0, 0, a, a, 0, 0, 0, 0],
        [0, 0, 0, 0, a, a, 0, 0],
    ]
    torch.testing.assert_close(par.directions, torch.tensor(want, dtype=F64), rtol=0, atol=1e-15)
    assert par.directions.dtype == F64


def test_parity_label_by_hand():
    par = data.Parity(d=6, k=2, r=3, p_A=0.1, p_o=0.2)
    phi = torch.tensor(
        [
            [[1, -1, 1, 1, -1, -1], [1, 1, 1, 1, 1, 1]],  # block products -1, 1, 1: sum 1
            [[1, -1, -1, 1, 1, 1], [-1, 1, 1, -1, 1, -1]],  # -1, -1, 1: -1; and -1, -1, -1: -1
        ],
        dtype=F64,
    )
    assert par.label(phi).tolist() == [[1.0, 1.0], [-1.0, -1.0]]
    structured = torch.tensor([[0, 0, 1, 1, 0, 0], [0, 0, 0, 0, -1, -1]], dtype=F64)
    assert par.label(structured).tolist() == [1.0, 1.0]  # the one nonzero block decides
    odd = data.Parity(d=3, k=3, r=1, p_A=0.0, p_o=0.0)
    assert odd.label(torch.tensor([[-1.0, -1.0, -1.0], [1.0, -1.0, -1.0]])).tolist() == [-1, 1]


def parity_sample_by_hand(par, seeds, n, seed):
    """(B.396)-(B.397) one sample at a time: with u ~ U[0, 1), component floor(u / p_A) < 2r is
    the structured pattern of block c div 2 (sign + for even c), else phi_A is uniform on
    {+-1}^{rk}; background phi_l = +1, -1, 0 w.p. p_o, p_o, 1 - 2 p_o; y = label(phi_A)."""
    gen = g(seed)
    rk = par.r * par.k
    u = torch.rand(seeds, n, generator=gen, dtype=F64).tolist()
    bits = torch.randint(0, 2, (seeds, n, rk), generator=gen).tolist()
    v = torch.rand(seeds, n, par.d - rk, generator=gen, dtype=F64).tolist()
    X, y = [], []
    for s in range(seeds):
        X.append([])
        y.append([])
        for i in range(n):
            comp = math.floor(u[s][i] / par.p_A) if par.p_A > 0 else 2 * par.r
            if comp < 2 * par.r:
                sign = 1.0 if comp % 2 == 0 else -1.0
                phi = [sign if a // par.k == comp // 2 else 0.0 for a in range(rk)]
            else:
                phi = [2.0 * b - 1 for b in bits[s][i]]
            back = [1.0 if w < par.p_o else (-1.0 if w < 2 * par.p_o else 0.0) for w in v[s][i]]
            X[s].append(phi + back)
            total = sum(math.prod(phi[j * par.k : (j + 1) * par.k]) for j in range(par.r))
            y[s].append(float((total > 0) - (total < 0)))
    return torch.tensor(X, dtype=F64), torch.tensor(y, dtype=F64), gen


@pytest.mark.parametrize(
    "d, k, r, p_A, p_o",
    [
        (10, 2, 3, 0.1, 0.3),  # structured and uniform samples mixed
        (9, 2, 3, 1 / 6, 0.5),  # p_A = 1/(2r): every sample structured; p_o = 1/2
        (7, 1, 3, 0.0, 0.2),  # p_A = 0: every sample uniform (k = 1, r = 3)
        (8, 3, 1, 0.25, 0.0),  # r = 1; p_o = 0: no background
    ],
)
def test_parity_sample_matches_a_loop_over_samples(d, k, r, p_A, p_o):
    par = data.Parity(d=d, k=k, r=r, p_A=p_A, p_o=p_o)
    gen = g(8)
    X, y = par.sample(2, 60, gen, dtype=F64)
    Xw, yw, genw = parity_sample_by_hand(par, 2, 60, 8)
    assert X.shape == (2, 60, d) and y.shape == (2, 60) and X.dtype == F64 and y.dtype == F64
    assert torch.equal(X, Xw)
    assert torch.equal(y, yw)
    assert torch.equal(torch.rand(3, generator=gen), torch.rand(3, generator=genw))


def test_parity_sample_default_dtype_is_float32():
    par = data.Parity(d=10, k=2, r=3, p_A=0.1, p_o=0.3)
    X, y = par.sample(1, 20, g(2))
    assert X.dtype == torch.float32 and y.dtype == torch.float32
    Xw, yw, _ = parity_sample_by_hand(par, 1, 20, 2)
    assert torch.equal(X, Xw.float()) and torch.equal(y, yw.float())


def test_uniform_parity_is_assumption_b53():
    par = data.uniform_parity(12, 2)
    assert (par.d, par.k, par.r, par.p_A, par.p_o) == (12, 2, 1, 0.0, 0.5)
    X, y = par.sample(1, 200, g(3), dtype=F64)
    assert set(X.flatten().tolist()) == {1.0, -1.0}  # x uniform on {+-1}^d
    assert torch.equal(y, X[..., 0] * X[..., 1])  # y = prod_{l in A} x_l, A = {0, 1}
