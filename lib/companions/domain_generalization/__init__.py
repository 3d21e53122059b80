"""Domain generalization via nuclear-norm regularization (ERM-NU).

Source: Z. Shi's dissertation, Chapter 6 and Appendix E (Shi, Ming, Fan, Sala & Liang, "Domain
generalization via nuclear norm regularization", CPAL 2024). Numbers in docstrings are the
dissertation's: (6.2)-(6.3) the rank objective and its nuclear-norm relaxation, Section 6.3.1 the
2-D synthetic task, Section 6.3.3 the stable rank, Section 6.4 the feature model with (6.4) ERM-l2
and (6.5) ERM-rank, Lemmas 6.1-6.2 = E.5-E.7, Proposition 6.3 = E.8, Lemmas E.1-E.4 (auxiliary),
Tables 6.1-6.3 (DomainBed).

Modules: ``chapters`` (the chapter's declaration), ``experiments`` (the chapter's runs over
repeats and seeds), ``data`` (samplers of Section 6.3.1 and 6.4
and of a multi-domain task), ``theory`` (the population objectives, their optima, OOD accuracy,
the bounds and the 2-D closed forms), ``symbolic`` (sympy checks of Appendix E), ``training``
(ERM, ERM-l2, ERM-l1 and ERM-NU trained with torch), ``tables`` (the DomainBed tables,
transcribed), ``report`` (the chapter's written tables and summary, from its ledger).

Conventions: ``z`` is the label-signed feature vector of Section 6.4 (``z = z~(x) y``), shape
``(n, d)``, invariant coordinates first (``R = [0, r)``), environmental ones after (``U``).
Population work is float64; training is float32.
"""

from companions.domain_generalization import (  # noqa: F401
    data,
    experiments,
    report,
    symbolic,
    tables,
    theory,
    training,
)
