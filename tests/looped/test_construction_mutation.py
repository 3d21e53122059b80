"""Mutation-killing tests of companions.looped.construction (issue 23).

Every expected value is computed independently: by hand for tiny cases, or by a plain-Python /
numpy reference written from the definitions (8.1, 8.2, Definitions 8.5-8.7, Lemma 8.13,
Theorem 8.14), never copied from the code's output.
"""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from companions.looped import construction as lc


def _prompt(n=4, d=2, batch=(), seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(*batch, n, d, generator=g, dtype=torch.float64)
    y = torch.randn(*batch, n, generator=g, dtype=torch.float64)
    q0 = torch.randn(*batch, d, generator=g, dtype=torch.float64)
    return X, y, q0


def _ref_attention_last_row(Z, Q, P):
    """Definition 8.6 entry by entry: only row n+1 of M is nonzero (ones left of the diagonal),
    so out[n] = sum_j (z_{n+1}^T Q z_j) z_j^T P and every other row is 0."""
    Z, Q, P = np.asarray(Z), np.asarray(Q), np.asarray(P)
    n = Z.shape[0] - 1
    out = np.zeros_like(Z)
    for j in range(n):
        out[n] += (Z[n] @ Q @ Z[j]) * (Z[j] @ P)
    return out


def _ref_looped(Z0, Q, P, etas):
    """Definition 8.7 for one prompt, with the attention reference above."""
    Z = np.array(np.asarray(Z0), dtype=float)
    n, d = Z.shape[0] - 1, Z.shape[1] - 1
    outs = [-Z[n, :d].copy()]
    for eta in etas:
        Z = Z - eta * _ref_attention_last_row(Z, Q, P)
        outs.append(-Z[n, :d].copy())
    return np.array(outs), Z


def _ref_gd(X, y, etas, theta0=None):
    """(8.2) with gradient (8.1): theta <- theta - eta (X^T X theta - X^T y)."""
    X, y = np.asarray(X), np.asarray(y)
    theta = np.zeros(X.shape[1]) if theta0 is None else np.array(theta0, dtype=float)
    its = [theta.copy()]
    for eta in etas:
        theta = theta - eta * (X.T @ (X @ theta) - X.T @ y)
        its.append(theta.copy())
    return np.array(its)


# --- causal_mask, input_matrix, construction_weights -------------------------------------------


def test_causal_mask_small_case_by_hand_and_defaults():
    M = lc.causal_mask(2)
    expected = torch.tensor([[0, 0, 0], [0, 0, 0], [1, 1, 0]], dtype=torch.float64)
    assert M.dtype == torch.float64 and M.device.type == "cpu"
    assert torch.equal(M, expected)
    M32 = lc.causal_mask(1, dtype=torch.float32)
    assert M32.dtype == torch.float32
    assert torch.equal(M32, torch.tensor([[0.0, 0.0], [1.0, 0.0]]))


def test_input_matrix_blocks_with_and_without_q0():
    X = torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], dtype=torch.float64)
    y = torch.tensor([7.0, 8.0, 9.0], dtype=torch.float64)
    q0 = torch.tensor([-1.0, -2.0], dtype=torch.float64)
    # Definition 8.5 written out by hand
    Z = lc.input_matrix(X, y, 0.5, q0)
    expected = torch.tensor([[1, 2, 7], [3, 4, 8], [5, 6, 9], [-1, -2, 0.5]], dtype=torch.float64)
    assert torch.equal(Z, expected)
    Z0 = lc.input_matrix(X, y, 2.0)
    expected[3] = torch.tensor([0, 0, 2.0], dtype=torch.float64)
    assert torch.equal(Z0, expected)
    assert Z0.dtype == torch.float64


def test_input_matrix_batched_and_dtype_follows_x():
    X, y, q0 = _prompt(n=3, d=2, batch=(2,), seed=1)
    X32, y32, q32 = X.float(), y.float(), q0.float()
    Z = lc.input_matrix(X32, y32, 3, q32)
    assert Z.shape == (2, 4, 3) and Z.dtype == torch.float32
    assert torch.equal(Z[:, :3, :2], X32) and torch.equal(Z[:, :3, 2], y32)
    assert torch.equal(Z[:, 3, :2], q32) and torch.all(Z[:, 3, 2] == 3)


