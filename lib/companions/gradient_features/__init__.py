"""Provable guarantees for neural networks via gradient feature learning.

Source: Shi, Wei & Liang, "Provable Guarantees for Neural Networks via Gradient Feature Learning",
NeurIPS 2023; the same work is Chapter 3 and Appendix B of Z. Shi's dissertation. Numbers in
docstrings are the dissertation's: (3.x) for the main text, (B.x) for the appendix.

Modules:

* :mod:`~companions.gradient_features.data` - the special cases' distributions: mixtures of
  Gaussians (B.233), the XOR mixture (Assumption B.36), parity with structured inputs
  (B.396)-(B.397), uniform parity (Assumption B.53);
* :mod:`~companions.gradient_features.network` - the network (3.1), the symmetric initialisation
  (3.9), the simplified gradient vector (3.4), cones (3.5), the first step (B.16)-(B.17), the later
  steps of Algorithm 1, and the fixed-feature baselines (random features, NTK, linear);
* :mod:`~companions.gradient_features.theory` - the closed forms: Theorem 3.12's terms, the ground
  truths of Lemmas 3.17 and 3.21, E[yx] (Remark B.45), Proposition 3.23, Majority's Fourier
  coefficients (B.547) and Lemma B.63 by enumeration;
* :mod:`~companions.gradient_features.experiments` - one-step measurements and the training
  comparisons the chapters run;
* :mod:`~companions.gradient_features.report` - the chapters' figures and tables;
* :mod:`~companions.gradient_features.chapters` - the chapters' parameters, presets and registered
  claims.
"""

from companions.gradient_features import (  # noqa: F401
    chapters,  # noqa: F401  (registers the chapters)
    data,
    experiments,
    network,
    report,
    theory,
)
