"""companions.icl_scale.paper (issue 23): a transcription of the source's Section 5.6, data only
(mutmut mutates function bodies, and the module has none). These check that the transcription
agrees with itself: the ablation's models are among the model sizes, its prompts a subset."""

import re

from companions.icl_scale import paper


def test_ablation_models_are_among_the_sizes():
    sizes = paper.LLM_SETUP["model sizes (Llama families)"].split(", ")
    assert sizes == ["3B", "7B", "13B", "70B"]  # Section 5.6
    ablation = re.findall(r"-(\d+)b", paper.LLM_SETUP["ablation models (Figure 5.3)"])
    assert ablation == ["13", "70"] and all(f"{s}B" in sizes for s in ablation)


def test_counts_are_positive_integers_and_the_ablation_is_smaller():
    counts = {k: v for k, v in paper.LLM_SETUP.items() if not isinstance(v, str)}
    assert set(counts) == {
        "in-context exemplars M",
        "evaluation prompts per dataset",
        "runs with different random seeds",
        "ablation prompts (Figure 5.3)",
    }
    assert all(isinstance(v, int) and v > 0 for v in counts.values())
    setup = paper.LLM_SETUP
    assert setup["ablation prompts (Figure 5.3)"] < setup["evaluation prompts per dataset"]


def test_every_figure_has_a_finding():
    figures = [f for f, _ in paper.LLM_FINDINGS]
    assert sorted(set(figures)) == ["Figure 5.1", "Figure 5.2", "Figure 5.3"]
    assert figures == sorted(figures)  # in the order of the section
    assert all(isinstance(text, str) and text for _, text in paper.LLM_FINDINGS)
