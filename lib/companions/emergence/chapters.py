"""The chapters of the part "Feature emergence from inputs" and their parameters (see each
notebook)."""

from __future__ import annotations

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
    MeanBelow,
    MeanWithin,
)
from companions.scale import Chapter, Choice, Float, Int, ListOf, nearest_int, register_chapter

#: The date of the move to registered claims (issue 40): rules used before it and changed since.
AMENDED = "2026-12-05"
_AT_SOURCE_SIZE = "the source's d = 500, D = 100, m = 300, n = 50,000 (scale 'paper')"

# -------------------------------------------------------------------------------------------------
# emergence-target
# -------------------------------------------------------------------------------------------------
_EXHAUSTIVE = (
    "exact rationals, every k <= k_max, every P subset of [k], mu on the grid {0, 1/q, ..., k}, "
    "every S in {0, ..., k}"
)
TARGET_CLAIMS = (
    Claim(
        id="lemma-2-5-misfit",
        source="Lemma 2.5",
        kind="identity",
        statistic=f"cases where the network g* (truncated ReLU) misses the label, {_EXHAUSTIVE}",
        rule=Exact(0),
        could_fail="a wrong bump height, sign or shift in the construction (A.7), (A.11) leaves a "
        "label unfitted at some S",
    ),
    Claim(
        id="lemma-2-5-b-bound",
        source="Lemma 2.5",
        kind="identity",
        statistic=f"cases with a bias |b*| outside [1/(32k), 1/2], {_EXHAUSTIVE}",
        rule=Exact(0),
        could_fail="keeping g1* where a bias is within 1/8 of 0 (the choice of candidate) gives "
        "|b*| < 1/(32k)",
    ),
    Claim(
        id="lemma-2-5-pre-bound",
        source="Lemma 2.5",
        kind="identity",
        statistic=f"cases with a pre-activation |<w*, x> + b*| > 1, {_EXHAUSTIVE}",
        rule=Exact(0),
        could_fail="a missing rescaling by 4k (A.15)-(A.16) puts pre-activations outside [-1, 1], "
        "where the truncated ReLU differs from the ReLU",
    ),
    Claim(
        id="lemma-a29-margin-on-good-points",
        source="Lemma A.29 (proof, (A.309)-(A.316))",
        kind="bound",
        statistic="the least margin y g*(x) of the proof's network over noisy points whose shift "
        "|eps_x| is at most 1/8, at each of three noise levels, float64",
        rule=AtLeast(1 - 1e-9),
        could_fail="bumps of Lemma 2.5's heights (2 and 4) in place of the proof's doubled ones "
        "leave margins below 1 for shifts up to 1/8",
    ),
    Claim(
        id="lemma-a29-rate-below-bound",
        source="Lemma A.29 (proof, (A.307)), mu = 0",
        kind="prediction",
        statistic="the fraction of noisy points with y g* < 1 minus the proof's bound "
        "2(1 - Phi(1/(8 sqrt(k) sigma_zeta))), with Agresti and Coull's binomial standard error, "
        "at sqrt(k) sigma_zeta = 1/32, 1/16, 1/8",
        rule=Every(MeanBelow(0.0)),
        could_fail="noise of the wrong size, or a network whose margin fails for small shifts, "
        "puts the fraction above the bound",
        decides="more points n per noise level; at 1/32 the bound is about 6e-5, so n must be "
        "several times 1/6e-5 before a fraction below it can be told from it",
        amended=(
            Amendment(
                AMENDED,
                previous="the same rule on the plain binomial standard error sqrt(p(1 - p)/n)",
                reason="that error is 0 when no point falls below margin 1: the default run "
                "(n = 20,000, none below at 1/32) was decided 'reproduced' with certainty, and "
                "the paper run (n = 50,000) saw the fraction close to the bound. The error no "
                "longer vanishes on an unseen event, and the default run can no longer decide "
                "the 1/32 level",
            ),
        ),
    ),
)

