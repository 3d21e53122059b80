"""The data family F_Xi of Section 2.3 (eq. (2.1)) and the generators the source uses.

A distribution is given by a dictionary ``M`` (d x D, orthonormal columns), a relevant set ``A``
(|A| = k), a label set ``P`` (y = +1 iff sum_{j in A} phi~_j in P), and a law of the hidden presence
vector phi~ in {0,1}^D. Every generator here is exchangeable on ``A``, so the law of the relevant
block is summarised by the law of ``S = sum_{j in A} phi~_j`` (``s_law``, exact fractions), and all
population moments (mean, sigma~, gamma) are closed forms computed from it.

Normalisation (Section 2.3.1): ``x = (x~ - E x~) / sigma~`` with the *population* mean and
``sigma~^2 = E sum_i (x~_i - E x~_i)^2 = sum_j Var(phi~_j)`` (M orthonormal), i.e. ``x = M phi``
with ``phi = (phi~ - E phi~) / sigma~``.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from fractions import Fraction

import torch


def _frac(p) -> Fraction:
    return p if isinstance(p, Fraction) else Fraction(p).limit_denominator(10**6)


def binomial_law(k: int, p) -> list[Fraction]:
    """``Pr[Bin(k, p) = s]`` for ``s = 0..k``, exact."""
    p = _frac(p)
    return [math.comb(k, s) * p**s * (1 - p) ** (k - s) for s in range(k + 1)]


@dataclass
class Distribution:
    """One member of F_Xi (or of F_Xi0 without structure), eq. (2.1).

    ``kind`` names the generator; ``s_law[s] = Pr[S = s]``; ``p_o`` is the background marginal
    (A2); ``bg_mix`` is for the parity mixture only (its background law differs per component).
    """

    kind: str
    d: int
    D: int
    k: int
    A: tuple[int, ...]
    P: frozenset
    M: torch.Tensor
    s_law: list[Fraction]
    p_o: Fraction
    mixture_weight: Fraction | None = None  # p_o of D_A^mix: the weight of the uniform part D^(0)
    notes: dict = field(default_factory=dict)

    # -- closed-form population moments ------------------------------------------------------
    def label_of_s(self, s: int) -> int:
        return 1 if s in self.P else -1

    @property
    def p_relevant(self) -> Fraction:
        """``E phi~_j`` for ``j in A`` (exchangeability): ``E[S] / k``."""
        return sum(Fraction(s) * p for s, p in enumerate(self.s_law)) / self.k

    @property
    def mean_y(self) -> Fraction:
        return sum(self.label_of_s(s) * p for s, p in enumerate(self.s_law))

    @property
    def positive_rate(self) -> Fraction:
        """``Pr[y = +1]``; (A0) asks for 1/2."""
        return sum(p for s, p in enumerate(self.s_law) if s in self.P)

    @property
    def gamma(self) -> Fraction:
        """(A1): ``gamma = E[y phi~_i] - E[y] E[phi~_i]`` for ``i in A`` (the same for every i)."""
        e_y_phi = sum(
            self.label_of_s(s) * p * Fraction(s, self.k) for s, p in enumerate(self.s_law)
        )
        return e_y_phi - self.mean_y * self.p_relevant

    @property
    def sigma2(self) -> Fraction:
        """``sigma~^2 = k p_A (1 - p_A) + (D - k) p_o (1 - p_o)`` (Bernoulli marginals, M
        orthonormal)."""
        pa = self.p_relevant
        return self.k * pa * (1 - pa) + (self.D - self.k) * self.p_o * (1 - self.p_o)

    @property
    def sigma(self) -> float:
        return math.sqrt(self.sigma2)

    @property
    def mean_phi(self) -> torch.Tensor:
        """``E phi~`` (length D, float64)."""
        m = torch.full((self.D,), float(self.p_o), dtype=torch.float64)
        m[list(self.A)] = float(self.p_relevant)
        return m

    @property
    def mu(self) -> Fraction:
        """``mu = sum_{j in A} E phi~_j`` of the proof of Lemma 2.5 (A.6)."""
        return self.k * self.p_relevant

    @property
    def signal_direction(self) -> torch.Tensor:
        """``sum_{j in A} M_j`` (the ground-truth direction of Lemma 2.5 and Figure 2.2)."""
        return self.M[:, list(self.A)].sum(dim=1)

    # -- sampling ---------------------------------------------------------------------------
    def sample_phi_tilde(self, n: int, generator: torch.Generator) -> torch.Tensor:
        """``n`` hidden vectors phi~ in {0,1}^D (float64, CPU)."""
        A = list(self.A)
        bg = [j for j in range(self.D) if j not in set(A)]
        if self.kind == "parity-mixture":
            w = float(self.mixture_weight)
            uniform = torch.rand(n, generator=generator, dtype=torch.float64) < w
            phi_uniform = (
                torch.rand(n, self.D, generator=generator, dtype=torch.float64) < 0.5
            ).double()
            q = w / (2 - 2 * w)
            phi_struct = torch.zeros(n, self.D, dtype=torch.float64)
            phi_struct[:, bg] = (
                torch.rand(n, len(bg), generator=generator, dtype=torch.float64) < q
            ).double()
            block = (torch.rand(n, generator=generator, dtype=torch.float64) < 0.5).double()
            phi_struct[:, A] = block.unsqueeze(1).expand(-1, len(A))
            phi = torch.where(uniform.unsqueeze(1), phi_uniform, phi_struct)
            return phi
        # independent coordinates
        probs = torch.full((self.D,), float(self.p_o), dtype=torch.float64)
        probs[A] = float(self.notes["p_A"])
        return (torch.rand(n, self.D, generator=generator, dtype=torch.float64) < probs).double()

    def labels(self, phi_tilde: torch.Tensor) -> torch.Tensor:
        """Eq. (2.1): ``y = +1`` iff ``sum_{j in A} phi~_j in P``."""
        s = phi_tilde[..., list(self.A)].sum(-1).round().long()
        table = torch.tensor(
            [self.label_of_s(v) for v in range(self.k + 1)],
            dtype=phi_tilde.dtype,
            device=phi_tilde.device,
        )
        return table[s]

    def normalise(self, phi_tilde: torch.Tensor) -> torch.Tensor:
        """``phi = (phi~ - E phi~) / sigma~`` (Section 2.3.1), population moments."""
        return (phi_tilde - self.mean_phi.to(phi_tilde)) / self.sigma

    def inputs(self, phi_tilde: torch.Tensor) -> torch.Tensor:
        """``x = M phi`` (rows are examples)."""
        return self.normalise(phi_tilde) @ self.M.to(phi_tilde).T

    def sample(self, n: int, generator: torch.Generator, device="cpu", dtype=torch.float64):
        """``(x, y, phi~)``: ``n`` normalised examples, drawn on the CPU and moved."""
        phi = self.sample_phi_tilde(n, generator)
        x, y = self.inputs(phi), self.labels(phi)
        return x.to(device=device, dtype=dtype), y.to(device=device, dtype=dtype), phi.to(device)

    # -- exact enumeration (tiny D) ---------------------------------------------------------
    def support(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Every ``phi~ in {0,1}^D`` with its probability (float64), for ``D <= 20``."""
        if self.D > 20:
            raise ValueError(f"parameter 'D' = {self.D} is too large to enumerate (at most 20)")
        grid = torch.tensor(list(itertools.product((0.0, 1.0), repeat=self.D)), dtype=torch.float64)
        A = list(self.A)
        bg = [j for j in range(self.D) if j not in set(A)]
        if self.kind == "parity-mixture":
            w = float(self.mixture_weight)
            q = w / (2 - 2 * w)
            s = grid[:, A].sum(1)
            const = ((s == 0) | (s == self.k)).double() * 0.5
            nb = grid[:, bg].sum(1)
            p_bg = q**nb * (1 - q) ** (len(bg) - nb)
            prob = w * 0.5**self.D + (1 - w) * const * p_bg
        else:
            probs = torch.full((self.D,), float(self.p_o), dtype=torch.float64)
            probs[A] = float(self.notes["p_A"])
            prob = torch.where(grid == 1, probs, 1 - probs).prod(1)
        return grid, prob


