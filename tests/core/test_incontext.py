"""The shared in-context prompt sampler (companions.incontext)."""

import pytest
import torch

from companions.incontext import sample_prompts


def _looped_reference(trials, n, d, generator, dtype=torch.float64):
    """The looped topic's sampler as it was before it moved to the core (Section 8.6)."""
    X = torch.randn(trials, n, d, generator=generator, dtype=dtype)
    theta = torch.randn(trials, d, generator=generator, dtype=dtype)
    theta = theta / theta.norm(dim=-1, keepdim=True)
    return X, theta, (X @ theta.unsqueeze(-1)).squeeze(-1)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_default_draws_are_the_looped_topics_bit_for_bit(dtype):
    new = sample_prompts(7, 5, 3, torch.Generator().manual_seed(3), dtype=dtype)
    old = _looped_reference(7, 5, 3, torch.Generator().manual_seed(3), dtype=dtype)
    for a, b in zip(new, old):
        assert a.dtype == dtype and torch.equal(a, b)


def test_looped_topic_uses_the_core_sampler():
    from companions.looped import construction, experiments, training

    assert construction.sample_prompts is sample_prompts
    assert experiments.sample_prompts is sample_prompts
    assert training.sample_prompts is sample_prompts


def test_gaussian_task_and_covariance():
    L = torch.tensor([[2.0, 0.0], [1.0, 0.5]], dtype=torch.float64)
    X, w, y = sample_prompts(
        20000, 4, 2, torch.Generator().manual_seed(0), cov_sqrt=L, task="gaussian"
    )
    assert torch.allclose(y, (X @ w.unsqueeze(-1)).squeeze(-1))
    cov = torch.einsum("tni,tnj->ij", X, X) / (20000 * 4)
    assert torch.allclose(cov, L @ L.T, atol=0.05)  # [[4, 2], [2, 1.25]], not L or L^T L
    assert abs(float((w**2).mean()) - 1.0) < 0.03  # N(0, I), not the sphere (mean 1/2)
    # the same generator state gives the same z: X is cov_sqrt applied to the identity draw
    Z, _, _ = sample_prompts(20000, 4, 2, torch.Generator().manual_seed(0), task="gaussian")
    assert torch.allclose(X, Z @ L.T)


def test_bad_arguments_name_the_parameter():
    g = torch.Generator().manual_seed(0)
    with pytest.raises(ValueError, match="'task'"):
        sample_prompts(1, 2, 2, g, task="uniform")
    with pytest.raises(ValueError, match="'cov_sqrt'"):
        sample_prompts(1, 2, 2, g, cov_sqrt=torch.eye(3))


def test_draws_are_moved_to_the_device_after_drawing():
    # the meta device stands in for a GPU: every output lands there
    X, w, y = sample_prompts(3, 4, 2, torch.Generator().manual_seed(0), device="meta")
    assert {t.device.type for t in (X, w, y)} == {"meta"}
    assert (X.shape, w.shape, y.shape) == ((3, 4, 2), (3, 2), (3, 4))


def test_cov_sqrt_is_taken_in_the_requested_dtype():
    g = torch.Generator().manual_seed(0)
    L64 = torch.tensor([[2.0, 0.0], [1.0, 0.5]], dtype=torch.float64)
    for L in (L64, L64.tolist()):
        X, w, y = sample_prompts(3, 4, 2, g, dtype=torch.float32, cov_sqrt=L)
        assert X.dtype == w.dtype == y.dtype == torch.float32


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_cov_sqrt_on_a_gpu_is_applied_on_the_cpu_draws():
    L = torch.eye(2, dtype=torch.float64, device="cuda")
    X, _, _ = sample_prompts(3, 4, 2, torch.Generator().manual_seed(0), cov_sqrt=L)
    Z, _, _ = sample_prompts(3, 4, 2, torch.Generator().manual_seed(0))
    assert torch.equal(X, Z)


def test_sphere_tasks_have_unit_norm_and_gaussian_tasks_do_not():
    g = torch.Generator().manual_seed(1)
    _, w, _ = sample_prompts(50, 2, 5, g)
    assert torch.allclose(w.norm(dim=-1), torch.ones(50, dtype=torch.float64))
    _, w, _ = sample_prompts(50, 2, 5, g, task="gaussian")
    assert not torch.allclose(w.norm(dim=-1), torch.ones(50, dtype=torch.float64), atol=0.05)
