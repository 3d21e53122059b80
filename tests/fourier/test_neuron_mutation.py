"""companions.fourier.neuron against second implementations written as plain loops (issue 23,
mutation testing): each neuron's own logits, the brute-force expected margin, eq. (C.10) at
k = 1, 2, 3 with leading batch dimensions and in float32, and eta(delta) of Definition C.12."""

from __future__ import annotations

import math

import pytest
import torch

from companions.fourier import network as fnet
from companions.fourier import neuron as fneu

F64 = torch.float64


def _rand(shape, seed, dtype=F64):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def _logits_loop(U, W, a):
    # phi(theta_i, a)[c] = (u_{i,1}(a_1) + ... + u_{i,k}(a_k))^k w_i(c), one neuron at a time
    m, k, p = U.shape
    out = torch.zeros(m, a.shape[0], p, dtype=U.dtype)
    for i in range(m):
        for n in range(a.shape[0]):
            h = sum(float(U[i, j, a[n, j]]) for j in range(k))
            out[i, n] = h**k * W[i]
    return out


def _margin_loop(U, W, a, y):
    # E_a[ phi[y] - (1/(p-1)) sum_{y' != y} phi[y'] ] per neuron (uniform tau)
    phi = _logits_loop(U, W, a)
    m, N, p = phi.shape
    res = torch.zeros(m, dtype=F64)
    for i in range(m):
        tot = 0.0
        for n in range(N):
            row = phi[i, n].tolist()
            yy = int(y[n])
            tot += row[yy] - (sum(row) - row[yy]) / (p - 1)
        res[i] = tot / N
    return res


@pytest.mark.parametrize("p,k", [(3, 1), (5, 2), (3, 3)])
def test_neuron_logits_match_a_loop(p, k):
    U, W = _rand((2, k, p), 1), _rand((2, p), 2)
    a, _ = fnet.dataset(p, k)
    got = fneu.neuron_logits(U, W, a)
    assert got.shape == (2, p**k, p)
    assert torch.allclose(got, _logits_loop(U, W, a), atol=1e-12)
    # the neurons sum to the network's output (eq. 4.2)
    assert torch.allclose(got.sum(0), fnet.forward(U, W, a), atol=1e-12)


def test_neuron_logits_with_a_batch_dimension():
    U, W = _rand((3, 2, 2, 5), 3), _rand((3, 2, 5), 4)
    a, _ = fnet.dataset(5, 2)
    got = fneu.neuron_logits(U, W, a)
    assert got.shape == (3, 2, 25, 5)
    for r in range(3):
        assert torch.allclose(got[r], _logits_loop(U[r], W[r], a), atol=1e-12)


@pytest.mark.parametrize("p,k", [(3, 1), (5, 2), (3, 3), (5, 3)])
def test_expected_margin_brute_force_and_c10_match_a_loop(p, k):
    U, W = _rand((3, k, p), 5 + k), _rand((3, p), 6 + k)
    a, y = fnet.dataset(p, k)
    ref = _margin_loop(U, W, a, y)
    assert torch.allclose(fneu.neuron_expected_margin(U, W, a, y), ref, atol=1e-12)
    four = fneu.neuron_expected_margin_fourier(U, W)
    assert four.dtype == F64 and four.shape == (3,)
    assert torch.allclose(four, ref, atol=1e-12)


def test_c10_by_hand_for_one_cosine_neuron():
    # k = 1, p = 3: u = cos(2 pi a / 3), w = cos(2 pi c / 3); u_hat(j) = 3/2 at j = 1, 2 and
    # w_hat(-j) = 3/2, so (C.10) gives 1! / (2 * 3) * (9/4 + 9/4) = 3/4
    t = torch.arange(3, dtype=F64)
    u = torch.cos(2 * math.pi * t / 3)
    got = fneu.neuron_expected_margin_fourier(u[None, None], u[None])
    assert math.isclose(float(got[0]), 0.75, rel_tol=1e-12)
    # brute force: E_a[w(a) - (w(a+1) + w(a+2))/2 ] * u(a) with w(a) = u(a): mean of
    # u(a)^2 * 3/2 (since w(a+1) + w(a+2) = -w(a)) = 3/2 * 1/2 = 3/4
    a, y = fnet.dataset(3, 1)
    assert math.isclose(float(fneu.neuron_expected_margin(u[None, None], u[None], a, y)[0]), 0.75)


