"""companions.fourier.training against independent reimplementations (issue 23, mutation testing).

- ``init_network``: the draws (float64, then masked, then cast) reproduced from the generator.
- ``train`` / ``training_step``: every objective (``l2k1``, ``l22``, ``adamw``), minibatches drawn
  from the generator and the defaults, against ``torch.optim`` on ``U``, ``W`` with autograd
  through :func:`companions.fourier.network.forward` (not the tables and their hand-written
  backward); the float32 default (parameters that are float32 numbers); the logs (steps, rho, the
  cross-entropy, the accuracy) recomputed from the parameters, on a D_p of more than one 4096-input
  chunk; the stopping rule; the progress bar; the checks on the parameters.
- ``diagnostics``: a hand-built network of cosines whose statistics are known in closed form.
"""

from __future__ import annotations

import math

import pytest
import torch

import companions.train as ctrain
from companions.fourier import network as fnet
from companions.fourier import training as ftr

F64 = torch.float64


def _draws(seed, runs, width, p, k, widths):
    """The initialization as the docstring states it: U then W, i.i.d. N(0, 1/p) drawn in float64
    from the generator, neurons beyond a run's width zeroed. Returns the generator (its stream
    continues after the draws, as train's does)."""
    g = torch.Generator().manual_seed(seed)
    U = torch.randn(runs, width, k, p, generator=g, dtype=F64) / math.sqrt(p)
    W = torch.randn(runs, width, p, generator=g, dtype=F64) / math.sqrt(p)
    for r, w in enumerate(widths):
        U[r, w:] = 0.0
        W[r, w:] = 0.0
    return U, W, g


def _cosine_lr(t, steps, lr, decay_fraction=0.2):
    decay_from = int(steps * (1 - decay_fraction))
    if t < decay_from:
        return lr
    return lr * 0.5 * (1 + math.cos(math.pi * (t - decay_from) / (steps - decay_from)))


def _ce_per_run(logits, y):
    """Mean cross-entropy of each run, ``logsumexp - correct logit`` (logits ``(R, N, p)``)."""
    correct = logits.gather(-1, y.expand(logits.shape[0], -1).unsqueeze(-1)).squeeze(-1)
    return (torch.logsumexp(logits, -1) - correct).mean(-1)


def _norm_k1(U, W, k):
    """``||theta||_{2,k+1}`` of each run, written out: ``(sum_i ||theta_i||^(k+1))^(1/(k+1))``."""
    sq = (U * U).sum((-1, -2)) + (W * W).sum(-1)
    return (sq ** ((k + 1) / 2)).sum(-1) ** (1 / (k + 1))


def _reference(
    U0,
    W0,
    p,
    k,
    steps,
    lr,
    g=None,
    objective="l2k1",
    lam=1e-3,
    batch=0,
    betas=None,
    weight_decay=0.0,
):
    """Train ``U0``, ``W0`` with torch.optim on U, W themselves, autograd through fnet.forward;
    minibatch indices drawn from ``g``; the default schedule (cosine over the last fifth)."""
    a, y = fnet.dataset(p, k)
    U, W = U0.clone().requires_grad_(True), W0.clone().requires_grad_(True)
    if objective == "adamw":
        opt = torch.optim.AdamW([U, W], lr=lr, betas=betas, weight_decay=weight_decay)
    else:
        opt = torch.optim.Adam([U, W], lr=lr)
    losses = []
    for t in range(steps):
        for group in opt.param_groups:
            group["lr"] = _cosine_lr(t, steps, lr)
        if batch:
            idx = torch.randint(0, a.shape[0], (batch,), generator=g)
            ab, yb = a[idx], y[idx]
        else:
            ab, yb = a, y
        loss = _ce_per_run(fnet.forward(U, W, ab), yb).sum()
        if objective == "l2k1":
            loss = loss + lam * _norm_k1(U, W, k).sum()
        elif objective == "l22":
            loss = loss + lam * ((U * U).sum() + (W * W).sum())
        losses.append(float(loss.detach()))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return U.detach(), W.detach(), losses


# ---------------------------------------------------------------- init_network


