"""companions.contrastive.theory.predicted_t1_mc at its step cap (T1_MC_MAX_STEPS): a run that
reaches 1/2 at the last step evaluated counts; one that needs a step more makes it give up."""

from __future__ import annotations

import math
import warnings

import pytest
import torch

from companions.contrastive import theory as ct

ARGS = ((0.3, 0.05), 400)
KW = dict(m=4, eta=0.05, lam=0.0, n_neg=3, c_tau=1.0)


def _one_run(monkeypatch, cap):
    monkeypatch.setattr(ct, "T1_MC_MAX_STEPS", cap)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the standard deviation of one run: nan
        return ct.predicted_t1_mc(*ARGS, **KW, runs=1, generator=torch.Generator().manual_seed(5))


def test_the_cap_is_the_last_step_evaluated(monkeypatch):
    t1, _ = _one_run(monkeypatch, 10**7)
    assert t1 >= 2 and t1 == int(t1)  # a run that needs a few steps
    assert _one_run(monkeypatch, int(t1))[0] == t1  # it reaches 1/2 at the cap: counted
    assert _one_run(monkeypatch, int(t1) + 5)[0] == t1
    late = _one_run(monkeypatch, int(t1) - 1)  # a step short: gives up
    assert late[0] == math.inf and math.isnan(late[1])


def test_the_cap_is_ten_million_steps():
    # pinned here because mutmut does not mutate module-level constants
    assert ct.T1_MC_MAX_STEPS == 10**7


@pytest.mark.parametrize("runs", [2, 7])
def test_every_run_must_reach_one_half_within_the_cap(monkeypatch, runs):
    monkeypatch.setattr(ct, "T1_MC_MAX_STEPS", 10**7)
    g = torch.Generator().manual_seed(5)
    mean, sd = ct.predicted_t1_mc(*ARGS, **KW, runs=runs, generator=g)
    assert math.isfinite(mean)
    slowest = max(_one_run_seeded(runs, r) for r in range(runs))  # it decides
    monkeypatch.setattr(ct, "T1_MC_MAX_STEPS", int(slowest))
    g = torch.Generator().manual_seed(5)
    assert ct.predicted_t1_mc(*ARGS, **KW, runs=runs, generator=g) == (mean, sd)
    monkeypatch.setattr(ct, "T1_MC_MAX_STEPS", int(slowest) - 1)
    g = torch.Generator().manual_seed(5)
    assert ct.predicted_t1_mc(*ARGS, **KW, runs=runs, generator=g)[0] == math.inf


def _one_run_seeded(runs, r):
    """The T1 of run ``r`` of ``runs`` drawn from seed 5, by the closed-form loop of the
    definition (34): its own draws, in predicted_t1_mc's order."""
    g = torch.Generator().manual_seed(5)
    (kappas, d1), (m, eta, lam, n_neg, c_tau) = ARGS, KW.values()
    lg = torch.log(ct.growth_rate(kappas, eta, lam, n_neg, c_tau) / ct.noise_rate(eta, lam))
    d = len(lg)
    a2 = torch.randn(runs, m, d, generator=g, dtype=torch.float64) ** 2
    n2 = (torch.randn(runs, m, d1 - d, generator=g, dtype=torch.float64) ** 2).sum(-1)
    t = 0
    while True:
        fe = (a2[r] * torch.exp(2 * t * lg)).sum(-1)
        if float((fe / (fe + n2[r])).mean()) >= 0.5:
            return float(t)
        t += 1
