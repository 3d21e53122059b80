"""Device, dtype and seeding: the same chapter runs on CPU and CUDA, and is reproducible.

Same seed, same device: same numbers (``torch.use_deterministic_algorithms`` is switched on).

Threads: :func:`setup` keeps torch's thread count (the cores, or ``$OMP_NUM_THREADS``) and never
lowers it for a busy machine, because the thread count changes the order of floating-point sums
and so the numbers of a training run. On a busy machine the commands that start chapters' kernels
make OpenMP's waiting threads sleep instead (:mod:`companions.book.environment`).
``COMPANIONS_THREADS`` = a number fixes the count; ``auto`` (the default) keeps torch's.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass

import numpy as np
import torch

DTYPES = {"float64": torch.float64, "float32": torch.float32}
THREADS_ENV = "COMPANIONS_THREADS"


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity where the OS reports it)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover (macOS, Windows)
        return os.cpu_count() or 1


def configure_threads(threads: int | str | None = None) -> int:
    """Set torch's thread count and return it. ``threads``: a number (used as it is), or
    ``'auto'`` / ``None`` (the default, or ``$COMPANIONS_THREADS``): torch's own count (the cores,
    or ``$OMP_NUM_THREADS``, which the test runner and the book build set). It never follows the
    machine's load: the thread count changes the order of floating-point sums, and so the numbers
    of a training run, and a chapter must give the same ledger for the same seed on the same
    machine."""
    if threads is None:
        threads = os.environ.get(THREADS_ENV, "auto")
    if isinstance(threads, str) and threads != "auto":
        if not threads.strip().isdigit():
            raise ValueError(
                f"parameter 'threads' (or ${THREADS_ENV}) = {threads!r} is not allowed: "
                "expected 'auto' or a number >= 1"
            )
        threads = int(threads)
    if threads == "auto":
        threads = torch.get_num_threads()
    if threads < 1:
        raise ValueError(f"parameter 'threads' = {threads} is not allowed: expected >= 1")
    torch.set_num_threads(threads)
    return threads


def resolve_device(device: str = "auto") -> torch.device:
    """``'auto'`` gives CUDA where it exists, else CPU; ``'cuda'`` without a GPU is an error."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cpu":
        return torch.device("cpu")
    if device == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(
                "parameter 'device' = 'cuda' is not allowed: "
                "no CUDA device is visible here; use 'auto' or 'cpu'"
            )
        return torch.device("cuda")
    raise ValueError(
        f"parameter 'device' = {device!r} is not allowed: expected one of 'auto', 'cpu', 'cuda'"
    )


def resolve_dtype(dtype: str | torch.dtype = "float64") -> torch.dtype:
    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype not in DTYPES:
        raise ValueError(
            f"parameter 'dtype' = {dtype!r} is not allowed: expected one of {sorted(DTYPES)}"
        )
    return DTYPES[dtype]


def seed_everything(seed: int) -> torch.Generator:
    """Seed Python, NumPy and torch; return a CPU generator for explicit draws."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    return torch.Generator().manual_seed(seed)


@dataclass(frozen=True)
class Runtime:
    """Where and how a chapter computes: ``rt.device``, ``rt.dtype``, ``rt.generator(k)``."""

    device: torch.device
    dtype: torch.dtype
    seed: int

    def generator(self, offset: int = 0) -> torch.Generator:
        """A fresh CPU generator seeded with ``seed + offset`` (draws are made on the CPU and then
        moved, so the same seed gives the same data on every device)."""
        return torch.Generator().manual_seed(self.seed + offset)

    def tensor(self, data) -> torch.Tensor:
        return torch.as_tensor(data, dtype=self.dtype, device=self.device)

    def describe(self) -> str:
        return (
            f"device={self.device.type}, dtype={str(self.dtype).removeprefix('torch.')}, "
            f"seed={self.seed}, torch {torch.__version__}"
        )


def setup(
    device: str = "auto",
    seed: int = 0,
    dtype: str | torch.dtype = "float64",
    threads: int | str | None = None,
) -> Runtime:
    """Resolve the device and dtype, seed every generator, make torch deterministic and choose
    the number of threads (:func:`configure_threads`: by default no more than the free cores)."""
    dev = resolve_device(device)
    configure_threads(threads)
    if dev.type == "cuda":
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True, warn_only=True)
    seed_everything(seed)
    return Runtime(dev, resolve_dtype(dtype), seed)


def solve(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """``torch.linalg.solve(A, B)``, a batch of CPU systems solved one system at a time.

    In torch 2.13 on the CPU, once ``torch.set_num_threads`` has been called (as :func:`setup`
    does), the batched LU factorisation of matrices of about 200 rows or more corrupts its pivots
    (MKL: "Parameter 6 was incorrect on entry to DLASWP") and then loops for ever; one system at
    a time is not affected."""
    if A.dim() <= 2 or A.device.type != "cpu":
        return torch.linalg.solve(A, B)
    if B.dim() == A.dim() - 1 and B.shape == A.shape[:-1]:  # a batch of vectors
        return solve(A, B.unsqueeze(-1)).squeeze(-1)
    batch = torch.broadcast_shapes(A.shape[:-2], B.shape[:-2])
    A = A.expand(*batch, *A.shape[-2:]).reshape(-1, *A.shape[-2:])
    B = B.expand(*batch, *B.shape[-2:]).reshape(-1, *B.shape[-2:])
    X = torch.stack([torch.linalg.solve(a, b) for a, b in zip(A, B)])
    return X.reshape(*batch, *X.shape[-2:])
