"""Tests of companions.gemfilter.complexity written against its mutants (issue 23): every cell
of Theorem 9.3's table (pinned by the theorem as printed, and by the proof's KV cache for the
corrected standard prompt memory), the derived consequences worked out by hand, the
coefficient test at its zero edge, the speedup's bounds, and the FLOP / cache counts on small
cases computed by hand and by a second, product-by-product count."""

from __future__ import annotations

import types

import pytest
import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from companions.gemfilter import complexity as gc

n, d, k, t, m, h, w, r = gc.n, gc.d, gc.k, gc.t, gc.m, gc.h, gc.w, gc.r


def same(a, b) -> bool:
    return sp.expand(a - b) == 0


# -- table: every cell, as Theorem 9.3 / G.4 prints it ---------------------------------------
EXPECTED = {
    "time_prompt": {
        "standard": m * h * n**2 * d,
        "snapkv": m * h * n**2 * d,
        "gemfilter": r * h * n**2 * d,
    },
    "time_gen": {
        "standard": m * h * (n * t + t**2) * d,
        "snapkv": m * h * (k * t + t**2) * d,
        "gemfilter": m * h * (k**2 + t**2) * d,
    },
    "mem_prompt": {
        "standard": m * w + 2 * m * h * d,  # printed; corrected below
        "snapkv": m * w + 2 * h * n * d + 2 * m * h * k * d,
        "gemfilter": r * w + 2 * h * n * d,
    },
    "mem_gen": {
        "standard": m * w + 2 * m * h * (n + t) * d,
        "snapkv": m * w + 2 * m * h * (k + t) * d,
        "gemfilter": m * w + 2 * m * h * (k + t) * d,
    },
}


@pytest.mark.parametrize("printed", [True, False])
def test_table_every_cell(printed):
    tab = gc.table(printed)
    assert set(tab) == set(EXPECTED)
    for row, cells in EXPECTED.items():
        assert set(tab[row]) == set(gc.METHODS)
        for method, expr in cells.items():
            if row == "mem_prompt" and method == "standard" and not printed:
                expr = m * w + 2 * m * h * n * d  # the full KV cache of n tokens
            assert same(tab[row][method], expr), (row, method)


def test_table_default_is_the_printed_one():
    assert same(gc.table()["mem_prompt"]["standard"], m * w + 2 * m * h * d)


# -- derived: each worked out by hand from the table -------------------------------------------
def test_derived_by_hand():
    der = gc.derived()
    assert same(der["prompt_time_ratio"], r / m)
    # t = k: standard (n k + k^2)/k - n = k; SnapKV (k^2 + k^2)/k = 2k; GemFilter 3k^2/k = 3k
    gen = der["gen_time_k_eq_t"]
    assert set(gen) == set(gc.METHODS)
    assert same(gen["standard"], k)
    assert same(gen["snapkv"], 2 * k)
    assert same(gen["gemfilter"], 3 * k)
    lower, upper = der["proof_sandwich"]
    assert same(lower, k * t)
    assert same(upper, (k**2 + t**2) / 2 - k * t)  # 3/2 (k^2+t^2) - (k^2+kt+t^2)
    mem = der["gen_mem_over_mhd"]
    assert set(mem) == set(gc.METHODS)
    assert same(mem["standard"], w / (h * d) + 2 * n + 2 * k)
    assert same(mem["snapkv"], w / (h * d) + 4 * k)
    assert same(mem["gemfilter"], w / (h * d) + 4 * k)
    assert same(der["snap_minus_gem_prompt_mem"], (m - r) * w + 2 * m * h * k * d)
    assert same(der["printed_std_minus_snap"], 2 * m * h * d - 2 * h * n * d - 2 * m * h * k * d)
    assert same(
        der["corrected_std_minus_snap"], 2 * m * h * n * d - 2 * h * n * d - 2 * m * h * k * d
    )
    assert same(der["prompt_mem_ratio_limit"], 1 / m)


# -- nonnegative_on_positive ---------------------------------------------------------------
def test_nonnegative_on_positive_cases():
    assert gc.nonnegative_on_positive(k * t + 3 * k**2 + 1)
    assert not gc.nonnegative_on_positive(k * t - sp.Rational(1, 10) * t**2)
    assert not gc.nonnegative_on_positive(-k)
    assert gc.nonnegative_on_positive(k / 2 + sp.Rational(1, 3) * t)  # coefficients below 1
    # a polynomial that expands to zero has the single coefficient 0: nonnegative
    assert gc.nonnegative_on_positive(sp.Add(k**2, -(k**2), evaluate=False))


def test_nonnegative_on_positive_needs_a_polynomial_in_its_symbols():
    # 1/k is not a polynomial in k: sympy refuses it (rather than taking 1/k as a generator)
    with pytest.raises(sp.PolynomialError):
        gc.nonnegative_on_positive(1 / k + t)


