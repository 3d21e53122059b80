"""Mutation tests of companions.universality.data (issue 23): layouts worked out by hand, and the
samplers checked against the draws they document, replayed from the same generator."""

import re

import pytest
import torch

from companions.universality import data as ud

F64 = torch.float64


def _exact(message):
    """A pattern for the whole message (a mutant that pads it fails)."""
    return "^" + re.escape(message) + "$"


def gen(k):
    return torch.Generator().manual_seed(k)


# -- Layout ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "s,r,T,n_u,k",
    [(1, 2, 1, 0, 2), (2, 5, 3, 4, 11), (3, 4, 2, 1, 5), (1, 3, 4, 2, 9)],
)
def test_layout_sizes_by_hand(s, r, T, n_u, k):
    # k = s + T (r - s) (k given by hand in the table), d = k + n_spurious
    lay = ud.Layout(s, r, T, n_u)
    assert lay.k == k and lay.d == k + n_u
    assert lay.shared().tolist() == list(range(s))
    assert lay.spurious().tolist() == list(range(k, k + n_u))
    for t in range(T):
        first = s + t * (r - s)
        assert lay.private(t).tolist() == list(range(first, first + r - s))
        assert lay.task_features(t).tolist() == list(range(s)) + list(range(first, first + r - s))


def test_layout_blocks_partition_the_coordinates():
    lay = ud.Layout(2, 5, 3, 4)
    blocks = [lay.shared()] + [lay.private(t) for t in range(3)] + [lay.spurious()]
    assert torch.cat(blocks).tolist() == list(range(lay.d))


def test_layout_smallest_allowed_values():
    lay = ud.Layout(1, 2, 1, 0)  # s = 1, r = s + 1, T = 1, no spurious feature: all allowed
    assert (lay.k, lay.d) == (2, 2) and lay.spurious().tolist() == []


@pytest.mark.parametrize(
    "args,message",
    [
        ((0, 2, 1, 0), "parameter 's' = 0 is not allowed: it must be at least 1"),
        ((2, 2, 1, 0), "parameter 'r' = 2 is not allowed: it must exceed s = 2"),
        ((2, 1, 1, 0), "parameter 'r' = 1 is not allowed: it must exceed s = 2"),
        ((1, 2, 0, 0), "parameter 'T' = 0 is not allowed: it must be at least 1"),
        ((1, 2, 1, -1), "parameter 'n_spurious' = -1 is not allowed: it must be >= 0"),
    ],
)
def test_layout_rejects_bad_sizes(args, message):
    with pytest.raises(ValueError, match=_exact(message)):
        ud.Layout(*args)


def test_private_task_bounds():
    lay = ud.Layout(1, 3, 2, 1)
    assert lay.private(0).tolist() == [1, 2] and lay.private(1).tolist() == [3, 4]
    for t in (-1, 2):
        with pytest.raises(ValueError, match=_exact(f"task {t} is not in 0..1")):
            lay.private(t)


# -- dictionary ------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_dictionary_is_the_sign_fixed_q_of_the_generators_gaussian(dtype):
    # M is orthonormal and M^T A = R is upper triangular with a positive diagonal, for A the
    # generator's first float64 Gaussian d x d matrix (the QR convention that makes M Haar)
    d = 6
    A = torch.randn(d, d, generator=gen(8), dtype=F64)
    M = ud.dictionary(d, gen(8), dtype=dtype)
    assert M.dtype == dtype and M.shape == (d, d)
    tol = 1e-12 if dtype == F64 else 1e-5
    R = M.double().T @ A
    assert torch.allclose(torch.tril(R, -1), torch.zeros(d, d, dtype=F64), atol=tol * 10)
    assert (torch.diagonal(R) > 0).all()
    assert torch.allclose(M.double().T @ M.double(), torch.eye(d, dtype=F64), atol=tol)


def test_dictionary_default_dtype_is_float64():
    assert ud.dictionary(3, gen(0)).dtype == F64


