"""The six methods of Section A.7.1 on one data set, as the source runs them (Tables A.1-A.5).

Network: symmetric init, the two large-weight-decay steps on the full training set, then
``steps`` minibatch steps (batch 1000 in the source) with the practical optimizer (Adam) or the
theory's SGD rate ``k^2/(T m^{1/3})`` (A.276). RF and NTK: the same init, trained for the same
number of steps with Adam. One Step / Two Step: probes on the first layer after step 1 / step 2.
"Cos Similarity" is ``max_i cos(w_i, sum_{j in A} M_j)`` over the 2m neurons.
"""

from __future__ import annotations

import math
from fractions import Fraction

import torch

from companions.emergence import analysis, baselines
from companions.emergence import data as em_data
from companions.emergence import network as net

METHODS = ("network", "network-theory", "rf", "ntk", "one-step", "two-step")


def _acc(out: torch.Tensor, y: torch.Tensor):
    return net.accuracies(out, y)


def _stack(params: list) -> net.Params:
    return net.Params(*(torch.stack([getattr(p, f) for p in params]) for f in ("W", "b", "a")))


def _unstack(params: net.Params, s: int) -> net.Params:
    return net.Params(params.W[s], params.b[s], params.a[s])


def _seed_of(value, s: int):
    """Network ``s``'s part of a result of stacked runs (lists per network, curves, params)."""
    if isinstance(value, net.Params):
        return _unstack(value, s)
    if isinstance(value, dict):
        return {k: _seed_of(v, s) if k != "step" else v for k, v in value.items()}
    if isinstance(value, list) and value and isinstance(value[0], list):
        return [row[s] for row in value]
    if isinstance(value, list):
        return value[s]
    return value