def random_dictionary(d: int, D: int, generator: torch.Generator) -> torch.Tensor:
    """A d x D matrix with orthonormal columns (QR of a Gaussian matrix, float64, CPU)."""
    if D > d:
        raise ValueError(f"parameter 'D' = {D} is not allowed: M is orthonormal, so D <= d = {d}")
    q, r = torch.linalg.qr(torch.randn(d, D, generator=generator, dtype=torch.float64))
    return q * torch.sign(torch.diagonal(r)).unsqueeze(0)


def random_subset(D: int, k: int, generator: torch.Generator) -> tuple[int, ...]:
    return tuple(sorted(torch.randperm(D, generator=generator)[:k].tolist()))


def _check(d, D, k):
    if not 1 <= k <= D:
        raise ValueError(f"parameter 'k' = {k} is not allowed: expected 1 <= k <= D = {D}")
    if D > d:
        raise ValueError(f"parameter 'D' = {D} is not allowed: M is orthonormal, so D <= d = {d}")


def parity_mixture(
    d: int, D: int, *, k: int, p_o, generator: torch.Generator, A=None, M=None
) -> Distribution:
    """The mixture D_A^mix = p_o D^(0) + (1 - p_o) D^(1) of the proof of Theorem 2.2 (Section A.5),
    also the main simulation of Section A.7.1: P = odd numbers (parity labels), D^(0) uniform on
    {0,1}^D, D^(1) with phi~_A all 0 or all 1 (1/2 each) and background Bern(p_o / (2 - 2 p_o))."""
    _check(d, D, k)
    p_o = _frac(p_o)
    if not 0 < p_o <= Fraction(1, 2):
        raise ValueError(f"parameter 'p_o' = {float(p_o)} is not allowed: expected 0 < p_o <= 1/2")
    M = random_dictionary(d, D, generator) if M is None else M
    A = random_subset(D, k, generator) if A is None else tuple(A)
    law = [p_o * b for b in binomial_law(k, Fraction(1, 2))]
    law[0] += (1 - p_o) / 2
    law[k] += (1 - p_o) / 2
    return Distribution(
        "parity-mixture", d, D, k, A, frozenset(range(1, k + 1, 2)), M, law, p_o, mixture_weight=p_o
    )


