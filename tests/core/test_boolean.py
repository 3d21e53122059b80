"""companions.boolean: the cube {+-1}^D and its Walsh-Hadamard transform, against brute force."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from companions import boolean as B

FAST = settings(max_examples=30, deadline=None, derandomize=True)


@pytest.mark.parametrize("D", [0, 1, 2, 3, 5])
def test_cube_rows_follow_the_bits_of_their_index(D):
    z = B.cube(D)
    assert z.shape == (2**D, D)
    for r in range(2**D):
        for j in range(D):
            assert z[r, j] == (-1 if (r >> j) & 1 else 1)
    assert len({tuple(row) for row in z}) == 2**D  # every point once


def test_cube_rejects_a_negative_dimension():
    with pytest.raises(ValueError, match="'D' = -1"):
        B.cube(-1)


def _brute(f: np.ndarray, D: int) -> list[int]:
    z = B.cube(D)
    out = []
    for S in range(2**D):
        members = [j for j in range(D) if (S >> j) & 1]
        chi = np.prod(z[:, members], axis=1) if members else np.ones(2**D, dtype=int)
        out.append(int(sum(int(a) * int(b) for a, b in zip(f, chi))))
    return out


@FAST
@given(
    st.integers(0, 5).flatmap(lambda D: st.lists(st.integers(-9, 9), min_size=2**D, max_size=2**D))
)
def test_walsh_hadamard_is_the_sum_against_each_character(values):
    f = np.array(values)
    D = int(np.log2(len(f)))
    got = B.walsh_hadamard(f)
    assert got.tolist() == _brute(f, D)
    # an involution up to 2^D, and Parseval: sum hat^2 = 2^D sum f^2
    assert (B.walsh_hadamard(got) == (2**D) * f).all()
    assert int((got.astype(object) ** 2).sum()) == 2**D * int((f.astype(object) ** 2).sum())
    assert (f == np.array(values)).all()  # the input is left alone


def test_walsh_hadamard_works_along_axis_zero_of_a_matrix():
    rng = np.random.default_rng(0)
    f = rng.integers(-5, 6, size=(8, 3))
    got = B.walsh_hadamard(f)
    for c in range(3):
        assert got[:, c].tolist() == _brute(f[:, c], 3)


def test_walsh_hadamard_is_exact_on_python_integers():
    big = np.array([10**30, -(10**30) + 1, 7, 3], dtype=object)
    got = B.walsh_hadamard(big)
    assert got.dtype == object and got.tolist() == _brute(big, 2)
    assert B.walsh_hadamard(np.array([1.0, 2.0])).dtype == np.int64


@pytest.mark.parametrize("n", [3, 5, 6, 12])
def test_walsh_hadamard_rejects_a_length_not_a_power_of_two(n):
    with pytest.raises(ValueError, match=f"{n} rows"):
        B.walsh_hadamard(np.ones(n, dtype=int))


@pytest.mark.parametrize("D", [1, 3, 4])
def test_subset_index_points_at_the_characters_coefficient(D):
    z = B.cube(D)
    for k in range(D + 1):
        for S in itertools.combinations(range(D), k):
            chi = np.prod(z[:, list(S)], axis=1) if S else np.ones(2**D, dtype=int)
            hat = B.walsh_hadamard(chi)
            assert hat[B.subset_index(S)] == 2**D
            assert np.count_nonzero(hat) == 1
    assert B.subset_index([]) == 0 and B.subset_index(np.array([0, 2])) == 5


def test_edges_of_the_cube_and_the_transform():
    assert B.cube(0).shape == (1, 0)  # the 0-cube is one point
    assert B.walsh_hadamard(np.array([5])).tolist() == [5]
    assert B.walsh_hadamard(np.array([1, 2])).tolist() == [3, -1]
    with pytest.raises(ValueError, match="^parameter 'D' = -2 is not allowed: it must be >= 0$"):
        B.cube(-2)


def test_walsh_hadamard_keeps_python_integers_and_makes_floats_integers():
    # object arrays stay exact beyond int64; a float array of integers is computed in int64
    huge = np.array([2**70, 1], dtype=object)
    assert B.walsh_hadamard(huge).tolist() == [2**70 + 1, 2**70 - 1]
    got = B.walsh_hadamard(np.array([1.0, 0.0, 2.0, 1.0]))
    assert got.dtype == np.int64 and got.tolist() == [4, 2, -2, 0]
    got = B.walsh_hadamard(np.array([True, False]))
    assert got.dtype == np.int64 and got.tolist() == [1, 1]
    values = np.array([1, 2, 3, 4], dtype=np.int64)
    B.walsh_hadamard(values)
    assert values.tolist() == [1, 2, 3, 4]  # the caller's array is not overwritten
    ints32 = np.array([2**30, 2**30], dtype=np.int32)
    assert B.walsh_hadamard(ints32).tolist() == [2**31, 0]  # no int32 overflow


def test_a_length_one_short_of_a_power_of_two_is_refused():
    for n in (3, 7, 15):
        with pytest.raises(ValueError, match="needs a power of two"):
            B.walsh_hadamard(np.zeros(n, dtype=int))
