"""Registered claims (``companions.claims``) and the ledger that decides them: each rule on cases
computed by hand, the statuses each kind gives, and the errors that name a claim."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import sympy as sp

import companions
from companions import claims as C
from companions import ledger as L
from companions import scale
from companions.scale import Chapter, Int, register_chapter

# Student's t, two-sided 95 %: 4.302653 (2 df), 2.776445 (4 df), 12.706205 (1 df).
T2, T4, T1 = 4.302653, 2.776445, 12.706205


# -------------------------------------------------------------------------------------------------
# Exact rules
# -------------------------------------------------------------------------------------------------
def test_exact_simplifies_sympy_residuals_and_keeps_them_simplified():
    x = sp.Symbol("x")
    decision = C.Exact(0).decide([sp.sin(x) ** 2 + sp.cos(x) ** 2 - 1, sp.Integer(0)])
    assert decision.verdict is True and decision.observed == [0, 0]
    assert C.Exact(0).decide(sp.Matrix([[x - x, x]])).verdict is False
    assert C.Exact(sp.Rational(1, 3)).decide(sp.Rational(2, 6)).verdict is True
    assert C.Exact([1, 2]).decide((1, 2)).verdict is True
    assert C.Exact([1, 2]).decide([1, 2, 3]).verdict is False  # a longer list is not equal
    assert C.Exact(0).decide(np.zeros((2, 2))).verdict is True
    assert C.Exact(0).decide(np.array([0.0, 1e-300])).verdict is False  # exact means exact


def test_exact_refuses_nan():
    with pytest.raises(C.BadMeasurement, match="NaN"):
        C.Exact(0).decide(float("nan"))


def test_close_absolute_and_relative():
    assert C.Close(1.0, 0.1).decide(1.09).verdict is True
    assert C.Close(1.0, 0.1).decide(1.11).verdict is False
    decision = C.Close(1.0, 0.1).decide([1.0, 0.85, 1.05])  # decided by the worst item
    assert decision.verdict is False and decision.observed == 0.85
    assert C.Close(200.0, 0.01, relative=True).decide(201.9).verdict is True
    assert C.Close(200.0, 0.01, relative=True).decide(202.1).verdict is False
    with pytest.raises(C.BadMeasurement, match="NaN"):
        C.Close(1.0, 0.1).decide([1.0, float("nan")])


def test_bounds_read_the_worst_element_and_strictness():
    assert C.AtMost(1.0).decide([0.2, 1.0]).verdict is True
    assert C.AtMost(1.0, strict=True).decide([0.2, 1.0]).verdict is False
    assert C.AtLeast(1.0).decide(np.array([1.0, 3.0])).observed == 1.0
    assert C.AtLeast(1.0, strict=True).decide([1.5, 3.0]).verdict is True
    assert C.AtLeast(1.0).decide([0.99, 3.0]).verdict is False
    with pytest.raises(C.BadMeasurement, match="number"):
        C.AtMost(1.0).decide("small")


# -------------------------------------------------------------------------------------------------
# Rules decided with uncertainty
# -------------------------------------------------------------------------------------------------
def test_mean_above_against_a_hand_computed_t_interval():
    # mean 0.65, sd 0.05, se 0.05/sqrt(3) = 0.028868; half-width 4.302653 * se = 0.124208
    values = [0.6, 0.7, 0.65]
    decision = C.MeanAbove(0.5).decide(values)
    assert decision.verdict is True
    lo, hi = decision.extra["interval"]
    assert math.isclose(lo, 0.65 - T2 * 0.05 / math.sqrt(3), rel_tol=1e-6)
    assert math.isclose(hi, 0.65 + T2 * 0.05 / math.sqrt(3), rel_tol=1e-6)
    assert C.MeanAbove(0.53).decide(values).verdict is None  # 0.5258 < 0.53 < 0.7742
    assert C.MeanAbove(0.8).decide(values).verdict is False  # the interval lies below
    assert C.MeanBelow(0.8).decide(values).verdict is True
    assert C.MeanBelow(0.53).decide(values).verdict is None


def test_an_undecided_mean_says_how_many_seeds_would_decide_it():
    decision = C.MeanAbove(0.53).decide([0.6, 0.7, 0.65])
    n = decision.extra["seeds_to_decide"]
    sd = 0.05
    # the fewest n with t(n-1) sd / sqrt(n) < 0.12: n = 3 fails (0.1242), n = 4 passes (0.0796)
    assert n == 4 and T2 * sd / math.sqrt(3) > 0.12


def test_mean_in_band_and_within():
    values = [1.0, 1.02, 0.98, 1.0, 1.0]  # mean 1, se 0.0063246, half 2.776445 se = 0.01756
    assert C.MeanInBand(0.9, 1.1).decide(values).verdict is True
    assert C.MeanInBand(1.05, 1.2).decide(values).verdict is False
    assert C.MeanInBand(1.01, 1.2).decide(values).verdict is None
    assert C.MeanWithin(1.0, 0.02).decide(values).verdict is True
    assert C.MeanWithin(1.0, 0.015).decide(values).verdict is None  # the interval is wider
    assert "1 ± 0.02" in C.MeanWithin(1.0, 0.02).text()
    with pytest.raises(ValueError, match="margin"):
        C.MeanWithin(1.0, 0.0)


def test_an_estimate_with_a_fixed_number_of_standard_errors():
    est = C.Estimate(mean=0.3, se=0.1, n=10_000)
    assert C.MeanAbove(0.0, critical=3.0).decide(est).verdict is None  # 0.3 - 0.3 = 0
    assert C.MeanAbove(0.0, critical=2.0).decide(est).verdict is True
    assert C.MeanAbove(0.0).decide(est).verdict is True  # t(9999) = 1.96
    with pytest.raises(C.BadMeasurement, match="n >= 2"):
        C.MeanAbove(0.0).decide(C.Estimate(0.3, 0.1, 1))


def test_mean_rules_refuse_one_seed_and_nan():
    with pytest.raises(C.BadMeasurement, match="2 or more"):
        C.MeanAbove(0.0).decide([1.0])
    with pytest.raises(C.BadMeasurement, match="NaN"):
        C.MeanAbove(0.0).decide([1.0, float("nan")])
    with pytest.raises(C.BadMeasurement, match="list"):
        C.MeanAbove(0.0).decide(1.0)


def test_difference_welch_and_paired():
    # Welch: a = [2, 4] (se 1), b = [0, 0] (se 0): df = 1, half = 12.706, effect 3: undecided
    d = C.DifferenceAbove().decide(([2.0, 4.0], [0.0, 0.0]))
    assert d.verdict is None and math.isclose(d.extra["interval"][1], 3 + T1, rel_tol=1e-6)
    # paired: the differences are [2, 2, 2.1]: mean 2.0333, sd 0.057735, se 0.033333
    d = C.DifferenceAbove(margin=1.5, paired=True).decide(([3, 4, 5.1], [1, 2, 3]))
    assert d.verdict is True
    assert math.isclose(d.extra["interval"][0], 2.033333 - T2 * 0.033333, rel_tol=1e-4)
    assert C.DifferenceAbove(margin=2.5, paired=True).decide(([3, 4, 5.1], [1, 2, 3])).verdict is (
        False
    )
    with pytest.raises(C.BadMeasurement, match="length"):
        C.DifferenceAbove(paired=True).decide(([1, 2, 3], [1, 2]))
    with pytest.raises(C.BadMeasurement, match="pair"):
        C.DifferenceAbove().decide([1, 2, 3])


def test_trend_each_step_decided():
    down = [[3.0, 3.1, 2.9], [2.0, 2.1, 1.9], [1.0, 1.1, 0.9]]
    assert C.Trend("decreasing").decide(down).verdict is True
    assert C.Trend("increasing").decide(down).verdict is False
    noisy = [[3.0, 1.0, 2.0], [2.0, 2.5, 1.6], [1.0, 1.1, 0.9]]
    assert C.Trend("decreasing").decide(noisy).verdict is None
    with pytest.raises(ValueError, match="direction"):
        C.Trend("down")
    with pytest.raises(C.BadMeasurement, match="two points"):
        C.Trend("decreasing").decide([[1.0, 2.0]])


def test_within_errors():
    rows = [(1.01, 0.01, 1.0), (2.0, 0.1, 2.35)]
    decision = C.WithinErrors(4).decide(rows)
    assert decision.verdict is True and math.isclose(decision.observed, -3.5)
    assert C.WithinErrors(3).decide(rows).verdict is False
    with pytest.raises(C.BadMeasurement, match="positive"):
        C.WithinErrors(4).decide([(1.0, 0.0, 1.0)])
    with pytest.raises(C.BadMeasurement, match="rows"):
        C.WithinErrors(4).decide([(1.0, 0.1)])


def test_every_combines_cases():
    rule = C.Every(C.MeanBelow(0.1))
    assert rule.can_be_undecided
    assert rule.decide({1: [0.01, 0.02, 0.015], 2: [0.03, 0.02, 0.025]}).verdict is True
    assert rule.decide({1: [0.01, 0.02, 0.015], 2: [0.5, 0.6, 0.55]}).verdict is False
    assert rule.decide({1: [0.01, 0.02, 0.015], 2: [0.05, 0.2]}).verdict is None
    with pytest.raises(C.BadMeasurement, match="case 2"):
        rule.decide({1: [0.01, 0.02], 2: [0.1]})
    assert not C.Every(C.AtMost(1)).can_be_undecided


# -------------------------------------------------------------------------------------------------
# Declarations and statuses
# -------------------------------------------------------------------------------------------------
def _claim(**changes):
    fields = dict(
        id="c",
        source="Theorem 1",
        kind="prediction",
        statistic="the mean of x over seeds",
        rule=C.MeanAbove(0.0),
        could_fail="a wrong sign makes the mean negative",
        decides="more seeds",
    )
    return C.Claim(**{**fields, **changes})


def test_statuses_by_kind_and_rule():
    assert C.status_of("identity", C.Exact(0), True) == "holds"
    assert C.status_of("bound", C.AtMost(1), False) == "fails"
    assert C.status_of("prediction", C.AtMost(1), False) == "fails"  # an exact prediction
    assert C.status_of("prediction", C.MeanAbove(0), False) == "differs"
    assert C.status_of("prediction", C.MeanAbove(0), None) == "inconclusive"
    # a Monte Carlo check is decided with uncertainty: it differs, it does not fail
    assert C.status_of("prediction", C.WithinErrors(4), False) == "differs"
    assert C.status_of("reproduction", C.Close(1, 0.1), True) == "reproduced"
    assert C.status_of("erratum", C.Exact(0), False) == "differs"


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(kind="identity"), "cannot be one decided with uncertainty"),
        (dict(kind="bound", rule=C.WithinErrors(4)), "Monte Carlo check is a prediction"),
        (dict(decides=""), "'decides' must name"),
        (dict(could_fail=" "), "'could_fail' is empty"),
        (dict(kind="guess"), "kind 'guess'"),
        (dict(rule="mean > 0"), "rule must be"),
        (dict(amended=("earlier",)), "Amendment"),
    ],
)
def test_a_declaration_is_refused_with_a_reason(changes, message):
    with pytest.raises(ValueError, match=message):
        _claim(**changes)


def test_a_chapter_refuses_a_claim_registered_twice():
    with pytest.raises(ValueError, match="twice"):
        Chapter(
            id="_twice",
            title="t",
            notebook="x.md",
            params={},
            presets={s: {} for s in ("smoke", "default", "paper")},
            claims=(_claim(), _claim()),
        )


# -------------------------------------------------------------------------------------------------
# The ledger decides registered claims
# -------------------------------------------------------------------------------------------------
REGISTERED = Chapter(
    id="_claims-test",
    title="A chapter with registered claims",
    notebook="book/_claims-test.md",
    params={"n": Int(1, 10)},
    presets={s: {"n": 2} for s in ("smoke", "default", "paper")},
    claims=(
        C.Claim(
            id="identity-zero",
            source="Lemma 1",
            kind="identity",
            statistic="the residual of Lemma 1's identity",
            rule=C.Exact(0),
            could_fail="a wrong formula leaves a nonzero residual",
        ),
        _claim(id="mean-positive"),
        C.Claim(
            id="close-to-source",
            source="Table 1",
            kind="reproduction",
            statistic="the accuracy",
            rule=C.Close(0.9, 0.05),
            could_fail="a weaker method scores below 0.85",
            amended=(C.Amendment("2026-12-01", C.Close(0.9, 0.01), "the source rounds to 0.05"),),
        ),
    ),
)


@pytest.fixture(autouse=True, scope="module")
def _registered():
    """The chapter is registered while this module's tests run, and only then (a chapter left in
    the registry would be counted by every later test that lists the book's chapters)."""
    register_chapter(REGISTERED)
    yield
    scale._REGISTRY.pop(REGISTERED.id, None)


