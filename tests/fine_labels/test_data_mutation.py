"""Tests of companions.fine_labels.data written against its surviving mutants (issue 23).

Expected values come from loops over seeds, samples and patches that follow App. B.1 items 5, 6
and 9 and Definitions 4.1-4.3 one sample at a time, replayed with the same generator (a second
implementation of the vectorised code), from small cases by hand, and from invariants (role
counts, disjointness, value ranges) checked with hypothesis.
"""

import math
import re

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from companions.fine_labels import data as fdata

F64 = torch.float64


def g(seed=0):
    return torch.Generator().manual_seed(seed)


def cfg(**kw):
    base = dict(d=8, k=2, P=6, s_star=2, sigma_zeta=0.1, s_dagger=1)
    base.update(kw)
    return fdata.DataConfig(**base)


# -- DataConfig -----------------------------------------------------------------------------------
def test_config_boundaries_that_are_allowed():
    cfg(k=1, d=4)  # k = 1 and d = 2 + 2k exactly
    cfg(k=3, d=8, P=7, s_star=3, s_dagger=0)  # P = 2 s_star + s_dagger + 1 exactly, s_dagger = 0
    cfg(s_star=1, P=4)  # s_star = 1
    cfg(patch_counts="bernoulli", P=3, s_star=2)  # P = s_star + 1
    cfg(iota=0.0)
    cfg(iota=0.99)
    cfg(alpha_dagger=(0.0, 0.0))  # lower = 0 and lower = upper
    cfg(alpha_dagger=(0.4, 0.4))


def raises(msg, **kw):
    with pytest.raises(ValueError, match="^" + re.escape(msg) + "$"):
        cfg(**kw)


def test_config_names_each_bad_parameter():
    raises(
        "parameter 'patch_counts' = 'poisson' is not allowed: expected one of "
        "('exact', 'bernoulli')",
        patch_counts="poisson",
    )
    feat = "features must fit in the dictionary"
    raises(f"parameter 'd' = 7 is not allowed: the 2 + 2k = 8 {feat}", d=7, k=3)
    raises(f"parameter 'd' = 20 is not allowed: the 2 + 2k = 2 {feat}", d=20, k=0)
    both = "parameter 's_star' must be >= 1 and 's_dagger' >= 0"
    raises(both, s_star=0)
    raises(both, s_dagger=-1)
    raises(
        "parameter 'P' = 5 is not allowed: exact counts need P >= 2 s_star + s_dagger + 1 = 6",
        P=5,
    )
    raises(
        "parameter 'P' = 2 is not allowed: it must exceed s_star",
        patch_counts="bernoulli",
        P=2,
        s_star=2,
    )
    raises("parameter 'iota' = 1.0 is not allowed: expected [0, 1)", iota=1.0)
    raises("parameter 'iota' = -0.1 is not allowed: expected [0, 1)", iota=-0.1)
    bad = "is not allowed: expected 0 <= lower <= upper"
    raises(f"parameter 'alpha_dagger' = (0.5, 0.3) {bad}", alpha_dagger=(0.5, 0.3))
    raises(f"parameter 'alpha_dagger' = (-0.1, 0.3) {bad}", alpha_dagger=(-0.1, 0.3))


def test_bernoulli_counts_do_not_need_the_exact_bound_on_p():
    # P = 3 < 2 s_star + s_dagger + 1 = 6 is fine for Bernoulli counts (only P > s_star)
    c = cfg(patch_counts="bernoulli", P=3, s_star=2, s_dagger=1)
    assert c.P == 3


def test_n_features_and_rho_by_hand():
    c = cfg(d=12, k=3, P=20, s_star=4, s_dagger=2, alpha_dagger=(0.3, 0.5))
    assert c.n_features == 8  # 2 + 2k
    # rho = k s^dagger mean(alpha^dagger) / s^* = 3 * 2 * 0.4 / 4
    assert c.rho == pytest.approx(0.6, rel=1e-12)
    c = cfg(d=12, k=5, P=20, s_star=3, s_dagger=1, alpha_dagger=(0.2, 1.0))
    assert c.rho == pytest.approx(5 * 1 * 0.6 / 3, rel=1e-12)


# -- indices and labels ---------------------------------------------------------------------------
def test_indices_follow_definition_4_1():
    k = 3
    y = torch.tensor([0, 0, 0, 1, 1, 1])
    c = torch.tensor([0, 1, 2, 0, 1, 2])
    assert fdata.common_index(y).tolist() == [0, 0, 0, 1, 1, 1]  # v_+ = e_0, v_- = e_1
    # v_{+,c} = e_{2+c}, v_{-,c} = e_{2+k+c}
    assert fdata.fine_index(y, c, k).tolist() == [2, 3, 4, 5, 6, 7]
    assert fdata.coarse_labels(y, c, k).tolist() == [0, 0, 0, 1, 1, 1]
    assert fdata.fine_labels(y, c, k).tolist() == [0, 1, 2, 3, 4, 5]  # y k + c


