"""Looped linear transformers doing multi-step gradient descent in context.

Source: Z. Shi's dissertation, Chapter 8 (Chen, Li, Liang, Shi & Song, "Bypassing the exponential
dependency"). Numbers in docstrings are the dissertation's: Definitions 8.2-8.12 (the setting),
Lemma 8.13 and Theorem 8.14 (one loop is one GD step), Theorem 8.16 (error <= |alpha| exp(-T/(2 kappa))),
Theorem 8.17 (Gatmiry et al.'s sample requirement), Theorem 8.25 (GD on a strongly convex quadratic).

Shapes: a batch of prompts is ``X`` of shape ``(..., n, d)``, ``y`` of shape ``(..., n)``, the
transformer's state ``Z`` of shape ``(..., n+1, d+1)``. Everything here is device- and
dtype-agnostic; the chapter works in float64.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import sympy as sp
import torch

from companions.scale import Chapter, Float, Int, ListOf, register_chapter
from companions.train import fit

# ---------------------------------------------------------------------------------------------
# The chapter's parameters and presets
# ---------------------------------------------------------------------------------------------


def _check_parameter_pairs(p):
    """Constraints between parameters (a message naming the parameter, or None)."""
    bad = [n for n in p["n_values"] if n <= p["d"]]
    if bad:
        return (f"parameter 'n_values' = {list(p['n_values'])} is not allowed: every n must exceed d = {p['d']} "
                f"(Definition 8.10 needs X^T X invertible); the regime n <= d has its own section")
    if p["train_n"] <= p["train_d"]:
        return f"parameter 'train_n' = {p['train_n']} is not allowed: it must exceed train_d = {p['train_d']}"
    if p["alpha"] == 0:
        return "parameter 'alpha' = 0.0 is not allowed: Definition 8.4 needs a query alpha != 0"
    return None


CHAPTER = register_chapter(Chapter(
    id="looped-gd",
    title="Looped transformers learn in context by multi-step gradient descent",
    notebook="book/in-context/looped-gd.md",
    params={
        "d": Int(1, 512, doc="feature dimension of the prompt (Definition 8.2)"),
        "n_values": ListOf(Int(2, 1_000_000), min_len=2, doc="prompt lengths n of Figure 8.1 (two or more: the chapter compares them)"),
        "loops": Int(1, 100_000, doc="number of loops T"),
        "trials": Int(1, 100_000, doc="prompts per n in Figure 8.1"),
        "alpha": Float(-1e6, 1e6, doc="the query alpha (nonzero)"),
        "kappa_draws": Int(10, 10_000_000, doc="prompts drawn per n for the distribution of kappa"),
        "mp_dims": ListOf(Int(1, 4096), min_len=2, doc="dimensions d of the Marchenko-Pastur sweep (two or more)"),
        "mp_ratios": ListOf(Int(2, 1024), doc="ratios n/d of the Marchenko-Pastur sweep"),
        "mp_draws": Int(5, 1_000_000, doc="prompts per (d, n/d) in the Marchenko-Pastur sweep"),
        "train_d": Int(1, 512, doc="d of the trained looped transformer"),
        "train_n": Int(2, 100_000, doc="n of the trained looped transformer"),
        "train_loops": Int(1, 1000, doc="loops unrolled while training"),
        "train_steps": Int(1, 1_000_000, doc="Adam steps"),
        "train_batch": Int(1, 1_000_000, doc="prompts per Adam step"),
        "train_seeds": Int(1, 1000, doc="independent training runs"),
    },
    presets={
        "smoke": dict(d=4, n_values=[16, 32, 64, 128], loops=200, trials=10, alpha=1.0, kappa_draws=2000,
                      mp_dims=[4, 16], mp_ratios=[2, 4, 8, 16, 32], mp_draws=100,
                      train_d=4, train_n=32, train_loops=10, train_steps=300, train_batch=128, train_seeds=2),
        "default": dict(d=4, n_values=[16, 32, 64, 128], loops=200, trials=10, alpha=1.0, kappa_draws=20000,
                        mp_dims=[4, 16, 64], mp_ratios=[2, 4, 8, 16, 32], mp_draws=400,
                        train_d=4, train_n=32, train_loops=10, train_steps=1500, train_batch=256, train_seeds=4),
        "paper": dict(d=4, n_values=[16, 32, 64, 128], loops=200, trials=10, alpha=1.0, kappa_draws=200000,
                      mp_dims=[4, 16, 64, 256], mp_ratios=[2, 4, 8, 16, 32, 64], mp_draws=1000,
                      train_d=16, train_n=256, train_loops=20, train_steps=5000, train_batch=512, train_seeds=8),
    },
    checks=(_check_parameter_pairs,),
))

#: The average condition numbers the source reports for n = 16, 32, 64, 128 (Section 8.6).
PAPER_KAPPA_MEANS = {16: 4.57, 32: 3.13, 64: 2.07, 128: 1.62}

# ---------------------------------------------------------------------------------------------
# The setting (Definitions 8.2-8.7) and the construction (Lemma 8.13)
# ---------------------------------------------------------------------------------------------


def sample_prompts(trials: int, n: int, d: int, generator: torch.Generator, dtype=torch.float64, device="cpu"):
    """``trials`` prompts of Section 8.6: ``X_ij ~ N(0, 1)``, ``theta*`` uniform on the unit sphere
    S^{d-1} (Definition 8.3), noise-free labels ``y = X theta*``. Returns ``(X, theta_star, y)``.

    Draws are made on the CPU from ``generator`` and then moved, so a seed gives the same prompts
    on every device.
    """
    X = torch.randn(trials, n, d, generator=generator, dtype=dtype)
    theta = torch.randn(trials, d, generator=generator, dtype=dtype)
    theta = theta / theta.norm(dim=-1, keepdim=True)
    X, theta = X.to(device), theta.to(device)
    return X, theta, (X @ theta.unsqueeze(-1)).squeeze(-1)


def causal_mask(n: int, dtype=torch.float64, device="cpu") -> torch.Tensor:
    """The mask M of Definition 8.6: ``(n+1) x (n+1)``, ones in the last row except its last entry."""
    M = torch.zeros(n + 1, n + 1, dtype=dtype, device=device)
    M[n, :n] = 1
    return M


def input_matrix(X: torch.Tensor, y: torch.Tensor, alpha, q0: torch.Tensor | None = None) -> torch.Tensor:
    """``Z^(0) = [[X, y], [q0^T, alpha]]`` of Definition 8.5 (``q0 = 0`` by default)."""
    *batch, n, d = X.shape
    Z = X.new_zeros(*batch, n + 1, d + 1)
    Z[..., :n, :d] = X
    Z[..., :n, d] = y
    if q0 is not None:
        Z[..., n, :d] = q0
    Z[..., n, d] = torch.as_tensor(alpha, dtype=X.dtype, device=X.device)
    return Z


def construction_weights(d: int, dtype=torch.float64, device="cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """``Q = I_{d+1}`` and ``P = blockdiag(I_d, 0)`` of Lemma 8.13."""
    Q = torch.eye(d + 1, dtype=dtype, device=device)
    P = torch.eye(d + 1, dtype=dtype, device=device)
    P[d, d] = 0
    return Q, P


def linear_attention(Z: torch.Tensor, Q: torch.Tensor, P: torch.Tensor) -> torch.Tensor:
    """``Attn(Z; Q, P) = (M o (Z Q Z^T)) Z P`` of Definition 8.6, computed as written (O(n^2 d))."""
    M = causal_mask(Z.shape[-2] - 1, dtype=Z.dtype, device=Z.device)
    return (M * (Z @ Q @ Z.transpose(-1, -2))) @ Z @ P


def linear_attention_last_row(Z: torch.Tensor, Q: torch.Tensor, P: torch.Tensor) -> torch.Tensor:
    """The same attention in O(n d^2): only the last row of M is nonzero, so only the last row of
    the output is, and it equals ``(z_{n+1}^T Q Z_{1:n}^T) Z_{1:n} P``."""
    n = Z.shape[-2] - 1
    scores = Z[..., n:, :] @ Q @ Z[..., :n, :].transpose(-1, -2)  # (..., 1, n)
    out = torch.zeros_like(Z)
    out[..., n:, :] = scores @ Z[..., :n, :] @ P
    return out


def _per_loop(etas, loops: int | None, like: torch.Tensor) -> torch.Tensor:
    """Step sizes as a tensor whose first axis runs over the loops: a scalar is repeated ``loops``
    times; a tensor of shape ``(T,)`` or ``(T, *batch)`` is taken as it is."""
    etas = torch.as_tensor(etas, dtype=like.dtype, device=like.device)
    if etas.dim() == 0:
        if loops is None:
            raise ValueError("parameter 'loops' is required when a single step size is given")
        etas = etas.expand(loops)
    elif loops is not None and etas.shape[0] != loops:
        raise ValueError(f"parameter 'etas' has {etas.shape[0]} step sizes but 'loops' = {loops}")
    if not bool((etas > 0).all()):
        raise ValueError("parameter 'etas' is not allowed: Definition 8.7 needs every step size eta^(t) > 0")
    return etas


def looped_transformer(Z0: torch.Tensor, Q: torch.Tensor, P: torch.Tensor, etas, loops: int | None = None,
                       faithful: bool = True, trajectory: bool = False):
    """The linear looped transformer of Definition 8.7.

    ``Z^(t) = Z^(t-1) - eta^(t-1) Attn(Z^(t-1); Q, P)`` for ``t = 1..T`` and
    ``TF(Z^(0)) = -(Z^(T)_{n+1, 1:d})^T``. ``etas`` holds one step size per loop (shape ``(T,)``, or
    ``(T, *batch)`` for a per-prompt step size such as ``1/||X^T X||``), or a scalar with ``loops``.
    ``faithful`` uses the masked O(n^2 d) attention as written; otherwise the equal O(n d^2) form.

    Returns ``(TF output, Z^(T))``, or with ``trajectory=True`` the outputs after every loop,
    shape ``(T+1, ..., d)`` (index 0 is ``-q^(0)``), and ``Z^(T)``.
    """
    etas = _per_loop(etas, loops, Z0)
    attn = linear_attention if faithful else linear_attention_last_row
    n, d = Z0.shape[-2] - 1, Z0.shape[-1] - 1
    Z = Z0
    outputs = [-Z[..., n, :d]] if trajectory else None
    for eta in etas:
        Z = Z - eta.reshape(*eta.shape, 1, 1) * attn(Z, Q, P)
        if trajectory:
            outputs.append(-Z[..., n, :d])
    return (torch.stack(outputs), Z) if trajectory else (-Z[..., n, :d], Z)


def gradient_descent(X: torch.Tensor, y: torch.Tensor, etas, loops: int | None = None,
                     theta0: torch.Tensor | None = None) -> torch.Tensor:
    """Gradient descent (8.2) on ``l(theta) = ||y - X theta||^2 / 2``, gradient (8.1).
    Returns every iterate, shape ``(T+1, ..., d)``."""
    etas = _per_loop(etas, loops, X)
    theta = X.new_zeros(X.shape[:-2] + X.shape[-1:]) if theta0 is None else theta0
    H, b = X.transpose(-1, -2) @ X, (X.transpose(-1, -2) @ y.unsqueeze(-1)).squeeze(-1)
    iterates = [theta]
    for eta in etas:
        grad = (H @ theta.unsqueeze(-1)).squeeze(-1) - b
        theta = theta - eta.unsqueeze(-1) * grad
        iterates.append(theta)
    return torch.stack(iterates)


# ---------------------------------------------------------------------------------------------
# Spectra and closed forms (Definition 8.12, Theorems 8.16, 8.17, 8.25 and this book's D1-D8)
# ---------------------------------------------------------------------------------------------


def gram_eigenvalues(X: torch.Tensor) -> torch.Tensor:
    """Eigenvalues of ``X^T X`` in ascending order, shape ``(..., d)``."""
    return torch.linalg.eigvalsh(X.transpose(-1, -2) @ X)


def condition_number(X: torch.Tensor) -> torch.Tensor:
    """``kappa = lambda_max(X^T X) / lambda_min(X^T X)`` (Definition 8.12); ``inf`` when singular."""
    eig = gram_eigenvalues(X)
    lam_min = eig[..., 0]
    kappa = eig[..., -1] / lam_min
    singular = lam_min <= eig[..., -1] * eig.shape[-1] * torch.finfo(eig.dtype).eps
    return torch.where(singular, torch.full_like(kappa, math.inf), kappa)


def smoothness(X: torch.Tensor) -> torch.Tensor:
    """``L = ||X^T X||`` (Lemma 8.20), the step size of Theorem 8.25 being ``1/L``."""
    return gram_eigenvalues(X)[..., -1]


def exact_error_curves(X: torch.Tensor, theta_star: torch.Tensor, alpha, eta, loops: int):
    """(D1) Exact error of GD from ``theta^(0) = 0`` with a constant step ``eta`` (per prompt).

    With ``X^T X = V diag(lambda) V^T`` and ``c = V^T theta*``:
    ``theta^(t) - theta* = -(I - eta X^T X)^t theta*``, hence
    ``err_t = |alpha| |sum_i c_i^2 (1 - eta lambda_i)^t|`` and
    ``||theta^(t) - theta*||^2 = sum_i c_i^2 (1 - eta lambda_i)^(2t)``.
    Each term is a power of a float, with no cancellation, so these curves have no round-off floor.
    Returns ``(err, sq_dist)``, each of shape ``(T+1, ...)``.
    """
    lam, V = torch.linalg.eigh(X.transpose(-1, -2) @ X)
    c2 = ((V.transpose(-1, -2) @ theta_star.unsqueeze(-1)).squeeze(-1)) ** 2
    eta = torch.as_tensor(eta, dtype=X.dtype, device=X.device)
    factor = 1 - eta.unsqueeze(-1) * lam  # (..., d)
    t = torch.arange(loops + 1, dtype=X.dtype, device=X.device).reshape(-1, *([1] * factor.dim()))
    powers = factor.unsqueeze(0) ** t
    err = abs(float(alpha)) * (c2 * powers).sum(-1).abs()
    sq = (c2 * powers**2).sum(-1)
    return err, sq


def bound_theorem_8_16(kappa, loops, alpha=1.0):
    """Theorem 8.16: ``|<TF, theta*> - alpha| <= |alpha| exp(-T / (2 kappa))``."""
    return abs(alpha) * torch.exp(-torch.as_tensor(loops) / (2 * torch.as_tensor(kappa)))


def bound_tight(kappa, loops, alpha=1.0):
    """(D2) ``|alpha| (1 - 1/kappa)^T``: every factor ``1 - lambda_i / L`` lies in ``[0, 1 - 1/kappa]``.
    It is at most ``|alpha| exp(-T/kappa)``, tighter than Theorem 8.16 by a factor 2 in the exponent."""
    return abs(alpha) * (1 - 1 / torch.as_tensor(kappa)) ** torch.as_tensor(loops)


def bound_theorem_8_25(kappa, loops, radius=1.0):
    """Theorem 8.25: ``||theta* - theta^(T)||^2 <= exp(-T / kappa) R^2`` with ``eta = 1/L``."""
    return torch.exp(-torch.as_tensor(loops) / torch.as_tensor(kappa)) * radius**2


def loops_needed_theorem_8_16(kappa: float, alpha: float, eps: float) -> float:
    """(D8) Loops after which Theorem 8.16 guarantees error <= eps: ``2 kappa ln(|alpha| / eps)``."""
    return max(0.0, 2 * kappa * math.log(abs(alpha) / eps))


def loops_needed_tight(kappa: float, alpha: float, eps: float) -> float:
    """(D8) The same from (D2): ``ln(eps / |alpha|) / ln(1 - 1/kappa)``."""
    if kappa == 1:
        return 1.0
    return max(0.0, math.log(eps / abs(alpha)) / math.log(1 - 1 / kappa))


def gatmiry_min_samples(loops: int, d: int) -> int:
    """Theorem 8.17's condition ``8 T d^2 / sqrt(n) <= 2^(-2T)`` holds iff ``n >= 64 T^2 d^4 16^T``."""
    return 64 * loops**2 * d**4 * 16**loops


