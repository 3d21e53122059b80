"""The training loop shared by chapters: progress bar, loss history, optional early stop."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import torch
from tqdm.std import tqdm  # plain text bars: tqdm.auto needs ipywidgets in a notebook


@dataclass
class History:
    """Per-step records of a run: ``steps``, ``loss`` and any extra metrics the step returned."""

    steps: list[int] = field(default_factory=list)
    loss: list[float] = field(default_factory=list)
    metrics: dict[str, list[float]] = field(default_factory=dict)
    stopped_early: bool = False

    def record(self, step: int, loss: float, **metrics: float) -> None:
        self.steps.append(step)
        self.loss.append(loss)
        for k, v in metrics.items():
            self.metrics.setdefault(k, []).append(float(v))


def fit(
    loss_fn: Callable[[int], torch.Tensor | tuple[torch.Tensor, dict]],
    parameters,
    steps: int,
    lr: float = 1e-2,
    optimizer: str = "adam",
    log_every: int = 10,
    stop_below: float | None = None,
    desc: str = "training",
    progress: bool = True,
) -> History:
    """Minimise ``loss_fn(step)`` over ``parameters`` for ``steps`` steps.

    ``loss_fn`` draws its own batch for the given step (so runs are reproducible from a seeded
    generator) and returns the loss, or ``(loss, metrics_dict)``. The loss is recorded every
    ``log_every`` steps and at the last step. Stops early when the loss drops below
    ``stop_below``; a non-finite loss raises ``FloatingPointError`` naming the step.
    """
    if steps < 1:
        raise ValueError(f"parameter 'steps' = {steps!r} is not allowed: expected an integer >= 1")
    if lr <= 0:
        raise ValueError(f"parameter 'lr' = {lr!r} is not allowed: expected a real number > 0")
    params = list(parameters)
    optimizers = {"adam": torch.optim.Adam, "sgd": torch.optim.SGD}
    if optimizer not in optimizers:
        raise ValueError(
            f"parameter 'optimizer' = {optimizer!r} is not allowed: "
            f"expected one of {sorted(optimizers)}"
        )
    opt = optimizers[optimizer](params, lr=lr)
    history = History()
    bar = tqdm(range(steps), desc=desc, disable=not progress, mininterval=0.5)
    for step in bar:
        opt.zero_grad(set_to_none=True)
        out = loss_fn(step)
        loss, metrics = out if isinstance(out, tuple) else (out, {})
        value = float(loss.detach())
        if not math.isfinite(value):
            bar.close()
            raise FloatingPointError(
                f"loss became {value} at step {step}: lower 'lr' or check the model"
            )
        loss.backward()
        opt.step()
        last = step == steps - 1
        if step % log_every == 0 or last or (stop_below is not None and value < stop_below):
            history.record(step, value, **metrics)
            bar.set_postfix(loss=f"{value:.3g}", refresh=False)
        if stop_below is not None and value < stop_below:
            history.stopped_early = True
            break
    bar.close()
    return history
