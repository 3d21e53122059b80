"""The kappa sampling interval of companions.looped.experiments, tested tightly: the interval is
the 5%-95% range of means of ``group`` draws, so its ends and its width have closed forms in the
draws (a collapsed or widened interval would turn reproductions into ``differs``)."""

from __future__ import annotations

import pytest
import torch

from companions.looped import experiments as lx
from companions.looped import theory as lth


def test_the_interval_is_the_quantiles_of_the_group_means():
    kappas, (lo, hi) = lx.kappa_distribution(
        16, 3, draws=1005, generator=torch.Generator().manual_seed(2), group=5
    )
    # the draws are the condition numbers of the prompts drawn from the same generator
    X = torch.randn(1005, 16, 3, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    assert torch.allclose(kappas, lth.condition_number(X), rtol=1e-12)
    means = kappas[:1005].reshape(-1, 5).mean(-1)  # 201 groups, the 1005 draws split evenly
    assert (lo, hi) == (float(means.quantile(0.05)), float(means.quantile(0.95)))
    # draws that do not fill a group are left out of the interval (and kept in the draws)
    k7, (lo7, hi7) = lx.kappa_distribution(
        16, 3, draws=1007, generator=torch.Generator().manual_seed(2), group=5
    )
    assert k7.shape == (1007,)
    assert (lo7, hi7) == (lo, hi)  # the same first 1005 draws, the 2 left over ignored


def test_the_interval_width_matches_the_central_limit_theorem():
    # group means of 20 draws are nearly normal: the 5%-95% width is 2 * 1.645 * sd / sqrt(20),
    # to within the sampling error of 200 groups (about 10 %)
    kappas, (lo, hi) = lx.kappa_distribution(
        32, 4, draws=4000, generator=torch.Generator().manual_seed(6), group=20
    )
    width = 2 * 1.6449 * float(kappas.std()) / 20**0.5
    assert hi - lo == pytest.approx(width, rel=0.2)
    assert lo < float(kappas.mean()) < hi
    # one draw per group: the interval is the draws' own 5%-95% range, several times wider
    _, (lo1, hi1) = lx.kappa_distribution(
        32, 4, draws=4000, generator=torch.Generator().manual_seed(6), group=1
    )
    assert (lo1, hi1) == (float(kappas.quantile(0.05)), float(kappas.quantile(0.95)))
    assert hi1 - lo1 > 3 * (hi - lo)


def test_chunking_keeps_every_draw():
    kappas, _ = lx.kappa_distribution(
        8, 2, draws=50, generator=torch.Generator().manual_seed(1), group=10, max_elements=8 * 2 * 7
    )
    assert kappas.shape == (50,) and bool(torch.isfinite(kappas).all())
    assert bool((kappas >= 1).all())
