"""companions.fine_labels.experiments, second round (issue 23, mutation testing): the samples of
``test_sets`` and ``phase_grid`` land on the device asked for. PyTorch's ``meta`` device (shapes
and dtypes, no data), which a CPU-only machine has, stands in for an accelerator.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

import companions
from companions.fine_labels import experiments as fx
from companions.fine_labels import model as fmodel


@pytest.fixture
def cfg():
    return companions.preset("fine-labels-fine", "smoke", device="cpu", seeds=2, n_test=8)


def test_test_sets_put_the_samples_on_the_device(cfg):
    tests = fx.test_sets(fx.data_config(cfg), 2, 8, torch.Generator().manual_seed(0), "meta")
    assert list(tests) == ["easy", "hard"]
    assert {t.device.type for pair in tests.values() for t in pair} == {"meta"}


class _Stop(Exception):
    pass


def test_phase_grid_evaluates_on_the_device(cfg, monkeypatch):
    # a meta network gives meta scores even on CPU points: record the points and the labels
    seen = []
    real_forward = fmodel.forward

    def forward(net, X):
        seen.append(X.device.type)
        return real_forward(net, X)

    def accuracy(scores, y):
        seen.append(y.device.type)
        raise _Stop  # no data to bring back from the meta device

    monkeypatch.setattr(fmodel, "forward", forward)
    monkeypatch.setattr(fmodel, "accuracy", accuracy)
    rt = SimpleNamespace(device="meta", generator=lambda s: torch.Generator().manual_seed(s))
    g = torch.Generator().manual_seed(4)
    net = fmodel.init(2, 2 * cfg.k, m=8, d=cfg.d, sigma0=0.05, tau=cfg.tau, g=g, device="meta")
    with pytest.raises(_Stop):
        fx.phase_grid(cfg, rt, nets={"sum": (net, "sum")}, alphas=[0.5], s_daggers=[2], n=8)
    assert seen == ["meta", "meta"]
