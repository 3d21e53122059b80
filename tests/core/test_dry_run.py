"""The dry run (``$COMPANIONS_DRY_RUN``): every loop of :func:`companions.train.progress` stops
after its first steps, and the ledger of such a run can never pass for a real one."""

from __future__ import annotations

import json
import re
import weakref

import pytest
import torch

from companions import ledger as ledger_mod
from companions import train


class _Cfg:
    """The least a ledger needs of a chapter's configuration."""

    def __init__(self, chapter: str, scale: str):
        self.chapter, self.scale = chapter, scale

    def get(self, key, default=None):
        return default


@pytest.fixture
def dry(monkeypatch):
    monkeypatch.setenv(train.DRY_RUN_ENV, "2")
    monkeypatch.delenv(train.DRY_RUN_LOOPS_ENV, raising=False)
    monkeypatch.setattr(train, "_LOOPS", [])
    monkeypatch.setattr(train, "_ACTIVE", [])
    monkeypatch.setattr(train, "_STATE", {"ended": False, "outermost_done": 0})
    monkeypatch.setattr(ledger_mod, "_OPEN", weakref.WeakSet())


def test_not_a_dry_run_by_default(monkeypatch):
    for value in (None, "", "0"):
        if value is None:
            monkeypatch.delenv(train.DRY_RUN_ENV, raising=False)
        else:
            monkeypatch.setenv(train.DRY_RUN_ENV, value)
        assert train.dry_run_steps() is None
        assert list(train.progress(range(5), disable=True)) == [0, 1, 2, 3, 4]


def test_a_bad_value_is_named(monkeypatch):
    monkeypatch.setenv(train.DRY_RUN_ENV, "yes")
    with pytest.raises(ValueError, match=train.DRY_RUN_ENV):
        train.progress(range(3))


def test_loops_stop_after_their_first_steps_and_are_recorded(dry):
    seen = []
    for i in train.progress(range(10), desc="outer", disable=True):
        for j in train.progress(iter("abcde"), desc="inner", disable=True):
            seen.append((i, j))
    assert seen == [(0, "a"), (0, "b"), (1, "a"), (1, "b")]
    loops = train.dry_run_loops()
    assert [(lp["desc"], lp["planned"], lp["run"], lp["parent"]) for lp in loops] == [
        ("outer", 10, 2, None),
        ("inner", None, 2, 0),  # an iterator has no length: planned unknown
        ("inner", None, 2, 0),
    ]


def test_a_closed_bar_ends_its_loop(dry):
    bar = train.progress(range(10), desc="broken off", disable=True)
    for _ in bar:
        break
    bar.close()
    assert train._ACTIVE == []
    after = train.progress(range(3), desc="next", disable=True)
    list(after)
    assert train.dry_run_loops()[-1]["parent"] is None


def test_fit_runs_its_first_steps_only(dry):
    w = torch.zeros(2, requires_grad=True)
    hist = train.fit(lambda s: (w - 1).pow(2).sum(), [w], steps=100, progress=False)
    assert hist.steps == [0]  # logged at step 0; the last step (99) is never reached
    assert train.dry_run_loops()[0]["planned"] == 100 and train.dry_run_loops()[0]["run"] == 2


def test_extrapolation_counts_each_loop_at_its_planned_length():
    loops = [
        dict(planned=10, run=2, seconds=6.0, parent=None),  # 2 s own per step + inner loops
        dict(planned=100, run=2, seconds=1.0, parent=0),  # 0.5 s per step
        dict(planned=100, run=2, seconds=1.0, parent=0),
        dict(planned=None, run=3, seconds=2.0, parent=None),  # unknown length: as measured
    ]
    # outer: 10 steps x (own 4 s + 2 inner loops x 50 s) / 2 steps = 520 s; outside loops 1 s
    assert train.extrapolated_seconds(9.0, loops) == pytest.approx(1.0 + 520.0 + 2.0)


def test_a_dry_run_ledger_says_so_and_is_left_out(dry, tmp_path):
    cfg = _Cfg("x", "paper")
    list(train.progress(range(5), desc="steps", disable=True))
    led = ledger_mod.Ledger(cfg, device="cpu", ledger_dir=tmp_path)
    led.check("wrong", "nowhere", kind="identity", holds=False, expected=0, observed=1)
    led.finish(display=False)  # a failed check does not raise in a dry run
    data = json.loads(led.path.read_text())
    assert data["dry_run"]["steps"] == 2 and data["dry_run"]["loops"][0]["planned"] == 5
    assert led.table() == ledger_mod.DRY_RUN_HEADING + "\n\n" + ledger_mod.claims_table(led.claims)
    assert ledger_mod.load(tmp_path) == []
    assert [d["chapter"] for d in ledger_mod.load(tmp_path, dry_runs=True)] == [cfg.chapter]


