"""Running an untrusted notebook. The notebook's kernel and the driver that executes it run inside
an operating-system sandbox (bubblewrap, :func:`launch`): Linux namespaces in which the submission
sees its own scratch folder (the only thing it can write), the Python environment and the system's
``/usr`` read-only, and nothing else of the machine: no assignment folder, no solutions, no other
submission, no home folder, no network; it runs under a time limit, a memory limit and a limit on
its processes. Only the answers leave: the last cell serialises the ``answer_*`` names as plain
data (:data:`DUMP_CELL`), which :mod:`companions.book.judge` reads back as untrusted JSON.

Inside it, an audit hook also refuses the ordinary ways Python code writes outside that folder or
starts processes, so that such a submission gets a clear error (and the gradebook a note) rather
than a silent failure. Without the sandbox (``--no-sandbox``, for a teacher's own notebooks), the
hook and the limits are all there is: native code (``ctypes``) steps around the hook, and reading
files is allowed.

Two entry points, both run as ``python .../sandbox.py`` (the file, not ``-m``: importing the
package would import torch, seconds a small notebook need not spend):

- ``kernel --scratch DIR --memory BYTES -f CONNECTION_FILE``: an IPython kernel that first sets the
  memory limit (``RLIMIT_AS``) and installs the audit hook (which cannot be removed from Python),
  then serves the notebook. The kernelspec that :func:`run_notebook` writes starts it.
- ``run NOTEBOOK SCRATCH --time-limit S --memory BYTES --report-fd FD``: executes the notebook's
  code cells in that kernel (nbclient, errors allowed, a cell over the remaining time interrupted),
  writes ``SCRATCH/answers.json`` and the report (JSON) to the file descriptor ``FD``, which the
  grader opened outside the sandbox and the kernel never inherits.
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


# -- the operating-system sandbox (the grader's side) ---------------------------------------------
#: Where the scratch folder is, inside the sandbox: the submission's working directory and ``HOME``.
INSIDE_SCRATCH = "/scratch"
#: Where the submitted notebook is, inside the sandbox (a read-only copy).
INSIDE_NOTEBOOK = "/grading/submission.ipynb"
#: The user a submission runs as when the grader is root (``nobody`` on Debian, Ubuntu, Fedora):
#: never root, so that the limit on processes holds (Linux does not apply it to root).
UNPRIVILEGED = 65534
#: What to do when bubblewrap is missing.
INSTALL = (
    "install bubblewrap ('apt-get install bubblewrap' on Debian or Ubuntu, 'dnf install "
    "bubblewrap' on Fedora), or grade with --no-sandbox, which runs every submission with the "
    "teacher's own access to files and network (unsafe: only for notebooks you trust)"
)


#: Folders of the system shown read-only besides ``/usr`` (links into it where ``/usr`` is merged).
_SYSTEM_DIRS = tuple(
    d for d in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32") if os.path.isdir(d)
)
#: Single system files a program may need: the dynamic linker's cache, the time zone.
_SYSTEM_FILES = ("/etc/ld.so.cache", "/etc/localtime")


class SandboxUnavailable(RuntimeError):
    """The operating-system sandbox cannot run here (bubblewrap missing, user namespaces refused),
    or would show a submission what it must not see. Grading stops: there is no silent fallback."""


def process_limit() -> int:
    """Processes and threads a submission may have at once (``RLIMIT_NPROC``, counted in the
    sandbox's own user namespace, so the teacher's other processes do not count). The driver, the
    kernel and their threads fit (21 for a chapter at smoke scale on 2 cores; torch and BLAS start
    about one thread per core); a fork bomb stops there."""
    return 64 + 4 * (os.cpu_count() or 1)


def bwrap() -> str:
    """The bubblewrap executable, else :class:`SandboxUnavailable` saying how to install it."""
    import shutil

    found = shutil.which("bwrap")
    if found is None:
        raise SandboxUnavailable(
            f"grading needs bubblewrap ('bwrap'), which is not on PATH: {INSTALL}"
        )
    return found


_ENVIRONMENT = """
import importlib.util, json, os, sys
spec = importlib.util.find_spec("companions")
print(json.dumps([sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
                  os.path.dirname(os.path.realpath(sys.executable)), *sys.path,
                  *((spec.submodule_search_locations or []) if spec else [])]))