@pytest.fixture
def led(tmp_path):
    cfg = companions.preset("_claims-test", "smoke", device="cpu")
    return L.Ledger(cfg, device="cpu", ledger_dir=tmp_path)


def test_the_rule_decides_and_the_ledger_writes_what_it_decided(led):
    led.record({"identity-zero": 0, "mean-positive": [0.2, 0.3, 0.25]})
    led.record({"close-to-source": 0.93}, notes={"close-to-source": "at n = 2"})
    led.finish(display=False)
    written = {c["id"]: c for c in json.loads(led.path.read_text())["claims"]}
    assert written["identity-zero"]["status"] == "holds"
    assert written["mean-positive"]["status"] == "reproduced"
    assert written["mean-positive"]["values"] == [0.2, 0.3, 0.25]
    close = written["close-to-source"]
    assert close["status"] == "reproduced" and close["note"] == "at n = 2"
    assert close["rule"] == "within 0.05 of 0.9" and close["registered"] is True
    # the earlier rule is decided on the same value, and kept beside the new one
    assert close["amended"][0]["previous_verdict"] is False
    assert close["amended"][0]["reason"] == "the source rounds to 0.05"


def test_an_inconclusive_claim_says_what_would_decide_it(led):
    led.record({"mean-positive": [-0.1, 0.3, 0.1]})
    claim = led.claims[0]
    assert claim["status"] == "inconclusive" and claim["decides"] == "more seeds"
    assert "decided at: more seeds" in L.claim_note(claim)
    assert "Inconclusive" in led.summary() and "mean-positive" in led.summary()


