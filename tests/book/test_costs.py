"""The page "What each scale costs" (companions.book.costs) and the parallel build
(companions.book.build): tables read from ledgers, budgets flagged, the build's plumbing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from companions.book import build, costs
from tests.book.test_chapters import CHAPTER_IDS, ROOT


def ledger(chapter, scale, wall, statuses, cpu=None, memory=None):
    return {
        "chapter": chapter,
        "scale": scale,
        "wall_seconds": wall,
        "cpu_seconds": cpu,
        "peak_memory_mb": memory,
        "threads": 1,
        "claims": [
            {"id": f"c{i}", "source": "Theorem 1", "kind": "prediction", "status": s}
            for i, s in enumerate(statuses)
        ],
    }


SMOKE = costs.by_chapter(
    [
        ledger("a", "smoke", 59.0, ["holds", "inconclusive", "differs"], cpu=50.0, memory=400.0),
        ledger("b", "smoke", 61.0, ["holds"]),
    ]
)
DEFAULT = costs.by_chapter(
    [
        ledger("a", "default", 301.0, ["holds", "reproduced", "differs", "holds"], memory=900.5),
        ledger("b", "default", 299.0, ["holds"]),
    ]
)


def test_budgets_are_flagged_just_above_and_not_at_or_below():
    assert costs.over_budget(SMOKE, DEFAULT) == ["b (smoke): 61 s", "a (default): 301 s"]
    table = costs.times_table(SMOKE, DEFAULT, ["a", "b"])
    row_a, row_b = table.splitlines()[2:]
    assert row_a.split("|")[2].strip() == "59" and "⚠" in row_a.split("|")[4]
    assert "⚠" in row_b.split("|")[2] and "⚠" not in row_b.split("|")[4]
    assert row_a.split("|")[3].strip() == "50" and row_a.split("|")[7].strip() == "900"


def test_the_build_column_is_named_and_budgeted_by_the_builds_scale():
    at_smoke = {c: dict(led, scale="smoke") for c, led in DEFAULT.items()}
    table = costs.times_table(SMOKE, at_smoke, ["a", "b"])
    assert "| smoke wall s | smoke CPU s | smoke wall s |" in table.splitlines()[0]
    assert "⚠" in table.splitlines()[3].split("|")[4]  # 299 s is over the smoke budget
    assert costs.build_scale({**DEFAULT, "c": {"scale": "smoke"}}) == "mixed"


def test_a_chapter_missing_at_one_scale_shows_a_dash():
    table = costs.times_table({}, DEFAULT, ["a"])
    assert table.splitlines()[2].split("|")[2].strip() == "–"


def test_status_pairs_follow_each_claim_across_scales():
    pairs = costs.status_pairs(SMOKE, DEFAULT)
    a = {p["id"]: (p["smoke"], p["default"]) for p in pairs if p["chapter"] == "a"}
    assert a == {
        "c0": ("holds", "holds"),
        "c1": ("inconclusive", "reproduced"),
        "c2": ("differs", "differs"),
        "c3": (None, "holds"),
    }
    summary = costs.survival_summary(pairs).splitlines()
    assert summary[2] == "| a | 4 | 2 | 1 | 0 | 1 |"
    assert summary[3] == "| b | 1 | 1 | 0 | 0 | 0 |"
    changes = costs.changes_table(pairs).splitlines()[2:]
    assert [row.split("|")[2].strip() for row in changes] == ["c1", "c3"]
    assert costs.changes_table(costs.status_pairs(SMOKE, SMOKE)).startswith("Every claim")


def test_threads_share_the_cores_out():
    assert [build.threads_per_kernel(j, cores=4) for j in (1, 2, 3, 4, 8)] == [4, 2, 1, 1, 1]
    assert build.threads_per_kernel(0, cores=2) == 2


def test_the_build_lists_the_chapters_in_the_books_order():
    assert build.chapter_ids(ROOT) == CHAPTER_IDS


def test_chapters_start_longest_smoke_run_first(tmp_path):
    paths = [Path(f"{c}.md") for c in "abcde"]
    for chapter_id, seconds, scale in [
        ("a", 3.0, "smoke"),
        ("b", 9.5, "smoke"),
        ("d", 40, "default"),
    ]:
        (tmp_path / f"{chapter_id}.json").write_text(
            json.dumps({"scale": scale, "wall_seconds": seconds})
        )
    (tmp_path / "e.json").write_text("{not json")
    ids = list("abcde")
    # no readable smoke ledger (c: none, d: another scale, e: broken) first, in the book's order
    assert [p.stem for p in build.longest_first(paths, ids, tmp_path)] == list("cdeba")
    assert build.longest_first(paths, ids, None) == paths
    assert all(p.suffix == ".md" and p.is_file() for p in build.chapter_sources(ROOT))


def test_measured_default_times_order_the_chapters_they_list(tmp_path):
    paths = [Path(f"{c}.md") for c in "abcde"]
    ids = list("abcde")
    (tmp_path / "a.json").write_text(json.dumps({"scale": "smoke", "wall_seconds": 3.0}))
    (tmp_path / "b.json").write_text(json.dumps({"scale": "smoke", "wall_seconds": 50.0}))
    measured = {"c": 10, "d": 300, "e": 10}
    # unlisted first (b before a by smoke time), then the listed, longest first, ties in book order
    order = build.longest_first(paths, ids, tmp_path, measured)
    assert [p.stem for p in order] == list("badce")
    assert [p.stem for p in build.longest_first(paths, ids, None, measured)] == list("abdce")


def test_measured_default_times_name_real_chapters():
    assert set(build.DEFAULT_SECONDS) <= set(CHAPTER_IDS)
    assert all(seconds > 0 for seconds in build.DEFAULT_SECONDS.values())


def test_the_cached_config_only_changes_how_notebooks_execute(tmp_path):
    for name in ("_config.yml", "_toc.yml"):
        (tmp_path / name).write_text((ROOT / name).read_text())
    copy = yaml.safe_load(build.cached_config(tmp_path).read_text())
    original = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert copy["execute"].pop("execute_notebooks") == "cache"
    assert copy["execute"].pop("cache") == str((tmp_path / build.CACHE).resolve())
    original["execute"].pop("execute_notebooks")
    assert copy == original


def test_the_build_refuses_zero_jobs(tmp_path):
    with pytest.raises(ValueError, match="'jobs'"):
        build.build(tmp_path, 0, [])


def test_paper_dry_runs_are_read_apart_and_extrapolated(tmp_path):
    import json

    dry = ledger("a", "paper", 20.0, ["fails"], cpu=10.0, memory=3000.0)
    loops = [dict(desc="train", planned=1000, run=1, seconds=2.0, cpu_seconds=1.0, parent=None)]
    dry["dry_run"] = {"steps": 1, "loops": loops}
    (tmp_path / "a.json").write_text(json.dumps(dry))
    (tmp_path / "b.json").write_text(json.dumps(ledger("b", "paper", 5.0, ["holds"])))
    found = costs.dry_runs(tmp_path)
    assert list(found) == ["a"]  # b is not a dry run: not shown as one
    table = costs.paper_dry_run_table(found, ["a", "b"])
    row = table.splitlines()[-1]
    # 9 s outside the loop + 1000 steps x 1 s = 1009 CPU s
    assert row == "| a | every cell | 1 | 1 | 20 | 10 | 3000 | 1009 s |"
    found["a"]["dry_run"]["loops"][0]["planned"] = 10_000  # 9 + 10000 s = 2.8 h
    assert costs.paper_dry_run_table(found, ["a"]).endswith("| 2.8 h |")
    # a dry run that ended after its first loop: the cells after it never ran, so a lower bound
    found["a"]["dry_run"].update(ends_after_loops=1, ended=True)
    row = costs.paper_dry_run_table(found, ["a"]).splitlines()[-1]
    assert row == "| a | to the end of loop 1 (train) | 1 | 1 | 20 | 10 | 3000 | ≥ 2.8 h |"
    found["a"]["dry_run"]["ended"] = False  # told to end after a loop, but had none: every cell
    assert "| every cell |" in costs.paper_dry_run_table(found, ["a"])
    # the chapters without one are listed, with the reason where the suite leaves them out
    gaps = costs.without_dry_run(found, ["a", "b", "gradient-framework"])
    assert gaps.startswith("Not dry-run at the paper scale in this build: 2 of 3 chapters.")
    assert "- `b`: no dry-run ledger found in this build" in gaps
    assert f"- `gradient-framework`: {costs.NOT_IN_SUITE['gradient-framework']}" in gaps
    assert costs.without_dry_run(found, ["a"]) == ""
    # the smoke and default tables read ledger.load, which leaves the dry run out
    assert list(costs.by_chapter(costs.ledger_mod.load(tmp_path))) == ["b"]


def _with_loops(led, loops):
    return {**led, "loops": loops}


def test_the_first_step_check_sets_each_runs_estimate_beside_its_measured_time():
    # 100 CPU s in all, 80 in a loop of 10 steps whose first took 12 s: 20 + 10 x 12 = 140
    loop = dict(planned=10, run=10, cpu_seconds=80.0, first_cpu_seconds=12.0, parent=None)
    smoke = {"a": _with_loops(ledger("a", "smoke", 90.0, [], cpu=100.0), [loop])}
    # at default: 200 CPU s, a loop of 4 steps, 40 s in all, first 10 s: exact, 20 % in loops
    slow = dict(planned=4, run=4, cpu_seconds=40.0, first_cpu_seconds=10.0, parent=None)
    default = {
        "a": _with_loops(ledger("a", "default", 150.0, [], cpu=200.0), [slow]),
        "b": ledger("b", "default", 5.0, [], cpu=5.0),  # no loops recorded: left out
    }
    checks = costs.first_step_checks(smoke, default, ["a", "b"])
    assert [(c["chapter"], c["scale"]) for c in checks] == [("a", "smoke"), ("a", "default")]
    assert [c["estimate"] for c in checks] == pytest.approx([140.0, 200.0])
    assert [c["loop_share"] for c in checks] == pytest.approx([0.8, 0.2])
    rows = costs.first_step_table(checks).splitlines()
    assert rows[2] == "| a | smoke | 100 | 80 % | 140 | 1.40 |"
    assert rows[3] == "| a | default | 200 | 20 % | 200 | 1.00 |"
    # the default run spends too little of its time in loops to say anything: left out
    summary = costs.first_step_summary(checks)
    assert summary.startswith("At smoke scale, over the 1 run(s) whose tracked loops took at least")
    assert "from 1.40 to 1.40 (median 1.40)" in summary and "default" not in summary
    assert costs.first_step_summary([]).startswith("No run of this build")
    fig = costs.first_step_figure(checks)
    assert fig.axes[0].get_xscale() == "log"


def test_the_loop_share_threshold_is_inclusive_and_the_median_is_over_the_runs_kept():
    def check(share, ratio):
        return {
            "chapter": "c",
            "scale": "smoke",
            "measured": 10.0,
            "loop_share": share,
            "estimate": 10.0 * ratio,
        }

    checks = [
        check(costs.LOOP_SHARE_MIN, 1.2),
        check(0.9, 2.0),
        check(0.99, 1.1),
        check(costs.LOOP_SHARE_MIN - 0.01, 9.0),
    ]
    assert "over the 3 run(s)" in costs.first_step_summary(checks)
    assert "from 1.10 to 2.00 (median 1.20)" in costs.first_step_summary(checks)
