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
    from companions.book import environment

    assert not environment.busy(2, 0.3) and environment.busy(2, 1.5)
    assert not environment.busy(16, 14.9) and environment.busy(16, 15.1)


def test_tune_sets_what_is_unset_and_the_wait_policy_only_when_busy(monkeypatch):
    from companions.book import environment

    monkeypatch.setattr(environment.os, "getloadavg", lambda: (50.0, 0.0, 0.0))
    env = {}
    assert environment.tune(env) == {"OMP_WAIT_POLICY": "PASSIVE", "THP_MEM_ALLOC_ENABLE": "1"}
    kept = {"OMP_WAIT_POLICY": "ACTIVE", "THP_MEM_ALLOC_ENABLE": "0"}
    assert environment.tune(dict(kept)) == {}  # a user's settings are kept
    monkeypatch.setattr(environment.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    assert environment.tune({}) == {"THP_MEM_ALLOC_ENABLE": "1"}  # idle: spinning is faster


def _last_line_of_fresh_python(code: str, env: dict) -> str:
    """The last line that ``code`` prints in a fresh Python with the environment ``env``."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.split("\n")[-2]


def test_importing_companions_changes_no_environment_and_runtime_reads_the_policy():
    import os

    code = (
        "import os\nbefore = dict(os.environ)\nimport companions\nfrom companions import runtime"
        "\nprint(dict(os.environ) == before, runtime.OPENMP_PASSIVE)"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY",)}
    assert _last_line_of_fresh_python(code, env) == "True False"
    assert _last_line_of_fresh_python(code, dict(env, OMP_WAIT_POLICY="passive")) == "True True"


def test_huge_pages_for_large_tensors_where_tune_set_them_first():
    """In a fresh process: tune() before torch asks for transparent huge pages, and torch then
    allocates a large tensor as it does for them, on a page boundary of its own; a user's
    ``THP_MEM_ALLOC_ENABLE=0`` is kept, and the tensor then has torch's usual alignment."""
    import os

    code = (
        "import os\nfrom companions.book import environment\nimport torch\n"
        "x = torch.empty(3 << 20, dtype=torch.uint8)\n"
        "print(os.environ.get('THP_MEM_ALLOC_ENABLE'), x.data_ptr() % 4096 == 0)"
    )
    # companions imports torch: tune() must run in a process that has not imported it, as the
    # CLI's kernels are; here a first process sets the variable and a second one inherits it
    env = {k: v for k, v in os.environ.items() if k != "THP_MEM_ALLOC_ENABLE"}
    tuned = dict(env)
    from companions.book import environment

    environment.tune(tuned)
    assert _last_line_of_fresh_python(code, tuned) == "1 True"
    assert _last_line_of_fresh_python(code, dict(env, THP_MEM_ALLOC_ENABLE="0")) == "0 False"