def test_init_network_draws_u_then_w_in_float64_and_masks_by_width():
    U, W = ftr.init_network(
        2, 4, p=5, k=3, generator=torch.Generator().manual_seed(1), widths=[2, 4]
    )
    Ue, We, _ = _draws(1, 2, 4, 5, 3, [2, 4])
    assert U.dtype == W.dtype == F64
    assert torch.equal(U, Ue) and torch.equal(W, We)
    assert bool((U[1, 2:] != 0).all()) and torch.all(U[0, 2:] == 0)


def test_init_network_casts_the_float64_draws_to_the_training_dtype():
    g = torch.Generator().manual_seed(2)
    U, W = ftr.init_network(1, 3, p=7, k=2, generator=g, dtype=torch.float32)
    Ue, We, _ = _draws(2, 1, 3, 7, 2, [3])
    assert U.dtype == W.dtype == torch.float32
    assert torch.equal(U, Ue.float()) and torch.equal(W, We.float())


def test_init_network_places_both_tensors_on_the_device_asked():
    # the meta device stands in for an accelerator: a tensor left on the CPU shows
    U, W = ftr.init_network(
        2, 3, p=5, k=2, generator=torch.Generator().manual_seed(0), widths=[2, 3], device="meta"
    )
    assert U.device.type == W.device.type == "meta"
    assert U.shape == (2, 3, 2, 5) and W.shape == (2, 3, 5)


# ---------------------------------------------------------------- train: the objectives


def test_default_objective_with_minibatches_matches_adam_on_the_penalised_loss():
    """Defaults (l2k1, lam = 1e-3, no warm-up, float64 asked), two runs of different widths,
    minibatches of 7 drawn from the generator after the initialisation."""
    p, k, widths, steps, lr = 5, 2, (3, 2), 6, 0.05
    run = ftr.train(
        p,
        k,
        widths=widths,
        steps=steps,
        lr=lr,
        generator=torch.Generator().manual_seed(4),
        batch=7,
        dtype=F64,
        progress=False,
    )
    U0, W0, g = _draws(4, 2, 3, p, k, widths)
    assert torch.equal(run.U0, U0) and torch.equal(run.W0, W0)
    U, W, _ = _reference(U0, W0, p, k, steps, lr, g, batch=7)
    assert torch.allclose(run.U, U, atol=1e-10) and torch.allclose(run.W, W, atol=1e-10)
    assert run.widths == [3, 2] and isinstance(run.widths, list)
    # the minibatches matter: full-batch training lands elsewhere
    Uf, _, _ = _reference(U0, W0, p, k, steps, lr)
    assert not torch.allclose(run.U, Uf, atol=1e-4)


def test_l22_objective_matches_adam_on_cross_entropy_plus_squared_norm():
    # three runs, four neurons, k = 2: runs, neurons and k all differ, so a penalty summed over a
    # wrong axis cannot broadcast back to one value a run
    p, k, widths, steps, lr, lam = 5, 2, [4, 2, 1], 5, 0.05, 0.05
    run = ftr.train(
        p,
        k,
        widths=widths,
        steps=steps,
        lr=lr,
        generator=torch.Generator().manual_seed(5),
        regularizer="l22",
        lam=lam,
        dtype=F64,
        progress=False,
    )
    U0, W0, _ = _draws(5, 3, 4, p, k, widths)
    U, W, _ = _reference(U0, W0, p, k, steps, lr, objective="l22", lam=lam)
    assert torch.allclose(run.U, U, atol=1e-10) and torch.allclose(run.W, W, atol=1e-10)
    assert torch.all(run.U[1, 2:] == 0) and torch.all(run.U[2, 1:] == 0)  # masked: stay zero
    Un, _, _ = _reference(U0, W0, p, k, steps, lr, objective="none")
    assert not torch.allclose(run.U, Un, atol=1e-4)  # the penalty is measurable


def test_adamw_defaults_are_betas_0_9_0_98_and_no_weight_decay():
    p, k, steps, lr = 5, 2, 6, 0.05
    run = ftr.train(
        p,
        k,
        widths=[4],
        steps=steps,
        lr=lr,
        generator=torch.Generator().manual_seed(6),
        regularizer="adamw",
        dtype=F64,
        progress=False,
    )
    U0, W0, _ = _draws(6, 1, 4, p, k, [4])
    U, W, _ = _reference(U0, W0, p, k, steps, lr, objective="adamw", betas=(0.9, 0.98))
    assert torch.allclose(run.U, U, atol=1e-10) and torch.allclose(run.W, W, atol=1e-10)
    # beta2 is not torch's default 0.999: that lands measurably elsewhere
    U2, _, _ = _reference(U0, W0, p, k, steps, lr, objective="adamw", betas=(0.9, 0.999))
    assert not torch.allclose(run.U, U2, atol=1e-6)


