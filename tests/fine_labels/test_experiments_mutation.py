"""companions.fine_labels.experiments against cases worked out by hand (issue 23, mutation testing).

- ``data_config`` / ``slack`` / ``log_times``: every field from the chapter's parameters by hand.
- ``test_sets`` / ``labeller`` / ``phase_grid``: the same draws from the generators, in order.
- ``run`` / ``finetune``: the arguments they hand to ``init`` and ``train`` (recorded), the number
  of outputs per kind, the seeds.
- ``decide_above`` / ``decide_within``: the boundaries with a fixed critical value.
- ``common_fine_ratio`` / ``active_counts``: loops over seeds, outputs and neurons.
"""

from __future__ import annotations

import inspect
import math
from types import SimpleNamespace

import pytest
import torch

import companions
from companions import stats
from companions.fine_labels import data as fdata
from companions.fine_labels import experiments as fx
from companions.fine_labels import model as fmodel
from companions.fine_labels import training as ftrain


@pytest.fixture
def cfg():
    return companions.preset("fine-labels-fine", "smoke", device="cpu", seeds=2, n_test=8)


class _Runtime:
    """``generator(s)`` returns ``s`` itself, so that the seeds can be read off the calls."""

    device = "meta"

    def generator(self, s):
        return s


def test_data_config_field_by_field(cfg):
    d = fx.data_config(cfg)
    assert (d.d, d.k, d.P, d.s_star) == (32, 4, 12, 2)
    assert d.sigma_zeta == pytest.approx(0.03 / math.sqrt(32), rel=1e-15)
    assert d.sigma_star == pytest.approx(1.5 / math.sqrt(32), rel=1e-15)
    assert (d.iota, d.s_dagger, d.alpha_dagger, d.patch_counts) == (0.0, 2, (0.4, 0.6), "exact")
    assert isinstance(d.alpha_dagger, tuple)
    # a changed d rescales both noise levels; other changes override the chapter's values
    d = fx.data_config(cfg, d=64, s_dagger=1, alpha_dagger=(0.1, 0.2))
    assert d.d == 64 and d.sigma_zeta == pytest.approx(0.03 / 8) and d.sigma_star == 1.5 / 8
    assert d.s_dagger == 1 and d.alpha_dagger == (0.1, 0.2) and d.k == 4


def test_slack_and_log_times_by_hand(cfg):
    assert fx.slack(cfg) == pytest.approx(6.0 * 0.001 * 0.03, rel=1e-15)
    assert fx.log_times(10, 3) == [0, 1, 2, 5, 10]
    assert fx.log_times(7, 4) == [0, 1, 2, 5, 7]  # 7/3 -> 2, 14/3 -> 5
    assert fx.log_times(3, 2) == [0, 1, 2, 3]


def test_test_sets_draw_easy_then_hard(cfg):
    dcfg = fx.data_config(cfg)
    tests = fx.test_sets(dcfg, 2, 8, torch.Generator().manual_seed(3), "cpu")
    assert list(tests) == ["easy", "hard"]
    g = torch.Generator().manual_seed(3)
    for name, hard in (("easy", False), ("hard", True)):
        X, y, _ = fdata.sample(dcfg, 2, 8, hard, g)
        assert torch.equal(tests[name][0], X) and torch.equal(tests[name][1], y)


def test_labeller_kinds():
    y = torch.tensor([[0, 1, 1, 0]])
    c = torch.tensor([[1, 0, 2, 2]])
    k = 3
    assert torch.equal(fx.labeller("coarse", k)(y, c, None), fdata.coarse_labels(y, c, k))
    assert torch.equal(fx.labeller("fine", k)(y, c, None), fdata.fine_labels(y, c, k))
    assert torch.equal(fx.labeller("grouped", k, 3)(y, c, None), fdata.grouped_labels(y, c, k, 3))
    got = fx.labeller("random", k, 2)(y, c, torch.Generator().manual_seed(1))
    assert torch.equal(got, fdata.random_labels(y, 2, torch.Generator().manual_seed(1)))
    with pytest.raises(ValueError, match="parameter 'kind' = 'finer' is not allowed"):
        fx.labeller("finer", k)


