"""companions.looped.theory at the points where a plausible bug does not vanish: eigenvalues that
are not 1 and 9 (where a product and a ratio agree), alpha != 1, a radius != 2, batches of more
than one axis, python-float step sizes, and the boundaries of every cut-off."""

import math

import pytest
import torch

from companions.looped import theory as lth


@pytest.fixture
def eigh_batch_sizes(monkeypatch) -> list[int]:
    """The number of matrices in each call of ``torch.linalg.eigvalsh`` made during the test."""
    sizes = []
    eigvalsh = torch.linalg.eigvalsh

    def spy(A):
        sizes.append(A[..., 0, 0].numel())
        return eigvalsh(A)

    monkeypatch.setattr(torch.linalg, "eigvalsh", spy)
    return sizes


def test_condition_number_is_the_squared_ratio_of_singular_values():
    X = torch.randn(4, 10, 3, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    s = torch.linalg.svdvals(X)  # descending
    expected = (s[:, 0] / s[:, -1]) ** 2
    assert torch.allclose(lth.condition_number(X), expected, rtol=1e-12, atol=0)
    assert torch.allclose(lth.smoothness(X), s[:, 0] ** 2, rtol=1e-12, atol=0)


def test_singularity_cut_off_is_d_eps_times_lambda_max():
    # X = diag(2^-25, 2^-10, 2^-1, 1): X^T X = diag(2^-50, 2^-20, 2^-2, 1) exactly, and
    # lambda_min = 2^-50 = d eps lambda_max with d = 4 (eps = 2^-52) is singular
    def kappa(*diagonal):
        X = torch.diag(torch.tensor(diagonal, dtype=torch.float64))
        assert torch.equal(lth.gram_eigenvalues(X), torch.tensor(diagonal).double().pow(2))
        return float(lth.condition_number(X))

    assert math.isinf(kappa(2.0**-25, 2.0**-10, 0.5, 1.0))
    assert kappa(2.0**-24, 2.0**-10, 0.5, 1.0) == 2.0**48  # four times above: finite, exact
    assert math.isinf(float(lth.condition_number(torch.zeros(3, 2, dtype=torch.float64))))


def test_eigenvalues_in_parts_of_one_batch_axis_and_of_1_x_1_matrices():
    X = torch.randn(11, 6, 3, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    G = X.transpose(-1, -2) @ X
    whole = torch.linalg.eigvalsh(G)
    for parts in (1, 4, 11, 12):
        assert torch.allclose(lth.eigvalsh_in_parts(G, parts), whole, rtol=0, atol=1e-12)
    one = torch.rand(5, 2, 1, 1, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    assert torch.equal(lth.eigvalsh_in_parts(one, 3), one[..., 0])


@pytest.mark.parametrize("shape", [(11, 3, 3), (2, 3, 5, 3, 3)])
def test_no_call_takes_more_than_max_batch_matrices(eigh_batch_sizes, shape):
    G = torch.eye(3, dtype=torch.float64).expand(*shape).clone()
    out = lth.eigvalsh_in_parts(G, 4)
    assert out.shape == shape[:-1] and torch.equal(out, torch.ones(shape[:-1], dtype=G.dtype))
    total = math.prod(shape[:-2])
    sizes = eigh_batch_sizes
    assert max(sizes) <= 4 and sum(sizes) == total and len(sizes) == math.ceil(total / 4)


def test_python_float_step_keeps_float64_precision():
    # a step given as a python float must not be rounded to float32 (1e-8 relative): the curves
    # are exact to round-off, so they must agree with plain float64 GD to 1e-14
    X = torch.randn(3, 8, 2, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    theta = torch.nn.functional.normalize(
        torch.randn(3, 2, generator=torch.Generator().manual_seed(5), dtype=torch.float64), dim=-1
    )
    eta = 0.1 / float(lth.smoothness(X).max())
    err, sq = lth.exact_error_curves(X, theta, -3.0, eta, 6)
    y = (X @ theta.unsqueeze(-1)).squeeze(-1)
    w = torch.zeros_like(theta)
    for t in range(7):
        e = w - theta
        assert torch.allclose(sq[t], (e**2).sum(-1), rtol=1e-13, atol=0)
        assert torch.allclose(err[t], 3.0 * ((w * theta).sum(-1) - 1).abs(), rtol=1e-13, atol=0)
        grad = ((X @ w.unsqueeze(-1)).squeeze(-1) - y).unsqueeze(-1) * X
        w = w - eta * grad.sum(-2)
    lam = torch.linalg.eigvalsh(X.transpose(-1, -2) @ X)
    rate = lth.fixed_step_rate(X, 0.1)
    assert rate.dtype == torch.float64
    assert torch.equal(rate, (1 - 0.1 * lam).abs().amax(-1))


def test_fixed_step_rate_is_per_prompt():
    X = torch.randn(2, 3, 6, 2, generator=torch.Generator().manual_seed(6), dtype=torch.float64)
    eta = torch.full((2, 3), 0.05, dtype=torch.float64)
    rate = lth.fixed_step_rate(X, eta)
    assert rate.shape == (2, 3)
    for i in range(2):
        for j in range(3):
            lam = torch.linalg.eigvalsh(X[i, j].T @ X[i, j])
            assert float(rate[i, j]) == pytest.approx(float((1 - 0.05 * lam).abs().max()), 1e-14)


def test_null_space_error_over_two_batch_axes_and_its_default_alpha():
    X = torch.randn(2, 3, 2, 5, generator=torch.Generator().manual_seed(7), dtype=torch.float64)
    theta = torch.randn(2, 3, 5, generator=torch.Generator().manual_seed(8), dtype=torch.float64)
    got = lth.null_space_error(X, theta)
    assert got.shape == (2, 3)
    for i in range(2):
        for j in range(3):
            Q, _ = torch.linalg.qr(X[i, j].T)  # orthonormal basis of the row space
            row = Q @ (Q.T @ theta[i, j])
            assert float(got[i, j]) == pytest.approx(float(((theta[i, j] - row) ** 2).sum()), 1e-12)
    assert torch.equal(lth.null_space_error(X, theta, -2.5), 2.5 * got)


def test_bounds_default_to_alpha_and_radius_one_and_scale_with_them():
    kappa, T = 2.5, 7
    assert float(lth.bound_theorem_8_16(kappa, T)) == pytest.approx(math.exp(-T / 5), 1e-14)
    assert float(lth.bound_tight(kappa, T)) == pytest.approx(0.6**T, 1e-14)
    assert float(lth.bound_theorem_8_25(kappa, T)) == pytest.approx(math.exp(-T / 2.5), 1e-14)
    assert float(lth.bound_tight(kappa, T, -3.0)) == pytest.approx(3 * 0.6**T, 1e-14)
    assert float(lth.bound_theorem_8_25(kappa, T, 3.0)) == pytest.approx(
        9 * math.exp(-T / 2.5), 1e-14
    )


@pytest.mark.parametrize("kappa", [1.0, 1.5, 4.0, 30.0])
@pytest.mark.parametrize("alpha", [1.0, -3.0, 0.2])
def test_loops_needed_is_where_the_bound_reaches_eps(kappa, alpha):
    eps = 1e-3
    T16 = lth.loops_needed_theorem_8_16(kappa, alpha, eps)
    assert float(lth.bound_theorem_8_16(kappa, T16, alpha)) == pytest.approx(eps, 1e-12)
    tight = lth.loops_needed_tight(kappa, alpha, eps)
    T = math.ceil(tight - 1e-9)
    assert float(lth.bound_tight(kappa, T, alpha)) <= eps * (1 + 1e-12)
    assert float(lth.bound_tight(kappa, T - 1, alpha)) > eps  # the smallest such T
    if kappa > 1:
        assert float(lth.bound_tight(kappa, tight, alpha)) == pytest.approx(eps, 1e-9)


def test_loops_needed_is_zero_when_eps_is_already_met():
    # at T = 0 the error is |alpha| <= eps: no loop is needed
    for kappa in (1.5, 4.0):
        assert lth.loops_needed_theorem_8_16(kappa, 0.5, 0.5) == 0.0
        assert lth.loops_needed_theorem_8_16(kappa, -0.5, 0.8) == 0.0
        assert lth.loops_needed_tight(kappa, 0.5, 0.8) == 0.0


def test_marchenko_pastur_in_float64_and_its_open_interval():
    for r in (0.01, 0.3, 0.7):
        expected = ((1 + math.sqrt(r)) / (1 - math.sqrt(r))) ** 2
        got = lth.marchenko_pastur_kappa(r)
        assert got.dtype == torch.float64 and float(got) == pytest.approx(expected, 1e-14)
    for bad in (0.0, 1.0, -0.1, [0.5, 0.0]):
        with pytest.raises(ValueError, match=r"^parameter 'ratio_d_over_n' must lie in \(0, 1\)$"):
            lth.marchenko_pastur_kappa(bad)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_on_a_gpu_every_tensor_stays_there_and_eigh_calls_are_batched(eigh_batch_sizes):
    X = torch.randn(3, 8, 2, dtype=torch.float64, device="cuda")
    theta = torch.randn(3, 2, dtype=torch.float64, device="cuda")
    err, sq = lth.exact_error_curves(X, theta, 1.0, 0.01, 4)
    assert err.is_cuda and sq.is_cuda
    assert lth.fixed_step_rate(X, 0.01).is_cuda
    n = 2 * lth.CUDA_EIGH_BATCH + 1
    eigh_batch_sizes.clear()  # count only the calls of the next line
    lth.gram_eigenvalues(torch.randn(n, 3, 2, dtype=torch.float64, device="cuda"))
    assert max(eigh_batch_sizes) <= lth.CUDA_EIGH_BATCH and sum(eigh_batch_sizes) == n


def test_bounds_keep_the_dtype_of_tensor_arguments():
    kappa = torch.tensor([2.0, 5.0])  # float32, as a float32 run would pass them
    loops = torch.arange(4, dtype=torch.float32)[:, None]
    for bound in (lth.bound_theorem_8_16, lth.bound_tight, lth.bound_theorem_8_25):
        assert bound(kappa, loops).dtype == torch.float32
        assert bound(2.0, 3).dtype == torch.float64
