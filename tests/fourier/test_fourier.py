"""Unit tests of companions.fourier: each one fails on a plausible wrong implementation."""

import math

import pytest
import sympy as sp
import torch

from companions.fourier import (
    ascent as fasc,
)
from companions.fourier import (
    construction as fcon,
)
from companions.fourier import (
    diagnostics as fdiag,
)
from companions.fourier import (
    network as fnet,
)
from companions.fourier import (
    neuron as fneu,
)
from companions.fourier import (
    symbolic as fsym,
)
from companions.fourier import (
    training as ftr,
)


def test_dataset_is_all_tuples_with_sum_labels():
    a, y = fnet.dataset(5, 3)
    assert a.shape == (125, 3) and len({tuple(r) for r in a.tolist()}) == 125
    assert torch.equal(y, a.sum(-1) % 5)


def test_forward_matches_one_hot_formula_and_is_homogeneous():
    g = torch.Generator().manual_seed(0)
    U, W = (
        torch.randn(6, 3, 5, generator=g, dtype=torch.float64),
        torch.randn(6, 5, generator=g, dtype=torch.float64),
    )
    a, y = fnet.dataset(5, 3)
    X = torch.nn.functional.one_hot(a, 5).to(torch.float64)  # (N, k, p)
    s = torch.einsum("nkp,mkp->nm", X, U)
    assert torch.allclose(fnet.forward(U, W, a), s.pow(3) @ W)
    assert torch.allclose(fnet.forward(U, W, a, chunk=7), fnet.forward(U, W, a))
    assert torch.allclose(fnet.forward(2 * U, 2 * W, a), 2**4 * fnet.forward(U, W, a))
    # normalized margin is scale-invariant (Definition 4.4)
    assert torch.allclose(
        fnet.normalized_margin(3 * U, 3 * W, a, y), fnet.normalized_margin(U, W, a, y)
    )


def test_norms_and_margins_by_hand():
    U = torch.zeros(2, 2, 3, dtype=torch.float64)
    W = torch.zeros(2, 3, dtype=torch.float64)
    U[0, 0, 0], W[1, 2] = 3.0, 4.0
    assert torch.allclose(fnet.neuron_norms(U, W), torch.tensor([3.0, 4.0], dtype=torch.float64))
    assert math.isclose(float(fnet.norm_ab(U, W, 3)), (27 + 64) ** (1 / 3))
    logits = torch.tensor([[1.0, 5.0, 2.0], [0.0, -1.0, 3.0]], dtype=torch.float64)
    y = torch.tensor([1, 0])
    assert torch.equal(fnet.margins(logits, y), torch.tensor([3.0, -3.0], dtype=torch.float64))
    assert torch.allclose(
        fnet.class_weighted_margins(logits, y), torch.tensor([3.5, -1.0], dtype=torch.float64)
    )


def test_gamma_star_closed_form_and_special_cases():
    assert math.isclose(fnet.gamma_star(7, 3), 3 / (16 * 7 * 6))
    assert math.isclose(fnet.gamma_star(5, 2), math.sqrt(2 / 27) / (math.sqrt(5) * 4))
    assert (
        sp.simplify(
            fnet.gamma_star_symbolic(11, 4)
            - sp.Rational(48) / (10 ** sp.Rational(5, 2) * 10 * 11 ** sp.Rational(3, 2))
        )
        == 0
    )


def test_fourier_form_c10_matches_brute_force():
    g = torch.Generator().manual_seed(1)
    U, W = fasc.random_unit_neurons(5, 7, 2, g)
    a, y = fnet.dataset(7, 2)
    assert torch.allclose(
        fneu.neuron_expected_margin(U, W, a, y),
        fneu.neuron_expected_margin_fourier(U, W),
        atol=1e-15,
    )