def _record(monkeypatch):
    """Replace init and train by fakes that record their arguments by name."""
    calls = {"init": [], "train": []}
    real_init, real_train = fmodel.init, ftrain.train

    def init(*args, **kw):
        calls["init"].append(inspect.signature(real_init).bind(*args, **kw).arguments)
        return SimpleNamespace(C=calls["init"][-1]["C"])

    def train(*args, **kw):
        calls["train"].append(inspect.signature(real_train).bind(*args, **kw).arguments)
        return {"t": "history"}

    monkeypatch.setattr(fmodel, "init", init)
    monkeypatch.setattr(ftrain, "train", train)
    return calls


@pytest.mark.parametrize(
    "kind, groups, C",
    [
        ("coarse", None, 2),
        ("fine", None, 8),
        ("grouped", 2, 4),
        ("random", 4, 8),
        ("random", None, 2),
    ],
)
def test_run_hands_init_and_train_their_arguments(cfg, monkeypatch, kind, groups, C):
    calls = _record(monkeypatch)
    net, hist = fx.run(
        cfg,
        _Runtime(),
        kind=kind,
        steps=17,
        tests="tests",
        groups=groups,
        B=0.3,
        offset=5,
        progress=False,
    )
    (got,) = calls["init"]
    assert got == dict(S=2, C=C, m=128, d=32, sigma0=0.001, tau=1.75, g=105, device="meta")
    (got,) = calls["train"]
    assert got["net"] is net and hist == {"t": "history"}
    assert got["dcfg"] == fx.data_config(cfg)
    assert (got["steps"], got["N"], got["eta"], got["lam_b"]) == (17, 64, 0.1, 30.0)
    assert got["g"] == 205 and got["log_times"] == fx.log_times(17, 8)
    assert got["tests"] == "tests"
    assert got["tau_sigma0"] == pytest.approx(1.75 * 0.001)
    assert got["delta"] == pytest.approx(fx.slack(cfg))
    assert got["B"] == 0.3 and got["progress"] is False
    if kind == "random" and groups is None:
        return  # no labels to draw: the output count is all that differs
    y = torch.tensor([[0, 1]])
    c = torch.tensor([[1, 3]])
    want = fx.labeller(kind, 4, groups)(y, c, torch.Generator().manual_seed(0))
    assert torch.equal(got["labels_of"](y, c, torch.Generator().manual_seed(0)), want)


def test_run_with_a_net_and_the_defaults(cfg, monkeypatch):
    calls = _record(monkeypatch)
    given = SimpleNamespace(C=8)
    net, _ = fx.run(cfg, _Runtime(), kind="fine", steps=9, tests="tests", net=given, n_logs=3)
    assert net is given and calls["init"] == []
    (got,) = calls["train"]
    assert got["g"] == 200 and got["log_times"] == fx.log_times(9, 3)
    assert got["B"] is None and got["progress"] is True


def test_finetune_trains_on_coarse_labels_through_the_max(cfg, monkeypatch):
    calls = _record(monkeypatch)
    net = SimpleNamespace(C=6)
    hist = fx.finetune(cfg, _Runtime(), net=net, steps=11, tests="tests", offset=2, progress=False)
    assert hist == {"t": "history"}
    (got,) = calls["train"]
    assert got["net"] is net and got["dcfg"] == fx.data_config(cfg)
    assert (got["steps"], got["N"], got["eta"], got["lam_b"]) == (11, 64, 0.1, 30.0)
    assert got["g"] == 302 and got["log_times"] == fx.log_times(11, 8)
    assert got["tests"] == "tests"
    assert got["tau_sigma0"] == pytest.approx(1.75 * 0.001)
    assert got["delta"] == pytest.approx(fx.slack(cfg))
    y, c = torch.tensor([[0, 1]]), torch.tensor([[2, 3]])
    assert torch.equal(got["labels_of"](y, c, None), fdata.coarse_labels(y, c, 4))
    F = torch.arange(12.0).reshape(1, 2, 6) % 5
    assert torch.equal(got["scores_fn"](F), fmodel.aggregate(F, 3, "max"))
    assert got["progress"] is False
    fx.finetune(cfg, _Runtime(), net=net, steps=11, tests="tests")
    assert calls["train"][-1]["g"] == 300 and calls["train"][-1]["progress"] is True