def run_methods(
    dist,
    x,
    *,
    y,
    evals: dict,
    m: int,
    steps: int,
    batch: int,
    generator_seed,
    schedule: str = "A.214",
    methods=METHODS,
    lr: float = 1e-2,
    eval_every: int = 10,
    progress: bool = True,
    probe_steps: int | None = None,
    gamma: float | None = None,
    class_weighted: bool = False,
    train_dtype: torch.dtype | None = None,
):
    """Run ``methods`` on the training set ``(x, y)``; ``evals`` maps names to ``(x, y)`` evaluation
    sets (the first is "test"). ``gamma`` overrides the gamma used by the initialisation and
    schedule (needed without input structure, where gamma = 0). Returns, per method, final
    accuracies per evaluation set and the training set, a test-accuracy curve, and the max cosine to
    ``sum_A M_j``.
    ``class_weighted``: the first two steps use the class-weighted loss (A.293) of Section A.8, for
    unbalanced classes.
    ``train_dtype``: the dtype of the trainings after the first two steps (the network's steps
    t > 2, with Adam or the theory's SGD, RF and NTK), with the data and the initial and two-step
    weights cast to it once they are computed; ``None``, the data's dtype. The first two steps,
    whose step 1 cancels the initialisation against a step of order 1e-7 (A.214), and the probes
    stay in the data's dtype.

    **Stacked runs.** With data stacked along a leading axis (``x`` of shape ``(S, n, d)``, the
    evaluation sets likewise) and ``dist`` and ``generator_seed`` lists of ``S``, the ``S`` runs
    train at once, each with its own data, initialisation and minibatches, the same updates as
    ``S`` calls one by one (vectorised: one step of all of them costs little more than one); the
    result is the list of their ``S`` results."""
    unknown = [method for method in methods if method not in METHODS]
    if unknown:
        raise ValueError(f"parameter 'methods' has {unknown[0]!r}: expected items of {METHODS}")
    stacked = x.dim() == 3
    dists = list(dist) if stacked else [dist]
    seeds = list(generator_seed) if stacked else [generator_seed]
    if stacked and not len(dists) == len(seeds) == x.shape[0]:
        raise ValueError(
            f"stacked runs need one distribution and one generator_seed per run: got "
            f"{len(dists)}, {len(seeds)} for {x.shape[0]} data sets"
        )
    device, dtype = x.device, x.dtype
    gamma = float(dists[0].gamma) if gamma is None else gamma
    sigma, k = dists[0].sigma, dists[0].k
    inits = [
        net.symmetric_init(
            m,
            d_.d,
            k=k,
            sigma_tilde=sigma,
            gamma=gamma,
            generator=torch.Generator().manual_seed(s_),
            dtype=dtype,
            device=device,
        )
        for d_, s_ in zip(dists, seeds)
    ]
    p0 = _stack(inits) if stacked else inits[0]
    sched = net.schedule(schedule, k, m, sigma, gamma, steps)
    p1, p2 = net.first_two_steps(
        p0, x, y, sched, weights=net.class_weights(y) if class_weighted else None
    )
    v = torch.stack([d_.signal_direction for d_ in dists]) if stacked else dist.signal_direction
    v = v.to(device=device, dtype=dtype)
    first = next(iter(evals))
    out: dict = {"schedule": sched}
    late = dtype if train_dtype is None else train_dtype
    x_late, y_late = x.to(late), y.to(late)
    evals_late = {name: (xe.to(late), ye.to(late)) for name, (xe, ye) in evals.items()}
    p0_late, p2_late = p0.to(late), p2.to(late)

    def max_cos(W):
        return net.as_number(net.cosines(W.to(dtype), v).max(-1).values)

    def finals(fn):
        res = {name: _acc(fn(xe), ye) for name, (xe, ye) in evals_late.items()}
        res["train"] = _acc(fn(x_late), y_late)
        return res

    for method in methods:
        gens = [torch.Generator().manual_seed(s_ + 1 + METHODS.index(method)) for s_ in seeds]
        g = gens if stacked else gens[0]
        xe, ye = evals_late[first]
        if method in ("network", "network-theory"):
            theory = method == "network-theory"
            p, hist = net.train_late(
                p2_late,
                x_late,
                y=y_late,
                steps=steps,
                batch=batch,
                generator=g,
                optimizer="theory" if theory else "adam",
                lr=sched["late"]["eta"] if theory else lr,
                eval_every=eval_every,
                evaluate=lambda q: {"test": net.accuracy(q, xe, ye)},
                desc=method,
                progress=progress,
            )
            res = finals(lambda X: net.forward(p, X))
            res.update(curve=hist, cos=max_cos(p.W), params=p)
        elif method == "rf":
            Fe = net.features(p0_late, xe)
            a, hist = baselines.train_linear_head(
                net.features(p0_late, x_late),
                y_late,
                steps=steps,
                batch=batch,
                generator=g,
                lr=lr,
                eval_every=eval_every,
                desc="RF",
                evaluate=lambda a: {"test": _acc(baselines.linear(Fe, a), ye)},
                progress=progress,
            )
            res = finals(lambda X: baselines.linear(net.features(p0_late, X), a))
            res.update(curve=hist, cos=max_cos(p0.W), head_norm=net.as_number(a.norm(dim=-1)))
        elif method == "ntk":
            model, hist = baselines.train_ntk(
                p0_late,
                x_late,
                y=y_late,
                steps=steps,
                batch=batch,
                generator=g,
                lr=lr,
                eval_every=eval_every,
                evaluate=lambda mod: {"test": _acc(mod(xe), ye)},
                progress=progress,
            )
            with torch.no_grad():
                res = finals(model)
            res.update(curve=hist, cos=[math.nan] * len(seeds) if stacked else math.nan)
        else:  # "one-step" or "two-step" (the methods are checked above)
            res = _probe_method(
                p1 if method == "one-step" else p2,
                x,
                y=y,
                evals=evals,
                probe_steps=probe_steps,
                batch=batch,
                g=g,
            )
            res.update(cos=max_cos((p1 if method == "one-step" else p2).W))
        out[method] = res
    out["p0"], out["p1"], out["p2"] = p0, p1, p2
    if not stacked:
        return out
    return [{key: _seed_of(value, s) for key, value in out.items()} for s in range(len(seeds))]


