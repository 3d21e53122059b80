"""companions.universality.experiments against cases worked out by hand and a second
implementation of the probes (issue 23, mutation testing).

- ``mean_se`` / ``decide_close`` / ``decide_positive`` / ``seeds_to_decide`` / ``verdict``: the
  boundaries of each rule at values exact in binary, the notes spelled out.
- ``_probe`` and the probes built on it: the same draws from the generator, the least-norm
  solution through ``torch.linalg.lstsq`` (not a pseudo-inverse) and ridge in its primal form
  ``(F^T F + ridge m I)^{-1} F^T y`` (the code uses the kernel form).
- the sweeps: the seeds they hand out and the order of their draws.
"""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest
import torch

from companions.stats import t_critical
from companions.universality import data
from companions.universality import experiments as ux

F64 = torch.float64
LAY = data.Layout(s=1, r=3, T=2, n_spurious=2)  # k = 1 + 2 * 2 = 5, d = 7


def test_mean_se_by_hand():
    assert ux.mean_se([1.0, 2.0, 6.0]) == pytest.approx((3.0, math.sqrt(7 / 3)), rel=1e-15)
    # float64 throughout: 0.1-steps that float32 would round
    values = [0.1, 0.2, 0.7]
    mean, se = ux.mean_se(values)
    assert mean == pytest.approx(statistics.fmean(values), rel=1e-15)
    assert se == pytest.approx(statistics.stdev(values) / math.sqrt(3), rel=1e-14)
    assert ux.mean_se([[1.0, 3.0], [5.0, 7.0]]) == pytest.approx((4.0, math.sqrt(20 / 3) / 2))
    assert ux.mean_se([2.5]) == (2.5, 0.0)


def test_decide_close_boundaries():
    # gap 0.25, crit se 0.125: decided close at margin 0.375 (<=), far only above 0.125
    assert ux.decide_close(0.75, 0.125, 1.0, 0.375, 1.0) is True
    assert ux.decide_close(1.25, 0.0625, 1.0, 0.375, 2.0) is True  # |mean - target|
    assert ux.decide_close(0.75, 0.125, 1.0, 0.25, 1.0) is None
    assert ux.decide_close(0.75, 0.125, 1.0, 0.125, 1.0) is None  # gap - crit se = margin
    assert ux.decide_close(0.75, 0.125, 1.0, 0.0625, 1.0) is False
    assert ux.decide_close(1.25, 0.125, 1.0, 0.0625, 1.0) is False


def test_decide_positive_boundaries():
    assert ux.decide_positive(0.25, 0.125, 2.0) is None  # mean - crit se = 0
    assert ux.decide_positive(0.25, 0.0625, 2.0) is True
    assert ux.decide_positive(-0.25, 0.125, 2.0) is None  # mean + crit se = 0
    assert ux.decide_positive(-0.25, 0.0625, 2.0) is False


def _plain(se, n, gap, most=100):
    sd = se * math.sqrt(n)
    for k in range(2, most + 1):
        if t_critical(k - 1) * sd / math.sqrt(k) < abs(gap):
            return k
    return None


def test_seeds_to_decide_against_a_plain_search():
    for se, n, gap in [(0.1, 3, 0.5), (0.1, 3, -0.5), (0.2, 5, 0.1), (0.05, 2, 0.06)]:
        assert ux.seeds_to_decide(se, n, gap) == _plain(se, n, gap)
    assert ux.seeds_to_decide(0.0, 7, 0.3) == 7  # no spread: the seeds at hand decide
    # most is inclusive
    k = _plain(0.2, 5, 0.1)
    assert k is not None and k > 2
    assert ux.seeds_to_decide(0.2, 5, 0.1, most=k) == k
    assert ux.seeds_to_decide(0.2, 5, 0.1, most=k - 1) is None
    assert ux.seeds_to_decide(1.0, 4, 0.05, most=6) is None
    assert ux.seeds_to_decide(0.01, 2, 0.5) == 2  # t_1 0.0141 / sqrt 2 = 0.127 < 0.5


