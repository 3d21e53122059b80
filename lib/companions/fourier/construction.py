"""The explicit max-margin network (Lemma 4.11 = C.18)."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import torch


@dataclass
class Construction:
    """The network of Lemma C.18: ``U (m*, k, p)``, ``W (m*, p)``, each neuron's frequency and its
    phases in the convention ``beta cos(theta + 2 pi zeta a / p)``."""

    U: torch.Tensor
    W: torch.Tensor
    zeta: torch.Tensor
    phases_u: torch.Tensor  # (m*, k)
    phase_w: torch.Tensor  # (m*,)
    beta: float
    scale: float = field(
        default=0.0
    )  # C = beta^(k+1) 2^(k-1) k!: f(a)[c] = C sum_zeta cos_zeta(sum a - c)


def _construction_terms(k: int):
    """The neurons of one frequency in the construction of Lemma 4.11 / C.18, as ``(b, c, s)``:
    ``b`` in {0,1}^(k+1) with an even number of ones picks cos (0) or sin (1) for each of the k
    inputs and the output; ``c`` in {1} x {+-1}^(k-1) are the input signs; ``s`` is the output's
    sign, (-1)^(|b|/2) times the product of ``c``. 2^k * 2^(k-1) = 2^(2k-1) terms. Shared by the
    float network (:func:`construction`) and its exact check (:func:`construction_identity`)."""
    for b in itertools.product((0, 1), repeat=k + 1):
        if sum(b) % 2:
            continue
        sign_b = -1 if sum(b) % 4 == 2 else 1
        for tail in itertools.product((1, -1), repeat=k - 1):
            c = (1, *tail)
            yield b, c, sign_b * math.prod(c)


def construction(p: int, k: int, dtype=torch.float64, device="cpu") -> Construction:
    """The ``2^(2k-1)(p-1)/2`` neurons of Lemma 4.11 / C.18, each of norm 1.

    For every frequency zeta, every ``b in {0,1}^(k+1)`` with an even number of ones (the nonzero
    terms of eq. C.21, with ``a_{k+1} = -c``) and every sign vector ``c in {+-1}^k`` with
    ``c_1 = +1`` (half of the signed sum of Lemma C.16, Part 3, since ``c`` and ``-c`` give the same
    term) one neuron: ``u_j = beta c_j T_{b_j}(2 pi zeta a / p)`` with ``T_0 = cos``, ``T_1 = sin``,
    and ``w = beta s T~_{b_{k+1}}(2 pi zeta c / p)`` with ``T~_0 = cos``, ``T~_1 = -sin`` and
    ``s = (-1)^[sum b = 2 mod 4] prod_j c_j``; ``beta = sqrt(2 / ((k+1) p))``.
    """
    beta = math.sqrt(2 / ((k + 1) * p))
    grid = torch.arange(p, dtype=dtype)
    phase = {
        (0, 1): 0.0,
        (0, -1): math.pi,
        (1, 1): -math.pi / 2,
        (1, -1): math.pi / 2,
    }  # (T, sign) -> theta
    Us, Ws, zetas, ph_u, ph_w = [], [], [], [], []
    for zeta in range(1, (p - 1) // 2 + 1):
        ang = 2 * math.pi * zeta * grid / p
        trig = (torch.cos(ang), torch.sin(ang))
        for b, c, s in _construction_terms(k):
            Us.append(torch.stack([beta * c[j] * trig[b[j]] for j in range(k)]))
            Ws.append(beta * s * (-trig[1] if b[k] else trig[0]))
            zetas.append(zeta)
            ph_u.append([phase[(b[j], c[j])] for j in range(k)])
            ph_w.append(phase[(b[k], -s if b[k] else s)])
    U, W = torch.stack(Us).to(device), torch.stack(Ws).to(device)
    return Construction(
        U,
        W,
        torch.tensor(zetas),
        torch.tensor(ph_u, dtype=dtype),
        torch.tensor(ph_w, dtype=dtype),
        beta,
        beta ** (k + 1) * 2 ** (k - 1) * math.factorial(k),
    )


def neuron_count_table(nonzero_terms: dict) -> str:
    """The neuron count of Lemma 4.11 as a displayed derivation (markdown), from the number of
    nonzero terms of eq. (C.21) with ``k + 1`` variables (``{k: terms}``, computed by sympy): each
    term takes ``2^(k-1)`` neurons (Lemma C.16, half form), so ``2^(k-1) * terms`` per frequency,
    set beside the ``2^(2k-1)`` of Lemma C.18's proof and the "56" of Lemma C.17's proof (k = 3)."""
    rows = [
        "| k | nonzero terms of (C.21), k+1 variables | neurons per term | per frequency "
        "| $2^{2k-1}$ | the source |",
        "|---|---|---|---|---|---|",
    ]
    for k, terms in sorted(nonzero_terms.items()):
        if k < 1 or terms < 0:
            raise ValueError(f"parameter 'nonzero_terms' has a bad entry {k}: {terms}")
        src = "56 (Lemma C.17), 32 (Lemma C.18)" if k == 3 else ""
        rows.append(
            f"| {k} | {terms} | {2 ** (k - 1)} | {terms * 2 ** (k - 1)} | {2 ** (2 * k - 1)} "
            f"| {src} |"
        )
    return "\n".join(rows)
