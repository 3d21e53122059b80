"""The chapter's experiments: train the toy decoder on the needle task over seeds, run GemFilter at
every filter layer, the baselines, and the FLOP and KV-cache counts of Theorem 9.3."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from companions.gemfilter import complexity as gc
from companions.gemfilter import model as gm
from companions.train import progress


@dataclass
class SeedResult:
    """One trained model's accuracies on the test grid (arrays over needle depths).

    ``full``: the model on the whole prompt; ``layer_acc[r]`` / ``layer_cov[r]``: GemFilter with
    filter layer ``r`` (1-based): the answer's accuracy, and how often the needle's value is among
    the selected tokens; ``no_pool``, ``listing``: GemFilter at the chosen layer without the
    pooling kernel, and with the printed listing's sort; ``middle_row``, ``largest_row``: at the
    chosen layer with another row of the attention matrix in place of the last query (Figure
    G.3, :func:`model.row_scores`); ``random``: ``k`` random tokens."""

    seed: int
    r: int
    full: np.ndarray
    layer_acc: dict[int, np.ndarray]
    layer_cov: dict[int, np.ndarray]
    no_pool: np.ndarray
    listing: np.ndarray
    middle_row: np.ndarray
    largest_row: np.ndarray
    random: np.ndarray
    train_loss: list[float] = field(default_factory=list)
    train_steps: list[int] = field(default_factory=list)


def _by_depth(hit: torch.Tensor, depths: int) -> np.ndarray:
    return hit.float().view(depths, -1).mean(dim=1).cpu().numpy()


@torch.no_grad()
def evaluate(model, ids, *, answer, pos, k, filter_layer, pool, depths, generator) -> dict:
    """Every variant of :class:`SeedResult` on prompts ``ids`` (rows grouped by depth)."""
    m = len(model.model.layers)
    out = {"full": _by_depth(gm.answer_on(model, ids) == answer, depths)}
    acc, cov = {}, {}
    for r in range(1, m + 1):
        J = gm.select_tokens(gm.filter_scores(model, ids, r, pool=pool), k)
        acc[r] = _by_depth(gm.answer_on(model, ids, J) == answer, depths)
        cov[r] = _by_depth((J == (pos + 1).unsqueeze(1)).any(dim=1), depths)
        if r == filter_layer:
            listing = gm.select_tokens(gm.filter_scores(model, ids, r, pool=pool), k, listing=True)
            out["listing"] = _by_depth(gm.answer_on(model, ids, listing) == answer, depths)
    J1 = gm.select_tokens(gm.filter_scores(model, ids, filter_layer, pool=1), k)
    out["no_pool"] = _by_depth(gm.answer_on(model, ids, J1) == answer, depths)
    for row in ("middle", "largest"):
        Jw = gm.select_tokens(gm.row_scores(model, ids, filter_layer, row, pool=pool), k)
        out[f"{row}_row"] = _by_depth(gm.answer_on(model, ids, Jw) == answer, depths)
    Jr = gm.random_selection(ids.shape[0], ids.shape[1], k, generator)
    out["random"] = _by_depth(gm.answer_on(model, ids, Jr) == answer, depths)
    out["layer_acc"], out["layer_cov"] = acc, cov
    return out


@torch.no_grad()
def layer_coverage(model, ids, pos, k, pool) -> list[float]:
    """Per layer, the fraction of prompts whose needle value is among the ``k`` selected."""
    out = []
    for r in range(1, len(model.model.layers) + 1):
        J = gm.select_tokens(gm.filter_scores(model, ids, r, pool=pool), k)
        out.append(float((J == (pos + 1).unsqueeze(1)).any(dim=1).float().mean()))
    return out


def needle_study(cfg, device, progress: bool = True) -> list[SeedResult]:
    """Train ``cfg.seeds`` models (seeds ``cfg.seed, cfg.seed+1, ...``), choose each one's filter
    layer (``cfg.filter_layer``, or where it is 0 the source's rule on ``cfg.test_prompts``
    validation prompts: :func:`model.choose_filter_layer` with ``cfg.select_threshold``) and
    evaluate on ``cfg.test_prompts`` fresh prompts of length ``cfg.n_test`` per needle depth of
    ``cfg.depths``."""
    results = []
    depths = torch.tensor(cfg.depths, dtype=torch.float64)
    for i in range(cfg.seeds):
        s = cfg.seed + i
        model = gm.build_model(
            cfg.layers,
            cfg.width,
            heads=cfg.heads,
            fillers=cfg.fillers,
            max_len=cfg.n_test,
            kv_heads=cfg.kv_heads,
            mlp=cfg.mlp,
            seed=s,
        ).to(device)
        g = torch.Generator().manual_seed(10_000 + s)
        hist = gm.train_needle(
            model,
            cfg.steps,
            batch=cfg.batch,
            n_min=cfg.n_min,
            n_max=cfg.n_train,
            fillers=cfg.fillers,
            lr=cfg.lr,
            generator=g,
            desc=f"training seed {s}",
            progress=progress,
        )
        r = cfg.filter_layer
        if r == 0:
            gv = torch.Generator().manual_seed(30_000 + s)
            vid, _, vpos = gm.needle_prompts(cfg.test_prompts, cfg.n_test, cfg.fillers, gv)
            cov = layer_coverage(model, vid.to(device), vpos.to(device), cfg.k, cfg.pool)
            r = gm.choose_filter_layer(cov, cfg.select_threshold)
        gt = torch.Generator().manual_seed(20_000 + s)
        dep = depths.repeat_interleave(cfg.test_prompts)
        ids, answer, pos = gm.needle_prompts(len(dep), cfg.n_test, cfg.fillers, gt, depth=dep)
        ev = evaluate(
            model,
            ids.to(device),
            answer=answer.to(device),
            pos=pos.to(device),
            k=cfg.k,
            filter_layer=r,
            pool=cfg.pool,
            depths=len(cfg.depths),
            generator=gt,
        )
        results.append(SeedResult(seed=s, r=r, train_loss=hist.loss, train_steps=hist.steps, **ev))
    return results


def seed_means(results: list[SeedResult], key: str, layer: int | str | None = None) -> list[float]:
    """Per seed, the accuracy (or coverage, ``key='layer_cov'``) averaged over needle depths;
    ``layer='chosen'`` takes each seed's chosen filter layer."""
    out = []
    for res in results:
        v = getattr(res, key)
        if layer is not None:
            v = v[res.r if layer == "chosen" else layer]
        out.append(float(np.mean(v)))
    return out


