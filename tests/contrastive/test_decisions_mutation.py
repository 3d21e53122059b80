"""Mutation tests of companions.contrastive.decisions (issue 23). Means and standard errors are
worked out by hand in the comments; the two-sided Student critical values have closed forms for
one and two degrees of freedom: t(1 df, level) = tan(pi level / 2) (Cauchy) and t(2 df, level) =
sqrt(2 q^2 / (1 - q^2)) with q = level (from F(t) = 1/2 + t / (2 sqrt(2 + t^2)))."""

import math
import re
import statistics

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from companions.contrastive import decisions as dec
from companions.stats import t_critical


def t1(level):
    return math.tan(math.pi * level / 2)


def t2(level):
    return math.sqrt(2 * level**2 / (1 - level**2))


def test_closed_form_critical_values_agree_with_stats():
    for level in (0.5, 0.9, 0.95):
        assert t_critical(1, level) == pytest.approx(t1(level), rel=1e-9)
        assert t_critical(2, level) == pytest.approx(t2(level), rel=1e-9)


# -- _values, summary ------------------------------------------------------------------------------
def test_a_column_is_not_taken_for_runs():
    # values are one number per run: a tensor's tolist() of an (n, 1) column gives lists, which
    # float() rejects, rather than reading the column through as n runs
    with pytest.raises(TypeError):
        dec.summary(torch.ones(3, 1))
    assert dec.summary(torch.tensor([1.0, 3.0])) == {"mean": 2.0, "se": 1.0, "n": 2}


def test_summary_of_no_runs():
    s = dec.summary([float("nan")])  # NaNs are dropped: nothing is left
    assert set(s) == {"mean", "se", "n"}
    assert math.isnan(s["mean"]) and s["se"] == math.inf and s["n"] == 0
    s = dec.summary([])
    assert set(s) == {"mean", "se", "n"}
    assert math.isnan(s["mean"]) and s["se"] == math.inf and s["n"] == 0


def test_summary_of_one_run_is_rounded_to_digits_decimals():
    assert dec.summary([1.23456789]) == {"mean": 1.2346, "se": math.inf, "n": 1}  # 4 decimals
    assert dec.summary([1.23456789], digits=2) == {"mean": 1.23, "se": math.inf, "n": 1}
    assert dec.summary([float("nan"), -7.5]) == {"mean": -7.5, "se": math.inf, "n": 1}


def test_summary_of_two_runs_and_significant_digits():
    # [1, 3]: mean 2, sample variance (1 + 1) / 1 = 2, se = sqrt(2 / 2) = 1
    assert dec.summary([1.0, 3.0]) == {"mean": 2.0, "se": 1.0, "n": 2}
    # [1.134567, 1.334567]: mean 1.234567 -> 1.235 (4 significant digits), se = 0.1
    assert dec.summary([1.134567, 1.334567]) == {"mean": 1.235, "se": 0.1, "n": 2}
    assert dec.summary([1.134567, 1.334567], digits=6) == {"mean": 1.23457, "se": 0.1, "n": 2}


# -- above, below ----------------------------------------------------------------------------------
def test_above_decides_with_two_runs():
    # [1.0, 1.1]: mean 1.05, se 0.05, t(1 df, 0.95) = 12.71: 1.05 - 0.64 > 0
    agrees, s = dec.above([1.0, 1.1])
    assert agrees is True and s == {"mean": 1.05, "se": 0.05, "n": 2}


def test_above_default_margin_is_zero():
    # mean 0.5, se 0.0058, t(2 df) = 4.30: the interval [0.475, 0.525] is above 0, below 1
    assert dec.above([0.5, 0.51, 0.49])[0] is True
    assert dec.above([0.5, 0.51, 0.49], 1.0)[0] is False


def test_above_and_below_pass_the_level():
    # [0.9, 1.1]: mean 1, se 0.1; t(1 df, 0.95) = 12.7 straddles 0, t(1 df, 0.5) = tan(pi/4) = 1
    # gives [0.9, 1.1], above 0
    assert dec.above([0.9, 1.1], 0.0)[0] is None
    assert dec.above([0.9, 1.1], 0.0, level=0.5)[0] is True
    assert dec.below([-0.9, -1.1], 0.0)[0] is None
    assert dec.below([-0.9, -1.1], 0.0, level=0.5)[0] is True


