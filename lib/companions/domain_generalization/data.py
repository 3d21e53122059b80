"""Samplers: the feature model of Section 6.4, the 2-D task of Section 6.3.1, a multi-domain task.

Every sampler takes an explicit ``torch.Generator`` (CPU) so that runs are reproducible, and a
``device`` / ``dtype`` for its output.
"""

from __future__ import annotations

import torch

from companions.train import progress


def _check_gamma(gamma: float, name: str = "gamma") -> None:
    if not -0.5 < gamma < 0.5:
        raise ValueError(
            f"parameter {name!r} = {gamma!r} is not allowed: expected a real number in (-1/2, 1/2)"
        )


def sample_d_gamma(
    shape, gamma: float, generator: torch.Generator, dtype=torch.float64
) -> torch.Tensor:
    """Draws of D_gamma (Section 6.4): U[0, 1] w.p. 1/2 + gamma, U[-1, 0] w.p. 1/2 - gamma."""
    _check_gamma(gamma)
    u = torch.rand(shape, generator=generator, dtype=dtype)
    positive = torch.rand(shape, generator=generator, dtype=dtype) < 0.5 + gamma
    return torch.where(positive, u, -u)


def sample_features(
    n: int, r: int, d: int, gamma: float, generator: torch.Generator, dtype=torch.float64
) -> torch.Tensor:
    """Label-signed features z (n, d) of Section 6.4: U[0, 1] on R (the first r), D_gamma on U.

    The ID task uses ``gamma``, the OOD task ``-gamma``.
    """
    if not 1 <= r < d:
        raise ValueError(f"parameter 'r' = {r!r} is not allowed: expected 1 <= r < d = {d}")
    z_r = torch.rand(n, r, generator=generator, dtype=dtype)
    return torch.cat([z_r, sample_d_gamma((n, d - r), gamma, generator, dtype)], dim=-1)


def sample_sums(
    n: int,
    r: int,
    *,
    d: int,
    gamma: float,
    generator: torch.Generator,
    chunk: int = 10_000,
    device=None,
    progress_bar: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(S_R, S_U) = (sum_R z_j, sum_U z_j) for n draws, in float64, drawn in chunks of rows.

    By Lemma E.5 the ERM-l2 objective depends on w only through these two sums (E.10). The
    chunks go through :func:`companions.train.progress`, so a dry run draws the first only; its
    bar shows only with ``progress_bar`` (the sweeps call this inside their own bars, and a bar
    drawn inside another writes terminal control codes).
    """
    s_r, s_u = [], []
    chunks = range(0, n, chunk)
    for start in progress(chunks, desc=f"sums of {n} draws", disable=not progress_bar):
        m = min(chunk, n - start)
        z = sample_features(m, r, d, gamma, generator)
        s_r.append(z[:, :r].sum(-1))
        s_u.append(z[:, r:].sum(-1))
    return torch.cat(s_r).to(device), torch.cat(s_u).to(device)


def sample_two_d(
    n: int, p_aligned: float, generator: torch.Generator, dtype=torch.float32
) -> tuple[torch.Tensor, torch.Tensor]:
    """The 2-D task of Section 6.3.1: x = [x1, x2], labels y in {-1, +1} with equal probability.

    x1 | y ~ U[0, 1] * y (invariant). x2 | y ~ U[0, 1] * y w.p. ``p_aligned``, else U[0, 1] * (-y)
    (environmental). The source gives x2 | y = +1 only (0.7 ID, 0.3 OOD); y = -1 is read as its
    mirror image, the reading this book assumes.
    """
    if not 0.0 <= p_aligned <= 1.0:
        raise ValueError(
            f"parameter 'p_aligned' = {p_aligned!r} is not allowed: expected a number in [0, 1]"
        )
    y = torch.where(torch.rand(n, generator=generator) < 0.5, 1.0, -1.0).to(dtype)
    x1 = torch.rand(n, generator=generator, dtype=dtype) * y
    aligned = torch.rand(n, generator=generator) < p_aligned
    x2 = torch.rand(n, generator=generator, dtype=dtype) * torch.where(aligned, y, -y)
    return torch.stack([x1, x2], dim=-1), y


def sample_domains(
    n_per_domain: int, r: int, d: int, gammas, generator: torch.Generator, dtype=torch.float32
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A multi-domain task in the feature model: domain e has environmental correlation gammas[e].

    Returns (x, y, domain) with x = z~(x) = z * y, the features the model sees (n_domains * n, d),
    labels y in {-1, +1} and the domain index of each row.
    """
    xs, ys, es = [], [], []
    for e, gamma in enumerate(gammas):
        _check_gamma(gamma, f"gammas[{e}]")
        z = sample_features(n_per_domain, r, d, gamma, generator, dtype)
        y = torch.where(torch.rand(n_per_domain, generator=generator) < 0.5, 1.0, -1.0).to(dtype)
        xs.append(z * y[:, None])
        ys.append(y)
        es.append(torch.full((n_per_domain,), e))
    return torch.cat(xs), torch.cat(ys), torch.cat(es)
