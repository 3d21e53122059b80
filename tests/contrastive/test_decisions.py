"""Decisions over seeds: each test fails on a plausible wrong implementation."""

from companions.contrastive import decisions as dec
from companions.stats import t_critical


def test_above_uses_student_t_not_two_standard_errors():
    # mean 1, se 0.1 with n = 2: 1 - 12.71 * 0.1 < 0, so 2 se would say "above", t says undecided
    vals = [0.9, 1.1]
    assert dec.above(vals, 0.0)[0] is None
    assert dec.above([1.0, 1.01, 0.99, 1.0, 1.02], 0.0)[0] is True
    assert dec.above([-1.0, -1.01, -0.99, -1.0], 0.0)[0] is False
    assert dec.above([1.0], 0.0)[0] is None  # one run cannot decide


def test_below_and_margin():
    assert dec.below([0.5, 0.51, 0.49], 1.0)[0] is True
    assert dec.below([0.5, 0.51, 0.49], 0.2)[0] is False


def test_within_band_two_sided():
    vals = [1.0, 1.02, 0.98, 1.01]
    assert dec.within(vals, 0.8, 1.25)[0] is True
    assert dec.within(vals, 1.5, 2.0)[0] is False  # the whole interval below the band
    assert dec.within(vals, 0.0, 0.5)[0] is False  # the whole interval above the band
    s = dec.summary(vals)
    half = t_critical(3) * s["se"]
    assert dec.within(vals, 1.0025 - half / 2, 2.0)[0] is None  # straddles the low end


def test_all_of():
    assert dec.all_of([True, True]) is True
    assert dec.all_of([True, None]) is None
    assert dec.all_of([None, False, True]) is False


def test_trend_one_reading_for_every_nsr():
    import torch

    up = torch.tensor([[1.0, 1.1, 0.9], [0.5, 0.6, 0.4]])
    assert dec.trend(up, up=True)[0] is True
    assert dec.trend(up, up=False)[0] is False
    mixed = torch.tensor([[1.0, 1.1, 0.9], [-1.0, 1.0, 0.1]])
    assert dec.trend(mixed, up=True)[0] is None  # one NSR undecided
