"""Running an untrusted notebook: its own scratch folder, a wall-clock limit, a memory limit, and an
audit hook that refuses the ordinary ways Python code writes, deletes or starts processes outside
that folder. Only the answers leave: the last cell serialises the ``answer_*`` names as plain data
(:data:`DUMP_CELL`), which :mod:`companions.book.judge` reads back as untrusted JSON.

Two entry points, both run as ``python .../sandbox.py`` (the file, not ``-m``: importing the
package would import torch, seconds a small notebook need not spend):

- ``kernel --scratch DIR --memory BYTES -f CONNECTION_FILE``: an IPython kernel that first sets the
  memory limit (``RLIMIT_AS``) and installs the audit hook (which cannot be removed from Python),
  then serves the notebook. The kernelspec that :func:`run_notebook` writes starts it.
- ``run NOTEBOOK SCRATCH --time-limit S --memory BYTES``: executes the notebook's code cells in that
  kernel (nbclient, errors allowed, a cell over the remaining time interrupted) and writes
  ``SCRATCH/answers.json`` and ``SCRATCH/report.json``.

What this does not stop: native code (a C extension, ``ctypes``) does not pass through the audit
hook, and reading files is allowed. The README says so, and how to grade in a container instead.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

ANSWERS = "answers.json"
REPORT = "report.json"
#: Environment variables a student's kernel keeps (the rest of the teacher's environment stays out).
KEEP_ENV = ("PATH", "PYTHONPATH", "LANG", "LC_ALL", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "TZ")

#: The cell appended to a submission: every ``answer_*`` name as JSON data. Numbers, strings, lists,
#: numpy/torch values (``tolist``), complex numbers, exact fractions, sympy expressions as a tree of
#: class names.
#: It runs in the student's kernel, so its output is data to check, never code to trust.
DUMP_CELL = r"""
def __companions_dump():
    import json as _json

    def tree(e):
        import sympy as _sp

        if isinstance(e, _sp.Symbol):
            given = getattr(e, "_assumptions_orig", None) or e.assumptions0
            return ["Symbol", e.name, {k: v for k, v in given.items() if v is not None}]
        if isinstance(e, _sp.Integer):
            return ["Integer", str(int(e))]
        if isinstance(e, _sp.Rational):
            return ["Rational", str(e.p), str(e.q)]
        if isinstance(e, _sp.Float):
            return ["Float", str(e), e._prec]
        return [type(e).__name__] + [tree(a) for a in e.args]

    def enc(v, depth=0):
        if depth > 50:
            raise ValueError("nested too deeply")
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        if isinstance(v, complex):
            return {"complex": [v.real, v.imag]}
        if type(v).__module__ == "fractions" and type(v).__name__ == "Fraction":
            return {"fraction": [str(v.numerator), str(v.denominator)]}
        module = type(v).__module__.split(".")[0]
        if module == "sympy":
            return {"sympy": tree(v)}
        if module in ("numpy", "torch") and hasattr(v, "tolist"):
            return enc(v.tolist(), depth + 1)
        if isinstance(v, (list, tuple)):
            return [enc(x, depth + 1) for x in v]
        if isinstance(v, dict):
            return {"dict": [[enc(k, depth + 1), enc(x, depth + 1)] for k, x in v.items()]}
        raise TypeError(type(v).__name__)

    out = {}
    for name, value in list(globals().items()):
        if name.startswith("answer_") and value is not ...:  # ... is the blank placeholder
            try:
                out[name] = {"value": enc(value)}
            except Exception as error:
                out[name] = {"unreadable": type(error).__name__ + ": " + str(error)[:200]}
    with open("answers.json", "w") as f:
        _json.dump(out, f)


__companions_dump()
"""


# -- the kernel's side ---------------------------------------------------------------------------
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
#: Audit events refused outright in the student's kernel.
_REFUSED = {
    "os.system",
    "os.exec",
    "os.posix_spawn",
    "os.spawn",
    "os.fork",
    "os.forkpty",
    "os.kill",
    "os.killpg",
    "subprocess.Popen",
    "pty.spawn",
    "shutil.rmtree",
    "os.chdir",
    "sys.addaudithook",
    "socket.connect",
    "socket.bind",
    "socket.sendto",
    "webbrowser.open",
}
#: Audit events whose path arguments must lie in the scratch folder.
_PATH_EVENTS = {
    "os.remove": (0,),
    "os.rename": (0, 1),
    "os.rmdir": (0,),
    "os.mkdir": (0,),
    "os.chmod": (0,),
    "os.chown": (0,),
    "os.link": (0, 1),
    "os.symlink": (1,),
    "os.truncate": (0,),
    "os.utime": (0,),
    "os.chflags": (0,),
    "shutil.copyfile": (1,),
    "shutil.move": (1,),
}
_DEVICES = ("/dev/null", "/dev/stdout", "/dev/stderr")


class Refused(PermissionError):
    """Raised in the student's kernel for an action the sandbox does not allow."""


def _inside(path, root: str) -> bool:
    if isinstance(path, int):  # a file descriptor: already opened (and checked when it was)
        return True
    try:
        resolved = os.path.realpath(os.fsdecode(path))
    except (TypeError, ValueError):
        return False
    return resolved == root or resolved.startswith(root + os.sep) or resolved in _DEVICES


