"""Mutation tests of companions.fourier.ascent (issue 23).

- ``random_unit_neurons``: the same draws as ``torch.randn`` from the generator, scaled to unit
  norm per neuron (a second implementation).
- ``single_neuron_ascent``: no step returns the start; one step is Adam's first step, which moves
  every entry by ``lr * g / (|g| + eps)`` (a closed form), with the gradient taken here of the
  brute-force margin (eq. C.10 checked against the Fourier form elsewhere).
- ``construction_report``: run on a random network in place of the construction, so that every
  entry is far from its value at the construction, and compared with every entry recomputed here
  by brute force (loops over the inputs, DFTs as explicit sums).
"""

import cmath
import itertools
import math
from types import SimpleNamespace

import pytest
import torch

from companions.fourier import ascent as fasc
from companions.fourier import network as fnet
from companions.fourier import neuron as fneu

F64 = torch.float64


def test_random_unit_neurons_are_the_generators_draws_scaled_to_unit_norm():
    n, p, k = 4, 5, 3
    U, W = fasc.random_unit_neurons(n, p, k, torch.Generator().manual_seed(11))
    V = torch.randn(n, k + 1, p, generator=torch.Generator().manual_seed(11), dtype=F64)
    for i in range(n):
        norm = math.sqrt(sum(float(x) ** 2 for x in V[i].flatten()))
        assert torch.allclose(U[i], V[i, :k] / norm, rtol=1e-14, atol=0)
        assert torch.allclose(W[i], V[i, k] / norm, rtol=1e-14, atol=0)
    assert U.shape == (n, k, p) and W.shape == (n, p) and U.dtype == W.dtype == F64
    assert torch.allclose(fnet.neuron_norms(U, W), torch.ones(n, dtype=F64), atol=1e-15)


def test_random_unit_neurons_in_float32():
    U, W = fasc.random_unit_neurons(3, 7, 2, torch.Generator().manual_seed(1), dtype=torch.float32)
    assert U.dtype == W.dtype == torch.float32 and U.device.type == "cpu"
    V = torch.randn(3, 3, 7, generator=torch.Generator().manual_seed(1), dtype=torch.float32)
    assert torch.allclose(W, V[:, 2] / V.flatten(1).norm(dim=1)[:, None], atol=1e-6)


def _brute_margin(U, W, p):
    """The class-weighted margin of each unit neuron, eq. (C.10) by brute force."""
    a, y = fnet.dataset(p, U.shape[-2])
    return fneu.neuron_expected_margin(U, W, a, y)


def test_single_neuron_ascent_with_no_step_returns_the_unit_start_and_its_margin():
    U, W, v = fasc.single_neuron_ascent(
        5, 2, starts=3, steps=0, generator=torch.Generator().manual_seed(7)
    )
    U0, W0 = fasc.random_unit_neurons(3, 5, 2, torch.Generator().manual_seed(7))
    assert torch.allclose(U, U0, atol=1e-15) and torch.allclose(W, W0, atol=1e-15)
    assert torch.allclose(v, _brute_margin(U0, W0, 5), atol=1e-14)


@pytest.mark.parametrize("lr", [None, 0.1])
def test_one_ascent_step_is_adams_first_step(lr):
    p, k, starts = 5, 2, 3
    kw = {} if lr is None else {"lr": lr}
    U1, W1, v = fasc.single_neuron_ascent(
        p, k, starts=starts, steps=1, generator=torch.Generator().manual_seed(3), **kw
    )
    lr = 0.02 if lr is None else lr  # the default, pinned by the signature
    U0, W0 = fasc.random_unit_neurons(starts, p, k, torch.Generator().manual_seed(3))
    U0, W0 = U0.clone().requires_grad_(True), W0.clone().requires_grad_(True)
    n = fnet.neuron_norms(U0, W0)
    _brute_margin(U0 / n[:, None, None], W0 / n[:, None], p).sum().backward()
    # Adam's first step on the loss -margin: theta - lr * g / (|g| + eps), g = -d margin
    with torch.no_grad():
        gu, gw = -U0.grad, -W0.grad
        U, W = U0 - lr * gu / (gu.abs() + 1e-8), W0 - lr * gw / (gw.abs() + 1e-8)
        n = fnet.neuron_norms(U, W)
        U, W = U / n[:, None, None], W / n[:, None]
    assert torch.allclose(U1, U, atol=1e-9) and torch.allclose(W1, W, atol=1e-9)
    assert torch.allclose(v, _brute_margin(U, W, p), atol=1e-12)
    assert torch.allclose(fnet.neuron_norms(U1, W1), torch.ones(starts, dtype=F64), atol=1e-15)


def test_ascent_raises_the_margin_of_every_start():
    U0, W0 = fasc.random_unit_neurons(4, 5, 2, torch.Generator().manual_seed(5))
    _, _, v = fasc.single_neuron_ascent(
        5, 2, starts=4, steps=30, generator=torch.Generator().manual_seed(5)
    )
    assert bool((v > _brute_margin(U0, W0, 5) + 1e-4).all())


def test_ascent_in_float32():
    U, W, v = fasc.single_neuron_ascent(
        5, 2, starts=2, steps=2, generator=torch.Generator().manual_seed(5), dtype=torch.float32
    )
    assert U.dtype == W.dtype == v.dtype == torch.float32 and U.device.type == "cpu"


# ------------------------------------------------------------------ construction_report


def _dft(v, z):
    p = len(v)
    return sum(v[t] * cmath.exp(-2j * math.pi * z * t / p) for t in range(p))


