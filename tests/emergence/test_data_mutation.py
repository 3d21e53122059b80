"""companions.emergence.data where the mutants of issue 23 found it untested: every closed-form
moment against a second implementation (an exact enumeration of {0,1}^D from the generators'
description, in fractions), the samplers against the exact pattern laws, the labels, the
normalisation and its dtypes, the size checks at their edges, and the constructors' fields."""

from __future__ import annotations

import itertools
import math
import types
from fractions import Fraction as Fr

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from companions.emergence import data

F64 = torch.float64


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


# -- a second implementation: the law of phi~ from the generators' description ------------------


def _law(dist) -> dict[tuple[int, ...], Fr]:
    """``Pr[phi~ = v]`` for every ``v`` in {0,1}^D, exact, written from the docstrings: independent
    Bernoulli coordinates (p_A on A, p_o elsewhere), or the mixture p_o U + (1 - p_o) D^(1) with
    D^(1): phi~_A all 0 or all 1 (1/2 each), background Bern(p_o / (2 - 2 p_o))."""
    A = set(dist.A)
    out = {}
    for v in itertools.product((0, 1), repeat=dist.D):
        if dist.kind == "parity-mixture":
            w = dist.mixture_weight
            q = w / (2 - 2 * w)
            block = {v[j] for j in A}
            structured = Fr(1, 2) if len(block) == 1 else Fr(0)
            for j in range(dist.D):
                if j not in A:
                    structured *= q if v[j] else 1 - q
            out[v] = w / 2**dist.D + (1 - w) * structured
        else:
            pr = Fr(1)
            for j in range(dist.D):
                pj = dist.notes["p_A"] if j in A else dist.p_o
                pr *= pj if v[j] else 1 - pj
            out[v] = pr
    return out


def _moments(dist):
    law = _law(dist)
    A = sorted(dist.A)
    E = lambda f: sum(p * f(v) for v, p in law.items())  # noqa: E731
    y = lambda v: 1 if sum(v[j] for j in A) in dist.P else -1  # noqa: E731
    mean = [E(lambda v, j=j: v[j]) for j in range(dist.D)]
    cov = [E(lambda v, j=j: y(v) * v[j]) - E(y) * mean[j] for j in range(dist.D)]
    return {
        "law": law,
        "mean": mean,
        "mean_y": E(y),
        "positive_rate": E(lambda v: y(v) == 1),
        "cov": cov,
        "sigma2": sum(m * (1 - m) for m in mean),  # Var of a {0,1} variable
        "y": y,
    }


def _check_closed_forms(dist):
    ex = _moments(dist)
    A = sorted(dist.A)
    assert sum(ex["law"].values()) == 1
    assert dist.p_relevant == ex["mean"][A[0]]
    assert all(ex["mean"][j] == dist.p_relevant for j in A)
    assert all(ex["mean"][j] == dist.p_o for j in range(dist.D) if j not in dist.A)
    assert dist.mean_y == ex["mean_y"]
    assert dist.positive_rate == ex["positive_rate"]
    assert all(ex["cov"][i] == dist.gamma for i in A)
    assert dist.sigma2 == ex["sigma2"]
    assert dist.sigma == pytest.approx(math.sqrt(ex["sigma2"]), rel=1e-15)
    assert dist.mu == sum(ex["mean"][j] for j in A)
    assert torch.equal(dist.mean_phi, torch.tensor([float(m) for m in ex["mean"]], dtype=F64))
    for s in range(dist.k + 1):
        assert dist.label_of_s(s) == (1 if s in dist.P else -1)
    # the enumeration of support() against the exact law
    grid, prob = dist.support()
    assert grid.shape == (2**dist.D, dist.D) and prob.dtype == F64
    exact = [float(ex["law"][tuple(int(t) for t in row)]) for row in grid.tolist()]
    assert torch.allclose(prob, torch.tensor(exact, dtype=F64), rtol=0, atol=1e-15)
    # labels, and the normalisation's population moments: E x = 0, E ||x||^2 = 1,
    # E[y x] = sum_j Cov(y, phi~_j) / sigma~ M_j (gamma / sigma~ on A: the signal of Lemma 2.5)
    y = dist.labels(grid)
    assert y.tolist() == [ex["y"](tuple(int(t) for t in r)) for r in grid.tolist()]
    x = dist.inputs(grid)
    assert torch.allclose(prob @ x, torch.zeros(dist.d, dtype=F64), atol=1e-13)
    assert float(prob @ (x**2).sum(1)) == pytest.approx(1.0, abs=1e-13)
    signal = dist.M @ torch.tensor([float(c) for c in ex["cov"]], dtype=F64) / dist.sigma
    assert torch.allclose((prob * y) @ x, signal, atol=1e-13)


