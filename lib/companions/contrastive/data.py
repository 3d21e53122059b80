"""The sparse-coding data model of the two papers, with majority and minority features.

Sources: [000] = Liao, Zhang, Zhou, Zhang (UniReps 2025), eqs (1)-(10); [001] = Liao, Zhou, Zhang,
Wang, Zhang (ICLR-style version), Assumptions 3.1-3.4, Definition 3.1, eq (6). Equation numbers
without a tag are [001]'s.

Every tensor carries a leading *run* dimension ``R``: one run is one (configuration, repeat), so a
whole sweep over ``eps_min`` and the noise level trains as one batched computation. Random draws are
made on the generator's device (a CPU generator by default, then moved), so a seed gives the same
data on every device.

Choices the papers leave open, each a named parameter (defaults and reasons):

* ``p0`` -- activation probability of a feature with ``eps = 1``:
  ``Pr(z_j != 0) = min(1, p0 eps_j)``. The theory's ``Theta(loglog d / d)`` is 0.087 at ``d = 9``,
  which leaves most samples empty; the default 0.25 gives about ``sum_j p_j = 1.25``-2.25 active
  features per sample.
* ``mag_low`` -- token magnitudes ``|z| ~ U[mag_low, 1]`` (Assumption 3.2 bounds ``|z| <= 1``); 0.5
  keeps every active feature clearly above zero.
* ``token_q`` -- the augmentation: each view draws, independently, which tokens carry an active
  feature (Bernoulli(``token_q``) conditioned on at least one) and the magnitudes per token; support
  and sign are shared by the pair (Assumption 3.4). The default 1 puts every active feature in every
  token.
* noise ``xi ~ N(0, sigma^2 I)`` per token and view with ``sigma^2 = nsr / d1`` ([001] A.2:
  NSR = sigma^2 d1).
* negatives: in-batch (the other pairs' second views), independent of the anchor as Assumption 3.4
  requires; ``n_neg`` of them per anchor (see ``training.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from companions.train import progress


def eps_vector(d: int, n_maj: int, eps_max: float, eps_min: float) -> list[float]:
    """Feature frequencies of Definition 3.1: ``n_maj`` majority features (``eps_max``), then
    ``d - n_maj`` minority features (``eps_min``), as in [000] Section 4 and [001] Experiment 5."""
    if not 0 < n_maj < d:
        raise ValueError(
            f"parameter 'n_maj' = {n_maj!r} is not allowed: expected 0 < n_maj < d = {d}"
        )
    return [float(eps_max)] * n_maj + [float(eps_min)] * (d - n_maj)


def activation_probs(eps, p0: float):
    """``p_j = min(1, p0 eps_j)`` (Definition 3.1 with the constant made explicit)."""
    eps = torch.as_tensor(eps, dtype=torch.float64)
    return (p0 * eps).clamp(max=1.0)


def mean_magnitude(mag_low: float) -> float:
    """``E|z|`` for ``|z| ~ U[mag_low, 1]``."""
    return (1.0 + mag_low) / 2.0


def expected_tokens(L: int, q: float) -> float:
    """``E[N]`` for ``N ~ Binomial(L, q)`` conditioned on ``N >= 1``: ``Lq / (1 - (1-q)^L)``."""
    return L * q / (1.0 - (1.0 - q) ** L)


def kappa(eps, p0: float, L: int, mag_low: float, q: float = 1.0):
    """The positive-pair moment of feature ``j`` for this generator:
    ``kappa_j = E[<u_Y, M_j><u_X, M_j>] = p_j (E N)^2 (E|z|)^2``, with ``u_X = sum_l x^(l)`` and
    ``N`` the number of tokens carrying the feature. With uniform attention
    ``hat z_j = L sum_l z_j^(l)`` (eq (193)), so eq (281) / [000](68),
    ``E[hat z_j hat z_j^+] = eps_j L^2 C_z loglog d / d``, reads
    ``kappa_j = eps_j C_z loglog d / d``: this defines ``C_z`` for the generator (see
    :func:`c_z`)."""
    return activation_probs(eps, p0) * (expected_tokens(L, q) * mean_magnitude(mag_low)) ** 2


def c_z(kappa_j: float, eps_j: float, d: int) -> float:
    """The constant ``C_z`` of Lemma 3.1 implied by ``kappa_j = eps_j C_z loglog d / d``."""
    return kappa_j * d / (eps_j * math.log(math.log(d)))


def dictionary(
    runs: int, d1: int, d: int, generator: torch.Generator, dtype=torch.float64, device="cpu"
):
    """``runs`` column-orthonormal dictionaries ``M`` in ``R^{d1 x d}`` (Assumption 3.1): QR of a
    Gaussian matrix, so the columns are delocalised (``||M_j||_inf ~ sqrt(2 log d1 / d1)``)."""
    if d1 <= d:
        raise ValueError(f"parameter 'd1' = {d1!r} is not allowed: expected d1 > d = {d}")
    G = torch.randn(runs, d1, d, generator=generator, dtype=torch.float64, device=generator.device)
    Q, _ = torch.linalg.qr(G)
    return Q.to(device=device, dtype=dtype)


@dataclass
class Batch:
    """One batch of positive pairs. ``x``, ``y``: the two views, ``(R, K, d1)`` token means when
    ``pooled`` (uniform attention needs nothing else) or ``(R, K, L, d1)`` tokens otherwise;
    ``zx``, ``zy``: latent codes ``(R, K, L, d)``."""

    x: torch.Tensor
    y: torch.Tensor
    zx: torch.Tensor
    zy: torch.Tensor
    pooled: bool


def _token_presence(shape, L: int, q: float, generator) -> torch.Tensor:
    """Bernoulli(q) token indicators ``(..., L, d)`` conditioned on at least one token (exact
    law)."""
    tok = torch.rand(*shape[:-1], L, shape[-1], generator=generator, device=generator.device) < q
    empty = ~tok.any(-2)
    while bool(empty.any()):  # redraw the empty columns only: exact conditioning on N >= 1
        redraw = (
            torch.rand(*shape[:-1], L, shape[-1], generator=generator, device=generator.device) < q
        )
        tok = torch.where(empty.unsqueeze(-2), redraw, tok)
        empty = ~tok.any(-2)
    return tok


def sample_latents(
    probs: torch.Tensor, K: int, L: int, mag_low: float, q: float, generator: torch.Generator
):
    """Latent codes ``(zX, zY)``, each ``(R, K, L, d)``, of ``K`` positive pairs per run.

    Support ``s ~ Bernoulli(p_j)`` and sign are drawn per sample and shared by both views and all
    tokens (Assumption 3.2(ii), 3.4); each view draws its own token presence and magnitudes."""
    gdev = generator.device
    R, d = probs.shape
    p = probs.to(device=gdev, dtype=torch.float64)[:, None, :]
    support = torch.rand(R, K, d, generator=generator, device=gdev, dtype=torch.float64) < p
    sign = torch.where(torch.rand(R, K, d, generator=generator, device=gdev) < 0.5, -1.0, 1.0).to(
        torch.float64
    )
    base = (support * sign).unsqueeze(-2)  # (R, K, 1, d)
    views = []
    for _ in range(2):
        mag = mag_low + (1 - mag_low) * torch.rand(
            R, K, L, d, generator=generator, device=gdev, dtype=torch.float64
        )
        if q < 1.0:
            mag = mag * _token_presence((R, K, d), L, q, generator)
        views.append(base * mag)
    return views[0], views[1]


def sample_batch(
    M: torch.Tensor,
    probs: torch.Tensor,
    *,
    sigma: torch.Tensor,
    K: int,
    L: int,
    mag_low: float,
    q: float,
    generator: torch.Generator,
    pooled: bool = True,
    noise_dtype=torch.float32,
) -> Batch:
    """``K`` positive pairs per run of eq (6): ``x^(l) = M z^(l) + xi^(l)``,
    ``xi ~ N(0, sigma^2 I)``.

    ``sigma``: per-run noise standard deviation ``(R,)``. With ``pooled=True`` the token mean
    ``(1/L) sum_l x^(l) = M zbar + xibar``, ``xibar ~ N(0, sigma^2/L I)``, is drawn directly (the
    same law, ``L`` times fewer Gaussian draws); that is all uniform attention sees.

    ``noise_dtype``: precision of the Gaussian draws, which dominate the cost of a step. float32
    draws (about 5 times cheaper on a CPU) are cast to ``M``'s dtype; a 24-bit rounding of each
    sample changes no statistic this book measures, and all arithmetic stays in ``M``'s dtype."""
    R, d1, d = M.shape
    dev, dt, gdev = M.device, M.dtype, generator.device
    zx, zy = sample_latents(probs, K, L, mag_low, q, generator)
    zx, zy = zx.to(device=dev, dtype=dt), zy.to(device=dev, dtype=dt)
    s = sigma.to(device=gdev, dtype=torch.float64)
    out = []
    # In place: signal + noise * scale, as written out, without two temporaries per view.
    for z in (zx, zy):
        if pooled:
            noise = torch.randn(R, K, d1, generator=generator, device=gdev, dtype=noise_dtype).to(
                device=dev, dtype=dt
            )
            signal = z.mean(-2) @ M.transpose(-1, -2)
            scale = (s / math.sqrt(L)).to(device=dev, dtype=dt)[:, None, None]
        else:
            noise = torch.randn(
                R, K, L, d1, generator=generator, device=gdev, dtype=noise_dtype
            ).to(device=dev, dtype=dt)
            signal = torch.einsum("rkld,red->rkle", z, M)
            scale = s.to(device=dev, dtype=dt)[:, None, None, None]
        out.append(signal.add_(noise.mul_(scale)))
    return Batch(out[0], out[1], zx, zy, pooled)