def _probe_method(p, x, *, y, evals, probe_steps, batch, g) -> dict:
    """One Step / Two Step on the frozen first layer ``p``: the standardised probe on every
    evaluation set, the raw reading (:func:`analysis.probes`) when ``probe_steps``, and the number
    of features with a spread (kept by the standardised probe); lists per network when stacked."""
    F = net.features(p, x)
    first = next(iter(evals))
    xe, ye = evals[first]
    stacked = F.dim() == 3
    per = list(range(F.shape[0])) if stacked else [None]

    def part(t, s):
        if s is None:
            return t
        return _unstack(t, s) if isinstance(t, net.Params) else t[s]

    res: dict = {"train": [], first: [], "kept": []}
    for s in per:
        Fs, ys = part(F, s), part(y, s)
        r = baselines.standardised_probe(Fs, ys, net.features(part(p, s), part(xe, s)), part(ye, s))
        res["train"].append(r["train"])
        res[first].append(r["test"])
        res["kept"].append(int((Fs.std(0) > 1e-300).sum()))
        for name, (xo, yo) in list(evals.items())[1:]:
            Fo = net.features(part(p, s), part(xo, s))
            res.setdefault(name, []).append(
                baselines.standardised_probe(Fs, ys, Fo, part(yo, s))["test"]
            )
    if probe_steps:
        raw = analysis.probes(p, x, y=y, Xt=xe, yt=ye, steps=probe_steps, batch=batch, generator=g)
        raws = raw if stacked else [raw]
        res["raw_train"] = [r["raw"]["train"] for r in raws]
        res["raw_test"] = [r["raw"]["test"] for r in raws]
    return res if stacked else {key: value[0] for key, value in res.items()}


#: Tables A.1-A.5 of the source (dissertation Appendix A.7), transcribed: per method (train %, test
#: %, cos); ``None`` where the table has no entry ("NA" for the NTK's cosine).
PAPER_TABLES = {
    "A.1": {
        "network": (100.0, 100.0, 0.997),
        "ntk": (84.0, 86.4, None),
        "rf": (74.7, 76.0, 0.114),
        "one-step": (51.3, 52.2, 0.848),
        "two-step": (100.0, 100.0, 0.997),
        "no-structure": (100.0, 52.0, 0.253),
    },
    "A.2": {
        "network": (100.0, 100.0, 1.00),
        "ntk": (100.0, 100.0, None),
        "rf": (76.4, 73.2, 0.153),
        "one-step": (44.1, 41.0, 0.901),
        "two-step": (100.0, 100.0, 0.994),
        "no-structure": (100.0, 100.0, 0.965),
    },
    "A.3 d=100": {
        "network": (100.0, 100.0, 1.000),
        "ntk": (83.1, 81.5, None),
        "rf": (78.9, 78.3, 0.354),
        "one-step": (53.0, 51.1, 0.967),
        "two-step": (100.0, 100.0, 1.000),
        "no-structure": (100.0, 51.0, 0.331),
    },
    "A.3 d=2000": {
        "network": (100.0, 100.0, 0.998),
        "ntk": (75.6, 75.4, None),
        "rf": (80.0, 77.0, 0.056),
        "one-step": (50.22, 50.01, 0.560),
        "two-step": (100.0, 100.0, 0.998),
        "no-structure": (100.0, 52.5, 0.309),
    },
    "A.4 ratio=0.8": {
        "network": (100.0, 100.0, 0.999),
        "ntk": (62.9, 82.7, None),
        "rf": (72.7, 70.4, 0.293),
        "one-step": (78.3, 75.7, 0.950),
        "two-step": (100.0, 100.0, 0.999),
        "no-structure": (100.0, 61.7, 0.218),
    },
    "A.4 ratio=0.9": {
        "network": (100.0, 100.0, 0.997),
        "ntk": (84.0, 81.7, None),
        "rf": (73.6, 72.4, 0.296),
        "one-step": (92.3, 89.2, 0.956),
        "two-step": (100.0, 100.0, 0.997),
        "no-structure": (100.0, 71.8, 0.286),
    },
    "A.5 n=25000": {
        "network": (100.0, 100.0, 0.997),
        "ntk": (84.0, 84.1, None),
        "rf": (78.6, 74.7, 0.105),
        "one-step": (50.6, 50.0, 0.851),
        "two-step": (100.0, 100.0, 0.997),
        "no-structure": (100.0, 50.2, 0.230),
    },
    "A.5 n=10000": {
        "network": (100.0, 100.0, 0.995),
        "ntk": (73.9, 75.0, None),
        "rf": (71.6, 74.3, 0.096),
        "one-step": (50.7, 50.3, 0.974),
        "two-step": (100.0, 100.0, 0.994),
        "no-structure": (100.0, 52.2, 0.176),
    },
}


