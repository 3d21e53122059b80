"""Statistics of trained neurons and the downstream evaluations of [001] Appendix A.2.

Conventions (named where the papers leave a choice):

* ``n_aligned`` -- Figure 2: the number of neurons with ``|cos(w_i, M_j)| >= 0.3`` (plain cosine).
* ``max_alignment`` -- Figure 3: ``max_i |cos(w_i, M_j)|``.
* "the minority feature" of Figures 2-5 is not identified; statistics are averaged over the
  minority features (``d - n_maj`` of them).
* empirical pure neuron for ``j``: ``cos^2_ij >= 0.5`` and ``cos^2_ij' <= 0.1`` for ``j' != j``;
  mixed neuron: two or more features with ``cos^2 >= 0.1`` ([001] Experiment 5 calls a neuron with
  0.13 / 0.18 / 0.15 "mixed").
* Figure 4: cosine of ``f(X), f(Y)`` over test pairs, 0 when either embedding is 0 (a pair without
  an active feature gives ``f = 0`` once the bias is on); the fraction of such pairs is reported.
* Figure 5: the regression target is unstated (parameter ``target``). Default ``"mean"``:
  ``y = (1/L) sum_l z^(l)`` of the first view (the signed mean latent code, in ``R^d``), the
  quantity the sparse-coding model says the representation should recover; ``"support"``: the
  indicators ``1[z_j != 0]`` (which features are present, sign-free). Fitted by ridge least squares
  (``1e-6``) with an intercept on ``f(X)``; the test MSE is averaged over coordinates, and
  ``1 - R^2`` is given on the minority coordinates alone (the raw MSE of an unlearned minority
  coordinate grows with its variance, i.e. with ``eps_min``).
"""

from __future__ import annotations

import torch

from companions.contrastive import data as cdata
from companions.contrastive import model as cmodel
from companions.runtime import solve


def n_aligned(C: torch.Tensor, threshold: float = 0.3) -> torch.Tensor:
    """``#{i : |cos_ij| >= threshold}`` per run and feature: ``C`` is ``(R, m, d)``
    -> ``(R, d)``."""
    return (C.abs() >= threshold).sum(-2)


def max_alignment(C: torch.Tensor) -> torch.Tensor:
    """``max_i |cos_ij|``, ``(R, d)``."""
    return C.abs().max(-2).values


def minority_alignment(C: torch.Tensor, n_maj: int):
    """Figures 2-3 per run, averaged over the minority features (columns ``n_maj..d-1`` of the
    cosines ``C``, ``(R, m, d)``): ``(mean n_aligned (R,), mean max_alignment (R,))``."""
    Cs = C[..., n_maj:].abs()
    return n_aligned(Cs).double().mean(-1), max_alignment(Cs).mean(-1)


def by_config(values: torch.Tensor, config_index: torch.Tensor, n_configs: int):
    """Mean and standard deviation over the repeats of each configuration of a sweep
    (``data.run_grid``'s ``config_index``): two ``(n_configs,)`` tensors; the deviation is 0 with a
    single repeat."""
    v = torch.stack([values[config_index == c] for c in range(n_configs)])  # (configs, repeats)
    return v.mean(-1), v.std(-1) if v.shape[-1] > 1 else torch.zeros(n_configs, dtype=v.dtype)


def pure_neurons(C2: torch.Tensor, hi: float = 0.5, lo: float = 0.1) -> torch.Tensor:
    """``(R, m, d)`` boolean: neuron ``i`` is an empirical pure neuron of feature ``j``."""
    top = C2 >= hi
    others = (C2 > lo).sum(-1, keepdim=True) - (C2 > lo).to(torch.long)
    return top & (others == 0)


def mixed_neurons(C2: torch.Tensor, lo: float = 0.1) -> torch.Tensor:
    """``(R, m)`` boolean: two or more features with ``cos^2 >= lo``."""
    return (C2 >= lo).sum(-1) >= 2


def empirical_n_i(C2: torch.Tensor, lo: float = 0.1) -> torch.Tensor:
    """Training-time analogue of ``|N_i|``: ``#{j : cos^2_ij >= lo}``, ``(R, m)``."""
    return (C2 >= lo).sum(-1)