@pytest.mark.parametrize("p,k", [(3, 2), (5, 2), (5, 3), (7, 3), (5, 4)])
def test_construction_attains_gamma_star(p, k):
    rep = fasc.construction_report(p, k)
    assert rep["m"] == 2 ** (2 * k - 1) * (p - 1) // 2
    assert rep["rel_gap"] < 1e-12 and rep["accuracy"] == 1.0 and rep["cosine_gap"] < 1e-12
    assert rep["margin_spread"] < 1e-12 and rep["wrong_spread"] < 1e-12
    assert rep["min_concentration"] > 1 - 1e-12 and rep["min_phase_cos"] > 1 - 1e-12
    assert rep["frequencies"] == list(range(1, (p - 1) // 2 + 1))


def test_construction_metadata_phases_match_dft():
    c = fcon.construction(7, 3)
    V = torch.fft.fft(fdiag.stacked(c.U, c.W))
    z = c.zeta
    ang = torch.angle(V[torch.arange(len(z)), :, z])
    expected = torch.cat([c.phases_u, c.phase_w[:, None]], dim=1)
    assert torch.allclose(torch.cos(ang - expected), torch.ones_like(ang), atol=1e-12)


def test_random_neurons_stay_below_gamma_star():
    U, W = fasc.random_unit_neurons(500, 5, 2, torch.Generator().manual_seed(2))
    assert float(fneu.neuron_expected_margin_fourier(U, W).max()) < fnet.gamma_star(5, 2)


def test_diagnostics_on_known_vectors():
    p = 11
    t = torch.arange(p, dtype=torch.float64)
    v = torch.cos(0.3 + 2 * math.pi * 3 * t / p)
    pw = fdiag.folded_power(v)
    assert (
        pw.shape == (6,)
        and int(pw.argmax()) == 3
        and math.isclose(float(fdiag.concentration(pw)), 1.0)
    )
    assert math.isclose(float(fdiag.two_sided_max_power(v)), 0.5)
    mixed = v + torch.cos(2 * math.pi * 1 * t / p)
    assert math.isclose(float(fdiag.concentration(fdiag.folded_power(mixed))), 0.5, rel_tol=1e-12)
    assert torch.allclose(fdiag.trig_interpolant(v, t), v, atol=1e-12)
    # phase lock: theta_u1 + theta_u2 = theta_w gives cos = 1, otherwise less
    U = torch.stack(
        [torch.cos(0.3 + 2 * math.pi * 2 * t / p), torch.cos(0.5 + 2 * math.pi * 2 * t / p)]
    )[None]
    W = torch.cos(0.8 + 2 * math.pi * 2 * t / p)[None]
    assert math.isclose(float(fdiag.phase_lock(U, W)), 1.0, rel_tol=1e-12)
    assert float(fdiag.phase_lock(U, -W)) < -0.99


def test_symbolic_identities():
    assert fsym.sum_to_product_residual(3) == 0 and fsym.sum_to_product_residual(4, half=True) == 0
    r, n = fsym.cosine_expansion(4)
    assert r == 0 and n == 8
    assert fsym.construction_identity(3) == 0
    t = sp.Symbol("t")
    assert fsym.dirichlet_sum_minpoly(7, 2) == 2 * t + 1
    c9 = fsym.c9_arithmetic()
    assert c9[5] == 0 and c9["step"] != 0


def test_eta_non_multilinear_terms_are_constant_not_zero():
    U, W = fasc.random_unit_neurons(1, 5, 2, torch.Generator().manual_seed(3))
    a, _ = fnet.dataset(5, 2)
    rest = fneu.eta(U[0], W[0], a) - fneu.eta(U[0], W[0], a, multilinear_only=True)
    assert float(rest.max() - rest.min()) < 1e-15 and abs(float(rest.mean())) > 1e-6


def test_single_neuron_ascent_reaches_gamma_star():
    U, W, v = fasc.single_neuron_ascent(
        5, 2, starts=4, steps=800, generator=torch.Generator().manual_seed(4)
    )
    assert float(v.max()) <= fnet.gamma_star(5, 2) * (1 + 1e-12)
    assert float(v.max()) > fnet.gamma_star(5, 2) * (1 - 1e-6)


def test_bad_parameters_are_named():
    import companions

    with pytest.raises(ValueError, match="'p'"):
        companions.preset("fourier-max-margin", "smoke", p=9)
    with pytest.raises(ValueError, match=r"p_values\[1\]"):
        companions.preset("fourier-max-margin", "smoke", p_values=[3, 4])


def test_masked_neurons_stay_zero_and_runs_are_independent():
    g = torch.Generator().manual_seed(5)
    run = ftr.train(
        5,
        2,
        widths=[3, 8],
        steps=30,
        lr=0.05,
        generator=g,
        lam=1e-3,
        log_every=10,
        dtype=torch.float64,
        progress=False,
    )
    assert torch.all(run.U[0, 3:] == 0) and torch.all(run.W[0, 3:] == 0)
    assert bool((run.U[1, 3:] != 0).any())
    # a run trained alone from the same initialization gives the same parameters (runs do not
    # interact)
    U0, W0 = run.U0[1:2].clone(), run.W0[1:2].clone()
    U, W = U0.clone().requires_grad_(True), W0.clone().requires_grad_(True)
    opt = torch.optim.Adam([U, W], lr=0.05)
    a, y = fnet.dataset(5, 2)
    for t in range(30):
        for gr in opt.param_groups:
            gr["lr"] = 0.05 * (0.5 * (1 + math.cos(math.pi * (t - 24) / 6)) if t >= 24 else 1.0)
        loss = (
            torch.nn.functional.cross_entropy(fnet.forward(U, W, a)[0], y)
            + 1e-3 * fnet.norm_ab(U, W, 3).sum()
        )
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert torch.allclose(U.detach(), run.U[1:2], atol=1e-10)


def test_a_dry_run_logs_over_the_first_chunk_of_d_p(monkeypatch):
    # p = 17, k = 3: 4913 inputs, two chunks of the log; one step, logged before it
    kw = dict(lam=1e-3, log_every=1, dtype=torch.float64, progress=False, train_fraction=0.5)
    monkeypatch.setenv("COMPANIONS_DRY_RUN", "1")
    run = ftr.train(
        17, 3, widths=[4], steps=5, lr=0.05, generator=torch.Generator().manual_seed(8), **kw
    )
    assert run.steps == [0, 5]  # one step run, logged before it and at the (planned) end
    a, y = fnet.dataset(17, 3)
    logits = fnet.forward(run.U0, run.W0, a[:4096])[0]
    ce = torch.nn.functional.cross_entropy(logits, y[:4096])
    assert float(run.loss[0, 0]) == pytest.approx(float(ce), rel=1e-12)
    hits = (logits.argmax(-1) == y[:4096]).double()
    assert float(run.accuracy[0, 0]) == pytest.approx(float(hits.mean()), abs=1e-12)


def test_train_fraction_trains_on_its_part_only_and_logs_the_rest():
    kw = dict(lam=1e-3, log_every=10, dtype=torch.float64, progress=False)
    whole = ftr.train(
        5, 2, widths=[6], steps=20, lr=0.05, generator=torch.Generator().manual_seed(8), **kw
    )
    half = ftr.train(
        5,
        2,
        widths=[6],
        steps=20,
        lr=0.05,
        generator=torch.Generator().manual_seed(8),
        train_fraction=0.5,
        **kw,
    )
    assert whole.test_accuracy is None and half.test_accuracy.shape == half.accuracy.shape
    assert torch.equal(half.U0, whole.U0), "the split is drawn after the initialisation"
    # the same split, drawn as train() draws it, and Adam on that half only (no warmup, cosine
    # over the last 20 % of the steps)
    g = torch.Generator().manual_seed(8)
    ftr.init_network(1, 6, p=5, k=2, generator=g)
    order = torch.randperm(25, generator=g)
    a, y = fnet.dataset(5, 2)
    tr, te = order[:12].sort().values, order[12:].sort().values
    U, W = half.U0.clone().requires_grad_(True), half.W0.clone().requires_grad_(True)
    opt = torch.optim.Adam([U, W], lr=0.05)
    for t in range(20):
        for gr in opt.param_groups:
            gr["lr"] = 0.05 * (0.5 * (1 + math.cos(math.pi * (t - 16) / 4)) if t >= 16 else 1.0)
        loss = (
            torch.nn.functional.cross_entropy(fnet.forward(U, W, a[tr])[0], y[tr])
            + 1e-3 * fnet.norm_ab(U, W, 3).sum()
        )
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert torch.allclose(U.detach(), half.U, atol=1e-10)
    assert not torch.allclose(whole.U, half.U, atol=1e-3)
    hits = (fnet.forward(half.U, half.W, a)[0].argmax(-1) == y).double()
    assert float(half.test_accuracy[-1, 0]) == pytest.approx(float(hits[te].mean()), abs=1e-12)
    assert float(half.train_accuracy[-1, 0]) == pytest.approx(float(hits[tr].mean()), abs=1e-12)
    assert whole.train_accuracy is None and half.train_accuracy.shape == half.accuracy.shape
    assert float(half.accuracy[-1, 0]) == pytest.approx(float(hits.mean()), abs=1e-12)
    for bad in (0.0, 1.5, 0.01):
        with pytest.raises(ValueError, match="train_fraction"):
            ftr.train(
                5,
                2,
                widths=[6],
                steps=2,
                lr=0.05,
                generator=torch.Generator(),
                train_fraction=bad,
                progress=False,
            )


def test_training_improves_margin_and_never_exceeds_gamma_star():
    run = ftr.train(
        5,
        2,
        widths=[16],
        steps=1500,
        lr=0.1,
        generator=torch.Generator().manual_seed(6),
        lam=1e-3,
        log_every=100,
        progress=False,
    )
    assert float(run.rho.max()) <= 1 + 1e-9
    assert float(run.rho[-1, 0]) > 0.8 > float(run.rho[0, 0])
    d = ftr.diagnostics(run.U[0], run.W[0])
    assert d["all_frequencies"] and d["median_concentration"] > 0.9


def test_adamw_and_bad_regularizer():
    run = ftr.train(
        5,
        2,
        widths=[8],
        steps=20,
        lr=0.01,
        generator=torch.Generator().manual_seed(7),
        regularizer="adamw",
        weight_decay=0.1,
        log_every=10,
        progress=False,
    )
    assert run.rho.shape == (3, 1)
    with pytest.raises(ValueError, match="regularizer"):
        ftr.train(
            5,
            2,
            widths=[8],
            steps=2,
            lr=0.01,
            generator=torch.Generator(),
            regularizer="l1",
            progress=False,
        )


def test_training_chapter_parameters():
    import companions

    with pytest.raises(ValueError, match="'p'"):
        companions.preset("fourier-training", "smoke", p=15)
    with pytest.raises(ValueError, match="'batch'"):
        companions.preset("fourier-training", "smoke", batch=10**6)


@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("full", [True, False])
def test_table_forward_and_backward_match_autograd_in_float64(k, full):
    """The training step's hand-written backward (forward_table) against autograd through
    forward, float64: logits and both gradients agree to round-off, on the full grid and on a
    minibatch with repeated inputs."""
    p, m = 5, 7
    g = torch.Generator().manual_seed(11)
    U = torch.randn(2, m, k, p, generator=g, dtype=torch.float64)
    W = torch.randn(2, m, p, generator=g, dtype=torch.float64)
    a_all, y_all = fnet.dataset(p, k)
    idx = torch.randint(0, p**k, (40,), generator=g)
    a, y = (a_all, y_all) if full else (a_all[idx], y_all[idx])
    G = torch.randn(2, a.shape[0], p, generator=g, dtype=torch.float64)

    U1, W1 = U.clone().requires_grad_(True), W.clone().requires_grad_(True)
    (fnet.forward(U1, W1, a) * G).sum().backward()
    E, W2 = fnet.table(U).requires_grad_(True), W.clone().requires_grad_(True)
    logits = fnet.forward_table(E, W2, None if full else a)
    (logits * G).sum().backward()
    assert torch.allclose(logits, fnet.forward(U, W, a), rtol=1e-12, atol=1e-12)
    assert torch.allclose(fnet.untable(E.grad), U1.grad, rtol=1e-12, atol=1e-10)
    assert torch.allclose(W2.grad, W1.grad, rtol=1e-12, atol=1e-10)
    assert torch.equal(fnet.untable(fnet.table(U)), U)
    assert torch.autograd.gradcheck(
        lambda e, w: fnet.forward_table(e, w, None if full else a),
        (fnet.table(U[:1, :3]).requires_grad_(True), W[:1, :3].clone().requires_grad_(True)),
    )


def test_float32_training_logs_in_float64_and_tracks_float64_training():
    """Float32 training returns float64 parameters and logs, and follows the float64 run closely
    over a short run (same initialization)."""
    kw = dict(lam=1e-3, log_every=10, progress=False)
    r32 = ftr.train(
        5, 2, widths=[8], steps=40, lr=0.05, generator=torch.Generator().manual_seed(3), **kw
    )
    r64 = ftr.train(
        5,
        2,
        widths=[8],
        steps=40,
        lr=0.05,
        generator=torch.Generator().manual_seed(3),
        dtype=torch.float64,
        **kw,
    )
    assert r32.U.dtype == r32.rho.dtype == torch.float64
    assert torch.allclose(r32.U0, r64.U0, atol=1e-6)
    assert torch.allclose(r32.rho, r64.rho, atol=1e-3)


def test_neuron_count_table_multiplies_terms_by_half_sign_vectors():
    from companions.fourier.construction import neuron_count_table

    table = neuron_count_table({3: 8, 2: 4})
    lines = table.splitlines()
    assert lines[2].startswith("| 2 | 4 | 2 | 8 | 8 |")
    assert lines[3].startswith("| 3 | 8 | 4 | 32 | 32 |") and "56" in lines[3]
    with pytest.raises(ValueError, match="nonzero_terms"):
        neuron_count_table({3: -1})


def test_diagonal_dft_ratio_is_one_at_the_construction_and_not_at_random():
    con = fcon.construction(5, 2)
    assert fdiag.diagonal_dft_ratio(con.U, con.W, 5) == pytest.approx(1.0, abs=1e-12)
    U, W = ftr.init_network(1, 8, p=5, k=2, generator=torch.Generator().manual_seed(0))
    assert fdiag.diagonal_dft_ratio(U[0], W[0], 5) < 0.9
    flipped = fdiag.diagonal_dft_ratio(con.U, -con.W, 5)
    assert flipped == pytest.approx(-1.0, abs=1e-12)


def test_vector_power_folds_plus_minus_zeta_and_reads_the_first_input():
    p = 11
    a = torch.arange(p, dtype=torch.float64)
    one = torch.cos(2 * math.pi * 3 * a / p + 0.4)
    mixed = torch.cos(2 * math.pi * a / p) + 0.5 * torch.sin(2 * math.pi * 4 * a / p)
    U = torch.stack([torch.stack([one, mixed]), torch.stack([mixed, one])])  # (2 neurons, k=2, p)
    power = fdiag.vector_power(U)
    # neuron 0's first input is one cosine: all its folded power on zeta = 3
    assert float(power[0]) == pytest.approx(1.0, abs=1e-12)
    # neuron 1's first input has powers 1 and 1/4 on two frequencies: 1 / 1.25 on the largest
    assert float(power[1]) == pytest.approx(0.8, abs=1e-12)
    # the unfolded ratio of the same cosine is 1/2 (the erratum), so folding is what gives 1
    assert float(fdiag.two_sided_max_power(one)) == pytest.approx(0.5, abs=1e-12)


def test_live_power_quantile_is_over_live_neurons_only():
    p = 7
    a = torch.arange(p, dtype=torch.float64)
    cosines = [torch.cos(2 * math.pi * z * a / p) for z in (1, 2, 3)]
    mixed = cosines[0] + cosines[1]  # folded power 1/2 on its largest frequency
    U = torch.stack([torch.stack([v, v]) for v in (cosines[0], cosines[1], mixed, 1e-3 * mixed)])
    W = torch.stack([cosines[0], cosines[1], cosines[2], 1e-3 * cosines[2]])
    # the fourth neuron is not live (norm 1e-3 of the others): the powers are 1, 1, 1/2
    assert fdiag.live_power_quantile(U, W, 0.0) == pytest.approx(0.5, abs=1e-12)
    assert fdiag.live_power_quantile(U, W, 1.0) == pytest.approx(1.0, abs=1e-12)
    # torch.quantile's linear rule: the 0.25 quantile of (0.5, 1, 1) is 0.5 + 0.5 * 0.5
    assert fdiag.live_power_quantile(U, W, 0.25) == pytest.approx(0.75, abs=1e-12)
    with pytest.raises(ValueError, match="'q'"):
        fdiag.live_power_quantile(U, W, 1.5)


@pytest.mark.parametrize("p,k", [(5, 3), (7, 2)])
def test_construction_report_is_the_same_in_chunks(p, k):
    whole = fasc.construction_report(p, k, chunk=None)  # every input at once
    for chunk in (1, 7, 4096):
        parts = fasc.construction_report(p, k, chunk=chunk)
        assert parts.keys() == whole.keys()
        for key, value in whole.items():
            if isinstance(value, float):
                assert parts[key] == pytest.approx(value, rel=1e-12, abs=1e-15), (chunk, key)
            else:
                assert parts[key] == value, (chunk, key)
    with pytest.raises(ValueError, match="'chunk'"):
        fasc.construction_report(3, 2, chunk=0)