def test_seeds_to_decide_boundaries():
    # exactly at the threshold of n' = 4 (the same float product): decided only at 5
    se, n = 0.1, 3
    sd = se * math.sqrt(n)
    gap = t_critical(3) * sd / math.sqrt(4)
    assert t_critical(4) * sd / math.sqrt(5) < gap
    assert ux.seeds_to_decide(se, n, gap) == 5
    # first decided at n' = 101: beyond the default most = 100
    se, n = 0.1, 2
    sd = se * math.sqrt(n)
    gap = t_critical(100) * sd / math.sqrt(101) * 1.00001
    assert t_critical(99) * sd / math.sqrt(100) > gap
    assert ux.seeds_to_decide(se, n, gap) is None
    assert ux.seeds_to_decide(se, n, gap, most=101) == 101


def test_verdict_notes_spelled_out():
    # positive, decided: (0.4, 0.6, 0.5, 0.5, 0.45, 0.55)
    agrees, mean, se, note = ux.verdict([0.4, 0.6, 0.5, 0.5, 0.45, 0.55], hint="ignored")
    assert agrees is True and mean == pytest.approx(0.5)
    assert note == f"t_{{0.975,5}} = {t_critical(5):.2f}"
    # positive, undecided: mean 0.1, se 0.1 (n = 2)
    values = [0.0, 0.2]
    agrees, mean, se, note = ux.verdict(values, hint="the paper scale has 10")
    k = _plain(se, 2, mean)
    assert agrees is None and k is not None
    assert note == (
        f"t_{{0.975,1}} = {t_critical(1):.2f}; undecided with 2 seeds (about {k} seeds would "
        f"decide at this spread); the paper scale has 10"
    )
    # close to a target, undecided, needing more than 100 seeds: gap = margin - |mean - target|
    values = [0.4, 0.6, 0.45]
    agrees, mean, se, note = ux.verdict(values, target=0.5, margin=0.02)
    assert agrees is None and _plain(se, 3, 0.02 - abs(mean - 0.5)) is None
    assert note.endswith("undecided with 3 seeds (more than 100 seeds would be needed at this "
                         "spread)")  # fmt: skip
    # close to a target, decided each way
    assert ux.verdict([0.49, 0.5, 0.51], target=0.5, margin=0.1)[0] is True
    assert ux.verdict([0.89, 0.9, 0.91], target=0.5, margin=0.1)[0] is False
    # the gap used for the count, margin - |mean - target|: here 0.1 - 0.05 = 0.05
    agrees, mean, se, note = ux.verdict([0.5, 0.6], target=0.5, margin=0.1)
    k = _plain(se, 2, 0.1 - abs(mean - 0.5))
    assert agrees is None and f"about {k} seeds" in note


def _setup(seed=0):
    g = torch.Generator().manual_seed(seed)
    M = data.dictionary(LAY.d, g)
    W = torch.randn(4, LAY.d, generator=g, dtype=F64)
    U = data.task_vectors(LAY, g)
    return W, M, U


def _reference_w(W, M, u, task, m, trials, g, sign, ridge=0.0):
    z, _ = data.sample_z(LAY, [task], trials * m, g, dtype=F64)
    z = z.reshape(trials, m, LAY.d)
    y = z @ u
    if sign:
        y = torch.sign(y)
    WM = W @ M
    out = []
    for t in range(trials):
        Ft = z[t] @ WM.T
        if ridge > 0:
            A = Ft.T @ Ft + ridge * m * torch.eye(Ft.shape[1], dtype=F64)
            c = torch.linalg.solve(A, Ft.T @ y[t])
        else:
            c = torch.linalg.lstsq(Ft, y[t], driver="gelsd").solution  # least norm
        out.append(c @ WM)
    return torch.stack(out)


def test_probe_excess_mse_against_lstsq():
    W, M, U = _setup()
    for task, m in ((0, 2), (1, 6)):  # fewer labels than features, then more
        got = ux.probe_excess_mse(
            W,
            M,
            layout=LAY,
            u_star=U[task],
            task=task,
            m=m,
            trials=3,
            generator=torch.Generator().manual_seed(4),
        )
        w = _reference_w(W, M, U[task], task, m, 3, torch.Generator().manual_seed(4), False)
        sup = torch.cat([LAY.task_features(task), LAY.spurious()])
        want = ((w[:, sup] - U[task][sup]) ** 2).sum(-1)
        assert torch.allclose(got, want, atol=1e-10)
    # coordinates outside R_t u U are left out of the excess
    assert sorted(sup.tolist()) == [0, 3, 4, 5, 6]
    with pytest.raises(ValueError, match="parameter 'm' = 0 is not allowed"):
        ux.probe_excess_mse(
            W, M, layout=LAY, u_star=U[0], task=0, m=0, trials=3, generator=torch.Generator()
        )


