"""The linear trade-off model of Section 7.2.2 / F.2: feature layout, dictionary, sampling.

Coordinates of ``z`` are ordered ``[S | P_0 | P_1 | ... | P_{T-1} | U]``: ``s`` shared invariant
features, ``r - s`` private ones per task, then ``n_spurious`` spurious ones (Figure 7.2). Tasks are
numbered from 0 here (the source numbers them from 1). ``x = M z`` with an orthonormal ``M``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Layout:
    """Sizes of the model: ``s = |S|``, ``r = |R_t|``, ``T`` tasks and ``n_spurious = |U|``."""

    s: int
    r: int
    T: int
    n_spurious: int

    def __post_init__(self):
        if self.s < 1:
            raise ValueError(f"parameter 's' = {self.s} is not allowed: it must be at least 1")
        if self.r <= self.s:
            raise ValueError(
                f"parameter 'r' = {self.r} is not allowed: it must exceed s = {self.s}"
            )
        if self.T < 1:
            raise ValueError(f"parameter 'T' = {self.T} is not allowed: it must be at least 1")
        if self.n_spurious < 0:
            raise ValueError(
                f"parameter 'n_spurious' = {self.n_spurious} is not allowed: it must be >= 0"
            )

    @property
    def k(self) -> int:
        """``|R|``, the number of invariant features, also the representation's width."""
        return self.s + self.T * (self.r - self.s)

    @property
    def d(self) -> int:
        return self.k + self.n_spurious

    def shared(self) -> torch.Tensor:
        return torch.arange(self.s)

    def private(self, t: int) -> torch.Tensor:
        if not 0 <= t < self.T:
            raise ValueError(f"task {t} is not in 0..{self.T - 1}")
        start = self.s + t * (self.r - self.s)
        return torch.arange(start, start + self.r - self.s)

    def task_features(self, t: int) -> torch.Tensor:
        """``R_t = S u P_t``, in that order."""
        return torch.cat([self.shared(), self.private(t)])

    def spurious(self) -> torch.Tensor:
        return torch.arange(self.k, self.d)


def dictionary(d: int, generator: torch.Generator, dtype=torch.float64) -> torch.Tensor:
    """A random orthonormal ``M`` (QR of a Gaussian matrix, signs fixed so it is Haar)."""
    A = torch.randn(d, d, generator=generator, dtype=torch.float64)
    Q, R = torch.linalg.qr(A)
    return (Q * torch.sign(torch.diagonal(R))).to(dtype)


def sample_z(
    layout: Layout, tasks, n: int, generator: torch.Generator, dtype=torch.float32
) -> tuple:
    """``n`` hidden vectors of (7.6): each picks a task uniformly from ``tasks`` (an even mixture),
    draws ``z_{R_t} ~ N(0, I)``, ``z_U ~ N(0, I)`` and sets the other invariant features to 0.
    Returns ``(z, task_ids)`` with ``z`` of shape ``(n, d)``."""
    tasks = torch.as_tensor(list(tasks))
    if tasks.numel() == 0:
        raise ValueError("parameter 'tasks' is empty: pre-training needs at least one task")
    ids = tasks[torch.randint(len(tasks), (n,), generator=generator)]
    g = torch.randn(n, layout.d, generator=generator, dtype=torch.float64)
    keep = torch.zeros(n, layout.d, dtype=torch.bool)
    keep[:, : layout.s] = True
    keep[:, layout.k :] = True
    for t in tasks.tolist():
        rows = ids == t
        keep[rows.nonzero(), layout.private(t)] = True
    return (g * keep).to(dtype), ids


def positive(layout: Layout, z: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """(7.7): the same ``z_R`` with a fresh ``z_U^+ ~ N(0, I)``."""
    zp = z.clone()
    fresh = torch.randn(z.shape[0], layout.n_spurious, generator=generator, dtype=torch.float64)
    zp[:, layout.k :] = fresh.to(z.dtype)
    return zp


def task_vectors(layout: Layout, generator: torch.Generator, dtype=torch.float64) -> torch.Tensor:
    """Ground-truth ``u_t^*`` for every task, as rows of a ``(T, d)`` matrix supported on ``R_t``,
    with ``v_{t,1} = v_{t,2} = 1/2`` (the source's illustrative case) so ``||u_t^*|| = 1``."""
    U = torch.zeros(layout.T, layout.d, dtype=torch.float64)
    for t in range(layout.T):
        a = torch.randn(layout.s, generator=generator, dtype=torch.float64)
        b = torch.randn(layout.r - layout.s, generator=generator, dtype=torch.float64)
        U[t, layout.shared()] = a / a.norm() / 2**0.5
        U[t, layout.private(t)] = b / b.norm() / 2**0.5
    return U.to(dtype)