def interval(
    d: int,
    D: int,
    *,
    k: int,
    generator: torch.Generator,
    p_A=Fraction(2, 3),
    p_o=Fraction(1, 2),
    lo: int = 20,
    hi: int = 30,
    A=None,
    M=None,
) -> Distribution:
    """The interval labeling of Section A.7.1: independent phi~_i, Pr = p_A on A and p_o elsewhere,
    y = +1 iff sum_A phi~_i in [lo, hi] (the source: d=500, D=100, k=30, p_A=2/3, [20, 30])."""
    _check(d, D, k)
    M = random_dictionary(d, D, generator) if M is None else M
    A = random_subset(D, k, generator) if A is None else tuple(A)
    p_A, p_o = _frac(p_A), _frac(p_o)
    P = frozenset(s for s in range(max(lo, 1), min(hi, k) + 1))
    return Distribution("interval", d, D, k, A, P, M, binomial_law(k, p_A), p_o, notes={"p_A": p_A})


def without_structure(dist: Distribution) -> Distribution:
    """The same A, P and M with (A1'): every phi~_i ~ Bern(1/2) independently (F_Xi0, Theorem
    2.4)."""
    half = Fraction(1, 2)
    return Distribution(
        "uniform",
        dist.d,
        dist.D,
        dist.k,
        dist.A,
        dist.P,
        dist.M,
        binomial_law(dist.k, half),
        half,
        notes={"p_A": half, "structured": dist.kind},
    )
