"""The dry run (``$COMPANIONS_DRY_RUN``): every loop of :func:`companions.train.progress` stops
after its first steps, and the ledger of such a run can never pass for a real one."""

from __future__ import annotations

import json

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
    monkeypatch.setattr(train, "_LOOPS", [])
    monkeypatch.setattr(train, "_ACTIVE", [])


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
    led.check("wrong", "nowhere", "identity", False, 0, 1)
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
    led.check("wrong", "nowhere", "identity", False, 0, 1)
    with pytest.raises(ledger_mod.ClaimFailed):
        led.finish(display=False)
    assert "dry_run" not in json.loads((tmp_path / "x.json").read_text())
    assert len(ledger_mod.load(tmp_path)) == 1


def test_the_ledger_summary_marks_a_dry_run():
    led = {"chapter": "x", "scale": "paper", "device": "cpu", "seed": 0, "wall_seconds": 1.0}
    real = ledger_mod.gathered([{**led, "claims": []}])[0]
    dry = ledger_mod.gathered([{**led, "claims": [], "dry_run": {"steps": 1, "loops": []}}])[0]
    assert "| paper (dry run) |" in dry and "dry run" not in real