def test_nonnegative_on_positive_expands_first():
    # (k - t)^2 + 2 k t = k^2 + t^2: nonnegative coefficients only after expanding
    assert gc.nonnegative_on_positive((k - t) ** 2 + 2 * k * t)


# -- prompt_speedup ----------------------------------------------------------------------------
def test_prompt_speedup_values_and_bounds():
    assert gc.prompt_speedup(32, 13) == sp.Rational(32, 13)
    assert isinstance(gc.prompt_speedup(32, 13), sp.Rational)
    assert gc.prompt_speedup(7, 1) == 7
    assert gc.prompt_speedup(7, 7) == 1
    msg = "parameter 'filter_layer' = 0 is not allowed: expected 1 <= filter_layer <= layers = 7"
    with pytest.raises(ValueError) as err:
        gc.prompt_speedup(7, 0)
    assert str(err.value) == msg
    with pytest.raises(ValueError, match="'filter_layer' = 8 is not allowed"):
        gc.prompt_speedup(7, 8)


# -- FLOP and cache counts -----------------------------------------------------------------------
def products(n_tok, width, heads, kv_heads, mlp):
    """A second count, product by product: (rows, inner, cols) of every matrix product."""
    hd = width // heads
    mats = [
        (n_tok, width, heads * hd),  # Q
        (n_tok, width, kv_heads * hd),  # K
        (n_tok, width, kv_heads * hd),  # V
        (n_tok, heads * hd, width),  # O (input width h d_h)
        (n_tok, width, mlp),  # gate
        (n_tok, width, mlp),  # up
        (n_tok, width, mlp),  # down, counted as the transpose: same multiply-adds
    ]
    mats += [(n_tok, hd, n_tok)] * heads  # Q K^T per head
    mats += [(n_tok, n_tok, hd)] * heads  # A V per head
    return sum(2 * a * b * c for a, b, c in mats)


def test_layer_flops_small_case_by_hand():
    # n=3, D=8, h=2, h_kv=1, F=5: d_h=4; projections 2*3*8*4*(4+2) = 1152,
    # MLP 6*3*8*5 = 720, attention 4*2*9*4 = 288
    assert gc.layer_flops(3, 8, 2, 1, 5) == 1152 + 720 + 288


def test_layer_flops_head_dim_is_floored():
    # D=10, h=3: d_h = 3 (integer head dim); the result is an exact int
    got = gc.layer_flops(2, 10, 3, 1, 4)
    assert isinstance(got, int)
    assert got == products(2, 10, 3, 1, 4)


@settings(max_examples=40, deadline=None)
@given(
    st.integers(1, 9),
    st.integers(1, 6),
    st.integers(1, 4),
    st.integers(1, 4),
    st.integers(1, 20),
)
def test_layer_flops_matches_product_count(n_tok, hd, heads, kv_heads, mlp):
    width = hd * heads
    assert gc.layer_flops(n_tok, width, heads, kv_heads, mlp) == products(
        n_tok, width, heads, kv_heads, mlp
    )


def test_prefill_and_filter_flops_by_hand():
    one = gc.layer_flops(3, 8, 2, 1, 5)
    assert (
        gc.prefill_flops(3, 4, width=8, heads=2, kv_heads=1, mlp=5, vocab=11)
        == 4 * one + 2 * 8 * 11
    )
    # the scores: 2 n d_h per head = 2*3*4*2 = 48
    assert gc.filter_flops(3, 2, 8, 2, 1, 5) == 2 * one + 48
    # D=10, h=3: d_h = 3, scores 2*2*3*3 = 36
    got = gc.filter_flops(2, 1, 10, 3, 1, 4)
    assert isinstance(got, int)
    assert got == gc.layer_flops(2, 10, 3, 1, 4) + 36


def test_kv_cache_elements_by_hand():
    assert gc.kv_cache_elements(5, 3, 2, 7) == 2 * 3 * 2 * 7 * 5


def test_count_flops_of_one_matmul(capsys):
    a, b = torch.ones(3, 4), torch.ones(4, 5)
    assert gc.count_flops(lambda: a @ b) == 2 * 3 * 4 * 5
    assert capsys.readouterr().out == ""  # counted silently: no table printed
    assert gc.count_flops(lambda: None) == 0


def test_measured_cache_elements_sums_keys_and_values():
    layers = [
        types.SimpleNamespace(keys=torch.zeros(1, 2, 3, 4), values=torch.zeros(1, 2, 3, 5)),
        types.SimpleNamespace(keys=torch.zeros(2, 2), values=torch.zeros(7)),
    ]
    cache = types.SimpleNamespace(layers=layers)
    assert gc.measured_cache_elements(cache) == 24 + 30 + 4 + 7
    assert gc.measured_cache_elements(types.SimpleNamespace(layers=[])) == 0