def test_construction_weights_by_hand():
    Q, P = lc.construction_weights(2)
    assert torch.equal(Q, torch.eye(3, dtype=torch.float64))
    assert torch.equal(P, torch.diag(torch.tensor([1.0, 1.0, 0.0], dtype=torch.float64)))
    Q32, P32 = lc.construction_weights(1, dtype=torch.float32)
    assert Q32.dtype == torch.float32 and P32.dtype == torch.float32
    assert Q32.device.type == "cpu" and P32.device.type == "cpu"


def test_tensors_are_made_on_the_requested_device():
    # the "meta" device stands for any non-CPU device: a tensor made without the device argument
    # would land on the CPU.
    assert lc.causal_mask(2, device="meta").device.type == "meta"
    Q, P = lc.construction_weights(2, device="meta")
    assert Q.device.type == "meta" and P.device.type == "meta"
    Z = torch.zeros(4, 3, dtype=torch.float64, device="meta")
    # the mask must follow Z: a CPU mask times a meta tensor raises
    assert lc.linear_attention(Z, Q, P).device.type == "meta"


# --- attention --------------------------------------------------------------------------------


@pytest.mark.parametrize("attn", [lc.linear_attention, lc.linear_attention_last_row])
def test_attention_matches_definition_for_random_weights(attn):
    X, y, q0 = _prompt(n=4, d=3, seed=2)
    Z = lc.input_matrix(X, y, 0.7, q0)
    g = torch.Generator().manual_seed(3)
    Q = torch.randn(4, 4, generator=g, dtype=torch.float64)
    P = torch.randn(4, 4, generator=g, dtype=torch.float64)
    out = attn(Z, Q, P)
    assert out.shape == Z.shape
    np.testing.assert_allclose(out.numpy(), _ref_attention_last_row(Z, Q, P), atol=1e-12)


@pytest.mark.parametrize("attn", [lc.linear_attention, lc.linear_attention_last_row])
def test_attention_batched_equals_per_prompt(attn):
    X, y, q0 = _prompt(n=3, d=2, batch=(3,), seed=4)
    Z = lc.input_matrix(X, y, 1.3, q0)
    Q, P = lc.construction_weights(2)
    out = attn(Z, Q, P)
    for b in range(3):
        np.testing.assert_allclose(out[b].numpy(), _ref_attention_last_row(Z[b], Q, P), atol=1e-12)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_attention_keeps_the_dtype_of_z(dtype):
    # the 0/1 mask is made in Z's dtype, so the product is not promoted
    X, y, q0 = _prompt(n=3, d=2, seed=8)
    Z = lc.input_matrix(X, y, 1.0, q0).to(dtype)
    Q, P = (w.to(dtype) for w in lc.construction_weights(2))
    out = lc.linear_attention(Z, Q, P)
    assert out.dtype == dtype
    ref = _ref_attention_last_row(Z.double(), Q.double(), P.double())
    np.testing.assert_allclose(out.double().numpy(), ref, rtol=0.05, atol=0.05)


def test_attention_with_construction_is_lemma_8_13():
    # Lemma 8.13: last row = [q^T X^T X + alpha y^T X, 0], other rows 0.
    X = torch.tensor([[1.0, 0.0], [0.0, 2.0]], dtype=torch.float64)
    y = torch.tensor([1.0, 1.0], dtype=torch.float64)
    q0 = torch.tensor([1.0, 1.0], dtype=torch.float64)
    Q, P = lc.construction_weights(2)
    Z = lc.input_matrix(X, y, 1.0, q0)
    # by hand: q^T X^T X = [1, 4], y^T X = [1, 2] -> [2, 6, 0]
    expected = torch.zeros(3, 3, dtype=torch.float64)
    expected[2, :2] = torch.tensor([2.0, 6.0])
    for attn in (lc.linear_attention, lc.linear_attention_last_row):
        assert torch.allclose(attn(Z, Q, P), expected, atol=1e-14)


# --- step sizes -------------------------------------------------------------------------------


