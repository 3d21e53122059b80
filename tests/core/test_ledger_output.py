"""companions.ledger: what a ledger records and writes, and the tables it shows."""

from __future__ import annotations

import json
import os
import sys
import types

import pytest

from companions import ledger as L


class _Cfg(dict):
    chapter = "_out-chapter"
    scale = "smoke"


@pytest.fixture
def led(tmp_path):
    return L.Ledger(_Cfg(), device="cpu", ledger_dir=tmp_path / "a" / "b")


def _claim(id, status, **extra):
    return {
        "id": id,
        "source": "Thm 1",
        "kind": "bound",
        "status": status,
        "expected": [0.5, None],
        "observed": 1.23456,
        "tolerance": None,
        "note": "n",
        **extra,
    }


def _rows(table: str) -> list[list[str]]:
    """The body rows of a Markdown table, as lists of cells."""
    lines = table.splitlines()[2:]
    return [[cell.strip() for cell in line.strip("|").split(" | ")] for line in lines]


def test_claims_table_has_one_row_per_claim_with_its_status():
    table = L.claims_table([_claim("x", "holds"), {**_claim("y", "fails"), "expected": None}])
    rows = _rows(table)
    assert [r[0] for r in rows] == ["x", "y"]
    assert ["**holds**" in r for r in rows] == [True, False]
    assert all("1.235" in r for r in rows)  # the observed value, in 4 significant digits


def test_claims_table_with_the_chapter_column_and_missing_fields():
    claims = [
        {**_claim("x", "holds", chapter="ch-1")},
        {k: v for k, v in _claim("y", "holds").items() if k != "note"},
    ]
    rows = _rows(L.claims_table(claims, chapter_column=True))
    assert [r[:2] for r in rows] == [["ch-1", "x"], ["", "y"]]


@pytest.mark.parametrize(
    "value, text",
    [
        (None, ""),
        (0.123456, "0.1235"),
        ([1.0, [2.5, None], "a"], "[1, [2.5, ], a]"),
        ([], "[]"),
        ("s", "s"),
        (3, "3"),
        (True, "True"),
    ],
)
def test_fmt(value, text):
    assert L._fmt(value) == text


def test_gathered_header():
    summary, every = L.gathered([])
    assert summary.splitlines() == [
        "| chapter | scale | device | seed | wall s | claims | holds | reproduced | differs | "
        "inconclusive | fails |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    assert every.splitlines()[0].startswith("| chapter | claim |")


def test_every_field_is_recorded_as_given(led):
    a = led.check(
        "a", "Thm 1", kind="identity", holds=True, expected=1, observed=2, tolerance=0.5, note="na"
    )
    b = led.check_close(
        "b", "Thm 2", kind="bound", expected=1.0, observed=1.25, tolerance=0.5, note="nb"
    )
    c = led.check_at_most("c", "Thm 3", "bound", 2, 1.5, note="nc")
    d = led.compare("d", "Tab 4", expected=3, observed=4, agrees=False, tolerance=0.1, note="nd")
    e = led.compare(
        "e", "Fig 5", expected=3, observed=4, agrees=None, kind="prediction", note="paper scale"
    )
    assert {k: a[k] for k in ("source", "expected", "observed", "tolerance", "note")} == {
        "source": "Thm 1",
        "expected": 1,
        "observed": 2,
        "tolerance": 0.5,
        "note": "na",
    }
    assert (b["source"], b["expected"], b["observed"], b["tolerance"], b["note"]) == (
        "Thm 2",
        1.0,
        1.25,
        0.5,
        "nb",
    )
    assert (c["source"], c["expected"], c["observed"], c["tolerance"], c["note"]) == (
        "Thm 3",
        "<= 2.0",
        1.5,
        None,
        "nc",
    )
    assert (d["source"], d["expected"], d["observed"], d["tolerance"], d["note"]) == (
        "Tab 4",
        3,
        4,
        0.1,
        "nd",
    )
    assert (e["status"], e["kind"], e["note"]) == ("inconclusive", "prediction", "paper scale")
    # the default note is empty
    for claim in (
        led.check("f", "T", kind="identity", holds=True, expected=0, observed=0),
        led.check_close("g", "T", kind="bound", expected=0, observed=0, tolerance=0),
        led.check_at_most("h", "T", "bound", 0, 0),
        led.compare("i", "T", expected=0, observed=0, agrees=True),
    ):
        assert claim["note"] == ""


def test_error_messages_name_the_problem(led):
    with pytest.raises(ValueError, match="check kind must be one of .* not 'guess'"):
        led.check("a", "T", kind="guess", holds=True, expected=0, observed=0)
    with pytest.raises(ValueError, match="compare kind must be one of .* not 'bound'"):
        led.compare("a", "T", expected=0, observed=0, agrees=True, kind="bound")
    with pytest.raises(
        ValueError, match="inconclusive: its note must name the scale that would decide it$"
    ):
        led.compare("a", "T", expected=0, observed=0, agrees=None, note="  ")
    with pytest.raises(ValueError, match="claim kind 'guess' is not one of"):
        led._add({"id": "z", "kind": "guess"})


def test_write_makes_folders_and_writes_indented_strict_json(led, monkeypatch):
    led.check("a", "T", kind="identity", holds=True, expected=0, observed=0)
    seen = {}
    replace = os.replace

    def spy(src, dst):
        seen["tmp"] = src
        replace(src, dst)

    monkeypatch.setattr(L.os, "replace", spy)
    path = led.write()
    assert path == led.dir / "_out-chapter.json" and path.is_file()
    tmp = os.path.basename(seen["tmp"])
    assert os.path.dirname(seen["tmp"]) == str(led.dir)  # same folder: the rename is atomic
    assert tmp.startswith("._out-chapter.") and tmp.endswith(".tmp")
    text = path.read_text()
    assert text.startswith('{\n "chapter": "_out-chapter",\n "scale": "smoke",')
    assert json.loads(text)["claims"][0]["id"] == "a"


def test_write_refuses_a_nan_and_leaves_nothing_behind(led, monkeypatch):
    monkeypatch.setattr(led, "as_dict", lambda: {"x": float("nan")})
    with pytest.raises(ValueError):
        led.write()
    assert list(led.dir.iterdir()) == []


def test_a_failed_rename_raises_its_own_error(led, monkeypatch):
    def gone(src, dst):
        os.unlink(src)
        raise OSError("rename failed")

    monkeypatch.setattr(L.os, "replace", gone)
    with pytest.raises(OSError, match="rename failed"):
        led.write()


def test_finish_shows_the_table_by_default_and_names_every_failure(led, capsys):
    led.check("ok", "Thm 0", kind="identity", holds=True, expected=0, observed=0)
    assert led.finish() is None and led.path == led.dir / "_out-chapter.json"
    assert led.path.is_file()
    shown = capsys.readouterr().out
    assert "**Summary.**" in shown and "| ok | Thm 0 | **holds** |" in shown
    led.check("a", "Thm 1", kind="identity", holds=False, expected=0, observed=1)
    led.check("b", "Thm 2", kind="bound", holds=False, expected=0, observed=1)
    with pytest.raises(L.ClaimFailed, match=r"2 claim\(s\) .* failed: a \(Thm 1\), b \(Thm 2\)\."):
        led.finish(display=False)
    assert capsys.readouterr().out == ""


def test_show_markdown_displays_in_a_kernel(monkeypatch):
    import IPython
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython, "get_ipython", lambda: object())
    monkeypatch.setattr(IPython.display, "display", shown.append)
    L._show_markdown("| a |")
    assert len(shown) == 1 and shown[0].data == "| a |"


