"""The thread count under load (companions.runtime): the logic, not the timing."""

import pytest
import torch

from companions import runtime


def test_configure_threads_sets_torch_and_never_follows_the_load(monkeypatch):
    before = torch.get_num_threads()
    try:
        assert runtime.configure_threads(1) == 1 == torch.get_num_threads()
        monkeypatch.setenv(runtime.THREADS_ENV, "1")
        assert runtime.configure_threads() == 1
        monkeypatch.setenv(runtime.THREADS_ENV, "auto")
        torch.set_num_threads(2)
        monkeypatch.setattr(runtime.os, "getloadavg", lambda: (50.0, 50.0, 50.0), raising=False)
        assert runtime.configure_threads() == 2  # a busy machine changes nothing: same numbers
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


def test_importing_companions_changes_no_environment():
    import os

    code = (
        "import os\nbefore = dict(os.environ)\nimport companions\nprint(dict(os.environ) == before)"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY",)}
    assert _last_line_of_fresh_python(code, env) == "True"


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
