"""Looped linear transformers doing multi-step gradient descent in context.

Source: Z. Shi's dissertation, Chapter 8 (Chen, Li, Liang, Shi & Song, "Bypassing the exponential
dependency"). Numbers in docstrings are the dissertation's: Definitions 8.2-8.12 (the setting),
Lemma 8.13 and Theorem 8.14 (one loop is one GD step), Theorem 8.16 (error <= |alpha| exp(-T/(2
kappa))), Theorem 8.17 (Gatmiry et al.'s sample requirement), Theorem 8.25 (GD on a strongly convex
quadratic).

Modules: ``chapters`` (the chapter's declaration), ``construction`` (the setting and
Lemma 8.13), ``theory`` (spectra and closed forms), ``experiments`` (Figure 8.1), ``symbolic``
(sympy checks), ``training`` (a trained looped transformer).

Shapes: a batch of prompts is ``X`` of shape ``(..., n, d)``, ``y`` of shape ``(..., n)``, the
transformer's state ``Z`` of shape ``(..., n+1, d+1)``. Everything here is device- and
dtype-agnostic; the chapter works in float64.
"""

from companions.looped import construction, experiments, symbolic, theory, training  # noqa: F401