@settings(max_examples=10, deadline=None)
@given(
    D=st.integers(2, 5),
    data_=st.data(),
    p_o=st.sampled_from([Fr(1, 5), Fr(1, 3), Fr(1, 2)]),
)
def test_mixture_closed_forms_against_enumeration(D, data_, p_o):
    k = data_.draw(st.integers(1, D))
    A = data_.draw(st.lists(st.integers(0, D - 1), min_size=k, max_size=k, unique=True))
    dist = data.parity_mixture(D + 1, D, k=k, p_o=p_o, generator=_gen(), A=A)
    _check_closed_forms(dist)


@settings(max_examples=10, deadline=None)
@given(
    D=st.integers(2, 5),
    data_=st.data(),
    p_A=st.sampled_from([Fr(1, 4), Fr(2, 3), Fr(4, 5)]),
    p_o=st.sampled_from([Fr(1, 5), Fr(1, 2), Fr(3, 4)]),
)
def test_interval_closed_forms_against_enumeration(D, data_, p_A, p_o):
    k = data_.draw(st.integers(1, D))
    lo = data_.draw(st.integers(0, k))
    hi = data_.draw(st.integers(lo, k + 1))
    dist = data.interval(D, D, k=k, generator=_gen(), p_A=p_A, p_o=p_o, lo=lo, hi=hi)
    _check_closed_forms(dist)


def test_interval_closed_forms_by_hand():
    # k = 3, p_A = 1/3, P = {1, 2}: s_law = (8, 12, 6, 1)/27, worked out by hand
    dist = data.interval(
        6, 5, k=3, generator=_gen(), p_A=Fr(1, 3), p_o=Fr(1, 4), lo=1, hi=2, A=(0, 2, 4)
    )
    assert dist.s_law == [Fr(8, 27), Fr(12, 27), Fr(6, 27), Fr(1, 27)]
    assert dist.p_relevant == Fr(1, 3) and dist.mu == 1
    assert dist.mean_y == Fr(1, 3) and dist.positive_rate == Fr(2, 3)
    # E[y phi_i] = (12/27)(1/3) + (6/27)(2/3) - (1/27)(1) = 7/27; gamma = 7/27 - (1/3)(1/3)
    assert dist.gamma == Fr(4, 27)
    assert dist.sigma2 == 3 * Fr(1, 3) * Fr(2, 3) + 2 * Fr(1, 4) * Fr(3, 4)  # 25/24
    assert dist.sigma == pytest.approx(math.sqrt(25 / 24), rel=1e-15)
    assert dist.mean_phi.tolist() == [1 / 3, 0.25, 1 / 3, 0.25, 1 / 3]
    assert torch.equal(dist.signal_direction, dist.M[:, 0] + dist.M[:, 2] + dist.M[:, 4])


# -- small helpers ----------------------------------------------------------------------------


def test_frac_keeps_fractions_and_limits_denominators_to_a_million():
    third = Fr(1, 3)
    assert data._frac(third) is third
    assert data._frac(0.25) == Fr(1, 4) and data._frac(0.1) == Fr(1, 10)
    # 1/1000003 has a denominator over 10**6: the nearest fraction with one at most 10**6
    got = data._frac(1 / 1000003)
    assert got.denominator <= 10**6 and got == Fr(1, 10**6)  # 1/(10**6) is the closest: by hand
    assert data._frac(1 / 999983) == Fr(1, 999983)  # a prime under 10**6 is kept


def test_binomial_law_exact():
    assert data.binomial_law(3, Fr(1, 3)) == [Fr(8, 27), Fr(12, 27), Fr(6, 27), Fr(1, 27)]
    assert data.binomial_law(2, 0.5) == [Fr(1, 4), Fr(1, 2), Fr(1, 4)]
    assert data.binomial_law(0, Fr(1, 7)) == [1]


