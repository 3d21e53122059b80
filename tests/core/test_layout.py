"""The package's layout rules (CONTRIBUTING.md, "Layout"), read from the source with ``ast``.

- the core (``scale``, ``ledger``, ``runtime``, ``train``, ``plots``, ``losses``, ``stats``)
  imports only itself;
- a topic imports only the core and its own subpackage, never ``book`` and never another topic;
- nothing outside ``book/`` imports ``book/``;
- every topic has the same shape (``__init__``, ``chapters``) and is listed in ``scale.TOPICS``;
- discovery imports each topic's ``chapters`` module from that list, and nothing of the book's
  machinery;
- the core and the topics import no third-party package that ``pyproject.toml`` does not declare
  as a dependency of running a chapter;
- a function of more than six parameters takes all but at most four as keywords.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from companions import scale

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "lib" / "companions"
CORE = (
    "scale",
    "ledger",
    "claims",
    "runtime",
    "train",
    "plots",
    "losses",
    "stats",
    "incontext",
    "boolean",
    "bench",
)
#: Modules of the package root that are neither core nor a topic: the package's API and its CLI
#: entry.
ROOT_MODULES = {"__init__", "__main__"}
#: Import names of the declared dependencies that differ from the distribution names.
IMPORT_NAMES = {"ipython": "IPython"}


def _modules() -> dict[str, Path]:
    """``{dotted module name: file}`` for every module of the package."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        out[".".join(parts)] = path
    return out