def test_float32_training_returns_float32_numbers_cast_to_float64():
    """dtype's default is float32: the parameters returned (and the initial ones) are float32
    numbers held in float64, the initial ones the float64 draws rounded to float32."""
    run = ftr.train(
        5,
        2,
        widths=[4],
        steps=3,
        lr=0.05,
        generator=torch.Generator().manual_seed(7),
        progress=False,
    )
    U0, W0, _ = _draws(7, 1, 4, 5, 2, [4])
    assert run.U.dtype == run.W.dtype == run.U0.dtype == F64
    assert torch.equal(run.U0, U0.float().double()) and torch.equal(run.W0, W0.float().double())
    for x in (run.U, run.W):
        assert torch.equal(x, x.float().double())
    assert not torch.equal(run.U, run.U0)


def test_a_training_part_of_one_input_is_allowed():
    """train_fraction = 0.04 of 25 inputs keeps exactly one for training (the smallest split)."""
    run = ftr.train(
        5,
        2,
        widths=[3],
        steps=2,
        lr=0.05,
        generator=torch.Generator().manual_seed(9),
        train_fraction=0.04,
        dtype=F64,
        log_every=1,
        progress=False,
    )
    U0, W0, g = _draws(9, 1, 3, 5, 2, [3])
    order = torch.randperm(25, generator=g)
    held_out = order[1:].sort().values
    a, y = fnet.dataset(5, 2)
    hits = (fnet.forward(run.U, run.W, a)[0].argmax(-1) == y).double()
    assert run.test_accuracy.shape == (3, 1)
    assert float(run.test_accuracy[-1, 0]) == pytest.approx(float(hits[held_out].mean()))


# ---------------------------------------------------------------- train: the logs


def test_logs_on_more_than_one_chunk_match_a_direct_computation():
    """p = 17, k = 3: 4913 inputs, more than log's chunk of 4096. Each log entry (rho, the mean
    cross-entropy, the accuracy, per run) recomputed in one piece from the initial and the final
    parameters."""
    p, k, widths = 17, 3, [2, 3]
    run = ftr.train(
        p,
        k,
        widths=widths,
        steps=1,
        lr=0.01,
        generator=torch.Generator().manual_seed(0),
        log_every=1,
        dtype=F64,
        progress=False,
    )
    a, y = fnet.dataset(p, k)
    assert run.steps == [0, 1]
    assert run.rho.shape == run.loss.shape == run.accuracy.shape == (2, 2)
    gs = 2 * math.factorial(k) / ((2 * k + 2) ** ((k + 1) / 2) * (p - 1) * p ** ((k - 1) / 2))
    for i, (U, W) in enumerate([(run.U0, run.W0), (run.U, run.W)]):
        logits = fnet.forward(U, W, a)  # (R, N, p), one piece
        correct = logits.gather(-1, y.expand(2, -1).unsqueeze(-1)).squeeze(-1)
        wrong = logits.masked_fill(torch.nn.functional.one_hot(y, p).bool(), -math.inf)
        g = correct - wrong.amax(-1)
        # the smallest margin of some run lies in the first chunk, so a minimum over the last
        # chunk alone would be wrong
        assert bool((g[:, :4096].amin(-1) < g[:, 4096:].amin(-1)).any())
        rho = g.amin(-1) / _norm_k1(U, W, k) ** (k + 1) / gs
        assert torch.allclose(run.rho[i], rho, rtol=1e-10, atol=0)
        assert torch.allclose(run.loss[i], _ce_per_run(logits, y), rtol=1e-12, atol=0)
        acc = (logits.argmax(-1) == y).double().mean(-1)
        assert torch.allclose(run.accuracy[i], acc, rtol=0, atol=1e-15)
    assert run.loss[0, 0] != run.loss[0, 1] and run.rho[0, 0] != run.rho[0, 1]


