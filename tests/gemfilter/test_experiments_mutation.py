"""Tests of gemfilter/experiments.py written for its mutants (issue 23, mutation testing).

- ``_by_depth`` and ``seed_means``: small cases worked out by hand.
- ``evaluate``, ``layer_coverage``, ``needle_study``: compared on a tiny random LLaMA with the
  docstrings' recipes written out here from :mod:`companions.gemfilter.model` (the same prompts,
  the same generators); the seeds 10_000 + s, 30_000 + s, 20_000 + s are the source's constants.
- ``generate_costs``: FLOPs against the closed forms, worked out by hand for a cached decode step
  (layer_flops with one query token attending to L + 1 keys), and the cache sizes.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from companions.gemfilter import complexity as gc
from companions.gemfilter import experiments as gx
from companions.gemfilter import model as gm

FILL = 11
# the toy: 3 layers, width 24, 4 heads of 6, 2 KV heads, MLP 40, vocabulary FILL + 3
LAYERS, WIDTH, HEADS, KV, MLP, HD, VOCAB = 3, 24, 4, 2, 40, 6, FILL + 3


@pytest.fixture(scope="module")
def toy():
    return gm.build_model(
        LAYERS, WIDTH, heads=HEADS, fillers=FILL, max_len=32, kv_heads=KV, mlp=MLP, seed=3
    )


def _prompts(depths, per_depth, n, seed):
    dep = torch.tensor(depths, dtype=torch.float64).repeat_interleave(per_depth)
    g = torch.Generator().manual_seed(seed)
    return gm.needle_prompts(len(dep), n, FILL, g, depth=dep)


# -- _by_depth, seed_means -----------------------------------------------------------------------
def test_by_depth_averages_rows_grouped_by_depth():
    hit = torch.tensor([True, False, True, True, False, False])
    assert gx._by_depth(hit, 2).tolist() == pytest.approx([2 / 3, 1 / 3])
    assert gx._by_depth(hit, 3).tolist() == pytest.approx([0.5, 1.0, 0.0])
    assert isinstance(gx._by_depth(hit, 1), np.ndarray)


def _seed_result(seed, r, full, layer_acc):
    z = np.zeros(2)
    return gx.SeedResult(seed, r, np.array(full), layer_acc, {}, z, z, z, z, z)


def test_seed_means_by_hand():
    a = _seed_result(0, 1, [0.2, 0.4], {1: np.array([1.0, 0.0]), 2: np.array([0.5, 0.7])})
    b = _seed_result(1, 2, [1.0, 0.0], {1: np.array([0.0, 0.0]), 2: np.array([0.9, 0.9])})
    assert gx.seed_means([a, b], "full") == pytest.approx([0.3, 0.5])
    assert gx.seed_means([a, b], "layer_acc", 2) == pytest.approx([0.6, 0.9])
    assert gx.seed_means([a, b], "layer_acc", 1) == pytest.approx([0.5, 0.0])
    # each seed's own filter layer: a at 1, b at 2
    assert gx.seed_means([a, b], "layer_acc", "chosen") == pytest.approx([0.5, 0.9])
    assert all(type(v) is float for v in gx.seed_means([a, b], "full"))
    assert a.train_loss == [] and a.train_steps == []


# -- evaluate, layer_coverage --------------------------------------------------------------------
def _recipe(model, ids, answer, pos, k, fl, pool, depths, g):
    """SeedResult's variants as its docstring defines them."""

    def acc(J=None):
        return gx._by_depth(gm.answer_on(model, ids, J) == answer, depths)

    def sel(r, p=pool, listing=False):
        return gm.select_tokens(gm.filter_scores(model, ids, r, pool=p), k, listing=listing)

    out = {"full": acc()}
    out["layer_acc"] = {r: acc(sel(r)) for r in range(1, LAYERS + 1)}
    value = (pos + 1)[:, None]  # the needle's value follows the marker
    out["layer_cov"] = {
        r: gx._by_depth((sel(r) == value).any(1), depths) for r in range(1, LAYERS + 1)
    }
    out["listing"] = acc(sel(fl, listing=True))
    out["no_pool"] = acc(sel(fl, p=1))
    for row in ("middle", "largest"):
        J = gm.select_tokens(gm.row_scores(model, ids, fl, row, pool=pool), k)
        out[f"{row}_row"] = acc(J)
    out["random"] = acc(gm.random_selection(ids.shape[0], ids.shape[1], k, g))
    return out


