"""Per chapter: code lines, the longest code cell, cells over 40 lines, and the share of code lines
that record claims (the ledger.record(...) calls), as the page standard measures them.

    .venv/bin/python tools/page_metrics.py [book/<part>/<chapter>.md ...]
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import jupytext

ROOT = Path(__file__).resolve().parents[1]


def metrics(path: Path) -> dict:
    cells = [c for c in jupytext.read(path).cells if c.cell_type == "code"]
    code = [c.source.strip("\n").splitlines() for c in cells]
    lines = sum(len(c) for c in code)
    recording = 0
    for cell in cells:
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("record", "check", "check_close", "check_at_most", "compare")
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "ledger"
            ):
                recording += node.end_lineno - node.lineno + 1
    return {
        "code lines": lines,
        "longest cell": max((len(c) for c in code), default=0),
        "cells > 40": sum(len(c) > 40 for c in code),
        "recording": recording,
        "share": recording / lines if lines else 0.0,
    }


def main(paths: list[str]) -> None:
    paths = [Path(p) for p in paths] or sorted((ROOT / "book").glob("*/*.md"))
    print("| chapter | code lines | longest cell | cells > 40 | recording lines | share |")
    print("|---|---|---|---|---|---|")
    for path in paths:
        if "jupytext" not in path.read_text()[:200]:
            continue
        m = metrics(path)
        print(
            f"| {path.stem} | {m['code lines']} | {m['longest cell']} | {m['cells > 40']} | "
            f"{m['recording']} | {m['share']:.1%} |"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
