"""companions.emergence.experiments where the mutants of issue 23 found it untested: the accuracy,
the class-ratio sampler (exact counts, valid draws, its rejection scheme), run_methods against
the building blocks it names (seeds as in the source: ``generator_seed + 1 + METHODS.index``),
and the table-level drivers' calls of run_methods (recorded with a stand-in)."""

from __future__ import annotations

import re
from fractions import Fraction

import pytest
import torch

from companions import train
from companions.emergence import analysis, baselines, data, experiments, theory
from companions.emergence import network as net

F64 = torch.float64


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_acc_counts_exact_sign_matches():
    out = torch.tensor([1.0, -2.0, 0.0, 3.0, -0.5], dtype=F64)
    y = torch.tensor([1.0, 1.0, 1.0, -1.0, -1.0], dtype=F64)
    assert experiments._acc(out, y) == 0.4  # a zero output matches no label


# -- sample_with_ratio ----------------------------------------------------------------------------


def _dist():
    return data.parity_mixture(10, 6, k=3, p_o=Fraction(1, 3), generator=_gen())


def _valid(dist, x, y):
    """Each row is M phi for a phi~ in {0,1}^D, and y is that phi~'s label."""
    phi_t = (x @ dist.M) * dist.sigma + dist.mean_phi
    assert torch.allclose(phi_t, phi_t.round(), atol=1e-9)
    assert set(phi_t.round().unique().tolist()) <= {0.0, 1.0}
    assert torch.equal(dist.labels(phi_t.round()), y)


def test_sample_with_ratio_without_a_ratio_is_a_plain_sample():
    dist = _dist()
    x, y = experiments.sample_with_ratio(dist, 30, None, _gen(3))
    x2, y2, _ = dist.sample(30, _gen(3))
    assert torch.equal(x, x2) and torch.equal(y, y2)


def _by_hand(dist, n, r, g):
    """The docstring's rejection scheme: draws of max(2n, 1000) examples, the first of each
    class kept (class -1 first) until round(r n) of -1 and the rest of +1, then one shuffle."""
    need = {-1.0: round(r * n), 1.0: n - round(r * n)}
    xs, ys = [], []
    while any(v > 0 for v in need.values()):
        x, y, _ = dist.sample(max(2 * n, 1000), g)
        for label in (-1.0, 1.0):
            keep = (y == label).nonzero().squeeze(1)[: need[label]]
            xs.append(x[keep])
            ys.append(y[keep])
            need[label] -= len(keep)
    x, y = torch.cat(xs), torch.cat(ys)
    perm = torch.randperm(len(y), generator=g)
    return x[perm], y[perm]


@pytest.mark.parametrize("n,r", [(40, 0.8), (1500, 0.25), (7, 0.5)])
def test_sample_with_ratio_exact_counts_and_valid_draws(n, r):
    dist = _dist()
    x, y = experiments.sample_with_ratio(dist, n, r, _gen(4))
    assert x.shape == (n, 10) and int((y == -1).sum()) == round(r * n)
    assert int((y == 1).sum()) == n - round(r * n)
    _valid(dist, x, y)
    x2, y2 = _by_hand(dist, n, r, _gen(4))
    assert torch.equal(x, x2) and torch.equal(y, y2)


def test_sample_with_ratio_shuffles_the_classes():
    x, y = experiments.sample_with_ratio(_dist(), 200, 0.5, _gen(5))
    assert not torch.equal(y, y.sort().values) and not torch.equal(y, y.sort().values.flip(0))


def test_sample_with_ratio_needs_several_rounds_for_a_rare_class():
    # Pr[y = +1] is small when the labels are +1 only for S = 3 of an interval law
    dist = data.interval(
        6, 6, k=3, generator=_gen(), p_A=Fraction(1, 10), p_o=Fraction(1, 2), lo=3, hi=3
    )
    assert dist.positive_rate == Fraction(1, 1000)
    x, y = experiments.sample_with_ratio(dist, 4, 0.5, _gen(6))
    assert int((y == 1).sum()) == 2 and int((y == -1).sum()) == 2
    _valid(dist, x, y)
    x2, y2 = _by_hand(dist, 4, 0.5, _gen(6))
    assert torch.equal(x, x2) and torch.equal(y, y2)


