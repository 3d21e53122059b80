"""companions.icl_scale.parity against small cases worked out by hand and loop-by-loop
reimplementations (issue 23, mutation testing).

- ``construction`` / ``construction_small`` / ``four_heads``: the heads written out for d = 2, 4
  from Theorem 5.5.1's formulas (and the docstring of the five-head network).
- ``output`` / ``margins`` / ``tasks`` / ``task_rate_threshold`` / ``norm_formula``: by hand.
- ``search_small_norm``, ``projected_noise``, ``sample_hidden``, ``evaluate``: the same draws from
  the generator, the arithmetic written pattern by pattern and trial by trial.
- ``smaller_norm_search`` / ``behaviour``: the seeds they hand out, with the search replaced by
  known networks.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction as F

import pytest
import torch

from companions.icl_scale import parity as pa

F64 = torch.float64


def test_log2_accepts_powers_of_two_from_two():
    assert pa._log2(2, "d") == 1 and pa._log2(16, "d") == 4
    for bad in (0, 1, 3, 6, 12):
        with pytest.raises(ValueError, match=f"parameter 'x' = {bad} is not allowed"):
            pa._log2(bad, "x")


def test_construction_d4_by_hand():
    g = F(1, 8)
    c = F(2)  # 1 / (4 gamma)
    a, V = pa.construction(4, g)
    # head i (i = 1, 2): V_ll = (2 digit_i(l - 1) - 1) c, digits read from the least significant
    h1 = [-c, c, -c, c]
    h2 = [-c, -c, c, c]
    pos = [-2 * c] * 4  # positive_scale = v2 = 2
    assert a == [-1, -1, 1, -1, -1, 1]
    assert V == [h1, h2, pos, [-x for x in h1], [-x for x in h2], [-x for x in pos]]
    a, V = pa.construction(2, F(1, 4), positive_scale=3)
    assert a == [-1, 1, -1, 1] and V == [[-1, 1], [-3, -3], [1, -1], [3, 3]]


def test_construction_small_by_hand():
    g = F(1, 4)  # c = 1
    a, V = pa.construction_small(2, 4, g)  # v1 = 1, v2 = 2: neurons {1, 3, 4, 6}
    assert a == [-1, 1, -1, 1]
    assert V == [[-1, 1, -1, 1], [-1] * 4, [1, -1, 1, -1], [1] * 4]
    a, V = pa.construction_small(4, 4, g)  # k = d: every neuron, as construction(d)
    assert (a, V) == pa.construction(4, g)
    with pytest.raises(ValueError, match="parameter 'k' = 8 is not allowed: expected k <= d = 4"):
        pa.construction_small(8, 4, g)
    with pytest.raises(ValueError, match="'k'"):
        pa.construction_small(3, 4, g)


def test_output_and_margins_by_hand():
    a = [1, -1]
    V = [[F(1), F(2), F(-1)], [F(3), F(0), F(1)]]
    g = F(1, 4)  # 2 gamma = 1/2
    # task (0, 2), phi = (+1, -1): head 1 sees 1/2 (1 + 1) = 1, head 2 sees 1/2 (3 - 1) = 1
    assert pa.output(a, V, gamma=g, i=0, j=2, phi_i=1, phi_j=-1) == 1 - 1
    # phi = (-1, -1): head 1 sees 1/2 (-1 + 1) = 0, head 2: 1/2 (-3 - 1) < 0
    assert pa.output(a, V, gamma=g, i=0, j=2, phi_i=-1, phi_j=-1) == 0
    # task (1, 0), phi = (+1, +1): head 1: 1/2 (2 + 1) = 3/2, head 2: 1/2 (0 + 3) = 3/2
    assert pa.output(a, V, gamma=g, i=1, j=0, phi_i=1, phi_j=1) == 0
    # phi = (+1, -1): head 1: 1/2 (2 - 1) = 1/2, head 2: 1/2 (0 - 3) -> 0
    assert pa.output(a, V, gamma=g, i=1, j=0, phi_i=1, phi_j=-1) == F(1, 2)
    m = pa.margins(a, V, g, [(1, 0)])
    assert set(m) == {(1, 0, p, q) for p, q in pa.SIGNS}
    assert m[1, 0, 1, -1] == -F(1, 2)  # y = -1
    assert m[1, 0, -1, 1] == -pa.output(a, V, gamma=g, i=1, j=0, phi_i=-1, phi_j=1)
    assert pa.SIGNS == ((1, 1), (1, -1), (-1, 1), (-1, -1))


def test_tasks_and_patterns():
    s1, s2 = pa.tasks(3, 2)
    assert s1 == [(0, 1), (1, 0)]
    assert s2 == [(0, 2), (1, 2), (2, 0), (2, 1)]
    s1, s2 = pa.tasks(3, 1)
    assert s1 == [] and len(s2) == 6
    assert pa.all_patterns(3) == [(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)]


def test_norms_and_threshold_by_hand():
    assert pa.squared_norm([[F(1), F(-2)], [F(3)]]) == 14
    # v (v + 1) d / (8 gamma^2): v = 2, d = 4, gamma = 1/4 -> 24 / (8 / 16) = 48
    assert pa.norm_formula(4, 2, F(1, 4)) == 48
    assert pa.norm_formula(4, 2, F(1, 4)) == pa.squared_norm(pa.construction(4, F(1, 4))[1])
    # (1/4 - 1/8) / (3 (1/4 + 1/8) + 1/4 - 1/8) = (1/8) / (9/8 + 1/8) = 1/10
    assert pa.task_rate_threshold(3, F(1, 8)) == F(1, 10)
    assert pa.task_rate_threshold(2, 0) == F(1, 2)  # (1/4) / (1/4 + 1/4)


def test_four_heads_by_hand():
    a, V = pa.four_heads(4, F(1, 4))  # c = 1
    assert a == [1, 1, -1, -1]
    assert V == [[3] * 4, [-3] * 4, [-3, -1, 1, 3], [3, 1, -1, -3]]


def test_rescale_to_margin_one():
    g = F(1, 4)
    a, V = pa.construction(4, g)
    pats = pa.all_patterns(4)
    a2, V2 = pa.rescale_to_margin_one(a, [[F(5, 2) * x for x in h] for h in V], g, pats)
    assert a2 == a and V2 == V  # the construction's smallest margin is 1
    zero = [[F(0)] * 4 for _ in a]
    with pytest.raises(ValueError, match="misclassifies"):
        pa.rescale_to_margin_one(a, zero, g, pats)  # smallest margin exactly 0
    with pytest.raises(ValueError, match="misclassifies"):
        pa.rescale_to_margin_one([-x for x in a], V, g, pats)  # every margin negated


def _search_reference(d, a, gamma, steps, g, lam=1e-4, lr=0.05):
    pats = [(i, j, p, q) for i in range(d) for j in range(d) if i != j for p, q in pa.SIGNS]
    V = torch.randn(len(a), d, generator=g, dtype=F64).requires_grad_()
    opt = torch.optim.Adam([V], lr=lr)
    for _ in range(steps):
        hinge = []
        for i, j, p, q in pats:
            out = sum(
                a[h] * torch.relu(2 * float(gamma) * (V[h, i] * p + V[h, j] * q))
                for h in range(len(a))
            )
            hinge.append(torch.relu(1 - p * q * out))
        loss = torch.stack(hinge).mean() + lam * (V * V).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return V.detach()


def test_search_small_norm_is_adam_on_the_mean_hinge_plus_the_penalty():
    a = [-1, -1, 1, -1, -1, 1]
    got = pa.search_small_norm(
        3, a, gamma=F(1, 5), steps=4, generator=torch.Generator().manual_seed(0)
    )
    ref = _search_reference(3, a, F(1, 5), 4, torch.Generator().manual_seed(0))
    want = [[F(float(x)).limit_denominator(1000) for x in row] for row in ref]
    assert got == want
    assert all(x.denominator <= 1000 for row in got for x in row)
    got = pa.search_small_norm(
        3, a, gamma=F(1, 5), steps=3, generator=torch.Generator().manual_seed(1), lam=0.5, lr=0.3
    )
    ref = _search_reference(3, a, F(1, 5), 3, torch.Generator().manual_seed(1), lam=0.5, lr=0.3)
    assert got == [[F(float(x)).limit_denominator(1000) for x in row] for row in ref]


def test_column_space_rank():
    assert pa.column_space_rank([[F(1), F(0), F(0)], [F(2), F(0), F(0)], [F(0), F(1), F(0)]]) == 2
    assert pa.column_space_rank([[F(1), F(2)], [F(-1), F(-2)]]) == 1


def _projector(V):
    D = torch.tensor([[float(x) for x in h] for h in V], dtype=F64).T
    U, s, _ = torch.linalg.svd(D, full_matrices=False)
    B = U[:, s > 1e-9 * s.max()]  # orthonormal basis of the column space
    return B @ B.T


def test_projected_noise_by_hand():
    V = [[F(1), F(1), F(0)], [F(-1), F(-1), F(0)], [F(0), F(0), F(2)]]
    M, trials = 3, 5
    out = pa.projected_noise(V, M, trials, torch.Generator().manual_seed(4), chunk=7)
    g = torch.Generator().manual_seed(4)
    P = _projector(V)
    for t in range(trials):  # chunk // (M d) = 0 -> one trial per draw
        xi = torch.randint(0, 2, (1, M, 3), generator=g).double()[0] * 2 - 1
        Xi = xi.sum(0) / M
        assert float(out[t]) == pytest.approx(float(Xi @ P @ Xi), abs=1e-12)
    assert out.shape == (trials,)


def test_sample_hidden_reproduces_its_draws():
    trials, M, d, gamma = 4, 3, 5, 0.15
    phi = pa.sample_hidden(trials, M, d, (3, 1), gamma, torch.Generator().manual_seed(8))
    g = torch.Generator().manual_seed(8)
    base = torch.randint(0, 2, (trials, M, d), generator=g).double() * 2 - 1
    k = torch.multinomial(
        torch.tensor([0.25 + gamma, 0.25, 0.25, 0.25 - gamma], dtype=F64), trials * M,
        replacement=True, generator=g,
    )  # fmt: skip
    for n in range(trials * M):
        t, m = divmod(n, M)
        p, q = pa.SIGNS[int(k[n])]
        want = base[t, m].clone()
        want[3], want[1] = p, q
        assert torch.equal(phi[t, m], want)
    # the pair's law: (-1, -1) never drawn at gamma = 1/4, (1, 1) half the time
    phi = pa.sample_hidden(4000, 1, 2, (0, 1), 0.25, torch.Generator().manual_seed(0))
    pairs = phi[:, 0]
    assert not bool(((pairs[:, 0] == -1) & (pairs[:, 1] == -1)).any())
    assert abs(float(((pairs[:, 0] == 1) & (pairs[:, 1] == 1)).double().mean()) - 0.5) < 0.04


def _evaluate_reference(nets, d, k, gamma, M, flip, trials, g):
    s1, _ = pa.tasks(d, k)
    which = torch.randint(0, len(s1), (trials,), generator=g)
    hinge = torch.zeros(len(nets), trials, dtype=F64)
    correct = torch.zeros(len(nets), trials, dtype=F64)
    for t_id, (i, j) in enumerate(s1):
        sel = [t for t in range(trials) if int(which[t]) == t_id]
        if not sel:
            continue
        phi = pa.sample_hidden(len(sel), M + 1, d, (i, j), gamma, g)
        flips = torch.rand(len(sel), M, generator=g, dtype=F64) < flip
        for r, t in enumerate(sel):
            h = torch.zeros(d, dtype=F64)
            for m in range(M):
                y = phi[r, m, i] * phi[r, m, j]
                h += (-y if flips[r, m] else y) * phi[r, m] / M
            q = phi[r, M]
            yq = q[i] * q[j]
            for n, (a, V) in enumerate(nets):
                out = sum(
                    a[hd] * max(0.0, sum(float(V[hd][x]) * float(h[x] * q[x]) for x in range(d)))
                    for hd in range(len(a))
                )
                hinge[n, t] = max(0.0, 1 - float(yq) * out)
                correct[n, t] = float((out > 0) == (yq > 0) and out != 0)
    return hinge, correct


@pytest.mark.parametrize("flip", [0.0, 0.3])
def test_evaluate_trial_by_trial(flip):
    g_ = F(1, 5)
    nets = [pa.construction_small(2, 4, g_), pa.construction(4, g_)]
    # k = 4: twelve tasks for five trials, so some tasks draw no trial
    got = pa.evaluate(
        nets,
        4,
        k=4,
        gamma=0.2,
        M=3,
        flip=flip,
        trials=5,
        generator=torch.Generator().manual_seed(6),
    )
    ref = _evaluate_reference(nets, 4, 4, 0.2, 3, flip, 5, torch.Generator().manual_seed(6))
    assert torch.allclose(got[0], ref[0], atol=1e-12)
    assert torch.equal(got[1], ref[1])


def test_mean_se_by_hand():
    m, se = pa.mean_se(torch.tensor([1.0, 2.0, 6.0], dtype=F64))
    assert m == 3.0 and se == pytest.approx(math.sqrt(7 / 3))


def test_smaller_norm_search_keeps_the_zero_loss_starts(monkeypatch):
    g_ = F(1, 4)
    good = pa.construction(4, g_)[1]
    bad = [[F(0)] * 4 for _ in good]  # zero margins
    scaled = [[3 * x for x in h] for h in good]
    runs = iter([scaled, bad, good])
    calls, seeds = [], []

    def fake(d, a, gamma, steps, generator):
        calls.append((d, tuple(a), gamma, steps, generator))
        return next(runs)

    def generator_for(s):
        seeds.append(s)
        return s

    monkeypatch.setattr(pa, "search_small_norm", fake)
    found = pa.smaller_norm_search(3, 17, g_, generator_for, signs=(-1, -1, 1, -1, -1, 1))
    assert found == [pa.norm_formula(4, 2, g_)] * 2  # rescaled to margin one: the construction's
    assert seeds == [50, 51, 52]
    assert calls[0][:4] == (4, (-1, -1, 1, -1, -1, 1), g_, 17)
    runs = iter([scaled])
    assert pa.smaller_norm_search(1, 5, g_, generator_for) == [pa.norm_formula(4, 2, g_)]
    assert calls[-1][1] == (-1, -1, 1, -1, -1, 1)  # the default signs
    monkeypatch.setenv("COMPANIONS_DRY_RUN", "1")  # a dry run makes the first start only
    seeds.clear()
    runs = iter([scaled, good])
    assert len(pa.smaller_norm_search(2, 5, g_, generator_for)) == 1 and seeds == [50]


def test_behaviour_runs_evaluate_per_cell_with_its_seed():
    g_ = F(1, 5)
    nets = [pa.construction_small(2, 4, g_), pa.construction(4, g_)]
    seeds = []

    def generator_for(s):
        seeds.append(s)
        return torch.Generator().manual_seed(s)

    out = pa.behaviour(
        nets,
        4,
        k=2,
        gamma=g_,
        eval_m=[2, 3],
        flips=[0.0, 0.2],
        trials=30,
        generator_for=generator_for,
    )
    assert seeds == [100, 101, 110, 111]
    assert list(out) == [(2, 0.0), (2, 0.2), (3, 0.0), (3, 0.2)]
    for i, M in enumerate([2, 3]):
        for j, f in enumerate([0.0, 0.2]):
            hinge, correct = pa.evaluate(
                nets,
                4,
                k=2,
                gamma=0.2,
                M=M,
                flip=f,
                trials=30,
                generator=torch.Generator().manual_seed(100 + 10 * i + j),
            )
            got = out[M, f]
            assert torch.equal(got[0], hinge) and torch.equal(got[1], correct)
            for est, diff in ((got[2], hinge[1] - hinge[0]), (got[3], correct[0] - correct[1])):
                assert (est.mean, est.se, est.n) == (
                    float(diff.mean()),
                    float(diff.std() / math.sqrt(30)),
                    30,
                )


def test_patterns_cover_every_ordered_pair():
    assert set(pa.all_patterns(4)) == set(itertools.permutations(range(4), 2))


def test_search_with_no_steps_rounds_the_draws_to_denominators_up_to_1000():
    # seed 9 draws 0.63335..., whose best approximation is 19/30 up to denominator 1000 and
    # 634/1001 up to 1001 (found by a search over seeds, checked here)
    a = [-1, -1, 1, -1, -1, 1]
    got = pa.search_small_norm(
        3, a, gamma=F(1, 5), steps=0, generator=torch.Generator().manual_seed(9)
    )
    V = torch.randn(6, 3, generator=torch.Generator().manual_seed(9), dtype=F64)
    assert got == [[F(float(x)).limit_denominator(1000) for x in row] for row in V]
    assert any(
        F(float(x)).limit_denominator(1000) != F(float(x)).limit_denominator(1001)
        for x in V.flatten()
    )


def test_column_space_rank_in_float64():
    # columns (1, 1) and (1, 1 + 1e-10): independent in float64, equal once rounded to float32
    V = [[F(1), F(1)], [F(1), F(1) + F(1, 10**10)]]
    assert pa.column_space_rank(V) == 2


def test_margins_stay_exact_fractions():
    g = F(1, 3)  # 2 gamma = 2/3: thirds that a float cannot hold
    a, V = pa.construction(4, g)
    m = pa.margins(a, V, g, pa.all_patterns(4))
    assert all(isinstance(x, F) for x in m.values())
    assert min(m.values()) == 1
    # one pattern by hand: task (0, 1), phi = (1, 1), y = 1, c = 3/4: heads see 2/3 c (V_00 + V_11)
    # head 1 (-c, c): 0; head 2 (-c, -c): < 0 -> 0; head 3 (-2c, -2c): < 0; mirrors: head 4
    # (c, -c): 0; head 5 (c, c): 2/3 * 3/2 = 1, a = -1; head 6 (2c, 2c): 2, a = +1 -> g = 1
    assert m[0, 1, 1, 1] == 1
    a1 = [1, -1]
    V1 = [[F(1, 7), F(2, 7)], [F(0), F(0)]]
    assert pa.margins(a1, V1, g, [(0, 1)])[0, 1, 1, 1] == F(2, 3) * F(3, 7)


def test_rescale_refusal_message():
    with pytest.raises(
        ValueError, match="^the network misclassifies a pattern: it cannot be rescaled$"
    ):
        pa.rescale_to_margin_one([1], [[F(0), F(0)]], F(1, 4), [(0, 1)])


def test_smaller_norm_search_checks_the_rescaled_margin(monkeypatch):
    g_ = F(1, 4)
    good = pa.construction(4, g_)[1]
    monkeypatch.setattr(pa, "search_small_norm", lambda *args, **kwargs: good)
    # a rescaling that misses margin one (here: doubling) is caught by the exact check
    monkeypatch.setattr(
        pa, "rescale_to_margin_one", lambda a, V, g, p: (a, [[2 * x for x in h] for h in V])
    )
    with pytest.raises(ArithmeticError, match="^rescaled network does not have smallest margin 1$"):
        pa.smaller_norm_search(1, 3, g_, lambda s: s)


def test_constructions_name_the_parameter_they_refuse():
    msg = "^parameter '{}' = {} is not allowed: expected a power of 2, >= 2$"
    with pytest.raises(ValueError, match=msg.format("d", 6)):
        pa.construction(6, F(1, 4))
    with pytest.raises(ValueError, match=msg.format("k", 3)):
        pa.construction_small(3, 4, F(1, 4))
    with pytest.raises(ValueError, match=msg.format("d", 12)):
        pa.construction_small(2, 12, F(1, 4))


def test_evaluate_keeps_the_heads_in_float64():
    # diagonals of thirds: a float32 copy of V would move the outputs by about 1e-8
    nets = [([1, -1], [[F(1, 3), F(-2, 3), F(1, 3), F(0)], [F(-1, 3), F(1, 3), F(0), F(1, 3)]])]
    got = pa.evaluate(
        nets, 4, k=4, gamma=0.2, M=3, flip=0.1, trials=6, generator=torch.Generator().manual_seed(3)
    )
    ref = _evaluate_reference(nets, 4, 4, 0.2, 3, 0.1, 6, torch.Generator().manual_seed(3))
    assert torch.allclose(got[0], ref[0], rtol=0, atol=1e-15)