def test_labels_keep_the_dtype_and_batch_axes():
    dist = data.parity_mixture(6, 5, k=3, p_o=Fr(1, 2), generator=_gen(), A=(1, 2, 4))
    phi = torch.tensor(
        [[0, 1, 0, 0, 0], [1, 1, 1, 0, 1], [0, 1, 1, 1, 1], [1, 0, 0, 1, 0]], dtype=F64
    )
    assert dist.labels(phi).tolist() == [1.0, 1.0, 1.0, -1.0]  # S = 1, 3, 3, 0; odd S is +1
    assert dist.labels(phi).dtype == F64
    assert dist.labels(phi.float()).dtype == torch.float32
    assert dist.labels(phi.reshape(2, 2, 5)).tolist() == [[1.0, 1.0], [1.0, -1.0]]


def test_normalise_and_inputs_by_hand_and_in_float32():
    M = torch.eye(3, dtype=F64)[:, [2, 0]]  # d = 3, D = 2: x = phi_0 e_2 + phi_1 e_0
    dist = data.parity_mixture(3, 2, k=1, p_o=Fr(1, 2), generator=_gen(), A=(0,), M=M)
    # p_A = 1/2, p_o = 1/2: sigma~^2 = 1/4 + 1/4, sigma~ = 1/sqrt(2)
    phi = torch.tensor([[1.0, 0.0]], dtype=F64)
    s = math.sqrt(2)
    assert torch.allclose(dist.normalise(phi), torch.tensor([[0.5 * s, -0.5 * s]], dtype=F64))
    assert torch.allclose(dist.inputs(phi), torch.tensor([[-0.5 * s, 0.0, 0.5 * s]], dtype=F64))
    assert dist.normalise(phi.float()).dtype == torch.float32
    assert dist.inputs(phi.float()).dtype == torch.float32


def test_sample_dtypes_and_consistency():
    dist = data.parity_mixture(8, 6, k=3, p_o=Fr(1, 3), generator=_gen())
    x, y, phi = dist.sample(50, _gen(4), dtype=torch.float32)
    assert x.dtype == torch.float32 and y.dtype == torch.float32 and phi.dtype == F64
    assert x.shape == (50, 8) and y.shape == (50,) and phi.shape == (50, 6)
    assert torch.allclose(x, dist.inputs(phi).float()) and torch.equal(y, dist.labels(phi).float())
    x2, y2, phi2 = dist.sample(50, _gen(4))
    assert x2.dtype == F64 and torch.equal(phi2, phi)


@pytest.mark.parametrize("kind", ["mixture", "interval"])
def test_sampling_uses_only_the_generator(kind):
    if kind == "mixture":
        dist = data.parity_mixture(5, 4, k=2, p_o=Fr(1, 3), generator=_gen())
    else:
        dist = data.interval(5, 4, k=2, generator=_gen(), p_A=Fr(4, 5), p_o=Fr(1, 5), lo=1, hi=1)
    with torch.random.fork_rng():
        torch.manual_seed(1)
        a = dist.sample_phi_tilde(64, _gen(9))
        torch.manual_seed(2)
        b = dist.sample_phi_tilde(64, _gen(9))
    assert torch.equal(a, b)


def _pattern_freqs(phi):
    D = phi.shape[1]
    code = (phi.long() * (2 ** torch.arange(D - 1, -1, -1))).sum(1)
    return torch.bincount(code, minlength=2**D).double() / len(phi)


@pytest.mark.parametrize("kind", ["mixture", "interval"])
def test_sampled_patterns_follow_the_exact_law(kind):
    if kind == "mixture":  # w = 1/3: q = 1/4; A = {0, 2}, background {1}
        dist = data.parity_mixture(4, 3, k=2, p_o=Fr(1, 3), generator=_gen(), A=(0, 2))
    else:
        dist = data.interval(
            4, 3, k=2, generator=_gen(), p_A=Fr(4, 5), p_o=Fr(1, 5), lo=1, hi=1, A=(0, 2)
        )
    law = _law(dist)
    exact = torch.tensor([float(law[v]) for v in itertools.product((0, 1), repeat=3)], dtype=F64)
    if kind == "mixture":  # two entries by hand: (0,0,0): 1/24 + (2/3)(1/2)(3/4); (1,0,0): 1/24
        assert exact[0] == pytest.approx(7 / 24) and exact[4] == pytest.approx(1 / 24)
    phi = dist.sample_phi_tilde(60_000, _gen(5))
    assert phi.dtype == F64 and set(phi.unique().tolist()) <= {0.0, 1.0}
    assert float((_pattern_freqs(phi) - exact).abs().max()) < 0.01  # ~ 5 standard errors


