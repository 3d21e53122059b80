"""What the source reports of its experiments with large language models (Section 5.6, Figures
5.1-5.3), transcribed; nothing here is run. The figures give curves, not tables: the text reports
settings and qualitative findings, which are kept as the source states them."""

#: Section 5.6 and the captions of Figures 5.1 and 5.2.
LLM_SETUP = {
    "model sizes (Llama families)": "3B, 7B, 13B, 70B",
    "in-context exemplars M": 16,
    "evaluation prompts per dataset": 1000,
    "runs with different random seeds": 5,
    "datasets": "five binary NLP tasks: GLUE tasks (SST-2 named) and Subj",
    "noise": "an increasing percentage of in-context labels flipped; query labels unchanged",
    "ablation prompts (Figure 5.3)": 100,
    "ablation models (Figure 5.3)": "Llama 2-13b, Llama 2-70b",
}

#: The findings the source reads off its figures (Section 5.6.1-5.6.2).
LLM_FINDINGS = (
    ("Figure 5.1", "at 0% flips larger models have better in-context abilities"),
    ("Figure 5.1", "the performance decrease facing noise is more significant for larger models"),
    ("Figure 5.1", "small models stay flat and are seldom worse than random guessing"),
    ("Figure 5.2", "the same or a stronger effect for base (non-instruction-tuned) models"),
    ("Figure 5.3", "13b attends mainly to the relevant sentence, 70b to both"),
)
