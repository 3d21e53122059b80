"""The hierarchical multi-view data of Definitions 4.1-4.4 (Appendix B.1), vectorised over seeds.

The dictionary is the standard basis (the model is rotation invariant: Section 1.1 of the map):
``v_+ = e_0``, ``v_- = e_1``, ``v_{+,c} = e_{2+c}``, ``v_{-,c} = e_{2+k+c}``. A superclass is
``y in {0, 1}`` (0 is "+", 1 is "-"), a subclass ``c in [k]``, the fine label ``y k + c``.
Every tensor carries a leading seed axis ``S``: ``X`` is ``(S, N, P, d)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

PATCH_COUNTS = ("exact", "bernoulli")


@dataclass(frozen=True)
class DataConfig:
    """Every choice of the data model, by the paper's names (App. B.1, B.3)."""

    d: int  # dimension of a patch (and of the dictionary)
    k: int  # subclasses per superclass, k_+ = k_-
    P: int  # patches per sample
    s_star: int  # expected number of common (and of subclass) patches, s^*
    sigma_zeta: float  # noise std per coordinate, sigma_zeta
    iota: float = 0.0  # alpha_p uniform on [sqrt(1 - iota), sqrt(1 + iota)]
    s_dagger: int = 1  # feature-noise patches of a hard sample, s^dagger
    alpha_dagger: tuple[float, float] = (0.3, 0.5)  # alpha^dagger uniform on [lower, upper]
    sigma_star: float = 0.1  # std per coordinate of the distracting patch zeta^*
    patch_counts: str = "exact"  # 'exact': s^* patches each; 'bernoulli': the paper's sampling

    def __post_init__(self):
        if self.patch_counts not in PATCH_COUNTS:
            raise ValueError(
                f"parameter 'patch_counts' = {self.patch_counts!r} is not allowed: "
                f"expected one of {PATCH_COUNTS}"
            )
        if self.k < 1 or self.d < 2 + 2 * self.k:
            raise ValueError(
                f"parameter 'd' = {self.d} is not allowed: the 2 + 2k = {2 + 2 * self.k} "
                "features must fit in the dictionary"
            )
        if self.s_star < 1 or self.s_dagger < 0:
            raise ValueError("parameter 's_star' must be >= 1 and 's_dagger' >= 0")
        if self.patch_counts == "exact" and self.P < 2 * self.s_star + self.s_dagger + 1:
            raise ValueError(
                f"parameter 'P' = {self.P} is not allowed: exact counts need "
                f"P >= 2 s_star + s_dagger + 1 = {2 * self.s_star + self.s_dagger + 1}"
            )
        if self.patch_counts == "bernoulli" and self.P <= self.s_star:
            raise ValueError(f"parameter 'P' = {self.P} is not allowed: it must exceed s_star")
        if not 0 <= self.iota < 1:
            raise ValueError(f"parameter 'iota' = {self.iota} is not allowed: expected [0, 1)")
        lo, hi = self.alpha_dagger
        if not 0 <= lo <= hi:
            raise ValueError(
                f"parameter 'alpha_dagger' = {self.alpha_dagger} is not allowed: "
                "expected 0 <= lower <= upper"
            )

    @property
    def n_features(self) -> int:
        return 2 + 2 * self.k

    @property
    def rho(self) -> float:
        """This book's ratio rho = k s^dagger mean(alpha^dagger) / s^* (map, Section 3.1)."""
        return self.k * self.s_dagger * sum(self.alpha_dagger) / 2 / self.s_star


def common_index(y: torch.Tensor) -> torch.Tensor:
    """Dictionary index of v_y (Definition 4.1)."""
    return y


def fine_index(y: torch.Tensor, c: torch.Tensor, k: int) -> torch.Tensor:
    """Dictionary index of v_{y,c} (Definition 4.1)."""
    return 2 + y * k + c