def test_balanced_labels_by_hand():
    S, N, k = 2, 12, 3
    y, c = fdata.balanced_labels(S, N, k)
    pairs = [(n % 6 // 3, n % 6 % 3) for n in range(N)]  # sample n is subclass n mod 2k
    assert y.dtype == torch.int64 and c.dtype == torch.int64
    assert y.shape == (S, N) and c.shape == (S, N)
    for s in range(S):
        assert list(zip(y[s].tolist(), c[s].tolist())) == pairs
    y[0, 0] = 7  # each seed's row is its own memory (a clone, not an expanded view)
    c[0, 0] = 7
    assert int(y[1, 0]) == 0 and int(c[1, 0]) == 0


def test_balanced_labels_names_a_bad_n():
    with pytest.raises(
        ValueError,
        match=re.escape("parameter 'N' = 10 is not allowed: it must be a multiple of 2k = 4"),
    ):
        fdata.balanced_labels(1, 10, 2)


def test_grouped_labels_by_hand():
    k = 6
    y = torch.tensor([0] * 6 + [1] * 6)
    c = torch.tensor(list(range(6)) * 2)
    # groups = 3: group c div (k / 3) = c div 2, label y 3 + group
    assert fdata.grouped_labels(y, c, k, 3).tolist() == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5]
    # groups = 2: group c div 3, label y 2 + group
    assert fdata.grouped_labels(y, c, k, 2).tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]
    assert fdata.grouped_labels(y, c, k, 1).tolist() == y.tolist()
    for groups in (1, 2, 3, 6):  # class indices stay integers (cross-entropy targets)
        assert fdata.grouped_labels(y, c, k, groups).dtype == torch.int64


@pytest.mark.parametrize("groups", [0, -1, 4])
def test_grouped_labels_names_a_bad_groups(groups):
    y = torch.zeros(3, dtype=torch.long)
    msg = f"parameter 'groups' = {groups} is not allowed: it must divide k = 6"
    with pytest.raises(ValueError, match="^" + re.escape(msg) + "$"):
        fdata.grouped_labels(y, y, 6, groups)


def test_random_labels_replay_and_range():
    y = torch.tensor([[0, 1, 0, 1, 1, 0, 0, 1]] * 50)
    r = fdata.random_labels(y, 3, g(5))
    want = y * 3 + torch.randint(3, y.shape, generator=g(5))  # a uniform sub-ID in [groups]
    assert torch.equal(r, want)
    assert bool(((r >= 3 * y) & (r < 3 * y + 3)).all())
    assert set(r[y == 0].tolist()) == {0, 1, 2} and set(r[y == 1].tolist()) == {3, 4, 5}
    assert fdata.random_labels(y, 1, g()).tolist() == y.tolist()  # groups = 1 is allowed


@pytest.mark.parametrize("groups", [0, -2])
def test_random_labels_names_a_bad_groups(groups):
    msg = f"parameter 'groups' = {groups} is not allowed: expected >= 1"
    with pytest.raises(ValueError, match="^" + re.escape(msg) + "$"):
        fdata.random_labels(torch.zeros(2, dtype=torch.long), groups, g())


# -- patch roles ----------------------------------------------------------------------------------
def roles_exact_by_hand(S, N, c, hard, seed):
    """Each sample's P patches in a uniformly random order (the order of its uniform draws):
    the first s^* are common, the next s^* fine, the next s^dagger feature noise, then zeta^*."""
    u = torch.rand(S, N, c.P, generator=g(seed)).tolist()
    out = [torch.zeros(S, N, c.P, dtype=torch.bool) for _ in range(4)]
    s, sd = c.s_star, c.s_dagger
    for i in range(S):
        for n in range(N):
            order = sorted(range(c.P), key=lambda p: u[i][n][p])
            for r, p in enumerate(order):
                if r < s:
                    role = 0 if not hard else None  # hard: common patches become noise
                elif r < 2 * s:
                    role = 1
                elif r < 2 * s + sd:
                    role = 2 if hard else None
                elif r == 2 * s + sd:
                    role = 3 if hard else None
                else:
                    role = None
                if role is not None:
                    out[role][i, n, p] = True
    return out


