"""Unit tests of companions.icl_scale: each one fails on a plausible wrong implementation."""

from fractions import Fraction as F

import pytest
import sympy as sp
import torch

import companions
from companions.icl_scale import data, model, theory
from companions.icl_scale import experiments as ex

LAM = [4.0, 2.0, 1.0, 0.5]


@pytest.fixture
def basis():
    return data.random_orthogonal(4, torch.Generator().manual_seed(1))


def test_random_orthogonal_and_covariance(basis):
    assert torch.allclose(basis @ basis.T, torch.eye(4, dtype=torch.float64), atol=1e-12)
    Lam = data.covariance(LAM, basis)
    assert torch.allclose(torch.linalg.eigvalsh(Lam), torch.tensor(LAM[::-1], dtype=Lam.dtype))
    S = data.covariance_sqrt(LAM, basis)
    assert torch.allclose(S @ S, Lam, atol=1e-12)
    with pytest.raises(ValueError, match="'eigenvalues'"):
        data.covariance([1.0, 2.0], torch.eye(2, dtype=torch.float64))


def test_embed_layout():
    X = torch.arange(6.0).reshape(1, 3, 2)
    y = torch.tensor([[7.0, 8.0, 9.0]])
    xq = torch.tensor([[-1.0, -2.0]])
    E = data.embed(X, y, xq)
    assert E.shape == (1, 3, 4)
    assert torch.equal(E[0, :2, 0], X[0, 0]) and torch.equal(E[0, :2, 3], xq[0])
    assert torch.equal(E[0, 2], torch.tensor([7.0, 8.0, 9.0, 0.0]))  # the query's label slot is 0


def test_prompts_fixed_task_noise_and_flips(basis):
    w = torch.tensor([1.0, -2.0, 0.5, 0.0], dtype=torch.float64)
    p = data.prompts(
        4000,
        5,
        eigenvalues=LAM,
        Q=basis,
        generator=torch.Generator().manual_seed(2),
        w=w,
        flip=0.25,
    )
    clean = (p.X @ w.unsqueeze(-1)).squeeze(-1)
    assert torch.allclose(p.yq, p.xq @ w)  # the query label is never flipped
    assert torch.allclose(p.y.abs(), clean.abs())
    flipped = float((torch.sign(p.y) != torch.sign(clean)).double().mean())
    assert abs(flipped - 0.25) < 0.02
    q = data.prompts(
        4000,
        5,
        eigenvalues=LAM,
        Q=basis,
        generator=torch.Generator().manual_seed(2),
        w=w,
        sigma=0.5,
    )
    resid = q.y - (q.X @ w.unsqueeze(-1)).squeeze(-1)
    assert abs(float(resid.std()) - 0.5) < 0.02
    with pytest.raises(ValueError, match="'flip'"):
        data.prompts(2, 2, eigenvalues=LAM, Q=basis, generator=torch.Generator(), flip=1.5)


