"""Paper-scale ledgers: committed data, made outside CI. Every committed one is well-formed; a
stale one is detected from its sources; the book shows them beside the default run."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

import companions
from companions import ledger as L
from companions.book import paper

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = sorted((ROOT / L.PAPER_DIR).glob("*.json"))


@pytest.mark.parametrize("path", COMMITTED, ids=[p.stem for p in COMMITTED])
def test_every_committed_paper_ledger_is_well_formed(path):
    assert paper.problems(path) == []


def test_the_list_of_chapters_not_run_names_declared_chapters_only():
    path = ROOT / L.PAPER_NOT_RUN
    if not path.is_file():
        pytest.skip("no list of chapters whose paper run was not made")
    not_run = json.loads(path.read_text())
    assert set(not_run) <= set(companions.chapters()), "an unknown chapter in the list"
    assert all(isinstance(v, str) and v.strip() for v in not_run.values())
    with_ledger = {p.stem for p in COMMITTED}
    assert not set(not_run) & with_ledger, "a chapter listed as not run has a paper ledger"


def test_every_recorded_finding_matches_its_paper_ledger():
    """A reason why a status changes between scales names a committed paper ledger's claim, with
    the status that ledger gives it, and a different status at the default scale."""
    path = ROOT / L.PAPER_FINDINGS
    if not path.is_file():
        pytest.skip("no findings recorded")
    findings = json.loads(path.read_text())
    for chapter_id, claims in findings.items():
        paper_led = L.paper_ledger(chapter_id, ROOT)
        assert paper_led is not None, f"{chapter_id}: a finding without a paper ledger"
        at_paper = {c["id"]: c["status"] for c in L.counted(paper_led["claims"])}
        for claim_id, entry in claims.items():
            assert set(entry) == {"default", "paper", "why"}, (chapter_id, claim_id)
            assert entry["paper"] == at_paper.get(claim_id), (chapter_id, claim_id)
            assert entry["default"] in L.STATUSES and entry["default"] != entry["paper"]
            assert entry["why"].strip(), (chapter_id, claim_id)


def test_the_summary_gives_a_change_its_reason_only_for_that_change(tmp_path):
    root = tmp_path
    (root / L.PAPER_FINDINGS).parent.mkdir(parents=True)
    (root / L.PAPER_FINDINGS).write_text(
        json.dumps({"ch": {"a": {"default": "inconclusive", "paper": "reproduced", "why": "w"}}})
    )
    assert L.scale_finding("ch", "a", "inconclusive", "reproduced", root) == "w"
    assert L.scale_finding("ch", "a", "holds", "reproduced", root) is None
    assert L.scale_finding("ch", "b", "inconclusive", "reproduced", root) is None
    assert L.scale_finding("other", "a", "inconclusive", "reproduced", root) is None


def _repo(tmp_path: Path) -> Path:
    """A copy of the files a chapter's fingerprint reads, in a git repository of its own."""
    root = tmp_path / "repo"
    for rel in L.chapter_sources("icl-scale-parity", ROOT):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / rel, root / rel)
    (root / "_toc.yml").write_text("root: x\n")
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "x"]):
        subprocess.run(
            ["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=root, check=True
        )
    return root


def _run_ledger(tmp_path: Path, scale: str = "paper") -> Path:
    led = {
        "chapter": "icl-scale-parity",
        "scale": scale,
        "seed": 0,
        "device": "cpu",
        "params": {},
        "wall_seconds": 120.0,
        "cpu_seconds": 200.0,
        "peak_memory_mb": 900.0,
        "python": "/somewhere/python",
        "claims": [
            {"id": c.id, "status": "reproduced", "registered": True, "source": "s"}
            for c in companions.chapters()["icl-scale-parity"].claims
        ],
    }
    path = tmp_path / "run.json"
    path.write_text(json.dumps(led))
    return path


def test_a_recorded_paper_ledger_has_its_provenance_and_goes_stale_on_a_change(tmp_path):
    root = _repo(tmp_path)
    before = L.fingerprint("icl-scale-parity", root)
    written = paper.record("icl-scale-parity", _run_ledger(tmp_path), before, root=root)
    led = json.loads(written.read_text())
    prov = led["provenance"]
    assert set(paper.PROVENANCE_KEYS) <= set(prov) and prov["clean"] is True
    assert prov["wall_seconds"] == 120.0 and "python" not in led
    assert L.stale_sources(led, root) == []
    assert paper.problems(written) == []
    # an edit of the topic's code makes it stale, naming the file
    code = root / "lib" / "companions" / "icl_scale" / "parity.py"
    code.write_text(code.read_text() + "\n# changed\n")
    assert L.stale_sources(led, root) == ["lib/companions/icl_scale/parity.py"]


def test_record_refuses_what_is_not_a_finished_paper_run(tmp_path):
    root = _repo(tmp_path)
    before = L.fingerprint("icl-scale-parity", root)
    with pytest.raises(ValueError, match="not a paper-scale ledger"):
        paper.record("icl-scale-parity", _run_ledger(tmp_path, "default"), before, root=root)
    changed = dict(before, **{"book/icl-scale/parity.md": "0" * 64})
    with pytest.raises(ValueError, match="changed during the run"):
        paper.record("icl-scale-parity", _run_ledger(tmp_path), changed, root=root)
    assert not (root / L.PAPER_DIR).exists()


def test_problems_name_what_is_missing(tmp_path):
    led = json.loads(_run_ledger(tmp_path).read_text())
    path = tmp_path / "icl-scale-parity.json"
    path.write_text(json.dumps(led))
    found = paper.problems(path)
    assert any("provenance lacks 'commit'" in p for p in found)
    path.write_text(json.dumps({**led, "scale": "default"}))
    assert any("not 'paper'" in p for p in paper.problems(path))


def test_scale_changes_and_the_ladder():
    default = [
        {"id": "a", "status": "inconclusive", "registered": True},
        {"id": "b", "status": "holds", "registered": True},
        {"id": "c", "status": "reproduced", "registered": True},
    ]
    at_paper = [
        {"id": "a", "status": "reproduced", "registered": True},
        {"id": "b", "status": "holds", "registered": True},
        {"id": "c", "status": "differs", "registered": True},
    ]
    assert L.scale_changes(default, at_paper) == [
        {"id": "a", "default": "inconclusive", "paper": "reproduced"},
        {"id": "c", "default": "reproduced", "paper": "differs"},
    ]


def test_keep_needs_the_paper_preset_as_it_is(capsys):
    from companions.book import cli

    assert cli.main(["run", "looped-gd", "--scale", "smoke", "--keep"]) == 2
    assert "--keep records a run of the chapter's paper preset" in capsys.readouterr().err
    assert cli.main(["run", "looped-gd", "--scale", "paper", "-p", "d", "5", "--keep"]) == 2
    assert cli.main(["run", "looped-gd", "--scale", "paper", "--seed", "1", "--keep"]) == 2