def test_below_default_margin_is_zero():
    assert dec.below([0.5, 0.51, 0.49])[0] is False  # above 0
    assert dec.below([0.5, 0.51, 0.49], 1.0)[0] is True
    agrees, s = dec.below([-1.0, -1.1])  # mean -1.05, se 0.05: -1.05 + 0.64 < 0
    assert agrees is True and s == {"mean": -1.05, "se": 0.05, "n": 2}


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.floats(-10, 10, allow_nan=False), min_size=2, max_size=8),
    st.floats(-10, 10, allow_nan=False),
)
def test_above_is_the_one_sided_reading_of_the_t_interval(xs, margin):
    # a second implementation: mean and standard deviation from the statistics module
    m, sd = statistics.fmean(xs), statistics.stdev(xs)
    half = t_critical(len(xs) - 1) * sd / math.sqrt(len(xs))
    lo, hi = m - half, m + half
    if min(abs(lo - margin), abs(hi - margin)) < 1e-9 * (1 + abs(margin) + abs(m)):
        return  # too close to a boundary for two float paths to agree
    want = True if lo > margin else False if hi < margin else None
    assert dec.above(xs, margin)[0] is want
    want_below = True if hi < margin else False if lo > margin else None
    assert dec.below(xs, margin)[0] is want_below


# -- within ----------------------------------------------------------------------------------------
def test_within_needs_low_below_high():
    msg = "parameters 'low' = 1.0, 'high' = 1.0: expected low < high"
    with pytest.raises(ValueError, match="^" + re.escape(msg) + "$"):
        dec.within([1.0, 2.0], 1.0, 1.0)


def test_within_one_run_is_undecided_two_are_not():
    assert dec.within([1.0], 0.0, 2.0) == (None, {"mean": 1.0, "se": math.inf, "n": 1})
    # [1, 3]: mean 2, se 1, t(1 df, 0.95) = 12.7: [-10.7, 14.7] inside [-20, 20]
    assert dec.within([1.0, 3.0], -20.0, 20.0) == (True, {"mean": 2.0, "se": 1.0, "n": 2})


def test_within_uses_n_minus_1_degrees_of_freedom_and_the_level():
    # [1, 2, 3]: mean 2, se sqrt(1 / 3); 2 df: t(0.95) = 4.30, half 2.48; t(0.5) = 0.816, half 0.47
    vals = [1.0, 2.0, 3.0]
    half95 = t2(0.95) / math.sqrt(3)
    half50 = t2(0.5) / math.sqrt(3)
    assert half95 == pytest.approx(2.484, abs=1e-3) and half50 == pytest.approx(0.4714, abs=1e-4)
    assert dec.within(vals, 2 - half95 - 0.01, 2 + half95 + 0.01)[0] is True
    assert dec.within(vals, 2 - half95 + 0.01, 2 + half95 + 0.01)[0] is None  # 1 df: wider
    assert dec.within(vals, 2 - half50 - 0.01, 2 + half50 + 0.01, level=0.5)[0] is True
    assert dec.within(vals, 2 - half50 + 0.01, 2 + half50 + 0.01, level=0.5)[0] is None


def test_within_band_ends_are_inclusive_and_the_interval_compared_end_to_end():
    # [1, 3]: mean 2, se 1 (exact in floats); half = t(1 df, 0.5) = tan(pi / 4) ~ 1, the same
    # float the function computes (stats.t_critical), so the ends below meet exactly
    half = t_critical(1, 0.5)
    assert half == pytest.approx(1.0, abs=1e-9)
    vals = [1.0, 3.0]

    def verdict(low, high):
        return dec.within(vals, low, high, level=0.5)[0]

    assert verdict(2 - half, 2 + half) is True  # the interval is the band itself
    assert verdict(2 - half, 2.5) is None  # the upper end 3 sticks out of the band
    assert verdict(2 + half, 5.0) is None  # band starts where the interval ends: they touch
    assert verdict(-5.0, 2 - half) is None  # band ends where the interval starts: they touch
    assert verdict(-5.0, 2.0) is None  # the band holds the interval's lower half
    assert verdict(3.5, 5.0) is False  # [1, 3] entirely below
    assert verdict(-5.0, 0.5) is False  # entirely above


# -- undecided, trend ------------------------------------------------------------------------------
def test_undecided_sentence():
    default = " Undecided at this scale; the paper scale (100 runs per setting) would decide."
    assert dec.undecided(None) == default
    assert dec.undecided(None, "ten seeds") == " Undecided at this scale; ten seeds would decide."
    assert dec.undecided(True) == "" and dec.undecided(False) == ""


def test_trend_default_is_increasing_and_keeps_each_summary():
    rows = [[1.0, 3.0], [0.4, 0.6]]  # means 2 and 0.5, se 1 and 0.1; t(1 df) = 12.7
    # row 0: [2 - 12.7, 2 + 12.7] straddles 0; row 1: [0.5 - 1.27, ...] straddles 0
    agrees, out = dec.trend(rows)
    assert agrees is None
    assert out == {
        "slope, NSR #0": {"mean": 2.0, "se": 1.0, "n": 2},
        "slope, NSR #1": {"mean": 0.5, "se": 0.1, "n": 2},
    }
    up = [[1.0, 1.1, 0.9], [0.5, 0.6, 0.4]]  # both decidedly above 0
    assert dec.trend(up)[0] is True
    assert dec.trend(up, up=False)[0] is False
