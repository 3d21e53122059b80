"""companions.stats: Student's t and decisions against uncertainty."""

import math

import numpy as np
import pytest

from companions import stats


@pytest.mark.parametrize(
    "df, value",
    [(1, 12.7062047), (2, 4.3026527), (3, 3.1824463), (4, 2.7764451), (30, 2.0422725)],
)
def test_t_critical_matches_the_tables(df, value):
    assert stats.t_critical(df) == pytest.approx(value, abs=1e-6)


def test_t_critical_tends_to_the_normal_and_has_its_level():
    assert stats.t_critical(1e6) == pytest.approx(1.959964, abs=1e-5)
    assert stats.t_critical(5, level=0.99) == pytest.approx(4.032143, abs=1e-5)
    t = stats.t_critical(7)
    assert stats.student_t_cdf(t, 7) - stats.student_t_cdf(-t, 7) == pytest.approx(0.95, abs=1e-10)


def test_cdf_is_symmetric_and_exact_at_one_degree_of_freedom():
    # df = 1 is the Cauchy distribution: F(t) = 1/2 + atan(t)/pi
    for t in (-3.0, -0.4, 0.0, 0.7, 5.0):
        assert stats.student_t_cdf(t, 1) == pytest.approx(0.5 + math.atan(t) / math.pi, abs=1e-12)
        assert stats.student_t_cdf(t, 4) + stats.student_t_cdf(-t, 4) == pytest.approx(1.0)


def test_welch_df_limits():
    assert stats.welch_df(1.0, 5, 0.0, 5) == pytest.approx(4.0)
    assert stats.welch_df(1.0, 5, 1.0, 5) == pytest.approx(8.0)
    with pytest.raises(ValueError):
        stats.welch_df(1.0, 1, 1.0, 5)


def test_mean_and_se():
    mean, se, n = stats.mean_and_se([1.0, 2.0, 3.0, 6.0])
    assert (mean, n) == (3.0, 4)
    assert se == pytest.approx(math.sqrt((4 + 1 + 0 + 9) / 3 / 4))
    with pytest.raises(ValueError):
        stats.mean_and_se([1.0])


def test_decide_uses_t_not_two():
    # 3 seeds, effect 3 se above the margin: decided with z = 2, not with t(2) = 4.30
    assert stats.decide(3.0, 1.0, 3) is None
    assert stats.decide(5.0, 1.0, 3) is True
    assert stats.decide(-5.0, 1.0, 3) is False
    assert stats.decide(1.0, 0.1, 30, margin=0.5) is True
    assert stats.decide(0.55, 0.1, 30, margin=0.5) is None
    with pytest.raises(ValueError, match="'n'"):
        stats.decide(1.0, 0.1, 1)


@pytest.mark.parametrize("bad", [0, -1])
def test_bad_parameters_are_named(bad):
    with pytest.raises(ValueError, match="'df'"):
        stats.t_critical(bad)
    with pytest.raises(ValueError, match="'level'"):
        stats.t_critical(3, level=1.0)


def test_monotone_decides_each_step_by_welch():
    down = [[9.0, 10.0, 9.5], [4.0, 4.5, 4.2], [1.0, 1.2, 0.9]]
    assert stats.monotone(down) is True
    assert stats.monotone(down, decreasing=False) is False
    assert stats.monotone([[1.0, 9.0, 5.0], [4.0, 4.5, 4.2]]) is None
    # one step the wrong way beyond its uncertainty decides against, whatever the others say
    assert stats.monotone([[9.0, 10.0, 9.5], [4.0, 4.5, 4.2], [8.0, 8.2, 8.1]]) is False
    with pytest.raises(ValueError, match="groups"):
        stats.monotone([[1.0, 2.0]])
    with pytest.raises(ValueError):
        stats.monotone([[1.0], [2.0]])


def test_batch_medians_takes_consecutive_equal_parts():
    assert stats.batch_medians([5, 1, 3, 10, 40, 20, 7], batches=2) == [3.0, 20.0]
    assert stats.batch_medians([1, 2, 3, 4, 9, 8, 7, 6], batches=2) == [2.5, 7.5]
    assert stats.batch_medians(range(30), batches=3) == [4.5, 14.5, 24.5]
    with pytest.raises(ValueError, match="batches"):
        stats.batch_medians([1, 2, 3], batches=1)
    with pytest.raises(ValueError, match="values"):
        stats.batch_medians([1, 2, 3], batches=4)


def test_all_of_combines_verdicts_of_every_kind_of_boolean():
    assert stats.all_of([True, True]) is True
    assert stats.all_of([True, None]) is None
    assert stats.all_of([None, False, True]) is False
    assert stats.all_of([np.True_, True]) is True
    assert stats.all_of([np.False_, None]) is False, "a numpy False is a False"
    assert stats.all_of([]) is True