# -------------------------------------------------------------------------------------------------
# emergence-first-steps
# -------------------------------------------------------------------------------------------------
_ORACLE = "exact population (enumerated support, D = oracle_D, k = oracle_k), float64"
_SEEDS = "over the seeds (fresh sample, dictionary and initialisation each)"
FIRST_STEPS_CLAIMS = (
    Claim(
        id="lemma-a8-identities",
        source="Lemma A.8 (A.29)-(A.32)",
        kind="identity",
        statistic=f"E y, E|y| - 1, max_j |E|phi_j| - 2 sigma_phi^2 sigma~| over the background, "
        f"max_j |E y phi_j - gamma/sigma~| over A; {_ORACLE}",
        rule=Close(0.0, 1e-14),
        could_fail="a wrong mixture (background marginal, relevant marginals, normalisation) moves "
        "a moment away from its closed form",
    ),
    Claim(
        id="lemma-a8-abs-y-phi",
        source="Lemma A.8 (A.33)",
        kind="bound",
        statistic=f"max over j of E|y phi_j| minus 1/sigma~; {_ORACLE}",
        rule=AtMost(1e-14),
        could_fail="a normalisation by another sigma~ than (Section 2.3.1)'s breaks the bound",
    ),
    Claim(
        id="a9-signal-dominates",
        source="this book (cf. Lemma 2.6)",
        kind="prediction",
        statistic="the largest ratio over the initial neurons of the first gradient's energy off A "
        f"to its energy on A, sum_(j not in A) T_j^2 / sum_(j in A) T_j^2; {_ORACLE}",
        rule=AtMost(1.0, strict=True),
        could_fail="if the first gradient did not single out the relevant patterns, some neuron "
        "would carry more energy on the background than on A",
    ),
    Claim(
        id="a14-T2-closed-form-beta",
        source="this book (Lemma A.14's form)",
        kind="prediction",
        statistic="the largest |T_j^(2) / (beta^(2) gamma/sigma~) - 1| over neurons and j in A, "
        f"with beta^(2) = Phi((1 - b0)/s) - Phi(-b0/s); {_ORACLE}",
        rule=AtMost(1e-2),
        could_fail="if the noise did not decide activation after step 1 (Lemma A.14's "
        "mechanism), beta^(2) would depend on the data and the gap would exceed 1 %",
    ),
    Claim(
        id="a14-second-step-cleans-background",
        source="this book (Lemma A.14's form)",
        kind="prediction",
        statistic="the largest background-to-signal energy of the second gradient minus the "
        f"smallest of the first; {_ORACLE}",
        rule=AtMost(0.0, strict=True),
        could_fail="if step 2 did not improve the features, its background energy would not fall "
        "below step 1's",
    ),
    Claim(
        id="step1-sign-follows-a0",
        source="this book (cf. Lemma 2.6, Figure 2.2)",
        kind="prediction",
        statistic="the least fraction, over the seeds, of neurons whose step-1 cosine with "
        "v = sum_A M_j has the sign of a_i^(0)",
        rule=AtLeast(1.0),
        could_fail="a sign error in the gradient (A.19) or in the update turns neurons against "
        "their a_i^(0)",
    ),
    Claim(
        id="step1-alignment",
        source="Figure 2.2 (cf. Lemma 2.6)",
        kind="prediction",
        statistic=f"the median |cos(w_i^(1), v)| {_SEEDS}",
        rule=MeanAbove(0.9),
        could_fail="a first step that does not forget the initialisation, or a gradient without "
        "the signal E[y x], leaves the neurons at random directions (cos ~ sqrt(k/d))",
        decides="more seeds",
    ),
    Claim(
        id="a13-hinge-still-active",
        source="this book (cf. Lemma A.13)",
        kind="prediction",
        statistic=f"the fraction of training points with y g^(1)(x; sigma_xi^(2)) < 1 {_SEEDS}",
        rule=MeanAbove(0.99),
        could_fail="a first step as large as the later ones fits the data and switches the hinge "
        "off on most points",
        decides="more seeds",
    ),
    Claim(
        id="a9-sample-T-slope",
        source="this book (cf. Lemma 2.6)",
        kind="prediction",
        statistic="the least-squares slope of mean_(j in A) T_ij / (gamma/sigma~) on beta_i, "
        "estimated on the training sample, " + _SEEDS,
        rule=MeanWithin(1.0, 0.1),
        could_fail="if T_j on A were not beta gamma/sigma~, the slope would leave 1 +- 0.1",
        decides="more seeds",
    ),
    Claim(
        id="linear-ceiling-exact",
        source="this book (the best linear classifier on D_A^mix)",
        kind="identity",
        statistic="for k = 3 and 5 at p_o = 1/2: acc_lin(k, p_o) minus the best halfspace on z_A "
        "(exhaustive enumeration), and minus the accuracy of ceiling_weights(k), exact rationals",
        rule=Every(Exact(0)),
        could_fail="a wrong closed form, or a halfspace better than (2, ..., 2, -1) or majority, "
        "leaves a nonzero difference",
    ),
    Claim(
        id="one-step-standardised-at-ceiling",
        source="this book (One Step, Table A.1)",
        kind="prediction",
        statistic=f"the standardised One-Step probe's test accuracy minus acc_lin(k, p_o) {_SEEDS} "
        "(the one-step features are affine in x on the data)",
        rule=MeanWithin(0.0, 0.0205),
        could_fail="if the one-step features were not affine, a linear classifier on them could "
        "beat acc_lin; a probe that does not find the best linear classifier stays below it",
        decides="more seeds",
        amended=(
            Amendment(
                AMENDED,
                previous="within 4 binomial standard errors of acc_lin on n_test test points "
                "(0.0205 at the default n_test = 5000, 0.0324 at the smoke one)",
                reason="a registered rule has fixed numbers: the margin is fixed at its "
                "default-scale value",
            ),
        ),
    ),
    Claim(
        id="two-step-separates",
        source="Table A.1 (Two Step)",
        kind="prediction",
        statistic=f"the standardised Two-Step probe's test accuracy {_SEEDS}",
        rule=MeanAbove(0.99),
        could_fail="if step 2 did not improve the features, a linear classifier on them would "
        "stay at the linear ceiling acc_lin",
        decides="more seeds",
    ),
    Claim(
        id="one-step-test-paper",
        source="Table A.1 (One Step, test)",
        kind="reproduction",
        statistic=f"the standardised One-Step probe's test accuracy {_SEEDS}; the best linear "
        "classifier on features affine in x does not depend on d, D, m or n",
        rule=MeanWithin(0.522, 0.02),
        could_fail="a One-Step probe near the source's 52.2 % would agree; the linear ceiling "
        "27/32 at every size would not",
        decides="more seeds",
        amended=(
            Amendment(
                AMENDED,
                previous="the same band, decided only at " + _AT_SOURCE_SIZE + ", inconclusive "
                "elsewhere",
                reason="the statistic does not depend on the size: the one-step features are "
                "affine in x and the best linear classifier on D_A^mix is at acc_lin whatever "
                "d, D, m, n (issue 40)",
            ),
        ),
    ),
    Claim(
        id="one-step-test-paper-raw-reading",
        source="Table A.1 (One Step, test; raw reading)",
        kind="reproduction",
        statistic="the raw One-Step probe's test accuracy (Adam on the raw features) " + _SEEDS,
        rule=MeanWithin(0.522, 0.01),
        could_fail="a raw probe that resolves the features reaches the linear ceiling, far from "
        "52.2 %",
        decides=_AT_SOURCE_SIZE + ": the raw reading depends on m through eta^(1)",
    ),
    Claim(
        id="one-step-train-paper-raw-reading",
        source="Table A.1 (One Step, train; raw reading)",
        kind="reproduction",
        statistic="the raw One-Step probe's training accuracy " + _SEEDS,
        rule=MeanWithin(0.513, 0.01),
        could_fail="a constant predictor scores exactly 0.5 on a balanced training set, not 0.513",
        decides=_AT_SOURCE_SIZE + ": the raw reading depends on m through eta^(1)",
    ),
    Claim(
        id="one-step-cos-paper",
        source="Table A.1 (One Step, Cos Similarity)",
        kind="reproduction",
        statistic="max_i |cos(w_i^(1), v)| after step 1 " + _SEEDS + "; w^(1) lies in span(M), "
        "so it does not depend on d, and it rises with n/D",
        rule=MeanWithin(0.848, 0.02),
        could_fail="an incompletely forgotten initialisation would lower the cosine towards the "
        "source's 0.848; the exact forgetting of (A.214) keeps it near 1 at any d",
        decides="more seeds",
        amended=(
            Amendment(
                AMENDED,
                previous="the same band, decided only at " + _AT_SOURCE_SIZE + ", inconclusive "
                "elsewhere",
                reason="the statistic does not depend on d (w^(1) lies in span(M)) and grows with "
                "n/D, which is larger at the source's size than here, so a cosine above the band "
                "here stays above it there (issue 40)",
            ),
        ),
    ),
    Claim(
        id="two-step-cos-paper",
        source="Table A.1 (Two Step, Cos Similarity)",
        kind="reproduction",
        statistic="max_i |cos(w_i^(2), v)| after step 2 " + _SEEDS,
        rule=MeanWithin(0.997, 0.005),
        could_fail="a second step that does not clean the background leaves the cosine below 0.992",
        decides=_AT_SOURCE_SIZE,
    ),
    Claim(
        id="other-schedule-same-picture",
        source="(A.274) vs (A.214)",
        kind="prediction",
        statistic="under the other first-step schedule: the median |cos| after step 2 minus 0.9, "
        "and the standardised Two-Step probe minus 0.99, " + _SEEDS,
        rule=Every(MeanAbove(0.0)),
        could_fail="if the features depended on which schedule the source meant, one of the two "
        "would fall below its threshold",
        decides="more seeds",
    ),
)

