"""Mutation tests of companions.icl_scale.data (issue 23): the spectrum checks on boundary cases,
the covariances against Q diag(lambda) Q^T, and the prompts against the draws they document,
replayed from the same generator."""

import re

import pytest
import torch

from companions.icl_scale import data

F64 = torch.float64
LAM = [4.0, 2.0, 1.0, 0.5]


def _exact(message):
    """A pattern for the whole message (a mutant that pads it fails)."""
    return "^" + re.escape(message) + "$"


def gen(k):
    return torch.Generator().manual_seed(k)


# -- random_orthogonal -----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [F64, torch.float32])
def test_random_orthogonal_is_the_sign_fixed_q(dtype):
    # Q^T A = R upper triangular with a positive diagonal, A the generator's first d x d Gaussian
    # drawn in dtype (the QR convention that makes Q Haar)
    d = 5
    A = torch.randn(d, d, generator=gen(3), dtype=dtype).double()
    Q = data.random_orthogonal(d, gen(3), dtype=dtype)
    assert Q.dtype == dtype and Q.shape == (d, d)
    tol = 1e-12 if dtype == F64 else 1e-5
    R = Q.double().T @ A
    assert torch.allclose(torch.tril(R, -1), torch.zeros(d, d, dtype=F64), atol=10 * tol)
    assert (torch.diagonal(R) > 0).all()
    assert torch.allclose(Q.double().T @ Q.double(), torch.eye(d, dtype=F64), atol=tol)


def test_random_orthogonal_default_dtype():
    assert data.random_orthogonal(2, gen(0)).dtype == F64


# -- check_spectrum --------------------------------------------------------------------------------
def test_check_spectrum_accepts_ties_zeros_and_ints():
    lam = data.check_spectrum((3, 2, 2, 0))  # non-increasing, zero allowed (>= 0)
    assert lam.dtype == F64 and lam.tolist() == [3.0, 2.0, 2.0, 0.0]
    assert data.check_spectrum([0.0]).tolist() == [0.0]


def test_check_spectrum_rejections():
    with pytest.raises(
        ValueError, match=_exact("parameter 'eigenvalues' must be a non-empty list")
    ):
        data.check_spectrum([])
    msg = (
        "parameter 'eigenvalues' = {} is not allowed: Section 5.4.1 sorts them as "
        "lambda_1 >= ... >= lambda_d >= 0"
    )
    for bad in ([1.0, 2.0], [2.0, -1.0], [-1.0], [3.0, 1.0, 1.5]):
        with pytest.raises(ValueError, match=_exact(msg.format([float(x) for x in bad]))):
            data.check_spectrum(bad)


# -- covariance and its square root ----------------------------------------------------------------
@pytest.mark.parametrize("dtype", [F64, torch.float32])
def test_covariance_and_sqrt_against_q_diag_qt(dtype):
    Q = data.random_orthogonal(4, gen(1)).to(dtype)
    D = torch.diag(torch.tensor(LAM, dtype=dtype))
    Dh = torch.diag(torch.tensor(LAM, dtype=dtype).sqrt())
    tol = 1e-12 if dtype == F64 else 1e-5
    C, S = data.covariance(LAM, Q), data.covariance_sqrt(LAM, Q)
    assert C.dtype == dtype and S.dtype == dtype
    assert torch.allclose(C, Q @ D @ Q.T, atol=tol)
    assert torch.allclose(S, Q @ Dh @ Q.T, atol=tol)
    with pytest.raises(ValueError, match="'eigenvalues'"):
        data.covariance_sqrt([1.0, 2.0, 3.0, 4.0], Q)


# -- prompts ---------------------------------------------------------------------------------------
def _replay(trials, n, lam, Q, seed, w=None, sigma=0.0, flip=0.0, dtype=F64):
    """The draws of Section 5.4 in the documented order: all n + 1 inputs x = Lambda^{1/2} z, then
    the tasks w ~ N(0, I), then (if sigma > 0) the noise, then (if flip > 0) the flips."""
    g = gen(seed)
    d = Q.shape[0]
    Qd = Q.double()
    L = (Qd @ torch.diag(torch.tensor(lam, dtype=F64).sqrt()) @ Qd.T).to(dtype)
    X = torch.randn(trials, n + 1, d, generator=g, dtype=dtype) @ L.T
    wt = torch.randn(trials, d, generator=g, dtype=dtype)
    if w is not None:
        wt = torch.as_tensor(w, dtype=dtype).reshape(1, d).repeat(trials, 1)
    yall = torch.einsum("tnd,td->tn", X, wt)
    y = yall[:, :n]
    if sigma > 0:
        y = y + sigma * torch.randn(trials, n, generator=g, dtype=dtype)
    if flip > 0:
        y = torch.where(torch.rand(trials, n, generator=g, dtype=dtype) < flip, -y, y)
    return X[:, :n], y, X[:, n], yall[:, n], wt, torch.rand(2, generator=g)