@pytest.mark.parametrize("fl, pool", [(2, 3), (1, 5)])
def test_evaluate_is_its_recipe(toy, fl, pool):
    ids, answer, pos = _prompts([0.0, 0.5, 1.0], 6, 20, seed=4)
    got = gx.evaluate(
        toy,
        ids,
        answer=answer,
        pos=pos,
        k=4,
        filter_layer=fl,
        pool=pool,
        depths=3,
        generator=torch.Generator().manual_seed(9),
    )
    want = _recipe(toy, ids, answer, pos, 4, fl, pool, 3, torch.Generator().manual_seed(9))
    assert set(got) == set(want)
    for key in ("full", "listing", "no_pool", "middle_row", "largest_row", "random"):
        assert got[key].shape == (3,) and np.array_equal(got[key], want[key]), key
    for key in ("layer_acc", "layer_cov"):
        assert list(got[key]) == [1, 2, 3]
        for r in (1, 2, 3):
            assert np.array_equal(got[key][r], want[key][r]), (key, r)


def test_evaluate_coverage_is_of_the_value_not_the_marker(toy):
    # k = n: every position is selected, so the coverage is 1 at every layer and depth
    ids, answer, pos = _prompts([0.0, 1.0], 3, 9, seed=5)
    got = gx.evaluate(
        toy,
        ids,
        answer=answer,
        pos=pos,
        k=9,
        filter_layer=2,
        pool=3,
        depths=2,
        generator=torch.Generator().manual_seed(0),
    )
    assert all(np.array_equal(v, np.ones(2)) for v in got["layer_cov"].values())
    # k = 1 with pool 1: the selection is one token; at depth 1 the value sits at n - 2 and the
    # query at n - 1, so coverage counts J == n - 2 (pos + 1) and never the marker at pos
    assert int(pos[-1]) == 9 - 3
    cov = gx.layer_coverage(toy, ids, pos, 1, 1)
    J = {r: gm.select_tokens(gm.filter_scores(toy, ids, r, pool=1), 1) for r in (1, 2, 3)}
    assert cov == [float((J[r][:, 0] == pos + 1).float().mean()) for r in (1, 2, 3)]


def test_layer_coverage_is_its_recipe(toy):
    ids, _, pos = _prompts([0.0, 0.3, 0.7, 1.0], 5, 24, seed=6)
    for k, pool in ((3, 3), (5, 1)):
        cov = gx.layer_coverage(toy, ids, pos, k, pool)
        want = []
        for r in range(1, LAYERS + 1):
            J = gm.select_tokens(gm.filter_scores(toy, ids, r, pool=pool), k)
            want.append(float((J == (pos + 1)[:, None]).any(1).double().mean()))
        assert cov == pytest.approx(want, abs=1e-7) and all(type(c) is float for c in cov)


# -- needle_study --------------------------------------------------------------------------------
def _cfg(**kw):
    base = dict(
        seeds=2,
        seed=5,
        layers=2,
        width=8,
        heads=2,
        kv_heads=1,
        mlp=12,
        fillers=6,
        n_test=10,
        steps=3,
        batch=4,
        n_min=5,
        n_train=8,
        lr=1e-2,
        filter_layer=2,
        test_prompts=3,
        depths=[1 / 12, 7 / 12],
        k=3,
        pool=3,
        select_threshold=0.5,
    )
    base.update(kw)
    return SimpleNamespace(**base)


def _study_recipe(cfg, s, r):
    model = gm.build_model(
        cfg.layers,
        cfg.width,
        heads=cfg.heads,
        fillers=cfg.fillers,
        max_len=cfg.n_test,
        kv_heads=cfg.kv_heads,
        mlp=cfg.mlp,
        seed=s,
    )
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
        progress=False,
    )
    gt = torch.Generator().manual_seed(20_000 + s)
    dep = torch.tensor(cfg.depths, dtype=torch.float64).repeat_interleave(cfg.test_prompts)
    ids, answer, pos = gm.needle_prompts(len(dep), cfg.n_test, cfg.fillers, gt, depth=dep)
    ev = gx.evaluate(
        model,
        ids,
        answer=answer,
        pos=pos,
        k=cfg.k,
        filter_layer=r,
        pool=cfg.pool,
        depths=len(cfg.depths),
        generator=gt,
    )
    return model, hist, ev


