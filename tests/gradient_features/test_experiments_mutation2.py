"""companions.gradient_features.experiments, second round (issue 23, mutation testing): the device
and the generator each function hands on, the default chunk of ``population_fraction``, its
scaling of ``w`` by ``sigma_w`` and its float64 bias, and ``rademacher_bound`` off the special
values ``B = 2`` and ``W`` in ``{0, 1}``.

The device checks use PyTorch's ``meta`` device (tensors with shapes and dtypes and no data),
which a CPU-only machine has: what is asked to go there must be there.
"""

from __future__ import annotations

import math

import pytest
import torch

from companions.gradient_features import data as gdata
from companions.gradient_features import experiments as ex
from companions.gradient_features import network as nw

F64 = torch.float64


def _mixture():
    return gdata.orthogonal_mixture(4, 2, 1.0, 0.5)


def test_one_step_puts_the_network_and_the_data_on_the_device():
    net0, net1, X, y = ex.one_step(
        _mixture(),
        2,
        m=3,
        n=5,
        sigma_a=0.7,
        sigma_w=0.4,
        b_tilde=0.2,
        eta1=1.5,
        generator=torch.Generator().manual_seed(1),
        dtype=F64,
        device="meta",
    )
    for t in (net0.a, net0.W, net0.b, net1.a, net1.W, net1.b, X, y):
        assert t.device.type == "meta" and t.dtype == F64
    assert net0.W.shape == (2, 12, 4) and X.shape == (2, 5, 4)


def _recorders(monkeypatch):
    """Replace the trainings by recorders of their keyword arguments (each returns its start)."""
    kws = []

    def train(net, X, *, y, steps, lr, train_first_layer, optimizer, **kw):
        kws.append(kw)
        return net

    def train_ntk(net0, X, y, steps, lr, **kw):
        kws.append(kw)
        return lambda Xt: Xt[..., 0]

    def train_linear(X, y, steps, lr, **kw):
        kws.append(kw)
        return lambda Xt: Xt[..., 0]

    monkeypatch.setattr(nw, "train", train)
    monkeypatch.setattr(nw, "train_ntk", train_ntk)
    monkeypatch.setattr(nw, "train_linear", train_linear)
    return kws


def test_compare_methods_hands_on_its_device_and_its_generator(monkeypatch):
    kws = _recorders(monkeypatch)
    devices = []
    real_one_step = ex.one_step

    def one_step(*args, **kw):
        devices.append(kw["device"])
        return real_one_step(*args, **kw)

    monkeypatch.setattr(ex, "one_step", one_step)
    g, dev = torch.Generator().manual_seed(4), torch.device("cpu")
    ex.compare_methods(
        _mixture(),
        2,
        m=3,
        n=6,
        n_test=9,
        sigma_a=0.7,
        sigma_w=0.4,
        b_tilde=0.2,
        eta1=1.5,
        steps=13,
        lr=0.01,
        batch=4,
        generator=g,
        dtype=F64,
        device=dev,
    )
    assert len(devices) == 1 and devices[0] is dev  # the caller's device object, not a default
    assert len(kws) == 5  # network, frozen, rf, ntk, linear: each batches with the caller's draws
    assert all(kw == {"batch": 4, "generator": g} and kw["generator"] is g for kw in kws)


def test_uniform_parity_run_batches_with_the_callers_generator(monkeypatch):
    kws = _recorders(monkeypatch)
    g = torch.Generator().manual_seed(8)
    ex.uniform_parity_run(
        6,
        2,
        seeds=2,
        m=3,
        n=8,
        n_test=10,
        steps=5,
        lr=0.02,
        batch=4,
        generator=g,
        eta1=2.0,
        dtype=F64,
    )
    assert len(kws) == 2 and all(kw["generator"] is g and kw["batch"] == 4 for kw in kws)


def _fraction_by_hand(W, b, X, y, D, gammas, B_G):
    """(len(gammas), r): G~(w, b) = (1/n) sum_l y_l x_l I[<w, x_l> > b] for every row of W (N, d),
    then the fraction of rows with |cos(G, D_j)| > 1 - gamma and ||G|| >= B_G."""
    active = ((X @ W.T) > b).to(F64)  # (n, N)
    G = (active * y[:, None]).T @ X / X.shape[0]  # (N, d)
    norm = G.norm(dim=1, keepdim=True)
    cos = torch.where(norm > 0, G @ D.T / norm.clamp(min=1e-300), torch.zeros(()))
    return torch.stack([((cos.abs() > 1 - g) & (norm >= B_G)).to(F64).mean(0) for g in gammas])


def test_population_fraction_scales_w_by_sigma_w():
    # sigma_w = 0.5 against a bias of 0.3: which points switch a neuron on depends on the scale
    dist = _mixture()
    D = dist.directions
    p, _ = ex.population_fraction(
        dist,
        D,
        gammas=[0.3, 0.7],
        B_G=0.01,
        sigma_w=0.5,
        b_tilde=0.3,
        neurons=40,
        n=9,
        generator=torch.Generator().manual_seed(3),
    )
    g = torch.Generator().manual_seed(3)
    X, y = dist.sample(1, 9, g, F64)
    W = 0.5 * torch.randn(1, 40, 4, generator=g, dtype=F64)
    want = _fraction_by_hand(W[0], 0.3, X[0], y[0], D, [0.3, 0.7], 0.01)
    assert torch.allclose(p, want, atol=1e-12)
    wrong = _fraction_by_hand(W[0] / 0.25, 0.3, X[0], y[0], D, [0.3, 0.7], 0.01)  # w / sigma_w
    assert not torch.allclose(p, wrong)  # the case tells the two scales apart