def roles_bernoulli_by_hand(S, N, c, hard, seed):
    """App. B.1 items 5-6, one sample at a time, with the draws in the code's order."""
    gen = g(seed)
    shape = (S, N, c.P)
    u_common = torch.rand(*shape, generator=gen).tolist()
    u_fine = torch.rand(*shape, generator=gen).tolist()
    if hard:
        u_noise = torch.rand(*shape, generator=gen).tolist()
        u_star = torch.rand(*shape, generator=gen).tolist()
    out = [torch.zeros(*shape, dtype=torch.bool) for _ in range(4)]
    P = c.P
    for i in range(S):
        for n in range(N):
            common = [u_common[i][n][p] < c.s_star / P for p in range(P)]
            q = c.s_star / max(P - sum(common), 1)
            fine = [not common[p] and u_fine[i][n][p] < q for p in range(P)]
            noise = [False] * P
            star = None
            if hard:
                qd = c.s_dagger / max(P - sum(fine), 1)
                noise = [not fine[p] and u_noise[i][n][p] < qd for p in range(P)]
                free = [p for p in range(P) if not fine[p] and not noise[p]]
                if free:
                    star = max(free, key=lambda p: u_star[i][n][p])
                common = [False] * P
            out[0][i, n] = torch.tensor(common)
            out[1][i, n] = torch.tensor(fine)
            out[2][i, n] = torch.tensor(noise)
            out[3][i, n] = torch.tensor([p == star for p in range(P)])
    return out


@pytest.mark.parametrize("hard", [False, True])
@pytest.mark.parametrize(
    "kw",
    [
        dict(P=6, s_star=2, s_dagger=1),
        dict(P=9, s_star=2, s_dagger=3),
        dict(P=3, s_star=1, s_dagger=0),
    ],
)
def test_exact_roles_match_a_loop_over_samples(hard, kw):
    c = cfg(**kw)
    got = fdata.patch_roles(2, 7, c, hard, g(11))
    want = roles_exact_by_hand(2, 7, c, hard, 11)
    for name, a, b in zip(["common", "fine", "noise", "star"], got, want):
        assert a.dtype == torch.bool and a.shape == (2, 7, c.P), name
        assert torch.equal(a, b), name


@pytest.mark.parametrize("hard", [False, True])
@pytest.mark.parametrize(
    "kw",
    [
        dict(P=2, s_star=1, s_dagger=1),  # P - |common| and P - |fine| are often 1 or 0
        dict(P=6, s_star=2, s_dagger=2),
        dict(P=4, s_star=3, s_dagger=0),
    ],
)
def test_bernoulli_roles_match_a_loop_over_samples(hard, kw):
    c = cfg(patch_counts="bernoulli", **kw)
    got = fdata.patch_roles(3, 40, c, hard, g(7))
    want = roles_bernoulli_by_hand(3, 40, c, hard, 7)
    for name, a, b in zip(["common", "fine", "noise", "star"], got, want):
        assert a.dtype == torch.bool and a.shape == (3, 40, c.P), name
        assert torch.equal(a, b), name


def test_bernoulli_generator_is_advanced_by_the_draws_used():
    # easy: two (S, N, P) draws (common, fine); hard: four (and noise, zeta^*)
    c = cfg(patch_counts="bernoulli", P=4, s_star=1)
    for hard, draws in [(False, 2), (True, 4)]:
        gen, ref = g(3), g(3)
        fdata.patch_roles(2, 5, c, hard, gen)
        for _ in range(draws):
            torch.rand(2, 5, 4, generator=ref)
        assert torch.equal(torch.rand(3, generator=gen), torch.rand(3, generator=ref))


