"""The exact checkers of companions.emergence.theory fed cases that fail: each counter of
``lemma_2_5_exhaustive`` must count a violation of its own statement, at its boundary."""

from __future__ import annotations

from fractions import Fraction

import pytest

from companions.emergence import theory


def _good(k):
    return {
        "fits": True,
        "n": 3 * (k + 1),
        "max_a": 32 * k,  # at the bound: allowed
        "min_b": Fraction(1, 32 * k),  # at the bound: allowed
        "max_b": Fraction(1, 2),
        "max_pre": 1,
        "candidate": 1,
    }


@pytest.mark.parametrize(
    "change, counter",
    [
        ({"fits": False}, "misfit"),
        ({"n": "wrong"}, "size"),
        ({"max_a": "over"}, "a_bound"),
        ({"min_b": "under"}, "b_bound"),
        ({"max_b": Fraction(1, 2) + Fraction(1, 10**9)}, "b_bound"),
        ({"max_pre": 1 + Fraction(1, 10**9)}, "pre_bound"),
        ({"candidate": 2}, "candidate2"),
    ],
)
def test_each_counter_counts_its_own_violation(monkeypatch, change, counter):
    def report(k, P, mu):
        r = _good(k)
        for key, value in change.items():
            if value == "wrong":
                value = 3 * (k + 1) + 1
            elif value == "over":
                value = 32 * k + Fraction(1, 10**9)
            elif value == "under":
                value = Fraction(1, 32 * k) - Fraction(1, 10**9)
            r[key] = value
        return r

    monkeypatch.setattr(theory, "lemma_2_5_report", report)
    counts = theory.lemma_2_5_exhaustive(2, 2)
    # k = 1: 2 subsets x 3 mus; k = 2: 4 subsets x 5 mus
    assert counts["cases"] == 2 * 3 + 4 * 5
    for name, value in counts.items():
        if name != "cases":
            assert value == (counts["cases"] if name == counter else 0), name


def test_the_good_report_at_every_bound_counts_nothing(monkeypatch):
    monkeypatch.setattr(theory, "lemma_2_5_report", lambda k, P, mu: _good(k))
    counts = theory.lemma_2_5_exhaustive(2, 2)
    assert {k: v for k, v in counts.items() if k != "cases"} == dict.fromkeys(
        ("misfit", "size", "a_bound", "b_bound", "pre_bound", "candidate2"), 0
    )


def test_a_wrong_label_set_is_reported_as_a_misfit():
    net = theory.target_network(3, {1, 3}, Fraction(3, 2))
    report = theory.lemma_2_5_report(3, {1, 3}, Fraction(3, 2))
    assert report["fits"]
    outputs = [theory.target_output(net, S, Fraction(3, 2)) for S in range(4)]
    assert outputs == [-1, 1, -1, 1]
    # the same network judged against another label set does not fit
    assert outputs != [1 if S in {1, 2} else -1 for S in range(4)]
