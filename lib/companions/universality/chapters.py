"""The universality-trade-off chapter: its parameters and presets at each scale (Chapter 7)."""

from __future__ import annotations

import math

from companions.claims import (
    Amendment,
    AtLeast,
    AtMost,
    Claim,
    Close,
    DifferenceAbove,
    Every,
    Exact,
    MeanAbove,
    MeanWithin,
    OnlyRefutes,
)
from companions.scale import Chapter, Float, Int, ListOf, register_chapter

_AMENDED = "2026-12-05"
_SEEDS = "more seeds (pre-trainings per configuration; the paper preset has 5, at larger sizes)"
_REL = "within a tenth of the prediction (this book's margin, relative: at the paper preset 1/T is "
_REL += "itself small), decided over seeds with the 95 % t-interval"
_RIDGE_CHOSEN = Amendment(
    _AMENDED,
    previous="the least-norm probe, registered first (claims tradeoff-least-norm-*); its "
    "average-accuracy claim came out inconclusive at the default scale (+0.0005 +- 0.0009)",
    reason="the ridge probe and the value of `ridge` in the presets were chosen after that "
    "result was seen; kept for what it shows (the least-norm probe uses the random initial "
    "weights on other tasks' features), to be read second, after the least-norm verdict",
)


def _loading(cid: str, source: str, what: str) -> Claim:
    return Claim(
        id=cid,
        source=source,
        kind="prediction",
        statistic=f"the mean squared loading a_j^2 = ||(W M)_:,j||^2 over {what}, per pre-training "
        "seed, over the closed form's value",
        rule=MeanWithin(1.0, 0.1),
        could_fail="a representation that encodes the group more or less strongly than the "
        f"closed form says (or a projection bug) lands outside the band; the band is {_REL}",
        decides=_SEEDS,
    )