# -- sizes and their checks -------------------------------------------------------------------


def test_support_refuses_more_than_twenty_patterns_only(monkeypatch):
    dist = data.parity_mixture(21, 21, k=3, p_o=Fr(1, 2), generator=_gen())
    with pytest.raises(ValueError, match="'D' = 21 is too large"):
        dist.support()

    class Reached(Exception):
        pass

    def product(*args, **kwargs):
        raise Reached

    monkeypatch.setattr(data, "itertools", types.SimpleNamespace(product=product))
    at_limit = data.parity_mixture(20, 20, k=3, p_o=Fr(1, 2), generator=_gen())
    with pytest.raises(Reached):  # D = 20 passes the check and goes on to enumerate
        at_limit.support()


def test_random_dictionary_is_the_q_of_qr_with_a_positive_diagonal():
    M = data.random_dictionary(6, 4, _gen(3))
    G = torch.randn(6, 4, generator=_gen(3), dtype=F64)  # the same draw
    R = M.T @ G
    assert torch.allclose(M.T @ M, torch.eye(4, dtype=F64), atol=1e-13)
    assert torch.allclose(M @ R, G, atol=1e-12)
    assert torch.allclose(R, R.triu(), atol=1e-12) and bool((R.diagonal() > 0).all())
    assert data.random_dictionary(4, 4, _gen()).shape == (4, 4)
    with pytest.raises(ValueError, match="'D' = 5 is not allowed.*D <= d = 4"):
        data.random_dictionary(4, 5, _gen())


def test_random_subset_is_sorted_distinct_and_seeded():
    A = data.random_subset(10, 4, _gen(2))
    assert isinstance(A, tuple) and len(set(A)) == 4 and list(A) == sorted(A)
    assert all(isinstance(j, int) and 0 <= j < 10 for j in A)
    assert A == tuple(sorted(torch.randperm(10, generator=_gen(2))[:4].tolist()))


@pytest.mark.parametrize("make", ["mixture", "interval"])
def test_size_checks_at_their_edges(make):
    def build(d, D, k):
        if make == "mixture":
            return data.parity_mixture(d, D, k=k, p_o=Fr(1, 2), generator=_gen())
        return data.interval(d, D, k=k, generator=_gen())

    assert build(4, 4, 4).k == 4 and build(4, 4, 1).k == 1  # k = D and k = 1, D = d allowed
    with pytest.raises(ValueError, match="'k' = 0 is not allowed: expected 1 <= k <= D = 4"):
        build(4, 4, 0)
    with pytest.raises(ValueError, match="'k' = 5 is not allowed"):
        build(6, 4, 5)
    with pytest.raises(ValueError, match="'D' = 5 is not allowed.*D <= d = 4"):
        build(4, 5, 2)


# -- the constructors ---------------------------------------------------------------------------


def test_parity_mixture_fields_and_p_o_range():
    M = torch.eye(5, dtype=F64)
    dist = data.parity_mixture(5, 5, k=3, p_o=0.25, generator=_gen(), A=[4, 0, 2], M=M)
    assert dist.kind == "parity-mixture" and (dist.d, dist.D, dist.k) == (5, 5, 3)
    assert dist.A == (4, 0, 2) and dist.M is M
    assert dist.P == frozenset({1, 3}) and dist.p_o == Fr(1, 4) == dist.mixture_weight
    # p_o Bin(3, 1/2) + (1 - p_o)/2 at s = 0 and s = 3
    assert dist.s_law == [Fr(1, 32) + Fr(3, 8), Fr(3, 32), Fr(3, 32), Fr(1, 32) + Fr(3, 8)]
    assert data.parity_mixture(5, 5, k=4, p_o=Fr(1, 2), generator=_gen()).P == frozenset({1, 3})
    assert data.parity_mixture(5, 5, k=3, p_o=Fr(1, 2), generator=_gen()).p_o == Fr(
        1, 2
    )  # the edge is allowed
    for bad in (0, 0.500002, -0.25):
        with pytest.raises(ValueError, match="'p_o' = .* expected 0 < p_o <= 1/2"):
            data.parity_mixture(5, 5, k=3, p_o=bad, generator=_gen())
    drawn = data.parity_mixture(7, 5, k=3, p_o=Fr(1, 2), generator=_gen(6))
    g = _gen(6)
    assert torch.equal(drawn.M, data.random_dictionary(7, 5, g))  # M first, then A
    assert drawn.A == data.random_subset(5, 3, g)


