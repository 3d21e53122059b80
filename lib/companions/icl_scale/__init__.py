"""Why larger models do in-context learning differently: linear regression and sparse parity.

Source: Z. Shi's dissertation, Chapter 5 (Shi, Wei, Xu & Liang, "Why larger language models do
in-context learning differently?") and Appendix D. Numbers in docstrings are the dissertation's:
eqs. (5.1)-(5.3) (the linear self-attention and its prediction), Lemma 5.1 (the reduced loss),
Theorem 5.4.1 (the optimal rank-r solution), Theorems 5.4.2 and 5.4.3 (behaviour difference under
label noise), Lemmas D.1 and D.2; Theorems 5.5.1 and 5.5.2 (sparse parity, Appendix D.3).

Modules: ``chapters`` (the chapters' declarations), ``data`` (covariances, prompts, the
embedding), ``model`` (eq. (5.1), the rank-r model), ``theory`` (the closed forms, torch or sympy),
``experiments`` (Monte Carlo and training), ``parity`` (Section 5.5: the constructed networks, exact
margins, finite-M behaviour), ``paper`` (the source's reported experiment settings).

The Gaussian prompt sampler is the core's (``companions.incontext``), shared with the looped
topic.
"""

from companions.icl_scale import data, experiments, model, paper, parity, theory  # noqa: F401
