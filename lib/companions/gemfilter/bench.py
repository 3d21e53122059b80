"""The gemfilter topic's case for ``python -m companions bench``: one training step of the toy
LLaMA decoder on the needle task (:func:`companions.gemfilter.model.train_needle`)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from companions.bench import BenchCase
from companions.gemfilter import complexity as gc
from companions.gemfilter import model as gm


def trainer(layers, width, *, heads, kv_heads, mlp, fillers, n, batch, seed=0):
    def build():
        model = gm.build_model(
            layers,
            width,
            heads=heads,
            fillers=fillers,
            max_len=n,
            kv_heads=kv_heads,
            mlp=mlp,
            seed=seed,
        )
        model.train()
        g = torch.Generator().manual_seed(seed)
        opt = torch.optim.Adam(model.parameters(), lr=3e-3)

        def step():  # what companions.train.fit does per step
            ids, answer, _ = gm.needle_prompts(batch, n, fillers, g)
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(gm.last_logits(model, ids), answer)
            float(loss.detach())
            loss.backward()
            opt.step()

        return step

    return build


def step_flops(layers, width, *, heads, kv_heads, mlp, fillers, n, batch) -> float:
    """Forward FLOPs of a step (:func:`complexity.prefill_flops`) times three (forward and
    backward, the usual estimate)."""
    return (
        3.0
        * batch
        * gc.prefill_flops(
            n, layers, width=width, heads=heads, kv_heads=kv_heads, mlp=mlp, vocab=fillers + 3
        )
    )


def bench_cases() -> list[BenchCase]:
    shape = dict(layers=4, width=32, heads=4, kv_heads=2, mlp=64, fillers=32, n=48, batch=32)
    return [
        BenchCase(
            "gemfilter",
            "gemfilter default: 4 layers width 32, n=48, 32 prompts",
            trainer(**shape),
            flops=step_flops(**shape),
            note="transformers LlamaForCausalLM, eager attention, float32",
        )
    ]