class OnePoint:
    """The distribution of the single point ``x = (1)`` with label ``+1``, sampled in the dtype
    asked for (as torch's factories do: ``None`` is the default float32)."""

    d = 1

    def sample(self, seeds, n, generator, dtype):
        return torch.full((seeds, n, 1), 1.0, dtype=dtype), torch.ones(seeds, n, dtype=dtype)


@pytest.mark.parametrize("b_tilde, active", [(2.0**24 + 1, False), (2.0**24 - 1, True)])
def test_population_fraction_keeps_the_bias_and_the_points_in_float64(b_tilde, active):
    # one neuron with w = 2^24 + 1/2 on the point x = 1: G~ = I[w > b~] (1), a hit of the direction
    # (1) exactly when the neuron is on. b~ = 2^24 + 1 is exact in float64 and rounds to 2^24 in
    # float32, where it would switch the neuron on; 2^24 - 1 is exact in both (the control).
    z = float(torch.randn(1, 1, 1, generator=torch.Generator().manual_seed(0), dtype=F64))
    assert z > 0  # the first draw of seed 0, which sets w = z sigma_w
    sigma_w = (2.0**24 + 0.5) / z
    D = torch.ones(1, 1, dtype=F64)
    p, se = ex.population_fraction(
        OnePoint(),
        D,
        gammas=[0.5],
        B_G=0.5,
        sigma_w=sigma_w,
        b_tilde=b_tilde,
        neurons=1,
        n=1,
        generator=torch.Generator().manual_seed(0),
    )
    assert p.tolist() == [[1.0 if active else 0.0]] and se.tolist() == [[0.0]]


def test_rademacher_bound_off_the_special_values():
    # (B.595) by hand: sqrt(3^2 (||(2, -1)||^2 0.5^2 + 1^2) / 4) = sqrt(9 (5/4 + 1) / 4) = 9/4
    W = torch.tensor([[2.0, -1.0]], dtype=F64)
    b = torch.tensor([1.0], dtype=F64)
    assert ex.rademacher_bound(W, b, 3.0, 0.5, 4) == pytest.approx(2.25, rel=1e-15)
    assert ex.rademacher_bound(W, 0 * b, 1.0, 1.0, 5) == pytest.approx(1.0, rel=1e-15)
    assert ex.rademacher_bound(3 * W, b, 1.0, 2.0, 1) == pytest.approx(math.sqrt(181), rel=1e-15)


class _Stop(Exception):
    pass


def _recording_accuracy(monkeypatch, seen):
    """nw.accuracy replaced by a recorder of its inputs' devices, which stops the run at the
    first call: the meta device holds no data to bring back to the CPU."""

    real_forward = nw.forward

    def forward(net, X):  # a meta network gives meta scores even on CPU points: record X
        seen.append(X.device.type)
        return real_forward(net, X)

    def accuracy(scores, y):
        seen.append((scores.device.type, y.device.type))
        raise _Stop

    monkeypatch.setattr(nw, "forward", forward)
    monkeypatch.setattr(nw, "accuracy", accuracy)


def test_compare_methods_evaluates_on_the_device(monkeypatch):
    # the meta device stands in for an accelerator: test points left on the CPU show
    kws, seen = _recorders(monkeypatch), []
    _recording_accuracy(monkeypatch, seen)
    with pytest.raises(_Stop):
        ex.compare_methods(
            _mixture(),
            2,
            m=3,
            n=6,
            n_test=9,
            sigma_a=0.7,
            sigma_w=0.4,
            b_tilde=0.2,
            eta1=1.5,
            steps=13,
            lr=0.01,
            batch=4,
            generator=torch.Generator().manual_seed(4),
            dtype=F64,
            device="meta",
        )
    assert len(kws) == 1 and seen == ["meta", ("meta", "meta")]


def test_uniform_parity_run_works_on_the_device(monkeypatch):
    nets = []
    kws = _recorders(monkeypatch)
    real_train = nw.train

    def train(net, X, *, y, **kw):
        nets.append((net, X, y))
        return real_train(net, X, y=y, **kw)

    monkeypatch.setattr(nw, "train", train)
    seen = []
    _recording_accuracy(monkeypatch, seen)
    with pytest.raises(_Stop):
        ex.uniform_parity_run(
            6,
            2,
            seeds=2,
            m=3,
            n=8,
            n_test=10,
            steps=5,
            lr=0.02,
            batch=4,
            generator=torch.Generator().manual_seed(8),
            eta1=2.0,
            dtype=F64,
            device="meta",
        )
    (net1, X, y), (rf0, _, _) = nets  # Algorithm 6's network, then random features from W^(0)
    assert len(kws) == 2 and seen == ["meta", ("meta", "meta")]
    assert {t.device.type for t in (net1.a, net1.W, net1.b, X, y)} == {"meta"}
    assert {t.device.type for t in (rf0.a, rf0.W, rf0.b)} == {"meta"}