def test_per_loop_scalar_tensor_and_errors():
    like = torch.zeros(1, dtype=torch.float32)
    e = lc._per_loop(0.5, 3, like)
    assert e.dtype == torch.float32 and torch.equal(e, torch.full((3,), 0.5))
    like64 = torch.zeros(1, dtype=torch.float64)
    e64 = lc._per_loop(0.1, 2, like64)  # a Python float takes the dtype of `like`
    assert e64.dtype == torch.float64 and e64.tolist() == [0.1, 0.1]
    assert lc._per_loop([0.1, 0.2], None, like64).dtype == torch.float64
    e = lc._per_loop([0.1, 0.2], None, like)
    assert torch.allclose(e, torch.tensor([0.1, 0.2]))
    e = lc._per_loop([0.1, 0.2], 2, like)
    assert e.shape == (2,)
    with pytest.raises(ValueError, match=r"^parameter 'loops' is required when a single step"):
        lc._per_loop(0.5, None, like)
    with pytest.raises(ValueError, match=r"^parameter 'etas' has 2 step sizes but 'loops' = 3$"):
        lc._per_loop([0.1, 0.2], 3, like)
    with pytest.raises(ValueError, match=r"^parameter 'etas' is not allowed: Definition 8.7 needs"):
        lc._per_loop([0.1, 0.0], None, like)
    with pytest.raises(ValueError, match="eta\\^\\(t\\) > 0$"):
        lc._per_loop(-1.0, 2, like)
    # the smallest positive step is accepted (strict > 0 only)
    tiny = lc._per_loop(torch.tensor([1e-300], dtype=torch.float64), 1, torch.zeros(1).double())
    assert tiny.item() == 1e-300


# --- looped transformer = gradient descent ----------------------------------------------------


def _setup(n=5, d=3, batch=(), seed=5, alpha=0.8):
    X, y, q0 = _prompt(n=n, d=d, batch=batch, seed=seed)
    Z0 = lc.input_matrix(X, y, alpha, q0)
    Q, P = lc.construction_weights(d)
    return X, y, q0, Z0, Q, P


@pytest.mark.parametrize("form", ["faithful", "last_row", "gram"])
def test_looped_matches_reference_with_varying_steps(form):
    X, y, q0, Z0, _, _ = _setup()
    g = torch.Generator().manual_seed(6)
    Q = torch.randn(4, 4, generator=g, dtype=torch.float64) * 0.3
    P = torch.randn(4, 4, generator=g, dtype=torch.float64) * 0.3
    etas = [0.05, 0.11, 0.02]
    ref_outs, ref_Z = _ref_looped(Z0, Q, P, etas)
    if form == "gram":
        out, Z = lc.looped_transformer_gram(Z0, Q, P, etas)
        outs, Zt = lc.looped_transformer_gram(Z0, Q, P, etas, trajectory=True)
    else:
        kw = {"faithful": form == "faithful"}
        out, Z = lc.looped_transformer(Z0, Q, P, etas, **kw)
        outs, Zt = lc.looped_transformer(Z0, Q, P, etas, trajectory=True, **kw)
    np.testing.assert_allclose(out.numpy(), ref_outs[-1], atol=1e-12)
    np.testing.assert_allclose(Z.numpy(), ref_Z, atol=1e-12)
    assert outs.shape == (4, 3)
    np.testing.assert_allclose(outs.numpy(), ref_outs, atol=1e-12)
    np.testing.assert_allclose(Zt.numpy(), ref_Z, atol=1e-12)
    assert torch.equal(outs[0], -q0)


@pytest.mark.parametrize("gram", [False, True])
def test_theorem_8_14_per_prompt_steps_batched(gram):
    # etas of shape (T, batch): each prompt runs GD with its own steps; TF = alpha theta^(T)
    # with theta^(0) = -q^(0) / alpha (Theorem 8.14).
    alpha = 0.8
    X, y, q0, Z0, Q, P = _setup(batch=(2,), alpha=alpha)
    etas = torch.tensor([[0.05, 0.02], [0.03, 0.07], [0.04, 0.01]], dtype=torch.float64)
    f = lc.looped_transformer_gram if gram else lc.looped_transformer
    outs, Z = f(Z0, Q, P, etas, loops=3, trajectory=True)
    assert outs.shape == (4, 2, 3)
    for b in range(2):
        its = _ref_gd(X[b], y[b], etas[:, b].numpy(), theta0=(-q0[b] / alpha).numpy())
        np.testing.assert_allclose(outs[:, b].numpy(), alpha * its, atol=1e-12)
    # context rows and alpha never change
    assert torch.equal(Z[..., :5, :], Z0[..., :5, :])
    assert torch.allclose(Z[..., 5, 3], Z0[..., 5, 3])