def test_decide_above_and_within_boundaries(monkeypatch):
    assert fx._finite(torch.tensor([1.0, math.nan, 2.0])) == [1.0, 2.0]
    ok, (m, se, n) = fx.decide_above([math.nan, 1.0, math.nan], 0.5)
    assert ok is None and math.isnan(m) and math.isnan(se) and n == 1
    values = [0.9, 0.95, 0.92, math.nan]
    m0, se0, n0 = stats.mean_and_se([0.9, 0.95, 0.92])  # every digit kept (no float32 rounding)
    assert fx.decide_above(values, 0.5) == (stats.decide(m0, se0, n0, 0.5), (m0, se0, n0))
    assert fx.decide_above([0.1, 0.2, 0.15], 0.5)[0] is stats.decide(0.15, 0.03, 3, 0.5)
    ok, (m, se, n) = fx.decide_within([4.0], 4.0, 0.1)
    assert ok is None and math.isnan(m) and n == 1
    # a critical value of 1: values (3, 5) have mean 4 and se 1, so the half-width is 1
    monkeypatch.setattr(stats, "t_critical", lambda df: 1.0)
    assert fx.decide_within([3.0, 5.0], 2.0, 1.5) == (True, (4.0, 1.0, 2))  # 2 + 1 <= 3
    assert fx.decide_within([3.0, 5.0], 2.0, 1.0)[0] is None
    assert fx.decide_within([3.0, 5.0], 2.0, 0.5)[0] is None  # 2 - 1 = 1, not beyond 1
    assert fx.decide_within([3.0, 5.0], 2.0, 0.25) == (False, (4.0, 1.0, 2))
    assert fx.decide_within([3.0, 5.0], -2.0, 3.5)[0] is True  # |target|: 6 + 1 <= 7
    assert fx.decide_within([3.0, 5.0, math.nan], 6.0, 0.5)[0] is True  # 2 + 1 <= 3


def test_common_fine_ratio_against_loops():
    k = 3
    A = torch.rand(2, 2, 2 + 2 * k, generator=torch.Generator().manual_seed(0)) + 0.5
    A[0, 1, 2 + k + 1] = math.nan  # nanmean skips it
    r = fx.common_fine_ratio(A, k, 2)
    assert r.shape == (2, 2)
    for s in range(2):
        for y in range(2):
            fine = [float(A[s, y, 2 + y * k + c]) for c in range(k)]
            fine = [x for x in fine if not math.isnan(x)]
            assert float(r[s, y]) == pytest.approx(float(A[s, y, y]) / (sum(fine) / len(fine)))
    C = 2 * k
    Af = torch.rand(2, C, 2 + 2 * k, generator=torch.Generator().manual_seed(1)) + 0.5
    r = fx.common_fine_ratio(Af, k, C)
    assert r.shape == (2, C)
    for s in range(2):
        for o in range(C):
            y, c = o // k, o % k
            assert float(r[s, o]) == pytest.approx(float(Af[s, o, y] / Af[s, o, 2 + y * k + c]))


def test_active_counts_against_loops():
    k, C, m, d = 2, 3, 4, 9
    g = torch.Generator().manual_seed(2)
    net = fmodel.Net(
        torch.randn(2, C * m, d, generator=g), torch.randn(2, C * m, generator=g), C, m
    )
    got = fx.active_counts(net, k)
    assert got.shape == (2, C, 2 + 2 * k)
    for s in range(2):
        for o in range(C):
            for f in range(2 + 2 * k):
                want = sum(
                    1 for j in range(m) if float(net.W[s, o * m + j, f] + net.b[s, o * m + j]) > 0
                )
                assert int(got[s, o, f]) == want
    zero = fmodel.Net(torch.zeros(1, 2, d), torch.zeros(1, 2), 2, 1)
    assert int(fx.active_counts(zero, k).sum()) == 0  # pre-activation 0 is not active