@torch.no_grad()
def embed_pairs(hist, s, n: int, generator: torch.Generator):
    """Embeddings of ``n`` fresh positive pairs per run with the final weights and biases:
    ``(hx, hy, zx)``; the data use each run's own dictionary, frequencies and noise ("we keep the
    feature space identical", [001] Experiment 3)."""
    M = hist.M.to(hist.W.dtype)
    batch = cdata.sample_batch(
        M,
        hist.probs,
        sigma=hist.sigma,
        K=n,
        L=s.L,
        mag_low=s.mag_low,
        q=s.token_q,
        generator=generator,
        pooled=s.pooled,
    )
    hx = cmodel.features(hist.W, batch.x, hist.b_final, s.L, s.att_scale)
    hy = cmodel.features(hist.W, batch.y, hist.b_final, s.L, s.att_scale)
    return hx, hy, batch.zx


def test_cosine(hx: torch.Tensor, hy: torch.Tensor, floor: float = 1e-12):
    """Figure 4's ``(1/N) sum_n cos(f(X_n), f(Y_n))`` per run (0 for a zero embedding), and the
    fraction of pairs with a zero embedding."""
    nx, ny = hx.norm(dim=-1), hy.norm(dim=-1)
    ok = (nx > floor) & (ny > floor)
    cos = torch.where(ok, (hx * hy).sum(-1) / (nx * ny).clamp_min(floor), torch.zeros_like(nx))
    return cos.mean(-1), 1 - ok.to(cos.dtype).mean(-1)


def regression_target(z: torch.Tensor, target: str = "mean") -> torch.Tensor:
    """The downstream target of Experiment 4 from latent codes ``(R, N, L, d)``: ``(R, N, d)``."""
    if target == "mean":
        return z.mean(-2)
    if target == "support":
        return (z != 0).any(-2).to(z.dtype)
    raise ValueError(
        f"parameter 'reg_target' = {target!r} is not allowed: expected 'mean' or 'support'"
    )


def regression_mse(
    h_train, z_train, *, h_test, z_test, n_maj: int, ridge: float = 1e-6, target: str = "mean"
):
    """Figure 5: ridge least squares from ``f(X)`` (plus intercept) to ``y = mean_l z^(l)``, per
    run. Returns ``(mse_all (R,), one_minus_r2_minority (R,))`` on the test pairs."""

    def design(h):
        return torch.cat([h, torch.ones(*h.shape[:-1], 1, dtype=h.dtype, device=h.device)], dim=-1)

    Xtr, Xte = design(h_train), design(h_test)
    ytr, yte = regression_target(z_train, target), regression_target(z_test, target)
    G = Xtr.transpose(-1, -2) @ Xtr
    G = (
        G
        + ridge
        * torch.eye(G.shape[-1], dtype=G.dtype, device=G.device)
        * (1 + G.diagonal(dim1=-2, dim2=-1).mean(-1))[:, None, None]
    )
    beta = solve(G, Xtr.transpose(-1, -2) @ ytr)
    err = Xte @ beta - yte
    mse = (err**2).mean((-1, -2))
    var = yte[..., n_maj:].var(-2).clamp_min(1e-300)
    r = ((err[..., n_maj:] ** 2).mean(-2) / var).mean(-1)
    return mse, r


