"""The chapters' runs, from a resolved config: every seed trained at once (one tensor)."""

from __future__ import annotations

import math

import numpy as np
import torch

from companions import stats
from companions.fine_labels import data as fdata
from companions.fine_labels import model as fmodel
from companions.fine_labels import training as ftrain


def data_config(cfg, **changes) -> fdata.DataConfig:
    """The data model of Definitions 4.1-4.4 at the chapter's parameters (``changes`` override)."""
    d = changes.pop("d", cfg.d)
    kw = dict(
        d=d,
        k=cfg.k,
        P=cfg.P,
        s_star=cfg.s_star,
        sigma_zeta=cfg.noise / math.sqrt(d),
        iota=cfg.iota,
        s_dagger=cfg.s_dagger,
        alpha_dagger=tuple(cfg.alpha_dagger),
        sigma_star=cfg.star / math.sqrt(d),
        patch_counts=cfg.patch_counts,
    )
    kw.update(changes)
    return fdata.DataConfig(**kw)


def slack(cfg) -> float:
    """``delta``: ``slack`` standard deviations of ``<w(0), zeta>`` (sigma0 sigma_zeta sqrt d)."""
    return cfg.slack * cfg.sigma0 * cfg.noise


def log_times(steps: int, n: int) -> list[int]:
    """0, 1, 2 and then ``n`` times spread evenly up to ``steps``."""
    return sorted({0, 1, 2, *np.linspace(0, steps, n).round().astype(int).tolist()})


def test_sets(dcfg, S, n, g, device):
    tests = {}
    for name, hard in (("easy", False), ("hard", True)):
        X, y, _ = fdata.sample(dcfg, S, n, hard, g)
        tests[name] = (X.to(device), y.to(device))
    return tests


def labeller(kind: str, k: int, groups: int | None = None):
    """``labels_of(y, c, g)`` for 'coarse', 'fine', 'grouped' (``groups``) or 'random'."""
    if kind == "coarse":
        return lambda y, c, g: fdata.coarse_labels(y, c, k)
    if kind == "fine":
        return lambda y, c, g: fdata.fine_labels(y, c, k)
    if kind == "grouped":
        return lambda y, c, g: fdata.grouped_labels(y, c, k, groups)
    if kind == "random":
        return lambda y, c, g: fdata.random_labels(y, groups, g)
    raise ValueError(f"parameter 'kind' = {kind!r} is not allowed")


def run(cfg, rt, kind: str, steps: int, tests, groups=None, B=None, offset=0, net=None, n_logs=None,
        progress=True):  # fmt: skip
    """Initialise (unless ``net`` is given) and train one model of each seed. ``kind`` as in
    :func:`labeller`; returns ``(net, history)``."""
    dcfg = data_config(cfg)
    C = {"coarse": 2, "fine": 2 * cfg.k}.get(kind, 2 * (groups or 1))
    if net is None:
        net = fmodel.init(
            cfg.seeds, C, cfg.m, cfg.d, cfg.sigma0, cfg.tau, rt.generator(100 + offset),
            device=rt.device,
        )  # fmt: skip
    hist = ftrain.train(
        net, dcfg, steps, cfg.N, cfg.eta, cfg.lam_b, labeller(kind, cfg.k, groups),
        rt.generator(200 + offset), log_times(steps, n_logs or cfg.n_logs), tests,
        cfg.tau * cfg.sigma0, slack(cfg), B=B, progress=progress,
    )  # fmt: skip
    return net, hist


def finetune(cfg, rt, net, steps, tests, offset=0, progress=True):
    """Fine-tuning (the remark after Theorem G.3, eqs. 234-235): keep training the fine model on
    coarse labels through ``hat F = max_c F_{y,c}`` with the same SGD and bias rule."""
    dcfg = data_config(cfg)
    groups = net.C // 2
    hist = ftrain.train(
        net, dcfg, steps, cfg.N, cfg.eta, cfg.lam_b, labeller("coarse", cfg.k),
        rt.generator(300 + offset), log_times(steps, cfg.n_logs), tests, cfg.tau * cfg.sigma0,
        slack(cfg), scores_fn=lambda F: fmodel.aggregate(F, groups, "max"), progress=progress,
    )  # fmt: skip
    return hist