# -- run_methods against its building blocks ------------------------------------------------------


D_, N_, STEPS, M_, BATCH, SEED = (12, 8, 3), 160, 4, 3, 50, 5


def _setup():
    d, D, k = D_
    dist = data.parity_mixture(d, D, k=k, p_o=Fraction(1, 2), generator=_gen())
    x, y, _ = dist.sample(N_, _gen(1))
    xt, yt, _ = dist.sample(60, _gen(2))
    xo, yo, _ = data.without_structure(dist).sample(50, _gen(3))
    return dist, x, y, {"test": (xt, yt), "other": (xo, yo)}


def _runs():
    # called in each test, not a fixture: mutmut picks the tests of a mutant by the calls made
    # while a test runs, and a fixture's calls are not counted
    dist, x, y, evals = _setup()
    out = experiments.run_methods(
        dist,
        x,
        y=y,
        evals=evals,
        m=M_,
        steps=STEPS,
        batch=BATCH,
        generator_seed=SEED,
        eval_every=2,
        progress=False,
        probe_steps=2,
    )
    return dist, x, y, evals, out


def _init(dist, x, y, gamma=None, schedule="A.214", weights=None):
    gamma = float(dist.gamma) if gamma is None else gamma
    p0 = net.symmetric_init(
        M_, dist.d, k=dist.k, sigma_tilde=dist.sigma, gamma=gamma, generator=_gen(SEED)
    )
    sched = net.schedule(schedule, dist.k, M_, dist.sigma, gamma, STEPS)
    p1, p2 = net.first_two_steps(p0, x, y, sched, weights=weights)
    return p0, p1, p2, sched


def _acc(out, y):
    return float((torch.sign(out) == y).double().mean())


def test_run_methods_init_and_first_two_steps():
    dist, x, y, evals, out = _runs()
    p0, p1, p2, sched = _init(dist, x, y)
    assert out["schedule"] == sched
    for got, want in ((out["p0"], p0), (out["p1"], p1), (out["p2"], p2)):
        assert torch.equal(got.W, want.W) and torch.equal(got.b, want.b)
        assert torch.equal(got.a, want.a)
    assert set(out) == {"schedule", "p0", "p1", "p2", *experiments.METHODS}


def test_run_methods_network_and_network_theory():
    dist, x, y, evals, out = _runs()
    p0, p1, p2, sched = _init(dist, x, y)
    v = dist.signal_direction
    for i, method in enumerate(("network", "network-theory")):
        theory = method == "network-theory"
        xt, yt = evals["test"]
        p, hist = net.train_late(
            p2,
            x,
            y=y,
            steps=STEPS,
            batch=BATCH,
            generator=_gen(SEED + 1 + i),
            optimizer="theory" if theory else "adam",
            lr=sched["late"]["eta"] if theory else 1e-2,
            eval_every=2,
            evaluate=lambda q: {"test": net.accuracy(q, xt, yt)},
            progress=False,
        )
        res = out[method]
        assert torch.equal(res["params"].W, p.W) and torch.equal(res["params"].a, p.a)
        assert res["curve"] == hist and hist["step"] == [0, 2, 4]
        for name, (xe, ye) in evals.items():
            assert res[name] == net.accuracy(p, xe, ye)
        assert res["train"] == net.accuracy(p, x, y)
        assert res["cos"] == float(net.cosines(p.W, v).max())


