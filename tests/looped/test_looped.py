"""Unit tests of companions.looped: each one fails on a plausible wrong implementation."""

import math

import pytest
import sympy as sp
import torch

from companions.looped import (
    construction as lc,
)
from companions.looped import (
    experiments as lx,
)
from companions.looped import (
    symbolic as lsym,
)
from companions.looped import (
    theory as lth,
)
from companions.looped import (
    training as ltr,
)


@pytest.fixture
def prompts():
    X, theta, y = lc.sample_prompts(5, 12, 3, torch.Generator().manual_seed(0))
    return X, theta, y


def test_sample_prompts_shapes_sphere_and_labels(prompts):
    X, theta, y = prompts
    assert X.shape == (5, 12, 3) and theta.shape == (5, 3) and y.shape == (5, 12)
    assert torch.allclose(theta.norm(dim=-1), torch.ones(5, dtype=torch.float64))
    assert torch.allclose(y, (X @ theta.unsqueeze(-1)).squeeze(-1))
    again = lc.sample_prompts(5, 12, 3, torch.Generator().manual_seed(0))
    assert torch.equal(again[0], X)


def test_mask_has_only_last_row_without_its_diagonal():
    M = lc.causal_mask(3)
    expected = torch.zeros(4, 4, dtype=torch.float64)
    expected[3, :3] = 1
    assert torch.equal(M, expected)


def test_input_matrix_layout(prompts):
    X, theta, y = prompts
    q0 = torch.arange(3, dtype=torch.float64).expand(5, 3)
    Z = lc.input_matrix(X, y, 2.5, q0)
    assert Z.shape == (5, 13, 4)
    assert torch.equal(Z[:, :12, :3], X) and torch.equal(Z[:, :12, 3], y)
    assert torch.equal(Z[:, 12, :3], q0) and torch.all(Z[:, 12, 3] == 2.5)