#: The most bytes of samples (both sets, structured and structure-free) whose seeds
#: :func:`repeated_table_runs` trains stacked; more seeds are trained in turn. At the source's
#: d = 2000 one seed's samples take 1.9 GB (float64), so five stacked would pass the 8 GiB the
#: paper dry run allows a process.
STACK_BYTES = 2**30

#: The source's sizes of Tables A.1-A.5 (Section A.7): the parity tables' d, D, k, m, n, T, and the
#: interval labeling's D, k, m, T; the sizes each table varies are in :func:`table_configurations`.
SOURCE_SIZES = dict(d=500, D=100, k=5, m=300, n=50_000, steps=600)
SOURCE_INTERVAL = dict(D=100, k=30, m=100, steps=200)


def table_configurations(
    *,
    d: int,
    D: int,
    k: int,
    m: int,
    n: int,
    steps: int,
    interval_D: int,
    interval_k: int,
    interval_m: int,
    interval_steps: int,
    d_values,
    ratios,
    n_values,
    m_values,
) -> dict:
    """The configurations of Tables A.1-A.5 at this run's sizes, labelled with them (``'A.3
    d=200'`` is this run's larger d), each beside the source's configuration in the same position:
    ``{label: dict(source, make, n, m, steps, negative_fraction, class_weighted, at_source_size)}``
    with ``make(generator)`` a fresh distribution (parity mixture, p_o = 1/2, or the interval
    labeling, y = +1 iff S in [2k/3, k]). The first two steps are class-weighted (A.293) where the
    classes are unbalanced (Tables A.2 and A.4). ``at_source_size``: every size equals the
    source's, so that its numbers can be compared with ours."""
    half = Fraction(1, 2)
    same = dict(d=d, D=D, k=k, m=m, n=n, steps=steps) == SOURCE_SIZES

    def parity(d_):
        return lambda g: em_data.parity_mixture(d_, D, k=k, p_o=half, generator=g)

    def interval(g):
        lo = (2 * interval_k) // 3
        return em_data.interval(d, interval_D, k=interval_k, generator=g, lo=lo, hi=interval_k)

    def config(source, make, *, n_=n, m_=m, steps_=steps, ratio=None, weighted=False, at=same):
        return dict(
            source=source,
            make=make,
            n=n_,
            m=m_,
            steps=steps_,
            negative_fraction=ratio,
            class_weighted=weighted,
            at_source_size=at,
        )

    interval_same = (
        same
        and dict(D=interval_D, k=interval_k, m=interval_m, steps=interval_steps) == SOURCE_INTERVAL
    )
    out = {
        "A.1": config("A.1", parity(d)),
        "A.2": config("A.2", interval, m_=interval_m, steps_=interval_steps, weighted=True),
    }
    out["A.2"]["at_source_size"] = interval_same
    rest = dict(D=D, k=k, m=m, n=n, steps=steps) == {
        key: SOURCE_SIZES[key] for key in ("D", "k", "m", "n", "steps")
    }
    for d_, src in zip(d_values, (100, 2000)):
        out[f"A.3 d={d_}"] = config(f"A.3 d={src}", parity(d_), at=rest and d_ == src)
    for r_, src in zip(ratios, (0.8, 0.9)):
        out[f"A.4 ratio={r_}"] = config(
            f"A.4 ratio={src}", parity(d), ratio=r_, weighted=True, at=same and r_ == src
        )
    for n_, m_, (src_n, src_m) in zip(n_values, m_values, ((25_000, 300), (10_000, 50))):
        at = (d, D, k, steps) == (500, 100, 5, 600) and (n_, m_) == (src_n, src_m)
        out[f"A.5 n={n_}"] = config(f"A.5 n={src_n}", parity(d), n_=n_, m_=m_, at=at)
    return out