def test_run_methods_random_features_and_ntk():
    dist, x, y, evals, out = _runs()
    p0, *_ = _init(dist, x, y)
    xt, yt = evals["test"]
    F, Ft = net.features(p0, x), net.features(p0, xt)
    a, hist = baselines.train_linear_head(
        F,
        y,
        steps=STEPS,
        batch=BATCH,
        generator=_gen(SEED + 1 + 2),
        eval_every=2,
        evaluate=lambda a: {"test": _acc(Ft @ a, yt)},
        progress=False,
    )
    rf = out["rf"]
    assert rf["curve"] == hist and rf["head_norm"] == float(a.norm())
    for name, (xe, ye) in evals.items():
        assert rf[name] == _acc(net.features(p0, xe) @ a, ye)
    assert rf["train"] == _acc(F @ a, y)
    assert rf["cos"] == float(net.cosines(p0.W, dist.signal_direction).max())
    model, hist = baselines.train_ntk(
        p0,
        x,
        y=y,
        steps=STEPS,
        batch=BATCH,
        generator=_gen(SEED + 1 + 3),
        eval_every=2,
        evaluate=lambda mod: {"test": _acc(mod(xt), yt)},
        progress=False,
    )
    ntk = out["ntk"]
    assert ntk["curve"] == hist and ntk["cos"] != ntk["cos"]  # NaN: the NTK has no cosine
    with torch.no_grad():
        for name, (xe, ye) in evals.items():
            assert ntk[name] == _acc(model(xe), ye)
        assert ntk["train"] == _acc(model(x), y)


def test_run_methods_one_step_and_two_step_probes():
    dist, x, y, evals, out = _runs()
    _, p1, p2, _ = _init(dist, x, y)
    (xt, yt), (xo, yo) = evals["test"], evals["other"]
    for i, (method, p) in enumerate((("one-step", p1), ("two-step", p2))):
        F = net.features(p, x)
        r = baselines.standardised_probe(F, y, net.features(p, xt), yt)
        res = out[method]
        assert res["train"] == r["train"] and res["test"] == r["test"]
        assert res["other"] == baselines.standardised_probe(F, y, net.features(p, xo), yo)["test"]
        raw = analysis.probes(
            p, x, y=y, Xt=xt, yt=yt, steps=2, batch=BATCH, generator=_gen(SEED + 1 + 4 + i)
        )["raw"]
        assert (res["raw_train"], res["raw_test"]) == (raw["train"], raw["test"])
        assert res["kept"] == int((F.std(0) > 1e-300).sum())
        assert res["cos"] == float(net.cosines(p.W, dist.signal_direction).max())


def test_run_methods_options():
    dist, x, y, evals = _setup()
    evals = {"test": evals["test"]}
    # gamma overrides dist.gamma; the schedule and class weights reach the first two steps
    out = experiments.run_methods(
        dist,
        x,
        y=y,
        evals=evals,
        m=M_,
        steps=STEPS,
        batch=BATCH,
        generator_seed=SEED,
        schedule="A.274",
        methods=("one-step",),
        gamma=0.4,
        class_weighted=True,
        progress=False,
    )
    p0, p1, p2, sched = _init(dist, x, y, 0.4, "A.274", net.class_weights(y))
    assert out["schedule"] == sched and torch.equal(out["p1"].W, p1.W)
    assert torch.equal(out["p0"].a, p0.a) and "raw_train" not in out["one-step"]
    assert set(out) == {"schedule", "p0", "p1", "p2", "one-step"}
    # lr reaches the Adam trainings (network, RF, NTK)
    out = experiments.run_methods(
        dist,
        x,
        y=y,
        evals=evals,
        m=M_,
        steps=1,
        batch=BATCH,
        generator_seed=SEED,
        methods=("rf",),
        lr=0.3,
        progress=False,
    )
    p0, *_ = _init(dist, x, y)
    F = net.features(p0, x)
    a, _ = baselines.train_linear_head(
        F, y, steps=1, batch=BATCH, generator=_gen(SEED + 3), lr=0.3, progress=False
    )
    assert out["rf"]["head_norm"] == float(a.norm())
    assert out["rf"]["curve"]["step"] == [0, 1]  # eval_every defaults to 10: step 0 and the end
    with pytest.raises(ValueError, match="'methods' has 'svm': expected items of"):
        experiments.run_methods(
            dist,
            x,
            y=y,
            evals=evals,
            m=M_,
            steps=1,
            batch=BATCH,
            generator_seed=SEED,
            methods=("svm",),
        )


