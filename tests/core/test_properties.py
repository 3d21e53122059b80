"""Property-based tests (hypothesis) of the core: invariants over a whole domain, not at a point.

- the ledger's status logic for every kind of boolean and number a chapter may pass (Python,
  numpy and torch; 0-d arrays, one-element tensors);
- parameter validation at every boundary of ``Int``, ``Float`` (open and closed ends), ``Choice``
  and ``ListOf``;
- the symmetries and scalings of the statistics (Student's t, standard errors, decisions).

Settings are shared and deterministic (``derandomize=True``), with few examples, so that these
run in seconds and never differ between two CI runs.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from companions import ledger as L
from companions import scale as S
from companions import stats

FAST = settings(max_examples=40, deadline=None, derandomize=True)


class _Cfg(dict):
    chapter = "_prop-chapter"
    scale = "smoke"


def _ledger(tmp_path) -> L.Ledger:
    return L.Ledger(_Cfg(), device="cpu", ledger_dir=tmp_path)


# -- every kind of boolean and number ----------------------------------------------------------
def _truth_values(truth: bool):
    """The same truth value, as every type a chapter may compute it in."""
    return [
        truth,
        int(truth),
        float(truth),
        np.bool_(truth),
        np.array(truth),
        np.array([truth]),
        np.int64(truth),
        np.float32(truth),
        torch.tensor(truth),
        torch.tensor([truth]),
        torch.tensor(float(truth)),
        torch.tensor(truth) & torch.tensor(True),
    ]


TRUTHS = st.booleans().flatmap(lambda t: st.tuples(st.just(t), st.sampled_from(_truth_values(t))))


def _number_kinds(x: float):
    return [x, np.float64(x), np.float32(x), np.array(x), torch.tensor(x, dtype=torch.float64)]


REALS = st.floats(-1e6, 1e6, allow_nan=False)


@FAST
@given(TRUTHS)
def test_check_status_follows_the_truth_of_any_boolean(tmp_path_factory, truth_and_value):
    truth, value = truth_and_value
    led = _ledger(tmp_path_factory.mktemp("led"))
    for kind in L.CHECK_KINDS:
        claim = led.check(f"c-{kind}", "T", kind=kind, holds=value, expected=1, observed=1)
        assert claim["status"] == ("holds" if truth else "fails"), (type(value), value)
    assert len(led.failed) == (0 if truth else len(L.CHECK_KINDS))


@FAST
@given(TRUTHS)
def test_compare_status_follows_the_truth_of_any_boolean(tmp_path_factory, truth_and_value):
    truth, value = truth_and_value
    led = _ledger(tmp_path_factory.mktemp("led"))
    for kind in L.COMPARE_KINDS:
        claim = led.compare(f"c-{kind}", "T", expected=1, observed=1, agrees=value, kind=kind)
        assert claim["status"] == ("reproduced" if truth else "differs"), (type(value), value)
        assert claim["kind"] == kind
    assert led.failed == []  # differs is a finding, never a failure
    inconclusive = led.compare(
        "none", "T", expected=1, observed=1, agrees=None, note="paper scale decides"
    )
    assert inconclusive["status"] == "inconclusive"


@FAST
@given(REALS, REALS, st.floats(0, 1e6), st.integers(0, 4), st.integers(0, 4))
def test_check_close_holds_exactly_within_the_tolerance(tmp_path_factory, e, o, tol, ke, ko):
    led = _ledger(tmp_path_factory.mktemp("led"))
    expected, observed = _number_kinds(e)[ke], _number_kinds(o)[ko]
    claim = led.check_close(
        "x", "T", kind="bound", expected=expected, observed=observed, tolerance=tol
    )
    gap = abs(float(observed) - float(expected))
    assert claim["status"] == ("holds" if gap <= tol else "fails")
    # symmetric in expected and observed, and always holds at its own gap
    swapped = led.check_close(
        "y", "T", kind="bound", expected=observed, observed=expected, tolerance=tol
    )
    assert swapped["status"] == claim["status"]
    assert (
        led.check_close(
            "z", "T", kind="bound", expected=expected, observed=observed, tolerance=gap
        )["status"]
        == "holds"
    )
    assert isinstance(claim["observed"], float) and isinstance(claim["tolerance"], float)


@FAST
@given(REALS, REALS, st.integers(0, 4), st.integers(0, 4))
def test_check_at_most_is_observed_at_most_bound(tmp_path_factory, b, o, kb, ko):
    led = _ledger(tmp_path_factory.mktemp("led"))
    bound, observed = _number_kinds(b)[kb], _number_kinds(o)[ko]
    claim = led.check_at_most("x", "T", "bound", bound, observed)
    assert claim["status"] == ("holds" if float(observed) <= float(bound) else "fails")
    assert claim["expected"] == f"<= {float(bound)}"
    assert led.check_at_most("eq", "T", "bound", bound, bound)["status"] == "holds"


@pytest.mark.parametrize("bad", [float("nan"), np.float32("nan"), torch.tensor(float("nan"))])
def test_a_nan_never_holds(tmp_path, bad):
    led = _ledger(tmp_path)
    assert (
        led.check_close("a", "T", kind="bound", expected=0.0, observed=bad, tolerance=float("inf"))[
            "status"
        ]
        == "fails"
    )
    assert (
        led.check_close("b", "T", kind="bound", expected=bad, observed=0.0, tolerance=float("inf"))[
            "status"
        ]
        == "fails"
    )
    assert led.check_at_most("c", "T", "bound", 1.0, bad)["status"] == "fails"
    assert led.check_at_most("d", "T", "bound", bad, 0.0)["status"] == "fails"


@FAST
@given(
    st.recursive(
        st.one_of(
            st.none(),
            st.booleans(),
            st.integers(-(10**6), 10**6),
            st.floats(allow_nan=True, allow_infinity=True),
            st.text(max_size=5),
        ),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
        max_leaves=8,
    )
)
def test_plain_values_are_strict_json(value):
    text = json.dumps(L._plain(value), allow_nan=False)  # raises on nan/inf left in
    assert json.loads(text) is not None or value is None


@pytest.mark.parametrize(
    "value, plain",
    [
        (np.bool_(False), False),
        (np.array(True), True),
        (torch.tensor(False), False),
        (np.float32(0.5), 0.5),
        (np.int64(7), 7),
        (np.array([1, 2]), [1, 2]),
        (torch.tensor([[1.0], [2.0]]), [[1.0], [2.0]]),
        ((1, (2, 3)), [1, [2, 3]]),
        ({1: np.float64(2.0)}, {"1": 2.0}),
        (float("inf"), "inf"),
        (float("-inf"), "-inf"),
        (np.float64("nan"), "nan"),
        (None, None),
        (S.Int(1), "Int(low=1, high=None, doc='')"),
    ],
)
def test_plain_of_every_kind(value, plain):
    got = L._plain(value)
    assert got == plain and type(got) is type(plain)


def test_a_ledger_with_every_kind_round_trips_as_strict_json(tmp_path):
    led = _ledger(tmp_path)
    for i, (truth, value) in enumerate((t, v) for t in (True, False) for v in _truth_values(t)):
        led.check(
            f"k{i}",
            "T",
            kind="identity",
            holds=value,
            expected=value,
            observed=value,
            tolerance=value,
        )
    data = json.loads(led.write().read_text())
    statuses = [c["status"] for c in data["claims"]]
    n = len(_truth_values(True))
    assert statuses == ["holds"] * n + ["fails"] * n
    assert data["device"] == "cpu" and data["chapter"] == "_prop-chapter"


# -- parameter validation at every boundary ----------------------------------------------------
BOUNDS = st.integers(-50, 50)


@FAST
@given(BOUNDS, BOUNDS, st.integers(-60, 60))
def test_int_accepts_exactly_its_closed_range(a, b, v):
    low, high = min(a, b), max(a, b)
    for spec, inside in [
        (S.Int(low, high), low <= v <= high),
        (S.Int(low, None), v >= low),
        (S.Int(None, high), v <= high),
        (S.Int(), True),
    ]:
        for value in (v, float(v), np.int64(v)):
            if inside:
                got = spec.validate("n", value)
                assert got == v and type(got) is int
            else:
                with pytest.raises(ValueError, match=r"'n' = .* expected an integer"):
                    spec.validate("n", value)
    # the ends themselves are inside; one past them is not
    assert S.Int(low, high).validate("n", low) == low
    assert S.Int(low, high).validate("n", high) == high
    for outside in (low - 1, high + 1):
        with pytest.raises(ValueError, match=f"in \\[{low}, {high}\\]"):
            S.Int(low, high).validate("n", outside)


@FAST
@given(st.floats(-1e3, 1e3).filter(lambda x: not float(x).is_integer()))
def test_int_rejects_fractions_bools_and_strings(x):
    for bad in (x, True, False, "3", None, [3]):
        with pytest.raises(ValueError, match="'n'"):
            S.Int().validate("n", bad)


@FAST
@given(
    st.floats(-100, 100),
    st.floats(-100, 100),
    st.floats(-120, 120),
    st.booleans(),
    st.booleans(),
)
def test_float_accepts_exactly_its_range_with_open_or_closed_ends(a, b, v, lo_open, hi_open):
    low, high = min(a, b), max(a, b)
    spec = S.Float(low, high, low_open=lo_open, high_open=hi_open)
    above = v > low if lo_open else v >= low
    below = v < high if hi_open else v <= high
    if above and below:
        assert spec.validate("lr", v) == v
    else:
        with pytest.raises(ValueError, match="'lr'"):
            spec.validate("lr", v)
    # the ends: inside exactly when closed
    for end, is_open in ((low, lo_open), (high, hi_open)):
        if low == high and (lo_open or hi_open):
            is_open = True
        if is_open:
            with pytest.raises(ValueError, match="'lr'"):
                spec.validate("lr", end)
        else:
            assert spec.validate("lr", end) == end
    # one-sided specs
    assert (v >= low) == _accepts(S.Float(low), v)
    assert (v > low) == _accepts(S.Float(low, low_open=True), v)
    assert (v <= high) == _accepts(S.Float(None, high), v)
    assert (v < high) == _accepts(S.Float(None, high, high_open=True), v)


def _accepts(spec, value) -> bool:
    try:
        spec.validate("x", value)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf"), True, "0.5", None])
def test_float_rejects_non_finite_bools_and_strings(bad):
    with pytest.raises(ValueError, match="'lr'"):
        S.Float().validate("lr", bad)
    with pytest.raises(ValueError, match="'lr'"):
        S.Float(-math.inf, math.inf).validate("lr", bad)


def test_float_accepts_integers_and_numpy_numbers_as_floats():
    for value in (3, np.int64(3), np.float32(3.0), np.float64(3.0)):
        got = S.Float(0, 3).validate("lr", value)
        assert got == 3.0 and type(got) is float


@pytest.mark.parametrize(
    "spec, text",
    [
        (S.Int(), "an integer"),
        (S.Int(1), "an integer >= 1"),
        (S.Int(None, 5), "an integer <= 5"),
        (S.Int(1, 5), "an integer in [1, 5]"),
        (S.Float(0, low_open=True), "a real number > 0"),
        (S.Float(None, 1, high_open=True), "a real number < 1"),
        (S.Float(0, 1, low_open=True), "a real number in (0, 1]"),
        (S.Float(0, 1, high_open=True), "a real number in [0, 1)"),
        (S.Float(0, 1, True, True), "a real number in (0, 1)"),
        (S.Choice(("a", "b")), "one of 'a', 'b'"),
        (S.ListOf(S.Int(1)), "a list of at least 1 items, each an integer >= 1"),
        (
            S.ListOf(S.Float(0, 1), min_len=2, max_len=3),
            "a list of at least 2 and at most 3 items, each a real number in [0, 1]",
        ),
    ],
)
def test_descriptions_state_the_allowed_range(spec, text):
    assert spec.describe() == text
    with pytest.raises(ValueError) as err:
        spec.validate("p", "bad")
    assert str(err.value) == f"parameter 'p' = 'bad' is not allowed: expected {text}"


@FAST
@given(st.lists(st.sampled_from(["a", "b", "c", "A", "", "a "]), min_size=1, max_size=1))
def test_choice_accepts_exactly_its_options(values):
    spec = S.Choice(("a", "b"))
    for v in values:
        if v in ("a", "b"):
            assert spec.validate("mode", v) == v
        else:
            with pytest.raises(ValueError, match="'mode'"):
                spec.validate("mode", v)


@FAST
@given(st.integers(0, 4), st.integers(0, 4), st.lists(st.integers(-3, 3), max_size=6))
def test_list_of_accepts_exactly_its_lengths_and_items(a, b, items):
    lo, hi = min(a, b), max(a, b)
    spec = S.ListOf(S.Int(0), min_len=lo, max_len=hi if hi else None)
    ok_len = len(items) >= lo and (not hi or len(items) <= hi)
    bad_item = next((i for i, x in enumerate(items) if x < 0), None)
    if ok_len and bad_item is None:
        assert spec.validate("sizes", items) == tuple(items)
        assert spec.validate("sizes", tuple(items)) == tuple(items)
    elif not ok_len:
        with pytest.raises(ValueError, match=r"'sizes' = "):
            spec.validate("sizes", items)
    else:
        with pytest.raises(ValueError, match=rf"'sizes\[{bad_item}\]'"):
            spec.validate("sizes", items)


@pytest.mark.parametrize("bad", ["12", b"12", 12, None, {1, 2}])
def test_list_of_rejects_strings_and_non_sequences(bad):
    with pytest.raises(ValueError, match="'sizes'"):
        S.ListOf(S.Int()).validate("sizes", bad)


# -- statistics: symmetries, scalings and closed forms -----------------------------------------
DFS = st.floats(0.5, 200)


@FAST
@given(st.floats(-50, 50), DFS)
def test_t_cdf_is_symmetric_and_monotone(t, df):
    f = stats.student_t_cdf(t, df)
    assert 0 <= f <= 1
    assert f + stats.student_t_cdf(-t, df) == pytest.approx(1.0, abs=1e-12)
    assert stats.student_t_cdf(t + 0.5, df) >= f
    if t > 1e-6:
        assert f > 0.5
    elif t < -1e-6:
        assert f < 0.5


@FAST
@given(st.floats(-20, 20))
def test_t_cdf_closed_forms_at_one_and_two_degrees_of_freedom(t):
    # df = 1: Cauchy; df = 2: F(t) = 1/2 + t / (2 sqrt(2 + t^2)). Near t = 0 the incomplete beta
    # at x = df / (df + t^2) ~ 1 loses digits (about 1e-12), far below any decision's scale.
    assert stats.student_t_cdf(t, 1) == pytest.approx(0.5 + math.atan(t) / math.pi, abs=1e-10)
    two = 0.5 + t / (2 * math.sqrt(2 + t * t))
    assert stats.student_t_cdf(t, 2) == pytest.approx(two, abs=1e-10)


@FAST
@given(st.integers(1, 60), st.floats(0.5, 0.999))
def test_t_critical_has_its_level_and_grows_with_it(df, level):
    t = stats.t_critical(df, level)
    coverage = stats.student_t_cdf(t, df) - stats.student_t_cdf(-t, df)
    assert coverage == pytest.approx(level, abs=1e-9)
    assert stats.t_critical(df + 1, level) < t  # heavier tails with fewer degrees of freedom
    if level < 0.99:
        assert stats.t_critical(df, level + 0.005) > t


@FAST
@given(st.floats(0.01, 0.999))
def test_t_critical_at_two_degrees_of_freedom_is_its_closed_form(level):
    # df = 2: the quantile of p = (1 + level) / 2 is (2p - 1) sqrt(2 / (4 p (1 - p)))
    p = (1 + level) / 2
    exact = (2 * p - 1) * math.sqrt(2 / (4 * p * (1 - p)))
    assert stats.t_critical(2, level) == pytest.approx(exact, rel=1e-9)
    assert stats.t_critical(1, level) == pytest.approx(math.tan(math.pi * level / 2), rel=1e-9)


@FAST
@given(
    st.lists(st.floats(-1e3, 1e3), min_size=2, max_size=8),
    st.floats(-100, 100),
    st.floats(0.1, 10),
)
def test_mean_and_se_shift_and_scale(xs, shift, scale):
    mean, se, n = stats.mean_and_se(xs)
    assert n == len(xs)
    m2, se2, _ = stats.mean_and_se([scale * x + shift for x in xs])
    assert m2 == pytest.approx(scale * mean + shift, abs=1e-6 * (1 + abs(m2)))
    assert se2 == pytest.approx(scale * se, rel=1e-6, abs=1e-6)
    # the closed form: the sample variance over n, with n - 1 in the variance
    var = float(np.var(xs, ddof=1))
    assert se == pytest.approx(math.sqrt(var / n), rel=1e-9, abs=1e-9)
    assert stats.mean_and_se(np.array(xs))[:2] == pytest.approx((mean, se))


@FAST
@given(st.floats(0.01, 10), st.integers(2, 12), st.floats(0.01, 10), st.integers(2, 12))
def test_welch_df_is_symmetric_scale_free_and_bounded(sa, na, sb, nb):
    df = stats.welch_df(sa, na, sb, nb)
    assert df == pytest.approx(stats.welch_df(sb, nb, sa, na))
    assert df == pytest.approx(stats.welch_df(3 * sa, na, 3 * sb, nb))
    assert min(na, nb) - 1 - 1e-9 <= df <= na + nb - 2 + 1e-9
    va, vb = sa**2, sb**2
    assert df == pytest.approx((va + vb) ** 2 / (va**2 / (na - 1) + vb**2 / (nb - 1)))


@FAST
@given(
    st.floats(-10, 10),
    st.floats(0.01, 5),
    st.integers(2, 30),
    st.floats(-5, 5),
    st.floats(0.5, 0.99),
)
def test_decide_is_the_interval_against_the_margin(effect, se, n, margin, level):
    half = stats.t_critical(n - 1, level) * se
    got = stats.decide(effect, se, n, margin=margin, level=level)
    lo, hi = effect - half, effect + half
    if lo > margin:
        assert got is True
    elif hi < margin:
        assert got is False
    else:
        assert got is None
    # mirrored: the effect below a margin is the negated effect above the negated margin
    flipped = stats.decide(-effect, se, n, margin=-margin, level=level)
    assert flipped == (None if got is None else not got)
    # the interval's width is exactly 2 t se: just inside and just outside its half-width
    assert stats.decide(margin + 1.001 * half, se, n, margin, level) is True
    assert stats.decide(margin + 0.999 * half, se, n, margin, level) is None
    assert stats.decide(margin - 1.001 * half, se, n, margin, level) is False


@FAST
@given(
    st.lists(st.lists(st.floats(-10, 10), min_size=2, max_size=4), min_size=2, max_size=4),
)
def test_monotone_is_mirrored_by_reversal_and_negation(groups):
    down = stats.monotone(groups)
    up_reversed = stats.monotone(groups[::-1], decreasing=False)
    assert down == up_reversed
    negated = [[-x for x in g] for g in groups]
    assert stats.monotone(negated, decreasing=False) == down


def test_monotone_with_zero_spread_decides_by_sign():
    assert stats.monotone([[2.0, 2.0], [1.0, 1.0]]) is True
    assert stats.monotone([[1.0, 1.0], [2.0, 2.0]]) is False
    assert stats.monotone([[1.0, 1.0], [1.0, 1.0]]) is None
    assert stats.monotone([[1.0, 1.0], [2.0, 2.0]], decreasing=False) is True


def test_monotone_step_uses_welch_df_and_level():
    # effect 3, se of the difference sqrt(2) * 0.5: decided at 95 % with Welch's df (= 4) but
    # not with df = 1, and not at a level of 0.999
    a, b = [5.5, 6.0, 6.5], [2.5, 3.0, 3.5]
    se = stats.mean_and_se(a)[1]
    half95 = stats.t_critical(stats.welch_df(se, 3, se, 3)) * math.sqrt(2) * se
    assert 3.0 > half95 and 3.0 < stats.t_critical(1) * math.sqrt(2) * se
    assert stats.monotone([a, b]) is True
    assert stats.monotone([a, b], level=0.999) is None


def _monotone_reference(groups, decreasing=True, level=0.95):
    """monotone() written out from its definition, for two or more groups."""
    verdicts = []
    for a, b in zip(groups, groups[1:]):
        (ma, sa, na), (mb, sb, nb) = stats.mean_and_se(a), stats.mean_and_se(b)
        effect = ma - mb if decreasing else mb - ma
        se = math.hypot(sa, sb)
        if se == 0:
            verdicts.append(None if effect == 0 else effect > 0)
            continue
        va, vb = sa**2, sb**2
        df = (va + vb) ** 2 / (va**2 / (na - 1) + vb**2 / (nb - 1))
        half = stats.t_critical(df, level) * se
        verdicts.append(True if effect > half else False if effect < -half else None)
    if False in verdicts:
        return False
    return True if all(v is True for v in verdicts) else None


@FAST
@given(
    st.lists(
        st.lists(st.integers(-6, 6).map(float), min_size=2, max_size=4), min_size=2, max_size=3
    ),
    st.booleans(),
    st.sampled_from([0.5, 0.8, 0.95]),
)
def test_monotone_matches_its_definition(groups, decreasing, level):
    got = stats.monotone(groups, decreasing=decreasing, level=level)
    assert got == _monotone_reference(groups, decreasing, level)


def test_monotone_edge_cases():
    # a zero-spread step is decided by its sign, and the next steps still count
    assert stats.monotone([[2.0, 2.0], [1.0, 1.0], [5.0, 5.1, 4.9]]) is False
    # a spread of exactly one standard error goes through Welch, not the sign
    assert stats.monotone([[0.5, 0.5], [0.0, 2.0]], decreasing=False) is None
    assert stats.monotone([[0.0, 2.0], [0.5, 0.5]]) is None


def test_decide_and_welch_edges():
    # with se = 0 the interval is the point itself: an effect on the margin decides nothing
    assert stats.decide(1.0, 0.0, 5, margin=1.0) is None
    assert stats.decide(1.0 + 1e-12, 0.0, 5, margin=1.0) is True
    assert stats.decide(1.0 - 1e-12, 0.0, 5, margin=1.0) is False
    # two seeds are enough (df = 1)
    assert stats.decide(100.0, 1.0, 2) is True and stats.decide(12.0, 1.0, 2) is None
    assert stats.decide(12.0, 1.0, 2, level=0.9) is True
    assert stats.welch_df(1.0, 2, 1.0, 2) == pytest.approx(2.0)
    assert stats.welch_df(1.0, 3, 1.0, 7) == pytest.approx(6.0)
    assert stats.welch_df(0.0, 3, 0.0, 6) == 7.0
    assert stats.welch_df(2.0, 3, 0.5, 7) == pytest.approx(4.25**2 / (16 / 2 + 0.0625 / 6))
    for args in ((1.0, 1, 1.0, 5), (1.0, 5, 1.0, 1)):
        with pytest.raises(
            ValueError, match="^Welch's degrees of freedom need at least two samples on each side$"
        ):
            stats.welch_df(*args)
    with pytest.raises(ValueError, match="at least two values, got 1"):
        stats.mean_and_se([1.0])
    with pytest.raises(ValueError, match="'df' = 0 is not allowed: expected a positive number"):
        stats.student_t_cdf(1.0, 0)
    with pytest.raises(ValueError, match="'df' = -1 is not allowed"):
        stats.student_t_cdf(1.0, -1)


# -- losses: closed forms, symmetries and scalings ---------------------------------------------
def _draw(seed, *shape):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


@FAST
@given(st.floats(-700, 700))
def test_logistic_loss_identities(t):
    from companions import losses

    x = torch.tensor(t, dtype=torch.float64)
    # ell(t) - ell(-t) = -t, ell > 0, ell(t) = log(1 + e^-t) computed without overflow
    assert float(losses.logistic(x) - losses.logistic(-x)) == pytest.approx(-t, abs=1e-9)
    assert float(losses.logistic(x)) > 0 or t > 36
    assert float(losses.logistic(x)) == pytest.approx(math.log1p(math.exp(-t)) if t > -30 else -t)
    assert float(losses.linear(x)) == -t
    if t > -700:
        assert float(losses.exponential(x)) == pytest.approx(math.exp(-t))


@FAST
@given(st.integers(0, 10**6), st.integers(1, 4), st.integers(1, 4), st.floats(0.1, 3.0))
def test_pair_losses_match_their_definitions(seed, n, k, a):
    from companions import losses

    h, hp, hn = _draw(seed, 2, n, k), _draw(seed + 1, 2, n, k), _draw(seed + 2, 2, n, k)
    for name, ell in losses.SCALAR_LOSSES.items():
        t = torch.stack(
            [torch.stack([h[b, i] @ (hp[b, i] - hn[b, i]) for i in range(n)]) for b in range(2)]
        )
        expected = ell(t).mean(-1)
        assert torch.allclose(losses.pair_contrastive(h, hp, hn, name), expected, atol=1e-12)
        assert torch.allclose(losses.pair_contrastive(h, hp, hn, ell), expected, atol=1e-12)
        c = h.mean(-2, keepdim=True)
        t_mean = (h * (hp - c)).sum(-1)
        assert torch.allclose(
            losses.mean_negative_contrastive(h, hp, name), ell(t_mean).mean(-1), atol=1e-12
        )
        center = _draw(seed + 3, 2, k)
        t_center = (h * (hp - center[:, None, :])).sum(-1)
        got = losses.mean_negative_contrastive(h, hp, name, center=center)
        assert torch.allclose(got, ell(t_center).mean(-1), atol=1e-12)
    # the linear loss: swapping positive and negative flips the sign; degree 2 in the scale
    lin = losses.pair_contrastive(h, hp, hn, "linear")
    assert torch.allclose(losses.pair_contrastive(h, hn, hp, "linear"), -lin, atol=1e-12)
    scaled = losses.pair_contrastive(a * h, a * hp, a * hn, "linear")
    assert torch.allclose(scaled, a * a * lin, atol=1e-10)


def _info_nce_reference(hx, hy, tau, n_neg=None):
    K = hx.shape[0]
    total = 0.0
    for k in range(K):
        keep = [j for j in range(K) if n_neg is None or (j - k) % K <= n_neg]
        logits = torch.stack([hx[k] @ hy[j] / tau for j in keep])
        total += -(logits[keep.index(k)] - torch.logsumexp(logits, 0))
    return total / K


@FAST
@given(st.integers(0, 10**6), st.integers(2, 6), st.floats(0.05, 5.0), st.integers(0, 6))
def test_info_nce_matches_its_definition_and_symmetries(seed, K, tau, n_neg):
    from companions import losses

    hx, hy = _draw(seed, K, 3), _draw(seed + 1, K, 3)
    for window in (None, n_neg):
        got = losses.info_nce(hx, hy, tau, n_neg=window)
        assert float(got) == pytest.approx(float(_info_nce_reference(hx, hy, tau, window)))
    full = losses.info_nce(hx, hy, tau)
    # tau scales out: <c hx, hy> / (c tau); a joint permutation of the rows changes nothing
    assert float(losses.info_nce(2.5 * hx, hy, 2.5 * tau)) == pytest.approx(float(full))
    perm = torch.randperm(K, generator=torch.Generator().manual_seed(seed))
    assert float(losses.info_nce(hx[perm], hy[perm], tau)) == pytest.approx(float(full))
    # a batch axis in front is carried through
    batch = losses.info_nce(torch.stack([hx, -hx]), torch.stack([hy, hy]), tau)
    assert batch.shape == (2,) and float(batch[0]) == pytest.approx(float(full))


@FAST
@given(st.integers(1, 7), st.integers(0, 8))
def test_negative_mask_is_the_cyclic_window(K, n_neg):
    from companions import losses

    mask = losses.negative_mask(K, n_neg)
    assert mask.dtype == torch.bool and mask.shape == (K, K)
    for k in range(K):
        for j in range(K):
            assert bool(mask[k, j]) == ((j - k) % K <= n_neg)


def test_info_nce_stop_grad_and_bad_arguments():
    from companions import losses

    hx, hy = _draw(0, 4, 3).requires_grad_(), _draw(1, 4, 3).requires_grad_()
    losses.info_nce(hx, hy, 0.5, stop_grad=True).backward()
    assert hy.grad is None and hx.grad.abs().sum() > 0
    losses.info_nce(hx, hy, 0.5).backward()
    assert hy.grad.abs().sum() > 0
    for tau in (0.0, -1.0):
        with pytest.raises(ValueError, match=f"'tau' = {tau} is not allowed: it must be positive"):
            losses.info_nce(hx, hy, tau)
    with pytest.raises(ValueError, match=r"loss 'hinge' is not one of \['exponential'"):
        losses.pair_contrastive(hx, hy, hy, "hinge")


def test_losses_follow_the_device_of_their_inputs():
    # the meta device stands in for a GPU: a mask made on the CPU could not fill a GPU tensor
    from companions import losses

    assert losses.negative_mask(3, 1, device="meta").device.type == "meta"
    hx = torch.randn(4, 3, device="meta")
    assert losses.info_nce(hx, hx, 0.5, n_neg=1).device.type == "meta"


def test_loss_defaults_and_shapes():
    from companions import losses

    h, hp, hn = _draw(0, 3, 5, 2), _draw(1, 3, 5, 2), _draw(2, 3, 5, 2)
    assert torch.equal(
        losses.pair_contrastive(h, hp, hn), losses.pair_contrastive(h, hp, hn, "logistic")
    )
    assert losses.pair_contrastive(h, hp, hn).shape == (3,)
    assert losses.mean_negative_contrastive(h, hp).shape == (3,)
    assert losses.info_nce(h, hp, 1.0).shape == (3,)


# -- scale: the read-only Config ----------------------------------------------------------------
def test_config_access_and_errors():
    cfg = S.Config("ch", "smoke", {"n": 3, "sizes": (1, 2), "seed": 0, "device": "cpu"})
    assert cfg.n == 3 and cfg["sizes"] == (1, 2) and len(cfg) == 4 and list(cfg)[0] == "n"
    assert repr(cfg) == "Config('ch', scale='smoke', n=3, sizes=(1, 2), seed=0, device='cpu')"
    assert cfg.params() == {"n": 3, "sizes": [1, 2]}
    with pytest.raises(AttributeError, match="^missing$"):
        cfg.missing
    with pytest.raises(AttributeError, match="^_private$"):
        cfg._private
    with pytest.raises(AttributeError, match="read-only"):
        cfg.n = 4


def test_config_copies():
    # copy probes private names on an object whose _data is not set yet (deepcopy and pickle
    # fail on the mappingproxy inside, a limitation no chapter meets)
    import copy

    twin = copy.copy(S.Config("ch", "smoke", {"n": 3}))
    assert twin.n == 3 and twin.chapter == "ch" and twin.scale == "smoke"