def install_audit_hook(scratch: str | Path) -> None:
    """Refuse, in this process from now on: writing a file outside ``scratch`` (``open`` for
    writing, ``os.remove``, ``os.rename``, ``mkdir`` ...), starting processes, ``os.chdir``,
    sockets, and adding further audit hooks. Python offers no way to remove an audit hook."""
    root = os.path.realpath(scratch)

    def hook(event: str, args: tuple) -> None:
        if event == "open":
            path, mode, flags = (tuple(args) + (None, None, None))[:3]
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & _WRITE_FLAGS
            )
            if writing and path is not None and not _inside(path, root):
                raise Refused(f"sandbox: writing {path!r} outside the scratch folder is refused")
        elif event in _REFUSED:
            raise Refused(f"sandbox: {event} is refused while grading")
        elif event in _PATH_EVENTS:
            for i in _PATH_EVENTS[event]:
                if i < len(args) and args[i] is not None and not _inside(args[i], root):
                    raise Refused(f"sandbox: {event} on {args[i]!r} outside the scratch folder")

    sys.addaudithook(hook)


def set_memory_limit(nbytes: int) -> None:
    """Limit this process's address space (``RLIMIT_AS``): an allocation beyond it fails with
    MemoryError instead of taking the machine's memory."""
    import resource

    if nbytes > 0:
        resource.setrlimit(resource.RLIMIT_AS, (nbytes, nbytes))


def serve_kernel(argv: list[str]) -> None:
    import argparse

    parser = argparse.ArgumentParser(prog="sandbox kernel")
    parser.add_argument("--scratch", required=True)
    parser.add_argument("--memory", type=int, default=0)
    args, rest = parser.parse_known_args(argv)
    os.chdir(args.scratch)
    set_memory_limit(args.memory)
    # Loaded before the hook, as any kernel would (the hook would refuse some of its set-up).
    import ipykernel.kernelapp  # noqa: F401

    install_audit_hook(args.scratch)
    from ipykernel import kernelapp

    sys.argv = [sys.argv[0], *rest]
    kernelapp.launch_new_instance(argv=rest)


# -- the driver's side ---------------------------------------------------------------------------
def _kernelspec(folder: Path, scratch: Path, memory: int) -> str:
    name = "companions-sandbox"
    spec = folder / "kernels" / name
    spec.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, str(Path(__file__).resolve()), "kernel"]
    argv += ["--scratch", str(scratch), "--memory", str(memory), "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": "sandbox", "language": "python"})
    )
    return name


def reserve_for(time_limit: float) -> float:
    """Seconds kept, past the time limit, for the last cell: what was computed before the time ran
    out is still read out."""
    return min(30.0, max(5.0, time_limit / 10))


def run_notebook(notebook: Path, scratch: Path, time_limit: float, memory: int) -> dict:
    """Execute a submission's code cells then :data:`DUMP_CELL` in a sandboxed kernel; the report
    says which cells failed and whether time or memory ran out. Runs in the driver process."""
    import nbformat
    from nbclient import NotebookClient

    start = time.monotonic()
    submitted = nbformat.read(notebook, as_version=4)
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(c.source) for c in submitted.cells if c.cell_type == "code"
    ]
    nb.cells.append(nbformat.v4.new_code_cell(DUMP_CELL))
    reserve = reserve_for(time_limit)
    spec_dir = scratch.parent / (scratch.name + "-kernelspec")
    os.environ["JUPYTER_PATH"] = str(spec_dir)
    kernel = _kernelspec(spec_dir, scratch, memory)
    report = {"cells": len(nb.cells) - 1, "errors": [], "timed_out": False, "memory": False}
    report["skipped"] = 0

    def remaining(cell) -> int:
        left = time_limit - (time.monotonic() - start)
        if cell is nb.cells[-1]:
            return int(reserve)
        return max(int(left + 0.999), 1)

    client = NotebookClient(
        nb,
        timeout_func=remaining,
        interrupt_on_timeout=True,
        allow_errors=True,
        kernel_name=kernel,
        resources={"metadata": {"path": str(scratch)}},
        record_timing=False,
        shutdown_kernel="immediate",
    )
    with client.setup_kernel():
        for i, cell in enumerate(nb.cells[:-1]):
            if time.monotonic() - start >= time_limit:  # what is left is never computed
                report["timed_out"] = True
                report["skipped"] = len(nb.cells) - 1 - i
                break
            client.execute_cell(cell, i)
        client.execute_cell(nb.cells[-1], len(nb.cells) - 1)
    for i, cell in enumerate(nb.cells[:-1]):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                ename = output.get("ename", "")
                report["errors"].append(f"cell {i + 1}: {ename}: {output.get('evalue', '')[:200]}")
                report["memory"] |= ename == "MemoryError"
                report["timed_out"] |= ename == "KeyboardInterrupt"
    report["timed_out"] |= time.monotonic() - start > time_limit
    return report


def main(argv: list[str] | None = None) -> int:
    if __name__ == "__main__" and sys.path and Path(sys.path[0]).resolve() == Path(__file__).parent:
        sys.path.pop(0)  # run as a file: its folder's modules (answers, cli ...) are not top-level
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["kernel"]:
        serve_kernel(argv[1:])
        return 0
    import argparse

    parser = argparse.ArgumentParser(prog="python -m companions.book.sandbox run")
    parser.add_argument("command", choices=["run"])
    parser.add_argument("notebook")
    parser.add_argument("scratch")
    parser.add_argument("--time-limit", type=float, default=600)
    parser.add_argument("--memory", type=int, default=4 << 30)
    args = parser.parse_args(argv)
    scratch = Path(args.scratch).resolve()
    report = run_notebook(Path(args.notebook), scratch, args.time_limit, args.memory)
    (scratch.parent / (scratch.name + "-" + REPORT)).write_text(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