def _report_by_hand(U, W, scale, p, k):
    """Every entry of the report recomputed with Python loops (no chunks, no vectorization)."""
    Ul, Wl = U.tolist(), W.tolist()
    m = len(Ul)
    rows = list(itertools.product(range(p), repeat=k))
    gs = 2 * math.factorial(k) / ((2 * k + 2) ** ((k + 1) / 2) * (p - 1) * p ** ((k - 1) / 2))
    g, wrong_spread, correct, gap, tmax = [], 0.0, 0, 0.0, 0.0
    for a in rows:
        y = sum(a) % p
        f = [
            sum(Wl[i][c] * sum(Ul[i][j][a[j]] for j in range(k)) ** k for i in range(m))
            for c in range(p)
        ]
        wrong = [f[c] for c in range(p) if c != y]
        g.append(f[y] - max(wrong))
        wrong_spread = max(wrong_spread, max(wrong) - min(wrong))
        correct += max(range(p), key=lambda c: f[c]) == y
        for c in range(p):
            target = scale * sum(
                math.cos(2 * math.pi * z * (sum(a) - c) / p) for z in range(1, (p - 1) // 2 + 1)
            )
            gap, tmax = max(gap, abs(f[c] - target)), max(tmax, abs(target))
    norms = [
        math.sqrt(sum(x * x for row in Ul[i] for x in row) + sum(x * x for x in Wl[i]))
        for i in range(m)
    ]
    nm = min(g) / sum(x ** (k + 1) for x in norms)
    conc, freq, phase = [], set(), []
    for i in range(m):
        vecs = [*Ul[i], Wl[i]]
        P = [
            sum(abs(_dft(v, z)) ** 2 + (abs(_dft(v, -z)) ** 2 if z else 0) for v in vecs)
            for z in range(0, (p - 1) // 2 + 1)
        ]
        zd = max(range(1, len(P)), key=lambda z: P[z])
        conc.append(P[zd] / sum(P))
        freq.add(zd)
        ang = [cmath.phase(_dft(v, zd)) for v in vecs]
        phase.append(math.cos(sum(ang[:-1]) - ang[-1]))
    psi = _brute_margin(U, W, p).tolist()
    return dict(
        p=p,
        k=k,
        m=m,
        m_star=2 ** (2 * k - 1) * (p - 1) // 2,
        gamma_star=gs,
        normalized_margin=nm,
        rel_gap=abs(nm / gs - 1),
        raw_margin=min(g),
        margin_spread=max(g) - min(g),
        wrong_spread=wrong_spread,
        accuracy=correct / len(rows),
        cosine_gap=gap / tmax,
        norm_gap=max(abs(x - 1) for x in norms),
        min_concentration=min(conc),
        frequencies=sorted(freq),
        min_phase_cos=min(phase),
        neuron_margin_gap=max(abs(x / gs - 1) for x in psi),
    )


@pytest.mark.parametrize(
    "p,k,m,seed,positive",
    [(5, 2, 6, 0, False), (7, 3, 5, 1, False), (4, 2, 5, 3, False), (5, 2, 4, 2, True)],
)
def test_construction_report_of_a_random_network_matches_a_brute_force_report(
    monkeypatch, p, k, m, seed, positive
):
    """A random network (``positive``: all entries > 0, so every logit is > 0 and the spread of
    the wrong logits cannot be taken against a 0 in place of the correct one). p = 4 is not a
    prime, but the report is defined there too (frequencies 1..(p-1)//2 = 1)."""
    g = torch.Generator().manual_seed(seed)
    U = torch.randn(m, k, p, generator=g, dtype=F64)
    W = torch.randn(m, p, generator=g, dtype=F64)
    if positive:
        U, W = U.abs() + 0.1, W.abs() + 0.1
    scale = 0.7
    calls = []

    def fake(p_, k_, dtype, device):
        calls.append((p_, k_, dtype, device))
        return SimpleNamespace(U=U, W=W, scale=scale)

    monkeypatch.setattr(fasc, "construction", fake)
    want = _report_by_hand(U, W, scale, p, k)
    # a network far from the construction: none of these is near its value there (0)
    assert min(want["norm_gap"], want["cosine_gap"], want["margin_spread"]) > 1e-3
    assert min(want["wrong_spread"], want["neuron_margin_gap"], want["rel_gap"]) > 1e-3
    for chunk in (None, 1, 7, 4096):
        got = fasc.construction_report(p, k, chunk=chunk)
        assert got.keys() == want.keys()
        for key, value in want.items():
            if isinstance(value, float):
                assert got[key] == pytest.approx(value, rel=1e-10, abs=1e-13), (chunk, key)
            else:
                assert got[key] == value, (chunk, key)
    assert calls == [(p, k, F64, "cpu")] * 4


def test_construction_report_in_float32_is_float32_accurate():
    rep = fasc.construction_report(5, 2, dtype=torch.float32)
    assert 1e-12 < rep["rel_gap"] < 1e-5 and rep["accuracy"] == 1.0


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_neurons_ascent_and_report_stay_on_the_gpu():
    g = torch.Generator().manual_seed(0)
    U, W = fasc.random_unit_neurons(2, 5, 2, g, device="cuda")
    assert U.device.type == W.device.type == "cuda"
    U, W, v = fasc.single_neuron_ascent(5, 2, starts=2, steps=1, generator=g, device="cuda")
    assert U.device.type == W.device.type == v.device.type == "cuda"
    rep = fasc.construction_report(5, 2, device="cuda", chunk=7)  # the inputs, arange, zetas
    assert rep["rel_gap"] < 1e-12 and rep["accuracy"] == 1.0 and rep["cosine_gap"] < 1e-12
