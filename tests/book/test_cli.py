"""Tests of ``python -m companions`` (list, run, ledger) and of ``execute_chapter``.

The end-to-end runs use a tiny throwaway chapter (a MyST notebook written to a temporary folder,
registered under ``_test-cli-chapter``) so that they take seconds; the real chapters are run by
``test_chapters.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from companions import scale as S
from companions.book import cli

ROOT = Path(__file__).resolve().parents[2]
CHAPTER_ID = "_test-cli-chapter"


def companions_cli(*args, cwd, env=None):
    return subprocess.run(
        [sys.executable, "-m", "companions", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


# ---------------------------------------------------------------------------------------------
# A throwaway chapter: its declaration is run both here (so the CLI validates against it) and in
# the notebook's kernel (a separate process).
# ---------------------------------------------------------------------------------------------
DECLARATION = """\
from companions import scale as S
S.register_chapter(S.Chapter(
    id={id!r}, title="A tiny chapter for the CLI tests", notebook={notebook!r},
    params={{"k": S.Int(1, 10, doc="a knob"), "fail": S.Int(0, 1, doc="1 makes a check fail"),
             "sizes": S.ListOf(S.Int(1), doc="a list knob")}},
    presets={{"smoke": {{"k": 1, "fail": 0, "sizes": [1]}},
             "default": {{"k": 2, "fail": 0, "sizes": [1, 2]}},
             "paper": {{"k": 3, "fail": 0, "sizes": [1, 2, 3]}}}}))
"""

NOTEBOOK = """\
---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
    format_version: 0.13
kernelspec:
  display_name: Python 3 (ipykernel)
  language: python
  name: python3
---

# A tiny chapter

```{{code-cell}} ipython3
:tags: [parameters]

scale = None
device = "auto"
seed = 0
ledger_dir = None
k = None
fail = None
sizes = None
```

