"""In-context regression prompts, shared by the topics that study in-context learning.

A prompt holds ``n`` examples ``(x_i, y_i)`` with Gaussian inputs and linear labels
``y_i = <w, x_i>``. The looped topic (dissertation, Chapter 8, Section 8.6) draws ``x ~ N(0, I)``
and ``w`` uniform on the unit sphere; the model-scale topic (Chapter 5, Section 5.4) draws
``x ~ N(0, Lambda)`` and ``w ~ N(0, I)``. Both use :func:`sample_prompts`.

Draws are made on the CPU from the caller's generator, in the requested dtype, and then moved, so
a seed gives the same prompts on every device.
"""

from __future__ import annotations

import torch

TASKS = ("sphere", "gaussian")


def sample_prompts(
    trials: int,
    n: int,
    d: int,
    generator: torch.Generator,
    *,
    dtype=torch.float64,
    device="cpu",
    cov_sqrt: torch.Tensor | None = None,
    task: str = "sphere",
):
    """``trials`` prompts of ``n`` examples in dimension ``d``; returns ``(X, w, y)`` with
    ``X`` of shape ``(trials, n, d)``, ``w`` of shape ``(trials, d)``, ``y = X w`` of shape
    ``(trials, n)``.

    - inputs: ``x = cov_sqrt @ z`` with ``z ~ N(0, I_d)`` (so ``x ~ N(0, cov_sqrt cov_sqrt^T)``);
      ``cov_sqrt=None`` is the identity and leaves ``z`` untouched;
    - task ``w``: ``"sphere"``, uniform on the unit sphere S^{d-1} (Definition 8.3), or
      ``"gaussian"``, ``w ~ N(0, I_d)`` (Section 5.4).

    ``X`` is drawn before ``w``, one ``randn`` call each.
    """
    if task not in TASKS:
        raise ValueError(f"parameter 'task' = {task!r} is not allowed: expected one of {TASKS}")
    X = torch.randn(trials, n, d, generator=generator, dtype=dtype)
    if cov_sqrt is not None:
        L = torch.as_tensor(cov_sqrt, dtype=dtype, device="cpu")
        if L.shape != (d, d):
            raise ValueError(
                f"parameter 'cov_sqrt' has shape {tuple(L.shape)}: expected ({d}, {d})"
            )
        X = X @ L.T
    w = torch.randn(trials, d, generator=generator, dtype=dtype)
    if task == "sphere":
        w = w / w.norm(dim=-1, keepdim=True)
    X, w = X.to(device), w.to(device)
    return X, w, (X @ w.unsqueeze(-1)).squeeze(-1)