@torch.no_grad()
def evaluate_runs(
    hist,
    s,
    *,
    runs,
    test_pairs: int,
    train_pairs: int,
    test_seed: int,
    chunk: int,
    device="cpu",
    target: str = "mean",
):
    """Experiments 3-4 for the runs ``runs`` (a slice), ``chunk`` runs at a time on ``device``:
    ``(test_cosine, zero_fraction, mse, one_minus_r2_minority)``, each ``(len(runs),)``. The test
    and training pairs of every chunk come from generators on ``device`` seeded with ``test_seed``
    ("a fixed test seed"); on CUDA that keeps the paper scale's ``runs x 5000 x d1`` draws off the
    CPU."""
    idx = torch.arange(len(hist.W))[runs]
    outs = []
    for k in range(0, len(idx), chunk):
        sel = idx[k : k + chunk]
        sub = type("Sub", (), {})()
        sub.W, sub.M, sub.b_final = (
            hist.W[sel].to(device),
            hist.M[sel].to(device, hist.W.dtype),
            hist.b_final[sel].to(device),
        )
        sub.probs, sub.sigma = hist.probs[sel], hist.sigma[sel]
        hx, hy, zx = embed_pairs(
            sub, s, test_pairs, torch.Generator(device=device).manual_seed(test_seed + k)
        )
        cos, zero = test_cosine(hx, hy)
        htr, _, ztr = embed_pairs(
            sub,
            s,
            train_pairs,
            torch.Generator(device=device).manual_seed(test_seed + 10_000_019 + k),
        )
        mse, r2 = regression_mse(htr, ztr, h_test=hx, z_test=zx, n_maj=s.n_maj, target=target)
        outs.append(torch.stack([cos, zero, mse, r2]).cpu())
    return tuple(torch.cat(outs, dim=1))


def stage2_slopes(hist, runs) -> torch.Tensor:
    """Per run of ``runs`` and feature: the mean log-slope per step of the largest projection
    ``max_i |<w_i, M_j>|`` between ``T1`` and ``T2`` (the growth rate of the feature's best
    neuron in Stage 2). Returns ``(len(runs), d)``; raises if a run never reached ``T1`` or
    ``T2`` (:func:`training.stage_index`)."""
    from companions.contrastive.training import stage_index

    proj = hist.A.abs().max(2).values  # (T, R, d)
    i1, i2 = stage_index(hist, "t1", runs), stage_index(hist, "t2", runs)
    rows = []
    for r, a, b in zip(runs, i1, i2):
        if b <= a:
            raise ValueError(
                f"run {int(r)}: T2 is logged at or before T1; lower parameter 'log_every'"
            )
        dt = float(hist.steps[b] - hist.steps[a])
        rows.append((proj[b, r].double().log() - proj[a, r].double().log()) / dt)
    return torch.stack(rows)


def trend_slopes(values: torch.Tensor, eps_grid, n_nsr: int, repeats: int) -> torch.Tensor:
    """Least-squares slope of a statistic against ``eps_min``, one per (NSR, repeat), for the runs
    of ``data.run_grid(eps_grid, nsr_grid, repeats)`` (eps outermost, repeats innermost):
    ``(n_nsr, repeats)``. The runs are independent, so the ``repeats`` slopes of one NSR are
    independent estimates of its trend."""
    x = torch.as_tensor([float(e) for e in eps_grid], dtype=torch.float64)
    if len(values) != len(x) * n_nsr * repeats:
        raise ValueError(
            f"parameter 'values' has {len(values)} runs: expected len(eps_grid) * n_nsr * repeats "
            f"= {len(x) * n_nsr * repeats}"
        )
    v = values.double().view(len(x), n_nsr, repeats)  # (eps, nsr, repeat)
    xc = x - x.mean()
    return ((v - v.mean(0)) * xc[:, None, None]).sum(0) / (xc * xc).sum()


def coefficient_ratio(W: torch.Tensor, M: torch.Tensor, n_maj: int) -> torch.Tensor:
    """(13) per run: the mean ``|<w_i, M_j>|`` of the minority pure neurons on their feature over
    that of the majority pure neurons (:func:`pure_neurons`), ``(R,)``; ``nan`` for a run without
    pure neurons of both kinds."""
    A = (W @ M).abs()  # (R, m, d)
    C2 = (A / W.norm(dim=-1, keepdim=True).clamp_min(1e-300)) ** 2
    pure = pure_neurons(C2)
    own = A.max(-1).values  # a pure neuron's largest projection is on its feature
    out = torch.full((W.shape[0],), float("nan"), dtype=torch.float64)
    for r in range(W.shape[0]):
        mino, majo = pure[r, :, n_maj:].any(-1), pure[r, :, :n_maj].any(-1)
        if bool(mino.any()) and bool(majo.any()):
            out[r] = own[r][mino].double().mean() / own[r][majo].double().mean()
    return out
