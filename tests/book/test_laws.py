"""``companions.book.laws``: the fitted law, the runs it is fitted to, its records and its page
(no chapter runs here: ``_run`` is replaced by a clock that knows the answer)."""

from __future__ import annotations

import json
import math
import os
import re

import matplotlib
import pytest

from companions import ledger as ledger_mod
from companions.book import cli, laws

matplotlib.use("Agg")

#: A chapter whose path from default to paper is valid at the default points.
CHAPTER = "looped-gd"


def test_fit_recovers_an_exponential_exactly():
    law = laws.fit([0, 0.1, 0.2], [3 * 5**t for t in (0, 0.1, 0.2)])
    assert law["a"] == pytest.approx(math.log(3))
    assert law["b"] == pytest.approx(math.log(5))
    assert law["paper_seconds"] == pytest.approx(15)
    assert law["factor"] == pytest.approx(5)
    assert law["rms_log_residual"] == pytest.approx(0, abs=1e-12)
    assert law["held_out"] == pytest.approx(1)


def test_fit_by_least_squares_and_its_held_out_ratio():
    law = laws.fit([0.2, 0, 0.1], [30, 10, 20])
    # the line through (0, log 10), (0.1, log 20), (0.2, log 30): slope (log 30 - log 10) / 0.2
    assert law["b"] == pytest.approx(math.log(3) / 0.2)
    mean = (math.log(10) + math.log(20) + math.log(30)) / 3
    assert law["a"] == pytest.approx(mean - law["b"] * 0.1)
    residuals = [math.log(s) - law["a"] - law["b"] * t for t, s in ((0, 10), (0.1, 20), (0.2, 30))]
    assert law["rms_log_residual"] == pytest.approx(math.sqrt(sum(r * r for r in residuals) / 3))
    # without the largest size: 10 doubling every 0.1 gives 40 at 0.2, where 30 was measured
    assert law["held_out"] == pytest.approx(40 / 30)


def test_fit_has_no_held_out_ratio_when_the_rest_is_one_size():
    assert laws.fit([0, 0, 0.1], [1, 2, 4])["held_out"] is None


@pytest.mark.parametrize(
    "ts, seconds, message",
    [
        ([0, 0.1], [1, 2], "at least 3"),
        ([0.1, 0.1, 0.1], [1, 2, 3], "two sizes"),
        ([0, 0.1, 0.2], [1, 0, 3], "positive"),
        ([0, 0.1, 0.2], [1, 2], "3 sizes but 2 times"),
    ],
)
def test_fit_rejects_what_it_cannot_fit(ts, seconds, message):
    with pytest.raises(ValueError, match=message):
        laws.fit(ts, seconds)


@pytest.mark.parametrize(
    "points, message",
    [([0, 0.1], "at least 3"), ([0, 0.1, 0.1], "repeats"), ([0, 0.1, 2], "t = 2: .*'t'")],
)
def test_check_points_names_a_bad_point(points, message):
    with pytest.raises(ValueError, match=message):
        laws.check_points(CHAPTER, points)


@pytest.fixture
def blocked():
    """A chapter whose ``n`` must be even, with no snap: 10 · 10^0.1 rounds to 13."""
    chapter = laws.scale_mod.register_chapter(
        laws.scale_mod.Chapter(
            id="_blocked",
            title="A throwaway chapter",
            notebook="book/_test/nothing.md",
            params={"n": laws.scale_mod.Int(1)},
            presets={"smoke": {"n": 2}, "default": {"n": 10}, "paper": {"n": 100}},
            checks=(lambda p: "parameter 'n' must be even" if p["n"] % 2 else None,),
        )
    )
    yield chapter.id
    laws.scale_mod._REGISTRY.pop(chapter.id)


def test_check_points_names_the_chapter_and_the_blocked_point(blocked):
    with pytest.raises(ValueError, match=r"'_blocked' at t = 0.1: parameter 'n' must be even"):
        laws.check_points(blocked, [0, 0.1, 0.2])


def _fake_ledger(t_or_paper, cpu):
    return {
        "cpu_seconds": cpu,
        "wall_seconds": cpu / 2,
        "peak_memory_mb": 100.0,
        "params": {"tag": t_or_paper},
    }