def _same(res, hist, ev, s, r):
    assert (res.seed, res.r) == (s, r)
    assert res.train_loss == hist.loss and res.train_steps == hist.steps
    for key in ("full", "no_pool", "listing", "random"):
        assert np.array_equal(getattr(res, key), ev[key]), key
    for key in ("layer_acc", "layer_cov"):
        got = getattr(res, key)
        assert list(got) == list(ev[key]) and all(np.array_equal(got[j], ev[key][j]) for j in got)


def test_needle_study_with_a_given_filter_layer_is_its_recipe(monkeypatch):
    cfg = _cfg()
    seen = []
    real_eval = gx.evaluate

    def eval_spy(model, ids, *, answer, pos, **rest):
        seen.append((ids.clone(), answer.clone(), pos.clone(), rest))
        return real_eval(model, ids, answer=answer, pos=pos, **rest)

    monkeypatch.setattr(gx, "evaluate", eval_spy)
    out = gx.needle_study(cfg, torch.device("cpu"), progress=False)
    monkeypatch.undo()
    # the test prompts: depths in float64, n_test = 10 (slots 7): the needle at
    # 1 + round(depth * 6), i.e. 1 + round(0.5) = 1 and 1 + round(3.5) = 5 (half to even); the
    # depths in float32 would round to 2 and 4
    for (ids, answer, pos, rest), s in zip(seen, (5, 6)):
        gt = torch.Generator().manual_seed(20_000 + s)
        dep = torch.tensor([1 / 12, 7 / 12], dtype=torch.float64).repeat_interleave(3)
        want = gm.needle_prompts(6, 10, 6, gt, depth=dep)
        assert torch.equal(ids, want[0]) and torch.equal(answer, want[1])
        assert pos.tolist() == [1, 1, 1, 5, 5, 5] and torch.equal(pos, want[2])
        assert (rest["k"], rest["filter_layer"], rest["pool"], rest["depths"]) == (3, 2, 3, 2)
    assert [res.seed for res in out] == [5, 6]
    for res in out:
        _, hist, ev = _study_recipe(cfg, res.seed, 2)
        _same(res, hist, ev, res.seed, 2)


def test_needle_study_chooses_the_layer_on_validation_prompts(monkeypatch):
    cfg = _cfg(seeds=1, seed=7, filter_layer=0, select_threshold=0.4)
    seen = []
    real_cov, real_choose = gx.layer_coverage, gm.choose_filter_layer

    def cov_spy(model, ids, pos, k, pool):
        seen.append(("cov", ids.clone(), pos.clone(), k, pool))
        return real_cov(model, ids, pos, k, pool)

    def choose_spy(cov, threshold):
        seen.append(("choose", list(cov), threshold))
        return real_choose(cov, threshold)

    monkeypatch.setattr(gx, "layer_coverage", cov_spy)
    monkeypatch.setattr(gm, "choose_filter_layer", choose_spy)
    (res,) = gx.needle_study(cfg, torch.device("cpu"), progress=False)
    monkeypatch.undo()
    # validation: cfg.test_prompts prompts of length n_test from the generator 30_000 + seed
    gv = torch.Generator().manual_seed(30_007)
    vid, _, vpos = gm.needle_prompts(3, 10, 6, gv)
    kind, ids, pos, k, pool = seen[0]
    assert kind == "cov" and torch.equal(ids, vid) and torch.equal(pos, vpos)
    assert (k, pool) == (3, 3)
    model, hist, _ = _study_recipe(cfg, 7, 1)
    cov = gx.layer_coverage(model, vid, vpos, 3, 3)
    assert seen[1] == ("choose", cov, 0.4) and len(seen) == 2
    r = gm.choose_filter_layer(cov, 0.4)
    _, hist, ev = _study_recipe(cfg, 7, r)
    _same(res, hist, ev, 7, r)


# -- counting ------------------------------------------------------------------------------------
def _step_flops(cached):
    """One greedy decode step by hand: every layer's projections and MLP on one token, QK^T and
    AV of one query against cached + 1 keys (2 * 2 * h * (L + 1) * d_h), and the output head."""
    proj = 2 * WIDTH * HD * (2 * HEADS + 2 * KV)
    mlp = 3 * 2 * WIDTH * MLP
    attn = 2 * 2 * HEADS * (cached + 1) * HD
    return LAYERS * (proj + mlp + attn) + 2 * WIDTH * VOCAB


