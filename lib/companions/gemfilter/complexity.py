"""Theorem 9.3 (= Theorem G.4) of the dissertation: time and GPU memory of standard attention,
SnapKV/H2O and GemFilter, in sympy; and the same costs counted on a concrete LLaMA configuration
(FLOPs of every matrix product, KV-cache sizes).

Symbols: ``n`` prompt length, ``d`` hidden (head) dimension, ``k`` selected tokens / cache size,
``t`` generated tokens, ``m`` layers, ``h`` heads, ``w`` memory of one layer's parameters,
``r`` the filter layer.
"""

from __future__ import annotations

import sympy as sp

n, d, k, t, m, h, w, r = sp.symbols("n d k t m h w r", positive=True)

METHODS = ("standard", "snapkv", "gemfilter")


def table(printed: bool = True) -> dict:
    """The table of Theorem 9.3 / G.4, as sympy expressions (the Theta-terms without Theta).
    ``printed=True`` is the table as printed, with the standard method's prompt memory
    ``m w + 2 m h d``; ``printed=False`` replaces it with the full KV cache ``m w + 2 m h n d``
    that the proof's own generation line (``2 m h (n + t) d``) and App. G.2 imply."""
    std_prompt_mem = m * w + 2 * m * h * d if printed else m * w + 2 * m * h * n * d
    return {
        "time_prompt": {
            "standard": m * h * n**2 * d,
            "snapkv": m * h * n**2 * d,
            "gemfilter": r * h * n**2 * d,
        },
        "time_gen": {
            "standard": m * h * (n * t + t**2) * d,
            "snapkv": m * h * (k * t + t**2) * d,
            "gemfilter": m * h * (k**2 + t**2) * d,
        },
        "mem_prompt": {
            "standard": std_prompt_mem,
            "snapkv": m * w + 2 * h * n * d + 2 * m * h * k * d,
            "gemfilter": r * w + 2 * h * n * d,
        },
        "mem_gen": {
            "standard": m * w + 2 * m * h * (n + t) * d,
            "snapkv": m * w + 2 * m * h * (k + t) * d,
            "gemfilter": m * w + 2 * m * h * (k + t) * d,
        },
    }


def derived() -> dict:
    """The consequences this book derives from the table (each a sympy expression or boolean):

    - ``prompt_time_ratio``: GemFilter / standard prompt time (``r/m``);
    - ``gen_time_k_eq_t``: generation time / (m h d k) at ``t = k`` for the three methods, with
      the proof's ``k^2 + k t + t^2`` for GemFilter, leading terms as ``n -> oo``;
    - ``proof_sandwich``: ``k^2+t^2 <= k^2+kt+t^2 <= 3/2 (k^2+t^2)`` as two nonnegative
      differences (the proof's step ``Theta(k^2+kt+t^2) = Theta(k^2+t^2)``);
    - ``gen_mem_over_mhd``: generation memory / (m h d) at ``t = k``;
    - ``snap_minus_gem_prompt_mem``: SnapKV minus GemFilter prompt memory;
    - ``printed_std_minus_snap``: standard minus SnapKV prompt memory in the printed table, and
      ``corrected_std_minus_snap`` with the full KV cache;
    - ``prompt_mem_ratio_limit``: GemFilter / standard prompt memory (corrected), n -> oo."""
    T, C = table(True), table(False)
    kk = sp.Symbol("kappa", positive=True)  # t = k
    gen = {
        "standard": sp.limit(C["time_gen"]["standard"].subs(t, k) / (m * h * d * k) - n, n, sp.oo),
        "snapkv": sp.simplify(C["time_gen"]["snapkv"].subs(t, k) / (m * h * d * k)),
        "gemfilter": sp.simplify(m * h * (k**2 + k * t + t**2) * d / (m * h * d * k)).subs(t, k),
    }
    del kk
    return {
        "prompt_time_ratio": sp.simplify(
            T["time_prompt"]["gemfilter"] / T["time_prompt"]["standard"]
        ),
        "gen_time_k_eq_t": {key: sp.simplify(v) for key, v in gen.items()},
        "proof_sandwich": (
            sp.expand(k * t),
            sp.expand(sp.Rational(3, 2) * (k**2 + t**2) - (k**2 + k * t + t**2)),
        ),
        "gen_mem_over_mhd": {
            key: sp.expand(C["mem_gen"][key].subs(t, k) / (m * h * d)) for key in METHODS
        },
        "snap_minus_gem_prompt_mem": sp.factor(
            C["mem_prompt"]["snapkv"] - C["mem_prompt"]["gemfilter"]
        ),
        "printed_std_minus_snap": sp.expand(
            T["mem_prompt"]["standard"] - T["mem_prompt"]["snapkv"]
        ),
        "corrected_std_minus_snap": sp.expand(
            C["mem_prompt"]["standard"] - C["mem_prompt"]["snapkv"]
        ),
        "prompt_mem_ratio_limit": sp.limit(
            C["mem_prompt"]["gemfilter"] / C["mem_prompt"]["standard"], n, sp.oo
        ),
    }