def _fake_training(monkeypatch, losses=None):
    """training_step replaced by a step that does nothing and returns the given losses in turn."""
    seen = []

    def fake_step(*args, **kwargs):
        def step(rate):
            seen.append(rate)
            return losses[len(seen) - 1] if losses else 0.0

        return step

    monkeypatch.setattr(ftr, "training_step", fake_step)
    return seen


def test_logs_every_100_steps_by_default_and_at_the_end(monkeypatch):
    _fake_training(monkeypatch)
    run = ftr.train(
        3,
        2,
        widths=[2],
        steps=201,
        lr=0.1,
        generator=torch.Generator().manual_seed(0),
        progress=False,
    )
    assert run.steps == [0, 100, 200, 201] and run.rho.shape == (4, 1)
    run = ftr.train(
        3,
        2,
        widths=[2],
        steps=20,
        lr=0.1,
        generator=torch.Generator().manual_seed(0),
        log_every=10,
        progress=False,
    )
    assert run.steps == [0, 10, 20]


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_a_non_finite_loss_stops_training_with_the_step_named(monkeypatch, bad):
    seen = _fake_training(monkeypatch, [1.0, 0.5, bad, 0.1])
    with pytest.raises(FloatingPointError, match=rf"^loss became {bad} at step 2: lower 'lr'$"):
        ftr.train(
            3,
            2,
            widths=[2],
            steps=4,
            lr=0.1,
            generator=torch.Generator().manual_seed(0),
            progress=False,
        )
    assert len(seen) == 3


def test_the_schedule_multiplies_warm_up_and_cosine_where_they_overlap(monkeypatch):
    seen = _fake_training(monkeypatch)
    ftr.train(
        3,
        2,
        widths=[2],
        steps=10,
        lr=1.0,
        generator=torch.Generator().manual_seed(0),
        warmup=10,
        decay_fraction=0.5,
        progress=False,
    )
    expected = [
        min(1.0, (t + 1) / 10) * (0.5 * (1 + math.cos(math.pi * (t - 5) / 5)) if t >= 5 else 1.0)
        for t in range(10)
    ]
    assert seen == pytest.approx(expected, rel=1e-12)
    assert seen[5] == pytest.approx(0.6)  # warm-up 6/10 times the cosine's 1


def test_progress_bar_is_named_training_and_shown_by_default(monkeypatch):
    calls = []
    real = ctrain.progress

    def spy(iterable, desc="", disable=False, **options):
        calls.append((desc, disable))
        return real(iterable, desc=desc, disable=True, **options)

    monkeypatch.setattr(ctrain, "progress", spy)
    _fake_training(monkeypatch)
    g = torch.Generator
    ftr.train(3, 2, widths=[2], steps=2, lr=0.1, generator=g().manual_seed(0))
    ftr.train(
        3,
        2,
        widths=[2],
        steps=2,
        lr=0.1,
        generator=g().manual_seed(0),
        desc="run A",
        progress=False,
    )
    ftr.train(
        3, 2, widths=[2], steps=2, lr=0.1, generator=g().manual_seed(0), desc="run B", progress=True
    )
    logs = [c for c in calls if c[0] == "log over D_p"]  # inside the training bar: never shown
    assert logs and all(disable is True for _, disable in logs)
    bars = [c for c in calls if c[0] != "log over D_p"]
    assert bars == [("training", False), ("run A", True), ("run B", False)]
    assert all(type(d) is bool for _, d in calls)


def test_bad_parameters_are_named_with_what_is_expected():
    g = torch.Generator
    with pytest.raises(
        ValueError,
        match=r"^parameter 'regularizer' = 'l1' is not allowed: expected 'l2k1', 'adamw' or 'l22'$",
    ):
        ftr.train(
            5, 2, widths=[3], steps=1, lr=0.1, generator=g(), regularizer="l1", progress=False
        )
    with pytest.raises(
        ValueError,
        match=r"^parameter 'train_fraction' = 0.0 is not allowed: expected a number in \(0, 1\]$",
    ):
        ftr.train(
            5, 2, widths=[3], steps=1, lr=0.1, generator=g(), train_fraction=0.0, progress=False
        )
    # 0.99 * 25 rounds to 25: nothing would be held out
    with pytest.raises(ValueError, match=r"it leaves 25 of the 25 inputs for training"):
        ftr.train(
            5, 2, widths=[3], steps=1, lr=0.1, generator=g(), train_fraction=0.99, progress=False
        )