def test_a_real_ledger_has_no_dry_run_key(monkeypatch, tmp_path):
    monkeypatch.delenv(train.DRY_RUN_ENV, raising=False)
    cfg = _Cfg("x", "smoke")
    led = ledger_mod.Ledger(cfg, device="cpu", ledger_dir=tmp_path)
    led.check("wrong", "nowhere", kind="identity", holds=False, expected=0, observed=1)
    with pytest.raises(ledger_mod.ClaimFailed):
        led.finish(display=False)
    assert "dry_run" not in json.loads((tmp_path / "x.json").read_text())
    assert len(ledger_mod.load(tmp_path)) == 1


def test_the_ledger_summary_marks_a_dry_run():
    led = {"chapter": "x", "scale": "paper", "device": "cpu", "seed": 0, "wall_seconds": 1.0}
    real = ledger_mod.gathered([{**led, "claims": []}])[0]
    dry = ledger_mod.gathered([{**led, "claims": [], "dry_run": {"steps": 1, "loops": []}}])[0]
    assert "| paper (dry run) |" in dry and "dry run" not in real


def test_the_loop_limit_needs_a_dry_run_and_a_number(monkeypatch, dry):
    for value in ("", "0"):
        monkeypatch.setenv(train.DRY_RUN_LOOPS_ENV, value)
        assert train.dry_run_loop_limit() is None
    monkeypatch.setenv(train.DRY_RUN_LOOPS_ENV, "3")
    assert train.dry_run_loop_limit() == 3
    monkeypatch.setenv(train.DRY_RUN_ENV, "0")  # not a dry run: nothing ends early
    assert train.dry_run_loop_limit() is None
    monkeypatch.setenv(train.DRY_RUN_ENV, "1")
    monkeypatch.setenv(train.DRY_RUN_LOOPS_ENV, "first")
    with pytest.raises(ValueError, match=train.DRY_RUN_LOOPS_ENV):
        train.dry_run_loop_limit()


def test_a_dry_run_ends_after_its_first_outermost_loops_with_its_ledger_written(
    monkeypatch, dry, tmp_path
):
    monkeypatch.setenv(train.DRY_RUN_LOOPS_ENV, "2")
    led = ledger_mod.Ledger(_Cfg("x", "paper"), device="cpu", ledger_dir=tmp_path)
    seen = []
    for i in train.progress(range(10), desc="first", disable=True):
        for j in train.progress(range(10), desc="inner", disable=True):  # inner: never ends it
            seen.append((i, j))
    led.check("before-the-end", "nowhere", kind="identity", holds=True, expected=0, observed=0)
    assert not train.dry_run_ended() and not led.path.exists()
    with pytest.raises(train.DryRunEnded, match=rf"{train.DRY_RUN_LOOPS_ENV}=2"):
        for _ in train.progress(range(10), desc="second", disable=True):
            seen.append("second")
    assert seen == [(0, 0), (0, 1), (1, 0), (1, 1), "second", "second"]  # its steps all ran
    assert train.dry_run_ended()
    data = json.loads(led.path.read_text())
    assert data["dry_run"]["ends_after_loops"] == 2 and data["dry_run"]["ended"] is True
    assert [c["id"] for c in data["claims"]] == ["before-the-end"]
    assert [lp["desc"] for lp in data["dry_run"]["loops"]] == ["first", "inner", "inner", "second"]
    assert data["dry_run"]["loops"][-1]["run"] == 2


def test_a_dry_run_that_never_reaches_its_loop_limit_runs_to_the_end(monkeypatch, dry, tmp_path):
    monkeypatch.setenv(train.DRY_RUN_LOOPS_ENV, "2")
    led = ledger_mod.Ledger(_Cfg("x", "paper"), device="cpu", ledger_dir=tmp_path)
    bar = train.progress(range(10), desc="broken off", disable=True)
    for _ in bar:
        break  # a loop left early is not one that ran its steps
    bar.close()
    list(train.progress(range(10), desc="only", disable=True))
    led.finish(display=False)
    data = json.loads(led.path.read_text())
    assert data["dry_run"]["ended"] is False and data["dry_run"]["ends_after_loops"] == 2


