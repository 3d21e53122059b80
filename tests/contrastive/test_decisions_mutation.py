"""Mutation tests of companions.contrastive.decisions: the slopes by NSR against a hand-computed
least-squares slope, the NSR labels, and a NaN in a row's error."""

import math

import pytest
import torch

from companions.contrastive import decisions as dec


def test_one_slope_by_hand():
    # eps = (0, 1, 3), values = (1, 2, 7): centred eps (-4/3, -1/3, 5/3), sum of squares 14/3,
    # sum of (centred eps) * values = -4/3 - 2/3 + 35/3 = 29/3, slope 29/14
    out = dec.slopes_by_nsr(torch.tensor([1.0, 2.0, 7.0]), [0.0, 1.0, 3.0], [0.45], 1)
    assert out == {"NSR 0.45": [pytest.approx(29 / 14)]}


def test_the_runs_must_match_the_grid():
    with pytest.raises(ValueError, match="parameter 'values' has 4 runs"):
        dec.slopes_by_nsr(torch.ones(4), [0.1, 0.2, 0.3], [1.0], 1)


def test_labels_keep_the_nsr_value():
    out = dec.slopes_by_nsr(torch.arange(4.0), [0.1, 0.2], [2.8125, 5.0], 1)
    assert list(out) == ["NSR 2.8125", "NSR 5"]


def test_a_nan_error_is_refused():
    with pytest.raises(ValueError, match="row 0"):
        dec.monte_carlo_rows([1.0], [math.nan], [1.0])
    assert dec.finite([math.nan, math.nan]) == []