def test_the_summary_counts_and_explains_what_differs(led):
    led.record({"identity-zero": 0, "mean-positive": [-1.0, -1.1, -0.9], "close-to-source": 0.7})
    summary = led.summary()
    assert "3 claims" in summary and "2 differs" in summary and "1 holds" in summary
    assert summary.count("**Differs:**") == 2
    assert "A weaker method scores below 0.85." in summary  # the registered meaning of a differs
    assert "**Amended:**" in summary and "2026-12-01" in summary


def test_choose_reads_the_status(led):
    led.record({"mean-positive": [-1.0, -1.1, -0.9]})
    text = led.choose("mean-positive", reproduced="it is positive", differs="it is negative")
    assert text == "it is negative"
    with pytest.raises(KeyError, match="'differs'"):
        led.choose("mean-positive", reproduced="it is positive")
    with pytest.raises(ValueError, match="not statuses"):
        led.choose("mean-positive", differ="typo")


@pytest.mark.parametrize(
    "measured, message",
    [
        ({"no-such-claim": 1}, "'no-such-claim' is not registered"),
        ({"mean-positive": [1.0]}, "'mean-positive' .* 2 or more"),
        ({"mean-positive": [1.0, float("nan")]}, "'mean-positive' .* NaN"),
        ({"close-to-source": "high"}, "'close-to-source' .* number"),
    ],
)
def test_bad_measurements_are_named(led, measured, message):
    with pytest.raises(ValueError, match=message):
        led.record(measured)
    assert not led.claims


