"""The looped topic's cases for ``python -m companions bench``: the training step of
:func:`companions.looped.training.train_looped_transformer`, beside the LinearTransformer-style
peer on the matched task."""

from __future__ import annotations

import torch

from companions.bench import BenchCase, linear_transformer_peer, linear_transformer_peer_flops
from companions.looped.training import looped_training_problem


def step_flops(d: int, n: int, loops: int, batch: int) -> float:
    """Matrix-product FLOPs of one step in Gram form, per prompt (``D = d+1``): the labels
    ``y = X w`` (``2 n d``), ``C = Z^T Z`` (``2 n D^2``, no gradient); per loop ``z Q``,
    ``(zQ) C`` (computed elementwise, counted here all the same) and ``(zQC) P`` (``2 D^2``
    each). Backward: the product by ``C`` needs one product (``C`` needs no gradient), the
    others two, except ``z Q`` in the first loop (``z`` is data): ``4 + 5 (loops - 1)``
    products of ``2 D^2``."""
    D = d + 1
    return batch * (2 * n * d + 2 * n * D * D + 2 * D * D * (3 * loops + 4 + 5 * (loops - 1)))


def trainer(d, n, loops, batch, dtype=torch.float32, seed=0):
    def build():
        g = torch.Generator().manual_seed(seed)
        model, loss_fn = looped_training_problem(
            d, n, loops=loops, batch=batch, generator=g, dtype=dtype
        )
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)

        def step():  # what companions.train.fit does per step
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(0)
            float(loss.detach())
            loss.backward()
            opt.step()

        return step

    return build


def bench_cases() -> list[BenchCase]:
    d, n, loops, batch = 5, 20, 3, 4000
    matched = f"trainer d={d} N={n} {loops} loops {batch} prompts"
    return [
        BenchCase(
            "looped",
            matched,
            trainer(d, n, loops, batch),
            flops=step_flops(d, n, loops, batch),
            note="Gram form, float32 as the chapter now trains",
        ),
        BenchCase(
            "looped",
            "peer: LinearTransformer-style (full Z, masked linear attention)",
            lambda: linear_transformer_peer(d, n, loops, batch),
            flops=linear_transformer_peer_flops(d, n, loops, batch),
            peer=matched,
            note="written in companions.bench as the reference for chengxiang/LinearTransformer",
        ),
        BenchCase(
            "looped",
            "looped-gd default: d=4 n=32 10 loops 256 prompts",
            trainer(4, 32, 10, 256),
            flops=step_flops(4, 32, 10, 256),
        ),
    ]