@pytest.fixture
def clock(monkeypatch):
    """``_run`` replaced: 2 × 10^t CPU seconds at the path's points, 20 at the paper preset; the
    calls and the threads each saw are recorded."""
    calls = []

    def run(chapter_id, scale, params, out, limit=None):
        calls.append((chapter_id, scale, params, os.environ.get("OMP_NUM_THREADS")))
        if scale == "paper":
            assert params is None
            return _fake_ledger("paper", 20.0)
        points = [0.0, 0.05, 0.1, 0.2, 0.3]
        t = next(p for p in points if laws.scale_mod.between(chapter_id, p) == params)
        return _fake_ledger(t, 2 * 10**t)

    monkeypatch.setattr(laws, "_run", run)
    monkeypatch.setattr(laws, "reference_seconds", lambda threads: 0.25 * threads)
    return calls


def test_measure_runs_every_point_and_fits_the_law(clock, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "7")
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    record = laws.measure(CHAPTER, (0.0, 0.1, 0.2), threads=1, progress=False)
    assert [c[:2] for c in clock] == [(CHAPTER, "default")] * 3
    assert {c[3] for c in clock} == {"1"}
    assert os.environ["OMP_NUM_THREADS"] == "7" and "MKL_NUM_THREADS" not in os.environ
    assert [r["t"] for r in record["runs"]] == [0.0, 0.1, 0.2]
    assert [r["cpu_seconds"] for r in record["runs"]] == pytest.approx(
        [2, 2 * 10**0.1, 2 * 10**0.2]
    )
    assert record["law"]["paper_seconds"] == pytest.approx(20)
    assert record["paper"] is None and record["chapter"] == CHAPTER and record["threads"] == 1
    assert record["machine"] and record["measured"] and record["paper_under"] is None


def test_measure_records_the_commit_the_runs_started_from(clock, monkeypatch):
    monkeypatch.setattr(laws, "_commit", lambda root: f"after {len(clock)} run(s)")
    assert laws.measure(CHAPTER, progress=False)["commit"] == "after 0 run(s)"


def test_measure_runs_the_paper_preset_only_when_the_law_allows(clock):
    record = laws.measure(CHAPTER, (0.0, 0.1, 0.2), paper_under=19.9, progress=False)
    assert record["paper"] is None and len(clock) == 3
    record = laws.measure(CHAPTER, (0.0, 0.1, 0.2), paper_under=20.1, progress=False)
    assert record["paper"]["t"] == "paper" and record["paper"]["cpu_seconds"] == 20.0
    assert clock[-1][1] == "paper" and record["paper_under"] == 20.1


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"threads": 0}, "'threads'"),
        ({"threads": True}, "'threads'"),
        ({"paper_under": 0}, "'paper_under'"),
        ({"points": (0, 0.1)}, "'points'"),
    ],
)
def test_measure_names_a_bad_parameter_before_running(clock, kwargs, message):
    with pytest.raises(ValueError, match=message):
        laws.measure(CHAPTER, **{"points": (0, 0.1, 0.2), **kwargs}, progress=False)
    assert clock == []


def test_measure_refuses_a_dry_run(clock, monkeypatch):
    monkeypatch.setenv(ledger_mod.DRY_RUN_ENV, "1")
    with pytest.raises(ValueError, match=ledger_mod.DRY_RUN_ENV):
        laws.measure(CHAPTER, progress=False)
    assert clock == []


def _stopped(tmp_path, ename, ledger=True):
    path = tmp_path / "x.json"
    if ledger:
        path.write_text(json.dumps(_fake_ledger(0, 5.0)))
    return cli.ChapterExecutionError("stopped", tmp_path / "x.ipynb", path, ename)


def test_run_keeps_the_time_of_a_run_whose_claim_failed(tmp_path, monkeypatch):
    def execute(*args, **kwargs):
        raise _stopped(tmp_path, "ClaimFailed")

    monkeypatch.setattr(cli, "execute_chapter", execute)
    assert laws._run(CHAPTER, "default", {}, tmp_path)["cpu_seconds"] == 5.0