def run_tables(
    configs: dict,
    n_test: int,
    *,
    batch: int,
    seeds: int,
    seed: int = 0,
    probe_steps: int | None = None,
    device="cpu",
    train_dtype: torch.dtype | None = None,
) -> dict:
    """:func:`repeated_table_runs` for every configuration of :func:`table_configurations`, the
    seeds stacked: ``{label: [one table_run result per seed]}``. The configurations go through
    :func:`companions.train.progress` (a dry run stops after the first)."""
    from companions.train import progress

    out = {}
    for label in progress(list(configs), desc="tables", disable=True):
        c = configs[label]
        out[label] = repeated_table_runs(
            c["make"],
            c["n"],
            n_test=n_test,
            m=c["m"],
            steps=c["steps"],
            batch=batch,
            seeds=seeds,
            seed=seed,
            device=device,
            negative_fraction=c["negative_fraction"],
            probe_steps=probe_steps,
            class_weighted=c["class_weighted"],
            train_dtype=train_dtype,
        )
    return out


def per_seed_points(runs: list, method: str, source: float | None = None, col: int = 1) -> list:
    """A method's accuracy (``col``: 0 train, 1 test) per seed, in points, less ``source``."""
    return [100 * r[method][col] - (source or 0.0) for r in runs]


def sample_with_ratio(
    dist, n: int, negative_fraction: float | None, generator: torch.Generator, device="cpu"
):
    """``n`` examples of ``dist``; with ``negative_fraction = r``, exactly ``round(r n)`` of class
    -1 and the rest of class +1, drawn by rejection from the distribution (Table A.4: "keep the
    total sample size but use different class imbalance ratios")."""
    if negative_fraction is None:
        x, y, _ = dist.sample(n, generator, device=device)
        return x, y
    n_neg = round(negative_fraction * n)
    xs, ys = [], []
    need = {-1.0: n_neg, 1.0: n - n_neg}
    while any(v > 0 for v in need.values()):
        x, y, _ = dist.sample(max(2 * n, 1000), generator)
        for label in (-1.0, 1.0):
            take = (y == label).nonzero().squeeze(1)[: need[label]]
            xs.append(x[take])
            ys.append(y[take])
            need[label] -= len(take)
    x, y = torch.cat(xs), torch.cat(ys)
    perm = torch.randperm(len(y), generator=generator)
    return x[perm].to(device), y[perm].to(device)


def table_run(
    dist,
    free,
    *,
    n: int,
    n_test: int,
    m: int,
    steps: int,
    batch: int,
    seed: int,
    device="cpu",
    negative_fraction: float | None = None,
    probe_steps: int | None = None,
    progress: bool = False,
    class_weighted: bool = False,
    train_dtype: torch.dtype | None = None,
) -> dict:
    """One column set of Tables A.1-A.5: the six methods on ``dist`` and the network on ``free``
    (the same A, M and labels without structure). The initialisation and schedule use ``dist.gamma``
    in both cases (without structure gamma can be 0, where sigma_a is undefined). Returns per method
    ``(train, test, cos)`` and, for the probes, the raw reading's ``(train, test)``.
    ``train_dtype``: as in :func:`run_methods`."""
    data = _table_data(
        dist,
        free,
        n=n,
        n_test=n_test,
        seed=seed,
        negative_fraction=negative_fraction,
        device=device,
    )
    sizes = dict(m=m, steps=steps, batch=batch, probe_steps=probe_steps)
    return _table_runs(
        [dist], [free], data=[data], seeds=[seed], **sizes, progress=progress,
        class_weighted=class_weighted, train_dtype=train_dtype,
    )[0]  # fmt: skip


def _table_data(dist, free, *, n, n_test, seed, negative_fraction, device) -> tuple:
    """A table run's samples, drawn in this order with ``Generator(seed)``: training and test
    sets of ``dist``, then of ``free``."""
    gen = torch.Generator().manual_seed(seed)
    return tuple(
        t
        for source, size in ((dist, n), (dist, n_test), (free, n), (free, n_test))
        for t in sample_with_ratio(source, size, negative_fraction, gen, device)
    )


