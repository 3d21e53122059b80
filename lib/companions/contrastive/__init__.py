"""Contrastive learning under imbalanced data: the three stages of training dynamics, and pruning.

Companion to Liao, Zhang, Zhou, Zhang (UniReps 2025, "[000]", ``liao2025dynamics``) and Liao, Zhou,
Zhang, Wang, Zhang ("[001]", ``liao2025pruning``). Modules:

* ``data``     -- the sparse-coding generator (majority / minority features, noise, augmentation)
* ``model``    -- the Transformer-MLP encoder (frozen attention, BReLU neurons, bias schedule)
* ``training`` -- InfoNCE with StopGrad and weight decay, vectorised over runs
* ``theory``   -- closed forms (Stage 1 rates, T1, Definition B.1 probabilities, sympy derivations)
* ``metrics``  -- neuron statistics and the evaluations of [001] Appendix A.2
* ``pruning``  -- [001] Algorithm 1 as a mask hook, its log, the oracle sets of Appendix F, Lemmas
  F.1-F.2 measured, Table 2
* ``experiments`` -- the chapters' one-call experiments (the T1 sweep, the pruning sweeps, ...)
* ``decisions`` -- what the claims hand to the ledger, shaped for their registered rules
* ``report``   -- the chapters' figures and tables
* ``chapters`` -- the chapters' parameters, presets and registered claims
"""

from companions.contrastive import data, metrics, model, pruning, theory, training  # noqa: F401
