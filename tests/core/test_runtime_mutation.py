"""Mutation tests of companions.runtime (issue 23): each expected value is worked out by hand in a
comment, or is a constant the source states (a default, a message, an environment setting)."""

import math
import os
import re
import subprocess
import sys

import pytest
import torch

from companions import runtime as R


@pytest.fixture
def threads_kept():
    """torch's thread count as it was, whatever a test sets."""
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


# -- available_cores -------------------------------------------------------------------------------
def test_available_cores_is_this_process_affinity(monkeypatch):
    calls = []

    def affinity(pid):
        calls.append(pid)
        return {0, 2, 5}

    monkeypatch.setattr(R.os, "sched_getaffinity", affinity)
    assert R.available_cores() == 3
    assert calls == [0]  # pid 0: this process


def test_available_cores_without_an_affinity_call(monkeypatch):
    # macOS / Windows: os.cpu_count(), or 1 where it is unknown (None)
    monkeypatch.delattr(R.os, "sched_getaffinity")
    monkeypatch.setattr(R.os, "cpu_count", lambda: 3)
    assert R.available_cores() == 3
    monkeypatch.setattr(R.os, "cpu_count", lambda: None)
    assert R.available_cores() == 1


# -- configure_threads -----------------------------------------------------------------------------
def test_configure_threads_env_unset_means_auto(monkeypatch, threads_kept):
    monkeypatch.delenv(R.THREADS_ENV, raising=False)
    torch.set_num_threads(2)
    assert R.configure_threads(None) == 2
    monkeypatch.setenv(R.THREADS_ENV, " 1 ")  # a number with spaces is a number
    assert R.configure_threads() == 1


def test_configure_threads_message(monkeypatch):
    monkeypatch.delenv(R.THREADS_ENV, raising=False)
    msg = (
        "parameter 'threads' (or $COMPANIONS_THREADS) = 'two' is not allowed: "
        "expected 'auto' or a number >= 1"
    )
    with pytest.raises(ValueError, match="^" + re.escape(msg) + "$"):
        R.configure_threads("two")


# -- resolve_dtype, Runtime ------------------------------------------------------------------------
def test_resolve_dtype_default_is_float64():
    assert R.resolve_dtype() is torch.float64


def test_runtime_generator_default_offset_is_zero():
    rt = R.Runtime(torch.device("cpu"), torch.float64, 11)
    want = torch.randn(5, generator=torch.Generator().manual_seed(11))  # seed + 0
    assert torch.equal(torch.randn(5, generator=rt.generator()), want)
    want = torch.randn(5, generator=torch.Generator().manual_seed(14))  # seed + 3
    assert torch.equal(torch.randn(5, generator=rt.generator(3)), want)


def test_runtime_tensor_is_on_its_device():
    # the meta device stands in for a GPU: no data, but a device other than the CPU
    rt = R.Runtime(torch.device("meta"), torch.float32, 0)
    t = rt.tensor([1, 2, 3])
    assert t.device.type == "meta" and t.dtype == torch.float32 and t.shape == (3,)


def test_describe_names_device_dtype_seed_and_torch():
    rt = R.Runtime(torch.device("cpu"), torch.float32, 7)
    assert rt.describe() == f"device=cpu, dtype=float32, seed=7, torch {torch.__version__}"


# -- setup -----------------------------------------------------------------------------------------
def test_setup_defaults(monkeypatch, threads_kept):
    # the signature: device 'auto' (the CPU without a GPU), seed 0, float64
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    rt = R.setup()
    assert (rt.device.type, rt.seed, rt.dtype) == ("cpu", 0, torch.float64)


def test_setup_is_deterministic_but_only_warns(monkeypatch, threads_kept):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    torch.use_deterministic_algorithms(False)
    try:
        R.setup("cpu")
        assert torch.are_deterministic_algorithms_enabled()
        assert torch.is_deterministic_algorithms_warn_only_enabled()
    finally:
        torch.use_deterministic_algorithms(True, warn_only=True)


def test_solve_solves_a_batch_after_setup():
    """After setup (which sets torch's thread count), runtime.solve returns the solution of a
    batch of 200 x 200 systems, broadcast and vector right-hand sides included; torch.linalg.solve
    loops for ever there (torch 2.13, MKL). Run in a child process, so that a regression fails on
    the timeout instead of hanging the suite."""
    code = (
        "import torch\n"
        "from companions import runtime\n"
        "runtime.setup('cpu', 0, threads=2)\n"
        "g = torch.Generator().manual_seed(0)\n"
        "A = torch.randn(3, 200, 200, generator=g, dtype=torch.float64)\n"
        "A = A + 200 * torch.eye(200, dtype=torch.float64)\n"
        "B = torch.randn(3, 200, 2, generator=g, dtype=torch.float64)\n"
        "assert torch.allclose(A @ runtime.solve(A, B), B)\n"
        "v = torch.randn(3, 200, generator=g, dtype=torch.float64)\n"
        "x = runtime.solve(A, v)\n"
        "assert x.shape == (3, 200) and torch.allclose((A @ x[..., None])[..., 0], v)\n"
        "b = torch.randn(200, 1, generator=g, dtype=torch.float64)\n"
        "assert torch.allclose(A @ runtime.solve(A, b), b.expand(3, 200, 1))\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", code], env=env, timeout=60, capture_output=True)
    assert done.returncode == 0, done.stderr.decode()[-2000:]


def test_setup_passes_its_thread_count(monkeypatch, threads_kept):
    torch.set_num_threads(2)  # 'auto' would keep 2
    R.setup("cpu", threads=1)
    assert torch.get_num_threads() == 1


def test_setup_sets_the_cublas_workspace_on_cuda_only(monkeypatch, threads_kept):
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    R.setup("cpu")
    assert "CUBLAS_WORKSPACE_CONFIG" not in os.environ
    # a GPU (faked: nothing is put on it): the workspace cuBLAS needs to be deterministic
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    rt = R.setup("cuda")
    assert rt.device.type == "cuda"
    assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":16:8")  # a setting of the user's is kept
    R.setup("cuda")
    assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":16:8"
    assert math.isfinite(torch.rand(1).item())  # torch still works on the CPU afterwards
