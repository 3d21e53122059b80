"""``train_dtype`` of :func:`companions.emergence.experiments.run_methods`: the Adam trainings in
float32 after float64 first two steps (the chapter emergence-experiments)."""

from __future__ import annotations

from fractions import Fraction

import pytest
import torch

from companions.emergence import data, experiments
from companions.emergence import network as net


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_params_to_casts_every_tensor_and_keeps_values():
    p = net.Params(
        torch.tensor([[1.0 + 2**-40, -3.0]], dtype=torch.float64),
        torch.tensor([0.25], dtype=torch.float64),
        torch.tensor([-2.0], dtype=torch.float64),
    )
    q = p.to(torch.float32)
    assert (q.W.dtype, q.b.dtype, q.a.dtype) == (torch.float32,) * 3
    assert q.W.tolist() == [[1.0, -3.0]]  # 1 + 2^-40 rounds to 1 in float32
    assert q.b.tolist() == [0.25] and q.a.tolist() == [-2.0]
    assert p.W.dtype == torch.float64 and float(p.W[0, 0]) == 1.0 + 2**-40  # the original stays
    assert p.to(torch.float64).W is p.W


@pytest.fixture(scope="module")
def both():
    dist = data.parity_mixture(24, 12, k=3, p_o=Fraction(1, 2), generator=_gen())
    x, y, _ = dist.sample(600, _gen(1))
    xt, yt, _ = dist.sample(200, _gen(2))
    runs = {
        dtype: experiments.run_methods(
            dist,
            x,
            y=y,
            evals={"test": (xt, yt)},
            m=8,
            steps=6,
            batch=100,
            generator_seed=0,
            progress=False,
            train_dtype=dtype,
        )
        for dtype in (None, torch.float32)
    }
    return runs[None], runs[torch.float32]


def test_the_first_two_steps_stay_in_float64_and_are_the_same(both):
    wide, narrow = both
    for key in ("p0", "p1", "p2"):
        for name in ("W", "b", "a"):
            a, b = getattr(wide[key], name), getattr(narrow[key], name)
            assert b.dtype == torch.float64 and torch.equal(a, b), (key, name)


def test_the_network_trains_in_float32_and_follows_the_float64_run(both):
    wide, narrow = both
    p64, p32 = wide["network"]["params"], narrow["network"]["params"]
    assert p64.W.dtype == torch.float64 and p32.W.dtype == torch.float32
    # 6 Adam steps of lr 1e-2 from the same weights: each coordinate moves by at most about
    # 6e-2; float32 rounding must not move it by a whole step (1e-2).
    for name in ("W", "b", "a"):
        gap = (getattr(p32, name).double() - getattr(p64, name)).abs().max()
        assert float(gap) < 1e-2, name
    for key in ("network", "rf", "ntk", "one-step", "two-step"):
        assert 0 <= narrow[key]["test"] <= 1 and 0 <= narrow[key]["train"] <= 1


def test_the_probes_are_untouched_by_the_training_dtype(both):
    wide, narrow = both
    for key in ("one-step", "two-step"):
        assert narrow[key]["test"] == wide[key]["test"] and narrow[key]["cos"] == wide[key]["cos"]


@pytest.mark.parametrize("labels", [[1.0, 0.0, -1.0], [2.0, -1.0], [1.0, -1.0, 0.5]])
def test_class_weights_refuse_labels_other_than_plus_minus_one(labels):
    with pytest.raises(ValueError, match=r"parameter 'y' must hold labels \+1 and -1 only"):
        net.class_weights(torch.tensor(labels, dtype=torch.float64))