def test_run_methods_progress_bars(capsys):
    dist, x, y, evals = _setup()
    experiments.run_methods(
        dist,
        x,
        y=y,
        evals={"test": evals["test"]},
        m=M_,
        steps=1,
        batch=BATCH,
        generator_seed=SEED,
        methods=("network", "rf", "ntk"),
    )
    err = capsys.readouterr().err
    for name in ("network", "RF", "NTK"):  # each bar named, shown by default
        assert re.search(rf"(^|\r){name}: ", err), name
    methods = ("network", "network-theory", "rf", "ntk")
    experiments.run_methods(
        dist,
        x,
        y=y,
        evals={"test": evals["test"]},
        m=M_,
        steps=1,
        batch=BATCH,
        generator_seed=SEED,
        methods=methods,
        progress=False,
    )
    assert capsys.readouterr().err == ""


# -- the drivers, with run_methods recorded ----------------------------------------------------


class Recorder:
    def __init__(self):
        self.calls = []

    def __call__(self, dist, x, *, y, evals, m, steps, batch, generator_seed, **kw):
        seed = generator_seed
        self.calls.append(
            dict(dist=dist, x=x, y=y, evals=evals, m=m, steps=steps, batch=batch, seed=seed, **kw)
        )
        n = len(self.calls)
        W = torch.eye(dist.D, dtype=F64) @ dist.M.T
        out = {"p0": net.Params(W, W[:, 0], W[:, 0]), "p1": net.Params(-W, W[:, 0], W[:, 0])}
        for i, method in enumerate(kw.get("methods", experiments.METHODS)):
            out[method] = {"train": 0.5 + 0.01 * i, "test": 0.25 + 0.01 * n, "cos": 0.1 * i}
            out[method].update(raw_train=0.7, raw_test=0.6)
            out[method].update({name: 0.3 for name in evals if name != "test"})
        return out


def _same(a, b):
    return a.shape == b.shape and torch.equal(a, b)


def test_table_run_calls(monkeypatch):
    rec = Recorder()
    monkeypatch.setattr(experiments, "run_methods", rec)
    dist = _dist()
    free = data.without_structure(dist)
    out = experiments.table_run(
        dist,
        free,
        n=40,
        n_test=20,
        m=3,
        steps=45,
        batch=10,
        seed=2,
        negative_fraction=0.75,
        probe_steps=3,
        class_weighted=True,
        train_dtype=torch.float32,
    )
    g = _gen(2)
    x, y = experiments.sample_with_ratio(dist, 40, 0.75, g)
    xt, yt = experiments.sample_with_ratio(dist, 20, 0.75, g)
    xf, yf = experiments.sample_with_ratio(free, 40, 0.75, g)
    xft, yft = experiments.sample_with_ratio(free, 20, 0.75, g)
    a, b = rec.calls
    assert a["dist"] is dist and _same(a["x"], x) and _same(a["y"], y)
    assert _same(a["evals"]["test"][0], xt) and _same(a["evals"]["test"][1], yt)
    assert (a["m"], a["steps"], a["batch"], a["seed"]) == (3, 45, 10, 9)
    assert a["methods"] == ("network", "rf", "ntk", "one-step", "two-step")
    assert a["eval_every"] == 2 and a["progress"] is False and a["probe_steps"] == 3
    assert a["class_weighted"] is True and a["train_dtype"] == torch.float32
    assert b["dist"] is free and _same(b["x"], xf) and _same(b["y"], yf)
    assert _same(b["evals"]["test"][0], xft) and _same(b["evals"]["test"][1], yft)
    assert (b["m"], b["steps"], b["batch"], b["seed"]) == (3, 45, 10, 9)
    assert b["methods"] == ("network",) and b["gamma"] == float(dist.gamma)
    assert b["eval_every"] == 2 and b["class_weighted"] is True
    assert b["train_dtype"] == torch.float32 and b["progress"] is False
    for i, key in enumerate(("network", "rf", "ntk", "one-step", "two-step")):
        assert out[key] == (0.5 + 0.01 * i, 0.26, 0.1 * i)
    assert out["no-structure"] == (0.5, 0.27, 0.0)
    assert out["one-step-raw"] == (0.7, 0.6, 0.1 * 3) and out["two-step-raw"] == (0.7, 0.6, 0.4)
    assert out["majority"] == pytest.approx(0.75)  # the test set has 15 of 20 in class -1
    # without probes: no raw entries; eval_every = max(steps // 20, 1)
    out = experiments.table_run(dist, free, n=40, n_test=20, m=3, steps=5, batch=10, seed=2)
    assert "one-step-raw" not in out and rec.calls[-1]["eval_every"] == 1
    assert rec.calls[-2]["probe_steps"] is None and rec.calls[-1]["class_weighted"] is False
    assert rec.calls[-1]["train_dtype"] is None and rec.calls[-2]["train_dtype"] is None
    assert out["majority"] >= 0.5


