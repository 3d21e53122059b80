"""Tests of companions.universality.report: the measurements handed to the ledger, worked out by
hand on small inputs."""

import numpy as np
import pytest
import sympy as sp
import torch

import companions
from companions.universality import data as ud
from companions.universality import report as urep
from companions.universality import theory as uth


def test_tradeoff_measurements_are_last_minus_first_per_seed():
    pts = np.array([[[0.1, 0.5], [0.2, 0.6]], [[0.3, 0.55], [0.3, 0.7]]])  # (K, seeds, 2)
    got = urep.tradeoff_measurements(pts, 2 * pts)
    assert got["tradeoff-least-norm-target-error-grows"] == pytest.approx([0.2, 0.1])
    assert got["tradeoff-least-norm-average-accuracy-grows"] == pytest.approx([0.05, 0.1])
    assert got["tradeoff-target-error-grows"] == pytest.approx([0.4, 0.2])


def test_rademacher_measurement_in_standard_errors():
    got = urep.rademacher_measurement(1.0, 0.1, 0.8, 1.05)
    assert got["rademacher-two-sided"] == pytest.approx([2.0, 0.5])


def test_loading_measurements_on_the_closed_forms_are_one():
    lay = ud.Layout(2, 4, 3, 2)
    M = ud.dictionary(lay.d, torch.Generator().manual_seed(0))
    W = {K: uth.representation(uth.theory_loadings(lay, range(K)), M, k=lay.k) for K in (1, 3)}
    reps = {1: [W[1], W[1]], 3: [W[3], W[3]]}
    got = urep.loading_measurements(lay, M, reps, reps)
    ids = ["loadings-target-s", "loadings-target-p1", "loadings-mixture-s"]
    ids += ["loadings-mixture-p1", "loadings-mixture-p2"]
    for cid in ids:
        assert got[cid] == pytest.approx([1.0, 1.0]), cid
    assert got["spurious-removed-target"] == pytest.approx([0.0, 0.0])
    assert "loadings-target-p2" not in got and "loadings-target-u" not in got


def test_f8_measurements_are_estimates_of_the_gaps():
    got = urep.f8_measurements(np.array([2.0, 1.5, 1.0]), np.array([0.1, 0.2, 0.0]), [0, 0.5], 9)
    est = got["f8-logistic-alpha-one"]
    assert est["α = 0"] == companions.Estimate(1.0, 0.1, 9)
    assert est["α = 0.5"] == companions.Estimate(0.5, 0.2, 9)


def test_symbolic_measurements_decide_their_claims():
    from companions.universality import symbolic as usym

    f8 = usym.f8_exponential_stationary_point()
    lin = {"residual": sp.Integer(0), "without_resampling": sp.Symbol("x")}
    t72 = {1.0: {"free": 0.5, "invariant": 0.5 + 1e-9}, 3.0: {"free": 0.2, "invariant": 0.1}}
    got = urep.symbolic_measurements(lin, {"lhs": 1, "rhs": 1}, t72, torch.tensor([0.3]), 0.3, f8)
    led = companions.Ledger(companions.preset("universality-trade-off", "smoke"), device="cpu")
    status = {c["id"]: c["status"] for c in led.record(got)}
    assert status["theorem-7-1-linear-sympy"] == "holds"
    assert status["f8-exponential-alpha-one"] == "holds"
    assert got["theorem-7-2-1-no-spurious"]["B = 3"] == pytest.approx(0.1)
    bad = urep.symbolic_measurements(
        lin,
        {"lhs": 1, "rhs": 1},
        {1.0: {"free": 0.4, "invariant": 0.5}},
        torch.tensor([0.3]),
        0.3,
        f8,
    )
    led2 = companions.Ledger(companions.preset("universality-trade-off", "smoke"), device="cpu")
    status2 = {c["id"]: c["status"] for c in led2.record(bad)}
    assert status2["theorem-7-2-1-no-spurious"] == "differs"  # a free optimum below the invariant
    assert status["theorem-7-2-1-no-spurious"] == "inconclusive"  # a search cannot confirm it