"""


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


_PATHS: dict[str, tuple[str, ...]] = {}


def environment_paths(python: str | None = None) -> tuple[str, ...]:
    """The folders a submission's Python needs, read-only: its prefix (the virtual environment),
    the installation it points at, its ``sys.path`` (site-packages and what ``.pth`` files add,
    such as an editable install's source folder) and the folder of the ``companions`` package, as
    a fresh ``python -I`` of the environment sees them (so nothing of the grader's own
    ``PYTHONPATH`` or working directory), resolved, those inside another left out."""
    import subprocess

    python = python or sys.executable
    if python not in _PATHS:
        done = subprocess.run(
            [python, "-I", "-c", _ENVIRONMENT], capture_output=True, text=True, check=True
        )
        found = sorted({os.path.realpath(p) for p in json.loads(done.stdout) if os.path.exists(p)})
        _PATHS[python] = tuple(p for p in found if not any(_within(p, q) for q in found if q != p))
    return _PATHS[python]


def exposed_paths(python: str | None = None) -> tuple[str, ...]:
    """Every host folder a submission can read: ``/usr`` (with ``/bin``, ``/lib`` ...) and
    :func:`environment_paths`."""
    return ("/usr", *_SYSTEM_DIRS, *environment_paths(python))


def check_hidden(path: str | os.PathLike, what: str, python: str | None = None) -> None:
    """:class:`SandboxUnavailable` if ``path`` (an assignment folder, a class folder) lies in a
    folder the sandbox shows to every submission, or if such a folder holds the home folder."""
    resolved = os.path.realpath(path)
    home = os.path.realpath(os.path.expanduser("~"))
    for shown in exposed_paths(python):
        if shown == "/" or _within(home, shown):
            raise SandboxUnavailable(
                f"the Python environment includes {shown}, which holds the home folder {home}: "
                "the sandbox would show it to every submission; install the environment elsewhere"
            )
        if _within(resolved, shown):
            raise SandboxUnavailable(
                f"{what} {resolved} lies inside {shown}, which the sandbox shows (read-only) to "
                "every submission: move it out"
            )


def _text_fd(text: str) -> int:
    """A pipe's reading end, holding ``text`` (bubblewrap copies it into the sandbox)."""
    read, write = os.pipe()
    os.write(write, text.encode())
    os.close(write)
    return read


def _arguments(scratch: Path, env: dict, notebook_fd: int | None, uid: int) -> tuple[list, list]:
    """bubblewrap's arguments (without its executable) and the descriptors they name."""
    args = ["--unshare-all", "--unshare-user", "--die-with-parent", "--new-session", "--as-pid-1"]
    fds: list[int] = []
    args += ["--ro-bind", "/usr", "/usr"]
    for d in _SYSTEM_DIRS:
        if os.path.islink(d):
            args += ["--symlink", os.readlink(d), d]
        else:
            args += ["--ro-bind", d, d]
    for f in _SYSTEM_FILES:
        args += ["--ro-bind-try", f, f]
    passwd = f"root:x:0:0::/:/usr/sbin/nologin\nstudent:x:{uid}:{uid}::{INSIDE_SCRATCH}:/bin/sh\n"
    for name, text in (("passwd", passwd), ("group", f"root:x:0:\nstudent:x:{uid}:\n")):
        fds.append(_text_fd(text))
        args += ["--perms", "0444", "--ro-bind-data", str(fds[-1]), f"/etc/{name}"]
    args += ["--proc", "/proc", "--dev", "/dev"]
    mounted, made = ["/usr", *_SYSTEM_DIRS], set()
    for path in environment_paths():
        if any(_within(path, m) for m in mounted):
            continue
        # bubblewrap makes the folders above a mount as the host has them (/root: 0700); open them
        for parent in reversed(Path(path).parents[:-1]):
            if str(parent) not in made and not any(_within(str(parent), m) for m in mounted):
                args += ["--perms", "0755", "--dir", str(parent)]
                made.add(str(parent))
        args += ["--ro-bind", path, path]
        mounted.append(path)
    args += ["--bind", str(scratch), INSIDE_SCRATCH]
    if notebook_fd is not None:
        args += ["--perms", "0444", "--ro-bind-data", str(notebook_fd), INSIDE_NOTEBOOK]
    # no --chdir: bubblewrap has dropped its capabilities by then, and as root the scratch folder
    # belongs to UNPRIVILEGED; the command goes there itself
    args += ["--remount-ro", "/dev", "--remount-ro", "/", "--clearenv"]
    for key, value in env.items():
        args += ["--setenv", key, value]
    return args, fds


def launch(
    command: list[str],
    scratch: Path,
    env: dict,
    *,
    notebook: Path | None = None,
    pass_fds: tuple = (),
    **popen,
):
    """Start ``command`` (an executable the sandbox shows, such as the environment's Python, and
    its arguments) in the sandbox: ``scratch`` its only writable folder (at
    :data:`INSIDE_SCRATCH`), ``notebook`` copied read-only to :data:`INSIDE_NOTEBOOK`, ``env`` its
    whole environment; ``pass_fds`` and ``popen`` go to ``subprocess.Popen``, which is returned.

    As root, the sandbox's user namespace maps root (for bubblewrap's set-up, which reads the
    environment where the host's permissions allow only root, such as ``/root/.pyenv``) and
    :data:`UNPRIVILEGED`, which the command must become (``run --drop-to``) before it runs anything
    of the submission. Otherwise the command runs as the teacher's own user, without capabilities,
    in a user namespace of its own."""
    import subprocess

    root = os.geteuid() == 0
    notebook_fd = os.open(notebook, os.O_RDONLY) if notebook is not None else None
    args, fds = _arguments(scratch, env, notebook_fd, UNPRIVILEGED if root else os.getuid())
    if notebook_fd is not None:
        fds.append(notebook_fd)
    if root:
        info_read, info_write = os.pipe()
        block_read, block_write = os.pipe()
        fds += [info_write, block_read]
        caps = ["--cap-drop", "ALL"]  # then only what --drop-to needs
        for cap in ("CAP_SETUID", "CAP_SETGID", "CAP_SYS_RESOURCE"):
            caps += ["--cap-add", cap]
        args = [*caps, "--userns-block-fd", str(block_read), "--info-fd", str(info_write), *args]
    else:
        args = ["--disable-userns", *args]
    try:
        process = subprocess.Popen(
            [bwrap(), *args, "--", *command], pass_fds=(*fds, *pass_fds), **popen
        )
    finally:
        for fd in fds:
            if not root or fd not in (info_write, block_read):
                os.close(fd)
    if root:
        os.close(info_write)
        os.close(block_read)
        try:
            with os.fdopen(info_read, "rb") as info:
                text = info.read()  # bubblewrap closes it once it has written
            if text:
                child = json.loads(text)["child-pid"]
                maps = f"0 0 1\n{UNPRIVILEGED} {UNPRIVILEGED} 1\n"
                for kind in ("uid", "gid"):
                    with open(f"/proc/{child}/{kind}_map", "w") as f:
                        f.write(maps)
        finally:
            os.write(block_write, b"1")
            os.close(block_write)
    return process


def inside_environment(extra: dict | None = None) -> dict:
    """The environment of a sandboxed submission: the locale and thread settings of the grader's,
    the Python environment's ``bin`` first on ``PATH``, the scratch folder as ``HOME``."""
    env = {
        k: os.environ[k] for k in KEEP_ENV if k in os.environ and k not in ("PATH", "PYTHONPATH")
    }
    env["PATH"] = f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin"
    env["HOME"] = INSIDE_SCRATCH
    env["USER"] = env["LOGNAME"] = "student"
    env.update(extra or {})
    return env


_WORKS: set[str] = set()


def check_available(python: str | None = None) -> None:
    """:class:`SandboxUnavailable`, with the reason, unless the environment's Python starts in the
    sandbox here (bubblewrap installed, user namespaces allowed). Checked once per process."""
    import subprocess
    import tempfile

    python = python or sys.executable
    if python in _WORKS:
        return
    bwrap()
    with tempfile.TemporaryDirectory(prefix="sandbox-check-") as scratch:
        if os.geteuid() == 0:
            os.chown(scratch, UNPRIVILEGED, UNPRIVILEGED)
        command = [python, str(Path(__file__).resolve()), "check", INSIDE_SCRATCH]
        command += _drop_arguments()
        process = launch(
            command,
            Path(scratch),
            inside_environment(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        output, _ = process.communicate(timeout=120)
    if process.returncode != 0:
        raise SandboxUnavailable(
            "the sandbox (bubblewrap) could not start Python here: "
            + output.decode(errors="replace").strip()[-600:]
        )
    _WORKS.add(python)


def _drop_arguments() -> list[str]:
    """``run``'s arguments that make it drop root (when the grader is root)."""
    return ["--drop-to", str(UNPRIVILEGED)] if os.geteuid() == 0 else []


def drop_privileges(uid: int) -> None:
    """Inside the sandbox, as the namespace's root: forbid further user namespaces, then become
    ``uid`` for good (no capability is left). Changing user clears the signal bubblewrap's
    ``--die-with-parent`` set up (``PR_SET_PDEATHSIG``): it is set again, so that this process,
    and with it the sandbox, dies when bubblewrap does."""
    import ctypes
    import signal

    with open("/proc/sys/user/max_user_namespaces", "w") as f:
        f.write("0")
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)
    if ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL) != 0:  # PR_SET_PDEATHSIG
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG)")