# ---------------------------------------------------------------- training_step


def _tables(seed, runs=2, width=3, p=5, k=2):
    U0, W0, g = _draws(seed, runs, width, p, k, [width] * runs)
    E = fnet.table(U0).requires_grad_(True)
    W = W0.clone().requires_grad_(True)
    return U0, W0, E, W, g


def test_training_step_defaults_are_the_l2k1_objective_on_all_of_d_p():
    """Called as bench.py calls it (no inputs): full batch on D_p, L_{2,k+1} with lam = 1e-3.
    The returned loss is the objective before the update."""
    p, k, lr = 5, 2, 0.05
    U0, W0, E, W, g = _tables(10)
    step = ftr.training_step(p, k, E=E, W=W, opt=torch.optim.Adam([E, W], lr=1.0), generator=g)
    losses = [step(lr) for _ in range(3)]  # step(lr) sets the rate: 1.0 is never used
    a, y = fnet.dataset(p, k)
    ce = _ce_per_run(fnet.forward(U0, W0, a), y).sum()
    assert losses[0] == pytest.approx(float(ce + 1e-3 * _norm_k1(U0, W0, k).sum()), rel=1e-12)
    Ur, Wr = U0.clone().requires_grad_(True), W0.clone().requires_grad_(True)
    opt = torch.optim.Adam([Ur, Wr], lr=lr)
    for _ in range(3):
        loss = _ce_per_run(fnet.forward(Ur, Wr, a), y).sum() + 1e-3 * _norm_k1(Ur, Wr, k).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert torch.allclose(fnet.untable(E.detach()), Ur.detach(), atol=1e-10)
    assert torch.allclose(W.detach(), Wr.detach(), atol=1e-10)


def _spy_forward_table(monkeypatch):
    inputs = []
    real = ftr.forward_table

    def spy(E, W, a=None):
        inputs.append(a)
        return real(E, W, a)

    monkeypatch.setattr(ftr, "forward_table", spy)
    return inputs


def test_training_step_takes_the_whole_grid_path_exactly_when_told_the_inputs_are_d_p(
    monkeypatch,
):
    """forward_table's a = None (the broadcast over D_p) whenever the inputs are all of D_p: not
    given, given without saying otherwise (whole_set's default), or given only in part (``y``
    missing: D_p). A part of D_p (whole_set=False) is passed as it is."""
    p, k = 5, 2
    a, y = fnet.dataset(p, k)
    seen = _spy_forward_table(monkeypatch)
    for kwargs in (dict(), dict(a=a, y=y), dict(a=a[:3])):
        _, _, E, W, g = _tables(11)
        ftr.training_step(p, k, E=E, W=W, opt=torch.optim.Adam([E, W]), generator=g, **kwargs)(0.01)
    assert seen == [None, None, None]
    _, _, E, W, g = _tables(11)
    ftr.training_step(
        p, k, E=E, W=W, opt=torch.optim.Adam([E, W]), generator=g, a=a[:3], y=y[:3], whole_set=False
    )(0.01)
    assert torch.equal(seen[-1], a[:3])
    # train: full batch on D_p takes the grid; on a training part, that part
    seen.clear()
    ftr.train(
        p,
        k,
        widths=[2],
        steps=2,
        lr=0.01,
        generator=torch.Generator().manual_seed(0),
        progress=False,
    )
    assert seen == [None, None]
    ftr.train(
        p,
        k,
        widths=[2],
        steps=1,
        lr=0.01,
        generator=torch.Generator().manual_seed(0),
        train_fraction=0.5,
        progress=False,
    )
    assert seen[-1] is not None and seen[-1].shape == (12, k)


def test_training_step_with_only_y_missing_trains_on_d_p():
    p, k = 5, 2
    a, _ = fnet.dataset(p, k)
    results = []
    for kwargs in (dict(), dict(a=a[:3])):
        _, _, E, W, g = _tables(12)
        step = ftr.training_step(
            p, k, E=E, W=W, opt=torch.optim.Adam([E, W]), generator=g, **kwargs
        )
        results.append((step(0.05), E.detach().clone()))
    assert results[0][0] == results[1][0] and torch.equal(results[0][1], results[1][1])