def test_lemma_8_13_numerically(prompts):
    X, theta, y = prompts
    q0 = torch.randn(5, 3, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    alpha = -0.7
    Q, P = lc.construction_weights(3)
    out = lc.linear_attention(lc.input_matrix(X, y, alpha, q0), Q, P)
    expected_last = (q0.unsqueeze(-2) @ X.transpose(-1, -2) @ X).squeeze(-2) + alpha * (
        y.unsqueeze(-2) @ X
    ).squeeze(-2)
    assert torch.allclose(out[:, 12, :3], expected_last)
    assert torch.all(out[:, :12] == 0) and torch.all(out[:, 12, 3] == 0)


def test_last_row_attention_equals_masked_for_random_weights(prompts):
    X, theta, y = prompts
    g = torch.Generator().manual_seed(2)
    Q, P = (
        torch.randn(4, 4, generator=g, dtype=torch.float64),
        torch.randn(4, 4, generator=g, dtype=torch.float64),
    )
    Z = lc.input_matrix(X, y, 1.3, torch.randn(5, 3, generator=g, dtype=torch.float64))
    assert torch.allclose(
        lc.linear_attention(Z, Q, P), lc.linear_attention_last_row(Z, Q, P), atol=1e-12
    )


def test_theorem_8_14_transformer_is_gd_with_varying_steps(prompts):
    X, theta, y = prompts
    alpha = 1.7
    q0 = torch.randn(5, 3, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    etas = torch.tensor([0.01, 0.02, 0.005, 0.03], dtype=torch.float64)
    Q, P = lc.construction_weights(3)
    outs, Z = lc.looped_transformer(lc.input_matrix(X, y, alpha, q0), Q, P, etas, trajectory=True)
    thetas = lc.gradient_descent(X, y, etas, theta0=-q0 / alpha)
    assert outs.shape == (5, 5, 3)
    assert torch.allclose(outs / alpha, thetas, atol=1e-12)
    assert torch.equal(
        Z[:, :12], lc.input_matrix(X, y, alpha, q0)[:, :12]
    )  # rows 1..n never change
    assert torch.all(Z[:, 12, 3] == alpha)


def test_gradient_descent_single_step_by_hand():
    X = torch.tensor([[[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]]], dtype=torch.float64)
    y = torch.tensor([[1.0, 2.0, 0.0]], dtype=torch.float64)
    theta1 = lc.gradient_descent(X, y, 0.1, loops=1)[1]
    # grad at 0 is -X^T y = -(1, 4)
    assert torch.allclose(theta1, torch.tensor([[0.1, 0.4]], dtype=torch.float64))


def test_step_sizes_are_validated(prompts):
    X, theta, y = prompts
    Q, P = lc.construction_weights(3)
    Z = lc.input_matrix(X, y, 1.0)
    with pytest.raises(ValueError, match="eta"):
        lc.looped_transformer(Z, Q, P, torch.tensor([0.1, -0.1]))
    with pytest.raises(ValueError, match="loops"):
        lc.looped_transformer(Z, Q, P, 0.1)
    with pytest.raises(ValueError, match="loops"):
        lc.looped_transformer(Z, Q, P, torch.tensor([0.1, 0.1]), loops=3)


def test_condition_number_and_smoothness():
    X = torch.tensor([[3.0, 0.0], [0.0, 1.0], [0.0, 0.0]], dtype=torch.float64)
    assert float(lth.condition_number(X)) == pytest.approx(9.0)
    assert float(lth.smoothness(X)) == pytest.approx(9.0)
    assert math.isinf(float(lth.condition_number(torch.tensor([[1.0, 1.0]], dtype=torch.float64))))


def test_exact_error_formula_matches_gd(prompts):
    X, theta, y = prompts
    eta = 1 / lth.smoothness(X)
    err, sq = lth.exact_error_curves(X, theta, 2.0, eta, 30)
    thetas = lc.gradient_descent(X, y, eta.expand(30, -1))
    assert torch.allclose(sq, ((thetas - theta) ** 2).sum(-1), atol=1e-13)
    assert torch.allclose(err, 2.0 * ((thetas * theta).sum(-1) - 1).abs(), atol=1e-13)


def test_bounds_values_and_ordering():
    kappa, T = 3.0, 12
    assert float(lth.bound_theorem_8_16(kappa, T, -2.0)) == pytest.approx(2 * math.exp(-2.0))
    assert float(lth.bound_tight(kappa, T, 1.0)) == pytest.approx((2 / 3) ** 12)
    assert float(lth.bound_theorem_8_25(kappa, T, 2.0)) == pytest.approx(4 * math.exp(-4.0))
    assert (
        lth.bound_tight(kappa, T)
        < lth.bound_theorem_8_25(kappa, T)
        < lth.bound_theorem_8_16(kappa, T)
    )


def test_loops_needed():
    assert lth.loops_needed_theorem_8_16(2.0, 1.0, 1e-6) == pytest.approx(4 * math.log(1e6))
    assert lth.loops_needed_tight(2.0, 1.0, 1e-6) == pytest.approx(math.log(1e6) / math.log(2))


def test_gatmiry_threshold_is_tight():
    for T, d in [(1, 4), (3, 2), (5, 4)]:
        n = lth.gatmiry_min_samples(T, d)
        assert 8 * T * d**2 / math.sqrt(n) == pytest.approx(2.0 ** (-2 * T))
        assert 8 * T * d**2 / math.sqrt(n - 1) > 2.0 ** (-2 * T)
        assert lth.gatmiry_error_bound(T, d, n) == pytest.approx(1.0)
    assert lth.gatmiry_min_samples(5, 4) == 429_496_729_600


def test_marchenko_pastur_limit():
    assert float(lth.marchenko_pastur_kappa(0.25)) == pytest.approx(9.0)
    with pytest.raises(ValueError, match="ratio"):
        lth.marchenko_pastur_kappa(1.0)


def test_fixed_step_rate_boundary():
    X = torch.tensor([[2.0, 0.0], [0.0, 1.0]], dtype=torch.float64)  # eigenvalues 4 and 1
    assert float(lth.fixed_step_rate(X, 0.25)) == pytest.approx(0.75)
    assert float(lth.fixed_step_rate(X, 0.6)) == pytest.approx(1.4)


def test_null_space_error_is_gd_limit():
    X, theta, y = lc.sample_prompts(50, 2, 5, torch.Generator().manual_seed(4))
    limit = lth.null_space_error(X, theta, 1.5)
    thetas = lc.gradient_descent(X, y, (1 / lth.smoothness(X)).expand(3000, -1))
    err = 1.5 * ((thetas[-1] * theta).sum(-1) - 1).abs()
    eig = torch.linalg.eigvalsh(X @ X.transpose(-1, -2))  # nonzero eigenvalues of X^T X
    well_conditioned = eig[:, -1] / eig[:, 0] < 100  # (1 - 1/100)^3000 < 1e-13
    assert torch.allclose(err[well_conditioned], limit[well_conditioned], atol=1e-8)
    assert 0 < float(limit.mean()) < 1.5


def test_symbolic_lemma_and_theorem():
    lemma = lsym.symbolic_lemma_8_13(3, 2)
    assert lemma["lemma"].is_zero_matrix and lemma["corner"] == 0
    thm = lsym.symbolic_theorem_8_14(2, 1, 2)
    assert thm["tf_minus_gd"].is_zero_matrix
    assert thm["rows_changed"].is_zero_matrix and thm["alpha_changed"] == 0
    assert thm["augmented_rank"] == 2


def test_symbolic_checks_detect_a_wrong_construction(monkeypatch):
    # With P keeping the alpha column, the alpha entry changes and the lemma's matrix is wrong.
    monkeypatch.setattr(lsym, "_symbolic_weights", lambda d: (sp.eye(d + 1), sp.eye(d + 1)))
    assert not lsym.symbolic_lemma_8_13(2, 1)["lemma"].is_zero_matrix
    assert lsym.symbolic_theorem_8_14(2, 1, 1)["alpha_changed"] != 0


def test_strong_convexity_identity_and_gatmiry_symbolic():
    assert lsym.symbolic_strong_convexity_identity(2, 2) == 0
    gat = lsym.symbolic_gatmiry_threshold()
    assert gat["residual"] == 0 and gat["slope_negative"]


def test_convergence_run_tf_equals_gd_and_formula():
    run = lx.convergence_run(
        16, 4, loops=60, trials=3, alpha=1.0, generator=torch.Generator().manual_seed(5)
    )
    assert run.tf_minus_gd < 1e-12
    assert torch.allclose(run.tf_sq[:30], run.exact_sq[:30], atol=1e-13)
    assert run.tf_sq[0].allclose(torch.ones(3, dtype=torch.float64))
    assert run.kappa.shape == (3,) and bool((run.kappa > 1).all())


def test_kappa_distribution_interval_contains_mean():
    kappas, (lo, hi) = lx.kappa_distribution(
        32, 4, draws=2000, generator=torch.Generator().manual_seed(6), group=10
    )
    assert kappas.shape == (2000,)
    assert lo < float(kappas.mean()) < hi


def test_distance_to_construction():
    Q, P = lc.construction_weights(3)
    dist = ltr.distance_to_construction(2 * Q, 0.5 * P)
    assert dist["a"] == pytest.approx(2) and dist["b"] == pytest.approx(0.5)
    assert dist["q_residual"] == pytest.approx(0, abs=1e-12) and dist[
        "p_residual"
    ] == pytest.approx(0, abs=1e-12)
    P2 = P.clone()
    P2[3, 3] = 1.0
    assert ltr.distance_to_construction(Q, P2)["p_residual"] > 0.3


def test_trained_looped_transformer_learns():
    g = torch.Generator().manual_seed(7)
    model, history = ltr.train_looped_transformer(
        3, 16, loops=5, steps=150, batch=64, generator=g, desc="test"
    )
    assert history.loss[-1] < 0.5 * history.loss[0]
    Z0, theta, alpha = ltr.sample_training_batch(8, 16, 3, g)
    assert model(Z0, 5).shape == (8, 3)


def test_chapter_parameters_are_validated():
    from companions import preset

    with pytest.raises(ValueError, match="n_values"):
        preset("looped-gd", "smoke", n_values=[16, 3])  # n must exceed d = 4
    with pytest.raises(ValueError, match="alpha"):
        preset("looped-gd", "smoke", alpha=0.0)
    with pytest.raises(ValueError, match="train_n"):
        preset("looped-gd", "smoke", train_n=4)
    with pytest.raises(ValueError, match="n_values"):
        preset("looped-gd", "smoke", n_values=[16])  # the chapter compares two or more n
    assert preset("looped-gd", "smoke", n_values=[8, 9]).n_values == (8, 9)


@pytest.mark.parametrize("per_prompt", [False, True])
def test_gram_form_matches_last_row_and_masked_forms_with_gradients(per_prompt):
    """The training loop's Gram form against the last-row and the masked (as written) forms, in
    float64: outputs, every loop's output, the final Z and the gradients in Q and P agree to
    round-off, with a scalar or a per-prompt step size."""
    g = torch.Generator().manual_seed(21)
    X, _, y = lc.sample_prompts(6, 9, 3, g)
    Z0 = lc.input_matrix(X, y, torch.randn(6, generator=g, dtype=torch.float64))
    Q0 = torch.randn(4, 4, generator=g, dtype=torch.float64)
    P0 = torch.randn(4, 4, generator=g, dtype=torch.float64)
    etas = 0.02 * (1 + torch.rand(4, 6, generator=g, dtype=torch.float64)) if per_prompt else 0.03
    results = []
    for form in ("gram", "last-row", "masked"):
        Q, P = Q0.clone().requires_grad_(True), P0.clone().requires_grad_(True)
        if form == "gram":
            outs, Z = lc.looped_transformer_gram(Z0, Q, P, etas, loops=4, trajectory=True)
        else:
            outs, Z = lc.looped_transformer(
                Z0, Q, P, etas, loops=4, faithful=form == "masked", trajectory=True
            )
        (outs.pow(3).sum() + Z.sum()).backward()
        results.append((outs.detach(), Z.detach(), Q.grad, P.grad))
    for other in results[1:]:
        for a, b in zip(results[0], other):
            assert torch.allclose(a, b, rtol=1e-10, atol=1e-12)
    assert results[0][0].abs().max() > 1e-3  # not a trivial (zero) comparison


def test_looped_trainer_float64_matches_the_last_row_trainer():
    """The trainer (Gram form) in float64 against the former trainer (last-row attention, as
    written before the Gram form) step by step: same data, same Adam, weights equal to
    round-off after a few steps; float32 training returns a float64 model."""
    steps, d, n, loops, batch = 5, 3, 16, 4, 32
    model, history = ltr.train_looped_transformer(
        d,
        n,
        loops=loops,
        steps=steps,
        batch=batch,
        generator=torch.Generator().manual_seed(3),
        dtype=torch.float64,
        progress=False,
    )
    g = torch.Generator().manual_seed(3)
    ref = ltr.LoopedLinearTransformer(d, ltr.fixed_step_for_gaussian(n, d), generator=g)
    opt = torch.optim.Adam(ref.parameters(), lr=1e-2)
    for _ in range(steps):
        Z0, theta, alpha = ltr.sample_training_batch(batch, n, d, g)
        out, _ = lc.looped_transformer(
            Z0, ref.Q, P=ref.P, etas=ref.eta, loops=loops, faithful=False
        )
        loss = (((out * theta).sum(-1) - alpha) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert abs(float(loss.detach()) - history.loss[-1]) < 1e-10
    assert torch.allclose(model.Q, ref.Q.detach(), atol=1e-10)
    assert torch.allclose(model.P, ref.P.detach(), atol=1e-10)
    assert not torch.allclose(
        model.Q,
        0.1
        * torch.randn(
            d + 1, d + 1, generator=torch.Generator().manual_seed(3), dtype=torch.float64
        ),
    )
    m32, _ = ltr.train_looped_transformer(
        d, n, loops=loops, steps=3, batch=batch, generator=torch.Generator(), progress=False
    )
    assert m32.Q.dtype == torch.float64


def test_gap_per_trial_is_theory_minus_log_error_and_refuses_the_floor():
    from companions.looped.experiments import ConvergenceRun, gap_per_trial

    kappa = torch.tensor([2.0, 4.0], dtype=torch.float64)
    tf_sq = torch.tensor([[1.0, 1.0], [math.exp(-3.0), 1e-30]], dtype=torch.float64)
    z = torch.zeros(2, 2, dtype=torch.float64)
    run = ConvergenceRun(3, kappa, tf_sq, z, z, z, z, torch.zeros(2))
    assert torch.allclose(gap_per_trial(run, 0), torch.zeros(2, dtype=torch.float64))
    with pytest.raises(ValueError, match="floor"):
        gap_per_trial(run, 1)
    run.tf_sq[1, 1] = math.exp(-1.0)
    assert torch.allclose(gap_per_trial(run, 1), torch.tensor([-0.5 + 3.0, -0.25 + 1.0]).double())


def test_eigenvalues_in_parts_equal_one_batched_call():
    from companions.looped.theory import eigvalsh_in_parts

    X = torch.randn(3, 7, 9, 4, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    G = X.transpose(-1, -2) @ X
    whole = torch.linalg.eigvalsh(G)
    for parts in (1, 5, 21, 100, None):
        got = eigvalsh_in_parts(G, parts)
        assert got.shape == (3, 7, 4) and torch.allclose(got, whole, rtol=0, atol=1e-12)
    assert not torch.allclose(eigvalsh_in_parts(G.flip(1), 5), whole)  # order is kept


# -- the chapter's measurements, moved to the library --------------------------------------------
def _run_of(tf_sq, kappa, tf_err=None):
    from companions.looped.experiments import ConvergenceRun

    tf_sq = torch.as_tensor(tf_sq, dtype=torch.float64)
    err = tf_sq.sqrt() if tf_err is None else torch.as_tensor(tf_err, dtype=torch.float64)
    return ConvergenceRun(
        n=8,
        kappa=torch.as_tensor(kappa, dtype=torch.float64),
        tf_sq=tf_sq,
        gd_sq=tf_sq,
        exact_sq=tf_sq,
        tf_err=err,
        exact_err=err,
        tf_minus_gd_per_loop=torch.zeros(tf_sq.shape[0], dtype=torch.float64),
    )


def test_group_means_are_means_of_consecutive_groups():
    from companions.looped.experiments import group_means

    k = torch.arange(1.0, 8.0)  # 1..7: groups (1, 2, 3), (4, 5, 6), leftover 7 dropped
    assert group_means(k, 3).tolist() == [2.0, 5.0]
    with pytest.raises(ValueError, match="'group'"):
        group_means(k, 8)


def test_bound_violations_count_points_above_each_bound():
    from companions.looped.experiments import bound_violations

    t = torch.arange(4, dtype=torch.float64)[:, None]
    kappa = torch.tensor([2.0])
    below = (1 - 1 / kappa) ** (2 * t)  # exactly D2 squared: on every bound, none above
    assert bound_violations({8: _run_of(below, kappa)}, 1.0)["tight"] == 0
    above = below.clone()
    above[2, 0] = 0.9  # at t = 2: err 0.95 > (1/2)^2 and > exp(-1); sq 0.9 > exp(-1)
    counts = bound_violations({8: _run_of(above, kappa)}, 1.0)
    # the transformer and the closed form (the same curves here) each count the point
    assert counts["tight"] == 2 and counts["8.16"] == 2 and counts["8.25"] == 2
    assert counts["points"] == 4


def test_steepest_excess_is_zero_on_the_limit_and_positive_above_it():
    from companions.looped.experiments import steepest_excess

    t = torch.arange(5, dtype=torch.float64)[:, None]
    kappa = torch.tensor([4.0])
    on_limit = (1 - 1 / kappa) ** (2 * t)
    assert abs(steepest_excess({8: _run_of(on_limit, kappa)})) < 1e-12
    slower = (1 - 0.5 / kappa) ** (2 * t)  # falls more slowly than the limit allows
    assert steepest_excess({8: _run_of(slower, kappa)}) > 0.1


def test_float64_floor_reads_only_curves_that_went_flat():
    from companions.looped.experiments import float64_floor

    falling = 10.0 ** -torch.arange(30, dtype=torch.float64)[:, None]  # still falling at the end
    flat = falling.clone()
    flat[5:] = 1e-20  # flat from loop 5 on
    lo, hi, n = float64_floor({8: _run_of(torch.cat([falling, flat], 1), [2.0, 2.0])})
    assert (lo, hi, n) == (1e-20, 1e-20, 1)
    assert float64_floor({8: _run_of(falling, [2.0])})[2] == 0


def test_null_space_run_stays_within_its_bound():
    from companions.looped.experiments import null_space_run

    err, limit, slack = null_space_run(
        2, 5, loops=50, draws=64, alpha=1.0, generator=torch.Generator().manual_seed(3)
    )
    assert err.shape == limit.shape == slack.shape == (64,)
    assert bool(((err - limit).abs() <= slack + 1e-12).all())
    # the mean limit is (d - n)/d = 3/5 for theta* uniform on the sphere, within 4 standard errors
    assert abs(float(limit.mean()) - 0.6) < 4 * float(limit.std()) / 8
