"""Device, dtype and seeding: the same chapter runs on CPU and CUDA, and is reproducible.

Same seed, same device: same numbers (``torch.use_deterministic_algorithms`` is switched on).
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass

import numpy as np
import torch

DTYPES = {"float64": torch.float64, "float32": torch.float32}


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


def setup(device: str = "auto", seed: int = 0, dtype: str | torch.dtype = "float64") -> Runtime:
    """Resolve the device and dtype, seed every generator and make torch deterministic."""
    dev = resolve_device(device)
    if dev.type == "cuda":
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True, warn_only=True)
    seed_everything(seed)
    return Runtime(dev, resolve_dtype(dtype), seed)