# ------------------------------------------------------------------------------------------------
# Counting (Theorem 9.3 on the toy's architecture)
# ------------------------------------------------------------------------------------------------
@torch.no_grad()
def generate_costs(model, ids: torch.Tensor, t: int, index: torch.Tensor | None = None) -> dict:
    """Greedy generation of ``t`` tokens after a prefill of ``ids`` (or of its sub-sequence on
    ``index``), with a KV cache: the FLOPs of the prefill and of the ``t`` steps (counted by
    FlopCounterMode), and the elements in the cache after the prefill and at the end."""
    if index is not None:
        ids = torch.gather(ids, 1, index)
    state = {}

    def prefill():
        state["out"] = model(input_ids=ids, use_cache=True, logits_to_keep=1)

    pre = gc.count_flops(prefill)
    cache = state["out"].past_key_values
    after_prefill = gc.measured_cache_elements(cache)
    nxt = state["out"].logits[:, -1:].argmax(-1)

    def steps():
        nonlocal nxt
        c = cache
        for _ in range(t):
            o = model(input_ids=nxt, past_key_values=c, use_cache=True, logits_to_keep=1)
            c = o.past_key_values
            nxt = o.logits[:, -1:].argmax(-1)
        state["cache"] = c

    gen = gc.count_flops(steps)
    return {
        "prefill_flops": pre,
        "gen_flops": gen,
        "cache_prefill": after_prefill,
        "cache_end": gc.measured_cache_elements(state["cache"]),
    }


@torch.no_grad()
def cost_sweep(model, n_values, *, k, t, r, fillers, generator) -> list[dict]:
    """For each prompt length ``n``: standard generation (prefill ``n``, ``t`` steps) against
    GemFilter (first pass of ``r`` layers on ``n``, then prefill ``k`` and ``t`` steps), counted
    on ``model``; with the analytic counts of :mod:`companions.gemfilter.complexity`. The
    lengths go through :func:`companions.train.progress` (a dry run counts the first only)."""
    rows = []
    for n in progress(n_values, desc="cost sweep, prompt lengths"):
        ids, _, _ = gm.needle_prompts(1, n, fillers, generator)
        std = generate_costs(model, ids, t)
        state = {}

        def first_pass():
            state["s"] = gm.filter_scores(model, ids, r)

        filt = gc.count_flops(first_pass)
        J = gm.select_tokens(state["s"], k)
        gem = generate_costs(model, ids, t, index=J)
        rows.append(dict(n=n, std=std, gem=gem, filter_flops=filt))
    return rows