@dataclass
class PairMoments:
    """Monte Carlo moments of ``pairs`` positive pairs (:func:`pair_moments`). ``mean`` and
    ``se``: ``E[<u_Y, M_j><u_X, M_j'>]`` for every ``(j, j')`` and its standard error;
    ``noise_cross``: ``E[<u_Y, v><u_X, v>]`` and ``noise_cross_se`` its standard error;
    ``noise_energy``: ``E||xi||^2`` of one token."""

    mean: torch.Tensor
    se: torch.Tensor
    noise_cross: float
    noise_energy: float
    pairs: int
    noise_cross_se: float = float("nan")


def pair_moments(
    M: torch.Tensor,
    probs: torch.Tensor,
    *,
    sigma: torch.Tensor,
    pairs: int,
    L: int,
    mag_low: float,
    q: float,
    v: torch.Tensor,
    generator: torch.Generator,
    chunk: int = 20_000,
) -> PairMoments:
    """The moments of the view sums ``u = sum_l x^(l)`` that the proofs use, over ``pairs`` pairs
    of one run (``M``: ``(1, d1, d)``) drawn ``chunk`` at a time by :func:`sample_batch`: the
    feature moments of eq (281) / [000] Lemma D.1, and, along a unit ``v`` orthogonal to ``M``,
    the noise cross-moment of (183) / [000] (37) and the noise energy (NSR, [001] A.2).

    The chunks go through :func:`companions.train.progress`, so a dry run draws only the first;
    every mean is over the pairs drawn (``pairs`` of the result)."""
    if pairs < 1:
        raise ValueError(f"parameter 'pairs' = {pairs} is not allowed: expected >= 1")
    if chunk < 1:
        raise ValueError(f"parameter 'chunk' = {chunk} is not allowed: expected >= 1")
    d = M.shape[-1]
    acc = torch.zeros(d, d, dtype=torch.float64)
    acc2 = torch.zeros_like(acc)
    noise_cross = noise_cross2 = noise_energy = 0.0
    done = 0
    for start in progress(range(0, pairs, chunk), desc=f"moments of {pairs} pairs"):
        n = min(chunk, pairs - start)
        b = sample_batch(
            M, probs, sigma=sigma, K=n, L=L, mag_low=mag_low, q=q, generator=generator, pooled=True
        )
        ux, uy = L * b.x[0], L * b.y[0]  # u = sum of tokens = L * token mean
        px, py = ux @ M[0], uy @ M[0]  # <u, M_j> for every feature j
        acc += (py.T @ px).cpu()
        acc2 += ((py**2).T @ px**2).cpu()
        prod = ux @ v * (uy @ v)
        noise_cross += float(prod.sum())
        noise_cross2 += float((prod**2).sum())
        noise_energy += float(((b.x[0] - b.zx[0].mean(-2) @ M[0].T) ** 2).sum()) * L
        done += n
    mean = acc / done
    se = ((acc2 / done - mean**2) / done).sqrt()
    cross = noise_cross / done
    cross_se = math.sqrt(max(noise_cross2 / done - cross**2, 0.0) / done)
    return PairMoments(mean, se, cross, noise_energy / done, done, cross_se)


def run_grid(eps_min_values, nsr_values, repeats: int):
    """The runs of a sweep: every (eps_min, nsr) pair ``repeats`` times, repeats innermost.
    Returns ``(eps_min (R,), nsr (R,), config_index (R,))`` as float64 / long tensors."""
    em, ns, ci = [], [], []
    c = 0
    for e in eps_min_values:
        for n in nsr_values:
            em += [float(e)] * repeats
            ns += [float(n)] * repeats
            ci += [c] * repeats
            c += 1
    return (
        torch.tensor(em, dtype=torch.float64),
        torch.tensor(ns, dtype=torch.float64),
        torch.tensor(ci),
    )