@pytest.mark.parametrize("ename, ledger", [("ValueError", True), ("ClaimFailed", False)])
def test_run_raises_on_any_other_stop(tmp_path, monkeypatch, ename, ledger):
    def execute(*args, **kwargs):
        raise _stopped(tmp_path, ename, ledger)

    monkeypatch.setattr(cli, "execute_chapter", execute)
    with pytest.raises(cli.ChapterExecutionError):
        laws._run(CHAPTER, "default", {}, tmp_path)


def test_run_runs_the_chapter_on_the_cpu(tmp_path, monkeypatch):
    seen = {}

    def execute(chapter_id, scale, out, kernel=None, **kwargs):
        seen.update(chapter=chapter_id, scale=scale, out=out, **kwargs)
        assert kernel is not None and not kernel.has_kernel
        (tmp_path / "led.json").write_text(json.dumps(_fake_ledger(0, 3.0)))
        return tmp_path / "nb.ipynb", tmp_path / "led.json"

    monkeypatch.setattr(cli, "execute_chapter", execute)
    assert laws._run(CHAPTER, "paper", None, tmp_path / "o")["cpu_seconds"] == 3.0
    assert seen == {
        "chapter": CHAPTER,
        "scale": "paper",
        "out": tmp_path / "o",
        "device": "cpu",
        "params": None,
        "progress": False,
    }


def test_save_and_load(clock, tmp_path):
    record = laws.measure(CHAPTER, progress=False)
    path = laws.save(record, tmp_path / "laws")
    assert path == tmp_path / "laws" / f"{CHAPTER}.json"
    assert [p.name for p in (tmp_path / "laws").iterdir()] == [path.name]
    assert laws.load(tmp_path / "laws") == {CHAPTER: json.loads(path.read_text())}
    assert laws.load(tmp_path / "nowhere") == {}


def _record(chapter, cpu=(10.0, 20.0, 40.0), paper=None):
    runs = [{"t": t, "cpu_seconds": c} for t, c in zip((0.0, 0.1, 0.2), cpu)]
    return {
        "chapter": chapter,
        "measured": "2026-11-28",
        "commit": "abc1234",
        "runs": runs,
        "law": laws.fit([r["t"] for r in runs], cpu),
        "paper": paper,
    }


def test_law_table_rows():
    records = {
        "b": _record("b"),
        "a": _record("a", paper={"cpu_seconds": 10240.0 / 2}),
    }
    table = laws.law_table(records, {}, ["a", "c", "b"]).splitlines()
    # 10, 20, 40 at t = 0, 0.1, 0.2: 10 × 1024^t, 10240 s at paper scale
    assert len(table) == 4 and table[3].startswith("| b |")
    assert table[2] == (
        "| a | 0, 0.1, 0.2 | 10, 20, 40 | 10 × 1024^t | 2.8 h | 1.00 "
        "| 1.4 h (law / measured 2.00) | – | 2026-11-28, abc1234 |"
    )
    assert table[3].endswith("| 2.8 h | 1.00 | – | – | 2026-11-28, abc1234 |")


def test_law_table_says_where_a_paper_run_was_stopped():
    records = {"a": _record("a", paper={"t": "paper", "stopped_after": 1200.0})}
    row = laws.law_table(records, {}, ["a"]).splitlines()[2]
    assert "| stopped after 1200 s wall |" in row


def test_law_text():
    assert laws.law_text(laws.fit([0, 0.5, 1], [3, 3 * 2**0.5, 6])) == "3 × 2^t"
    assert laws.law_text({"a": math.log(123.4), "factor": 2.5e6}) == "123 × 2.50e+06^t"
    assert laws.law_text({"a": math.log(16.34), "factor": 999_999.4}) == "16.3 × 999999^t"


def test_without_law_says_why(blocked):
    text = laws.without_law({CHAPTER: {}}, [CHAPTER, blocked, "contrastive-setting"])
    lines = text.splitlines()
    assert len(lines) == 2
    assert lines[0] == "- `_blocked`: the path is blocked: chapter '_blocked' at t = 0.05: " + (
        "parameter 'n' must be even"
    )
    command = "`python -m companions law contrastive-setting`"
    assert lines[1] == f"- `contrastive-setting`: no record made yet ({command})"
    assert laws.without_law({CHAPTER: {}}, [CHAPTER]) == ""