def test_interval_fields_defaults_and_label_set():
    dist = data.interval(40, 36, k=30, generator=_gen())
    assert dist.kind == "interval" and dist.notes == {"p_A": Fr(2, 3)}
    assert dist.p_o == Fr(1, 2) and dist.P == frozenset(range(20, 31))
    assert dist.s_law == data.binomial_law(30, Fr(2, 3)) and dist.mixture_weight is None
    M = torch.eye(4, dtype=F64)
    small = data.interval(
        4, 4, k=3, generator=_gen(), p_A=0.2, p_o=0.75, lo=0, hi=9, A=[3, 1, 0], M=M
    )
    assert small.P == frozenset({1, 2, 3})  # s = 0 is never in P; hi is clipped at k
    assert small.notes["p_A"] == Fr(1, 5) and small.p_o == Fr(3, 4)
    assert small.A == (3, 1, 0) and small.M is M and (small.d, small.D, small.k) == (4, 4, 3)
    assert data.interval(4, 4, k=3, generator=_gen(), lo=2, hi=2).P == frozenset({2})
    g = _gen(6)
    drawn = data.interval(7, 5, k=3, generator=_gen(6))
    assert torch.equal(drawn.M, data.random_dictionary(7, 5, g))  # M first, then A
    assert drawn.A == data.random_subset(5, 3, g)


def test_without_structure_keeps_A_P_M_and_makes_every_pattern_fair():
    dist = data.interval(6, 5, k=3, generator=_gen(), p_A=Fr(4, 5), p_o=Fr(1, 5), lo=1, hi=2)
    free = data.without_structure(dist)
    assert free.kind == "uniform" and (free.d, free.D, free.k) == (6, 5, 3)
    assert free.A == dist.A and free.P == dist.P and free.M is dist.M
    assert free.s_law == [Fr(1, 8), Fr(3, 8), Fr(3, 8), Fr(1, 8)] and free.p_o == Fr(1, 2)
    assert free.notes == {"p_A": Fr(1, 2), "structured": "interval"}
    assert free.mixture_weight is None
    _check_closed_forms(free)


def _phi_by_hand(dist, n, g):
    """The samplers' draws in float64, in the order the docstrings describe: for the mixture, the
    component (weight p_o on the uniform part), the uniform patterns, the background of D^(1)
    (Bern(q), q = p_o / (2 - 2 p_o)) and its all-0-or-all-1 block; otherwise one Bernoulli draw a
    coordinate."""
    A = list(dist.A)
    bg = [j for j in range(dist.D) if j not in A]
    if dist.kind == "parity-mixture":
        w = float(dist.mixture_weight)
        uniform = torch.rand(n, generator=g, dtype=F64) < w
        phi_u = (torch.rand(n, dist.D, generator=g, dtype=F64) < 0.5).double()
        phi_s = torch.zeros(n, dist.D, dtype=F64)
        phi_s[:, bg] = (torch.rand(n, len(bg), generator=g, dtype=F64) < w / (2 - 2 * w)).double()
        block = (torch.rand(n, generator=g, dtype=F64) < 0.5).double()
        phi_s[:, A] = block.unsqueeze(1)
        return torch.where(uniform.unsqueeze(1), phi_u, phi_s)
    u = torch.rand(n, dist.D, generator=g, dtype=F64)
    p = torch.tensor([float(dist.notes["p_A"] if j in A else dist.p_o) for j in range(dist.D)])
    return (u < p.to(F64)).double()


@pytest.mark.parametrize("kind", ["mixture", "interval"])
def test_samplers_draw_float64_uniforms_in_the_documented_order(kind):
    if kind == "mixture":
        dist = data.parity_mixture(6, 5, k=2, p_o=Fr(1, 3), generator=_gen(), A=(1, 3))
    else:
        dist = data.interval(
            6, 5, k=2, generator=_gen(), p_A=Fr(4, 5), p_o=Fr(1, 5), lo=1, hi=1, A=(1, 3)
        )
    got = dist.sample_phi_tilde(300, _gen(8))
    assert torch.equal(got, _phi_by_hand(dist, 300, _gen(8)))


def test_interval_default_upper_end_is_30():
    dist = data.interval(34, 34, k=32, generator=_gen())  # k = 32 > 30: hi = 30 cuts P
    assert dist.P == frozenset(range(20, 31))