def test_c10_in_float32_with_a_batch_dimension():
    U, W = _rand((2, 3, 2, 5), 9), _rand((2, 3, 5), 10)
    ref = fneu.neuron_expected_margin_fourier(U, W)
    assert ref.shape == (2, 3) and ref.dtype == F64
    got = fneu.neuron_expected_margin_fourier(U.float(), W.float())
    assert got.dtype == torch.float32 and got.shape == (2, 3)
    assert torch.allclose(got.double(), ref, atol=1e-5)
    a, y = fnet.dataset(5, 2)
    for r in range(2):
        assert torch.allclose(ref[r], _margin_loop(U[r], W[r], a, y), atol=1e-12)


def test_brute_force_margin_with_a_batch_dimension():
    # shape (..., m): one expected margin per neuron of each run
    U, W = _rand((2, 3, 2, 5), 15), _rand((2, 3, 5), 16)
    a, y = fnet.dataset(5, 2)
    got = fneu.neuron_expected_margin(U, W, a, y)
    assert got.shape == (2, 3)
    for r in range(2):
        assert torch.allclose(got[r], _margin_loop(U[r], W[r], a, y), atol=1e-12)


def test_c10_casts_w_to_the_precision_of_u():
    # W given in float32 (its values are exact in float64 too) with U in float64: the transform
    # is taken in float64, so it matches the all-float64 result to rounding
    U = _rand((3, 2, 7), 17)
    W32 = _rand((3, 7), 18, dtype=torch.float32)
    ref = fneu.neuron_expected_margin_fourier(U, W32.double())
    got = fneu.neuron_expected_margin_fourier(U, W32)
    assert got.dtype == F64 and torch.allclose(got, ref, atol=1e-14, rtol=0)


def test_c10_takes_half_precision_neurons():
    # torch's CPU fft takes no float16 / bfloat16: such U and W are cast to complex64 first, and
    # the result is that of the same (rounded) values in float64 to float32 rounding
    U, W = _rand((3, 2, 5), 19).to(torch.bfloat16), _rand((3, 5), 20).to(torch.bfloat16)
    got = fneu.neuron_expected_margin_fourier(U, W)
    ref = fneu.neuron_expected_margin_fourier(U.double(), W.double())
    assert got.dtype == torch.float32 and torch.allclose(got.double(), ref, atol=1e-5)


def _eta_loop(U, W, a, multilinear_only):
    k, p = U.shape
    out = []
    for d in range(p):
        tot = 0.0
        for row in a.tolist():
            if multilinear_only:
                s = math.factorial(k) * math.prod(float(U[j, row[j]]) for j in range(k))
            else:
                s = sum(float(U[j, row[j]]) for j in range(k)) ** k
            tot += s * float(W[(sum(row) - d) % p])
        out.append(tot / len(a))
    return torch.tensor(out, dtype=F64)


@pytest.mark.parametrize("p,k", [(3, 1), (5, 2), (3, 3)])
@pytest.mark.parametrize("multi", [False, True])
def test_eta_matches_a_loop(p, k, multi):
    U, W = _rand((k, p), 11), _rand((p,), 12)
    a, _ = fnet.dataset(p, k)
    got = fneu.eta(U, W, a, multilinear_only=multi)
    assert got.shape == (p,)
    assert torch.allclose(got, _eta_loop(U, W, a, multi), atol=1e-12)


def test_eta_default_is_the_full_power_and_margin_is_eta0_minus_mean_of_the_rest():
    U, W = _rand((2, 5), 13), _rand((5,), 14)
    a, y = fnet.dataset(5, 2)
    e = fneu.eta(U, W, a)
    assert torch.allclose(e, _eta_loop(U, W, a, False), atol=1e-12)
    # Definition C.13: E[g'] = eta(0) - E_{delta != 0} eta(delta)
    g = fneu.neuron_expected_margin(U[None], W[None], a, y)[0]
    assert math.isclose(float(g), float(e[0] - e[1:].mean()), rel_tol=1e-10)
