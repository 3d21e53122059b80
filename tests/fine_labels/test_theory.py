"""companions.fine_labels.theory against independent computations (statistics.NormalDist, the
source's formulas written out in mpmath, least squares by hand) and at its parameters' bounds."""

import math
from statistics import NormalDist

import mpmath
import numpy as np
import pytest
import torch

from companions.fine_labels import theory as fth

N = NormalDist()


def test_gaussian_tail_and_density():
    for x in (-0.7, 0.0, 1.3, 3.1):
        assert fth.Q(x) == pytest.approx(1 - N.cdf(x), rel=1e-12)
        assert fth.phi(x) == pytest.approx(N.pdf(x), rel=1e-12)


def test_mills_bounds_correct_and_as_printed():
    for eps in (0.3, 1.0, 2.5, 6.0):
        lo, hi = fth.mills_bounds(eps, paper=False)
        assert lo == pytest.approx(N.pdf(eps) * eps / (eps**2 + 1), rel=1e-12)
        assert hi == pytest.approx(N.pdf(eps) / eps, rel=1e-12)
        assert lo <= fth.Q(eps) <= hi
        assert fth.mills_bounds(eps) == pytest.approx((lo / 2, hi / 2), rel=1e-15)  # as printed
    with pytest.raises(ValueError, match=r"^parameter 'eps' = 0 is not allowed: expected > 0$"):
        fth.mills_bounds(0)


def test_bias_constant_values_and_bounds():
    assert fth.c_b(0.05, "coarse") == pytest.approx(math.sqrt(4.1), rel=1e-15)
    assert fth.c_b(0.05, "fine") == pytest.approx(math.sqrt(2.1), rel=1e-15)
    for c0 in (0, 0.1, 0.5):
        with pytest.raises(
            ValueError,
            match=rf"^parameter 'c0' = {c0} is not allowed: expected \(0, 0.1\) \(B.3.5\)$",
        ):
            fth.c_b(c0, "fine")


def test_paper_lucky_count_is_eqs_20_21_written_out():
    for d, c0, mode, width in [(1e6, 0.05, "coarse", 2), (1e4, 0.02, "fine", 1)]:
        L = mpmath.log(d)
        cb = math.sqrt((4 if mode == "coarse" else 2) + 2 * c0)
        p1 = mpmath.ncdf(-cb * mpmath.sqrt(L + L ** (-5)))
        p2 = mpmath.ncdf(-cb * mpmath.sqrt(L - L ** (-5)))
        expected = mpmath.mpf(d) ** (width + 2 * c0) * p1 * (1 - p2) ** (d - 1)
        assert fth.paper_lucky_count(d, c0, mode) == pytest.approx(float(expected), rel=1e-9)


def test_expected_detectors_and_width():
    assert fth.expected_detectors(1000, 1.5) == pytest.approx(1000 * (1 - N.cdf(1.5)), rel=1e-12)
    assert fth.expected_detectors(1000, 1.5, 0.5) == pytest.approx(1000 * (1 - N.cdf(2.0)), 1e-12)
    assert fth.width_for(0.5, 1.0) == math.ceil(0.5 / (1 - N.cdf(1.0)))
    with pytest.raises(
        ValueError, match=r"^parameter 'n_detectors' = 0 is not allowed: expected > 0$"
    ):
        fth.width_for(0, 1.0)


def test_slopes_at_s_star_not_two():
    assert fth.coarse_log_slope(
        0.1, 3.0, P=4, n_common=2, n_fine=6, k=3, lam_b=2.0
    ) == pytest.approx(0.1 * 9 * (2 + 2) * 0.5 / 8, rel=1e-15)
    assert fth.t0_scale(3, 4, 0.1, 3.0, 5) == pytest.approx(12 / (0.1 * 9 * 5), rel=1e-15)


def test_feasibility_default_degree_and_root():
    L = fth.feasibility_log_d()
    assert L == fth.feasibility_log_d(15)
    assert 0.4 * L == pytest.approx(20 * math.log(L), rel=1e-12) and L > 100


def test_linear_fit_by_hand():
    # t = 0..3, y = 0, 1, 1, 3: slope 0.9, fitted -0.1 + 0.9 t, residuals .1 .2 -.7 .4
    slope, r2 = fth.linear_fit_r2([0, 1, 2, 3], [0, 1, 1, 3])
    assert slope == pytest.approx(0.9, rel=1e-12)
    assert r2 == pytest.approx(1 - 0.7 / 4.75, rel=1e-12)
    small = fth.linear_fit_r2([0, 1, 2, 3], [0, 0.1, 0.1, 0.3])  # ss = 0.0475 < 1: same r2
    assert small[1] == pytest.approx(r2, rel=1e-12)
    y32 = torch.tensor([0.1, 0.7, 0.9, 2.3], dtype=torch.float32)  # float32 data, float64 maths
    got = fth.linear_fit_r2(np.arange(4.0), y32)
    want = fth.linear_fit_r2(np.arange(4.0), y32.double().tolist())
    assert got[1] == pytest.approx(want[1], rel=1e-13, abs=0)
    assert math.isnan(fth.linear_fit_r2([0, 1, 2], [2, 2, 2])[1])  # no variance to explain