def test_fixed_feature_comparison_calls(monkeypatch):
    rec = Recorder()
    monkeypatch.setattr(experiments, "run_methods", rec)
    out = experiments.fixed_feature_comparison(
        10,
        6,
        k=3,
        m=2,
        n=30,
        n_test=20,
        steps=7,
        batch=5,
        kernel_n=12,
        seed=1,
        eval_every=3,
        train_dtype=torch.float32,
    )
    g = _gen(1010)
    dist = data.parity_mixture(10, 6, k=3, p_o=Fraction(1, 2), generator=g)
    x, y, _ = dist.sample(30, g)
    xt, yt, _ = dist.sample(20, g)
    xu, yu, _ = data.without_structure(dist).sample(20, g)
    (c,) = rec.calls
    assert out["dist"].A == dist.A and torch.equal(out["dist"].M, dist.M)
    assert _same(c["x"], x) and _same(c["y"], y) and list(c["evals"]) == ["test", "uniform part"]
    assert _same(c["evals"]["test"][0], xt) and _same(c["evals"]["uniform part"][1], yu)
    assert (c["m"], c["steps"], c["batch"], c["seed"]) == (2, 7, 5, 1050)
    assert c["methods"] == ("network", "network-theory", "rf", "ntk")
    assert c["eval_every"] == 3 and c["progress"] is False and c["train_dtype"] == torch.float32
    for name, kernel in (("kernel", "rbf"), ("laplace", "laplace")):
        kr = baselines.kernel_ridge(
            x[:12], y[:12], {"test": (xt, yt), "uniform part": (xu, yu)}, kernel
        )
        got = out[name]
        assert (got["train"], got["test"], got["uniform part"]) == (
            kr["train"],
            kr["test"],
            kr["uniform part"],
        )
        # Corollary 2.3's explicit form: eps = ||f||_H sqrt(c_k), the bounds, the hinge per point
        c_k = theory.radial_walsh_coefficient(kernel, 6, 3, 1 / float(dist.sigma2), kr["bandwidth"])
        assert got["c_k"] == pytest.approx(c_k) and got["rkhs_norm"] == pytest.approx(
            kr["rkhs_norm"]
        )
        assert got["eps"] == pytest.approx(kr["rkhs_norm"] * c_k**0.5)
        assert got["bound_mixture"] == pytest.approx(0.5 * (1 - got["eps"]))
        hinge = (1 - yt * kr["test outputs"]).clamp(min=0)
        assert torch.allclose(got["hinge"], hinge) and got["hinge"].shape == (20,)
    experiments.fixed_feature_comparison(
        10, 6, k=3, m=2, n=30, n_test=20, steps=7, batch=5, kernel_n=12, seed=1
    )
    assert rec.calls[-1]["eval_every"] == 10 and rec.calls[-1]["train_dtype"] is None