def gatmiry_error_bound(loops: int, d: int, n: int) -> float:
    """Theorem 8.17's error bound ``8 T d^2 2^(2T) / sqrt(n)``."""
    return 8 * loops * d**2 * 4.0**loops / math.sqrt(n)


def marchenko_pastur_kappa(ratio_d_over_n):
    """(D7) The limit of kappa for Gaussian X as n, d -> infinity with d/n -> r < 1:
    ``((1 + sqrt r) / (1 - sqrt r))^2`` (the ratio of the edges of the Marchenko-Pastur law)."""
    r = torch.as_tensor(ratio_d_over_n, dtype=torch.float64)
    if (r >= 1).any() or (r <= 0).any():
        raise ValueError("parameter 'ratio_d_over_n' must lie in (0, 1)")
    return ((1 + r.sqrt()) / (1 - r.sqrt())) ** 2


def fixed_step_rate(X: torch.Tensor, eta) -> torch.Tensor:
    """(D5) Per-prompt contraction factor ``max_i |1 - eta lambda_i|`` of GD with a fixed step:
    it converges iff this is < 1, i.e. iff ``0 < eta < 2 / lambda_max``."""
    eig = gram_eigenvalues(X)
    return (1 - torch.as_tensor(eta, dtype=X.dtype, device=X.device).unsqueeze(-1) * eig).abs().amax(-1)