def test_looped_default_is_faithful_and_not_trajectory(monkeypatch):
    X, y, q0, Z0, Q, P = _setup()
    calls = []

    def spy(Z, Q_, P_):
        calls.append("faithful")
        return lc.linear_attention_last_row(Z, Q_, P_)

    monkeypatch.setattr(lc, "linear_attention", spy)
    out, Z = lc.looped_transformer(Z0, Q, P, 0.05, loops=2)
    assert calls == ["faithful", "faithful"]
    assert out.shape == (3,)  # not a trajectory
    calls.clear()
    lc.looped_transformer(Z0, Q, P, 0.05, loops=2, faithful=False)
    assert calls == []  # faithful=False takes the last-row form
    out_g, _ = lc.looped_transformer_gram(Z0, Q, P, 0.05, loops=2)
    assert out_g.shape == (3,)


def test_looped_scalar_step_needs_loops():
    _, _, _, Z0, Q, P = _setup()
    with pytest.raises(ValueError, match="'loops' is required"):
        lc.looped_transformer(Z0, Q, P, 0.1)
    with pytest.raises(ValueError, match="'loops' is required"):
        lc.looped_transformer_gram(Z0, Q, P, 0.1)


# --- gradient descent -------------------------------------------------------------------------


def test_gradient_descent_one_step_by_hand():
    # X = I_2, y = (1, 2): grad at 0 is -(1, 2); one step of eta = 0.5 gives (0.5, 1).
    X = torch.eye(2, dtype=torch.float64)
    y = torch.tensor([1.0, 2.0], dtype=torch.float64)
    its = lc.gradient_descent(X, y, 0.5, loops=2)
    expected = torch.tensor([[0, 0], [0.5, 1.0], [0.75, 1.5]], dtype=torch.float64)
    assert torch.allclose(its, expected, atol=1e-15)


def test_gradient_descent_theta0_and_per_prompt_steps():
    X, y, _ = _prompt(n=6, d=3, batch=(2,), seed=7)
    theta0 = torch.tensor([[0.3, -0.1, 0.2], [1.0, 0.0, -1.0]], dtype=torch.float64)
    etas = torch.tensor([[0.05, 0.02], [0.03, 0.06]], dtype=torch.float64)
    its = lc.gradient_descent(X, y, etas, theta0=theta0)
    assert its.shape == (3, 2, 3)
    for b in range(2):
        ref = _ref_gd(X[b], y[b], etas[:, b].numpy(), theta0[b].numpy())
        np.testing.assert_allclose(its[:, b].numpy(), ref, atol=1e-12)


@settings(max_examples=15, deadline=None)
@given(
    st.integers(2, 6),
    st.integers(1, 3),
    st.floats(0.2, 3.0),
    st.lists(st.floats(0.001, 0.05), min_size=1, max_size=3),
    st.integers(0, 10**6),
)
def test_transformer_equals_alpha_times_gd_everywhere(n, d, alpha, etas, seed):
    # Theorem 8.14 as an invariant: for any prompt, alpha and positive steps,
    # TF(Z^(0)) trajectory = alpha * GD trajectory from theta^(0) = -q^(0)/alpha.
    X, y, q0 = _prompt(n=n, d=d, seed=seed)
    Z0 = lc.input_matrix(X, y, alpha, q0)
    Q, P = lc.construction_weights(d)
    gd = lc.gradient_descent(X, y, etas, theta0=-q0 / alpha)
    np.testing.assert_allclose(gd.numpy(), _ref_gd(X, y, etas, (-q0 / alpha).numpy()), atol=1e-10)
    for f in (lc.looped_transformer, lc.looped_transformer_gram):
        outs, _ = f(Z0, Q, P, etas, trajectory=True)
        np.testing.assert_allclose(outs.numpy(), alpha * gd.numpy(), atol=1e-10)