def _check(p, want, atol):
    X, y, xq, yq, wt, _ = want
    for got, ref in ((p.X, X), (p.y, y), (p.xq, xq), (p.yq, yq), (p.w, wt)):
        assert got.shape == ref.shape and got.dtype == ref.dtype
        assert torch.allclose(got, ref, rtol=0, atol=atol)


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"sigma": 0.3},
        {"flip": 0.4},
        {"sigma": 0.2, "flip": 1.0},
        {"w": [1.0, -1.0, 0.5, 2.0]},
        {"w": [0.5, 0.0, -1.0, 1.0], "sigma": 0.1, "flip": 0.3},
    ],
)
def test_prompts_replay_the_documented_draws(kw):
    Q = data.random_orthogonal(4, gen(1))
    g = gen(7)
    p = data.prompts(6, 3, eigenvalues=LAM, Q=Q, generator=g, **kw)
    want = _replay(6, 3, LAM, Q, 7, **kw)
    _check(p, want, 1e-12)
    assert torch.equal(torch.rand(2, generator=g), want[-1])  # nothing else drawn


def test_prompts_zero_noise_and_zero_flip_draw_nothing_more():
    Q = data.random_orthogonal(4, gen(1))
    g = gen(7)
    p = data.prompts(5, 2, eigenvalues=LAM, Q=Q, generator=g, sigma=0.0, flip=0.0)
    want = _replay(5, 2, LAM, Q, 7)
    _check(p, want, 1e-12)
    assert torch.equal(torch.rand(2, generator=g), want[-1])


def test_prompts_float32_and_a_float32_basis():
    Q = data.random_orthogonal(4, gen(1))
    kw = {"w": [1.0, -1.0, 0.5, 2.0], "sigma": 0.3, "flip": 0.5}
    p = data.prompts(6, 3, eigenvalues=LAM, Q=Q, generator=gen(7), dtype=torch.float32, **kw)
    _check(p, _replay(6, 3, LAM, Q, 7, dtype=torch.float32, **kw), 1e-5)
    # the square root is formed in float64 even from a float32 basis
    Q32 = Q.float()
    q = data.prompts(6, 3, eigenvalues=LAM, Q=Q32, generator=gen(7))
    _check(q, _replay(6, 3, LAM, Q32.double(), 7), 1e-13)


def test_prompts_flip_one_negates_every_label_and_results_are_independent():
    Q = data.random_orthogonal(4, gen(1))
    w = [1.0, 2.0, 3.0, 4.0]
    p = data.prompts(4, 3, eigenvalues=LAM, Q=Q, generator=gen(2), w=w, flip=1.0)
    assert torch.allclose(p.y, -(p.X @ torch.tensor(w, dtype=F64)), atol=1e-12)
    assert torch.allclose(p.yq, p.xq @ torch.tensor(w, dtype=F64), atol=1e-12)
    p.w[0, 0] = 100.0  # each prompt owns its copy of the fixed task
    assert float(p.w[1, 0]) == 1.0


def test_prompts_parameter_checks():
    Q = data.random_orthogonal(2, gen(1))
    msg_s = "parameter 'sigma' = -0.1 is not allowed: expected >= 0"
    with pytest.raises(ValueError, match=_exact(msg_s)):
        data.prompts(2, 2, eigenvalues=[1.0, 1.0], Q=Q, generator=gen(0), sigma=-0.1)
    for f in (-0.5, 1.5):
        msg_f = f"parameter 'flip' = {f} is not allowed: expected in [0, 1]"
        with pytest.raises(ValueError, match=_exact(msg_f)):
            data.prompts(2, 2, eigenvalues=[1.0, 1.0], Q=Q, generator=gen(0), flip=f)
    data.prompts(2, 2, eigenvalues=[1.0, 1.0], Q=Q, generator=gen(0), flip=0.0)
    data.prompts(2, 2, eigenvalues=[1.0, 1.0], Q=Q, generator=gen(0), flip=1.0)


# -- embed -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("batch", [(), (3,), (2, 3)])
def test_embed_against_a_loop(batch):
    n, d = 4, 3
    g = gen(11)
    X = torch.randn(*batch, n, d, generator=g, dtype=F64)
    y = torch.randn(*batch, n, generator=g, dtype=F64)
    xq = torch.randn(*batch, d, generator=g, dtype=F64)
    E = data.embed(X, y, xq)
    assert E.shape == (*batch, d + 1, n + 1)
    want = torch.zeros(*batch, d + 1, n + 1, dtype=F64)
    for i in range(n):
        want[..., :d, i] = X[..., i, :]
        want[..., d, i] = y[..., i]
    want[..., :d, n] = xq  # the query column, label slot left 0
    assert torch.equal(E, want)