def test_write_open_writes_every_live_ledger(dry, tmp_path):
    a = ledger_mod.Ledger(_Cfg("a", "smoke"), device="cpu", ledger_dir=tmp_path)
    b = ledger_mod.Ledger(_Cfg("b", "smoke"), device="cpu", ledger_dir=tmp_path / "sub")
    assert ledger_mod.write_open() == sorted([a.path, b.path])
    assert json.loads(b.path.read_text())["chapter"] == "b"


def test_bad_values_get_the_whole_message(monkeypatch, dry):
    monkeypatch.setenv(train.DRY_RUN_ENV, "two")
    expected = "expected a number of steps >= 1 (or 0 / unset: no dry run)"
    with pytest.raises(ValueError, match=f"is not allowed: {re.escape(expected)}$"):
        train.dry_run_steps()
    monkeypatch.setenv(train.DRY_RUN_ENV, "1")
    monkeypatch.setenv(train.DRY_RUN_LOOPS_ENV, "-1")
    expected = "expected a number of loops >= 1 (or 0 / unset: run every loop)"
    with pytest.raises(ValueError, match=f"is not allowed: {re.escape(expected)}$"):
        train.dry_run_loop_limit()


def test_the_end_names_the_ledgers_written(monkeypatch, dry, tmp_path):
    monkeypatch.setenv(train.DRY_RUN_LOOPS_ENV, "1")
    with pytest.raises(train.DryRunEnded, match=r"ledger\(s\) written: none$"):
        list(train.progress(range(3), disable=True))
    monkeypatch.setattr(train, "_STATE", {"ended": False, "outermost_done": 0})
    a = ledger_mod.Ledger(_Cfg("a", "paper"), device="cpu", ledger_dir=tmp_path)
    b = ledger_mod.Ledger(_Cfg("b", "paper"), device="cpu", ledger_dir=tmp_path)
    with pytest.raises(train.DryRunEnded) as err:
        list(train.progress(range(3), disable=True))
    assert str(err.value).endswith(f"ledger(s) written: {a.path}, {b.path}")


class _Clock:
    """perf_counter and process_time that move only when told to."""

    def __init__(self):
        self.wall, self.cpu = 100.0, 10.0

    def perf_counter(self):
        return self.wall

    def process_time(self):
        return self.cpu


def test_each_loop_records_the_seconds_of_its_steps(monkeypatch, dry):
    clock = _Clock()
    monkeypatch.setattr(train, "time", clock)
    for _ in train.progress(range(10), desc="timed", disable=True):
        clock.wall += 1.234567  # the loop body's time counts
        clock.cpu += 0.123456
    loop = train.dry_run_loops()[0]
    assert (loop["run"], loop["seconds"], loop["cpu_seconds"]) == (2, 2.4691, 0.2469)


def test_a_dry_run_bar_shows_the_steps_it_keeps(dry):
    # 2 steps of 5: the bar's total is what runs, for a range and for a sized list
    hidden = train.progress(range(5), desc="r", disable=True)
    assert (hidden.total, hidden.disable) == (2, True)
    assert train.progress(list("abcde"), desc="l", disable=True).total == 2
    assert train.progress(list("a"), disable=True).total == 1
    assert train.progress(iter("abcde"), disable=True).total is None  # no length
    assert train.progress(range(5), total=7, disable=True).total == 7  # the caller's wins
    bar = train.progress(range(5), mininterval=3.0)
    assert (bar.desc, bar.disable, bar.mininterval) == (" (dry run)", False, 3.0)
    assert train.progress(range(5), desc="train").desc == "train (dry run)"
    bar.close()


def test_a_bar_outside_a_dry_run_is_tqdms_with_its_options(monkeypatch):
    monkeypatch.delenv(train.DRY_RUN_ENV, raising=False)
    bar = train.progress(iter("abc"), total=3, mininterval=2.0)
    assert (bar.desc, bar.disable, bar.total, bar.mininterval) == ("", False, 3, 2.0)
    bar.close()


def test_closing_a_bar_mid_loop_ends_its_timing(dry):
    bar = train.progress(range(10), desc="kept open", disable=True)
    steps = iter(bar)
    next(steps)  # the loop is running, and `steps` keeps it alive
    assert train._ACTIVE == [0]
    bar.close()
    assert train._ACTIVE == []