TARGET = register_chapter(
    Chapter(
        id="emergence-target",
        title="A network that represents the target (Lemma 2.5)",
        notebook="book/emergence/target-network.md",
        params={
            "k_max": Int(1, 9, doc="largest k of the exhaustive exact check of Lemma 2.5"),
            "mu_denominator": Int(
                1, 64, doc="mu runs over {0, 1/q, ..., k} with q = mu_denominator"
            ),
            "d": Int(2, 100_000, doc="input dimension of the float64 spot check"),
            "D": Int(2, 100_000, doc="number of dictionary patterns"),
            "k": Int(1, 1000, doc="number of class-relevant patterns of the float64 spot check"),
            "n": Int(1, 10_000_000, doc="sampled points of the float64 spot check"),
        },
        presets={
            "smoke": dict(k_max=5, mu_denominator=4, d=64, D=32, k=5, n=4000),
            "default": dict(k_max=7, mu_denominator=7, d=100, D=50, k=5, n=20000),
            "paper": dict(k_max=8, mu_denominator=7, d=500, D=100, k=5, n=50000),
        },
        claims=TARGET_CLAIMS,
        checks=(
            lambda p: (
                None
                if p["k"] <= p["D"] <= p["d"]
                else (
                    f"parameters 'k' = {p['k']}, 'D' = {p['D']}, "
                    f"'d' = {p['d']} are not allowed: need k <= D <= d"
                )
            ),
        ),
    )
)


