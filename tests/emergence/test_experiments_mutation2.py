"""companions.emergence.experiments, second round of issue 23: run_methods on float32 data and
with ``train_dtype`` called inside each test (mutmut does not count the calls of a fixture, so
test_train_dtype.py's module fixture reaches no mutant), its defaults (``eval_every = 10``, the
progress bar named after the method), and the drivers' arguments that the first round left
unchecked (the labels handed on, ``eval_every`` where ``steps // 20`` and ``steps // 21`` differ,
a test set whose majority class is +1, a seed other than 1)."""

from __future__ import annotations

import re
from fractions import Fraction

import pytest
import torch

from companions.emergence import analysis, baselines, data, experiments
from companions.emergence import network as net

from .test_experiments_mutation import Recorder, _same

F32, F64 = torch.float32, torch.float64
M_, BATCH, SEED = 3, 40, 5


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def _setup(dtype=F64, n=80):
    dist = data.parity_mixture(12, 8, k=3, p_o=Fraction(1, 2), generator=_gen())
    x, y, _ = dist.sample(n, _gen(1), dtype=dtype)
    xt, yt, _ = dist.sample(40, _gen(2), dtype=dtype)
    return dist, x, y, {"test": (xt, yt)}


def _p0(dist, dtype):
    return net.symmetric_init(
        M_,
        dist.d,
        k=dist.k,
        sigma_tilde=dist.sigma,
        gamma=float(dist.gamma),
        generator=_gen(SEED),
        dtype=dtype,
    )


def test_run_methods_on_float32_data_keeps_float32():
    dist, x, y, evals = _setup(F32)
    out = experiments.run_methods(
        dist,
        x,
        y=y,
        evals=evals,
        m=M_,
        steps=1,
        batch=BATCH,
        generator_seed=SEED,
        methods=("network",),
        progress=False,
    )
    # the init in the data's dtype: the float64 draw of symmetric_init rounded to float32
    p0 = _p0(dist, F32)
    assert out["p0"].W.dtype == F32 and torch.equal(out["p0"].W, p0.W)
    assert torch.equal(out["p0"].a, p0.a) and out["p1"].W.dtype == F32
    # the cosine with v = sum_A M_j in float32 too (a float64 v cannot multiply float32 W)
    v = dist.signal_direction.to(F32)
    W = out["network"]["params"].W
    assert W.dtype == F32 and out["network"]["cos"] == float(net.cosines(W, v).max())


def test_run_methods_train_dtype_float32_after_float64_first_steps():
    dist, x, y, evals = _setup(F64)
    out = experiments.run_methods(
        dist,
        x,
        y=y,
        evals=evals,
        m=M_,
        steps=2,
        batch=BATCH,
        generator_seed=SEED,
        methods=("network",),
        progress=False,
        eval_every=1,
        train_dtype=F32,
    )
    p0 = _p0(dist, F64)
    sched = net.schedule("A.214", dist.k, M_, dist.sigma, float(dist.gamma), 2)
    _, p2 = net.first_two_steps(p0, x, y, sched)
    assert out["p2"].W.dtype == F64 and torch.equal(out["p2"].W, p2.W)
    # steps t > 2 by hand, everything cast to float32 as the docstring says
    xt, yt = evals["test"]
    xt32, yt32 = xt.to(F32), yt.to(F32)
    p, hist = net.train_late(
        p2.to(F32),
        x.to(F32),
        y=y.to(F32),
        steps=2,
        batch=BATCH,
        generator=_gen(SEED + 1),
        lr=1e-2,
        eval_every=1,
        evaluate=lambda q: {"test": net.accuracy(q, xt32, yt32)},
        progress=False,
    )
    res = out["network"]
    assert res["params"].W.dtype == F32 and torch.equal(res["params"].W, p.W)
    assert torch.equal(res["params"].a, p.a) and res["curve"] == hist
    assert res["train"] == net.accuracy(p, x.to(F32), y.to(F32))
    # without train_dtype the later steps stay in the data's dtype
    out = experiments.run_methods(
        dist,
        x,
        y=y,
        evals=evals,
        m=M_,
        steps=1,
        batch=BATCH,
        generator_seed=SEED,
        methods=("network",),
        progress=False,
    )
    assert out["network"]["params"].W.dtype == F64


def test_run_methods_eval_every_defaults_to_10():
    dist, x, y, evals = _setup()
    out = experiments.run_methods(
        dist,
        x,
        y=y,
        evals=evals,
        m=M_,
        steps=20,
        batch=BATCH,
        generator_seed=SEED,
        methods=("rf",),
        progress=False,
    )
    # evaluated at step 0, every 10 steps and at the end (the signature's default 10)
    assert out["rf"]["curve"]["step"] == [0, 10, 20]
    F = net.features(_p0(dist, F64), x)
    a, _ = baselines.train_linear_head(
        F, y, steps=20, batch=BATCH, generator=_gen(SEED + 3), progress=False
    )
    assert out["rf"]["head_norm"] == float(a.norm())


def test_run_methods_names_the_theory_bar(capsys):
    dist, x, y, evals = _setup()
    experiments.run_methods(
        dist,
        x,
        y=y,
        evals=evals,
        m=M_,
        steps=1,
        batch=BATCH,
        generator_seed=SEED,
        methods=("network-theory",),
    )
    err = capsys.readouterr().err
    assert re.search(r"(^|\r)network-theory: ", err), err