def null_space_error(X: torch.Tensor, theta_star: torch.Tensor, alpha=1.0) -> torch.Tensor:
    """(D6) For n < d, GD from 0 stays in the row space of X and converges to its projection of
    theta*, so the error tends to ``|alpha| ||P_null theta*||^2`` (mean ``|alpha| (d - n)/d``)."""
    proj = torch.linalg.pinv(X) @ X
    row = (proj @ theta_star.unsqueeze(-1)).squeeze(-1)
    return abs(alpha) * ((theta_star - row) ** 2).sum(-1)


def prediction_error(outputs: torch.Tensor, theta_star: torch.Tensor, alpha) -> torch.Tensor:
    """``|<q, theta*> - alpha|`` of Definition 8.4, for outputs of shape ``(..., d)``."""
    return ((outputs * theta_star).sum(-1) - alpha).abs()


# ---------------------------------------------------------------------------------------------
# Figure 8.1: the experiment of Section 8.6
# ---------------------------------------------------------------------------------------------

#: Below this normalised squared error, float64 round-off dominates the computed error of the
#: transformer (it bottoms out near 1e-31): points below it are masked, not plotted or tested.
FLOAT64_FLOOR = 1e-26


@dataclass
class ConvergenceRun:
    """One ``n`` of Figure 8.1: ``trials`` prompts run through the constructed looped transformer
    with ``eta = 1/L`` (per prompt) and through plain GD."""

    n: int
    kappa: torch.Tensor          # (trials,)
    tf_sq: torch.Tensor          # (T+1, trials) ||theta_t - theta*||^2 from the transformer, normalised
    gd_sq: torch.Tensor          # (T+1, trials) the same from plain GD (8.2)
    exact_sq: torch.Tensor       # (T+1, trials) the same from the closed form (D1)
    tf_err: torch.Tensor         # (T+1, trials) |<TF, theta*> - alpha|
    exact_err: torch.Tensor      # (T+1, trials) the same from (D1)
    tf_minus_gd_per_loop: torch.Tensor  # (T+1,) max over trials of |TF/alpha - theta_GD|

    @property
    def tf_minus_gd(self) -> float:
        """max |TF/alpha - theta_GD| over loops and trials."""
        return float(self.tf_minus_gd_per_loop.max())

    @property
    def above_floor(self) -> torch.Tensor:
        return self.tf_sq > FLOAT64_FLOOR


