"""Unit tests of companions.gemfilter: each one fails on a plausible wrong implementation."""

import pytest
import sympy as sp
import torch
import torch.nn.functional as F

import companions
from companions.gemfilter import complexity as gc
from companions.gemfilter import experiments as gx
from companions.gemfilter import model as gm
from companions.gemfilter import report as grep
from companions.gemfilter import tables as gt

FILL = 11


@pytest.fixture(scope="module")
def toy():
    torch.manual_seed(0)
    return gm.build_model(3, 24, heads=4, fillers=FILL, max_len=32, kv_heads=2, mlp=40, seed=3)


@pytest.fixture(scope="module")
def prompts():
    return gm.needle_prompts(6, 13, FILL, torch.Generator().manual_seed(1))


# -- the model and the task -------------------------------------------------------------------
def test_build_model_names_bad_parameters():
    with pytest.raises(ValueError, match="'width'"):
        gm.build_model(2, 30, heads=4, fillers=FILL, max_len=16)
    with pytest.raises(ValueError, match="'kv_heads'"):
        gm.build_model(2, 24, heads=4, fillers=FILL, max_len=16, kv_heads=3)
    with pytest.raises(ValueError, match="'layers'"):
        gm.build_model(0, 24, heads=4, fillers=FILL, max_len=16)


def test_build_model_is_a_llama_of_the_asked_shape(toy):
    c = toy.config
    assert (c.num_hidden_layers, c.hidden_size, c.num_attention_heads) == (3, 24, 4)
    assert c.num_key_value_heads == 2 and c.vocab_size == FILL + 3
    assert next(toy.parameters()).dtype == torch.float32
    again = gm.build_model(3, 24, heads=4, fillers=FILL, max_len=32, kv_heads=2, mlp=40, seed=3)
    assert torch.equal(again.lm_head.weight, toy.lm_head.weight)


def test_needle_prompts_layout(prompts):
    ids, answer, pos = prompts
    sp_ = gm.special_ids(FILL)
    rows = torch.arange(ids.shape[0])
    assert torch.all(ids[:, 0] == sp_["bos"]) and torch.all(ids[:, -1] == sp_["query"])
    assert torch.all(ids[rows, pos] == sp_["needle"])
    assert torch.equal(answer, ids[rows, pos + 1]) and torch.all(answer < FILL)
    assert torch.all((ids == sp_["needle"]).sum(1) == 1)  # one needle per prompt
    assert torch.all((pos >= 1) & (pos <= 13 - 3))


def test_needle_depth_places_the_needle_at_both_ends():
    g = torch.Generator().manual_seed(0)
    _, _, pos = gm.needle_prompts(3, 20, FILL, g, depth=torch.tensor([0.0, 0.5, 1.0]))
    assert pos.tolist() == [1, 1 + round(0.5 * 16), 17]  # the value at 18, QUERY at 19
    with pytest.raises(ValueError, match="'n'"):
        gm.needle_prompts(2, 3, FILL, g)