def nonnegative_on_positive(expr) -> bool:
    """Whether a polynomial in positive symbols has only nonnegative coefficients (so it is
    nonnegative wherever its symbols are positive): a sufficient test, exact in sympy."""
    poly = sp.Poly(sp.expand(expr), *sorted(expr.free_symbols, key=str))
    return all(c >= 0 for c in poly.coeffs())


def prompt_speedup(layers: int, filter_layer: int) -> sp.Rational:
    """Theorem 9.3's prompt-phase speedup ``m / r`` of GemFilter over standard attention and
    SnapKV (the leading term; exact rational)."""
    if not 1 <= filter_layer <= layers:
        raise ValueError(
            f"parameter 'filter_layer' = {filter_layer} is not allowed: "
            f"expected 1 <= filter_layer <= layers = {layers}"
        )
    return sp.Rational(layers, filter_layer)


# ------------------------------------------------------------------------------------------------
# Counting on a concrete LLaMA configuration
# ------------------------------------------------------------------------------------------------
def layer_flops(n_tokens: int, width: int, heads: int, kv_heads: int, mlp: int) -> int:
    """Matrix-product FLOPs (2 per multiply-add) of one LLaMA decoder layer on ``n_tokens``
    tokens in one causal pass without a cache, as ``torch.utils.flop_counter`` counts them: the
    projections Q and O (``2 n D (h d_h)`` each), K and V (``2 n D (h_kv d_h)`` each), the
    SwiGLU MLP (three products, ``2 n D F`` each) and the two attention products ``Q K^T`` and
    ``A V`` (``2 n^2 d_h`` per head each; the mask is applied to a full ``n x n`` product)."""
    hd = width // heads
    proj = 2 * n_tokens * width * hd * (2 * heads + 2 * kv_heads)
    mlp_f = 3 * 2 * n_tokens * width * mlp
    attn = 2 * 2 * heads * n_tokens * n_tokens * hd
    return proj + mlp_f + attn


def prefill_flops(
    n_tokens: int, layers: int, *, width: int, heads: int, kv_heads: int, mlp: int, vocab: int
) -> int:
    """FLOPs of a prefill of ``layers`` layers and the output head on the last position."""
    return layers * layer_flops(n_tokens, width, heads, kv_heads, mlp) + 2 * width * vocab


def filter_flops(
    n_tokens: int, filter_layer: int, width: int, heads: int, kv_heads: int, mlp: int
) -> int:
    """FLOPs of GemFilter's first pass: ``r`` layers (the r-th in full, as the released code
    runs it) and the scores ``sum_j Q_n^{(r,j)} K^{(r,j)T}`` (``2 n d_h`` per head)."""
    hd = width // heads
    return (
        filter_layer * layer_flops(n_tokens, width, heads, kv_heads, mlp)
        + 2 * heads * n_tokens * hd
    )


def kv_cache_elements(tokens: int, layers: int, kv_heads: int, head_dim: int) -> int:
    """Elements of a KV cache of ``tokens`` positions over ``layers`` layers: ``2 L h_kv d_h``
    per token (the theorem's ``2 m h n d`` with ``h_kv = h``)."""
    return 2 * layers * kv_heads * head_dim * tokens


def count_flops(fn) -> int:
    """Total FLOPs of ``fn()`` counted by :class:`torch.utils.flop_counter.FlopCounterMode`."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        fn()
    return int(counter.get_total_flops())


def measured_cache_elements(past_key_values) -> int:
    """Elements held by a ``transformers`` cache after a forward pass (keys and values)."""
    total = 0
    for layer in past_key_values.layers:
        total += layer.keys.numel() + layer.values.numel()
    return total
