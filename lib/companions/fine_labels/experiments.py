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


def test_set(dcfg, S, n, hard, g, device):
    """``(X, y)``: ``n`` balanced test samples per seed, easy or hard, on ``device``."""
    X, y, _ = fdata.sample(dcfg, S, n, hard, g)
    return X.to(device), y.to(device)


def test_sets(dcfg, S, n, g, device):
    """``{"easy": (X, y), "hard": (X, y)}``, drawn in that order from ``g``."""
    kinds = (("easy", False), ("hard", True))
    return {name: test_set(dcfg, S, n, hard, g, device) for name, hard in kinds}


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


def run(
    cfg,
    rt,
    *,
    kind: str,
    steps: int,
    tests,
    groups=None,
    B=None,
    offset=0,
    net=None,
    n_logs=None,
    progress=True,
):
    """Initialise (unless ``net`` is given) and train one model of each seed. ``kind`` as in
    :func:`labeller`; returns ``(net, history)``."""
    dcfg = data_config(cfg)
    C = {"coarse": 2, "fine": 2 * cfg.k}.get(kind, 2 * (groups or 1))
    if net is None:
        net = fmodel.init(
            cfg.seeds,
            C,
            m=cfg.m,
            d=cfg.d,
            sigma0=cfg.sigma0,
            tau=cfg.tau,
            g=rt.generator(100 + offset),
            device=rt.device,
        )
    hist = ftrain.train(
        net,
        dcfg,
        steps=steps,
        N=cfg.N,
        eta=cfg.eta,
        lam_b=cfg.lam_b,
        labels_of=labeller(kind, cfg.k, groups),
        g=rt.generator(200 + offset),
        log_times=log_times(steps, n_logs or cfg.n_logs),
        tests=tests,
        tau_sigma0=cfg.tau * cfg.sigma0,
        delta=slack(cfg),
        B=B,
        progress=progress,
    )
    return net, hist


def finetune(cfg, rt, *, net, steps, tests, offset=0, progress=True):
    """Fine-tuning (the remark after Theorem G.3, eqs. 234-235): keep training the fine model on
    coarse labels through ``hat F = max_c F_{y,c}`` with the same SGD and bias rule."""
    dcfg = data_config(cfg)
    groups = net.C // 2
    hist = ftrain.train(
        net,
        dcfg,
        steps=steps,
        N=cfg.N,
        eta=cfg.eta,
        lam_b=cfg.lam_b,
        labels_of=labeller("coarse", cfg.k),
        g=rt.generator(300 + offset),
        log_times=log_times(steps, cfg.n_logs),
        tests=tests,
        tau_sigma0=cfg.tau * cfg.sigma0,
        delta=slack(cfg),
        scores_fn=lambda F: fmodel.aggregate(F, groups, "max"),
        progress=progress,
    )
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


def phase_grid(cfg, rt, *, nets: dict, alphas, s_daggers, n, offset=0):
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


def lowest_mean(values) -> tuple[int, list[float]]:
    """The row of ``values`` (L, S): one row per logged time, one value per seed) with the lowest
    mean over seeds, as ``(index, the row's values)``: "for all t" read over the logged times."""
    v = torch.as_tensor(values, dtype=torch.float64)
    if v.ndim != 2 or v.shape[0] < 1:
        raise ValueError(f"expected values of shape (times, seeds), got {tuple(v.shape)}")
    i = int(v.mean(1).argmin())
    return i, v[i].tolist()


def common_detector_projection(W0: torch.Tensor, det: torch.Tensor, m: int) -> float:
    """Mean of ``<w_r(0), v_y>`` over the common detectors of both outputs of a coarse model
    (``det`` from :func:`companions.fine_labels.model.detectors`), over every seed."""
    vals = []
    for y in range(2):
        rows = slice(y * m, (y + 1) * m)
        vals.append(W0[:, rows, y].cpu()[det[:, rows, y].cpu()])
    return float(torch.cat(vals).double().mean())


def max_common_ratio(counts: torch.Tensor, k: int) -> list[float]:
    """Per seed, for a fine model read through the max: the mean over superclasses of the largest
    number of neurons, among the other superclass's ``k`` outputs, active on that superclass's
    common feature (what its feature noise excites), over the mean number of neurons of a
    subclass's own output active on its subclass feature. ``counts`` (S, 2k, 2 + 2k) from
    :func:`active_counts`. With equal detector counts everywhere it is 1."""
    c = counts.double()
    out = []
    for s in range(c.shape[0]):
        ratios = []
        for y in range(2):
            other = 1 - y
            n_c = c[s, other * k : (other + 1) * k, other].max()
            own = torch.stack([c[s, y * k + j, 2 + y * k + j] for j in range(k)]).mean()
            ratios.append(float(n_c / own))
        out.append(sum(ratios) / 2)
    return out


