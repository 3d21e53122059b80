"""The source's reported numbers, transcribed (dissertation, Chapter 9 and Appendix G)."""

from __future__ import annotations

#: Table 9.1, LongBench average score (no chat template), by model and method.
LONGBENCH_AVERAGE = {
    "LLaMA 3.1 8B": {
        "All KV": 36.72,
        "H2O-4096": 33.63,
        "SnapKV-1024": 35.25,
        "GemFilter-1024": 34.50,
        "SnapKV-2048": 35.80,
        "GemFilter-2048": 35.87,
        "SnapKV-4096": 36.44,
        "GemFilter-4096": 36.09,
    },
    "Mistral Nemo 12B": {
        "All KV": 46.36,
        "H2O-4096": 43.69,
        "SnapKV-1024": 44.71,
        "GemFilter-1024": 45.14,
        "SnapKV-2048": 45.42,
        "GemFilter-2048": 47.11,
        "SnapKV-4096": 46.04,
        "GemFilter-4096": 46.79,
    },
    "Phi 3.5 Mini 3.8B": {
        "All KV": 34.62,
        "H2O-4096": 30.31,
        "SnapKV-1024": 33.68,
        "GemFilter-1024": 32.74,
        "SnapKV-2048": 34.20,
        "GemFilter-2048": 31.69,
        "SnapKV-4096": 34.53,
        "GemFilter-4096": 33.35,
    },
}

#: Table 9.2, LongBench average of GemFilter-1024 on LLaMA 3.1 8B (32 layers) by filter layer.
FILTER_LAYER_AVERAGE = {
    1: 23.50,
    7: 27.47,
    12: 28.03,
    13: 34.50,
    14: 34.30,
    19: 34.12,
    25: 33.94,
    31: 30.04,
}

#: Needle-in-a-Haystack average scores stated in the captions of Figures G.1-G.4.
NEEDLE_AVERAGE = {
    ("Phi 3.5 Mini 3.8B", "All KV"): 0.851,
    ("Phi 3.5 Mini 3.8B", "SnapKV-1024"): 0.864,
    ("Phi 3.5 Mini 3.8B", "GemFilter-1024 (layer 19)"): 0.910,
    ("LLaMA 3.1 8B", "GemFilter-1024 (layer 14)"): 0.870,
    ("Mistral Nemo 12B", "GemFilter-1024 (layer 19)"): 0.838,
    ("Mistral Nemo 12B", "GemFilter-One-Run-1024 (layer 19)"): 0.827,
    ("Mistral Nemo 12B", "Middle-Row-1024 (layer 19)"): 0.198,
    ("Mistral Nemo 12B", "Largest-Row-1024 (layer 19)"): 0.125,
}

#: Filter layers (1-based, as the text counts them) and layer counts of the three models.
MODELS = {
    "LLaMA 3.1 8B": {"m": 32, "r": 13},
    "Mistral Nemo 12B": {"m": 40, "r": 19},
    "Phi 3.5 Mini 3.8B": {"m": 32, "r": 19},
}

#: The speedup of GemFilter's prompt computation stated in the text: 2.4x against SnapKV and
#: standard attention for LLaMA 3.1 (Figure 9.3, Section 9.4.5), and for Mistral Nemo and Phi 3.5
#: (caption of Figure 9.6). Memory: 30 % less than SnapKV, 70 % less than standard (Figure 9.3).
SPEEDUP_STATED = 2.4
MEMORY_REDUCTION_STATED = {"vs SnapKV": 0.30, "vs standard": 0.70}

#: LLaMA 3.1 8B's shapes (its public configuration): 32 layers, 32 query heads, 8 key-value heads,
#: head dimension 128; the case study's n = 128K, k = t = 1024; Figure 9.1's n = 108,172.
LLAMA_8B = {"layers": 32, "heads": 32, "kv_heads": 8, "head_dim": 128, "bytes": 2}
