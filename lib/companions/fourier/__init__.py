"""Fourier circuits for k-input modular addition: the max-margin one-hidden-layer network.

Source: Z. Shi's dissertation, Chapter 4 and Appendix C (Li, Liang, Shi, Song & Zhou, "Fourier
circuits in neural networks and transformers: a case study of modular arithmetic with multiple
inputs"). Numbers in docstrings are the dissertation's: eq. (4.1) the task, eq. (4.2) the network,
Definitions 4.1-4.6 and C.1-C.3 (loss, margins, norms), Lemma 4.10 = C.15 (gamma*), Lemma 4.11 =
C.18 (the explicit network), Lemma C.14 / eq. (C.10) (Fourier form of the single-neuron margin),
Lemma C.16 (sum-to-product), eq. (C.21) (cosine expansion), Lemma C.20 (every frequency is used),
Theorem 4.9 = C.22 (main result).

Modules: ``chapters`` (the three chapters' declarations), ``network`` (task, network, norms,
margins), ``neuron`` (the single-neuron margin), ``construction`` (Lemma 4.11), ``diagnostics``
(Fourier spectra), ``symbolic`` (sympy identities), ``ascent`` (random neurons and the
single-neuron ascent), ``training`` (Theorem 4.9's training), ``transformer`` (Section 4.5).

Shapes: a network with ``m`` neurons is ``U`` of shape ``(..., m, k, p)`` (the ``u_{i,j}``) and
``W`` of shape ``(..., m, p)`` (the ``w_i``); leading dimensions are independent runs. Inputs are
integer tuples ``a`` of shape ``(N, k)``. DFT convention (Section 4.4.1):
``f_hat(j) = sum_a f(a) exp(-2 pi i j a / p)``, which is ``torch.fft.fft``. Phases use the
convention of Lemma C.15, ``u(a) = beta cos(theta + 2 pi zeta a / p)``, so
``u_hat(zeta) = (p beta / 2) exp(i theta)``.
"""

from companions.fourier import (  # noqa: F401
    ascent,
    construction,
    diagnostics,
    network,
    neuron,
    symbolic,
    training,
    transformer,
)