def stop(process) -> None:
    """Kill a sandbox that :func:`launch` started, whatever it does: bubblewrap's child (the first
    process of the sandbox's process namespace, whose death ends every process in it) and
    bubblewrap's process group."""
    import signal

    children = []
    for entry in os.listdir("/proc"):
        try:
            stat = Path(f"/proc/{entry}/stat").read_text() if entry.isdigit() else ""
        except OSError:
            continue
        if stat and int(stat.rsplit(")", 1)[1].split()[1]) == process.pid:
            children.append(int(entry))
    for pid in children:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


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


def run_notebook(
    notebook: Path,
    scratch: Path,
    time_limit: float,
    memory: int,
    *,
    kernel_dir: Path | None = None,
    count_processes: bool = False,
) -> dict:
    """Execute a submission's code cells then :data:`DUMP_CELL` in a sandboxed kernel; the report
    says which cells failed and whether time or memory ran out. Runs in the driver process.
    ``kernel_dir``: where the kernelspec and the kernel's connection file go (default: beside the
    scratch folder). ``count_processes`` (in the sandbox, whose ``/proc`` shows its own processes
    only): the report's ``processes`` counts those still running at the end besides the kernel."""
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
    spec_dir = kernel_dir or scratch.parent / (scratch.name + "-kernelspec")
    os.environ["JUPYTER_PATH"] = str(spec_dir)
    kernel = _kernelspec(spec_dir, scratch, memory)
    report = {"cells": len(nb.cells) - 1, "errors": [], "timed_out": False, "memory": False}
    report["skipped"] = report["processes"] = 0

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
        if count_processes:
            ours = {1, os.getpid(), getattr(client.km.provisioner, "pid", None)}
            report["processes"] = sum(
                1 for p in os.listdir("/proc") if p.isdigit() and int(p) not in ours
            )
    for i, cell in enumerate(nb.cells[:-1]):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                ename = output.get("ename", "")
                report["errors"].append(f"cell {i + 1}: {ename}: {output.get('evalue', '')[:200]}")
                report["memory"] |= ename == "MemoryError"
                report["timed_out"] |= ename == "KeyboardInterrupt"
    report["timed_out"] |= time.monotonic() - start > time_limit
    return report