# -------------------------------------------------------------------------------------------------
# emergence-fixed-features
# -------------------------------------------------------------------------------------------------
_FIXED_SEEDS = "over the seeds (fresh D_A^mix, initialisation and minibatches each)"
FIXED_CLAIMS = (
    Claim(
        id="parseval-exact",
        source="Theorem A.23 (proof)",
        kind="identity",
        statistic="features whose sum of squared Walsh coefficients differs from E Psi_i^2, "
        "integer features on the cube {+-1}^walsh_D, exact integers",
        rule=Exact(0),
        could_fail="a wrong Walsh-Hadamard transform or normalisation breaks Parseval for some "
        "feature",
    ),
    Claim(
        id="thm21-rate-algebra",
        source="Theorem 2.1 (proof, (A.281)-(A.282))",
        kind="identity",
        statistic="with eta = k^2/(T m^(1/3)) substituted in (A.281): its three terms minus "
        "(A.282)'s, its two other terms over k^8/m^(2/3) minus (m/k^3)^(-1/3) and 1/k (at most 1 "
        "when m >= k^3), and the width solving k^8/m^(2/3) = epsilon minus k^12/epsilon^(3/2) "
        "(sympy)",
        rule=Exact(0),
        could_fail="an exponent of (A.282) or of the width that does not follow from (A.281) "
        "leaves a nonzero residual",
    ),
    Claim(
        id="network-learns",
        source="Table A.1 (Network)",
        kind="prediction",
        statistic="the test accuracy of the network (Adam after the forgetful steps) "
        + _FIXED_SEEDS,
        rule=MeanAbove(0.99),
        could_fail="features that do not emerge in the first two steps leave the network near the "
        "linear level 0.84",
        decides="more seeds",
    ),
    Claim(
        id="fixed-features-fall-short",
        source="Table A.1 (Network vs RF, NTK)",
        kind="prediction",
        statistic="the network's test accuracy minus the best of random features, the NTK and "
        f"the RBF kernel, {_FIXED_SEEDS}",
        rule=MeanAbove(0.10),
        could_fail="a fixed-feature method within 10 points of the network on D_A^mix",
        decides="more seeds",
    ),
    Claim(
        id="fixed-features-below-linear-on-uniform-part",
        source="this book (cf. Theorem A.23)",
        kind="prediction",
        statistic="the best test accuracy of random features, the NTK and the RBF kernel on the "
        "uniform part D^(0), minus the best linear rule's agreement with the parity there "
        f"(2 acc_lin - 1, 0.6875 at k = 5), {_FIXED_SEEDS}",
        rule=MeanBelow(0.0),
        could_fail="a fixed-feature method that learns the parity on the uniform part beyond "
        "what a halfspace in z_A gets",
        decides="more seeds",
    ),
    Claim(
        id="theory-rate-below-ceiling",
        source="this book (rate (A.276) at this width)",
        kind="prediction",
        statistic="the network's test accuracy with SGD at eta = k^2/(T m^(1/3)), lambda = 0, "
        f"minus acc_lin, {_FIXED_SEEDS}",
        rule=MeanBelow(0.0),
        could_fail="a late-stage rate large enough at this width to learn the parity would put "
        "the network above the linear level",
        decides="more seeds",
    ),
    Claim(
        id="corollary-2-3-kernels",
        source="Corollary 2.3 (this book's explicit form)",
        kind="prediction",
        statistic="for the RBF and the Laplace kernel predictors: the hinge loss on test points "
        "of D_A^mix minus p_o (1 - ||f||_H sqrt(c_k)), with its standard error over the test "
        "points (first seed)",
        rule=Every(MeanAbove(0.0)),
        could_fail="a kernel predictor that fits the parity on the uniform part (a data-dependent "
        "kernel, a wrong RKHS norm or Walsh coefficient c_k) falls below the bound",
        decides="more test points",
    ),
    Claim(
        id="mixture-covariance-formula",
        source="this book (Section A.5's mixture)",
        kind="identity",
        statistic="the covariance of two background coordinates of D_A^mix at p_o = 1/4, by "
        "enumeration of its support (D = 8, k = 3), against p_o (2 p_o - 1)^2 / (4 (1 - p_o)) = "
        "1/48",
        rule=Close(1 / 48, 1e-15),
        could_fail="a wrong mixture or a wrong closed form gives another covariance",
    ),
    Claim(
        id="mixture-in-F-Xi",
        source="Section A.5 ('such distributions are included in F_Xi')",
        kind="erratum",
        statistic="the covariance of two background coordinates of D_A^mix at p_o = 1/4 (by "
        "enumeration); the rule is the source's statement: (A2) makes them independent",
        rule=Close(0.0, 1e-12),
        could_fail="a nonzero covariance (differs) confirms the erratum: (A2) holds only at "
        "p_o = 1/2",
    ),
    Claim(
        id="a262-missing-factor-t",
        source="Lemma A.18 (proof, (A.262))",
        kind="erratum",
        statistic="the largest ratio, over the later steps t and the neurons, of "
        "||w_i^(t) - w_i^(2)|| to (A.262)'s right side 2 eta lambda ||w_i^(2)|| + eta^2 t^2 + "
        "t |a_i^(2)|, with eta = k^2/(T m^(1/3)) and lambda = 1/2 (both in (0, 1), as Lemma A.18 "
        "assumes); the rule is the source's statement",
        rule=AtMost(1.0),
        could_fail="a ratio above 1 (differs) confirms the erratum: summing (A.261) gives "
        "2 t eta lambda ||w_i^(2)||, and weight decay alone moves w by about that much",
        amended=(
            Amendment(
                AMENDED,
                previous="lemma-a18-drift-sums: the summed bounds of (A.253), (A.261), (A.267), "
                "<= 1 at lambda = k^3/(sigma~ m^(1/3)) = 7.6 (a bound credited to Lemma A.18)",
                reason="Lemma A.18 assumes lambda, eta in (0, 1), and the summed per-step bounds "
                "are the triangle inequality (their worst ratio is at the first step): shown as a "
                "derivation; the claim is now the erratum in (A.262) (issue 40)",
            ),
        ),
    ),
)