def _cache(tokens, batch):
    return batch * 2 * LAYERS * KV * HD * tokens


def test_generate_costs_against_closed_forms(toy):
    b, n, t = 2, 13, 3
    ids = gm.needle_prompts(b, n, FILL, torch.Generator().manual_seed(1))[0]
    c = gx.generate_costs(toy, ids, t)
    assert c["prefill_flops"] == b * gc.prefill_flops(
        n, LAYERS, width=WIDTH, heads=HEADS, kv_heads=KV, mlp=MLP, vocab=VOCAB
    )
    assert c["gen_flops"] == b * sum(_step_flops(n + i) for i in range(t))
    assert c["cache_prefill"] == _cache(n, b) and c["cache_end"] == _cache(n + t, b)
    assert list(c) == ["prefill_flops", "gen_flops", "cache_prefill", "cache_end"]
    one = gx.generate_costs(toy, ids, 1)
    assert one["gen_flops"] == b * _step_flops(n) and one["cache_end"] == _cache(n + 1, b)


def test_generate_costs_on_an_index_is_on_the_gathered_prompt(toy):
    ids = gm.needle_prompts(2, 15, FILL, torch.Generator().manual_seed(2))[0]
    J = torch.tensor([[0, 3, 4, 14], [1, 2, 9, 14]])
    got = gx.generate_costs(toy, ids, 2, index=J)
    assert got == gx.generate_costs(toy, torch.gather(ids, 1, J), 2)
    assert got["cache_prefill"] == _cache(4, 2) and got["cache_end"] == _cache(6, 2)
    assert got["prefill_flops"] == 2 * gc.prefill_flops(
        4, LAYERS, width=WIDTH, heads=HEADS, kv_heads=KV, mlp=MLP, vocab=VOCAB
    )


def test_generate_costs_greedy_tokens_follow_the_argmax(toy, monkeypatch):
    # the decode steps feed back the argmax of the last logits: record the inputs of each call
    ids = gm.needle_prompts(1, 9, FILL, torch.Generator().manual_seed(3))[0]
    fed = []
    real = type(toy).forward

    def spy(self, *a, **kw):
        out = real(self, *a, **kw)
        fed.append((kw["input_ids"].clone(), out.logits[:, -1].argmax(-1).clone()))
        return out

    monkeypatch.setattr(type(toy), "forward", spy)
    gx.generate_costs(toy, ids, 3)
    monkeypatch.undo()
    assert len(fed) == 4 and torch.equal(fed[0][0], ids)
    for (_, prev), (inp, _) in zip(fed, fed[1:]):
        assert inp.shape == (1, 1) and torch.equal(inp[:, 0], prev)


def test_cost_sweep_rows_are_their_recipe(toy):
    k, t, r = 4, 2, 2
    rows = gx.cost_sweep(
        toy, [12, 20], k=k, t=t, r=r, fillers=FILL, generator=torch.Generator().manual_seed(4)
    )
    g = torch.Generator().manual_seed(4)
    assert [row["n"] for row in rows] == [12, 20]
    for row, n in zip(rows, [12, 20]):
        ids, _, _ = gm.needle_prompts(1, n, FILL, g)
        assert set(row) == {"n", "std", "gem", "filter_flops"}
        assert row["std"] == gx.generate_costs(toy, ids, t)
        assert row["filter_flops"] == gc.filter_flops(n, r, WIDTH, HEADS, KV, MLP)
        J = gm.select_tokens(gm.filter_scores(toy, ids, r), k)
        assert row["gem"] == gx.generate_costs(toy, ids, t, index=J)
        assert row["gem"]["cache_prefill"] == _cache(k, 1)


def test_a_dry_run_counts_the_first_prompt_length_only(toy, monkeypatch):
    monkeypatch.setenv("COMPANIONS_DRY_RUN", "1")
    rows = gx.cost_sweep(
        toy, [12, 20], k=4, t=2, r=2, fillers=FILL, generator=torch.Generator().manual_seed(4)
    )
    assert [row["n"] for row in rows] == [12]