def _table_runs(
    dists,
    frees,
    *,
    data,
    seeds,
    m,
    steps,
    batch,
    probe_steps,
    progress,
    class_weighted,
    train_dtype,
) -> list[dict]:
    """The methods of :func:`table_run` on each ``(dist, data, seed)``, all seeds stacked in one
    :func:`run_methods` call for the structured data and one for the structure-free twin; a
    single seed runs unstacked."""
    one = len(dists) == 1
    cols = [d[0] if one else torch.stack(d) for d in zip(*data)]
    x, y, xt, yt, xf, yf, xft, yft = cols
    common = dict(
        eval_every=max(steps // 20, 1),
        progress=progress,
        class_weighted=class_weighted,
        train_dtype=train_dtype,
    )
    res = run_methods(
        dists[0] if one else dists,
        x,
        y=y,
        evals={"test": (xt, yt)},
        m=m,
        steps=steps,
        batch=batch,
        generator_seed=seeds[0] + 7 if one else [s_ + 7 for s_ in seeds],
        methods=("network", "rf", "ntk", "one-step", "two-step"),
        probe_steps=probe_steps,
        **common,
    )
    res_f = run_methods(
        frees[0] if one else frees,
        xf,
        y=yf,
        evals={"test": (xft, yft)},
        m=m,
        steps=steps,
        batch=batch,
        generator_seed=seeds[0] + 7 if one else [s_ + 7 for s_ in seeds],
        methods=("network",),
        gamma=float(dists[0].gamma),
        **common,
    )
    if one:
        res, res_f = [res], [res_f]
    return [_table_result(r, r_f, d[3], probe_steps) for r, r_f, d in zip(res, res_f, data)]


def _table_result(res: dict, res_f: dict, yt: torch.Tensor, probe_steps) -> dict:
    """A table run's entries: per method ``(train, test, cos)``, the raw probes' readings, and
    the test set's majority-class rate."""
    out = {
        key: (res[key]["train"], res[key]["test"], res[key]["cos"])
        for key in ("network", "rf", "ntk", "one-step", "two-step")
    }
    out["no-structure"] = (
        res_f["network"]["train"],
        res_f["network"]["test"],
        res_f["network"]["cos"],
    )
    if probe_steps:
        for key in ("one-step", "two-step"):
            out[f"{key}-raw"] = (res[key]["raw_train"], res[key]["raw_test"], res[key]["cos"])
    out["majority"] = max(float((yt == 1).double().mean()), float((yt == -1).double().mean()))
    return out


def fixed_feature_comparison(
    d: int,
    D: int,
    *,
    k: int,
    m: int,
    n: int,
    n_test: int,
    steps: int,
    batch: int,
    kernel_n: int,
    seed: int,
    device="cpu",
    eval_every: int = 10,
    train_dtype: torch.dtype | None = None,
) -> dict:
    """One seed of the comparison of Section A.7.1 on a fresh D_A^mix (p_o = 1/2): the network with
    Adam and with the theory's late rate (A.276), random features, the NTK and RBF kernel ridge on
    ``kernel_n`` points; each evaluated on a test set of the mixture and one of its uniform part
    D^(0). Returns the :func:`run_methods` result with ``'kernel'`` (RBF) and ``'laplace'``
    (:func:`kernel_run`) added. ``train_dtype``: as in :func:`run_methods`."""
    gen = torch.Generator().manual_seed(10 + 1000 * seed)
    dist = em_data.parity_mixture(d, D, k=k, p_o=Fraction(1, 2), generator=gen)
    x, y, _ = dist.sample(n, gen, device=device)
    xt, yt, _ = dist.sample(n_test, gen, device=device)
    xu, yu, _ = em_data.without_structure(dist).sample(n_test, gen, device=device)
    runs = run_methods(
        dist,
        x,
        y=y,
        evals={"test": (xt, yt), "uniform part": (xu, yu)},
        m=m,
        steps=steps,
        batch=batch,
        generator_seed=50 + 1000 * seed,
        methods=("network", "network-theory", "rf", "ntk"),
        eval_every=eval_every,
        progress=False,
        train_dtype=train_dtype,
    )
    for name, kernel in (("kernel", "rbf"), ("laplace", "laplace")):
        runs[name] = kernel_run(dist, x[:kernel_n], y[:kernel_n], (xt, yt), (xu, yu), kernel)
    runs["dist"] = dist
    return runs


def kernel_run(dist, x, y, test, uniform, kernel: str) -> dict:
    """Kernel ridge regression (:func:`baselines.kernel_ridge`) on ``(x, y)`` from ``dist``
    (``D_A^mix``), evaluated on a test set of the mixture and one of its uniform part, with
    Corollary 2.3 in this book's explicit form (:func:`theory.corollary_2_3_bound`): ``eps`` and
    the bounds, and the hinge losses they bound, per test point (``hinge``: the mixture,
    ``hinge uniform part``)."""
    from companions.emergence import theory

    kr = baselines.kernel_ridge(x, y, {"test": test, "uniform part": uniform}, kernel)
    c_k = theory.radial_walsh_coefficient(
        kernel, dist.D, dist.k, 1 / float(dist.sigma2), kr["bandwidth"]
    )
    out = {key: kr[key] for key in ("train", "test", "uniform part", "alpha_norm", "rkhs_norm")}
    bound = theory.corollary_2_3_bound(kr["rkhs_norm"], c_k, float(dist.p_o))
    out.update(c_k=c_k, eps=bound["eps"], bound_mixture=bound["mixture"])
    out["bound_uniform_part"] = bound["uniform part"]
    out["hinge"] = (1 - test[1] * kr["test outputs"]).clamp(min=0)
    out["hinge uniform part"] = (1 - uniform[1] * kr["uniform part outputs"]).clamp(min=0)
    return out


def structure_pair(
    d: int,
    D: int,
    *,
    k: int,
    m: int,
    n: int,
    n_test: int,
    steps: int,
    batch: int,
    seed: int,
    device="cpu",
    eval_every: int = 10,
    train_dtype: torch.dtype | None = None,
) -> dict:
    """One seed of "Network w/o structure" (Table A.1): a fresh D_A^mix (p_o = 1/2) and its
    structure-free twin (uniform patterns, the same A, M and parity labels). The network, RF and
    NTK train on the twin, the network alone on the mixture, with the mixture's gamma for the
    initialisation and schedule in both. Returns ``{'free': ..., 'ref': ...}`` (the
    :func:`run_methods` results) and the median ``|cos(w_i^(1), v)|`` after the first step of
    each, and the max cosine at initialisation on the twin. ``train_dtype``: as in
    :func:`run_methods`."""
    gen = torch.Generator().manual_seed(10 + 1000 * seed)
    dist = em_data.parity_mixture(d, D, k=k, p_o=Fraction(1, 2), generator=gen)
    free = em_data.without_structure(dist)
    x, y, _ = free.sample(n, gen, device=device)
    xt, yt, _ = free.sample(n_test, gen, device=device)
    runs = run_methods(
        free,
        x,
        y=y,
        evals={"test": (xt, yt)},
        m=m,
        steps=steps,
        batch=batch,
        generator_seed=50 + 1000 * seed,
        methods=("network", "rf", "ntk"),
        gamma=float(dist.gamma),
        eval_every=eval_every,
        progress=False,
        train_dtype=train_dtype,
    )
    xs, ys, _ = dist.sample(n, gen, device=device)
    xst, yst, _ = dist.sample(n_test, gen, device=device)
    ref = run_methods(
        dist,
        xs,
        y=ys,
        evals={"test": (xst, yst)},
        m=m,
        steps=steps,
        batch=batch,
        generator_seed=50 + 1000 * seed,
        methods=("network",),
        eval_every=eval_every,
        progress=False,
        train_dtype=train_dtype,
    )
    v = dist.signal_direction.to(device=device, dtype=x.dtype)
    return {
        "free": runs,
        "ref": ref,
        "cos1_free": float(net.cosines(runs["p1"].W, v).abs().median()),
        "cos1_ref": float(net.cosines(ref["p1"].W, v).abs().median()),
        "cos_init": float(net.cosines(runs["p0"].W, v).max()),
    }


def repeated_table_runs(
    make,
    n: int,
    *,
    n_test: int,
    m: int,
    steps: int,
    batch: int,
    seeds: int,
    seed: int = 0,
    device="cpu",
    negative_fraction: float | None = None,
    probe_steps: int | None = None,
    class_weighted: bool = False,
    train_dtype: torch.dtype | None = None,
) -> list[dict]:
    """:func:`table_run` on ``seeds`` independent draws: ``make(generator)`` builds a fresh
    distribution (new A, M) for each, with its structure-free twin; returns one result per seed,
    the same as :func:`table_run` seed by seed, but with the seeds' trainings stacked (one
    vectorised run), as many at once as keep their samples under :data:`STACK_BYTES`. The stacks
    go through :func:`companions.train.progress` (a dry run trains the first only).
    ``train_dtype``: as in :func:`run_methods`."""
    from companions.train import progress

    sizes = dict(m=m, steps=steps, batch=batch, probe_steps=probe_steps)

    def draw(s):
        dist = make(torch.Generator().manual_seed(seed + 1000 * s + 17))
        free = em_data.without_structure(dist)
        return (
            dist,
            free,
            _table_data(
                dist,
                free,
                n=n,
                n_test=n_test,
                seed=seed + 100 * s,
                negative_fraction=negative_fraction,
                device=device,
            ),
        )

    first = draw(0)
    stack = max(1, STACK_BYTES // sum(t.element_size() * t.nelement() for t in first[2]))
    out: list[dict] = []
    for start in progress(range(0, seeds, stack), desc="seeds", disable=True):
        drawn = [first if s == 0 else draw(s) for s in range(start, min(start + stack, seeds))]
        dists, frees, data = (list(col) for col in zip(*drawn))
        seed_of = [seed + 100 * s for s in range(start, start + len(drawn))]
        out += _table_runs(
            dists, frees, data=data, seeds=seed_of, **sizes, progress=False,
            class_weighted=class_weighted, train_dtype=train_dtype,
        )  # fmt: skip
        first = drawn = dists = frees = data = None  # free the samples before the next stack
    return out


def mean_over_seeds(runs: list[dict]) -> dict:
    """The mean over seeds of every entry of :func:`table_run` results (tuples entrywise)."""
    first = runs[0]
    return {
        key: tuple(sum(r[key][i] for r in runs) / len(runs) for i in range(len(first[key])))
        if isinstance(first[key], tuple)
        else sum(r[key] for r in runs) / len(runs)
        for key in first
    }


def weighting_pair(
    make,
    n: int,
    *,
    n_test: int,
    m: int,
    steps: int,
    batch: int,
    seed: int,
    device="cpu",
    train_dtype: torch.dtype | None = None,
) -> dict:
    """The network on a fresh draw of ``make(generator)`` with the plain and with the
    class-weighted (A.293) first two steps, the same data, init and later steps; returns both test
    accuracies, the positive rate and the test set's majority-class rate. ``train_dtype``: as in
    :func:`run_methods`."""
    gen = torch.Generator().manual_seed(seed)
    dist = make(gen)
    x, y = sample_with_ratio(dist, n, None, gen, device)
    xt, yt = sample_with_ratio(dist, n_test, None, gen, device)
    acc = {}
    for name, weighted in (("plain", False), ("weighted", True)):
        res = run_methods(
            dist,
            x,
            y=y,
            evals={"test": (xt, yt)},
            m=m,
            steps=steps,
            batch=batch,
            generator_seed=seed,
            methods=("network",),
            eval_every=max(steps // 10, 1),
            progress=False,
            class_weighted=weighted,
            train_dtype=train_dtype,
        )
        acc[name] = res["network"]["test"]
    acc["positive_rate"] = float(dist.positive_rate)
    acc["majority"] = max(float((yt == 1).double().mean()), float((yt == -1).double().mean()))
    return acc