def test_phase_grid_cells_and_seeds(cfg):
    rt = SimpleNamespace(device="cpu", generator=lambda s: torch.Generator().manual_seed(s))
    net = fmodel.init(
        2,
        2 * cfg.k,
        m=8,
        d=cfg.d,
        sigma0=cfg.sigma0,
        tau=cfg.tau,
        g=torch.Generator().manual_seed(4),
    )
    net2 = fmodel.init(
        2, 2, m=8, d=cfg.d, sigma0=0.05, tau=cfg.tau, g=torch.Generator().manual_seed(5)
    )
    nets = {"fine": (net, "max"), "coarse": (net2, "max")}
    out = fx.phase_grid(cfg, rt, nets=nets, alphas=[0.2, 1.0], s_daggers=[1, 3], n=8, offset=7)
    assert set(out) == {"fine", "coarse"} and out["fine"].shape == (2, 2, 2)
    for i, sd in enumerate([1, 3]):
        for j, a in enumerate([0.2, 1.0]):
            dcfg = fx.data_config(cfg, s_dagger=sd, alpha_dagger=(0.8 * a, 1.2 * a))
            X, y, _ = fdata.sample(dcfg, 2, 8, True, rt.generator(400 + 7 + 97 * i + j))
            for name, (n_, how) in nets.items():
                acc = fmodel.accuracy(ftrain.coarse_scores(fmodel.forward(n_, X), how), y)
                assert out[name][i, j].tolist() == pytest.approx(acc.tolist())


def test_data_config_passes_iota_and_patch_counts(cfg):
    names = ("d", "k", "P", "s_star", "noise", "s_dagger", "alpha_dagger", "star")
    other = SimpleNamespace(
        **{n: getattr(cfg, n) for n in names}, iota=0.2, patch_counts="bernoulli"
    )
    d = fx.data_config(other)
    assert d.iota == 0.2 and d.patch_counts == "bernoulli"


def test_log_times_are_ints():
    assert all(type(t) is int for t in fx.log_times(10, 3))


def test_two_values_are_enough_to_decide(monkeypatch):
    m0, se0, n0 = stats.mean_and_se([0.9, 0.95])
    assert fx.decide_above([0.9, 0.95], 0.5) == (stats.decide(m0, se0, n0, 0.5), (m0, se0, n0))
    assert fx.decide_above([0.9, 0.95], 0.5)[0] is not None
    dfs = []

    def t_critical(df):
        dfs.append(df)
        return 1.0

    monkeypatch.setattr(stats, "t_critical", t_critical)
    assert fx.decide_within([3.0, 5.0], 2.0, 1.5)[0] is True
    assert fx.decide_within([3.0, 5.0, 4.0], 2.0, 1.5)[0] is not None
    assert dfs == [1, 2]  # n - 1 degrees of freedom


def test_run_coarse_has_two_outputs_whatever_the_groups(cfg, monkeypatch):
    calls = _record(monkeypatch)
    fx.run(cfg, _Runtime(), kind="coarse", steps=3, tests="tests", groups=3)
    assert calls["init"][0]["C"] == 2


def test_phase_grid_default_offset_and_other_aggregations(cfg):
    rt = SimpleNamespace(device="cpu", generator=lambda s: torch.Generator().manual_seed(s))
    net = fmodel.init(
        2, 2 * cfg.k, m=8, d=cfg.d, sigma0=0.05, tau=cfg.tau, g=torch.Generator().manual_seed(4)
    )
    nets = {"sum": (net, "sum")}
    out = fx.phase_grid(cfg, rt, nets=nets, alphas=[0.5], s_daggers=[2], n=8)
    dcfg = fx.data_config(cfg, s_dagger=2, alpha_dagger=(0.4, 0.6))
    X, y, _ = fdata.sample(dcfg, 2, 8, True, rt.generator(400))
    acc = fmodel.accuracy(ftrain.coarse_scores(fmodel.forward(net, X), "sum"), y)
    assert out["sum"][0, 0].tolist() == pytest.approx(acc.tolist())