# -------------------------------------------------------------------------------------------------
# emergence-no-structure
# -------------------------------------------------------------------------------------------------
_TWIN_SEEDS = "over the seeds (fresh D_A^mix and its structure-free twin each)"
STRUCTURE_CLAIMS = (
    Claim(
        id="g-A-literal",
        source="Theorem A.27 (proof: the definition of g_A)",
        kind="erratum",
        statistic="distinct concepts g_A over all sets |A| = sq_k of sq_D patterns, with the sum "
        "over all j as printed, minus the number of sets; the rule is the source's statement "
        "(the class has one concept per set)",
        rule=Exact(0),
        could_fail="a single concept for all A (differs) confirms that the printed g_A is missing "
        "'j in A'",
    ),
    Claim(
        id="no-structure-no-emergence",
        source="this book (cf. Lemma 2.6)",
        kind="prediction",
        statistic=f"the median |cos(w_i^(1), sum_A M_j)| after step 1 without structure, "
        f"{_TWIN_SEEDS}",
        rule=MeanBelow(0.5),
        could_fail="a first gradient that still finds sum_A M_j without structure (E[y x] != 0)",
        decides="more seeds",
    ),
    Claim(
        id="structure-vs-none-alignment",
        source="this book (Section 2.5.2's remark: the gradient follows E[y x])",
        kind="prediction",
        statistic="the median |cos(w_i^(1), sum_A M_j)| after step 1 with structure minus "
        f"without, the same initialisation, paired {_TWIN_SEEDS}",
        rule=DifferenceAbove(0.4, paired=True),
        could_fail="if the first step did not use the input structure, it would align the "
        "neurons as well (or as badly) without it",
        decides="more seeds",
    ),
    Claim(
        id="structure-vs-none-accuracy",
        source="Figure 2.1 / Table A.1 (Network vs Network w/o structure)",
        kind="prediction",
        statistic="the network's test accuracy with structure minus without, the same algorithm, "
        f"A, M and labels, paired {_TWIN_SEEDS}",
        rule=DifferenceAbove(0.25, paired=True),
        could_fail="a network that learns the parity without structure (at least half-way, "
        "50 + 25 %) or fails with it",
        decides="more seeds",
    ),
    Claim(
        id="no-structure-at-chance",
        source="Figure 2.1 / Table A.1 (w/o structure)",
        kind="prediction",
        statistic=f"the test accuracy of the network, random features and the NTK without "
        f"structure, {_TWIN_SEEDS}",
        rule=Every(MeanWithin(0.5, 0.0283)),
        could_fail="a method above chance without structure, by more than 4 binomial standard "
        "errors of the default test set (0.0283)",
        decides="more seeds",
        amended=(
            Amendment(
                AMENDED,
                previous="three claims (chance-network, chance-rf, chance-ntk), each within "
                "4 * 0.5 / sqrt(n_test) of 1/2 (0.0283 at the default n_test = 5000, 0.0447 at "
                "the smoke one)",
                reason="one claim over the three methods; a registered rule has fixed numbers: "
                "the margin is fixed at its default-scale value",
            ),
        ),
    ),
)

# -------------------------------------------------------------------------------------------------
# emergence-experiments
# -------------------------------------------------------------------------------------------------
_TABLE_METHODS = "Network, NTK, RF, Two Step (standardised) and Network w/o structure"


def _table_claim(table: str, what: str) -> Claim:
    return Claim(
        id=f"table-{table.lower().replace('.', '')}",
        source=f"Table {table}",
        kind="reproduction",
        statistic=f"per {what} and method ({_TABLE_METHODS}): our test accuracy minus the "
        "source's, in points, over the seeds",
        rule=Every(MeanWithin(0.0, 3.0)),
        could_fail="a method more than 3 points from the source's number at the source's sizes",
        decides="the source's sizes (scale 'paper', 5 seeds; a GPU)",
        amended=(
            Amendment(
                AMENDED,
                previous="one claim per configuration and method (48 in all, One Step "
                "included), the same 3-point band, inconclusive below the source's sizes",
                reason="one reproduction per table; the One-Step rows are decided at any size "
                "(one-step-test-vs-source) (issue 40)",
            ),
        ),
    )


EXPERIMENTS_CLAIMS = (
    _table_claim("A.1", "configuration"),
    _table_claim("A.2", "configuration"),
    _table_claim("A.3", "input dimension d"),
    _table_claim("A.4", "negative-class fraction"),
    _table_claim("A.5", "sample size n"),
    Claim(
        id="one-step-test-vs-source",
        source="Tables A.1-A.5 (One Step, test)",
        kind="reproduction",
        statistic="per configuration: the standardised One-Step probe's test accuracy minus the "
        "source's, in points, over the seeds; the best linear classifier on features affine in x "
        "does not depend on d, D, m or n",
        rule=Every(MeanWithin(0.0, 3.0)),
        could_fail="One-Step features that carry no more than a constant predictor would agree "
        "with the source's near-chance numbers",
        decides="more seeds",
        amended=(
            Amendment(
                AMENDED,
                previous="the same 3-point band per configuration, decided only at the source's "
                "sizes, inconclusive elsewhere",
                reason="the statistic does not depend on the size: the one-step features are "
                "affine in x, and the best linear classifier reaches the same level at any "
                "d, D, m, n (issue 40)",
            ),
        ),
    ),
    Claim(
        id="network-beats-fixed-features",
        source="Tables A.1, A.3, A.5 (Network vs RF, NTK)",
        kind="prediction",
        statistic="per balanced parity configuration: the network's test accuracy minus the "
        "better of RF and NTK, over the seeds",
        rule=Every(MeanAbove(0.10)),
        could_fail="a fixed-feature method within 10 points of the network (the source's gaps "
        "are 13.6 to 25 points) in some configuration",
        decides="more seeds",
        amended=(
            Amendment(
                AMENDED,
                previous=Every(MeanAbove(0.0)),
                reason="a margin fixed in advance in place of the sign of a difference (0.10, "
                "below the source's smallest gap, 13.6 points); the unbalanced Table A.4, "
                "where the majority rate caps the gap, is left out; 5 seeds at default, not 2 "
                "(with 2 the earlier rule was inconclusive, least table 0.0187 +- 0.0240)",
            ),
        ),
    ),
    Claim(
        id="structure-beats-none",
        source="Tables A.1, A.3, A.5 (Network vs Network w/o structure)",
        kind="prediction",
        statistic="per balanced parity configuration: the network's test accuracy with "
        "structure minus without, over the seeds",
        rule=Every(MeanAbove(0.25)),
        could_fail="a network that learns the parity without structure at least half-way "
        "(the source's gaps are 47.5 to 49.8 points)",
        decides="more seeds",
    ),
    Claim(
        id="two-step-separates-everywhere",
        source="Tables A.1-A.5 (Two Step)",
        kind="prediction",
        statistic="per configuration: the standardised Two-Step probe's test accuracy, over the "
        "seeds",
        rule=Every(MeanAbove(0.97)),
        could_fail="two-step features that do not separate the classes in some configuration",
        decides="more seeds",
        amended=(
            Amendment(
                AMENDED,
                previous="the same rule, 2 seeds at default",
                reason="5 seeds at default, not 2 (with 2 it was inconclusive, least table "
                "0.9953 +- 0.0030)",
            ),
        ),
    ),
    Claim(
        id="interval-ntk-succeeds",
        source="Table A.2 (NTK)",
        kind="prediction",
        statistic="the NTK's test accuracy on the interval labeling, over the seeds",
        rule=MeanAbove(0.95),
        could_fail="if fixed features failed on every label, not only on parities, the NTK "
        "would stay low here too",
        decides="more seeds",
    ),
    Claim(
        id="interval-weighting-helps",
        source="Section A.8 (A.293) on Table A.2",
        kind="prediction",
        statistic="the network's test accuracy on the interval labeling with the class-weighted "
        "first steps (A.293) minus with the plain ones, the same data and init, over the seeds",
        rule=MeanAbove(0.10),
        could_fail="if the plain first steps did not leave a constant predictor of the majority "
        "class, the weighting would gain little",
        decides="more seeds",
        amended=(
            Amendment(
                AMENDED,
                previous=MeanAbove(0.0),
                reason="a margin fixed in advance in place of the sign of a difference",
            ),
        ),
    ),
)


