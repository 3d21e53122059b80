"""Universality versus label efficiency of contrastively learned representations.

Source: Z. Shi's dissertation, Chapter 7 and Appendix F (Shi, Chen, Li, Raghuram, Wu, Liang & Jha,
ICLR 2023). Numbers in docstrings are the dissertation's: (7.1) the contrastive loss, (7.3) the
hidden-representation model, Theorem 7.1 = F.1 (PCA), Theorem 7.2 = F.2, Section 7.2.2 and F.2
(the linear trade-off model, (7.6)-(7.8), (F.35)-(F.39)), Lemma F.3 and Propositions 7.3 = F.6,
7.4 = F.7, F.8 and F.9 (contrastive fine-tuning, (F.104)-(F.105)).

Modules: ``chapters`` (the chapter's declaration), ``data`` (the feature layout and sampling),
``theory`` (closed forms, projections), ``symbolic`` (sympy and exact checks), ``training``
(projected gradient descent for pre-training and contrastive fine-tuning), ``experiments``
(probes, the trade-off sweep, decisions over seeds), ``tables`` (the source's tables, transcribed).

The losses themselves live in the core, :mod:`companions.losses`.
"""

from companions.universality import data, experiments, symbolic, tables, theory, training  # noqa: F401