@settings(max_examples=25, deadline=None)
@given(
    k=st.integers(1, 3),
    s=st.integers(1, 3),
    sd=st.integers(0, 3),
    extra=st.integers(0, 3),
    hard=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_exact_roles_counts_are_exact(k, s, sd, extra, hard, seed):
    P = 2 * s + sd + 1 + extra
    c = fdata.DataConfig(d=2 + 2 * k, k=k, P=P, s_star=s, sigma_zeta=0.1, s_dagger=sd)
    common, fine, noise, star = fdata.patch_roles(2, 6, c, hard, g(seed))
    assert bool((fine.sum(-1) == s).all())
    if hard:
        assert not bool(common.any())
        assert bool((noise.sum(-1) == sd).all()) and bool((star.sum(-1) == 1).all())
    else:
        assert bool((common.sum(-1) == s).all())
        assert not bool(noise.any()) and not bool(star.any())
    stacked = torch.stack([common, fine, noise, star]).int().sum(0)
    assert int(stacked.max()) <= 1  # the roles are disjoint


# -- sample ---------------------------------------------------------------------------------------
def sample_by_hand(c, S, N, hard, seed, dtype):
    """Definition 4.2 (and App. B.1 item 6 when hard) one patch at a time, with the same draws."""
    gen = g(seed)
    roles = fdata.patch_roles(S, N, c, hard, gen)  # tested above
    common, fine, noise, star = (r.tolist() for r in roles)
    Z = torch.randn(S, N, c.P, c.d, generator=gen, dtype=dtype).tolist()
    A = torch.rand(S, N, c.P, generator=gen, dtype=dtype).tolist()
    AD = torch.rand(S, N, c.P, generator=gen, dtype=dtype).tolist()
    ZS = None
    if bool(roles[3].any()):
        ZS = torch.randn(S, N, c.P, c.d, generator=gen, dtype=dtype).tolist()
    lo, hi = math.sqrt(1 - c.iota), math.sqrt(1 + c.iota)
    alo, ahi = c.alpha_dagger
    X = [[[None] * c.P for _ in range(N)] for _ in range(S)]
    y = [[0] * N for _ in range(S)]
    cc = [[0] * N for _ in range(S)]
    for i in range(S):
        for n in range(N):
            yn, cn = (n % (2 * c.k)) // c.k, n % (2 * c.k) % c.k
            y[i][n], cc[i][n] = yn, cn
            for p in range(c.P):
                if star[i][n][p]:
                    X[i][n][p] = [z * c.sigma_star for z in ZS[i][n][p]]  # zeta^* replaces it
                    continue
                x = [z * c.sigma_zeta for z in Z[i][n][p]]
                alpha = lo + (hi - lo) * A[i][n][p]  # alpha_p ~ U[sqrt(1 - iota), sqrt(1 + iota)]
                if common[i][n][p]:
                    x[yn] += alpha  # alpha_p v_y
                if fine[i][n][p]:
                    x[2 + yn * c.k + cn] += alpha  # alpha_p v_{y,c}
                if noise[i][n][p]:
                    x[1 - yn] += alo + (ahi - alo) * AD[i][n][p]  # alpha^dagger v_{-y}
                X[i][n][p] = x
    X = torch.tensor(X, dtype=dtype)
    return X, torch.tensor(y), torch.tensor(cc), gen


@pytest.mark.parametrize("hard", [False, True])
@pytest.mark.parametrize("counts", ["exact", "bernoulli"])
def test_sample_matches_a_loop_over_patches(hard, counts):
    c = cfg(
        d=9,
        k=2,
        P=7,
        s_star=2,
        s_dagger=2,
        sigma_zeta=0.05,
        iota=0.6,
        alpha_dagger=(0.2, 0.7),
        sigma_star=1.7,
        patch_counts=counts,
    )
    gen = g(21)
    X, y, cc = fdata.sample(c, 2, 8, hard, gen, dtype=F64)
    Xw, yw, cw, genw = sample_by_hand(c, 2, 8, hard, 21, F64)
    assert X.dtype == F64 and X.shape == (2, 8, 7, 9)
    assert torch.equal(y, yw) and torch.equal(cc, cw)
    torch.testing.assert_close(X, Xw, rtol=1e-12, atol=1e-12)
    # the generator has made exactly the same draws (no extra zeta^* draw, none missing)
    assert torch.equal(torch.rand(4, generator=gen), torch.rand(4, generator=genw))


def test_sample_default_dtype_is_float32():
    X, y, c = fdata.sample(cfg(), 1, 4, True, g())
    assert X.dtype == torch.float32 and X.shape == (1, 4, 6, 8)


@pytest.mark.parametrize("hard", [False, True])
def test_sample_keeps_a_half_precision_dtype(hard):
    # every term (noise, amplitudes, dictionary, zeta^*) in the dtype asked for: none promotes X
    X, y, c = fdata.sample(cfg(iota=0.3), 2, 4, hard, g(2), dtype=torch.float16)
    assert X.dtype == torch.float16
    Xw, _, _, _ = sample_by_hand(cfg(iota=0.3), 2, 4, hard, 2, torch.float16)
    torch.testing.assert_close(X.double(), Xw.double(), rtol=2e-3, atol=2e-3)


@settings(max_examples=20, deadline=None)
@given(iota=st.floats(0.0, 0.95), seed=st.integers(0, 2**16))
def test_noiseless_easy_features_have_amplitudes_in_range(iota, seed):
    # sigma_zeta = 0: each feature patch is alpha_p v exactly, alpha_p in [sqrt(1-iota),
    # sqrt(1+iota)]
    c = cfg(d=8, k=2, P=6, s_star=2, sigma_zeta=0.0, iota=iota)
    X, y, cc = fdata.sample(c, 1, 8, False, g(seed), dtype=F64)
    amp = X.abs().amax(-1)  # (S, N, P)
    feat = amp > 0
    assert bool((feat.sum(-1) == 4).all())  # s^* common + s^* fine patches
    lo, hi = math.sqrt(1 - iota), math.sqrt(1 + iota)
    assert bool((amp[feat] >= lo - 1e-12).all()) and bool((amp[feat] <= hi + 1e-12).all())
    assert bool((X >= 0).all())  # features enter with + sign