def margin_fits(t, margins, half) -> dict:
    """Lemma E.4's line, two estimators, per seed: ``margins`` (L, S, n) are the margins of the
    easy test samples at the logged times ``t``; over the times in ``half`` (a mask), the slope and
    R^2 of the least-squares line of ``mean_n (e^F + F)`` ("per sample") and of ``e^Fbar + Fbar``
    with ``Fbar`` the mean margin ("mean margin"). ``{name: (slopes, r2)}``, lists over seeds."""
    from companions.fine_labels import theory as fth

    F = torch.as_tensor(margins, dtype=torch.float64)
    curves = {
        "per sample": (F.exp() + F).mean(-1),
        "mean margin": F.mean(-1).exp() + F.mean(-1),
    }
    tt = np.asarray(t, dtype=float)[half]
    out = {}
    for name, c in curves.items():
        fits = [fth.linear_fit_r2(tt, c[half, j].numpy()) for j in range(c.shape[1])]
        out[name] = ([f[0] for f in fits], [f[1] for f in fits])
    return out


def active_feature_counts(net, k: int) -> tuple[list[float], list[float]]:
    """Per seed of a coarse model, ``n_c`` and ``n_f`` of eq. D2: the neurons of an output active
    on a clean unit patch of its common feature, and of its subclass features (mean over the two
    outputs and the k subclasses)."""
    active = active_counts(net, k).double().cpu()  # (S, 2, 2 + 2k)
    n_c = active[:, [0, 1], [0, 1]].mean(-1)
    n_f = torch.stack([active[:, y, 2 + y * k : 2 + (y + 1) * k].mean(-1) for y in range(2)], -1)
    return n_c.tolist(), n_f.mean(-1).tolist()


def bias_rates(db: torch.Tensor, dA: torch.Tensor, det: torch.Tensor, m: int, lam_b: float):
    """Per seed, the mean over the common detectors of both outputs of ``lam_b db / dA`` (Lemma
    E.7 with ``lam_b``: -1 by eq. 18 when ``||dw|| = dA``). ``db`` (S, 2m) bias changes, ``dA``
    (S, 2m, F) weight changes along the features, ``det`` (S, 2m, F) the detectors."""
    out = []
    for j in range(db.shape[0]):
        vals = []
        for y in range(2):
            rows = torch.arange(y * m, (y + 1) * m)
            sel = rows[det[j, rows, y]]
            vals.append(db[j, sel].double() / dA[j, sel, y].double())
        out.append(float(lam_b * torch.cat(vals).mean()))
    return out


def subclass_detector_activity(net, single: torch.Tensor, k: int) -> tuple[float, float]:
    """Theorem D.1 point 2, as corrected: the fraction of the singleton detectors of subclass
    features (``single`` (S, 2m, F), :func:`companions.fine_labels.model.singleton_detectors`) of
    a coarse model active on a clean unit patch of their own subclass feature, and on one of
    their superclass's common feature (as printed). ``(own, common)``."""
    feats = torch.arange(2 + 2 * k, device=net.W.device)
    on = ((net.W[:, :, feats] + net.b[..., None]) > 0).cpu()  # (S, 2m, F)
    own, common = [], []
    for y in range(2):
        rows = slice(y * net.m, (y + 1) * net.m)
        for f in range(2 + y * k, 2 + (y + 1) * k):
            sel = single[:, rows, f].cpu()
            own.append(on[:, rows, f][sel])
            common.append(on[:, rows, y][sel])
    own, common = torch.cat(own), torch.cat(common)
    if own.numel() == 0:
        return math.nan, math.nan
    return float(own.double().mean()), float(common.double().mean())


def feature_noise_terms(net, X, y, alpha: float, s_dagger: int) -> dict:
    """Lemma E.8's feature-noise term on hard samples ``(X, y)`` of a coarse model: the wrong
    output's measured mean response ``F_y'``, and the term for ``s_dagger`` patches of its own
    common feature, summed over its neurons, as printed in eqs. (132)-(133) (amplitude 1:
    ``relu(<w, v> + b)``) and with the factor ``alpha`` restored (``relu(alpha <w, v> + b)``);
    means over seeds and outputs."""
    F = fmodel.forward(net, X)
    y_seen = fmodel.seen(y, F)
    wrong = F.gather(-1, (1 - y_seen)[..., None]).mean()
    printed, restored = [], []
    for o in range(2):
        rows = slice(o * net.m, (o + 1) * net.m)
        w, b = net.W[:, rows, o], net.b[:, rows]
        printed.append(s_dagger * torch.relu(w + b).sum(-1).mean())
        restored.append(s_dagger * torch.relu(alpha * w + b).sum(-1).mean())
    return {
        "measured": float(wrong),
        "printed": float(sum(printed) / 2),
        "restored": float(sum(restored) / 2),
    }
