"""Feature emergence from inputs, and lower bounds for fixed features.

Source: Shi, Wei & Liang, "A Theoretical Analysis on Feature Learning in Neural Networks: Emergence
from Inputs and Advantage over Fixed Features", ICLR 2022; the same work is Chapter 2 and Appendix A
of Z. Shi's dissertation. Equation and result numbers in docstrings are the dissertation's: (2.x)
for the main text, (A.x) for the appendix (ICLR Lemma 5 = Lemma 2.5 = A.2, Lemma 6 = 2.6 = A.9,
...).

Modules:

* :mod:`~companions.emergence.data` - the data family F_Xi (dictionary M, hidden presence vector,
  relevant set A, background patterns, p_o; parity and interval labelings), population-normalised,
  plus exact enumeration of the support for tiny D;
* :mod:`~companions.emergence.network` - the two-layer network (2.2) with the truncated ReLU, the
  smoothed loss (2.3), the symmetric initialisation, the two large-weight-decay steps with either
  first-step schedule ((A.214) or (A.274)), and the later steps (theory SGD or Adam);
* :mod:`~companions.emergence.baselines` - random features, the NTK (linearised network), One-Step
  and Two-Step probes, an RBF kernel method;
* :mod:`~companions.emergence.theory` - the closed forms: the Lemma 2.5 network in exact rationals,
  the gradient terms T_j by enumeration, the best-halfspace ceiling, the fixed-feature bound of
  Theorem 2.2 and its Fourier/Bessel argument, the SQ-dimension numbers of Theorem 2.4;
* :mod:`~companions.emergence.analysis` - alignment, signal/noise, sampled gradient terms, probes;
* :mod:`~companions.emergence.experiments` - the six methods of Section A.7.1 on one data set, the
  transcribed Tables A.1-A.5, class-imbalanced sampling (Table A.4);
* :mod:`~companions.emergence.chapters` - the chapters' parameters and presets.
"""

from companions.emergence import (  # noqa: F401
    analysis,
    baselines,
    chapters,  # noqa: F401  (registers the chapters)
    data,
    experiments,
    network,
    theory,
)