def _random_E(d=3, n=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    E = torch.randn(2, d + 1, n + 1, generator=g, dtype=torch.float64)
    E[:, d, n] = 0
    W_PV = torch.randn(d + 1, d + 1, generator=g, dtype=torch.float64)
    W_KQ = torch.randn(d + 1, d + 1, generator=g, dtype=torch.float64)
    return E, W_PV, W_KQ


def test_eq_5_2_corrected_is_eq_5_1s_entry_for_any_blocks():
    E, W_PV, W_KQ = _random_E()
    full = model.prediction(E, W_PV, W_KQ, 5)
    assert torch.allclose(model.lsa(E, W_PV, W_KQ, 5)[..., -1, -1], full, rtol=1e-12)
    assert torch.allclose(model.prediction_eq_5_2(E, W_PV, W_KQ, 5), full, rtol=1e-12)
    # the residual E's entry (d+1, N+1) is 0; with a nonzero label slot the two would differ
    E2 = E.clone()
    E2[:, 3, 5] = 1.0
    assert not torch.allclose(model.prediction(E2, W_PV, W_KQ, 5), full)


def test_reduced_prediction_is_eq_5_1_with_eq_5_3_blocks():
    g = torch.Generator().manual_seed(3)
    X = torch.randn(4, 6, 3, generator=g, dtype=torch.float64)
    y = torch.randn(4, 6, generator=g, dtype=torch.float64)
    xq = torch.randn(4, 3, generator=g, dtype=torch.float64)
    U = torch.randn(3, 3, generator=g, dtype=torch.float64)  # not symmetric: U vs U^T matters
    W_PV, W_KQ = model.blocks(U, 0.7)
    full = model.prediction(data.embed(X, y, xq), W_PV, W_KQ, 6)
    assert torch.allclose(model.reduced_prediction(X, y, xq, U, 0.7, 6), full, rtol=1e-12)
    assert not torch.allclose(model.reduced_prediction(X, y, xq, U.T, 0.7, 6), full)


def _token_major_output(Z, P, Qm):
    """A second reading of one LSA layer, in the token-major layout of Ahn et al. (as in the
    public repository chengxiang/LinearTransformer, rewritten here): tokens are rows ``z_m``; the
    keys exclude the query token; the value matrix is ``[[P, 0], [0, 1]]`` and the key-query
    matrix ``[[Qm, 0], [0, 0]]``; output divided by N."""
    B, n1, d1 = Z.shape
    n, d = n1 - 1, d1 - 1
    Pf = torch.zeros(d1, d1, dtype=Z.dtype)
    Pf[:d, :d], Pf[d, d] = P, 1.0
    Qf = torch.zeros(d1, d1, dtype=Z.dtype)
    Qf[:d, :d] = Qm
    mask = torch.ones(n1, dtype=Z.dtype)
    mask[n] = 0
    attn = torch.einsum("bni,ij,bmj->bnm", Z, Qf, Z) * mask
    return Z + torch.einsum("bnm,bmi->bni", attn, Z @ Pf.T) / n


def test_token_major_second_reading_agrees_with_eq_5_1():
    g = torch.Generator().manual_seed(4)
    E, _, _ = _random_E(seed=5)
    Qm = torch.randn(3, 3, generator=g, dtype=torch.float64)
    out = _token_major_output(E.transpose(-1, -2), torch.zeros(3, 3, dtype=E.dtype), Qm)
    # their prediction slot is entry (N, d) of Z; eq. (5.1)'s is (d+1, N+1) of E, with U = Qm^T
    ours = model.prediction(E, *model.blocks(Qm.T, 1.0), 5)
    assert torch.allclose(out[:, 5, 3], ours, rtol=1e-12)


def test_low_rank_lsa_has_rank_r_and_names_r():
    net = model.LowRankLSA(5, 2, torch.Generator().manual_seed(0))
    assert torch.linalg.matrix_rank(net.U.detach()) == 2
    with pytest.raises(ValueError, match="'r'"):
        model.LowRankLSA(3, 4, torch.Generator())


def _z(est, exact):
    return (est.mean - float(exact)) / est.se


def test_lemma_5_1_against_monte_carlo(basis):
    g = torch.Generator().manual_seed(6)
    U = torch.randn(4, 4, generator=g, dtype=torch.float64) * 0.3
    Lam = data.covariance(LAM, basis)
    est = ex.mc_population_loss(U, 0.7, eigenvalues=LAM, Q=basis, N=8, trials=60_000, generator=g)
    assert abs(_z(est, theory.population_loss(U, 0.7, Lam, 8))) < 4
    # a plausible bug, Gamma = Lambda (the N -> infinity limit), is many standard errors off
    wrong = theory.population_loss(U, 0.7, Lam, 10**9)
    assert abs(_z(est, wrong)) > 6
    G = theory.gamma(Lam, 8)
    assert torch.allclose(G, 9 / 8 * Lam + 7.5 / 8 * torch.eye(4, dtype=Lam.dtype))


def test_lemma_d1_exact_and_float(basis):
    Q = theory.cayley_orthogonal(3, 2)
    D = sp.diag(sp.Rational(9, 4), 1, sp.Rational(1, 4))
    Lam, Lam_sqrt = Q * D * Q.T, Q * sp.sqrt(D) * Q.T
    U = sp.Matrix(3, 3, [1, -2, sp.Rational(1, 3), 0, 2, 1, -1, 1, sp.Rational(1, 2)])
    for u in (sp.Rational(3, 5), -2):
        lhs = theory.reduced_loss(U, u, Lam, 5) - theory.minimum_reduced_loss(Lam, 5)
        assert sp.simplify(lhs - theory.gap_d4(U, u, Lam, Lam_sqrt, 5)) == 0
    Ginv = theory.gamma(Lam, 5).inv()
    assert theory.reduced_loss(Ginv, 1, Lam, 5) == theory.minimum_reduced_loss(Lam, 5)


def test_theorem_5_4_1_values_and_optimality(basis):
    v = theory.optimal_v([F(4), F(2), F(1), F(1, 2)], 16, 2)
    assert v == [F(32, 151), F(32, 83), 0, 0]
    assert theory.optimal_v([F(4), F(2), F(1), F(1, 2)], 16, 4)[3] == 1
    lam = [sp.Rational(x) for x in (4, 2, 1, sp.Rational(1, 2))]
    assert theory.optimal_loss(lam, 16, 2) == sp.Rational(64347, 50132)
    Lam = data.covariance(LAM, basis)
    for r in range(5):
        Ustar = theory.optimal_U(basis, LAM, 16, r, c=2.0)
        L = float(theory.population_loss(Ustar, 0.5, Lam, 16))
        assert abs(L - float(theory.optimal_loss(LAM, 16, r))) < 1e-12
    losses = theory.best_subset_losses(lam, 16, 2)
    assert min(losses, key=losses.get) == (0, 1)
    assert sorted(losses.values())[1] > losses[(0, 1)]
    with pytest.raises(ValueError, match="'r'"):
        theory.optimal_v(LAM, 16, 5)
    with pytest.raises(ValueError, match="'eigenvalues'"):
        theory.optimal_v([1.0, 2.0], 16, 1)


def test_symbolic_stationary_point_and_g():
    sol, claimed = theory.stationary_point_symbolic(3)
    assert all(sp.simplify(a - b) == 0 for a, b in zip(sol, claimed))
    dg, numer = theory.g_derivative()
    x, N, T = sp.symbols("x N T", positive=True)
    assert sp.simplify(numer - N * x * ((N + 1) * x + 2 * T)) == 0


def test_theorem_5_4_2_matches_the_maps_table_and_this_books_form():
    lam, w = [4.0, 2.0, 1.0, 1.0], [1.0, -0.5, 0.8, 0.3]
    expected = [5.2300, 2.3844, 2.3509, 2.1250, 2.2747]
    for r in range(5):
        s, xi = w[:r] + [0.0] * (4 - r), [0.0] * r + w[r:]
        val = theory.theorem_5_4_2(lam, 8, M=6, sigma2=0.49, s=s, xi=xi, r=r)
        assert abs(val - expected[r]) < 1e-4
        mine = theory.evaluation_loss(lam, theory.optimal_v(lam, 8, r), w, 6, 0.49)
        assert abs(mine - val) < 1e-12
    with pytest.raises(ValueError, match="'s'"):
        theory.theorem_5_4_2(lam, 8, M=6, sigma2=0.49, s=w, xi=[0.0] * 4, r=2)


def test_theorem_5_4_3_exact():
    lam = [F(4), F(2), F(1), F(1)]
    s = [F(6, 5), 0, 0, 0]
    gap = theory.theorem_5_4_3(lam, 8, M=8, sigma2=0, s=s, r=1, r2=4)
    assert gap == F(18, 25) * (F(64, 169) + F(128, 289))
    for r2 in range(1, 5):
        a = theory.theorem_5_4_2(lam, 8, M=8, sigma2=F(1, 4), s=s, xi=[0] * 4, r=r2)
        b = theory.theorem_5_4_2(lam, 8, M=8, sigma2=F(1, 4), s=s, xi=[0] * 4, r=1)
        assert a - b == theory.theorem_5_4_3(lam, 8, M=8, sigma2=F(1, 4), s=s, r=1, r2=r2)


def test_evaluation_loss_with_flips_against_monte_carlo(basis):
    w = [1.0, -0.5, 0.0, 0.0]
    wt = basis @ torch.tensor(w, dtype=torch.float64)
    Us = [theory.optimal_U(basis, LAM, 8, r) for r in (2, 4)]
    g = torch.Generator().manual_seed(7)
    mc = ex.mc_evaluation_losses(
        Us, LAM, Q=basis, w=wt, M=6, trials=60_000, generator=g, sigma=0.5, flip=0.3
    )
    for i, r in enumerate((2, 4)):
        closed = theory.evaluation_loss(LAM, theory.optimal_v(LAM, 8, r), w, 6, 0.25, 0.3)
        assert abs(_z(mc.estimate(i), closed)) < 4
        # the flips matter: the same cell without them is far off
        unflipped = theory.evaluation_loss(LAM, theory.optimal_v(LAM, 8, r), w, 6, 0.25, 0)
        assert abs(_z(mc.estimate(i), unflipped)) > 10


def test_flip_gap_does_not_depend_on_f_but_grows_with_sigma():
    gap, dgap = theory.flip_gap_symbolic(4, 2, 4)
    assert dgap == 0
    s2 = sp.Symbol("sigma2", positive=True)
    slope = sp.diff(gap, s2).subs({x: 1 for x in gap.free_symbols})
    assert slope > 0  # Theorem 5.4.3: additive label noise does widen the gap


def test_cayley_is_orthogonal_and_not_diagonal():
    Q = theory.cayley_orthogonal(4, 1)
    assert Q * Q.T == sp.eye(4)
    assert sum(1 for x in Q if x != 0) > 4


def test_descent_on_the_exact_loss_reaches_u_star(basis):
    # 200 steps at lr 0.1 (the chapter: 600 at 0.05) reach U* to 3e-4: the same check, 3x faster
    Lam = data.covariance(LAM, basis)
    U = ex.gd_population(1, Lam, N=8, steps=200, lr=0.1, generator=torch.Generator().manual_seed(8))
    Ustar = theory.optimal_U(basis, LAM, 8, 1)
    assert float(torch.linalg.norm(U - Ustar) / torch.linalg.norm(Ustar)) < 1e-3


def test_training_on_prompts_lowers_the_excess_loss(basis):
    g = torch.Generator().manual_seed(9)
    short = ex.train_rank_r(
        1, LAM, Q=basis.float(), N=8, steps=200, batch=256, lr=3e-2, generator=g, progress=False
    )
    dist, excess = ex.trained_summary(short, LAM, basis, 8)
    assert excess < 0.05 * float(theory.optimal_loss(LAM, 8, 1)) and dist < 0.3
    assert short.losses[-1] < short.losses[0]


def test_chapter_checks_name_the_parameter():
    with pytest.raises(ValueError, match="'eigenvalues'"):
        companions.preset("icl-scale-regression", "smoke", eigenvalues=[1.0, 1.0, 0.5, 0.2])
    with pytest.raises(ValueError, match="'train_ranks'"):
        companions.preset("icl-scale-regression", "smoke", train_ranks=[5])
    with pytest.raises(ValueError, match="'sigmas'"):
        companions.preset("icl-scale-regression", "smoke", sigmas=[0.5, 1.0])


def test_loss_at_best_u_is_the_minimum_over_u(basis):
    Lam = data.covariance(LAM, basis)
    Us = torch.randn(3, 4, 4, generator=torch.Generator().manual_seed(10), dtype=torch.float64)
    best = theory.loss_at_best_u(Us, Lam, 8)
    for k in range(3):
        a = float(torch.trace(theory.gamma(Lam, 8) @ Lam @ Us[k] @ Lam @ Us[k].T))
        b = float(torch.trace(Lam @ Lam @ Us[k].T))
        assert abs(float(best[k]) - float(theory.population_loss(Us[k], b / a, Lam, 8))) < 1e-10
        for u in (b / a * 0.9, b / a * 1.1, -1.0):
            assert float(theory.population_loss(Us[k], u, Lam, 8)) > float(best[k])


# -- parity (Section 5.5) ------------------------------------------------------------------------
from companions.icl_scale import parity as pa  # noqa: E402


def test_parity_construction_matches_the_sources_example():
    g = F(1, 5)
    a, V = pa.construction(8, g)
    c = 1 / (4 * g)
    assert a == [-1, -1, -1, 1, -1, -1, -1, 1]
    assert V[0] == [c * x for x in (-1, 1, -1, 1, -1, 1, -1, 1)]
    assert V[2] == [c * x for x in (-1, -1, -1, -1, 1, 1, 1, 1)]
    assert V[3] == [-3 * c] * 8 and V[7] == [3 * c] * 8 and V[4] == [-x for x in V[0]]
    a1, V1 = pa.construction_small(2, 8, g)  # neurons {1, 4, 5, 8}, positive scale v1 = 1
    assert a1 == [-1, 1, -1, 1] and V1[0] == V[0] and V1[1] == [-c] * 8 and V1[3] == [c] * 8
    with pytest.raises(ValueError, match="'d'"):
        pa.construction(6, g)


def test_parity_margins_and_uncovered_counts():
    g = F(1, 5)
    for d, k, uncovered in ((4, 2, 16), (8, 2, 96), (8, 4, 32)):
        a, V = pa.construction(d, g)
        s1, s2 = pa.tasks(d, k)
        assert min(pa.margins(a, V, g, s1 + s2).values()) == 1
        a1, V1 = pa.construction_small(k, d, g)
        assert min(pa.margins(a1, V1, g, s1).values()) == 1
        assert sum(1 for m in pa.margins(a1, V1, g, s2).values() if m < 1) == uncovered
        assert pa.squared_norm(V) == pa.norm_formula(d, d.bit_length() - 1, g)
    assert pa.task_rate_threshold(8, g) == F(1, 253)


@pytest.mark.parametrize("d", [2, 3, 4, 8, 16])
def test_four_heads_have_margin_one_on_every_task_and_a_broken_one_does_not(d):
    g = F(1, 7)
    a, V = pa.four_heads(d, g)
    got = pa.margins(a, V, g, pa.all_patterns(d))
    # the docstring's closed form: (d-1) - |i + j - d - 1| on positive patterns (1-based i, j),
    # -|i - j| on negative ones; the margin y g is that times y
    for (i, j, p, q), m in got.items():
        out = (d - 1) - abs(i + j + 2 - d - 1) if p == q else -abs(i - j)
        assert m == p * q * out
    assert min(got.values()) == 1
    V[3] = V[2]  # both ramp heads the same sign: negative patterns lose their margin
    assert min(pa.margins(a, V, g, pa.all_patterns(d)).values()) < 1


def test_four_heads_refuse_d_below_two():
    with pytest.raises(ValueError, match="'d'"):
        pa.four_heads(1, F(1, 5))


def test_constructions_table_matches_the_networks():
    g = F(1, 5)
    smallest, rows = pa.constructions([4, 8], 2, g)
    assert smallest == [1, 1, 1, 1]
    d, m2, m1, m1_s2, below, total, n2, n1, bound = rows[1]
    assert (d, m2, m1, m1_s2) == (8, 1, 1, 0) and total == 4 * (8 * 7 - 2)
    assert 0 < below < total and bound == pa.task_rate_threshold(8, g)
    assert n2 == pa.norm_formula(8, 3, g) and n1 == pa.norm_formula(8, 1, g)
    # d = k (the paper preset's first row): every task is in S_1, so g_1^* has no S_2 margin
    _, ((d, _, _, m1_s2, below, total, *_),) = pa.constructions([4], 4, g)
    assert (d, m1_s2, below, total) == (4, None, 0, 0)


def test_rescale_and_projected_noise():
    g = F(1, 5)
    a, V = pa.construction(4, g)
    a2, V2 = pa.rescale_to_margin_one(a, [[3 * x for x in h] for h in V], g, pa.all_patterns(4))
    assert V2 == V
    a1, V1 = pa.construction_small(2, 8, g)
    assert pa.column_space_rank(V1) == 2 and pa.column_space_rank(pa.construction(8, g)[1]) == 4
    est = pa.projected_noise(V1, 4, 20000, torch.Generator().manual_seed(0))
    m, se = pa.mean_se(est)
    assert abs(m - 2 / 4) < 4 * se  # (v1 + 1)/M, not d/M = 2
    phi = pa.sample_hidden(20000, 1, 8, (0, 1), 0.2, torch.Generator().manual_seed(1))
    y = phi[:, 0, 0] * phi[:, 0, 1]
    assert abs(float((y * phi[:, 0, 0]).mean()) - 0.4) < 0.03  # E[y phi_i] = 2 gamma
    assert abs(float((y * phi[:, 0, 2]).mean())) < 0.03


def test_evaluate_small_model_beats_large_at_large_m():
    g = F(1, 5)
    nets = [pa.construction_small(2, 8, g), pa.construction(8, g)]
    hinge, correct = pa.evaluate(
        nets,
        8,
        k=2,
        gamma=0.2,
        M=256,
        flip=0.0,
        trials=3000,
        generator=torch.Generator().manual_seed(2),
    )
    assert float(correct[0].mean()) > 0.95 and float(hinge[0].mean()) < float(hinge[1].mean())
    hinge, correct = pa.evaluate(
        nets,
        8,
        k=2,
        gamma=0.2,
        M=64,
        flip=0.5,
        trials=3000,
        generator=torch.Generator().manual_seed(3),
    )
    assert abs(float(correct[0].mean()) - 0.5) < 0.05  # labels carry no signal at f = 1/2


def test_parity_checks_name_the_parameter():
    with pytest.raises(ValueError, match="'k'"):
        companions.preset("icl-scale-parity", "smoke", k=3)
    with pytest.raises(ValueError, match="'dims'"):
        companions.preset("icl-scale-parity", "smoke", dims=[6])


def _gen(k):
    return torch.Generator().manual_seed(k)


# The chapter's loops, one test each, so that a mutant of one loop runs its own test and not the
# descent's (the slowest): issue 23's mutation runs fork one test run per mutant.


def test_chapter_descent_loop_reaches_u_star_at_every_rank():
    # d = 2 (ranks 1 and 2) at 200 steps, lr 0.1: both within 3e-4 of U*_r
    lam2 = [2.0, 0.5]
    basis2 = data.random_orthogonal(2, torch.Generator().manual_seed(1))
    dist = ex.descent_distances(basis2, lam2, N=8, starts=1, steps=200, generator_for=_gen, lr=0.1)
    assert len(dist) == 2 and max(dist) < 1e-3


def test_chapter_training_loop_and_table(basis):
    trained = ex.train_ranks(
        [1], 2, eigenvalues=LAM, Q=basis, N=8, steps=100, batch=128, lr=3e-2, generator_for=_gen
    )
    table, margins = ex.trained_table(trained, LAM, basis, 8)
    assert table.count("\n") == 2 and set(margins) == {1} and margins[1][1] >= 0


def _optimal_Us(basis):
    return [theory.optimal_U(basis, LAM, 8, r) for r in range(5)]


def test_chapter_evaluation_grid(basis):
    Us = _optimal_Us(basis)
    w = basis @ torch.tensor([1.0, 0.5, 0.0, 0.0], dtype=torch.float64)

    def closed(r, M, sigma):
        return theory.theorem_5_4_2(
            LAM,
            8,
            M=M,
            sigma2=sigma**2,
            s=[1.0, 0.5, 0, 0][:r] + [0.0] * (4 - r),
            xi=[0.0] * r + [1.0, 0.5, 0, 0][r:],
            r=r,
        )

    grid, rows = ex.evaluation_grid(
        Us,
        LAM,
        Q=basis,
        w=w,
        eval_m=[4],
        sigmas=[0.5],
        trials=20000,
        generator_for=_gen,
        closed=closed,
        device="cpu",
    )
    assert set(grid) == {(4, 0.5)} and len(rows) == 5
    assert max(abs(m - exact) / se for m, se, exact in rows) < 5


def test_chapter_theorem_5_4_3_loops(basis):
    lam_q = [F(4), F(2), F(1), F(1, 2)]
    residuals = ex.theorem_5_4_3_exact(lam_q, 8, [4, 16], [F(1), 0, 0, 0], (0, F(1, 2)))
    assert len(residuals) == 2 * 2 * 4 and all(r == 0 for r in residuals)
    Us = _optimal_Us(basis)
    rows = ex.theorem_5_4_3_rows(
        Us,
        LAM,
        Q=basis,
        N=8,
        s=[1, 0, 0, 0],
        M=4,
        sigmas=[0.5],
        trials=20000,
        generator_for=_gen,
        device="cpu",
    )
    assert len(rows) == 3 and max(abs(m - exact) / se for m, se, exact in rows) < 5


def test_chapter_flips_loop(basis):
    Us = _optimal_Us(basis)
    mcs, rows = ex.flips_rows(
        Us,
        LAM,
        Q=basis,
        N=8,
        coords=[1.0, 0.5, 0, 0],
        M=4,
        flips=[0.0, 0.2],
        trials=20000,
        generator_for=_gen,
        device="cpu",
    )
    assert set(mcs) == {0.0, 0.2} and len(rows) == 10
    assert max(abs(m - exact) / se for m, se, exact in rows) < 5


def test_parity_loops_in_the_library():
    def gen(k):
        return torch.Generator().manual_seed(k)

    found = pa.smaller_norm_search(1, 300, F(1, 5), gen)
    assert all(isinstance(x, F) for x in found)
    nets = [pa.construction_small(2, 8, F(1, 5)), pa.construction(8, F(1, 5))]
    res = pa.behaviour(
        nets, 8, k=2, gamma=F(1, 5), eval_m=[16], flips=[0.0], trials=500, generator_for=gen
    )
    assert set(res) == {(16, 0.0)} and res[16, 0.0][0].shape[0] == 2
    assert res[16, 0.0][2].n == 500


def test_projected_noise_draws_the_same_signs_in_chunks():
    V = pa.construction(8, 0.2)[1]
    whole = pa.projected_noise(V, 16, 3000, torch.Generator().manual_seed(5), chunk=10**9)
    for chunk in (1, 500, 16 * 8 * 7 + 3):  # one trial, some trials, a ragged last draw
        parts = pa.projected_noise(V, 16, 3000, torch.Generator().manual_seed(5), chunk=chunk)
        assert torch.equal(parts, whole)


def test_theorem_5_4_1_exact_residuals_vanish_and_a_wrong_optimum_shows():
    R = F
    residuals, not_worse, rows = ex.theorem_5_4_1_exact([(R(9), R(4), R(1))], (4,), seed=0)
    assert len(residuals) == 4 and all(r == 0 for r in residuals) and not_worse == 0
    assert [row[2] for row in rows] == [0, 1, 2, 3]
    # the optimal loss of r = 1 by hand: tr D / 2 - N lambda_1^2 / (2 ((N+1) lambda_1 + tr D))
    assert rows[1][4] == R(7) - R(4 * 81, 2 * (5 * 9 + 14))


def test_random_rank_r_models_never_beat_the_optimum(basis):
    Lam = data.covariance(LAM, basis)
    gap = ex.random_rank_r_gap(LAM, Lam, 8, 500, torch.Generator().manual_seed(1))
    assert gap >= -1e-12
    # against a too-low L*_r (the full-rank minimum used for every r) it goes negative
    assert gap < float(theory.optimal_loss(LAM, 8, 4) - theory.optimal_loss(LAM, 8, 1)) + 1


def test_loss_of_blocks_moves_with_w21(basis):
    U = 0.3 * torch.randn(4, 4, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    W_PV, W_KQ = model.blocks(U, 0.7)
    Lam = data.covariance(LAM, basis)
    formula = float(theory.population_loss(U, 0.7, Lam, 8))
    same = ex.mc_loss_of_blocks(
        W_PV, W_KQ, eigenvalues=LAM, Q=basis, N=8, trials=40_000, generator=_gen(3)
    )
    assert abs(_z(same, formula)) < 4
    W_KQ[4, :4] = 0.5
    moved = ex.mc_loss_of_blocks(
        W_PV, W_KQ, eigenvalues=LAM, Q=basis, N=8, trials=40_000, generator=_gen(3)
    )
    assert abs(_z(moved, formula)) > 10
