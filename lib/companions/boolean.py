"""Fourier analysis on the Boolean cube {+-1}^D, exact on integers (shared by the topics).

The emergence topic uses it for the Parseval/Bessel argument of its fixed-feature lower bound; the
gradient-feature topic for the Fourier coefficients of Majority and of the one-step gradient of
uniform parity (O'Donnell, *Analysis of Boolean Functions*, Section 5.3).
"""

from __future__ import annotations

import numpy as np


def cube(D: int) -> np.ndarray:
    """All ``z in {+-1}^D``, row ``r`` with ``z_j = -1`` iff bit ``j`` of ``r`` is set."""
    if D < 0:
        raise ValueError(f"parameter 'D' = {D} is not allowed: it must be >= 0")
    r = np.arange(2**D)
    return 1 - 2 * ((r[:, None] >> np.arange(D)[None, :]) & 1)


def walsh_hadamard(values: np.ndarray) -> np.ndarray:
    """Unnormalised fast Walsh-Hadamard transform along axis 0 (length ``2^D``), exact on integers:
    entry ``S`` is ``sum_z f(z) chi_S(z)`` with ``z`` indexed by the bits of the row index (bit = 1
    means ``z_j = -1``), so ``hat f(S) = entry / 2^D``."""
    f = np.array(values, dtype=object if values.dtype == object else np.int64, copy=True)
    h, n = 1, f.shape[0]
    if n & (n - 1):
        raise ValueError(f"parameter 'values' has {n} rows: the transform needs a power of two")
    while h < n:
        for i in range(0, n, 2 * h):
            x, y = f[i : i + h].copy(), f[i + h : i + 2 * h].copy()
            f[i : i + h], f[i + h : i + 2 * h] = x + y, x - y
        h *= 2
    return f


def subset_index(S) -> int:
    """The row of :func:`walsh_hadamard`'s output that holds the coefficient of ``chi_S``."""
    return sum(1 << int(j) for j in S)