def limit_processes(count: int) -> None:
    """At most ``count`` processes and threads of this user, in this (the sandbox's) user
    namespace, from now on: a ``fork`` or a new thread beyond fails."""
    import resource

    _, hard = resource.getrlimit(resource.RLIMIT_NPROC)
    if hard != resource.RLIM_INFINITY:
        count = min(count, hard)
    resource.setrlimit(resource.RLIMIT_NPROC, (count, count))


def main(argv: list[str] | None = None) -> int:
    if __name__ == "__main__" and sys.path and Path(sys.path[0]).resolve() == Path(__file__).parent:
        sys.path.pop(0)  # run as a file: its folder's modules (answers, cli ...) are not top-level
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["kernel"]:
        serve_kernel(argv[1:])
        return 0
    import argparse

    parser = argparse.ArgumentParser(prog="python -m companions.book.sandbox")
    parser.add_argument("command", choices=["run", "check"])
    parser.add_argument("paths", nargs="+", help="run: NOTEBOOK SCRATCH; check: SCRATCH")
    parser.add_argument("--time-limit", type=float, default=600)
    parser.add_argument("--memory", type=int, default=4 << 30)
    parser.add_argument("--report-fd", type=int, default=None, help="where the report goes")
    parser.add_argument("--kernel-dir", default=None, help="the kernelspec's and runtime's folder")
    parser.add_argument("--processes", type=int, default=None, help="RLIMIT_NPROC (in a sandbox)")
    parser.add_argument("--drop-to", type=int, default=None, help="in a sandbox: become this uid")
    args = parser.parse_args(argv)
    if args.drop_to is not None:
        drop_privileges(args.drop_to)
    if args.processes is not None:  # in the sandbox
        if os.getuid() == 0:  # Linux does not limit root's processes: never run a submission so
            parser.error("in the sandbox, run as root needs --drop-to")
        limit_processes(args.processes)
    os.chdir(args.paths[-1])
    if args.command == "check":  # the scratch folder is writable
        Path("check").write_text("ok")
        Path("check").unlink()
        return 0
    if len(args.paths) != 2 or args.report_fd is None:
        parser.error("run needs NOTEBOOK, SCRATCH and --report-fd")
    report = run_notebook(
        Path(args.paths[0]),
        Path(args.paths[1]).resolve(),
        args.time_limit,
        args.memory,
        kernel_dir=Path(args.kernel_dir) if args.kernel_dir else None,
        count_processes=args.processes is not None,
    )
    with os.fdopen(args.report_fd, "w") as f:
        json.dump(report, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