# -- the drivers, with run_methods recorded -------------------------------------------------------


def test_table_run_eval_every_and_a_positive_majority(monkeypatch):
    rec = Recorder()
    monkeypatch.setattr(experiments, "run_methods", rec)
    dist = data.parity_mixture(10, 6, k=3, p_o=Fraction(1, 3), generator=_gen())
    free = data.without_structure(dist)
    # a quarter of class -1: 15 of the 20 test labels are +1, the majority rate is 15/20
    out = experiments.table_run(
        dist, free, n=40, n_test=20, m=3, steps=60, batch=10, seed=2, negative_fraction=0.25
    )
    assert out["majority"] == pytest.approx(0.75)
    assert [c["eval_every"] for c in rec.calls] == [3, 3]  # max(60 // 20, 1)
    experiments.table_run(dist, free, n=40, n_test=20, m=3, steps=5, batch=10, seed=2)
    assert [c["eval_every"] for c in rec.calls[2:]] == [1, 1]  # max(5 // 20, 1)


def test_structure_pair_hands_on_the_labels(monkeypatch):
    rec = Recorder()
    monkeypatch.setattr(experiments, "run_methods", rec)
    experiments.structure_pair(10, 6, k=3, m=2, n=30, n_test=20, steps=7, batch=5, seed=2)
    g = _gen(2010)
    dist = data.parity_mixture(10, 6, k=3, p_o=Fraction(1, 2), generator=g)
    _, y, _ = data.without_structure(dist).sample(30, g)
    a, b = rec.calls
    assert _same(a["y"], y) and _same(b["y"].abs(), torch.ones(30, dtype=F64))


def test_fixed_feature_comparison_seed_two(monkeypatch):
    rec = Recorder()
    monkeypatch.setattr(experiments, "run_methods", rec)
    out = experiments.fixed_feature_comparison(
        10, 6, k=3, m=2, n=30, n_test=20, steps=7, batch=5, kernel_n=12, seed=2
    )
    # the source's seeds: data 10 + 1000 seed, the methods 50 + 1000 seed
    dist = data.parity_mixture(10, 6, k=3, p_o=Fraction(1, 2), generator=_gen(2010))
    assert torch.equal(out["dist"].M, dist.M) and rec.calls[0]["seed"] == 2050


def test_weighting_pair_labels_eval_every_and_a_positive_majority(monkeypatch):
    rec = Recorder()
    monkeypatch.setattr(experiments, "run_methods", rec)

    def make(g):
        return data.interval(
            8, 6, k=3, generator=g, p_A=Fraction(1, 2), p_o=Fraction(1, 2), lo=2, hi=3
        )

    out = experiments.weighting_pair(make, 30, n_test=20, m=2, steps=30, batch=5, seed=6)
    g = _gen(6)
    dist = make(g)
    _, y = experiments.sample_with_ratio(dist, 30, None, g)
    _, yt = experiments.sample_with_ratio(dist, 20, None, g)
    n_pos = int((yt == 1).sum())
    assert n_pos == 11  # this seed's test set has more +1 than -1
    assert out["majority"] == pytest.approx(n_pos / 20)
    for call in rec.calls:
        assert _same(call["y"], y) and call["eval_every"] == 3  # max(30 // 10, 1)


# -- after the full run: the NTK's lr, the probes' generators, constant features in float32 ------


def test_run_methods_hands_lr_to_the_ntk_and_seeded_generators_to_the_probes(monkeypatch):
    ntk_lr, probe_calls = [], []
    real_ntk, real_probes = baselines.train_ntk, analysis.probes

    def train_ntk(*args, **kw):
        ntk_lr.append(kw["lr"])
        return real_ntk(*args, **kw)

    def probes(p, x, *, steps, batch, generator, **kw):
        probe_calls.append((steps, batch, generator.initial_seed()))
        return real_probes(p, x, steps=steps, batch=batch, generator=generator, **kw)

    monkeypatch.setattr(baselines, "train_ntk", train_ntk)
    monkeypatch.setattr(analysis, "probes", probes)
    dist, x, y, evals = _setup()
    methods = ("ntk", "one-step", "two-step")
    experiments.run_methods(
        dist,
        x,
        y=y,
        evals=evals,
        m=M_,
        steps=1,
        batch=BATCH,
        generator_seed=SEED,
        methods=methods,
        lr=0.3,
        probe_steps=2,
        progress=False,
    )
    assert ntk_lr == [0.3]
    # each method's generator is seeded generator_seed + 1 + METHODS.index(method)
    assert probe_calls == [(2, BATCH, SEED + 1 + 4), (2, BATCH, SEED + 1 + 5)]


def test_run_methods_counts_constant_features_in_float32():
    dist, x, y, evals = _setup(F32)
    out = experiments.run_methods(
        dist,
        x,
        y=y,
        evals=evals,
        m=M_,
        steps=1,
        batch=BATCH,
        generator_seed=SEED,
        methods=("one-step",),
        progress=False,
    )
    F = net.features(out["p1"], x)
    spread = F.std(0)
    # after step 1 every neuron of this draw is constant on the sample (zero spread): none kept
    assert spread.dtype == F32 and int((spread == 0).sum()) == 2 * M_
    assert out["one-step"]["kept"] == 0