@pytest.mark.parametrize("ridge", [0.0, 0.3])
def test_probe_accuracy_against_lstsq_and_primal_ridge(ridge):
    W, M, U = _setup(1)
    got = ux.probe_accuracy(
        W,
        M,
        layout=LAY,
        u_star=U[1],
        task=1,
        m=3,
        trials=4,
        generator=torch.Generator().manual_seed(5),
        ridge=ridge,
    )
    w = _reference_w(W, M, U[1], 1, 3, 4, torch.Generator().manual_seed(5), True, ridge)
    sup = torch.cat([LAY.task_features(1), LAY.spurious()])
    ws, u = w[:, sup], U[1][sup]
    angle = torch.arccos((ws @ u) / (ws.norm(dim=-1) * u.norm()))
    assert torch.allclose(got, 1 - angle / math.pi, atol=1e-10)
    with pytest.raises(ValueError, match="parameter 'ridge' = -0.5 is not allowed"):
        ux.probe_accuracy(
            W,
            M,
            layout=LAY,
            u_star=U[1],
            task=1,
            m=3,
            trials=4,
            generator=torch.Generator(),
            ridge=-0.5,
        )


def test_probe_accuracy_of_a_perfect_and_a_null_probe():
    # W M = I and more labels than coordinates: least squares recovers u* (no excess)
    M = torch.eye(LAY.d, dtype=F64)
    W = torch.eye(LAY.d, dtype=F64)
    U = data.task_vectors(LAY, torch.Generator().manual_seed(0))
    ex = ux.probe_excess_mse(
        W,
        M,
        layout=LAY,
        u_star=U[0],
        task=0,
        m=12,
        trials=2,
        generator=torch.Generator().manual_seed(1),
    )
    assert float(ex.max()) < 1e-20
    # a representation blind to the task: w = 0, the cosine is clamped (no NaN), accuracy 1/2
    W0 = torch.zeros(2, LAY.d, dtype=F64)
    acc = ux.probe_accuracy(
        W0,
        M,
        layout=LAY,
        u_star=U[0],
        task=0,
        m=5,
        trials=2,
        generator=torch.Generator().manual_seed(1),
    )
    assert torch.allclose(acc, torch.full((2,), 0.5, dtype=F64))


def test_tradeoff_point_sweep_and_errors_draw_in_order():
    W, M, U = _setup(2)
    W2 = W + 0.5

    def acc(W_, t, m, g, ridge=0.0):
        return float(
            ux.probe_accuracy(
                W_, M, layout=LAY, u_star=U[t], task=t, m=m, trials=3, generator=g, ridge=ridge
            ).mean()
        )

    g = torch.Generator().manual_seed(9)
    want = (1 - acc(W, 0, 2, g, 0.1), sum(acc(W, t, 4, g, 0.1) for t in range(2)) / 2)
    got = ux.tradeoff_point(
        W,
        M,
        layout=LAY,
        U=U,
        target=0,
        m_target=2,
        m_univ=4,
        trials=3,
        generator=torch.Generator().manual_seed(9),
        ridge=0.1,
    )
    assert got == pytest.approx(want, rel=1e-12)
    g = torch.Generator().manual_seed(9)
    want = (1 - acc(W, 1, 3, g), sum(acc(W, t, 2, g) for t in range(2)) / 2)
    assert ux.tradeoff_point(
        W,
        M,
        layout=LAY,
        U=U,
        target=1,
        m_target=3,
        m_univ=2,
        trials=3,
        generator=torch.Generator().manual_seed(9),
    ) == (pytest.approx(want, rel=1e-12))
    # the sweep: K in increasing order, seed_of(K, seed), the target is task 0
    pts = ux.tradeoff_sweep(
        {2: [W2, W], 1: [W, W2]},
        M,
        layout=LAY,
        U=U,
        m_target=2,
        m_univ=4,
        trials=3,
        seed_of=lambda K, sd: 10 * K + sd,
    )
    assert pts.shape == (2, 2, 2) and pts.dtype == np.float64
    rows = [[(1, 0, W), (1, 1, W2)], [(2, 0, W2), (2, 1, W)]]
    for i, row in enumerate(rows):
        for j, (K, sd, W_) in enumerate(row):
            g = torch.Generator().manual_seed(10 * K + sd)
            want = ux.tradeoff_point(
                W_, M, layout=LAY, U=U, target=0, m_target=2, m_univ=4, trials=3, generator=g
            )
            assert tuple(pts[i][j]) == pytest.approx(want, rel=1e-12)
    pts = ux.tradeoff_sweep(
        {1: [W]},
        M,
        layout=LAY,
        U=U,
        m_target=2,
        m_univ=4,
        trials=3,
        seed_of=lambda K, sd: 5,
        ridge=0.2,
    )
    g = torch.Generator().manual_seed(5)
    assert tuple(pts[0][0]) == pytest.approx(
        ux.tradeoff_point(
            W, M, layout=LAY, U=U, target=0, m_target=2, m_univ=4, trials=3, generator=g, ridge=0.2
        ),
        rel=1e-12,
    )
    errs = ux.target_errors(
        [W, W2], M, layout=LAY, u_star=U[0], m=3, trials=3, seed_of=lambda sd: 20 + sd, ridge=0.2
    )
    for sd, W_ in enumerate([W, W2]):
        assert errs[sd] == pytest.approx(1 - acc(W_, 0, 3, torch.Generator().manual_seed(20 + sd),
                                                 0.2), rel=1e-12)  # fmt: skip
    errs = ux.target_errors([W], M, layout=LAY, u_star=U[0], m=3, trials=3, seed_of=lambda sd: 20)
    assert errs[0] == pytest.approx(1 - acc(W, 0, 3, torch.Generator().manual_seed(20)))