def _finite(values) -> list[float]:
    """The values that are not NaN, as Python floats; in float64, so that a list of floats is not
    rounded to float32 on its way through a tensor."""
    flat = torch.as_tensor(values, dtype=torch.float64).flatten()
    return [float(x) for x in flat if not math.isnan(float(x))]


def decide_above(values, margin):
    """Whether the mean of ``values`` (over seeds) exceeds ``margin`` (``stats.decide``); with
    fewer than two finite values, undecided (``None``, NaN mean and error)."""
    v = _finite(values)
    if len(v) < 2:
        return None, (math.nan, math.nan, len(v))
    m, se, n = stats.mean_and_se(v)
    return stats.decide(m, se, n, margin), (m, se, n)


def decide_within(values, target, rel):
    """Whether the mean of ``values`` lies within ``rel * |target|`` of ``target``: decided
    (``True``/``False``) when the Student-t interval lies inside / outside that band; ``None``
    otherwise, or with fewer than two finite values."""
    v = _finite(values)
    if len(v) < 2:
        return None, (math.nan, math.nan, len(v))
    m, se, n = stats.mean_and_se(v)
    half = stats.t_critical(n - 1) * se
    band = rel * abs(target)
    if abs(m - target) + half <= band:
        return True, (m, se, n)
    if abs(m - target) - half > band:
        return False, (m, se, n)
    return None, (m, se, n)


def common_fine_ratio(A: torch.Tensor, k: int, C: int) -> torch.Tensor:
    """Per-detector growth of the common feature over the mean fine one, for every seed and
    superclass output: (S, 2) for coarse models (outputs y: v_y over mean_c v_{y,c}); for fine
    models (S, 2k): output (y, c) compares v_y with its own v_{y,c}."""
    if C == 2:
        out = []
        for y in range(2):
            fine = A[:, y, 2 + y * k : 2 + (y + 1) * k].nanmean(-1)
            out.append(A[:, y, y] / fine)
        return torch.stack(out, -1)
    out = []
    for o in range(C):
        y, c = divmod(o, k)
        out.append(A[:, o, y] / A[:, o, 2 + y * k + c])
    return torch.stack(out, -1)


def active_counts(net, k):
    """Neurons of each output active on a clean unit patch of each feature: (S, C, 2 + 2k)."""
    feats = torch.arange(2 + 2 * k, device=net.W.device)
    pre = net.W[:, :, feats] + net.b[..., None]
    S = pre.shape[0]
    return (pre > 0).reshape(S, net.C, net.m, -1).sum(2)


def phase_grid(cfg, rt, nets: dict, alphas, s_daggers, n, offset=0):
    """Hard-sample accuracy of each trained model over mean alpha^dagger x s^dagger (test-only
    knobs: the models are trained once). ``{name: array (len(s), len(alpha), S)}``."""
    out = {name: np.zeros((len(s_daggers), len(alphas), cfg.seeds)) for name in nets}
    for i, sd in enumerate(s_daggers):
        for j, a in enumerate(alphas):
            dcfg = data_config(cfg, s_dagger=sd, alpha_dagger=(0.8 * a, 1.2 * a))
            g = rt.generator(400 + offset + 97 * i + j)
            X, y, _ = fdata.sample(dcfg, cfg.seeds, n, True, g)
            X, y = X.to(rt.device), y.to(rt.device)
            for name, (net, how) in nets.items():
                sc = ftrain.coarse_scores(fmodel.forward(net, X), how)
                out[name][i, j] = fmodel.accuracy(sc, fmodel.seen(y, sc)).cpu().numpy()
    return out