def _imports(path: Path) -> set[str]:
    """Every absolute module name a file imports (``from a.b import c`` counts ``a.b`` and
    ``a.b.c``, since ``c`` may be a submodule)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level > 0:
            raise AssertionError(f"{path}: relative import; the package uses absolute imports")
    return names


def _kind(module: str) -> tuple[str, str | None]:
    """('core' | 'book' | 'topic' | 'root', topic name or None) of a dotted module name."""
    parts = module.split(".")
    if len(parts) == 2 and parts[1] in ROOT_MODULES:
        return "root", None
    if len(parts) == 2 and parts[1] in CORE:
        return "core", None
    if parts[1] == "book":
        return "book", None
    return "topic", parts[1]


def _companions_imports(path: Path) -> set[str]:
    return {name for name in _imports(path) if name.split(".")[0] == "companions"}


def _target(name: str) -> tuple[str, str | None]:
    """The kind of what an imported name points into (``companions`` alone is the API)."""
    parts = name.split(".")
    if len(parts) == 1:
        return "api", None  # `from companions import x`: x is judged by its own name
    if parts[1] in CORE or parts[1] in ROOT_MODULES:
        return ("core", None) if parts[1] in CORE else ("root", None)
    if parts[1] == "book":
        return "book", None
    if (PACKAGE / parts[1]).is_dir():
        return "topic", parts[1]
    return "api", None  # a name from the package's API, such as `from companions import preset`


MODULES = _modules()


@pytest.mark.parametrize("module", [m for m in MODULES if _kind(m)[0] == "core"])
def test_core_imports_only_the_core(module):
    bad = {
        name
        for name in _companions_imports(MODULES[module])
        if _target(name)[0] not in ("core", "api")
    }
    assert not bad, f"{module} (core) imports {sorted(bad)}: the core imports only itself"


@pytest.mark.parametrize("module", [m for m in MODULES if _kind(m)[0] == "topic"])
def test_topic_imports_only_the_core_and_itself(module):
    topic = _kind(module)[1]
    bad = set()
    for name in _companions_imports(MODULES[module]):
        kind, other = _target(name)
        if kind in ("book", "root") or (kind == "topic" and other != topic):
            bad.add(name)
    assert not bad, (
        f"{module} imports {sorted(bad)}: a topic imports only the core and its own subpackage "
        "(shared mathematics moves to the core)"
    )


@pytest.mark.parametrize("module", [m for m in MODULES if _kind(m)[0] != "book"])
def test_nothing_outside_book_imports_book(module):
    if module == "companions.__main__":  # `python -m companions` is the CLI's entry point
        assert _companions_imports(MODULES[module]) == {
            "companions.book.cli",
            "companions.book.cli.main",
        }
        return
    bad = {name for name in _companions_imports(MODULES[module]) if _target(name)[0] == "book"}
    assert not bad, f"{module} imports the book's machinery: {sorted(bad)}"


def test_every_topic_has_the_same_shape_and_is_listed():
    topics = sorted(
        p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()
    )
    topics.remove("book")
    assert sorted(scale.TOPICS) == topics, (
        f"scale.TOPICS = {scale.TOPICS} must list every topic subpackage: {topics}"
    )
    for topic in topics:
        assert (PACKAGE / topic / "chapters.py").is_file(), f"topic {topic!r} has no chapters.py"
    strays = sorted(
        p.stem for p in PACKAGE.glob("*.py") if p.stem not in CORE and p.stem not in ROOT_MODULES
    )
    assert not strays, f"modules at the package root that are neither core nor API: {strays}"


def test_chapters_are_declared_in_chapters_modules():
    for module, path in MODULES.items():
        if _kind(module)[0] == "topic" and not module.endswith(".chapters"):
            assert "register_chapter(" not in path.read_text(), (
                f"{module} declares a chapter: declarations live in the topic's chapters.py"
            )


def test_discovery_imports_the_listed_chapters_modules_and_no_machinery():
    code = (
        "import sys, companions\n"
        "ids = companions.chapters()\n"
        "mods = sorted(m for m in sys.modules if m.startswith('companions.'))\n"
        "print(len(ids)); print(' '.join(mods))\n"
        "print(' '.join(sorted(m.split('.')[0] for m in sys.modules)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    loaded, everything = set(out[1].split()), set(out[2].split())
    assert int(out[0]) >= len(scale.TOPICS)
    for topic in scale.TOPICS:
        assert f"companions.{topic}.chapters" in loaded
    assert not {m for m in loaded if m.startswith("companions.book")}, loaded
    assert not everything & {"sphinx", "docutils", "myst_nb", "otter", "selenium", "papermill"}


def test_discovery_follows_the_explicit_list(monkeypatch):
    """Discovery imports exactly ``companions.<topic>.chapters`` for the topics listed: a topic
    left out of TOPICS is not imported (discovery does not walk the package)."""
    imported = []
    monkeypatch.setattr(scale, "_DISCOVERED", False)
    monkeypatch.setattr(scale.importlib, "import_module", imported.append)
    monkeypatch.setattr(scale, "TOPICS", ("looped", "fourier"))
    scale.chapters()
    assert imported == ["companions.looped.chapters", "companions.fourier.chapters"]


def test_core_and_topics_use_only_declared_dependencies():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = set()
    for requirement in project["dependencies"]:
        name = requirement.split(";")[0].split("[")[0]
        for op in "<>=!~ ":
            name = name.split(op)[0]
        declared.add(IMPORT_NAMES.get(name.lower(), name.lower()))
    allowed = declared | set(sys.stdlib_module_names) | {"companions"}
    for module, path in MODULES.items():
        if _kind(module)[0] == "book":
            continue
        top = {name.split(".")[0] for name in _imports(path)}
        extra = top - allowed
        assert not extra, (
            f"{module} imports {sorted(extra)}, which pyproject.toml does not declare as a "
            "dependency of running a chapter"
        )


def test_test_workers_share_the_cores_out():
    from tests.conftest import worker_threads

    assert [worker_threads(2, n) for n in (1, 2, 4)] == [2, 1, 1]
    assert worker_threads(8, 3) == 2 and worker_threads(1, 0) == 1


#: Functions whose signature a framework fixes: docutils calls a role with seven positional
#: arguments.
POSITIONAL_BY_CONTRACT = {"companions.book.sphinx_ledger.claim_role"}


def test_long_signatures_take_keywords():
    """More than six parameters (``self`` and ``cls`` apart): at most four positional (the
    operands, as in ``looped_transformer(Z0, Q, P, etas)``), the rest keywords, so that a call
    site names what it passes."""
    offenders = []
    for module, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            args = node.args
            positional = [
                a.arg for a in args.posonlyargs + args.args if a.arg not in ("self", "cls")
            ]
            if len(positional) + len(args.kwonlyargs) <= 6 or len(positional) <= 4:
                continue
            if f"{module}.{node.name}" not in POSITIONAL_BY_CONTRACT:
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}")
    assert not offenders, f"put a '*' after at most four parameters of: {offenders}"
