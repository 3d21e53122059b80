"""The thread count under load (companions.runtime): the logic, not the timing."""

import pytest
import torch

from companions import runtime


def test_threads_for_load_leaves_busy_cores_alone():
    assert runtime.threads_for_load(2, 2, 0.1) == 2  # idle: what torch would use
    assert runtime.threads_for_load(2, 2, 0.6) == 1  # one core busy
    assert runtime.threads_for_load(2, 2, 7.0) == 1  # overloaded: never below one
    assert runtime.threads_for_load(8, 16, 4.2) == 8  # never above the request
    assert runtime.threads_for_load(16, 16, 4.4) == 12
    assert runtime.threads_for_load(16, 16, 4.6) == 11
    assert runtime.threads_for_load(2, 2, 7.0, passive=True) == 2  # sleeping waiters: keep all
    for kw, name in [
        (dict(requested=0, cores=2, load=0.0), "requested"),
        (dict(requested=2, cores=0, load=0.0), "cores"),
        (dict(requested=2, cores=2, load=float("nan")), "load"),
    ]:
        with pytest.raises(ValueError, match=name):
            runtime.threads_for_load(**kw)


def test_configure_threads_sets_torch(monkeypatch):
    before = torch.get_num_threads()
    try:
        assert runtime.configure_threads(1) == 1 == torch.get_num_threads()
        monkeypatch.setenv(runtime.THREADS_ENV, "1")
        assert runtime.configure_threads() == 1
        monkeypatch.setenv(runtime.THREADS_ENV, "auto")
        torch.set_num_threads(2)
        monkeypatch.setattr(runtime.os, "getloadavg", lambda: (5.0, 5.0, 5.0))
        monkeypatch.setattr(runtime, "available_cores", lambda: 2)
        monkeypatch.setattr(runtime, "OPENMP_PASSIVE", False)
        assert runtime.configure_threads() == 1
        torch.set_num_threads(2)
        monkeypatch.setattr(runtime, "OPENMP_PASSIVE", True)
        assert runtime.configure_threads() == 2
        monkeypatch.setattr(runtime, "OPENMP_PASSIVE", False)
        torch.set_num_threads(2)
        monkeypatch.setattr(runtime.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
        assert runtime.configure_threads("auto") == 2
        for bad in ("two", "0", 0):
            with pytest.raises(ValueError, match="threads"):
                runtime.configure_threads(bad)
    finally:
        torch.set_num_threads(before)


def test_busy_machine_rule():
    import companions

    assert not companions._busy(2, 0.3) and companions._busy(2, 1.5)
    assert not companions._busy(16, 14.9) and companions._busy(16, 15.1)


def test_importing_companions_on_a_busy_machine_asks_openmp_to_sleep():
    """In a fresh process (load average faked): busy and companions imported before torch, the
    waiters sleep (and runtime says so); imported after torch, the children get the policy but
    this process cannot; idle, nothing is set."""
    import os

    code = (
        "import os, sys\nos.getloadavg = lambda: ({load}, 0.0, 0.0)\n{first}\n"
        "import companions\nfrom companions import runtime\n"
        "print(os.environ.get('OMP_WAIT_POLICY'), runtime.OPENMP_PASSIVE)"
    )
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    cores = len(os.sched_getaffinity(0))
    for load, first, expected in [
        (cores + 5, "", "PASSIVE True"),
        (cores + 5, "import torch", "PASSIVE False"),
        (0.0, "", "None False"),
    ]:
        assert _last_line_of_fresh_python(code.format(load=load, first=first), env) == expected


def _last_line_of_fresh_python(code: str, env: dict) -> str:
    """The last line that ``code`` prints in a fresh Python with the environment ``env``."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.split("\n")[-2]


def test_importing_companions_first_puts_large_tensors_on_huge_pages():
    """In a fresh process: companions imported before torch asks for transparent huge pages, and
    torch then allocates a large tensor as it does for them, on a page boundary of its own (the
    region it marks with ``madvise``); a user's ``THP_MEM_ALLOC_ENABLE=0`` is kept, and the tensor
    then has torch's usual 64-byte alignment inside the allocator's block, off the page boundary."""
    import os

    code = (
        "import os, companions, torch\n"
        "x = torch.empty(3 << 20, dtype=torch.uint8)\n"
        "print(os.environ.get('THP_MEM_ALLOC_ENABLE'), x.data_ptr() % 4096 == 0)"
    )
    env = {k: v for k, v in os.environ.items() if k != "THP_MEM_ALLOC_ENABLE"}
    for setting, expected in [(None, "1 True"), ("0", "0 False")]:
        run_env = dict(env) if setting is None else dict(env, THP_MEM_ALLOC_ENABLE=setting)
        assert _last_line_of_fresh_python(code, run_env) == expected
