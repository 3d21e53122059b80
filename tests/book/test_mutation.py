"""The mutation-testing command's bookkeeping (it never runs mutmut here: that is not CI's job)."""

from __future__ import annotations

import json

import pytest

from companions.book import mutation as M


def test_equivalents_file_is_parsed_and_checked(tmp_path):
    path = tmp_path / "eq.txt"
    path.write_text("# comment\n\na.x_f__mutmut_1: same value: always\n")
    assert M.read_equivalents(path) == {"a.x_f__mutmut_1": "same value: always"}
    path.write_text("a.x_f__mutmut_1\n")
    with pytest.raises(ValueError, match="eq.txt:1: expected 'mutant-name: reason'"):
        M.read_equivalents(path)
    assert M.read_equivalents(tmp_path / "none.txt") == {}


def test_score_leaves_equivalents_out_and_counts_timeouts_as_killed():
    statuses = {"k": "killed", "t": "timeout", "s": "survived", "e": "survived", "n": "no tests"}
    counts = M.score(statuses, {"e": "why"})
    assert (counts["mutants"], counts["killed"], counts["equivalent"], counts["surviving"]) == (
        5,
        2,
        1,
        2,
    )
    assert counts["score"] == 50.0 and counts["surviving_names"] == ["n", "s"]
    again = M.rescore(counts, {"s": "why", "n": "why"})
    assert again["score"] == pytest.approx(round(100 * 2 / 3, 1))
    assert again["equivalent_names"] == ["n", "s"] and again["surviving_names"] == ["e"]


def test_every_target_exists():
    root = M._root()
    for module, tests in M.TARGETS.items():
        assert (root / "lib" / "companions" / module).is_file(), module
        for test in tests:
            assert (root / test.split("::")[0]).exists(), test


def test_a_stopped_run_is_scored_over_the_mutants_it_tested():
    statuses = {
        "k": "killed",
        "s": "survived",
        "n": "not checked",
        "i": "check was interrupted by user",
    }
    tested, untested = M.tested_only(statuses)
    assert tested == {"k": "killed", "s": "survived"} and untested == 2
    assert M.score(tested, {})["score"] == 50.0
    assert M.tested_only({"k": "killed", "t": "timeout"}) == ({"k": "killed", "t": "timeout"}, 0)
    for bad in (0, -5.0):
        with pytest.raises(ValueError, match="parameter 'time_limit'"):
            M.run(["ledger.py"], time_limit=bad)


def test_the_repository_is_the_working_directorys(tmp_path, monkeypatch):
    # the editable install may point at another checkout: the staging folder, the results and
    # the copied package must come from the repository the command is run in
    (tmp_path / "_toc.yml").write_text("root: intro\n")
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    assert M._root() == tmp_path
    stage = M._stage_dir(M._root(), "looped/theory.py")
    assert stage == tmp_path / "build" / "mutation" / "looped.theory"


def test_a_run_stopped_at_its_time_limit_is_kept_whatever_its_exit(tmp_path):
    log = tmp_path / "mutmut.log"
    log.write_text("the last lines of mutmut's output")
    for code in (0, 1, -2, -9):  # a stopped run: interrupted (SIGINT) or killed (SIGKILL)
        M.check_exit("x.py", code, stopped=True, log_path=log)
    M.check_exit("x.py", 0, stopped=False, log_path=log)
    with pytest.raises(RuntimeError, match=r"(?s)mutmut failed on x.py \(exit 2\).*the last lines"):
        M.check_exit("x.py", 2, stopped=False, log_path=log)


def test_a_run_keeps_what_another_run_recorded_while_it_ran(tmp_path, monkeypatch):
    (tmp_path / "_toc.yml").write_text("root: intro\n")
    monkeypatch.chdir(tmp_path)
    results = tmp_path / "tests" / "mutation" / "results.json"
    results.parent.mkdir(parents=True)
    old = {"tests": [], "first": M.score({"a": "killed"}, {}), "when": "before"}
    old["last"] = old["first"]
    results.write_text(json.dumps({"other.py": old}))

    def mutate_module(root, module, tests, log, time_limit):
        # another run finishes while this one runs, and records its module
        recorded = json.loads(results.read_text())
        recorded["late.py"] = {**old, "when": "meanwhile"}
        results.write_text(json.dumps(recorded))
        return {"m.x_f__mutmut_1": {"status": "killed", "diff": ""}}

    monkeypatch.setattr(M, "mutate_module", mutate_module)
    monkeypatch.setattr(M, "write_report", lambda root, res: results.write_text(json.dumps(res)))
    assert M.run(["ledger.py"]) == 0
    kept = json.loads(results.read_text())
    assert sorted(kept) == ["late.py", "ledger.py", "other.py"]
    assert kept["late.py"]["when"] == "meanwhile" and kept["ledger.py"]["last"]["score"] == 100.0
