"""The special cases' data distributions of Section 3.4 and Appendix B.5, sampled for ``S`` seeds at
once: every sampler returns ``X`` (S, n, d) and ``y`` (S, n), and each seed's rows are independent.

* mixtures of Gaussians (B.233): component ``j`` has mean ``mu_j``, standard deviation ``sigma_j``
  (Assumption 3.15 writes ``Sigma_j = sigma_j I`` but uses ``sigma_j`` as a standard deviation,
  (B.311) ff.; this book follows the use), label ``y_(j)`` and weight ``q(y) p_j``;
* the XOR mixture of Assumption B.36 (Refinetti et al. 2021);
* parity with structured inputs (B.396)-(B.397), ``M = I`` (the source's WLOG);
* uniform parity (Assumption B.53): the same with ``r = 1, p_A = 0, p_o = 1/2``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class Mixture:
    """A mixture of isotropic Gaussians with labelled components (B.233)."""

    means: torch.Tensor  # (r, d)
    sigmas: torch.Tensor  # (r,)
    labels: torch.Tensor  # (r,) in {+-1}
    weights: torch.Tensor  # (r,) component probabilities q(y_(j)) p_j, summing to 1

    @property
    def d(self) -> int:
        return self.means.shape[1]

    @property
    def directions(self) -> torch.Tensor:
        """``D_j = mu_j / ||mu_j||``."""
        return self.means / self.means.norm(dim=1, keepdim=True)

    def sample(self, seeds: int, n: int, generator: torch.Generator, dtype=torch.float32):
        comp = torch.multinomial(self.weights.double(), seeds * n, True, generator=generator)
        comp = comp.reshape(seeds, n)
        X = torch.randn(seeds, n, self.d, generator=generator, dtype=torch.float64)
        # mean + sigma * noise, in place: the same numbers, two (seeds, n, d) tensors fewer (the
        # paper preset's 10^6 x 300 draw held four, 9.6 GB)
        X.mul_(self.sigmas.double()[comp][..., None]).add_(self.means.double()[comp])
        return X.to(dtype), self.labels.double()[comp].to(dtype)


def orthogonal_mixture(d: int, r: int, mean_norm: float, sigma: float) -> Mixture:
    """``r`` components with orthogonal means ``mu_j = mean_norm sqrt(d) e_j`` (so
    ``||mu~_j|| = mean_norm``), common ``sigma``, alternating labels ``+, -, +, ...`` and equal
    weights (``q(+-1) = 1/2`` needs ``r`` even)."""
    if r < 2 or r % 2 or r > d:
        raise ValueError(
            f"parameter 'r' = {r} is not allowed: it must be even, >= 2 and <= d = {d}"
        )
    if not mean_norm > 0 or not sigma > 0:
        raise ValueError("parameters 'mean_norm' and 'sigma' must be > 0")
    means = torch.zeros(r, d, dtype=torch.float64)
    means[torch.arange(r), torch.arange(r)] = mean_norm * d**0.5
    labels = torch.tensor([1.0 if j % 2 == 0 else -1.0 for j in range(r)], dtype=torch.float64)
    return Mixture(
        means,
        torch.full((r,), float(sigma), dtype=torch.float64),
        labels,
        torch.full((r,), 1.0 / r, dtype=torch.float64),
    )


def xor_mixture(d: int, sigma: float) -> Mixture:
    """Assumption B.36: ``mu_1 = -mu_2 = sqrt(d) e_1``, ``mu_3 = -mu_4 = sqrt(d) e_2``, labels
    ``(+1, +1, -1, -1)``, weights 1/4, covariance ``sigma_B^2 I`` with ``sigma_B = sigma``."""
    if d < 2:
        raise ValueError(f"parameter 'd' = {d} is not allowed: it must be >= 2")
    if not sigma > 0:
        raise ValueError(f"parameter 'sigma' = {sigma} is not allowed: it must be > 0")
    means = torch.zeros(4, d, dtype=torch.float64)
    means[0, 0], means[1, 0], means[2, 1], means[3, 1] = d**0.5, -(d**0.5), d**0.5, -(d**0.5)
    labels = torch.tensor([1.0, 1.0, -1.0, -1.0], dtype=torch.float64)
    return Mixture(
        means,
        torch.full((4,), float(sigma), dtype=torch.float64),
        labels,
        torch.full((4,), 0.25, dtype=torch.float64),
    )


@dataclass
class Parity:
    """Parity with structured inputs (B.396)-(B.397), ``M = I``: blocks ``A_j = {(j-1)k, .., jk-1}``
    (0-based), ``y = sign(sum_j prod_{l in A_j} phi_l)``, ``phi ~ (1 - 2 r p_A) X_U +
    sum_j p_A (X_{j,+} + X_{j,-})``, background ``phi_l in {+1, -1, 0}`` w.p. ``(p_o, p_o,
    1 - 2 p_o)``."""

    d: int
    k: int
    r: int
    p_A: float
    p_o: float

    def __post_init__(self):
        if self.r < 1 or self.r % 2 == 0:
            raise ValueError(f"parameter 'r' = {self.r} is not allowed: it must be odd and >= 1")
        if self.k < 1:
            raise ValueError(f"parameter 'k' = {self.k} is not allowed: it must be >= 1")
        if self.r * self.k > self.d:
            raise ValueError(f"parameter 'd' = {self.d} is not allowed: it must be >= r k")
        if not 0 <= self.p_A <= 1 / (2 * self.r):
            raise ValueError(
                f"parameter 'p_A' = {self.p_A} is not allowed: the mixture needs "
                f"0 <= p_A <= 1/(2r) = {1 / (2 * self.r)}"
            )
        if not 0 <= self.p_o <= 0.5:
            raise ValueError(f"parameter 'p_o' = {self.p_o} is not allowed: it must be in [0, 1/2]")

    @property
    def directions(self) -> torch.Tensor:
        """``D_j = sum_{l in A_j} M_l / sqrt(k)`` (B.399), shape (r, d)."""
        D = torch.zeros(self.r, self.d, dtype=torch.float64)
        for j in range(self.r):
            D[j, j * self.k : (j + 1) * self.k] = self.k**-0.5
        return D

    def label(self, phi_A: torch.Tensor) -> torch.Tensor:
        """``sign(sum_j XOR(phi_{A_j}))`` of a (..., r k) block part (r odd, so never 0 on the
        uniform part; on a structured pattern the one nonzero block decides)."""
        blocks = phi_A.reshape(*phi_A.shape[:-1], self.r, self.k).prod(-1)
        return torch.sign(blocks.sum(-1))

    def sample(self, seeds: int, n: int, generator: torch.Generator, dtype=torch.float32):
        rk = self.r * self.k
        u = torch.rand(seeds, n, generator=generator, dtype=torch.float64)
        phi_A = 2.0 * torch.randint(0, 2, (seeds, n, rk), generator=generator).double() - 1
        # component: 0..2r-1 structured (block j = c // 2, sign + for even c), 2r: uniform
        c = torch.floor(u / self.p_A).long() if self.p_A > 0 else torch.full_like(u, 2 * rk).long()
        structured = c < 2 * self.r
        block = torch.where(structured, c // 2, 0)
        sign = torch.where(c % 2 == 0, 1.0, -1.0).double()
        in_block = (torch.arange(rk)[None, None, :] // self.k) == block[..., None]
        pattern = torch.where(in_block, sign[..., None], torch.zeros(()).double())
        phi_A = torch.where(structured[..., None], pattern, phi_A)
        v = torch.rand(seeds, n, self.d - rk, generator=generator, dtype=torch.float64)
        background = (v < self.p_o).double() - ((v >= self.p_o) & (v < 2 * self.p_o)).double()
        X = torch.cat([phi_A, background], -1)
        return X.to(dtype), self.label(phi_A).to(dtype)


def uniform_parity(d: int, k: int) -> Parity:
    """Assumption B.53: ``r = 1, p_A = 0, p_o = 1/2, M = I`` (``x`` uniform on ``{+-1}^d``,
    ``y = prod_{l in A} x_l``); the assumption asks for ``k`` even and ``d >= 2 k^2``."""
    return Parity(d=d, k=k, r=1, p_A=0.0, p_o=0.5)
