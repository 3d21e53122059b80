"""A real run's tracked loops (``companions.train.tracked_loops``) and the first-step estimate
(``first_step_estimate``): what a one-step dry run would have predicted for a run whose time is
known, worked out by hand on loops timed by a clock that moves only when told to."""

from __future__ import annotations

import json
import weakref

import pytest

from companions import ledger as ledger_mod
from companions import train
from tests.core import test_dry_run as dry_run_tests


class _Clock(dry_run_tests._Clock):
    """perf_counter and process_time that move only when told to."""

    def spend(self, seconds: float, cpu: float | None = None):
        self.wall += seconds
        self.cpu += seconds / 2 if cpu is None else cpu


@pytest.fixture
def clock(monkeypatch):
    monkeypatch.delenv(train.DRY_RUN_ENV, raising=False)
    monkeypatch.delenv(train.DRY_RUN_LOOPS_ENV, raising=False)
    monkeypatch.setattr(train, "_LOOPS", [])
    monkeypatch.setattr(train, "_ACTIVE", [])
    monkeypatch.setattr(train, "_STATE", {"ended": False, "outermost_done": 0})
    monkeypatch.setattr(ledger_mod, "_OPEN", weakref.WeakSet())
    fake = _Clock()
    monkeypatch.setattr(train, "time", fake)
    return fake


def _nested(clock, outer=3, inner=4, first_inner=1.0):
    """An outer loop whose every step spends 0.5 s of its own and runs an inner loop of
    ``inner`` steps of 1 s each (the very first inner step: ``first_inner`` s)."""
    for i in train.progress(range(outer), desc="outer", disable=True):
        clock.spend(0.5)
        for j in train.progress(range(inner), desc="inner", disable=True):
            clock.spend(first_inner if (i, j) == (0, 0) else 1.0)


def test_a_real_run_times_its_loops_and_their_first_steps(clock):
    _nested(clock)
    assert [
        (lp["desc"], lp["planned"], lp["run"], lp["parent"]) for lp in train.tracked_loops()
    ] == [
        ("outer", 3, 3, None),
        ("inner", 4, 4, 0),  # only the inner loop of the first outer step: a dry run's
    ]
    outer, inner = train.tracked_loops()
    assert (outer["seconds"], outer["first_seconds"]) == (13.5, 4.5)  # 3 x (0.5 + 4), 0.5 + 4
    assert (inner["seconds"], inner["first_seconds"]) == (4.0, 1.0)
    assert (outer["cpu_seconds"], outer["first_cpu_seconds"]) == (6.75, 2.25)


def test_steps_of_equal_cost_are_estimated_exactly(clock):
    _nested(clock)
    # outside the loops 6.5 s; outer: 3 x (own 0.5 + inner 4 x 1) = 13.5
    assert train.first_step_estimate(20.0, train.tracked_loops()) == pytest.approx(20.0)
    assert train.first_step_estimate(10.0, train.tracked_loops(), "cpu_seconds") == (
        pytest.approx(10.0)
    )


def test_a_slow_first_step_is_extrapolated_to_every_step(clock):
    _nested(clock, first_inner=3.0)  # the first inner step costs 2 s more than the others
    loops = train.tracked_loops()
    assert loops[0]["seconds"] == 15.5
    # measured 20 + 2; estimated: 6.5 outside + 3 x (0.5 + 4 x 3) = 44
    assert train.first_step_estimate(22.0, loops) == pytest.approx(6.5 + 3 * (0.5 + 12.0))


def test_the_estimate_is_what_a_one_step_dry_run_extrapolates(clock, monkeypatch):
    def chapter():
        clock.spend(2.0)
        _nested(clock, outer=5, inner=7, first_inner=2.5)
        for _ in train.progress(range(9), desc="second", disable=True):
            clock.spend(0.25)
        clock.spend(1.0)

    start = clock.wall
    chapter()
    real = train.first_step_estimate(clock.wall - start, train.tracked_loops())
    monkeypatch.setattr(train, "_LOOPS", [])
    monkeypatch.setenv(train.DRY_RUN_ENV, "1")
    start = clock.wall
    chapter()
    dry = train.extrapolated_seconds(clock.wall - start, train.dry_run_loops())
    assert real == pytest.approx(dry)
    assert real == pytest.approx(3.0 + 5 * (0.5 + 7 * 2.5) + 9 * 0.25)