def balanced_labels(S: int, N: int, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Exactly N/(2k) samples of every subclass (App. B.1 item 9): ``(y, c)`` of shape (S, N)."""
    if N % (2 * k):
        raise ValueError(
            f"parameter 'N' = {N} is not allowed: it must be a multiple of 2k = {2 * k}"
        )
    pair = torch.arange(N) % (2 * k)
    y, c = pair // k, pair % k
    return y.expand(S, N).clone(), c.expand(S, N).clone()


def patch_roles(S, N, cfg: DataConfig, hard: bool, g: torch.Generator):
    """Boolean masks (S, N, P) of the common, fine, feature-noise and zeta^* patches."""
    P = cfg.P
    if cfg.patch_counts == "exact":
        order = torch.rand(S, N, P, generator=g).argsort(-1)  # a random position for each role
        rank = order.argsort(-1)  # rank[p] = where patch p falls in the random order
        s, sd = cfg.s_star, cfg.s_dagger
        common = rank < s
        fine = (rank >= s) & (rank < 2 * s)
        noise_f = (rank >= 2 * s) & (rank < 2 * s + sd)
        star = rank == 2 * s + sd
    else:
        # App. B.1 item 5: each patch is common w.p. s^*/P; each other patch is fine w.p.
        # s^*/(P - |common|); item 6: each non-fine patch is feature noise w.p.
        # s^dagger/(P - |fine|); zeta^* replaces one of the remaining noise patches.
        common = torch.rand(S, N, P, generator=g) < cfg.s_star / P
        n_common = common.sum(-1, keepdim=True)
        q = cfg.s_star / (P - n_common).clamp(min=1)
        fine = ~common & (torch.rand(S, N, P, generator=g) < q)
        if hard:
            n_fine = fine.sum(-1, keepdim=True)
            qd = cfg.s_dagger / (P - n_fine).clamp(min=1)
            noise_f = ~fine & (torch.rand(S, N, P, generator=g) < qd)
            free = ~fine & ~noise_f
            score = torch.rand(S, N, P, generator=g) * free
            star = free & (score == score.amax(-1, keepdim=True)) & (score > 0)
        else:
            noise_f = torch.zeros_like(common)
            star = torch.zeros_like(common)
    if not hard:
        noise_f = torch.zeros_like(common)
        star = torch.zeros_like(common)
    else:
        common = torch.zeros_like(common)  # App. B.1 item 6(a): common patches become noise
    return common, fine, noise_f, star


def sample(
    cfg: DataConfig,
    S: int,
    N: int,
    hard: bool,
    g: torch.Generator,
    dtype: torch.dtype = torch.float32,
):
    """``(X, y, c)``: ``N`` balanced samples for each of ``S`` seeds, easy (Definition 4.2) or hard
    (the comment after Definition 4.2; App. B.1 item 6). Drawn on the CPU with ``g``."""
    y, c = balanced_labels(S, N, cfg.k)
    common, fine, noise_f, star = patch_roles(S, N, cfg, hard, g)
    X = torch.randn(S, N, cfg.P, cfg.d, generator=g, dtype=dtype) * cfg.sigma_zeta
    lo, hi = (1 - cfg.iota) ** 0.5, (1 + cfg.iota) ** 0.5
    alpha = lo + (hi - lo) * torch.rand(S, N, cfg.P, generator=g, dtype=dtype)
    alo, ahi = cfg.alpha_dagger
    alpha_d = alo + (ahi - alo) * torch.rand(S, N, cfg.P, generator=g, dtype=dtype)
    eye = torch.eye(cfg.d, dtype=dtype)
    v_common = eye[common_index(y)][:, :, None, :]  # (S, N, 1, d)
    v_fine = eye[fine_index(y, c, cfg.k)][:, :, None, :]
    v_other = eye[common_index(1 - y)][:, :, None, :]  # feature noise: the other common feature
    X = X + (common * alpha)[..., None] * v_common + (fine * alpha)[..., None] * v_fine
    X = X + (noise_f * alpha_d)[..., None] * v_other
    if bool(star.any()):
        zs = torch.randn(S, N, cfg.P, cfg.d, generator=g, dtype=dtype) * cfg.sigma_star
        X = torch.where(star[..., None], zs, X)
    return X, y, c


def coarse_labels(y: torch.Tensor, c: torch.Tensor, k: int) -> torch.Tensor:
    """The superclass, 2 classes (Definition 4.3)."""
    return y


def fine_labels(y: torch.Tensor, c: torch.Tensor, k: int) -> torch.Tensor:
    """The subclass ``y k + c``, 2k classes (Definition 4.3)."""
    return y * k + c


def grouped_labels(y: torch.Tensor, c: torch.Tensor, k: int, groups: int) -> torch.Tensor:
    """``groups`` label groups per superclass: group ``c div (k / groups)``, label
    ``y groups + group`` (this book's granularity sweep; ``groups = k`` is fine, 1 is coarse)."""
    if groups < 1 or k % groups:
        raise ValueError(f"parameter 'groups' = {groups} is not allowed: it must divide k = {k}")
    return y * groups + c // (k // groups)


def random_labels(y: torch.Tensor, groups: int, g: torch.Generator) -> torch.Tensor:
    """A uniformly random sub-ID among ``groups`` within the superclass, drawn afresh
    (this book's counterpart of the 'Random ID' rows of Tables 1 and 3)."""
    if groups < 1:
        raise ValueError(f"parameter 'groups' = {groups} is not allowed: expected >= 1")
    return y * groups + torch.randint(groups, y.shape, generator=g)