# ---------------------------------------------------------------- diagnostics


def _cos(p, amp, phase, freq):
    t = torch.arange(p, dtype=F64)
    return amp * torch.cos(phase + 2 * math.pi * freq * t / p)


def _known_network():
    """p = 7, k = 2, six neurons [u_1; u_2; w] of cosines (closed forms in the comments; a cosine
    of amplitude b at frequency z != 0 has squared norm p b^2 / 2 and folded power p^2 b^2 / 2 at
    z, and its DFT at z has the cosine's phase):

    A: frequency 1, amplitudes 1, phases 0.3 + 0.4 = 0.7: locked, balance 1, norm^2 10.5
    B: frequency 2, amplitudes 1, 1, 2, w's phase off by 1: cos 1, balance 2, norm^2 21
    C: frequency 1 plus frequency 2 at half the amplitude in each vector: concentration
       1 / (1 + 1/4) = 0.8, locked at 1, balance 1, norm^2 13.125
    D: frequency 3, amplitudes 1/2, locked: norm^2 2.625 (live at 0.1 of the largest, not at 0.5)
    E: frequency 2, amplitudes 0.01: nonzero but far below live (norm < 1)
    Z: zero (not counted in the width)"""
    p = 7
    neurons = [
        [_cos(p, 1, 0.3, 1), _cos(p, 1, 0.4, 1), _cos(p, 1, 0.7, 1)],
        [_cos(p, 1, 0.1, 2), _cos(p, 1, 0.2, 2), _cos(p, 2, 1.3, 2)],
        [
            _cos(p, 1, 0.5, 1) + _cos(p, 0.5, 0.1, 2),
            _cos(p, 1, -0.2, 1) + _cos(p, 0.5, 0.9, 2),
            _cos(p, 1, 0.3, 1) + _cos(p, 0.5, 2.0, 2),
        ],
        [_cos(p, 0.5, 0.2, 3), _cos(p, 0.5, 0.6, 3), _cos(p, 0.5, 0.8, 3)],
        [_cos(p, 0.01, 0.0, 2), _cos(p, 0.01, 0.0, 2), _cos(p, 0.01, 0.0, 2)],
        [torch.zeros(p, dtype=F64)] * 3,
    ]
    V = torch.stack([torch.stack(n) for n in neurons])  # (6, 3, 7)
    return V[:, :2].clone(), V[:, 2].clone()


def _assert_report(got, expected):
    assert list(got) == list(expected)
    for key, value in expected.items():
        if isinstance(value, float):
            assert got[key] == pytest.approx(value, rel=1e-12, abs=1e-12), key
        else:
            assert got[key] == value and type(got[key]) is type(value), key


def test_diagnostics_of_a_known_network_at_live_fraction_one_half():
    U, W = _known_network()
    norms = ((U * U).sum((-1, -2)) + (W * W).sum(-1)).sqrt()
    assert torch.allclose(norms**2, torch.tensor([10.5, 21, 13.125, 2.625, 0.00105, 0], dtype=F64))
    got = ftr.diagnostics(U, W, live_fraction=0.5)  # live: A, B, C (norm > 0.5 * sqrt(21))
    expected = dict(
        live=3,
        width=5,
        min_concentration=0.8,
        median_concentration=1.0,
        frequencies=[1, 2],
        all_frequencies=False,  # frequency 3 is missing
        frequency_counts=[2, 1, 0],
        min_phase_cos=math.cos(1.0),
        median_phase_cos=1.0,
        median_balance=1.0,
    )
    _assert_report(got, expected)


def test_diagnostics_of_a_known_network_at_the_default_live_fraction():
    U, W = _known_network()
    got = ftr.diagnostics(U, W)  # 0.1: D is live too, E is not
    expected = dict(
        live=4,
        width=5,
        min_concentration=0.8,
        median_concentration=1.0,
        frequencies=[1, 2, 3],
        all_frequencies=True,
        frequency_counts=[2, 1, 1],
        min_phase_cos=math.cos(1.0),
        median_phase_cos=1.0,
        median_balance=1.0,
    )
    _assert_report(got, expected)