@pytest.mark.parametrize(
    "shell, cell",
    [
        (types.SimpleNamespace(execution_count=1), 1),
        (types.SimpleNamespace(execution_count=0), None),
        (types.SimpleNamespace(execution_count="3"), None),
        (types.SimpleNamespace(), None),
        (None, None),
    ],
)
def test_current_cell(monkeypatch, shell, cell):
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: shell))
    assert L._current_cell() == cell


def test_default_dir_outside_the_book(monkeypatch, tmp_path):
    monkeypatch.delenv(L.LEDGER_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    assert L.default_dir() == L.Path("ledger")


def test_load_accepts_exactly_a_chapter_ledger(tmp_path):
    (tmp_path / "a.json").write_text(json.dumps({"chapter": "a", "claims": []}))
    assert L.load(tmp_path) == [{"chapter": "a", "claims": []}]
    for bad in ([{"chapter": "b", "claims": []}], {"chapter": "b"}, {"claims": []}):
        (tmp_path / "b.json").write_text(json.dumps(bad))
        with pytest.raises(ValueError, match="is not a chapter ledger .* move it out of"):
            L.load(tmp_path)


def test_write_json_atomically_makes_the_folder_and_leaves_only_the_file(tmp_path):
    path = L.write_json_atomically(tmp_path / "a" / "b" / "record.json", {"n": [1, 2]})
    assert path == tmp_path / "a" / "b" / "record.json"
    assert path.read_text() == '{\n "n": [\n  1,\n  2\n ]\n}'
    assert [p.name for p in path.parent.iterdir()] == ["record.json"]
    L.write_json_atomically(path, {"n": 3})  # over an existing file
    assert json.loads(path.read_text()) == {"n": 3}
    with pytest.raises(ValueError):
        L.write_json_atomically(path, {"n": float("inf")})
    assert json.loads(path.read_text()) == {"n": 3}
    assert [p.name for p in path.parent.iterdir()] == ["record.json"]


def test_root_or_cwd(tmp_path, monkeypatch):
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "_toc.yml").write_text("format: jb-book\n")
    (tmp_path / "book" / "deep").mkdir()
    monkeypatch.chdir(tmp_path / "book" / "deep")
    assert L.root_or_cwd() == (tmp_path / "book").resolve()
    monkeypatch.chdir(tmp_path)
    assert L.root_or_cwd() == tmp_path
