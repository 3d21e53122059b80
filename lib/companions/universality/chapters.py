"""The universality-trade-off chapter: its parameters and presets at each scale (Chapter 7)."""

from __future__ import annotations

from companions.scale import Chapter, Float, Int, ListOf, register_chapter


def _check_parameter_pairs(p):
    """Constraints between parameters (a message naming the parameter, or None)."""
    if p["r"] != 2 * p["s"]:
        return (
            f"parameter 'r' = {p['r']} is not allowed: this chapter uses the source's illustrative "
            f"case r = 2s = {2 * p['s']} (Propositions F.8 and F.9 assume it)"
        )
    if p["m_target"] >= p["r"]:
        return (
            f"parameter 'm_target' = {p['m_target']} is not allowed: it must be below "
            f"r = {p['r']}; "
            f"with m >= r labels the least-squares probe hides the trade-off (see the chapter)"
        )
    if min(p["m_values"]) >= p["r"] or max(p["m_values"]) < p["r"]:
        return (
            f"parameter 'm_values' = {list(p['m_values'])} is not allowed: it needs one m below "
            f"r = {p['r']} and one at or above it (the chapter compares the two regimes)"
        )
    if max(p["m_values"]) > 10 * p["r"]:
        return (
            f"parameter 'm_values' = {list(p['m_values'])} is not allowed: "
            f"keep every m <= 10 r = {10 * p['r']}"
        )
    return None


def _snap(v: dict, t: float) -> dict:
    """Between the presets (``companions.scale.between``): the source's case ``r = 2s``."""
    v["r"] = 2 * v["s"]
    return v


CHAPTER = register_chapter(
    Chapter(
        id="universality-trade-off",
        title="Universality versus label efficiency in contrastive learning",
        notebook="book/universality/trade-off.md",
        params={
            "s": Int(1, 1000, doc="number of shared invariant features |S| (Section 7.2.2)"),
            "r": Int(2, 2000, doc="invariant features per task |R_t| (must equal 2s here)"),
            "T": Int(2, 64, doc="number of tasks in the pre-training mixture"),
            "n_spurious": Int(0, 10_000, doc="number of spurious features |U|"),
            "pre_steps": Int(1, 1_000_000, doc="projected gradient steps of each pre-training"),
            "pre_batch": Int(2, 1_000_000, doc="samples per pre-training step"),
            "pre_lr": Float(0, 100, low_open=True, doc="step size of projected gradient descent"),
            "seeds": Int(
                2, 100, doc="independent pre-trainings per configuration (for standard errors)"
            ),
            "m_target": Int(
                1, 10_000, doc="labels on the target task in the trade-off figure (below r)"
            ),
            "m_univ": Int(1, 100_000, doc="labels per task for the average accuracy across tasks"),
            "m_values": ListOf(
                Int(1, 100_000), min_len=2, doc="label counts of the excess-risk curves"
            ),
            "ridge": Float(
                0, 10, doc="ridge penalty per label of the binary probes (0: least norm)"
            ),
            "probe_trials": Int(10, 1_000_000, doc="labelled samples drawn per probe evaluation"),
            "gamma": Float(0, 100, low_open=True, doc="radius of the fine-tuning ball (F.105)"),
            "cr_steps": Int(
                1, 1_000_000, doc="projected gradient steps of contrastive fine-tuning"
            ),
            "mc_samples": Int(
                1000, 100_000_000, doc="Monte Carlo draws for Proposition F.8's objective"
            ),
            "rademacher_draws": Int(
                100, 10_000_000, doc="Monte Carlo draws for the Rademacher term (F.75)"
            ),
            "xor_restarts": Int(
                1, 100_000, doc="random restarts for the XOR example (Appendix F.1.1)"
            ),
            "xor_steps": Int(10, 100_000, doc="Adam steps per XOR restart"),
        },
        presets={
            "smoke": dict(
                s=3,
                r=6,
                T=3,
                n_spurious=4,
                pre_steps=150,
                pre_batch=256,
                pre_lr=2.0,
                seeds=2,
                m_target=3,
                m_univ=24,
                m_values=[2, 4, 6, 12],
                probe_trials=300,
                ridge=1e-3,
                gamma=0.3,
                cr_steps=60,
                mc_samples=100_000,
                rademacher_draws=2000,
                xor_restarts=20,
                xor_steps=300,
            ),
            "default": dict(
                s=5,
                r=10,
                T=4,
                n_spurious=10,
                pre_steps=300,
                pre_batch=512,
                pre_lr=2.0,
                seeds=4,
                m_target=5,
                m_univ=40,
                m_values=[2, 4, 6, 8, 10, 15, 20],
                probe_trials=1000,
                ridge=1e-3,
                gamma=0.3,
                cr_steps=150,
                mc_samples=400_000,
                rademacher_draws=10_000,
                xor_restarts=100,
                xor_steps=400,
            ),
            "paper": dict(
                s=50,
                r=100,
                T=8,
                n_spurious=200,
                pre_steps=2000,
                pre_batch=4096,
                pre_lr=2.0,
                seeds=5,
                m_target=50,
                m_univ=400,
                m_values=[10, 25, 50, 75, 100, 200],
                probe_trials=2000,
                ridge=1e-3,
                gamma=1.0,
                cr_steps=1000,
                mc_samples=2_000_000,
                rademacher_draws=20_000,
                xor_restarts=300,
                xor_steps=400,
            ),
        },
        checks=(_check_parameter_pairs,),
        snap=_snap,
    )
)