# -- sample_z and positive -------------------------------------------------------------------------
def _mask(lay, ids):
    m = torch.zeros(len(ids), lay.d, dtype=F64)
    for i, t in enumerate(ids.tolist()):
        m[i, : lay.s] = 1  # shared
        first = lay.s + t * (lay.r - lay.s)
        m[i, first : first + lay.r - lay.s] = 1  # private features of task t
        m[i, lay.k :] = 1  # spurious
    return m


@pytest.mark.parametrize("tasks", [[1], [0, 2], (2, 0, 1), range(3)])
def test_sample_z_replays_the_documented_draws(tasks):
    # a task index per row (randint over the list), then one float64 Gaussian (n, d) matrix,
    # zeroed outside S, P_t and U
    lay = ud.Layout(2, 4, 3, 2)
    n = 40
    g = gen(5)
    idx = torch.randint(len(list(tasks)), (n,), generator=g)
    ids_want = torch.as_tensor(list(tasks))[idx]
    G = torch.randn(n, lay.d, generator=g, dtype=F64)
    after = torch.rand(3, generator=g)
    g2 = gen(5)
    z, ids = ud.sample_z(lay, tasks, n, g2, dtype=F64)
    assert torch.equal(ids, ids_want)
    assert torch.equal(z, G * _mask(lay, ids_want))
    assert torch.equal(torch.rand(3, generator=g2), after)  # nothing else drawn


def test_sample_z_default_dtype_and_casting():
    lay = ud.Layout(1, 2, 2, 1)
    z32, ids = ud.sample_z(lay, [0, 1], 30, gen(6))
    assert z32.dtype == torch.float32
    z64, ids64 = ud.sample_z(lay, [0, 1], 30, gen(6), dtype=F64)
    assert torch.equal(ids, ids64) and torch.equal(z32, z64.float())  # drawn in float64, cast


def test_sample_z_rejects_no_task():
    lay = ud.Layout(1, 2, 2, 1)
    msg = "parameter 'tasks' is empty: pre-training needs at least one task"
    with pytest.raises(ValueError, match=_exact(msg)):
        ud.sample_z(lay, [], 4, gen(0))


@pytest.mark.parametrize("dtype", [F64, torch.float32])
def test_positive_redraws_only_the_spurious_block(dtype):
    lay = ud.Layout(2, 3, 2, 3)
    z = torch.randn(7, lay.d, generator=gen(1), dtype=F64).to(dtype)
    z0 = z.clone()
    g = gen(2)
    fresh = torch.randn(7, lay.n_spurious, generator=g, dtype=F64).to(dtype)
    zp = ud.positive(lay, z, gen(2))
    assert zp.dtype == dtype
    assert torch.equal(z, z0)  # the input is left alone
    assert torch.equal(zp[:, : lay.k], z[:, : lay.k])
    assert torch.equal(zp[:, lay.k :], fresh)


# -- task_vectors ----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [F64, torch.float32])
def test_task_vectors_replay_the_documented_draws(dtype):
    # per task, in order: a ~ N(0, I_s) then b ~ N(0, I_{r-s}); u_t = (a/|a| on S, b/|b| on P_t)
    # / sqrt(2), zero elsewhere
    lay = ud.Layout(2, 5, 3, 2)
    g = gen(4)
    want = torch.zeros(3, lay.d, dtype=F64)
    for t in range(3):
        a = torch.randn(2, generator=g, dtype=F64)
        b = torch.randn(3, generator=g, dtype=F64)
        want[t, :2] = a / a.norm() / 2**0.5
        first = 2 + 3 * t
        want[t, first : first + 3] = b / b.norm() / 2**0.5
    U = ud.task_vectors(lay, gen(4), dtype=dtype)
    assert U.dtype == dtype
    assert torch.allclose(U.double(), want, rtol=0, atol=1e-15 if dtype == F64 else 1e-7)


def test_task_vectors_default_dtype():
    assert ud.task_vectors(ud.Layout(1, 2, 1, 0), gen(0)).dtype == F64