def _manual_scores(model, ids, r, row=-1):
    """Layer r's pre-softmax scores of query ``row`` (the last by default) summed over heads,
    from the full model's hidden states, written out head by head (no hook, no truncation)."""
    out = model(input_ids=ids, output_hidden_states=True, use_cache=False)
    x = out.hidden_states[r - 1]  # the input of layer r
    layer = model.model.layers[r - 1]
    a = layer.self_attn
    xn = layer.input_layernorm(x)
    b, n, _ = x.shape
    hd = a.head_dim
    q = a.q_proj(xn).view(b, n, -1, hd)
    k = a.k_proj(xn).view(b, n, -1, hd)
    pos = torch.arange(n).expand(b, n)
    cos, sin = model.model.rotary_emb(x, pos)

    def rope(v):
        half = hd // 2
        rot = torch.cat([-v[..., half:], v[..., :half]], dim=-1)
        return v * cos.unsqueeze(2) + rot * sin.unsqueeze(2)

    q, k = rope(q), rope(k)
    group = q.shape[2] // k.shape[2]
    total = torch.zeros(b, n)
    for j in range(q.shape[2]):
        total += (k[:, :, j // group, :] * q[:, row : row + 1 if row != -1 else None, j, :]).sum(-1)
    return total


def _manual_row(model, ids, r, row):
    return _manual_scores(model, ids, r, row)


@torch.no_grad()
@pytest.mark.parametrize("r", [1, 2, 3])
def test_filter_scores_are_the_summed_last_row_at_layer_r(toy, prompts, r):
    ids = prompts[0]
    got = gm.filter_scores(toy, ids, r, pool=1)
    assert torch.allclose(got, _manual_scores(toy, ids, r), atol=1e-4, rtol=1e-4)
    assert len(toy.model.layers) == 3  # the truncation is undone


@torch.no_grad()
def test_pooling_is_a_zero_padded_moving_average(toy, prompts):
    ids = prompts[0]
    raw = gm.filter_scores(toy, ids, 2, pool=1)
    pooled = gm.filter_scores(toy, ids, 2, pool=5)
    padded = F.pad(raw, (2, 2))
    expected = torch.stack([padded[:, i : i + 5].sum(1) / 5 for i in range(raw.shape[1])], 1)
    assert torch.allclose(pooled, expected, atol=1e-5)
    with pytest.raises(ValueError, match="'pool'"):
        gm.filter_scores(toy, ids, 2, pool=4)
    with pytest.raises(ValueError, match="'r'"):
        gm.filter_scores(toy, ids, 4)


def test_select_tokens_keeps_input_order_and_the_listing_does_not():
    s = torch.tensor([[0.5, 9.0, 0.1, 7.0, 8.0, 0.0]])
    assert gm.select_tokens(s, 3).tolist() == [[1, 3, 4]]
    assert gm.select_tokens(s, 3, listing=True).tolist() == [[0, 2, 1]]  # argsort of [1, 4, 3]
    with pytest.raises(ValueError, match="'k'"):
        gm.select_tokens(s, 7)


def test_choose_filter_layer_takes_the_first_layer_over_the_threshold():
    assert gm.choose_filter_layer([0.2, 0.95, 0.99, 0.1], 0.9) == 2
    assert gm.choose_filter_layer([0.2, 0.5, 0.7, 0.1], 0.9) == 3  # none reaches it: the best
    assert gm.choose_filter_layer([0.9, 0.1], 0.9) == 1
    with pytest.raises(ValueError, match="'threshold'"):
        gm.choose_filter_layer([0.5], 0.0)


def test_random_selection_keeps_the_query_and_k_distinct_sorted_positions():
    J = gm.random_selection(50, 20, 6, torch.Generator().manual_seed(0))
    assert J.shape == (50, 6) and torch.all(J[:, -1] == 19)
    assert torch.all(J[:, 1:] > J[:, :-1])
    assert len(set(J[:, 0].tolist())) > 5  # not always the same positions


@torch.no_grad()
def test_answer_on_a_selection_is_the_answer_on_the_gathered_prompt(toy, prompts):
    ids = prompts[0]
    J = torch.tensor([[0, 2, 5, 12]] * ids.shape[0])
    direct = gm.last_logits(toy, ids[:, [0, 2, 5, 12]]).argmax(-1)
    assert torch.equal(gm.answer_on(toy, ids, J), direct)


def test_training_step_lowers_the_loss():
    model = gm.build_model(2, 16, heads=2, fillers=6, max_len=8, seed=0)
    hist = gm.train_needle(
        model,
        120,
        batch=32,
        n_min=6,
        n_max=8,
        fillers=6,
        lr=1e-2,
        generator=torch.Generator().manual_seed(0),
        progress=False,
    )
    assert not model.training
    assert hist.loss[0] > 1.6  # chance is log 6 = 1.79
    assert min(hist.loss[-3:]) < hist.loss[0] - 0.3
    with pytest.raises(ValueError, match="'n_min'"):
        gm.train_needle(
            model, 1, batch=2, n_min=9, n_max=8, fillers=6, lr=1e-2, generator=torch.Generator()
        )


# -- counting ---------------------------------------------------------------------------------
@torch.no_grad()
@pytest.mark.parametrize("kv", [4, 2, 1])
def test_flop_closed_forms_match_the_counter(kv):
    model = gm.build_model(3, 24, heads=4, fillers=FILL, max_len=32, kv_heads=kv, mlp=40, seed=0)
    ids = gm.needle_prompts(1, 17, FILL, torch.Generator().manual_seed(0))[0]
    full = gc.count_flops(lambda: gm.last_logits(model, ids))
    first = gc.count_flops(lambda: gm.filter_scores(model, ids, 2))
    assert full == gc.prefill_flops(17, 3, width=24, heads=4, kv_heads=kv, mlp=40, vocab=FILL + 3)
    assert first == gc.filter_flops(17, 2, 24, 4, kv, 40)


@torch.no_grad()
def test_cost_sweep_caches_have_the_theorem_sizes(toy):
    rows = gx.cost_sweep(
        toy, [16, 40], k=5, t=3, r=2, fillers=FILL, generator=torch.Generator().manual_seed(0)
    )
    for row in rows:
        assert row["std"]["cache_prefill"] == gc.kv_cache_elements(row["n"], 3, 2, 6)
        assert row["std"]["cache_end"] == gc.kv_cache_elements(row["n"] + 3, 3, 2, 6)
        assert row["gem"]["cache_end"] == gc.kv_cache_elements(5 + 3, 3, 2, 6)
        assert row["std"]["gen_flops"] > row["gem"]["gen_flops"] > 0  # n > k


def test_theorem_table_and_its_consequences():
    T, C = gc.table(True), gc.table(False)
    assert T["mem_prompt"]["standard"] == gc.m * gc.w + 2 * gc.m * gc.h * gc.d
    assert sp.expand(C["mem_prompt"]["standard"] - T["mem_prompt"]["standard"]) == sp.expand(
        2 * gc.m * gc.h * gc.d * (gc.n - 1)
    )
    der = gc.derived()
    assert der["prompt_time_ratio"] == gc.r / gc.m
    k = gc.k
    assert der["gen_time_k_eq_t"] == {"standard": k, "snapkv": 2 * k, "gemfilter": 3 * k}
    assert der["prompt_mem_ratio_limit"] == 1 / gc.m
    assert gc.nonnegative_on_positive(gc.k * gc.t + gc.k**2)
    assert not gc.nonnegative_on_positive(gc.k**2 - gc.k * gc.t)
    assert gc.prompt_speedup(32, 13) == sp.Rational(32, 13)
    with pytest.raises(ValueError, match="'filter_layer'"):
        gc.prompt_speedup(32, 33)


def test_complexity_measurements_decide_the_registered_claims():
    """The case study agrees with the table (zero residuals) and the printed standard prompt
    memory is below SnapKV's at the case study's point, by 2 h d (n + m (k - 1)) elements."""
    got = grep.complexity_measurements()
    assert got["case-study-generation-memory"] == [0, 0, 0]
    m, h, d, n, k = 32, 8, 128, 128 * 1024, 1024
    assert got["standard-prompt-memory"] == -2 * h * d * (n + m * (k - 1))
    led = companions.Ledger(companions.preset("gemfilter", "smoke"), device="cpu")
    status = {c["id"]: c["status"] for c in led.record(got)}
    assert status == {"case-study-generation-memory": "holds", "standard-prompt-memory": "differs"}


def test_average_gap_is_exact_decimal_arithmetic():
    assert gt.average_gap((0.1, 0.2), 0.15) == 0.0  # 0.1 + 0.2 != 0.3 in floats
    assert gt.average_gap((10.0, 11.0, 12.0), 11.01) == pytest.approx(0.01, abs=1e-15)
    assert gt.average_gap((1.0, 2.0), 1.0) == -0.5


def test_every_transcribed_row_has_its_tables_task_count():
    for rows in gt.TABLE_9_1.values():
        assert all(len(cells) == len(gt.LONGBENCH_TASKS) for cells, _ in rows.values())
    assert all(len(cells) == len(gt.LONGBENCH_TASKS) for cells, _ in gt.TABLE_9_2.values())
    assert all(len(cells) == 6 for cells, _ in gt.TABLE_G_1.values())
    assert gt.LONGBENCH_AVERAGE["LLaMA 3.1 8B"]["GemFilter-1024"] == 34.50
    assert gt.FILTER_LAYER_AVERAGE[13] == 34.50
    gaps = gt.average_gaps()
    assert sum(len(v) for v in gaps.values()) == 10 + 9 + 9 + 8 + 4


# -- Figure G.3: other rows of the attention matrix ---------------------------------------------
@torch.no_grad()
def test_row_scores_last_is_the_filter_score_with_the_query_kept(toy, prompts):
    ids = prompts[0]
    last = gm.row_scores(toy, ids, 2, "last", pool=3)
    plain = gm.filter_scores(toy, ids, 2, pool=3)
    assert torch.allclose(last[:, :-1], plain[:, :-1], atol=1e-6)
    assert torch.all(last[:, -1] == torch.inf)
    with pytest.raises(ValueError, match="'row'"):
        gm.row_scores(toy, ids, 2, "first")


@torch.no_grad()
def test_middle_row_scores_only_its_past(toy, prompts):
    ids = prompts[0]
    n = ids.shape[1]
    got = gm.row_scores(toy, ids, 1, "middle", pool=1)
    manual = _manual_row(toy, ids, 1, n // 2)
    assert torch.allclose(got[:, : n // 2 + 1], manual[:, : n // 2 + 1], atol=1e-4, rtol=1e-4)
    assert torch.all(got[:, n // 2 + 1 : -1] == -torch.inf)
    J = gm.select_tokens(got, 4)
    assert torch.all((J <= n // 2) | (J == n - 1)) and torch.all(J[:, -1] == n - 1)


@torch.no_grad()
def test_largest_row_is_the_row_of_largest_attention_norm(toy, prompts):
    ids = prompts[0]
    b, n = ids.shape
    got = gm.row_scores(toy, ids, 2, "largest", pool=1)
    q, k = gm._layer_queries_keys(toy, ids, 2)
    probs = torch.softmax(
        (q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5).masked_fill(
            torch.ones(n, n).triu(1).bool(), -torch.inf
        ),
        dim=-1,
    ).mean(1)
    for p in range(b):  # brute force: every row's norm, the largest one's scores
        norms = [float(probs[p, i].norm()) for i in range(n)]
        i = max(range(n), key=norms.__getitem__)
        want = _manual_row(toy, ids[p : p + 1], 2, i)[0]
        seen = min(i + 1, n - 1)  # the last position is the query, always kept
        assert torch.allclose(got[p, :seen], want[:seen], atol=1e-4, rtol=1e-4)
        assert torch.all(got[p, i + 1 : -1] == -torch.inf)


# -- the chapter's parameters -----------------------------------------------------------------
@pytest.mark.parametrize(
    "override, name",
    [
        (dict(filter_layer=5), "'filter_layer'"),
        (dict(cost_r=5), "'cost_r'"),
        (dict(select_threshold=0.0), "'select_threshold'"),
        (dict(k=24), "'k'"),
        (dict(width=30), "'width'"),
        (dict(kv_heads=3), "'kv_heads'"),
        (dict(cost_k=100), "'cost_k'"),
        (dict(pool=4), "'pool'"),
        (dict(seeds=1), "'seeds'"),
        (dict(depths=[0.5, 1.5]), "'depths"),
    ],
)
def test_bad_parameters_are_named(override, name):
    with pytest.raises(ValueError, match=name):
        companions.preset("gemfilter", "smoke", **override)