def convergence_run(n: int, d: int, loops: int, trials: int, alpha: float, generator: torch.Generator,
                    dtype=torch.float64, device="cpu", faithful: bool = True) -> ConvergenceRun:
    """Section 8.6 for one ``n``: Gaussian X, theta* on the sphere, q^(0) = 0, eta = 1/||X^T X||."""
    X, theta, y = sample_prompts(trials, n, d, generator, dtype, device)
    L = smoothness(X)
    etas = (1 / L).expand(loops, trials)
    Q, P = construction_weights(d, dtype, device)
    outs, _ = looped_transformer(input_matrix(X, y, alpha), Q, P, etas, faithful=faithful, trajectory=True)
    theta_tf = outs / alpha
    theta_gd = gradient_descent(X, y, etas)
    norm0 = (theta**2).sum(-1)  # ||theta^(0) - theta*||^2 with theta^(0) = 0
    exact_err, exact_sq = exact_error_curves(X, theta, alpha, 1 / L, loops)
    return ConvergenceRun(
        n=n, kappa=condition_number(X).cpu(),
        tf_sq=(((theta_tf - theta) ** 2).sum(-1) / norm0).cpu(),
        gd_sq=(((theta_gd - theta) ** 2).sum(-1) / norm0).cpu(),
        exact_sq=(exact_sq / norm0).cpu(),
        tf_err=prediction_error(outs, theta, alpha).cpu(),
        exact_err=exact_err.cpu(),
        tf_minus_gd_per_loop=(theta_tf - theta_gd).abs().amax(dim=(-2, -1)).cpu(),
    )