def _check_first_steps(p):
    if not p["k"] <= p["D"] <= p["d"]:
        return (
            f"parameters 'k' = {p['k']}, 'D' = {p['D']}, "
            f"'d' = {p['d']} are not allowed: need k <= D <= d"
        )
    if p["k"] % 2 == 0 or p["oracle_k"] % 2 == 0:
        return (
            f"parameters 'k' = {p['k']} and 'oracle_k' = {p['oracle_k']} "
            "must be odd (parity labels of D_A^mix)"
        )
    if not p["oracle_k"] < p["oracle_D"]:
        return (
            f"parameter 'oracle_D' = {p['oracle_D']} must exceed "
            f"oracle_k = {p['oracle_k']} (background patterns)"
        )
    return None


FIRST_STEPS = register_chapter(
    Chapter(
        id="emergence-first-steps",
        title="Feature emergence in the first steps (Lemma 2.6, Lemmas A.9-A.17)",
        notebook="book/emergence/first-steps.md",
        params={
            "d": Int(2, 100_000, doc="input dimension"),
            "D": Int(2, 100_000, doc="number of dictionary patterns"),
            "k": Int(1, 99, doc="number of class-relevant patterns (odd: parity labels)"),
            "p_o": Float(
                0.0,
                0.5,
                low_open=True,
                doc="background pattern probability (weight of the uniform part)",
            ),
            "m": Int(1, 100_000, doc="half the width: the network has 2m neurons"),
            "n": Int(10, 10_000_000, doc="training sample (the batch of the first two steps)"),
            "n_test": Int(10, 10_000_000, doc="test sample"),
            "schedule": Choice(
                ("A.214", "A.274"),
                doc="first-step schedule: Lemma A.17 (A.214) or Theorem A.20 (A.274)",
            ),
            "probe_steps": Int(1, 1_000_000, doc="Adam steps of the raw-feature probe"),
            "oracle_D": Int(2, 16, doc="D of the exact population (enumerated support)"),
            "oracle_k": Int(1, 15, doc="k of the exact population"),
            "oracle_m": Int(1, 1000, doc="m of the exact population run"),
            "seeds": Int(2, 100, doc="independent samples and initialisations of the two steps"),
        },
        presets={
            "smoke": dict(
                d=64,
                D=32,
                k=5,
                p_o=0.5,
                m=64,
                n=5000,
                n_test=2000,
                schedule="A.214",
                probe_steps=100,
                oracle_D=10,
                oracle_k=3,
                oracle_m=8,
                seeds=2,
            ),
            "default": dict(
                d=100,
                D=50,
                k=5,
                p_o=0.5,
                m=100,
                n=10000,
                n_test=5000,
                schedule="A.214",
                probe_steps=300,
                oracle_D=14,
                oracle_k=5,
                oracle_m=16,
                seeds=3,
            ),
            "paper": dict(
                d=500,
                D=100,
                k=5,
                p_o=0.5,
                m=300,
                n=50000,
                n_test=10000,
                schedule="A.214",
                probe_steps=600,
                oracle_D=16,
                oracle_k=5,
                oracle_m=32,
                seeds=5,
            ),
        },
        checks=(_check_first_steps,),
        claims=FIRST_STEPS_CLAIMS,
    )
)