def test_structure_pair_calls(monkeypatch):
    rec = Recorder()
    monkeypatch.setattr(experiments, "run_methods", rec)
    out = experiments.structure_pair(
        10,
        6,
        k=3,
        m=2,
        n=30,
        n_test=20,
        steps=7,
        batch=5,
        seed=2,
        eval_every=3,
        train_dtype=torch.float32,
    )
    g = _gen(2010)
    dist = data.parity_mixture(10, 6, k=3, p_o=Fraction(1, 2), generator=g)
    free = data.without_structure(dist)
    x, y, _ = free.sample(30, g)
    xt, yt, _ = free.sample(20, g)
    xs, ys, _ = dist.sample(30, g)
    xst, yst, _ = dist.sample(20, g)
    a, b = rec.calls
    assert a["dist"].kind == "uniform" and a["dist"].A == dist.A
    assert _same(a["x"], x) and _same(a["evals"]["test"][1], yt)
    assert (a["m"], a["steps"], a["batch"], a["seed"]) == (2, 7, 5, 2050)
    assert a["methods"] == ("network", "rf", "ntk") and a["gamma"] == float(dist.gamma)
    assert a["eval_every"] == 3 and a["progress"] is False and a["train_dtype"] == torch.float32
    assert b["dist"].kind == "parity-mixture" and _same(b["x"], xs) and _same(b["y"], ys)
    assert _same(b["evals"]["test"][0], xst) and _same(b["evals"]["test"][1], yst)
    assert (b["m"], b["steps"], b["batch"], b["seed"]) == (2, 7, 5, 2050)
    assert b["methods"] == ("network",) and "gamma" not in b
    assert b["eval_every"] == 3 and b["progress"] is False and b["train_dtype"] == torch.float32
    v = dist.signal_direction
    W = torch.eye(6, dtype=F64) @ dist.M.T  # the stand-in's weights: rows M_j
    assert out["cos1_free"] == float(net.cosines(-W, v).abs().median())
    assert out["cos1_ref"] == out["cos1_free"]
    assert out["cos_init"] == float(net.cosines(W, v).max())
    assert out["free"]["rf"]["test"] == 0.26 and out["ref"]["network"]["test"] == 0.27
    experiments.structure_pair(10, 6, k=3, m=2, n=30, n_test=20, steps=7, batch=5, seed=2)
    assert rec.calls[-1]["eval_every"] == 10 and rec.calls[-2]["train_dtype"] is None


@pytest.mark.parametrize("stack_bytes", [2**30, 1])
def test_repeated_table_runs_stacks_the_seeds_and_gets_what_they_get_one_by_one(
    monkeypatch, stack_bytes
):
    """The seeds' trainings run stacked (vectorised), each with its own distribution, data,
    initialisation and minibatches: the same numbers as table_run seed by seed, in float64, all
    three stacked or (a budget of one byte) one at a time."""
    monkeypatch.setattr(experiments, "STACK_BYTES", stack_bytes)

    def make(g):
        return data.parity_mixture(8, 6, k=3, p_o=Fraction(1, 2), generator=g)

    kw = dict(negative_fraction=0.6, probe_steps=3, class_weighted=True, train_dtype=F64)
    out = experiments.repeated_table_runs(
        make, 30, n_test=20, m=2, steps=7, batch=5, seeds=3, seed=4, **kw
    )
    assert len(out) == 3
    for s, got in enumerate(out):
        dist = make(_gen(4 + 1000 * s + 17))
        free = data.without_structure(dist)
        want = experiments.table_run(
            dist, free, n=30, n_test=20, m=2, steps=7, batch=5, seed=4 + 100 * s, **kw
        )
        assert set(got) == set(want)
        for key, value in want.items():
            assert got[key] == pytest.approx(value, rel=1e-9, abs=1e-12, nan_ok=True), key
    # the seeds differ: their own distributions and data
    assert out[0]["majority"] != out[1]["majority"] or out[0]["rf"] != out[1]["rf"]


def test_a_dry_run_of_repeated_table_runs_trains_the_first_stack_only(monkeypatch):
    """One seed per stack (a budget of one byte): a dry run stops the stacks' loop after its first,
    so one seed's result comes back, that of seed 0."""

    def make(g):
        return data.parity_mixture(8, 6, k=3, p_o=Fraction(1, 2), generator=g)

    monkeypatch.setattr(experiments, "STACK_BYTES", 1)
    monkeypatch.setenv(train.DRY_RUN_ENV, "1")
    kw = dict(probe_steps=3, train_dtype=F64)
    (got,) = experiments.repeated_table_runs(
        make, 30, n_test=20, m=2, steps=7, batch=5, seeds=3, seed=4, **kw
    )
    dist = make(_gen(4 + 17))
    want = experiments.table_run(
        dist, data.without_structure(dist), n=30, n_test=20, m=2, steps=7, batch=5, seed=4, **kw
    )
    for key, value in want.items():
        assert got[key] == pytest.approx(value, rel=1e-9, abs=1e-12, nan_ok=True), key