def kappa_distribution(n: int, d: int, draws: int, generator: torch.Generator, group: int = 10,
                       dtype=torch.float64, device="cpu", max_elements: int = 2**24):
    """Condition numbers of ``draws`` Gaussian prompts, and the 5%-95% range of the mean of ``group``
    of them (the paper averages 10 trials). Returns ``(kappas, (q05, q95))``. Prompts are drawn in
    chunks of at most ``max_elements`` numbers, so memory stays bounded at any ``n``, ``d``."""
    chunk = max(1, max_elements // (n * d))
    kappas = []
    for start in range(0, draws, chunk):
        size = min(chunk, draws - start)
        X = torch.randn(size, n, d, generator=generator, dtype=dtype).to(device)
        kappas.append(condition_number(X).cpu())
    kappas = torch.cat(kappas)
    groups = kappas[: (draws // group) * group].reshape(-1, group).mean(-1)
    return kappas, (float(groups.quantile(0.05)), float(groups.quantile(0.95)))


# ---------------------------------------------------------------------------------------------
# Symbolic checks (sympy, exact)
# ---------------------------------------------------------------------------------------------


def _symbolic_setting(n: int, d: int):
    X = sp.Matrix(n, d, lambda i, j: sp.Symbol(f"x_{i + 1}{j + 1}", real=True))
    y = sp.Matrix(n, 1, lambda i, _: sp.Symbol(f"y_{i + 1}", real=True))
    q0 = sp.Matrix(d, 1, lambda i, _: sp.Symbol(f"q_{i + 1}", real=True))
    alpha = sp.Symbol("alpha", real=True, nonzero=True)
    return X, y, q0, alpha


def _symbolic_input(X, y, q0, alpha):
    return sp.Matrix(sp.BlockMatrix([[X, y], [q0.T, sp.Matrix([[alpha]])]]))


def _symbolic_weights(d: int):
    Q = sp.eye(d + 1)
    P = sp.diag(*([1] * d + [0]))
    return Q, P


def _symbolic_attention(Z, Q, P):
    n = Z.rows - 1
    M = sp.zeros(n + 1, n + 1)
    for j in range(n):
        M[n, j] = 1
    return (M.multiply_elementwise(Z * Q * Z.T)) * Z * P


def symbolic_lemma_8_13(n: int = 3, d: int = 2) -> dict:
    """Lemma 8.13 with symbolic X, y, q^(0), alpha. Returns the residuals (all should be 0):
    ``lemma`` (Attn minus the lemma's matrix) and ``corner`` (the (n+1, d+1) entry before P minus
    ``q^T X^T y + alpha ||y||^2``, the step the proof shows before P zeroes it)."""
    X, y, q0, alpha = _symbolic_setting(n, d)
    Z = _symbolic_input(X, y, q0, alpha)
    Q, P = _symbolic_weights(d)
    attn = _symbolic_attention(Z, Q, P)
    claimed = sp.zeros(n + 1, d + 1)
    claimed[n, :d] = q0.T * X.T * X + alpha * y.T * X
    before_P = _symbolic_attention(Z, Q, sp.eye(d + 1))
    corner = before_P[n, d] - (q0.T * X.T * y)[0, 0] - alpha * (y.T * y)[0, 0]
    return {"lemma": (attn - claimed).applyfunc(sp.expand), "corner": sp.expand(corner)}


def symbolic_theorem_8_14(n: int = 3, d: int = 2, loops: int = 3) -> dict:
    """Theorem 8.14 with symbolic X, y (not assumed realizable), q^(0), alpha and per-loop step
    sizes eta_0..eta_{T-1}. Returns residuals that should all be 0:

    - ``tf_minus_gd``: ``TF(Z^(0)) - alpha theta^(T)`` with theta^(0) = -q^(0)/alpha and GD (8.2);
    - ``rows_changed``: rows 1..n of ``Z^(T) - Z^(0)``;
    - ``alpha_changed``: ``Z^(T)_{n+1,d+1} - alpha``;
    - ``hidden_state``: ``q^(t) + alpha theta^(t)`` at every t (the induction of the proof).
    Also returns ``augmented_rank``: the rank of ``[X | y]`` at a random rational point, which is
    ``d + 1`` when y is not in the column space of X (the identity needs no realizability).
    """
    X, y, q0, alpha = _symbolic_setting(n, d)
    etas = sp.symbols(f"eta_0:{loops}", positive=True)
    Z0 = _symbolic_input(X, y, q0, alpha)
    Q, P = _symbolic_weights(d)
    Z, theta = Z0, -q0 / alpha
    hidden = []
    for eta in etas:
        Z = (Z - eta * _symbolic_attention(Z, Q, P)).applyfunc(sp.expand)
        theta = (theta - eta * (X.T * X * theta - X.T * y)).applyfunc(sp.expand)
        hidden.append((Z[n, :d].T + alpha * theta).applyfunc(sp.expand))
    tf = -Z[n, :d].T
    # A fixed rational point of the symbols (deterministic, exact) at which to test realizability.
    symbols = sorted(X.free_symbols | y.free_symbols, key=str)
    point = {s: sp.Rational((7 * k + 3) % 11 - 5, 1 + k % 3) for k, s in enumerate(symbols)}
    aug = sp.Matrix(sp.BlockMatrix([[X, y]])).subs(point)
    return {
        "tf_minus_gd": (tf - alpha * theta).applyfunc(sp.expand),
        "rows_changed": (Z[:n, :] - Z0[:n, :]).applyfunc(sp.expand),
        "alpha_changed": sp.expand(Z[n, d] - alpha),
        "hidden_state": hidden,
        "augmented_rank": aug.rank(),
    }


def symbolic_strong_convexity_identity(n: int = 3, d: int = 2) -> sp.Expr:
    """The exact identity inside Lemma 8.22's proof, as a residual that should be 0:
    ``l(g a + (1-g) b) - g l(a) - (1-g) l(b) + g (1-g) ||X (a - b)||^2 / 2``."""
    X, y, _, _ = _symbolic_setting(n, d)
    a = sp.Matrix(d, 1, lambda i, _: sp.Symbol(f"a_{i + 1}", real=True))
    b = sp.Matrix(d, 1, lambda i, _: sp.Symbol(f"b_{i + 1}", real=True))
    g = sp.Symbol("gamma", real=True)

    def loss(theta):
        r = y - X * theta
        return (r.T * r)[0, 0] / 2

    diff = X * (a - b)
    return sp.expand(loss(g * a + (1 - g) * b) - g * loss(a) - (1 - g) * loss(b) + g * (1 - g) * (diff.T * diff)[0, 0] / 2)


def symbolic_gatmiry_threshold() -> dict:
    """Theorem 8.17's condition ``8 T d^2 / sqrt(n) <= 2^(-2T)`` solved for n. Returns the residual
    of the equality at ``n = 64 T^2 d^4 16^T`` (should be 0) and the derivative sign of the left
    side in n (negative: the condition holds for every larger n)."""
    T, d, n = sp.symbols("T d n", positive=True)
    lhs = 8 * T * d**2 / sp.sqrt(n)
    n_min = 64 * T**2 * d**4 * 16**T
    residual = sp.simplify(sp.powsimp(sp.expand_power_base(lhs.subs(n, n_min), force=True), force=True) - 2 ** (-2 * T))
    slope = sp.simplify(sp.diff(lhs, n))
    return {"residual": residual, "slope_negative": bool(sp.ask(sp.Q.negative(slope)))}


# ---------------------------------------------------------------------------------------------
# A trained looped transformer (exploratory; not in the source)
# ---------------------------------------------------------------------------------------------


class LoopedLinearTransformer(torch.nn.Module):
    """Definition 8.7 with learnable Q, P shared by every loop and a fixed step size ``eta``.
    Uses the O(n d^2) last-row attention, equal to the masked form (checked in the chapter)."""

    def __init__(self, d: int, eta: float, init_scale: float = 0.1, generator: torch.Generator | None = None,
                 dtype=torch.float64):
        super().__init__()
        self.eta = eta
        self.Q = torch.nn.Parameter(init_scale * torch.randn(d + 1, d + 1, generator=generator, dtype=dtype))
        self.P = torch.nn.Parameter(init_scale * torch.randn(d + 1, d + 1, generator=generator, dtype=dtype))

    def forward(self, Z0: torch.Tensor, loops: int, trajectory: bool = False):
        out, _ = looped_transformer(Z0, self.Q, self.P, self.eta, loops=loops, faithful=False, trajectory=trajectory)
        return out


def sample_training_batch(batch: int, n: int, d: int, generator: torch.Generator, dtype=torch.float64, device="cpu"):
    """A batch of prompts with queries ``alpha ~ +-U[0.5, 2]``: returns ``(Z0, theta*, alpha)``."""
    X, theta, y = sample_prompts(batch, n, d, generator, dtype, device)
    sign = torch.where(torch.rand(batch, generator=generator) < 0.5, -1.0, 1.0).to(dtype)
    alpha = (sign * (0.5 + 1.5 * torch.rand(batch, generator=generator, dtype=dtype))).to(device)
    return input_matrix(X, y, alpha), theta, alpha


def fixed_step_for_gaussian(n: int, d: int) -> float:
    """(D5) A prompt-independent step size for Gaussian X: ``1 / (sqrt n + sqrt d)^2``, the inverse
    of the typical ``lambda_max(X^T X)``."""
    return 1.0 / (math.sqrt(n) + math.sqrt(d)) ** 2


def train_looped_transformer(d: int, n: int, loops: int, steps: int, batch: int, generator: torch.Generator,
                             lr: float = 1e-2, device="cpu", desc: str = "looped TF"):
    """Learn Q, P (shared by every loop, fixed step ``1/(sqrt n + sqrt d)^2``) by Adam on
    ``E(<TF(Z0), theta*> - alpha)^2`` with ``loops`` loops unrolled and a fresh batch every step.
    Returns ``(model, history)``."""
    model = LoopedLinearTransformer(d, fixed_step_for_gaussian(n, d), generator=generator).to(device)

    def loss(step):
        Z0, theta, alpha = sample_training_batch(batch, n, d, generator, device=device)
        return (((model(Z0, loops) * theta).sum(-1) - alpha) ** 2).mean()

    return model, fit(loss, model.parameters(), steps, lr=lr, desc=desc)


def distance_to_construction(Q: torch.Tensor, P: torch.Tensor) -> dict:
    """How far learned weights are from the construction family ``Q = a I``, ``P = b blockdiag(I_d, 0)``
    (any a, b > 0 with ``eta a b`` fixed loops the same GD). Returns the best ``a``, ``b`` (least
    squares) and the relative residuals ``||Q - a I|| / ||Q||`` and ``||P - b P0|| / ||P||``."""
    d = Q.shape[-1] - 1
    eye = torch.eye(d + 1, dtype=Q.dtype, device=Q.device)
    P0 = eye.clone()
    P0[d, d] = 0
    a = float((Q * eye).sum() / (eye * eye).sum())
    b = float((P * P0).sum() / (P0 * P0).sum())
    return {"a": a, "b": b, "q_residual": float((Q - a * eye).norm() / Q.norm()),
            "p_residual": float((P - b * P0).norm() / P.norm())}


def depth_curve(model_fn, Z0: torch.Tensor, theta: torch.Tensor, alpha: torch.Tensor, loops: int) -> torch.Tensor:
    """Mean prediction error after 0..loops loops, for ``model_fn(Z0, loops, trajectory=True)``."""
    with torch.no_grad():
        outs = model_fn(Z0, loops, trajectory=True)
    return prediction_error(outs, theta, alpha).mean(-1)