```{{code-cell}} ipython3
import os
import sys

{declaration}
import companions
cfg = companions.preset({id!r}, scale, device=device, seed=seed, ledger_dir=ledger_dir, k=k,
                        fail=fail, sizes=sizes)
led = companions.Ledger(cfg)
led.check("k-is-positive", "Lemma 0", kind="identity", holds=cfg.k > 0, expected="> 0",
          observed=cfg.k)
led.check("runs-in-its-folder", "Lemma 0", kind="identity", holds=os.getcwd() == {folder!r},
          expected={folder!r}, observed=os.getcwd())
led.compare("a-reproduction", "Table 0", expected=1.0, observed=1.5, agrees=False,
            note="a finding, not a failure")
led.check("asked-to-fail", "Lemma 1", kind="prediction", holds=cfg.fail == 0, expected=0,
          observed=cfg.fail)
led.finish()
```
"""


@pytest.fixture
def tiny_chapter(tmp_path_factory, monkeypatch):
    """Register the tiny chapter (notebook at an absolute path) and return its notebook path."""
    monkeypatch.delenv(S.SCALE_ENV, raising=False)
    folder = tmp_path_factory.mktemp("tiny-book").resolve()
    notebook = folder / "tiny.md"
    declaration = DECLARATION.format(id=CHAPTER_ID, notebook=str(notebook))
    notebook.write_text(NOTEBOOK.format(declaration=declaration, id=CHAPTER_ID, folder=str(folder)))
    exec(declaration, {})
    yield notebook
    S._REGISTRY.pop(CHAPTER_ID, None)


def _ledger(path: Path) -> dict:
    return json.loads(Path(path).read_text())


# ---------------------------------------------------------------------------------------------
# Argument parsing
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, value",
    [
        ("4", 4),
        ("0.5", 0.5),
        ("-3", -3),
        ("1e-3", 1e-3),
        ("[16,32]", [16, 32]),
        ("[16, 32]", [16, 32]),
        ("(1, 2)", [1, 2]),
        ("None", None),
        ("True", True),
        ("'cpu'", "cpu"),
        ("cpu", "cpu"),
        ("hello world", "hello world"),
        ("[1, [2, (3, 4)]]", [1, [2, [3, 4]]]),
    ],
)
def test_parse_value(text, value):
    assert cli.parse_value(text) == value
    assert type(cli.parse_value(text)) is type(value)


def test_help_documents_the_raw_pipe(tmp_path):
    result = companions_cli("run", "--help", cwd=tmp_path)
    assert result.returncode == 0
    assert (
        "jupytext --to ipynb book/x.md -o - | papermill - out.ipynb -p scale paper" in result.stdout
    )
    top = companions_cli("--help", cwd=tmp_path)
    assert top.returncode == 0 and "| papermill -" in top.stdout
    for command in ("list", "run", "ledger"):
        assert command in top.stdout


def test_no_subcommand_is_a_usage_error(tmp_path):
    result = companions_cli(cwd=tmp_path)
    assert result.returncode == 2 and "usage" in result.stderr


# ---------------------------------------------------------------------------------------------
# list
# ---------------------------------------------------------------------------------------------
def test_list_shows_the_looped_chapter(tmp_path):
    result = companions_cli("list", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    chapter = S.chapters()["looped-gd"]
    assert f"looped-gd: {chapter.title}" in result.stdout
    assert chapter.notebook in result.stdout
    for name, spec in chapter.params.items():
        assert f"{name}: {spec.describe()}" in result.stdout
        values = "  ".join(
            f"{scale}={json.dumps(chapter.presets[scale][name])}" for scale in S.SCALES
        )
        assert values in result.stdout


def test_list_shows_every_registered_chapter(tiny_chapter, capsys):
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    assert f"{CHAPTER_ID}: A tiny chapter for the CLI tests" in out
    assert f"notebook: {tiny_chapter}" in out
    assert "k: an integer in [1, 10] -- a knob" in out
    assert "smoke=1  default=2  paper=3" in out
    assert "smoke=[1]  default=[1, 2]  paper=[1, 2, 3]" in out
    for chapter_id in S.chapters():
        assert f"{chapter_id}: " in out


# ---------------------------------------------------------------------------------------------
# run: bad parameters stop before anything is written
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "args, named",
    [
        (["-p", "n_values", "[0]"], "n_values"),
        (["-p", "d", "0"], "'d'"),
        (["-p", "no_such_knob", "1"], "no_such_knob"),
        (["--scale", "huge"], "'scale'"),
        (["--device", "tpu"], "'device'"),
        (["--seed", "-1"], "'seed'"),
        (["-p", "scale", "paper"], "scale"),
    ],
)
def test_run_with_a_bad_parameter_exits_2_and_writes_nothing(tmp_path, args, named):
    argv = [
        "run",
        "looped-gd",
        *(["--scale", "smoke"] if "--scale" not in args else []),
        *args,
        "--out",
        "explicit-out",
    ]
    result = companions_cli(*argv, cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert named in result.stderr
    assert "Traceback" not in result.stderr
    assert list(tmp_path.iterdir()) == []  # neither runs/ nor --out was created


def test_run_unknown_chapter_exits_2(tmp_path):
    result = companions_cli("run", "no-such-chapter", "--scale", "smoke", cwd=tmp_path)
    assert result.returncode == 2 and "no-such-chapter" in result.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "args, named",
    [
        (["-p", "k", "0"], "'k' = 0"),
        (["-p", "sizes", "[1, 0]"], "'sizes[1]' = 0"),
        (["-p", "k", "abc"], "'k' = 'abc'"),
        (["--scale", "huge"], "'scale' = 'huge'"),
        (["-p", "seed", "3"], "seed"),
        (["-p", "ledger_dir", "/tmp"], "ledger_dir"),
    ],
)
def test_run_bad_parameter_of_the_tiny_chapter(
    tiny_chapter, tmp_path, monkeypatch, capsys, args, named
):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["run", CHAPTER_ID, *args]) == 2
    assert named in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_run_cuda_without_a_gpu_exits_2(tiny_chapter, tmp_path, monkeypatch, capsys):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["run", CHAPTER_ID, "--scale", "smoke", "--device", "cuda"]) == 2
    assert "'device' = 'cuda'" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "scale, params, named",
    [
        ("smoke", {"k": 11}, "'k' = 11"),
        ("smoke", {"sizes": []}, "'sizes' = []"),
        ("smoke", {"unknown": 1}, "unknown"),
        ("huge", {}, "'scale' = 'huge'"),
        ("smoke", {"device": "cpu"}, "device"),
    ],
)
def test_execute_chapter_validates_before_writing(tiny_chapter, tmp_path, scale, params, named):
    with pytest.raises(ValueError) as err:
        cli.execute_chapter(
            CHAPTER_ID, scale, out_dir=tmp_path / "out", params=params, progress=False
        )
    assert named in str(err.value)
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------------------------------------
# run and execute_chapter: a real (tiny) execution through jupytext and papermill
# ---------------------------------------------------------------------------------------------
def test_execute_chapter_runs_the_notebook(tiny_chapter, tmp_path):
    out = tmp_path / "out"
    executed, ledger_path = cli.execute_chapter(
        CHAPTER_ID,
        "paper",
        out_dir=out,
        device="cpu",
        seed=7,
        params={"k": 5, "sizes": [4, 5]},
        progress=False,
    )
    assert executed == out.resolve() / f"{CHAPTER_ID}.ipynb"
    assert ledger_path == out.resolve() / f"{CHAPTER_ID}.json"
    led = _ledger(ledger_path)
    assert (led["chapter"], led["scale"], led["seed"], led["device"]) == (
        CHAPTER_ID,
        "paper",
        7,
        "cpu",
    )
    assert led["params"] == {"k": 5, "fail": 0, "sizes": [4, 5]}
    assert {c["id"]: c["status"] for c in led["claims"]} == {
        "k-is-positive": "holds",
        "runs-in-its-folder": "holds",
        "a-reproduction": "differs",
        "asked-to-fail": "holds",
    }
    # the kernel is this environment's Python, not some other 'python3'
    # (compared without resolving symlinks: a venv's python is a link to the base interpreter)
    assert Path(led["python"]).is_relative_to(Path(sys.prefix).absolute())
    nb = nbformat.read(str(executed), as_version=4)
    assert nb.metadata.papermill.parameters == {
        "scale": "paper",
        "device": "cpu",
        "seed": 7,
        "ledger_dir": str(out.resolve()),
        "k": 5,
        "sizes": [4, 5],
    }
    assert nb.metadata.papermill.input_path == str(tiny_chapter)
    assert any("injected-parameters" in c.metadata.get("tags", []) for c in nb.cells)
    assert sorted(p.name for p in out.iterdir()) == sorted([executed.name, ledger_path.name])


def test_execute_chapter_failure_keeps_the_partial_notebook(tiny_chapter, tmp_path):
    out = tmp_path / "out"
    with pytest.raises(cli.ChapterExecutionError, match="ClaimFailed") as err:
        cli.execute_chapter(
            CHAPTER_ID, "smoke", out_dir=out, device="cpu", params={"fail": 1}, progress=False
        )
    assert err.value.notebook_path.is_file()
    assert str(err.value.notebook_path) in str(err.value)
    statuses = {c["id"]: c["status"] for c in _ledger(err.value.ledger_path)["claims"]}
    assert statuses["asked-to-fail"] == "fails"


def test_a_kernel_that_dies_is_a_chapter_error_naming_it(tiny_chapter, tmp_path, monkeypatch):
    """Out of memory or killed: an error of the chapter's, not nbclient's traceback."""
    import papermill
    from nbclient.exceptions import DeadKernelError

    def dies(*args, **kwargs):
        raise DeadKernelError("Kernel died")

    monkeypatch.setattr(papermill, "execute_notebook", dies)
    with pytest.raises(cli.ChapterExecutionError, match="kernel died") as err:
        cli.execute_chapter(
            CHAPTER_ID, "smoke", out_dir=tmp_path / "out", device="cpu", progress=False
        )
    assert err.value.ename == "DeadKernelError"
    assert CHAPTER_ID in str(err.value)


def test_execute_chapter_keeps_a_callers_kernel_with_the_chapters_state(tiny_chapter, tmp_path):
    """``kernel=``: a run that ends leaves the kernel running, holding the chapter's names; a run
    that fails shuts it down."""
    from jupyter_client import KernelManager

    def run(folder: str, **params):
        kernel = KernelManager(kernel_name="python3")
        options = dict(device="cpu", progress=False, params=params, kernel=kernel)
        try:
            cli.execute_chapter(CHAPTER_ID, "smoke", out_dir=tmp_path / folder, **options)
        except cli.ChapterExecutionError:
            return kernel, False
        return kernel, True

    kernel, ended = run("a", k=6)
    try:
        assert ended and kernel.is_alive()
        client = kernel.client()
        client.start_channels()
        found = []
        client.execute_interactive(
            "print(k)", output_hook=lambda m: found.append(m["content"].get("text", ""))
        )
        client.stop_channels()
        assert "".join(found).strip() == "6"
    finally:
        kernel.shutdown_kernel(now=True)
    failing, ended = run("b", fail=1)
    assert not ended and not failing.is_alive()


def test_cli_run_end_to_end(tiny_chapter, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert (
        cli.main(
            ["run", CHAPTER_ID, "--scale", "smoke", "--device", "cpu", "-p", "k", "4", "--quiet"]
        )
        == 0
    )
    out = capsys.readouterr().out
    runs = list((tmp_path / "runs").iterdir())
    assert len(runs) == 1 and runs[0].name.startswith(f"{CHAPTER_ID}-smoke-")
    assert sorted(p.name for p in runs[0].iterdir()) == [
        f"{CHAPTER_ID}.ipynb",
        f"{CHAPTER_ID}.json",
    ]
    assert out.splitlines()[0] == f"output folder: {Path('runs') / runs[0].name}"
    assert f"| {CHAPTER_ID} | smoke | cpu | 0 |" in out  # the ledger summary at the end
    assert _ledger(runs[0] / f"{CHAPTER_ID}.json")["params"]["k"] == 4


def test_cli_run_failure_exits_1_and_keeps_the_folder(tiny_chapter, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code = cli.main(
        [
            "run",
            CHAPTER_ID,
            "--scale",
            "smoke",
            "--device",
            "cpu",
            "-p",
            "fail",
            "1",
            "--out",
            "mine",
            "--quiet",
        ]
    )
    captured = capsys.readouterr()
    assert code == 1
    assert "ClaimFailed" in captured.err and "mine" in captured.err
    assert (tmp_path / "mine" / f"{CHAPTER_ID}.ipynb").is_file()
    assert "**fails**" in captured.out  # the ledger is still shown


# ---------------------------------------------------------------------------------------------
# ledger
# ---------------------------------------------------------------------------------------------
def _write_ledger(folder: Path, chapter: str, statuses: list[str]) -> None:
    claims = [
        {
            "id": f"claim-{i}",
            "source": "Theorem 1",
            "kind": "reproduction" if s in ("reproduced", "differs") else "bound",
            "status": s,
            "expected": 1.0,
            "observed": 1.0,
            "tolerance": None,
            "note": "n",
        }
        for i, s in enumerate(statuses)
    ]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{chapter}.json").write_text(
        json.dumps(
            {
                "chapter": chapter,
                "scale": "smoke",
                "seed": 0,
                "device": "cpu",
                "params": {},
                "wall_seconds": 1.0,
                "python": sys.executable,
                "claims": claims,
            }
        )
    )


def test_ledger_prints_tables_and_exits_0(tmp_path):
    _write_ledger(tmp_path / "led", "alpha", ["holds", "differs", "reproduced"])
    result = companions_cli("ledger", "--dir", "led", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "| alpha | smoke | cpu | 0 | 1.0 | 3 | 1 | 1 | 1 | 0 |" in result.stdout
    assert "| alpha | claim-1 | Theorem 1 | **differs** |" in result.stdout


def test_ledger_exits_1_when_a_claim_fails(tmp_path):
    _write_ledger(tmp_path / "led", "alpha", ["holds"])
    _write_ledger(tmp_path / "led", "beta", ["holds", "fails"])
    result = companions_cli("ledger", "--dir", str(tmp_path / "led"), cwd=tmp_path)
    assert result.returncode == 1
    assert "| beta | smoke | cpu | 0 | 1.0 | 2 | 1 | 0 | 0 | 0 | 1 |" in result.stdout
    assert "beta/claim-1" in result.stderr


def test_ledger_with_no_ledgers(tmp_path):
    (tmp_path / "empty").mkdir()
    result = companions_cli("ledger", "--dir", "empty", cwd=tmp_path)
    assert result.returncode == 1
    assert "no ledgers found" in result.stderr


def test_ledger_defaults_to_the_environment(tmp_path):
    _write_ledger(tmp_path / "from-env", "gamma", ["holds"])
    env = {**__import__("os").environ, "BOOK_LEDGER_DIR": str(tmp_path / "from-env")}
    result = companions_cli("ledger", cwd=tmp_path, env=env)
    assert result.returncode == 0 and "| gamma |" in result.stdout


def test_ledger_rejects_a_json_that_is_not_a_ledger(tmp_path):
    (tmp_path / "led").mkdir()
    (tmp_path / "led" / "other.json").write_text('{"hello": 1}')
    result = companions_cli("ledger", "--dir", "led", cwd=tmp_path)
    assert result.returncode == 2 and "not a chapter ledger" in result.stderr


def test_build_with_a_bad_book_scale_exits_2_before_running_anything(monkeypatch, capsys):
    from companions.book import build

    monkeypatch.setenv(S.SCALE_ENV, "huge")
    monkeypatch.setattr(build, "build", lambda *a, **k: pytest.fail("the build started"))
    assert cli.main(["build"]) == 2
    err = capsys.readouterr().err
    assert "BOOK_SCALE" in err and "'huge'" in err
