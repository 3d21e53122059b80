"""companions.looped.experiments.convergence_run: every curve it returns against its definition
(not only the transformer's, and with alpha != 1, where dividing and multiplying by alpha differ),
and the edges of gap_per_trial and depth_log_ratios."""

from __future__ import annotations

import math

import pytest
import torch

from companions.incontext import sample_prompts
from companions.looped import experiments as lx
from companions.looped.construction import gradient_descent
from companions.looped.theory import condition_number, smoothness


def test_every_curve_is_its_definition():
    n, d, loops, trials, alpha = 12, 3, 6, 4, 2.5
    run = lx.convergence_run(
        n, d, loops=loops, trials=trials, alpha=alpha, generator=torch.Generator().manual_seed(4)
    )
    X, theta, y = sample_prompts(trials, n, d, torch.Generator().manual_seed(4))
    etas = (1 / smoothness(X)).expand(loops, trials)
    gd = gradient_descent(X, y, etas)
    norm0 = (theta**2).sum(-1)
    assert run.n == n
    assert torch.equal(run.kappa, condition_number(X))
    expected = ((gd - theta) ** 2).sum(-1) / norm0
    assert run.gd_sq.shape == (loops + 1, trials)
    assert torch.allclose(run.gd_sq, expected, rtol=1e-12, atol=0)
    assert torch.allclose(run.tf_sq, expected, rtol=1e-9, atol=1e-300)  # TF = GD (Thm 8.14)
    assert torch.allclose(run.exact_sq, expected, rtol=1e-9, atol=1e-300)
    assert run.gd_sq[0].allclose(torch.ones(trials, dtype=torch.float64))
    assert run.tf_err.shape == run.exact_err.shape == (loops + 1, trials)
    assert torch.allclose(run.tf_err, run.exact_err, rtol=1e-8, atol=1e-12)
    assert run.tf_err[0].abs().max() > 0.01  # the error at q = 0 is not zero
    assert run.tf_minus_gd_per_loop.shape == (loops + 1,) and run.tf_minus_gd < 1e-12


def test_the_unfaithful_transformer_is_asked_for_explicitly():
    a = lx.convergence_run(
        8, 2, loops=3, trials=2, alpha=1.0, generator=torch.Generator().manual_seed(1)
    )
    b = lx.convergence_run(
        8,
        2,
        loops=3,
        trials=2,
        alpha=1.0,
        generator=torch.Generator().manual_seed(1),
        faithful=True,
    )
    assert torch.equal(a.tf_sq, b.tf_sq)


def test_gap_per_trial_range_is_checked_at_both_ends():
    z = torch.zeros(3, 2, dtype=torch.float64)
    run = lx.ConvergenceRun(3, torch.ones(2), torch.ones(3, 2), z, z, z, z, torch.zeros(3))
    assert lx.gap_per_trial(run, 2).shape == (2,)
    for bad in (-1, 3):
        with pytest.raises(
            ValueError, match=rf"^parameter 't' = {bad} is not allowed: expected 0 <= t <= 2$"
        ):
            lx.gap_per_trial(run, bad)


def test_depth_log_ratios_keep_only_the_seeds_that_reached():
    # reach 1.25 of the construction's 1.0: 1.25 is in, 1.26 is out
    assert lx.depth_log_ratios([1.25, 1.26], [5.0, 6.0], 1.0) == [math.log(5.0 / 1.25)]
    assert lx.depth_log_ratios([1.0, 1.0], [5.0, 0.5], 1.0, reach=1.0) == [
        math.log(5.0),
        math.log(0.5),
    ]


def test_kappa_distribution_default_group_is_ten():
    kappas, (lo, hi) = lx.kappa_distribution(
        8, 2, draws=40, generator=torch.Generator().manual_seed(0)
    )
    means = kappas.reshape(4, 10).mean(-1)
    assert (lo, hi) == (float(means.quantile(0.05)), float(means.quantile(0.95)))
    assert kappas.dtype == torch.float64
    again, _ = lx.kappa_distribution(8, 2, draws=40, generator=torch.Generator().manual_seed(0))
    assert torch.equal(kappas, again)  # drawn from the caller's generator
    # a chunk of one prompt at a time still makes every draw
    one, _ = lx.kappa_distribution(
        8, 2, draws=5, generator=torch.Generator().manual_seed(0), group=5, max_elements=1
    )
    assert one.shape == (5,)


def test_kappa_distribution_in_a_dry_run_keeps_its_first_chunk(monkeypatch):
    from companions import train

    monkeypatch.setenv(train.DRY_RUN_ENV, "1")
    monkeypatch.setattr(train, "_LOOPS", [])
    monkeypatch.setattr(train, "_ACTIVE", [])
    # chunks of 2**10 // (8 * 2) = 64 prompts; the dry run keeps the first, 6 groups of 10
    kappas, (lo, hi) = lx.kappa_distribution(
        8, 2, draws=1000, generator=torch.Generator().manual_seed(0), max_elements=2**10
    )
    assert kappas.shape == (64,)
    (loop,) = train.dry_run_loops()
    assert (loop["desc"], loop["planned"], loop["run"]) == ("kappa of 1000 prompts, n=8", 16, 1)
    full, _ = lx.kappa_distribution(
        8, 2, draws=64, generator=torch.Generator().manual_seed(0), max_elements=2**10
    )
    assert torch.equal(kappas, full)  # the same first chunk
    groups = kappas[:60].reshape(6, 10).mean(-1)
    assert (lo, hi) == (float(groups.quantile(0.05)), float(groups.quantile(0.95)))