def test_a_claim_recorded_twice_or_through_the_old_api_is_refused(led):
    led.record({"identity-zero": 0})
    with pytest.raises(ValueError, match="used twice"):
        led.record({"identity-zero": 0})
    with pytest.raises(ValueError, match="registers its claims"):
        led.check("other", "Thm", kind="identity", holds=True, expected=0, observed=0)


def test_finish_refuses_a_registered_claim_never_recorded_and_writes_nothing(led):
    led.record({"identity-zero": 0})
    with pytest.raises(ValueError, match=r"\['mean-positive', 'close-to-source'\]"):
        led.finish(display=False)
    assert not led.path.exists()


def test_a_failed_check_stops_the_chapter_after_writing(led):
    led.record({"identity-zero": 1, "mean-positive": [0.2, 0.3, 0.25], "close-to-source": 0.9})
    with pytest.raises(L.ClaimFailed, match="identity-zero"):
        led.finish(display=False)
    assert led.path.is_file()


def test_the_book_counts_registered_claims_only():
    claims = [{"id": "a", "registered": True}, {"id": "b", "registered": False}]
    assert [c["id"] for c in L.counted(claims)] == ["a"]
    assert [c["id"] for c in L.counted([{"id": "b"}])] == ["b"]  # a ledger not yet registered


