"""GemFilter: an early layer of a language model selects the input tokens that matter.

Source: Z. Shi's dissertation, Chapter 9 and Appendix G (Shi, Ming, Nguyen, Liang & Joty,
"Discovering the gems in early layers"). Numbers in docstrings are the dissertation's:
Definitions 9.1-9.2 (attention, the m-layer transformer), Algorithm 2 (SelectionGen), Theorem 9.3
(= Theorem G.4, complexity), the listing of Appendix G.4.1 and the details of G.4.2. The released
code is SalesforceAIResearch/GemFilter.

Modules: ``chapters`` (the chapter's declaration), ``complexity`` (Theorem 9.3 in sympy, FLOP and
KV-cache counts), ``model`` (a small LLaMA decoder from ``transformers``, the needle task,
Algorithm 2's selection), ``experiments`` (the trained models, the baselines, the cost sweep),
``report`` (the chapter's claims, with their margins fixed in advance), ``tables`` (the
source's reported numbers, transcribed), ``bench`` (cases for ``python -m
companions bench``).
"""
