"""Why fine-grained labels in pretraining help generalization (Hong, Cui, Fuxman, Chan, Luo).

Source: G. Z. Hong, Y. Cui, A. Fuxman, S. H. Chan, E. Luo, "Why Fine-grained Labels in
Pretraining Benefit Generalization?" (TMLR). Equation numbers in docstrings are the paper's (the
text numbers its equations 1-239 in sequence): Definitions 4.1-4.4 and App. B.1 (data), eqs.
(2)/(14) and (176) (network), (15)-(18) and (177)-(178) (training), Propositions 1-2 (initial
geometry), Theorems 5.1/E.1 (coarse), F.1 (invariants), 5.2/G.3 (fine). The paper has no
simulations: every run of these chapters is this book's.

Modules: ``chapters`` (the three chapters' declarations and registered claims), ``data`` (the
hierarchical multi-view sampler, Bernoulli and exact patch counts), ``model`` (the network,
aggregations, detector sets),
``training`` (eqs. 16 and 18, online, all seeds in one tensor), ``experiments`` (the chapters'
runs and what they hand to the registered claims), ``theory`` (closed forms, floats/mpmath),
``symbolic`` (sympy checks), ``tables`` (the paper's Tables 1-8, transcribed), ``report`` (the
chapters' figures and tables; imported by the chapters, not here).

Conventions: the dictionary is the standard basis; ``y = 0`` is "+" and ``y = 1`` is "-"; every
tensor has a leading seed axis. Training is float32.
"""

from companions.fine_labels import (  # noqa: F401
    data,
    experiments,
    model,
    symbolic,
    tables,
    theory,
    training,
)