# -------------------------------------------------------------------------------------------------
# Parameters injected by papermill reach preset() without the chapter naming them
# -------------------------------------------------------------------------------------------------
class _Shell:
    def __init__(self, history, namespace):
        self.user_ns = {"_ih": history, **namespace}


def test_injected_parameters_reads_papermills_cell(monkeypatch):
    import IPython

    injected = '# Parameters\nscale = "smoke"\nd = 8\nbogus = 1\n'
    shell = _Shell(["", "scale = None", injected, "cfg = ..."], {"scale": "smoke", "d": 8})
    shell.user_ns["bogus"] = 1
    monkeypatch.setattr(IPython, "get_ipython", lambda: shell)
    assert companions.injected_parameters() == {"d": 8, "bogus": 1}
    with pytest.raises(ValueError, match="bogus"):
        companions.preset("looped-gd", "smoke", **companions.injected_parameters())
    assert companions.preset("_claims-test", "smoke", n=3).n == 3


def test_nothing_is_injected_outside_papermill(monkeypatch):
    import IPython

    shell = _Shell(["", "scale = None\nd = 8", "cfg = ..."], {"d": 8})
    monkeypatch.setattr(IPython, "get_ipython", lambda: shell)
    assert companions.injected_parameters() == {}
    monkeypatch.setattr(IPython, "get_ipython", lambda: None)
    assert companions.injected_parameters() == {}


# -------------------------------------------------------------------------------------------------
# RatioOfProportions: two binomial counts, Katz's log interval of the ratio
# -------------------------------------------------------------------------------------------------
def test_ratio_of_proportions_on_a_hand_computed_case():
    # 50/1000 against 100/1000: ratio 1/2, se of the log sqrt(1/50 - 1/1000 + 1/100 - 1/1000)
    # = sqrt(0.028) = 0.167332, z = 1.959964: 0.5 exp(-+0.327963) = [0.360194, 0.694070]
    measured = ((50, 1000), (100, 1000))
    inside = C.RatioOfProportions(0.25, 0.75).decide(measured)
    assert inside.verdict is True and inside.observed == pytest.approx(0.5)
    assert inside.extra["interval"] == pytest.approx([0.360194, 0.694070], rel=1e-5)
    assert C.RatioOfProportions(0.4, 0.75).decide(measured).verdict is None  # straddles 0.4
    assert C.RatioOfProportions(0.75).decide(measured).verdict is False  # wholly below 0.75
    assert C.RatioOfProportions(0.2, 0.3).decide(measured).verdict is False  # wholly above 0.3
    assert C.RatioOfProportions(0.25).text() == "p_a / p_b >= 0.25 (95% Katz log interval)"


def test_ratio_of_proportions_with_no_success_uses_haldanes_correction():
    # 0/1000 against 200/1000 becomes 0.5/1001 against 200.5/1001: ratio 0.0024938, se of the log
    # sqrt(2 - 1/1001 + 1/200.5 - 1/1001) = 1.415269, interval [0.00015566, 0.0399517]
    decision = C.RatioOfProportions(0.25).decide(((0, 1000), (200, 1000)))
    assert decision.verdict is False
    assert decision.observed == pytest.approx(0.0024937656, rel=1e-8)
    assert decision.extra["interval"] == pytest.approx([0.00015566, 0.0399517], rel=1e-4)
    assert decision.extra["counts"] == [[0, 1000], [200, 1000]]
    # with a few successes in a small arm the interval straddles the band's end
    assert C.RatioOfProportions(0.25).decide(((2, 100), (10, 100))).verdict is None