def test_loops_inside_a_left_out_loop_are_left_out_too(clock):
    for i in train.progress(range(2), desc="a", disable=True):
        for j in train.progress(range(2), desc="b", disable=True):
            for k in train.progress(range(2), desc="c", disable=True):
                clock.spend(1.0)
    # a; b of a's first step; c of b's first step; nothing from later steps
    assert [(lp["desc"], lp["parent"]) for lp in train.tracked_loops()] == [
        ("a", None),
        ("b", 0),
        ("c", 1),
    ]
    assert train._ACTIVE == []
    list(train.progress(range(2), desc="after", disable=True))
    assert train.tracked_loops()[-1]["parent"] is None


def test_a_loop_closed_mid_way_ends_and_the_next_is_outermost(clock):
    bar = train.progress(range(10), desc="broken", disable=True)
    for step in bar:
        clock.spend(1.0)
        if step == 2:
            break
    bar.close()
    assert train._ACTIVE == []
    assert train.tracked_loops()[0]["run"] == 2  # the step broken out of is not counted
    list(train.progress(range(2), desc="next", disable=True))
    assert train.tracked_loops()[1]["parent"] is None


def test_unknown_lengths_and_empty_loops_count_as_measured(clock):
    for _ in train.progress(iter("abc"), desc="no length", disable=True):
        clock.spend(2.0)
    list(train.progress(range(0), desc="empty", disable=True))
    loops = train.tracked_loops()
    assert [(lp["planned"], lp["run"], lp["seconds"]) for lp in loops] == [
        (None, 3, 6.0),
        (0, 0, 0),
    ]
    assert "first_seconds" not in loops[1]
    assert train.first_step_estimate(7.0, loops) == pytest.approx(7.0)


def test_the_bar_keeps_tqdms_total(clock):
    assert train.progress(range(5), disable=True).total == 5
    assert train.progress(iter("ab"), disable=True).total is None
    assert train.progress(range(5), total=7, disable=True).total == 7


def test_a_real_ledger_keeps_its_loops_and_a_dry_one_does_not_twice(clock, monkeypatch, tmp_path):
    class Cfg:
        chapter, scale = "x", "smoke"

        def get(self, key, default=None):
            return default

    led = ledger_mod.Ledger(Cfg(), device="cpu", ledger_dir=tmp_path)
    _nested(clock)
    led.finish(display=False)
    data = json.loads(led.path.read_text())
    assert [lp["desc"] for lp in data["loops"]] == ["outer", "inner"]
    assert "dry_run" not in data
    monkeypatch.setattr(train, "_LOOPS", [])
    assert "loops" not in ledger_mod.Ledger(Cfg(), device="cpu", ledger_dir=tmp_path).as_dict()
    monkeypatch.setenv(train.DRY_RUN_ENV, "1")
    _nested(clock)
    dry = ledger_mod.Ledger(Cfg(), device="cpu", ledger_dir=tmp_path).as_dict()
    assert "loops" not in dry and len(dry["dry_run"]["loops"]) == 2


def test_first_step_times_are_rounded_to_a_tenth_of_a_millisecond(clock):
    for _ in train.progress(range(3), desc="fine", disable=True):
        clock.spend(1.234567, cpu=0.0123456)
    loop = train.tracked_loops()[0]
    assert (loop["first_seconds"], loop["first_cpu_seconds"]) == (1.2346, 0.0123)


def test_closing_a_bar_that_is_still_iterated_ends_its_timing(clock):
    bar = train.progress(range(10), desc="kept open", disable=True)
    steps = iter(bar)
    next(steps)  # the loop is running, and `steps` keeps it alive
    assert train._ACTIVE == [0]
    bar.close()
    assert train._ACTIVE == []
    for i in train.progress(range(2), desc="outer", disable=True):
        if i == 1:  # a loop of the outer loop's second step: left out of tracked_loops
            inner = train.progress(range(10), desc="left out", disable=True)
            steps = iter(inner)
            next(steps)
            assert train._ACTIVE == [1, train._UNLISTED]
            inner.close()
            assert train._ACTIVE == [1]
