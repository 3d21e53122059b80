"""Tests of companions.gemfilter.model written against its mutants (issue 23): the config that
build_model asks for field by field, its checks at their boundaries, the needle task replayed
from its generator, train_needle's curriculum and loss through a recording stand-in for
``fit``, and GemFilter's selection rules on small cases worked out by hand."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from companions.gemfilter import model as gm

FILL = 7


@pytest.fixture(scope="module")
def tiny():
    return gm.build_model(2, 8, heads=2, fillers=FILL, max_len=12, kv_heads=1, mlp=12, seed=1)


# -- build_model ------------------------------------------------------------------------------
def test_special_ids_follow_the_fillers():
    assert gm.special_ids(5) == {"bos": 5, "needle": 6, "query": 7}


def test_build_model_config_field_by_field(tiny):
    c = tiny.config
    assert (c.num_hidden_layers, c.hidden_size, c.num_attention_heads) == (2, 8, 2)
    assert c.num_key_value_heads == 1 and c.intermediate_size == 12
    assert c.vocab_size == FILL + 3 and c.bos_token_id == FILL
    assert c.eos_token_id is None and c.pad_token_id is None
    assert c.max_position_embeddings == 64  # max(2 * 12, 64)
    assert c.rope_parameters["rope_theta"] == 10000.0
    # head_dim 4: RoPE's frequencies 1 / theta^(2i / 4), i = 0, 1: 1 and 1 / 100
    assert torch.allclose(tiny.model.rotary_emb.inv_freq, torch.tensor([1.0, 0.01]))
    assert c._attn_implementation == "eager"
    assert c.tie_word_embeddings is False
    assert tiny.lm_head.weight.data_ptr() != tiny.model.embed_tokens.weight.data_ptr()
    assert not tiny.training and all(p.dtype == torch.float32 for p in tiny.parameters())


def test_build_model_defaults_and_long_prompts():
    m = gm.build_model(1, 8, heads=4, fillers=FILL, max_len=40)
    c = m.config
    assert c.num_key_value_heads == 4  # kv_heads defaults to heads
    assert c.intermediate_size == 16  # mlp defaults to 2 * width
    assert c.max_position_embeddings == 80  # 2 * max_len over 64
    assert c.num_hidden_layers == 1 and len(m.model.layers) == 1


def test_build_model_seed_decides_the_weights():
    a = gm.build_model(1, 8, heads=2, fillers=FILL, max_len=8, seed=4)
    b = gm.build_model(1, 8, heads=2, fillers=FILL, max_len=8, seed=4)
    c = gm.build_model(1, 8, heads=2, fillers=FILL, max_len=8, seed=5)
    assert torch.equal(a.lm_head.weight, b.lm_head.weight)
    assert not torch.equal(a.lm_head.weight, c.lm_head.weight)
    # the default seed is 0
    d = gm.build_model(1, 8, heads=2, fillers=FILL, max_len=8)
    e = gm.build_model(1, 8, heads=2, fillers=FILL, max_len=8, seed=0)
    assert torch.equal(d.lm_head.weight, e.lm_head.weight)


@pytest.mark.parametrize(
    "args, kwargs, message",
    [
        ((0, 8, 2), {}, "parameter 'layers' = 0 is not allowed: expected >= 1"),
        ((1, 0, 2), {}, "parameter 'width' = 0 is not allowed: expected >= 1"),
        ((1, 8, 0), {}, "parameter 'heads' = 0 is not allowed: expected >= 1"),
        ((1, 9, 2), {}, "parameter 'width' = 9 is not allowed: it must be a multiple of heads = 2"),
        (
            (1, 8, 4),
            {"kv_heads": 3},
            "parameter 'kv_heads' = 3 is not allowed: it must divide heads = 4",
        ),
    ],
)
def test_build_model_messages(args, kwargs, message):
    with pytest.raises(ValueError) as err:
        gm.build_model(*args[:2], heads=args[2], fillers=FILL, max_len=8, **kwargs)
    assert str(err.value) == message


def test_build_model_smallest_allowed():
    m = gm.build_model(1, 1, heads=1, fillers=2, max_len=4, mlp=2)  # every count at 1 is allowed
    assert m.config.hidden_size == 1 and m.config.num_attention_heads == 1


# -- the task ---------------------------------------------------------------------------------
def test_needle_prompts_replayed_from_the_generator():
    # the draws in order: the fillers (batch x n), then the needle positions 1 .. n-3
    batch, n = 5, 9
    ids, answer, pos = gm.needle_prompts(batch, n, FILL, torch.Generator().manual_seed(3))
    g = torch.Generator().manual_seed(3)
    fill = torch.randint(0, FILL, (batch, n), generator=g)
    want_pos = 1 + torch.randint(0, n - 3, (batch,), generator=g)
    assert torch.equal(pos, want_pos)
    for b in range(batch):
        p = int(pos[b])
        row = fill[b].tolist()
        row[0], row[-1], row[p] = FILL, FILL + 2, FILL + 1
        assert ids[b].tolist() == row
        assert int(answer[b]) == fill[b, p + 1] and int(answer[b]) < FILL


def test_needle_positions_cover_1_to_n_minus_3():
    _, _, pos = gm.needle_prompts(400, 8, FILL, torch.Generator().manual_seed(0))
    assert set(pos.tolist()) == {1, 2, 3, 4, 5}


def test_needle_depth_is_placed_in_float64():
    # depth 15/22 with slots - 1 = 11 (n = 15): in float64 (the dtype the source names)
    # 15/22 * 11 = 7.499999999999999, which rounds to 7 (in float32 it is 7.5, rounded to 8)
    assert 15 / 22 * 11 < 7.5
    _, _, pos = gm.needle_prompts(2, 15, FILL, torch.Generator().manual_seed(0), depth=15 / 22)
    assert pos.tolist() == [8, 8]


def test_needle_answer_is_a_copy():
    ids, answer, pos = gm.needle_prompts(2, 6, FILL, torch.Generator().manual_seed(1))
    before = answer.clone()
    ids[:, :] = 0
    assert torch.equal(answer, before)


def test_needle_depth_scalar_and_the_shortest_prompt():
    g = torch.Generator().manual_seed(0)
    # slots = 12 - 3 = 9; depth 0.25 -> 1 + round(0.25 * 8) = 3, for every prompt
    ids, ans, pos = gm.needle_prompts(4, 12, FILL, g, depth=0.25)
    assert pos.tolist() == [3] * 4 and torch.all(ids[:, 3] == FILL + 1)
    _, _, pos = gm.needle_prompts(3, 12, FILL, g, depth=torch.tensor([0.0, 0.3, 1.0]))
    assert pos.tolist() == [1, 1 + round(0.3 * 8), 9]  # 1 + 2 = 3
    ids, ans, pos = gm.needle_prompts(3, 4, FILL, g)  # n = 4: one slot, the needle at 1
    assert pos.tolist() == [1, 1, 1] and torch.equal(ans, ids[:, 2])
    with pytest.raises(ValueError) as err:
        gm.needle_prompts(1, 3, FILL, g)
    assert str(err.value) == "parameter 'n' = 3 is not allowed: a prompt needs n >= 4"


def test_last_logits_are_the_full_forwards_last_row(tiny):
    ids, _, _ = gm.needle_prompts(3, 9, FILL, torch.Generator().manual_seed(2))
    with torch.no_grad():
        full = tiny(input_ids=ids).logits[:, -1, :]
        got = gm.last_logits(tiny, ids)
    assert got.shape == (3, FILL + 3)
    assert torch.allclose(got, full, atol=1e-6)


# -- train_needle, through a stand-in for fit -------------------------------------------------
def test_train_needle_curriculum_loss_and_modes(monkeypatch):
    model = gm.build_model(1, 8, heads=2, fillers=FILL, max_len=16, seed=0)
    calls = {}

    def fake_fit(loss_fn, parameters, steps, **kw):
        calls.update(kw, steps=steps, params=list(parameters), out=[])
        calls["training"] = model.training
        for s in range(steps):
            calls["out"].append(loss_fn(s))
        return "history"

    lengths = []
    real = gm.needle_prompts
    gen = torch.Generator().manual_seed(4)

    def spy(batch, n, fillers, generator, depth=None):
        lengths.append(n)
        calls["batch"], calls["fillers"] = batch, fillers
        assert generator is gen  # the prompts are drawn from the caller's generator
        return real(batch, n, fillers, generator, depth)

    monkeypatch.setattr(gm, "fit", fake_fit)
    monkeypatch.setattr(gm, "needle_prompts", spy)
    steps, n_min, n_max = 10, 5, 9
    out = gm.train_needle(
        model,
        steps,
        batch=3,
        n_min=n_min,
        n_max=n_max,
        fillers=FILL,
        lr=0.05,
        generator=gen,
        desc="x",
    )
    assert out == "history" and not model.training and calls["training"]
    assert calls["lr"] == 0.05 and calls["log_every"] == 25
    assert calls["desc"] == "x" and calls["progress"] is True
    assert calls["steps"] == steps and len(calls["params"]) == len(list(model.parameters()))
    assert calls["batch"] == 3 and calls["fillers"] == FILL
    # the curriculum by hand: top(s) = 5 + round(4 min(1, 2 s / 10)): 4 * 0.2 = 0.8 -> 1,
    # 1.6 -> 2, 2.4 -> 2, 3.2 -> 3, then 4 from s = 5; length = n_min + floor(u (top - n_min + 1))
    tops = [5, 6, 7, 7, 8, 9, 9, 9, 9, 9]
    u = torch.rand(steps, generator=torch.Generator().manual_seed(4)).tolist()
    want = [n_min + math.floor(x * (t - n_min + 1)) for x, t in zip(u, tops)]
    assert lengths == want
    assert all(n_min <= n <= t for n, t in zip(lengths, tops))
    # each step's loss is the cross-entropy of the last logits, with the accuracy beside it
    loss, metrics = calls["out"][0]
    assert loss.requires_grad and set(metrics) == {"accuracy"}
    assert 0.0 <= metrics["accuracy"] <= 1.0


def test_train_needle_loss_is_the_cross_entropy_of_the_answer(monkeypatch):
    model = gm.build_model(1, 8, heads=2, fillers=FILL, max_len=16, seed=2)
    seen = {}

    def fake_fit(loss_fn, parameters, steps, **kw):
        seen["out"] = loss_fn(0)
        return None

    real = gm.needle_prompts

    def spy(*a, **k):
        seen["prompts"] = real(*a, **k)
        return seen["prompts"]

    monkeypatch.setattr(gm, "fit", fake_fit)
    monkeypatch.setattr(gm, "needle_prompts", spy)
    gm.train_needle(
        model,
        1,
        batch=16,
        n_min=6,
        n_max=6,
        fillers=FILL,
        lr=1e-3,
        generator=torch.Generator().manual_seed(0),
    )
    ids, answer, _ = seen["prompts"]
    assert ids.shape == (16, 6)  # n_min = n_max = 6: every length is 6
    loss, metrics = seen["out"]
    model.eval()
    with torch.no_grad():
        logits = model(input_ids=ids).logits[:, -1, :]
    ce = float(F.cross_entropy(logits, answer))
    assert math.isclose(float(loss.detach()), ce, rel_tol=1e-5)
    acc = float((logits.argmax(-1) == answer).double().mean())
    assert metrics["accuracy"] == pytest.approx(acc)


def test_train_needle_defaults(monkeypatch):
    seen = {}
    monkeypatch.setattr(gm, "fit", lambda loss_fn, params, steps, **kw: seen.update(kw))
    model = gm.build_model(1, 8, heads=2, fillers=FILL, max_len=16, seed=0)
    gm.train_needle(
        model,
        2,
        batch=2,
        n_min=4,
        n_max=6,
        fillers=FILL,
        lr=1e-3,
        generator=torch.Generator().manual_seed(0),
    )
    assert seen["desc"] == "needle training" and seen["progress"] is True


@pytest.mark.parametrize("n_min, n_max", [(4, 4), (4, 9)])
def test_train_needle_accepts_n_min_from_4(monkeypatch, n_min, n_max):
    monkeypatch.setattr(gm, "fit", lambda loss_fn, params, steps, **kw: loss_fn(steps - 1))
    model = gm.build_model(1, 8, heads=2, fillers=FILL, max_len=16, seed=0)
    gm.train_needle(
        model,
        2,
        batch=2,
        n_min=n_min,
        n_max=n_max,
        fillers=FILL,
        lr=1e-3,
        generator=torch.Generator().manual_seed(0),
    )


@pytest.mark.parametrize("n_min, n_max", [(3, 8), (9, 8)])
def test_train_needle_refuses_bad_lengths(n_min, n_max):
    with pytest.raises(ValueError) as err:
        gm.train_needle(
            None,
            1,
            batch=2,
            n_min=n_min,
            n_max=n_max,
            fillers=FILL,
            lr=1e-3,
            generator=torch.Generator(),
        )
    assert str(err.value) == (
        f"parameter 'n_min' = {n_min} is not allowed: expected 4 <= n_min <= n_max = {n_max}"
    )


# -- GemFilter --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "r, pool, message",
    [
        (0, 1, "parameter 'r' = 0 is not allowed: expected 1 <= r <= m = 2"),
        (3, 1, "parameter 'r' = 3 is not allowed: expected 1 <= r <= m = 2"),
        (1, 0, "parameter 'pool' = 0 is not allowed: expected an odd kernel >= 1"),
        (1, 2, "parameter 'pool' = 2 is not allowed: expected an odd kernel >= 1"),
    ],
)
def test_filter_scores_messages(tiny, r, pool, message):
    ids = torch.zeros(1, 5, dtype=torch.long)
    with pytest.raises(ValueError) as err:
        gm.filter_scores(tiny, ids, r, pool)
    assert str(err.value) == message


def test_filter_scores_default_pool_is_5_and_hooks_are_removed(tiny):
    ids, _, _ = gm.needle_prompts(2, 9, FILL, torch.Generator().manual_seed(5))
    raw = gm.filter_scores(tiny, ids, 2, pool=1)
    assert raw.shape == (2, 9)
    padded = F.pad(raw, (2, 2))
    want = torch.stack([padded[:, i : i + 5].mean(1) for i in range(9)], 1)
    assert torch.allclose(gm.filter_scores(tiny, ids, 2), want, atol=1e-5)
    p3 = F.pad(raw, (1, 1))
    want3 = torch.stack([p3[:, i : i + 3].mean(1) for i in range(9)], 1)
    assert torch.allclose(gm.filter_scores(tiny, ids, 2, pool=3), want3, atol=1e-5)
    for layer in tiny.model.layers:
        assert not layer.self_attn.q_proj._forward_hooks
        assert not layer.self_attn.k_proj._forward_hooks
    assert len(tiny.model.layers) == 2


def test_select_tokens_on_a_batch_and_at_the_bounds():
    s = torch.tensor([[3.0, 1.0, 2.0, 0.0], [0.0, 5.0, 4.0, 6.0]])
    assert gm.select_tokens(s, 2).tolist() == [[0, 2], [1, 3]]
    assert gm.select_tokens(s, 4).tolist() == [[0, 1, 2, 3]] * 2  # k = n: every position
    assert gm.select_tokens(s, 1).tolist() == [[0], [3]]
    # the listing returns the argsort of the top-k indices: [3, 1, 2] (row 2, top 3 = 6, 5, 4)
    assert gm.select_tokens(s, 3, listing=True).tolist() == [[0, 2, 1], [1, 2, 0]]
    for k in (0, 5):
        with pytest.raises(ValueError) as err:
            gm.select_tokens(s, k)
        assert str(err.value) == f"parameter 'k' = {k} is not allowed: expected 1 <= k <= n = 4"
    # one prompt's scores as a 1-D vector, and a (2, 1, n) stack: the last axis is the tokens'
    assert gm.select_tokens(s[1], 2).tolist() == [1, 3]
    assert gm.select_tokens(s[1], 3, listing=True).tolist() == [1, 2, 0]
    assert gm.select_tokens(s[:, None, :], 2).tolist() == [[[0, 2]], [[1, 3]]]
    for k in (0, 5):
        with pytest.raises(ValueError) as err:
            gm.select_tokens(s[:, None, :], k)
        assert str(err.value) == f"parameter 'k' = {k} is not allowed: expected 1 <= k <= n = 4"


def test_random_selection_draws_from_its_generator():
    # the same seed gives the same selection, and the generator is advanced by exactly the
    # b x (n - 1) uniform keys: its next draw is the one after torch.rand(b, n - 1)
    g1, g2 = torch.Generator().manual_seed(8), torch.Generator().manual_seed(8)
    torch.manual_seed(123)  # the global generator, which must not be the one used
    J1 = gm.random_selection(3, 10, 4, g1)
    torch.manual_seed(456)
    J2 = gm.random_selection(3, 10, 4, g2)
    assert torch.equal(J1, J2)
    g3 = torch.Generator().manual_seed(8)
    torch.rand(3, 9, generator=g3)
    assert torch.equal(torch.rand(5, generator=g1), torch.rand(5, generator=g3))


def test_random_selection_k_1_and_uniform_positions():
    J = gm.random_selection(4, 6, 1, torch.Generator().manual_seed(0))
    assert J.tolist() == [[5]] * 4 and J.dtype == torch.long
    # every other position is kept with probability (k - 1) / (n - 1) = 2 / 5
    J = gm.random_selection(4000, 6, 3, torch.Generator().manual_seed(1))
    counts = torch.bincount(J[:, :-1].reshape(-1), minlength=6).double() / 4000
    assert counts[5] == 0 and torch.all((counts[:5] - 0.4).abs() < 0.04)
    assert torch.all(J[:, 1:] > J[:, :-1]) and torch.all(J[:, -1] == 5)


def test_choose_filter_layer_at_its_bounds():
    assert gm.choose_filter_layer([0.5, 1.0, 1.0], 1.0) == 2  # threshold 1 is allowed
    assert gm.choose_filter_layer([0.2, 0.9, 0.95], 0.9) == 2  # reaching it is enough (>=)
    assert gm.choose_filter_layer([0.3, 0.6, 0.6, 0.2], 0.9) == 2  # the first of equal best
    assert gm.choose_filter_layer([0.7, 0.3], 0.95) == 1
    for t in (0.0, 1.01):
        with pytest.raises(ValueError) as err:
            gm.choose_filter_layer([0.5], t)
        assert str(err.value) == f"parameter 'threshold' = {t} is not allowed: expected (0, 1]"


def test_answer_on_the_whole_prompt(tiny):
    ids, _, _ = gm.needle_prompts(3, 8, FILL, torch.Generator().manual_seed(6))
    with torch.no_grad():
        want = tiny(input_ids=ids).logits[:, -1, :].argmax(-1)
    assert torch.equal(gm.answer_on(tiny, ids), want)
    J = torch.tensor([[0, 7]] * 3)
    with torch.no_grad():
        want = tiny(input_ids=ids[:, [0, 7]]).logits[:, -1, :].argmax(-1)
    assert torch.equal(gm.answer_on(tiny, ids, J), want)