def test_law_figure_draws_each_chapter():
    records = {"a": _record("a", paper={"cpu_seconds": 500.0}), "b": _record("b")}
    fig = laws.law_figure(records, ["a", "b", "c"])
    ax = fig.axes[0]
    lines = ax.get_lines()
    # per chapter: the runs, the fitted stretch, the dashed extrapolation; a star for a's paper run
    assert len(lines) == 7 and ax.get_yscale() == "log"
    assert lines[2].get_linestyle() == "--" and lines[2].get_xdata()[-1] == pytest.approx(1)
    assert lines[3].get_marker() == "*" and list(lines[3].get_ydata()) == [500.0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["a", "b"]


def test_law_figure_marks_a_stopped_paper_run():
    fig = laws.law_figure({"a": _record("a", paper={"stopped_after": 1200.0})}, ["a"])
    last = fig.axes[0].get_lines()[-1]
    assert last.get_marker() == "^" and list(last.get_ydata()) == [1200.0]


def test_measure_records_a_paper_run_stopped_at_its_limit(clock, monkeypatch):
    limits = []

    def run(chapter_id, scale, params, out, limit=None):
        limits.append(limit)
        return None if scale == "paper" else _fake_ledger(0, 2.0 + len(limits))

    monkeypatch.setattr(laws, "_run", run)
    record = laws.measure(CHAPTER, paper_under=1000, progress=False)  # 3, 4, 5 s: ~500 s by law
    assert limits == [None, None, None, laws.PAPER_LIMIT * 1000]
    assert record["paper"] == {"t": "paper", "stopped_after": laws.PAPER_LIMIT * 1000}


def test_run_stops_a_run_past_its_limit(tmp_path, monkeypatch):
    import time

    from jupyter_client import KernelManager

    interrupted = []
    monkeypatch.setattr(KernelManager, "interrupt_kernel", lambda self: interrupted.append(self))

    def execute(chapter_id, scale, out, kernel=None, **kwargs):
        time.sleep(0.3)  # the timer (0.05 s) fires meanwhile
        assert interrupted == [kernel]
        raise cli.ChapterExecutionError(
            "stopped", out / "x.ipynb", out / "x.json", "KeyboardInterrupt"
        )

    monkeypatch.setattr(cli, "execute_chapter", execute)
    assert laws._run(CHAPTER, "paper", None, tmp_path, limit=0.05) is None


def test_run_without_a_limit_treats_an_interrupt_as_a_stop(tmp_path, monkeypatch):
    def execute(chapter_id, scale, out, **kwargs):
        raise cli.ChapterExecutionError(
            "stopped", out / "x.ipynb", out / "x.json", "KeyboardInterrupt"
        )

    monkeypatch.setattr(cli, "execute_chapter", execute)
    with pytest.raises(cli.ChapterExecutionError):
        laws._run(CHAPTER, "paper", None, tmp_path)


def test_cli_law_reports_and_saves(clock, tmp_path, capsys):
    code = cli.main(["law", CHAPTER, "--at", "0", "0.1", "0.2", "--quiet", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0 and (tmp_path / f"{CHAPTER}.json").is_file()
    assert "t = 0.0: 2.0 CPU s" in out and "at paper scale 20 CPU s" in out


def test_cli_law_names_a_bad_chapter(tmp_path, capsys):
    assert cli.main(["law", "no-such-chapter", "--out", str(tmp_path)]) == 2
    assert "'no-such-chapter' is not known" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_commit_names_the_commit_and_a_changed_tree(tmp_path):
    import subprocess

    def git(*args):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    assert laws._commit(tmp_path) is None  # not a repository
    git("init", "-q")
    (tmp_path / "a.txt").write_text("1")
    git("add", "a.txt")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "a")
    head = laws._commit(tmp_path)
    assert len(head) == 7 and "dirty" not in head
    (tmp_path / "a.txt").write_text("2")
    assert laws._commit(tmp_path) == head + "-dirty"


def test_law_summary_counts_what_the_records_say():
    records = {
        "b": _record("b", cpu=(10.0, 11.0, 12.0), paper={"stopped_after": 600.0}),
        "a": _record("a", paper={"cpu_seconds": 5120.0}),
        "c": _record("c"),
    }
    # a, c: exact laws (held out 1.00); b: 12.1 / 12 held out, its law about 25 s at paper scale
    b = records["b"]["law"]
    assert b["held_out"] == pytest.approx(12.1 / 12) and 20 < b["paper_seconds"] < 30
    assert laws.law_summary(records) == (
        "3 chapter(s) have a record. Held out, the law fitted to the smaller sizes predicts the "
        "largest within 1.00–1.01 times its measured time. The law was too low in 1 of the 2 "
        "paper run(s) made. At paper scale, law / measured: `a` "
        f"2.00. Paper runs stopped at their limit: `b` (still running after "
        f"{600 / b['paper_seconds']:.1f} times the law's time)."
    )
    assert laws.law_summary({}) == "No record yet."
    records["a"]["paper_under"] = records["b"]["paper_under"] = 300
    assert (
        "time. A paper run was made where the law predicted at most 300 CPU s (`--paper-under`), "
        "and stopped if still running after 2 times that. The law was too low"
    ) in laws.law_summary(records)
    records["c"]["paper_under"] = 12.5
    assert "at most 12.5 or 300 CPU s" in laws.law_summary(records)
    low = {"a": _record("a", paper={"cpu_seconds": 10240.5})}  # the law says 10240 s
    assert "too low in 1 of the 1 paper run(s)" in laws.law_summary(low)
    only = laws.law_summary({"c": _record("c")})
    assert only.endswith("within 1.00–1.00 times its measured time.")


def test_law_figure_keeps_the_chapters_of_a_doubled_book_apart():
    names = [f"c{i}" for i in range(50)]  # twice the book's 25 chapters
    fig = laws.law_figure({n: _record(n) for n in names}, names)
    runs = [line for line in fig.axes[0].get_lines() if line.get_linestyle() == "None"]
    assert len(runs) == 50
    assert len({(line.get_marker(), line.get_color()) for line in runs}) == 50


def test_measure_paper_remakes_only_the_paper_run(clock, monkeypatch):
    monkeypatch.setattr(laws, "_commit", lambda root: "abc1234")
    first = laws.measure(CHAPTER, (0.0, 0.1, 0.2), paper_under=19.9, progress=False)
    assert first["paper"] is None and len(clock) == 3  # the law says 20 s
    again = laws.measure_paper(first, 20.1)
    assert [c[1] for c in clock] == ["default"] * 3 + ["paper"]
    assert clock[-1][3] == str(first["threads"])
    assert again["paper"]["cpu_seconds"] == 20.0 and again["paper_under"] == 20.1
    assert again["paper"]["commit"] == "abc1234" and again["paper"]["measured"]
    assert {k: v for k, v in again.items() if k not in ("paper", "paper_under")} == {
        k: v for k, v in first.items() if k not in ("paper", "paper_under")
    }


@pytest.mark.parametrize(
    "paper_under, message",
    [
        (19.9, "'paper_under' = 19.9 is not allowed for 'looped-gd': its law predicts 20 CPU s"),
        (None, "'paper_under' = None"),
        (0, "'paper_under' = 0"),
    ],
)
def test_measure_paper_refuses_before_running(clock, paper_under, message):
    record = laws.measure(CHAPTER, (0.0, 0.1, 0.2), progress=False)
    with pytest.raises(ValueError, match=re.escape(message)):
        laws.measure_paper(record, paper_under)
    assert len(clock) == 3


def test_cli_law_paper_only(clock, tmp_path, capsys):
    args = ["law", CHAPTER, "--paper-only", "--paper-under", "30", "--out", str(tmp_path)]
    assert cli.main(args) == 2
    assert f"chapter '{CHAPTER}' has no record in {tmp_path}" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == [] and clock == []
    assert cli.main(["law", CHAPTER, "--at", "0", "0.1", "0.2", "--out", str(tmp_path)]) == 0
    assert cli.main([*args, "--at", "0", "0.1"]) == 2
    assert "takes no --at or --threads" in capsys.readouterr().err
    assert cli.main(args) == 0
    assert "paper run: 20.0 CPU s" in capsys.readouterr().out
    saved = laws.load(tmp_path)[CHAPTER]
    assert saved["paper_under"] == 30 and saved["paper"]["cpu_seconds"] == 20.0
    assert [c[1] for c in clock] == ["default"] * 3 + ["paper"]


def test_law_table_gives_a_later_paper_runs_own_date_and_commit():
    same = _record("a", paper={"cpu_seconds": 10.0, "measured": "2026-11-28", "commit": "abc1234"})
    later = _record("b", paper={"cpu_seconds": 10.0, "measured": "2026-12-01", "commit": "def5678"})
    table = laws.law_table({"a": same, "b": later}, {}, ["a", "b"]).splitlines()
    assert table[2].endswith("| 2026-11-28, abc1234 |")
    assert table[3].endswith("| 2026-11-28, abc1234; paper run 2026-12-01, def5678 |")


@pytest.mark.parametrize(
    "paper_under, runs", [(None, False), (19.999, False), (20.0, True), (20.001, True)]
)
def test_the_paper_run_is_made_exactly_where_the_law_allows_it(paper_under, runs):
    assert laws._law_allows_paper({"paper_seconds": 20.0}, paper_under) is runs


def test_load_one_reads_one_record(tmp_path):
    laws.save(_record("a"), tmp_path)
    laws.save(_record("b"), tmp_path)
    assert laws.load_one("b", tmp_path) == laws.load(tmp_path)["b"]
    assert laws.load_one("c", tmp_path) is None
    assert laws.load_one("a", tmp_path / "nowhere") is None


def test_range_comparison_pairs_the_paper_runs_of_both_ranges():
    # both laws say 10240 s at paper scale (10 × 1024^t); the paper runs took 20480 s and 10240 s
    narrow = {
        "a": _record("a", paper={"cpu_seconds": 20480.0}),
        "b": _record("b", paper={"t": "paper", "stopped_after": 600.0}),
        "c": _record("c", paper={"cpu_seconds": 5.0}),
    }
    wide = {
        "a": _record("a", paper={"cpu_seconds": 10240.0}),
        "b": _record("b", paper={"cpu_seconds": 5.0}),
    }
    wide["a"]["runs"][-1]["t"] = 0.5
    assert laws.range_comparison(narrow, wide) == (
        "At paper scale, law / measured, fitted over the narrow and the wide range: "
        "`a` 0.50 (t ≤ 0.2) → 1.00 (t ≤ 0.5); "
        "`b` below 17.07, stopped (t ≤ 0.2) → 2048.00 (t ≤ 0.2)."
    )
    assert laws.range_comparison(narrow, {}).startswith("No chapter has a paper run")
    assert laws.range_comparison({"c": _record("c")}, {"c": _record("c")}).startswith("No chapter")


def test_the_reference_workload_runs_with_the_runs_threads(monkeypatch):
    seen = []
    real = laws.subprocess.run

    def run(*args, **kwargs):
        seen.append(os.environ.get("OMP_NUM_THREADS"))
        return real(*args, **kwargs)

    monkeypatch.setattr(laws.subprocess, "run", run)
    seconds = laws.reference_seconds(1, steps=5)
    assert seen == ["1"] and 0 < seconds < 60


def test_records_keep_the_reference_seconds(clock, monkeypatch):
    monkeypatch.setattr(laws, "_commit", lambda root: "abc1234")
    record = laws.measure(CHAPTER, (0.0, 0.1, 0.2), threads=2, progress=False)
    assert record["reference_seconds"] == 0.5
    again = laws.measure_paper({**record, "threads": 1}, 30)
    assert again["reference_seconds"] == 0.5 and again["paper"]["reference_seconds"] == 0.25
    row = laws.law_table({CHAPTER: {**again, "measured": "2026-11-27"}}, {}, [CHAPTER])
    assert row.splitlines()[2].endswith(
        f"| 2026-11-27, abc1234, reference 0.50 s; paper run {again['paper']['measured']}, "
        "abc1234, reference 0.25 s |"
    )
