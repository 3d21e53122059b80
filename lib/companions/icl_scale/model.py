"""The one-layer linear self-attention (LSA) of eq. (5.1), its prediction (eq. (5.2), corrected),
the blocks of eq. (5.3), and the rank-r model ``U = (W^K)^T W^Q`` of Section 5.4."""

from __future__ import annotations

import torch


def lsa(E: torch.Tensor, W_PV: torch.Tensor, W_KQ: torch.Tensor, rho: float) -> torch.Tensor:
    """Eq. (5.1): ``f(E) = E + W^PV E (E^T W^KQ E) / rho`` (with the residual connection)."""
    return E + W_PV @ E @ (E.transpose(-1, -2) @ W_KQ @ E) / rho


def prediction(E: torch.Tensor, W_PV: torch.Tensor, W_KQ: torch.Tensor, rho: float):
    """The entry ``(d+1, N+1)`` of eq. (5.1)'s output, the prediction for the query, computed
    without forming the ``(N+1) x (N+1)`` attention matrix: the last row of ``W^PV E`` against
    the last column of ``E^T W^KQ E``."""
    row = torch.einsum("j,...jn->...n", W_PV[-1], E)  # (W^PV E)[d+1, :]
    col = E.transpose(-1, -2) @ (W_KQ @ E[..., -1:])  # (E^T W^KQ E)[:, N+1]
    return E[..., -1, -1] + (row.unsqueeze(-2) @ col).squeeze(-1).squeeze(-1) / rho


def prediction_eq_5_2(E: torch.Tensor, W_PV: torch.Tensor, W_KQ: torch.Tensor, rho: float):
    """Eq. (5.2) as it should read (the text's fraction is garbled):
    ``((w_21^PV)^T  w_22^PV) (E E^T / rho) (W_11^KQ ; (w_21^KQ)^T) x_q``."""
    d = E.shape[-2] - 1
    xq = E[..., :d, -1]
    left = W_PV[-1, :]  # ((w_21^PV)^T, w_22^PV)
    right = W_KQ[:, :d]  # (W_11^KQ ; (w_21^KQ)^T), (d+1) x d
    EEt = E @ E.transpose(-1, -2) / rho
    return torch.einsum("i,...ij,jk,...k->...", left, EEt, right, xq)


def blocks(U: torch.Tensor, u) -> tuple[torch.Tensor, torch.Tensor]:
    """Eq. (5.3): ``W^PV = [[0, 0], [0, u]]``, ``W^KQ = [[U, 0], [0, 0]]``."""
    d = U.shape[-1]
    W_PV = U.new_zeros(d + 1, d + 1)
    W_PV[d, d] = torch.as_tensor(u, dtype=U.dtype, device=U.device)
    W_KQ = U.new_zeros(d + 1, d + 1)
    W_KQ[:d, :d] = U
    return W_PV, W_KQ


def reduced_prediction(X, y, xq, U, u, rho: float) -> torch.Tensor:
    """``y_hat = (u / rho) sum_i y_i x_i^T U x_q``: eq. (5.2) with the blocks of eq. (5.3)."""
    h = torch.einsum("...n,...nd->...d", y, X)
    return u * torch.einsum("...i,ij,...j->...", h, U, xq) / rho


class LowRankLSA(torch.nn.Module):
    """The rank-r LSA of Section 5.4: ``W^KQ_11 = U = (W^K)^T W^Q`` with ``W^K, W^Q`` of shape
    ``r x d``, ``w^PV_22 = u``, the other blocks zero (eq. (5.3)); ``rho`` is set per call."""

    def __init__(self, d: int, r: int, generator: torch.Generator, init_scale: float = 0.3):
        super().__init__()
        if not 1 <= r <= d:
            raise ValueError(f"parameter 'r' = {r} is not allowed: expected 1 <= r <= d = {d}")
        self.W_K = torch.nn.Parameter(init_scale * torch.randn(r, d, generator=generator))
        self.W_Q = torch.nn.Parameter(init_scale * torch.randn(r, d, generator=generator))
        self.u = torch.nn.Parameter(torch.ones(()))

    @property
    def U(self) -> torch.Tensor:
        return self.W_K.T @ self.W_Q

    def forward(self, E: torch.Tensor, rho: float) -> torch.Tensor:
        W_PV, W_KQ = blocks(self.U, self.u)
        return prediction(E, W_PV, W_KQ, rho)
