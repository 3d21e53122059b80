"""A small LLaMA-style decoder (``transformers``), the needle-in-a-haystack task it is trained on,
and GemFilter's selection (Algorithm 2 of the dissertation, Appendix G.4.1).

The model is built from a :class:`transformers.LlamaConfig` with random initial weights: nothing is
downloaded. ``HF_HUB_OFFLINE`` and ``TRANSFORMERS_OFFLINE`` are set before ``transformers`` is
imported, so no import or call here touches the network.
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from transformers import LlamaConfig, LlamaForCausalLM  # noqa: E402
from transformers.models.llama.modeling_llama import apply_rotary_pos_emb  # noqa: E402
from transformers.utils import logging as hf_logging  # noqa: E402

from companions.train import fit  # noqa: E402

hf_logging.set_verbosity_error()

#: Token ids of the task: ``0..fillers-1`` are filler (and value) tokens, then three markers.
BOS, NEEDLE, QUERY = "bos", "needle", "query"


def special_ids(fillers: int) -> dict[str, int]:
    """The ids of the three marker tokens after ``fillers`` filler tokens."""
    return {BOS: fillers, NEEDLE: fillers + 1, QUERY: fillers + 2}


def build_model(
    layers: int,
    width: int,
    *,
    heads: int,
    fillers: int,
    max_len: int,
    kv_heads: int | None = None,
    mlp: int | None = None,
    seed: int = 0,
) -> LlamaForCausalLM:
    """A LLaMA decoder (RMSNorm, RoPE, SwiGLU MLP, grouped-query attention when
    ``kv_heads < heads``) with ``layers`` blocks of width ``width``, random weights from ``seed``,
    in float32, in eval mode; eager attention, so that every product is an explicit matmul."""
    for name, value in (("layers", layers), ("width", width), ("heads", heads)):
        if int(value) < 1:
            raise ValueError(f"parameter {name!r} = {value!r} is not allowed: expected >= 1")
    if width % heads:
        raise ValueError(
            f"parameter 'width' = {width} is not allowed: it must be a multiple of heads = {heads}"
        )
    kv_heads = heads if kv_heads is None else kv_heads
    if heads % kv_heads:
        raise ValueError(
            f"parameter 'kv_heads' = {kv_heads} is not allowed: it must divide heads = {heads}"
        )
    config = LlamaConfig(
        vocab_size=fillers + 3,
        hidden_size=width,
        intermediate_size=mlp or 2 * width,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        max_position_embeddings=max(2 * max_len, 64),
        rope_theta=10000.0,
        bos_token_id=fillers,
        eos_token_id=None,
        pad_token_id=None,
        tie_word_embeddings=False,
        attn_implementation="eager",
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config).float()
    model.eval()
    return model


# ------------------------------------------------------------------------------------------------
# The task
# ------------------------------------------------------------------------------------------------
def needle_prompts(
    batch: int,
    n: int,
    fillers: int,
    generator: torch.Generator,
    depth: torch.Tensor | None = None,
):
    """``batch`` prompts ``[BOS] f ... f NEEDLE v f ... f QUERY`` of length ``n`` and their
    answers ``v``. Filler and value tokens are drawn uniformly from the same ``fillers`` tokens,
    so the value is found only through the NEEDLE marker before it. ``depth`` (per prompt, in
    [0, 1]) places the needle at depth ``depth`` of the haystack (0: right after BOS, 1: right
    before QUERY), as in the source's Needle-in-a-Haystack grid; ``None`` draws it uniformly.
    Returns ``(ids, answer, needle_position)``."""
    if n < 4:
        raise ValueError(f"parameter 'n' = {n} is not allowed: a prompt needs n >= 4")
    ids = torch.randint(0, fillers, (batch, n), generator=generator)
    sp = special_ids(fillers)
    ids[:, 0] = sp[BOS]
    ids[:, -1] = sp[QUERY]
    slots = n - 3  # needle positions 1 .. n-3 (the value follows at +1, QUERY is at n-1)
    if depth is None:
        pos = 1 + torch.randint(0, slots, (batch,), generator=generator)
    else:
        depth = torch.as_tensor(depth, dtype=torch.float64).expand(batch)
        pos = 1 + torch.round(depth * (slots - 1)).long()
    rows = torch.arange(batch)
    ids[rows, pos] = sp[NEEDLE]
    answer = ids[rows, pos + 1].clone()
    return ids, answer, pos


def last_logits(model, ids: torch.Tensor) -> torch.Tensor:
    """The logits at the last position (the model's answer to the QUERY)."""
    return model(input_ids=ids, use_cache=False, logits_to_keep=1).logits[:, -1, :]


def train_needle(
    model,
    steps: int,
    *,
    batch: int,
    n_min: int,
    n_max: int,
    fillers: int,
    lr: float,
    generator: torch.Generator,
    desc: str = "needle training",
    progress: bool = True,
):
    """Train ``model`` with Adam on cross-entropy of the last position's logits against the
    value, on fresh prompts whose length is drawn per step in ``[n_min, top]``, ``top`` growing
    from ``n_min`` to ``n_max`` over the first half of the steps
    (:func:`companions.train.fit`: progress bar, loss history)."""
    if not 4 <= n_min <= n_max:
        raise ValueError(
            f"parameter 'n_min' = {n_min} is not allowed: expected 4 <= n_min <= n_max = {n_max}"
        )
    # A curriculum: the longest length grows linearly from n_min to n_max over the first half of
    # the steps (the two-step circuit is found on short prompts, then carried to long ones).
    tops = [n_min + round((n_max - n_min) * min(1.0, 2 * s / steps)) for s in range(steps)]
    u = torch.rand(steps, generator=generator).tolist()
    lengths = [n_min + int(x * (top - n_min + 1)) for x, top in zip(u, tops)]
    model.train()

    def loss_fn(step):
        ids, answer, _ = needle_prompts(batch, lengths[step], fillers, generator)
        logits = last_logits(model, ids.to(model.device))
        loss = F.cross_entropy(logits, answer.to(model.device))
        acc = (logits.argmax(-1) == answer.to(model.device)).float().mean()
        return loss, {"accuracy": float(acc)}

    history = fit(
        loss_fn, model.parameters(), steps=steps, lr=lr, log_every=25, desc=desc, progress=progress
    )
    model.eval()
    return history


# ------------------------------------------------------------------------------------------------
# GemFilter (Algorithm 2)
# ------------------------------------------------------------------------------------------------
def _layer_queries_keys(model, ids: torch.Tensor, r: int):
    """The first pass of Algorithm 2 (line 4): run layers ``1..r`` (``F_{1:r}``; the last one in
    full, as the released code does) and return the ``r``-th layer's queries and keys after RoPE,
    the key heads repeated for grouped-query attention (``repeat_kv``): two tensors of shape
    ``(batch, heads, n, head_dim)``."""
    layers = model.model.layers
    m = len(layers)
    if not 1 <= r <= m:
        raise ValueError(f"parameter 'r' = {r} is not allowed: expected 1 <= r <= m = {m}")
    attn = layers[r - 1].self_attn
    captured = {}
    hooks = [
        attn.q_proj.register_forward_hook(lambda mod, i, o: captured.__setitem__("q", o)),
        attn.k_proj.register_forward_hook(lambda mod, i, o: captured.__setitem__("k", o)),
    ]
    full = model.model.layers
    try:
        model.model.layers = full[:r]  # the first pass runs r layers only
        hidden = model.model(input_ids=ids, use_cache=False).last_hidden_state
    finally:
        model.model.layers = full
        for h in hooks:
            h.remove()
    b, n = ids.shape
    hd = attn.head_dim
    q = captured["q"].view(b, n, -1, hd).transpose(1, 2)
    k = captured["k"].view(b, n, -1, hd).transpose(1, 2)
    pos = torch.arange(n, device=ids.device).unsqueeze(0).expand(b, n)
    cos, sin = model.model.rotary_emb(hidden, pos)
    q, k = apply_rotary_pos_emb(q, k, cos, sin)
    return q, k.repeat_interleave(q.shape[1] // k.shape[1], dim=1)


def _check_pool(pool: int) -> None:
    if pool < 1 or pool % 2 == 0:
        raise ValueError(f"parameter 'pool' = {pool} is not allowed: expected an odd kernel >= 1")


def _pooled(scores: torch.Tensor, pool: int) -> torch.Tensor:
    """Average pooling of score rows ``(batch, n)`` with kernel ``pool`` (stride 1, zero padding
    counted: the released code's ``avg_pool1d``; ``pool=1`` is none)."""
    if pool == 1:
        return scores
    return F.avg_pool1d(scores[:, None, :], kernel_size=pool, padding=pool // 2, stride=1)[:, 0]


@torch.no_grad()
def filter_scores(model, ids: torch.Tensor, r: int, pool: int = 5) -> torch.Tensor:
    """The score vector of Algorithm 2, line 6, at the ``r``-th layer (1-based): the layer-``r``
    query of the last token against all keys after RoPE (:func:`_layer_queries_keys`), the inner
    products ``Q_n^{(r,j)} K^{(r,j)T}`` summed over the heads ``j`` (pre-softmax, unscaled), then
    average-pooled with kernel ``pool`` (:func:`_pooled`). Shape ``(batch, n)``."""
    _check_pool(pool)
    q, k = _layer_queries_keys(model, ids, r)
    scores = (q[:, :, -1:, :] @ k.transpose(-1, -2)).sum(dim=1)[:, 0, :]  # summed heads
    return _pooled(scores, pool)


#: The rows of the attention matrix that Figure G.3 compares with the last one.
ROWS = ("last", "middle", "largest")


@torch.no_grad()
def row_scores(model, ids: torch.Tensor, r: int, row: str, pool: int = 5) -> torch.Tensor:
    """Line 6 of Algorithm 2 with another row of the layer-``r`` attention matrix in place of the
    last query (Figure G.3's ablation): ``row="middle"``, the query at position ``n // 2``;
    ``"largest"``, per prompt the query whose row of the attention matrix (softmax of
    ``Q K^T / sqrt(d_h)`` with the causal mask, averaged over the heads, Definition 9.1) has the
    largest l2 norm; ``"last"``, the last query (GemFilter). The chosen row's inner products with
    every key, summed over heads, are pooled as in :func:`filter_scores` (the released code
    computes them without a mask), then the positions after the query are excluded (``-inf``:
    the causal mask) and the last position (the query token) is given ``+inf``, so that every
    variant keeps it, as the random baseline does. Shape ``(batch, n)``."""
    if row not in ROWS:
        raise ValueError(f"parameter 'row' = {row!r} is not allowed: expected one of {ROWS}")
    _check_pool(pool)
    q, k = _layer_queries_keys(model, ids, r)
    b, _, n, hd = q.shape
    logits = q @ k.transpose(-1, -2)  # (b, h, n, n)
    causal = torch.ones(n, n, dtype=torch.bool, device=ids.device).tril()
    if row == "last":
        i = torch.full((b,), n - 1, device=ids.device)
    elif row == "middle":
        i = torch.full((b,), n // 2, device=ids.device)
    else:
        probs = torch.softmax((logits / hd**0.5).masked_fill(~causal, -torch.inf), dim=-1)
        i = probs.mean(dim=1).norm(dim=-1).argmax(dim=-1)
    chosen = logits.sum(dim=1)[torch.arange(b, device=ids.device), i]  # (b, n)
    visible = torch.arange(n, device=ids.device)[None, :] <= i[:, None]
    scores = _pooled(chosen, pool).masked_fill(~visible, -torch.inf)
    scores[:, -1] = torch.inf
    return scores


def select_tokens(scores: torch.Tensor, k: int, listing: bool = False) -> torch.Tensor:
    """Algorithm 2, lines 6-7: the top-``k`` indices of ``scores``, sorted into input order
    (as the released code does, ``values, _ = torch.sort(idx)``). ``listing=True`` returns what
    the printed listing of Appendix G.4.1 returns instead, ``torch.sort(idx).indices``: the
    permutation that sorts the indices, not the indices."""
    n = scores.shape[-1]
    if not 1 <= k <= n:
        raise ValueError(f"parameter 'k' = {k} is not allowed: expected 1 <= k <= n = {n}")
    idx = torch.topk(scores, k, dim=-1).indices
    srt = torch.sort(idx, dim=-1)
    return srt.indices if listing else srt.values


def random_selection(b: int, n: int, k: int, generator: torch.Generator) -> torch.Tensor:
    """The baseline: ``k`` positions drawn uniformly without replacement, always including the
    last one (the query), in input order."""
    keys = torch.rand(b, n - 1, generator=generator)
    idx = torch.topk(keys, k - 1, dim=-1).indices
    last = torch.full((b, 1), n - 1, dtype=idx.dtype)
    return torch.sort(torch.cat([idx, last], dim=1), dim=-1).values


def choose_filter_layer(coverage, threshold: float) -> int:
    """The source's rule for the filter layer (Section 9.4.3): "the first layer that accurately
    identifies the needle's position". ``coverage[i]`` is how often layer ``i + 1``'s selection
    keeps the needle on validation prompts; the first layer reaching ``threshold`` is chosen, and
    the best one where none does. Returns a 1-based layer."""
    if not 0 < threshold <= 1:
        raise ValueError(f"parameter 'threshold' = {threshold} is not allowed: expected (0, 1]")
    cov = [float(c) for c in coverage]
    for i, c in enumerate(cov):
        if c >= threshold:
            return i + 1
    return max(range(len(cov)), key=cov.__getitem__) + 1


@torch.no_grad()
def answer_on(model, ids: torch.Tensor, index: torch.Tensor | None = None) -> torch.Tensor:
    """The model's greedy answer on the prompt, or on its sub-sequence ``T_J`` (positions
    re-indexed ``0..k-1``, as in the second pass of Algorithm 2)."""
    if index is not None:
        ids = torch.gather(ids, 1, index.to(ids.device))
    return last_logits(model, ids).argmax(-1)