def _check_fixed(p):
    if not p["k"] <= p["D"] <= p["d"]:
        return (
            f"parameters 'k' = {p['k']}, 'D' = {p['D']}, "
            f"'d' = {p['d']} are not allowed: need k <= D <= d"
        )
    if p["k"] % 2 == 0 or any(v % 2 == 0 for v in p["bound_k_values"]):
        return (
            "parameters 'k' and 'bound_k_values' must be odd (parity labels); "
            f"got {p['k']}, {list(p['bound_k_values'])}"
        )
    if not p["walsh_k"] <= p["walsh_D"]:
        return f"parameter 'walsh_k' = {p['walsh_k']} must be at most walsh_D = {p['walsh_D']}"
    if p["kernel_n"] > p["n"]:
        return f"parameter 'kernel_n' = {p['kernel_n']} must be at most n = {p['n']}"
    return None


def _snap_fixed(v: dict, t: float) -> dict:
    """Between the presets (``companions.scale.between``): every ``k`` odd (parity labels)."""
    v["k"] = nearest_int(v["k"], lambda n: n % 2 == 1)
    v["bound_k_values"] = list(
        dict.fromkeys(nearest_int(n, lambda n: n % 2 == 1) for n in v["bound_k_values"])
    )
    return v


FIXED = register_chapter(
    Chapter(
        id="emergence-fixed-features",
        title="Fixed features cannot learn it (Theorem 2.2, Corollary 2.3)",
        notebook="book/emergence/fixed-features.md",
        params={
            "d": Int(2, 100_000, doc="input dimension of the comparison"),
            "D": Int(2, 100_000, doc="number of dictionary patterns"),
            "k": Int(1, 99, doc="relevant patterns (odd)"),
            "m": Int(1, 100_000, doc="half the width (2m neurons, N = 2m random features)"),
            "n": Int(10, 10_000_000, doc="training sample"),
            "n_test": Int(10, 10_000_000, doc="test sample"),
            "steps": Int(
                1, 1_000_000, doc="steps after the first two (network), and steps of RF / NTK"
            ),
            "batch": Int(1, 1_000_000, doc="minibatch of the later steps"),
            "kernel_n": Int(10, 100_000, doc="training points of the kernel method"),
            "walsh_D": Int(2, 16, doc="cube dimension of the exact Fourier check"),
            "walsh_k": Int(1, 16, doc="parity degree of the exact Fourier check"),
            "walsh_N": Int(1, 4096, doc="number of features of the exact Fourier check"),
            "bound_k_values": ListOf(
                Int(1, 31), min_len=1, doc="k of the norm-constrained RF check (D = d = 16k)"
            ),
            "bound_B": Float(
                0.0, 1e6, low_open=True, doc="norm bound B of the constrained RF heads"
            ),
            "seeds": Int(2, 100, doc="independent runs of the comparison (data, init, training)"),
        },
        presets={
            "smoke": dict(
                d=64,
                D=32,
                k=5,
                m=64,
                n=6000,
                n_test=2000,
                steps=400,
                batch=1000,
                kernel_n=1500,
                walsh_D=10,
                walsh_k=3,
                walsh_N=8,
                bound_k_values=[5],
                bound_B=1.0,
                seeds=2,
            ),
            "default": dict(
                d=100,
                D=50,
                k=5,
                m=100,
                n=10000,
                n_test=5000,
                steps=600,
                batch=1000,
                kernel_n=3000,
                walsh_D=12,
                walsh_k=3,
                walsh_N=16,
                bound_k_values=[3, 5, 7],
                bound_B=1.0,
                seeds=3,
            ),
            "paper": dict(
                d=500,
                D=100,
                k=5,
                m=300,
                n=50000,
                n_test=10000,
                steps=600,
                batch=1000,
                kernel_n=10000,
                walsh_D=14,
                walsh_k=5,
                walsh_N=32,
                bound_k_values=[3, 5, 7, 9],
                bound_B=1.0,
                seeds=5,
            ),
        },
        checks=(_check_fixed,),
        snap=_snap_fixed,
        claims=FIXED_CLAIMS,
    )
)


def _check_structure(p):
    if not p["k"] <= p["D"] <= p["d"]:
        return (
            f"parameters 'k' = {p['k']}, 'D' = {p['D']}, "
            f"'d' = {p['d']} are not allowed: need k <= D <= d"
        )
    if p["k"] % 2 == 0 or p["oracle_k"] % 2 == 0:
        return (
            f"parameters 'k' = {p['k']} and "
            f"'oracle_k' = {p['oracle_k']} must be odd (parity labels)"
        )
    if not p["sq_k"] <= p["sq_D"]:
        return f"parameter 'sq_k' = {p['sq_k']} must be at most sq_D = {p['sq_D']}"
    if not p["oracle_k"] < p["oracle_D"]:
        return f"parameter 'oracle_D' = {p['oracle_D']} must exceed oracle_k = {p['oracle_k']}"
    return None