def test_ratio_of_proportions_refuses_what_is_not_two_counts():
    rule = C.RatioOfProportions(0.25, 0.75)
    for bad in ((5, 10), ((5, 10),), ((11, 10), (1, 10)), ((1.5, 10), (1, 10)), ((1, 0), (1, 2))):
        with pytest.raises(C.BadMeasurement):
            rule.decide(bad)
    with pytest.raises(C.BadMeasurement, match="NaN"):
        rule.decide(((float("nan"), 10), (1, 10)))
    with pytest.raises(ValueError, match="low < high"):
        C.RatioOfProportions(0.75, 0.25)
    assert rule.statistical and rule.can_be_undecided


def test_a_committed_paper_ledger_shows_beside_the_run(led, monkeypatch):
    paper = {
        "chapter": "_claims-test",
        "scale": "paper",
        "claims": [
            {"id": "mean-positive", "status": "reproduced", "registered": True, "shown": "0.3"},
            {"id": "identity-zero", "status": "holds", "registered": True, "observed": 0},
        ],
        "provenance": {"date": "2026-12-05 10:00 UTC", "commit": "abcdef123", "sources": {}},
    }
    monkeypatch.setattr(L, "paper_ledger", lambda chapter_id, root=None: paper)
    monkeypatch.setattr(L, "stale_sources", lambda led, root=None: [])
    led.record({"identity-zero": 0, "mean-positive": [-0.1, 0.3, 0.1], "close-to-source": 0.9})
    table = led.table()
    assert "at paper scale" in table.splitlines()[0]
    row = next(r for r in table.splitlines() if r.startswith("| mean-positive"))
    assert "**inconclusive**" in row and "reproduced (0.3)" in row
    summary = led.summary()
    assert "At the paper scale" in summary and "abcdef1" in summary
    assert "`mean-positive`: inconclusive in this run, reproduced at the paper scale" in summary
    monkeypatch.setattr(L, "paper_ledger", lambda chapter_id, root=None: None)
    assert "No paper-scale ledger is committed" in led.summary()


@pytest.mark.parametrize(
    "mean, sd, boundary",
    [(0.02, 0.0173, 0.0), (0.5, 0.42, 0.1), (-0.2, 0.1, 0.0), (0.3, 0.22, 0.25)],
)
def test_seeds_to_decide_is_the_first_count_whose_interval_clears_the_boundary(mean, sd, boundary):
    from companions import stats

    plain = next(
        (
            n
            for n in range(2, 1001)
            if stats.t_critical(n - 1) * sd / math.sqrt(n) < abs(mean - boundary)
        ),
        None,
    )
    assert C._seeds_needed(mean, sd, boundary, 0.95) == plain
    assert C._seeds_needed(boundary, sd, boundary, 0.95) is None  # on the boundary: never
    assert C._seeds_needed(mean, 1e9, boundary, 0.95) is None  # beyond 1000 seeds


def test_a_trend_of_independent_estimates_is_decided_step_by_step():
    rising = [C.Estimate(0.0, 0.01, 10_000), C.Estimate(0.1, 0.01, 10_000)]
    assert C.Trend("increasing").decide(rising).verdict is True
    assert C.Trend("decreasing").decide(rising).verdict is False
    # a step of 0.02 against se hypot(0.01, 0.01) = 0.0141: t = 1.41 < 1.96, undecided
    close = [C.Estimate(0.0, 0.01, 10_000), C.Estimate(0.02, 0.01, 10_000)]
    assert C.Trend("increasing").decide(close).verdict is None


def test_only_refutes_never_confirms():
    rule = C.OnlyRefutes(C.AtLeast(1.0))
    assert rule.can_be_undecided and not rule.statistical
    assert rule.decide(0.7).verdict is False  # a counterexample refutes
    assert rule.decide(1.3).verdict is None  # none found: undecided, not confirmed
    assert C.status_of("erratum", rule, None) == "inconclusive"