CLAIMS = (
    Claim(
        id="theorem-7-1-linear-sympy",
        source="Theorem 7.1 (F.2)",
        kind="identity",
        statistic="the contrastive loss with l(t) = -t plus the PCA objective of xbar, with "
        "symbolic W (2x3), M, means and covariance roots (sympy); then whether the same sum is "
        "nonzero when the positive keeps z's own z_U",
        rule=Exact([0, True]),
        could_fail="a false identity leaves a residual; a check that ignores z_U's resampling "
        "would also vanish without it",
    ),
    Claim(
        id="theorem-7-1-exact-rational",
        source="Theorem 7.1 (F.1)",
        kind="identity",
        statistic="both sides of (F.1) enumerated exactly (fractions) on a finite model with a "
        "random rational nonlinear table h, |Z_R| = 3, |Z_U| = 2: their difference",
        rule=Exact(0),
        could_fail="a false (F.1) for nonlinear phi leaves a nonzero rational",
    ),
    Claim(
        id="theorem-7-2-1-no-spurious",
        source="Theorem 7.2 (1)",
        kind="reproduction",
        statistic="on a finite model meeting (A1)-(A3) (g the identity, |phi| = B on every x, "
        "logistic loss; |Z_R| = 3, |Z_U| = 2, k = 2, B in {1, 3}): the lowest loss found over "
        "representations free to depend on z_U minus the lowest over those that ignore it "
        "(L-BFGS, random restarts, float64)",
        rule=OnlyRefutes(Every(AtLeast(-1e-6))),
        could_fail="if the optimum encoded z_U, some representation that depends on it would "
        "reach a lower loss than every one that does not (differs); a search that finds none "
        "leaves the theorem unrefuted, not confirmed",
        decides="a proof: a search can refute the statement, never confirm it",
        amended=(
            Amendment(
                _AMENDED,
                previous=Every(AtLeast(-1e-6)),
                reason="registered first as a bound that holds when the search finds nothing "
                "lower; a search cannot confirm an optimum, so no counterexample is now "
                "inconclusive (the book's rule for searches, OnlyRefutes)",
            ),
        ),
    ),
    Claim(
        id="xor-square-optimal",
        source="Appendix F.1.1",
        kind="reproduction",
        statistic="the lowest loss of xor_restarts random restarts (Adam on the four angles, "
        "float64) minus the loss of the source's square map",
        rule=OnlyRefutes(AtLeast(-1e-9)),
        could_fail="a restart ending below the square shows it is not optimal (the source says "
        "it 'can be verified'); none below leaves it unrefuted, not verified",
        decides="a proof: restarts can refute the optimality, never confirm it",
        amended=(
            Amendment(
                _AMENDED,
                previous=AtLeast(-1e-9),
                reason="a bound that held when no restart ended lower; restarts cannot verify an "
                "optimum, so no counterexample is now inconclusive (OnlyRefutes)",
            ),
        ),
    ),
    Claim(
        id="f8-exponential-alpha-one",
        source="Proposition F.8 (exponential loss, this book)",
        kind="identity",
        statistic="for l(t) = exp(-t), the number of stationary points of the log-objective minus "
        "1, the stationary point minus (T + 3)/4, and its slope at alpha = 1 minus "
        "s(1 - T)/(3(T + 2)) (sympy): a single stationary point at or above 1 makes alpha = 1 the "
        "optimum on [0, 1]",
        rule=Exact(0),
        could_fail="another stationary point, or one below 1, would move the optimum off alpha = 1",
    ),
    Claim(
        id="f8-logistic-alpha-one",
        source="Proposition F.8",
        kind="prediction",
        statistic="f(alpha) - f(1) for the logistic loss, "
        "f(alpha) = E l(alpha Z + beta(alpha) Z_1), at alpha = 0, 0.1, ..., 0.9: Monte Carlo "
        "with common draws, mean and standard error",
        rule=Every(MeanAbove(0.0)),
        could_fail="an alpha < 1 with a lower objective refutes alpha = 1",
        decides="more mc_samples",
    ),
    _loading("loadings-target-s", "Proposition 7.4", "S, pre-trained on the target task alone"),
    _loading("loadings-target-p1", "Proposition 7.4", "P_1, pre-trained on the target task alone"),
    _loading("loadings-mixture-s", "Proposition F.8", "S, pre-trained on the mixture"),
    _loading("loadings-mixture-p1", "Proposition F.8", "P_1, pre-trained on the mixture"),
    _loading("loadings-mixture-p2", "Proposition F.8", "P_2, pre-trained on the mixture"),
    *(
        Claim(
            id=f"spurious-removed-{name}",
            source="Lemma F.3 (F.48)",
            kind="prediction",
            statistic=f"mean a_U^2 of the control (positives keep z's own z_U) minus that of "
            f"(7.7)'s run, pre-trained on {what}, paired by seed",
            rule=MeanAbove(0.0),
            could_fail="if resampling z_U did not remove it, the two runs would encode z_U alike",
            decides=_SEEDS,
        )
        for name, what in (("target", "the target task"), ("mixture", "the mixture"))
    ),
    Claim(
        id="probe-norm-f68",
        source="Lemma F.5 (F.68)",
        kind="identity",
        statistic="the norm of the least-norm exact probe on W* = Q A* M^T (random Q, M) minus "
        "sqrt(v1/alpha + v2/beta), float64",
        rule=Close(0.0, 1e-9),
        could_fail="a wrong (F.68), or a representation that is not Lemma F.3's, gives another "
        "norm",
    ),
    Claim(
        id="rademacher-two-sided",
        source="Lemma F.5 (F.75), this book's bounds",
        kind="bound",
        statistic="the Monte Carlo estimate of (B/m) E||X|| at m = r, alpha = 1/2, beta(1/2): its "
        "distance above the Poincare lower bound and below the Jensen upper bound, each in "
        "standard errors",
        rule=AtLeast(-1.96),
        could_fail="the slip (alpha for sqrt(alpha)) would put the estimate below the lower "
        "bound by many standard errors",
        amended=(
            Amendment(
                _AMENDED,
                previous="lower - t se <= Monte Carlo <= Jensen + t se, t the 97.5 % Student-t "
                "value for rademacher_draws - 1 df",
                reason="a registered rule has its number fixed: 1.96, the normal value, for draws "
                "in the thousands (t is 1.9612 at the smoke preset's 2000 draws)",
            ),
        ),
    ),
    Claim(
        id="mixture-costs-labels",
        source="Section 7.2.2 (this book's probe)",
        kind="prediction",
        statistic="excess MSE of the least-norm probe at the smallest m < r, mixture minus "
        "target-only trained representation, paired by seed",
        rule=MeanAbove(0.0),
        could_fail="if the mixture's representation cost no labels, the difference would be 0",
        decides=_SEEDS,
    ),
    *(
        Claim(
            id=f"tradeoff{probe}-{what}-grows",
            source="Figure 7.3 (synthetic counterpart)",
            kind="prediction",
            statistic=f"{label} with the {probe_name}, pre-trained on all T tasks minus on the "
            "first task alone, paired by seed",
            rule=MeanAbove(0.0),
            could_fail=fail,
            decides=_SEEDS,
            amended=() if probe else (_RIDGE_CHOSEN,),
        )
        for probe, probe_name in (("-least-norm", "least-norm probe"), ("", "ridge probe"))
        for what, label, fail in (
            (
                "target-error",
                "the target error with m_target labels",
                "if adding tasks cost the target nothing, the difference would be 0",
            ),
            (
                "average-accuracy",
                "the average accuracy over the T tasks with m_univ labels each",
                "if the wider representation did not serve the other tasks better, the "
                "difference would be 0",
            ),
        )
    ),
    Claim(
        id="cr-sqrt-beta-f9",
        source="Proposition F.9",
        kind="prediction",
        statistic="the mean sqrt(a_j^2) on P_1 after contrastive fine-tuning on task 1, per seed, "
        "over min(1, sqrt(1/T) + gamma/sqrt(s))",
        rule=MeanWithin(1.0, 0.1),
        could_fail="fine-tuning that raised P_1 more or less than (F.105) allows lands outside "
        "the band",
        decides=_SEEDS,
    ),
    Claim(
        id="cr-alpha-stays-one",
        source="Proposition F.9",
        kind="prediction",
        statistic="the mean a_j^2 on S after contrastive fine-tuning on task 1, per seed",
        rule=MeanWithin(1.0, 0.1),
        could_fail="fine-tuning could trade weight on S for weight on P_1; a projection bug "
        "would show here",
        decides=_SEEDS,
    ),
    Claim(
        id="cr-stays-in-f105",
        source="(F.105)",
        kind="bound",
        statistic="max over fine-tunings of max(||W_CR - W*||_F - gamma, ||W_CR|| - 1, 0) (Dykstra "
        "stopped at moves below CR_TOL, float32)",
        rule=AtMost(1e-4),
        could_fail="a projection that leaves the set shows a positive distance",
    ),
    Claim(
        id="cr-lowers-target-error",
        source="Appendix F.2.4 (this book's probe)",
        kind="prediction",
        statistic="the target error with m_target labels (ridge probe) before minus after "
        "fine-tuning, paired by seed",
        rule=MeanAbove(0.0),
        could_fail="if fine-tuning did not raise P_1, the error would not fall",
        decides=_SEEDS,
    ),
    Claim(
        id="cr-leaves-phi",
        source="this book (caveat on (F.105))",
        kind="prediction",
        statistic="||W_CR||_F^2 - r after fine-tuning, per seed",
        rule=MeanAbove(0.0),
        could_fail="if (F.105) kept W_CR inside Phi, the difference would be at most 0",
        decides=_SEEDS,
    ),
    Claim(
        id="intro-gains-table-7-2",
        source="Section 7.1 vs Table 7.2",
        kind="reproduction",
        statistic="Ours - FT in Table 7.2 minus the introduction's quoted gains (CLIP on "
        "ImageNet 1.3, MoCo v3 on GTSRB 4.8), exact decimals",
        rule=Every(Close(0.0, 0.05)),
        could_fail="a quoted gain that the table does not give, beyond the quote's rounding",
    ),
    Claim(
        id="section-7-3-3-gain",
        source="Section 7.3.3 vs Table 7.1",
        kind="reproduction",
        statistic="Ours - FT over the four pre-training sets of Table 7.1, against the text's "
        "'about 0.7% - 1%' (with 0.05 of rounding on either side)",
        rule=Close(0.85, 0.2),
        could_fail="a gain outside [0.65, 1.05]",
    ),
    Claim(
        id="table-f5-equals-7-1",
        source="Table F.5 vs Table 7.1",
        kind="reproduction",
        statistic="the 100 %-label column of Table F.5 minus Table 7.1, all 12 entries, exact "
        "decimals",
        rule=Exact(0),
        could_fail="two tables of the same runs that disagree (or a transcription slip)",
    ),
    Claim(
        id="table-f5-ours-beats-ft",
        source="Appendix F.3.4 (Table F.5: Ours 'outperforms the typical fine-tuning method "
        "consistently')",
        kind="reproduction",
        statistic="per cell of Table F.5 (pre-training set, label fraction), Ours minus FT, "
        "from the printed means and standard deviations over six evaluations (Welch's interval, "
        "which needs only those)",
        rule=Every(DifferenceAbove(0.0)),
        could_fail="a cell where FT is above Ours beyond its interval contradicts 'consistently'",
        decides="more evaluations than the source's six (not rerun here)",
    ),
    Claim(
        id="main-text-drops-sqrt-r",
        source="Section 7.2.2",
        kind="erratum",
        statistic="the limit as r -> oo of F.8's leading term over the main text's "
        "L sqrt(T/m) ||u|| (sympy); the rule is the main text's statement that the mixture's "
        "error is O(L sqrt(T/m) ||u||), i.e. a finite limit",
        rule=AtMost(math.inf, strict=True),
        could_fail="an infinite limit (differs) confirms the erratum: the factor sqrt(r) is "
        "missing",
    ),
)


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
        claims=CLAIMS,
    )
)