def test_excess_curve_seeds_by_m():
    W, M, U = _setup(3)
    curve = ux.excess_curve(
        W, M, layout=LAY, u_star=U[1], task=1, m_values=[2, 5], trials=3, seed_of=lambda m: 30 + m
    )
    for m, value in zip([2, 5], curve):
        g = torch.Generator().manual_seed(30 + m)
        want = float(
            ux.probe_excess_mse(
                W, M, layout=LAY, u_star=U[1], task=1, m=m, trials=3, generator=g
            ).mean()
        )
        assert value == pytest.approx(want, rel=1e-12)


def test_a_probe_parallel_to_the_task_has_accuracy_one():
    # one feature, z . u*: the least-squares w is a positive multiple of u*, so the angle is 0;
    # in floats the cosine comes out 1 + 2^-52 at this seed, and the clamp keeps arccos finite
    U = data.task_vectors(LAY, torch.Generator().manual_seed(0))
    W = U[0][None, :].clone()
    M = torch.eye(LAY.d, dtype=F64)
    acc = ux.probe_accuracy(
        W,
        M,
        layout=LAY,
        u_star=U[0],
        task=0,
        m=5,
        trials=1,
        generator=torch.Generator().manual_seed(1),
    )
    assert float(acc[0]) == 1.0


def test_probes_with_one_label_and_a_task_vector_of_any_norm():
    W, M, U = _setup(4)
    # m = 1 is allowed: a single label
    got = ux.probe_excess_mse(
        W,
        M,
        layout=LAY,
        u_star=U[0],
        task=0,
        m=1,
        trials=2,
        generator=torch.Generator().manual_seed(2),
    )
    w = _reference_w(W, M, U[0], 0, 1, 2, torch.Generator().manual_seed(2), False)
    sup = torch.cat([LAY.task_features(0), LAY.spurious()])
    assert torch.allclose(got, ((w[:, sup] - U[0][sup]) ** 2).sum(-1), atol=1e-10)
    # the accuracy of sign(u* . z) labels does not depend on the norm of u*
    one = ux.probe_accuracy(
        W,
        M,
        layout=LAY,
        u_star=U[1],
        task=1,
        m=3,
        trials=2,
        generator=torch.Generator().manual_seed(3),
    )
    three = ux.probe_accuracy(
        W,
        M,
        layout=LAY,
        u_star=3 * U[1],
        task=1,
        m=3,
        trials=2,
        generator=torch.Generator().manual_seed(3),
    )
    assert torch.allclose(one, three, atol=1e-12)