def test_mean_over_seeds_averages_every_entry():
    runs = [
        {"x": (4.0, 2.0), "m": 1.0},
        {"x": (104.0, 2.0), "m": 2.0},
        {"x": (204.0, 2.0), "m": 3.0},
    ]
    assert experiments.mean_over_seeds(runs) == {"x": ((4.0 + 104 + 204) / 3, 2.0), "m": 2.0}
    assert experiments.mean_over_seeds([{"a": (1.0,), "b": 3.0}]) == {"a": (1.0,), "b": 3.0}


def test_run_methods_stacked_equals_one_by_one():
    """Two runs stacked along a leading axis: every method's accuracies, cosines, curves and
    trained parameters are those of the two runs made one by one (float64)."""
    dists = [data.parity_mixture(10, 6, k=3, p_o=Fraction(1, 2), generator=_gen(s)) for s in (1, 2)]
    samples = [[t for t in d.sample(40, _gen(10 + i))[:2]] for i, d in enumerate(dists)]
    tests = [[t for t in d.sample(20, _gen(20 + i))[:2]] for i, d in enumerate(dists)]
    x, y = (torch.stack(t) for t in zip(*samples))
    xt, yt = (torch.stack(t) for t in zip(*tests))
    methods = ("network", "network-theory", "rf", "ntk", "one-step", "two-step")
    kw = dict(methods=methods, eval_every=3, progress=False, probe_steps=4)
    stacked = experiments.run_methods(
        dists, x, y=y, evals={"test": (xt, yt)}, m=3, steps=9, batch=7, generator_seed=[5, 6], **kw
    )
    for s in range(2):
        one = experiments.run_methods(
            dists[s],
            x[s],
            y=y[s],
            evals={"test": (xt[s], yt[s])},
            m=3,
            steps=9,
            batch=7,
            generator_seed=5 + s,
            **kw,
        )
        for method in methods:
            for key in ("train", "test", "cos"):
                assert stacked[s][method][key] == pytest.approx(
                    one[method][key], rel=1e-9, nan_ok=True
                ), (method, key)
        for method in ("network", "rf", "ntk"):
            assert stacked[s][method]["curve"] == one[method]["curve"]
        assert torch.allclose(stacked[s]["network"]["params"].W, one["network"]["params"].W)
        assert torch.allclose(stacked[s]["p2"].a, one["p2"].a, rtol=1e-9, atol=0)
        assert stacked[s]["one-step"]["raw_test"] == one["one-step"]["raw_test"]
    with pytest.raises(ValueError, match="one distribution and one generator_seed per run"):
        experiments.run_methods(
            dists, x, y=y, evals={"test": (xt, yt)}, m=3, steps=9, batch=7, generator_seed=[5], **kw
        )


def test_weighting_pair_calls(monkeypatch):
    rec = Recorder()
    monkeypatch.setattr(experiments, "run_methods", rec)

    def make(g):
        return data.interval(
            8, 6, k=3, generator=g, p_A=Fraction(1, 2), p_o=Fraction(1, 2), lo=2, hi=3
        )

    out = experiments.weighting_pair(
        make, 30, n_test=20, m=2, steps=25, batch=5, seed=3, train_dtype=torch.float32
    )
    g = _gen(3)
    dist = make(g)
    x, y = experiments.sample_with_ratio(dist, 30, None, g)
    xt, yt = experiments.sample_with_ratio(dist, 20, None, g)
    for call, weighted in zip(rec.calls, (False, True)):
        assert _same(call["x"], x) and _same(call["evals"]["test"][1], yt)
        assert (call["m"], call["steps"], call["batch"], call["seed"]) == (2, 25, 5, 3)
        assert call["methods"] == ("network",) and call["eval_every"] == 2
        assert call["class_weighted"] is weighted and call["progress"] is False
        assert call["train_dtype"] == torch.float32
    assert out["plain"] == 0.26 and out["weighted"] == 0.27
    assert out["positive_rate"] == float(dist.positive_rate) == 0.5
    n_pos = int((yt == 1).sum())
    assert n_pos != 10 and out["majority"] == pytest.approx(max(n_pos, 20 - n_pos) / 20)
    experiments.weighting_pair(make, 30, n_test=20, m=2, steps=5, batch=5, seed=3)
    assert rec.calls[-1]["eval_every"] == 1 and rec.calls[-1]["train_dtype"] is None