STRUCTURE = register_chapter(
    Chapter(
        id="emergence-no-structure",
        title="Input structure is necessary (Theorem 2.4)",
        notebook="book/emergence/no-structure.md",
        params={
            "d": Int(2, 100_000, doc="input dimension"),
            "D": Int(2, 100_000, doc="number of dictionary patterns"),
            "k": Int(1, 99, doc="relevant patterns (odd)"),
            "m": Int(1, 100_000, doc="half the width"),
            "n": Int(10, 10_000_000, doc="training sample"),
            "n_test": Int(10, 10_000_000, doc="test sample"),
            "steps": Int(1, 1_000_000, doc="steps after the first two"),
            "batch": Int(1, 1_000_000, doc="minibatch of the later steps"),
            "sq_D": Int(2, 14, doc="D of the exact pairwise-uncorrelation check"),
            "sq_k": Int(1, 14, doc="k of the exact pairwise-uncorrelation check"),
            "oracle_D": Int(2, 16, doc="D of the exact population gradient"),
            "oracle_k": Int(1, 15, doc="k of the exact population gradient"),
            "seeds": Int(2, 100, doc="independent runs of the training comparison"),
        },
        presets={
            "smoke": dict(
                d=64,
                D=32,
                k=5,
                m=64,
                n=6000,
                n_test=2000,
                steps=400,
                batch=1000,
                sq_D=10,
                sq_k=3,
                oracle_D=10,
                oracle_k=3,
                seeds=2,
            ),
            "default": dict(
                d=100,
                D=50,
                k=5,
                m=100,
                n=10000,
                n_test=5000,
                steps=600,
                batch=1000,
                sq_D=12,
                sq_k=5,
                oracle_D=14,
                oracle_k=5,
                seeds=3,
            ),
            "paper": dict(
                d=500,
                D=100,
                k=5,
                m=300,
                n=50000,
                n_test=10000,
                steps=600,
                batch=1000,
                sq_D=14,
                sq_k=5,
                oracle_D=16,
                oracle_k=5,
                seeds=5,
            ),
        },
        checks=(_check_structure,),
        claims=STRUCTURE_CLAIMS,
    )
)


def _check_experiments(p):
    if not p["k"] <= p["D"] <= min(p["d"], *p["d_values"]):
        return (
            "parameters 'k', 'D', 'd', 'd_values' are not allowed: need k <= D <= every d "
            f"(got k={p['k']}, D={p['D']}, d={p['d']}, d_values={list(p['d_values'])})"
        )
    if p["k"] % 2 == 0:
        return f"parameter 'k' = {p['k']} must be odd (parity labels)"
    if not p["interval_k"] <= p["interval_D"] <= p["d"]:
        return (
            f"parameters 'interval_k' = {p['interval_k']}, "
            f"'interval_D' = {p['interval_D']} need interval_k <= interval_D <= d"
        )
    if len(p["n_values"]) != len(p["m_values"]):
        return (
            "parameters 'n_values' and 'm_values' must have the same "
            f"length (got {len(p['n_values'])} and {len(p['m_values'])})"
        )
    if any(not 0 < r < 1 for r in p["ratios"]):
        return f"parameter 'ratios' = {list(p['ratios'])} must lie in (0, 1)"
    return None


EXPERIMENTS = register_chapter(
    Chapter(
        id="emergence-experiments",
        title="The source's experiments (Tables A.1-A.5)",
        notebook="book/emergence/experiments.md",
        params={
            "d": Int(2, 100_000, doc="input dimension of Table A.1 (and A.4, A.5)"),
            "D": Int(2, 100_000, doc="dictionary size"),
            "k": Int(1, 99, doc="relevant patterns (odd, parity)"),
            "m": Int(1, 100_000, doc="half the width"),
            "n": Int(10, 10_000_000, doc="training sample"),
            "n_test": Int(10, 10_000_000, doc="test sample"),
            "steps": Int(1, 1_000_000, doc="steps T after the first two (and of RF / NTK)"),
            "batch": Int(1, 1_000_000, doc="minibatch of the later steps"),
            "probe_steps": Int(1, 1_000_000, doc="Adam steps of the raw One/Two-Step probes"),
            "seeds": Int(2, 100, doc="independent runs averaged (the source: 5)"),
            "interval_D": Int(2, 100_000, doc="D of the interval labeling (Table A.2)"),
            "interval_k": Int(1, 99, doc="k of the interval labeling; y = +1 iff S in [2k/3, k]"),
            "interval_m": Int(1, 100_000, doc="half the width for Table A.2"),
            "interval_steps": Int(1, 1_000_000, doc="T for Table A.2"),
            "d_values": ListOf(Int(2, 100_000), max_len=2, doc="input dimensions of Table A.3"),
            "ratios": ListOf(
                Float(0.0, 1.0, low_open=True, high_open=True),
                max_len=2,
                doc="negative-class fractions of Table A.4",
            ),
            "n_values": ListOf(Int(10, 10_000_000), max_len=2, doc="training sizes of Table A.5"),
            "m_values": ListOf(
                Int(1, 100_000),
                max_len=2,
                doc="half-widths for those sizes (the source shrinks m to 50 at n = 10,000)",
            ),
        },
        presets={
            "smoke": dict(
                d=48,
                D=24,
                k=5,
                m=32,
                n=3000,
                n_test=1000,
                steps=300,
                batch=1000,
                probe_steps=100,
                seeds=2,
                interval_D=24,
                interval_k=15,
                interval_m=16,
                interval_steps=100,
                d_values=[24, 96],
                ratios=[0.8],
                n_values=[1500],
                m_values=[8],
            ),
            "default": dict(
                d=100,
                D=50,
                k=5,
                m=100,
                n=10000,
                n_test=3000,
                steps=600,
                batch=1000,
                probe_steps=300,
                seeds=5,
                interval_D=50,
                interval_k=15,
                interval_m=50,
                interval_steps=200,
                d_values=[50, 200],
                ratios=[0.8, 0.9],
                n_values=[5000, 2000],
                m_values=[100, 17],
            ),
            "paper": dict(
                d=500,
                D=100,
                k=5,
                m=300,
                n=50000,
                n_test=10000,
                steps=600,
                batch=1000,
                probe_steps=600,
                seeds=5,
                interval_D=100,
                interval_k=30,
                interval_m=100,
                interval_steps=200,
                d_values=[100, 2000],
                ratios=[0.8, 0.9],
                n_values=[25000, 10000],
                m_values=[300, 50],
            ),
        },
        checks=(_check_experiments,),
        claims=EXPERIMENTS_CLAIMS,
    )
)
