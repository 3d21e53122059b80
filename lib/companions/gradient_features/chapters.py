"""The gradient-feature chapters (dissertation Chapter 3 and Appendix B): parameters, presets and
registered claims."""

from __future__ import annotations

from companions.claims import (
    Amendment,
    AtLeast,
    AtMost,
    Claim,
    DifferenceAbove,
    Every,
    Exact,
    MeanAbove,
    MeanWithin,
    RatioOfProportions,
    WithinErrors,
)
from companions.gradient_features.experiments import (
    RADII,
    SIGN_BG_FRACTION,
    SIGN_BIAS,
    SIGN_GAMMA,
)
from companions.scale import Chapter, Float, Int, ListOf, nearest_int, register_chapter

#: The date of the amendments made when the part moved to registered claims (issue 41).
_AMENDED = "2026-12-05"
#: The accuracy gap, fixed in advance, that a "beats" prediction needs (as before: 0.05).
_GAP = 0.05

# -------------------------------------------------------------------------------------------------
# gradient-framework
# -------------------------------------------------------------------------------------------------
_NICE_STATISTIC = (
    "the neurons of Lemma 3.13's set (3.14) with s = +1 at the {which} gamma, as (B.19)-(B.21) "
    "read it (w_i^(1) in the one-sided cone of D_j, so <w_i^(1), D_j> > 0, and ||G|| >= B_G), "
    "counted over seeds, features and the m neurons, against the fresh neurons of an independent "
    "population whose G is in the two-sided cone with ||G|| >= B_G (the probability p of "
    "Definition 3.7)"
)
_NICE_PREVIOUS = (
    "nice-fraction-matches-p-{which}-cone: the fraction of the two-sided cone (no sign "
    "condition), mean over seeds, within 0.05 of the population's p"
)
_NICE_REASON = (
    "the set of (3.14) and (B.19)-(B.21) also requires <w_i^(1), D_j> > 0, which halves it: its "
    "expected size is p/2 (B.22), not p; the two-sided count compared two estimates of the same "
    "probability, and the absolute margin 0.05 on p = 0.0128 could not tell p from p/2. The band "
    "[1/4, 3/4] of the ratio runs from the lemma's guarantee m p / 4 to halfway to the two-sided p"
)


def _nice(which: str) -> Claim:
    return Claim(
        id=f"lemma-3-13-nice-fraction-{which}-cone",
        source="Lemma 3.13 ((B.19)-(B.22))",
        kind="prediction",
        statistic=_NICE_STATISTIC.format(which=which),
        rule=RatioOfProportions(0.25, 0.75),
        could_fail="a set without the sign condition (twice the lemma's) gives a ratio near 1; a "
        "first step whose weights do not follow G, or neurons that miss the feature, a ratio "
        "near 0",
        decides="more seeds or neurons (the paper preset: m = 10^4, 10 seeds)",
        amended=(
            Amendment(_AMENDED, previous=_NICE_PREVIOUS.format(which=which), reason=_NICE_REASON),
        ),
    )


FRAMEWORK_CLAIMS = (
    Claim(
        id="first-step-closed-form",
        source="(B.16)-(B.17)",
        kind="identity",
        statistic="the largest gap between the library's closed-form first step and an "
        "automatic-differentiation step of (3.2) with lambda = 1/eta, over a and W of every seed, "
        "float64",
        rule=AtMost(1e-10),
        could_fail="a wrong sign of l'(0), a missing a_i, or weight decay that does not cancel "
        "the initial weights leaves a gap of the size of the weights",
    ),
    Claim(
        id="mirror-neuron-relation",
        source="this book (Lemma B.71 without its premise)",
        kind="identity",
        statistic="the largest |w_{i+m}^(1) - w_i^(1) - eta l'(0) a_i E^[yx]| over neurons and "
        "seeds, E^ the step's sample mean, float64",
        rule=AtMost(1e-10),
        could_fail="if the mirror neuron's indicator were not one minus neuron i's (a tie, a "
        "wrong sign of its bias), the gap would be of the size of the weights",
    ),
    _nice("narrowest"),
    _nice("widest"),
    Claim(
        id="lemma-3-13-quarter-of-mp",
        source="Lemma 3.13",
        kind="bound",
        statistic="the smallest |G_(D_j, +1), Nice| / (m p / 4) over seeds and features at the "
        "widest gamma, the set with its sign condition, p from the independent population",
        rule=AtLeast(1.0),
        could_fail="a seed and feature with fewer nice neurons than the lemma's m p / 4",
        amended=(
            Amendment(
                _AMENDED,
                previous="every seed's and feature's fraction of the two-sided cone >= p / 4",
                reason="the two-sided cone counts a set twice the lemma's, so the check could not "
                "fail (lowest fraction 0.143 against p / 4 = 0.046); the set now has the sign "
                "condition of (B.21)",
            ),
        ),
    ),
    Claim(
        id="theorem-3-4-bound",
        source="Theorem B.2 (Theorem 3.4 with eta = 1/L), O-constants 1",
        kind="bound",
        statistic="the smallest test loss (smoothed hinge) over the T iterates of gradient descent "
        "with eta = 1/L on the second layer, first layer frozen after the first step (Algorithm "
        "4), minus min over B_a2 in "
        + ", ".join(str(b) for b in RADII)
        + " of OPT_(W1, b, B_a2) + L (||a^(1)||^2 + B_a2^2) / T + sqrt(B_a2^2 (||W1||_F^2 B_x^2 "
        "+ ||b||^2) / n), OPT and the losses on a test sample",
        rule=AtMost(0.0),
        could_fail="a generalisation gap above the complexity term (B.595), or an optimisation "
        "error above L (||a1||^2 + B^2) / T, puts the test loss above the bound",
    ),
    Claim(
        id="theorem-3-4-step-one-over-t",
        source="Theorem 3.4 (eta^(t) = 1/t, as the main text states it)",
        kind="erratum",
        statistic="the largest over B_a2 in "
        + ", ".join(str(b) for b in RADII)
        + " of: the smallest training loss over the T iterates with eta^(t) = 1/t, minus the "
        "training loss's minimum over ||a|| <= B_a2, minus the theorem's optimisation term "
        "L (||a^(1)||^2 + B_a2^2) / T; the rule is the source's statement that this step size "
        "gives that rate",
        rule=AtMost(0.0),
        could_fail="the steps 1/t sum to only ln T, so gradient descent can fall behind the 1/T "
        "rate (differs); Theorem B.2 and the proof use eta = 1/L",
    ),
    Claim(
        id="multi-index-one-step-subspace",
        source="this book (Lemma B.68's mechanism, Damian et al. 2022)",
        kind="prediction",
        statistic="per seed, the mean share ||P_U w|| / ||w|| of the neurons' weights in "
        "span(u_1, u_2) after Algorithm 7's first step against at initialisation (paired)",
        rule=DifferenceAbove(0.5, paired=True),
        could_fail="if the first step did not move the weights into the target's subspace, the "
        "share would stay near sqrt(r / d)",
        decides="more samples (mi_n) or seeds",
    ),
)

_GAMMA = Float(0.0, 1.0, low_open=True, high_open=True)


def _check_framework(p):
    if p["r"] % 2 or p["r"] > p["d"]:
        return f"parameter 'r' = {p['r']} is not allowed: it must be even and at most d = {p['d']}"
    if sorted(p["gammas"]) != list(p["gammas"]):
        return f"parameter 'gammas' = {list(p['gammas'])} is not allowed: it must be increasing"
    return None


def _even(n: int) -> bool:
    return n % 2 == 0


def _odd(n: int) -> bool:
    return n % 2 == 1


def _snap_framework(v: dict, t: float) -> dict:
    """Between the presets (``companions.scale.between``): ``r`` even."""
    v["r"] = nearest_int(v["r"], _even, low=2)
    return v


FRAMEWORK = register_chapter(
    Chapter(
        id="gradient-framework",
        title="Gradient features: the framework and its guarantee",
        notebook="book/gradient-features/framework.md",
        params={
            "d": Int(4, 100_000, doc="input dimension of the running example (a Gaussian mixture)"),
            "r": Int(
                2, 1000, doc="components of the mixture (orthogonal means, alternating labels)"
            ),
            "mean_norm": Float(0.0, 100.0, low_open=True, doc="||mu_j|| / sqrt(d) (B_mu1 = B_mu2)"),
            "sigma": Float(0.0, 100.0, low_open=True, doc="standard deviation of each component"),
            "m": Int(2, 1_000_000, doc="neurons per block of (3.9); the network has 4m"),
            "n": Int(10, 10_000_000, doc="training points per seed for the first step"),
            "seeds": Int(2, 1000, doc="independent seeds (initialisation and data)"),
            "b_tilde": Float(0.0, 1e6, low_open=True, doc="the bias b~ of (3.9)"),
            "eta1": Float(0.0, 1e6, low_open=True, doc="first step size eta^(1), lambda = 1/eta"),
            "gammas": ListOf(_GAMMA, min_len=2, doc="cone widths gamma of Definition 3.7"),
            "bg_fraction": Float(
                0.0, 1.0, high_open=True, doc="B_G as a fraction of Lemma 3.17's leading term"
            ),
            "pop_neurons": Int(100, 10_000_000, doc="fresh weights of the population estimate"),
            "pop_n": Int(100, 10_000_000, doc="fresh points of the population estimate"),
            "simple_d": Int(4, 100_000, doc="dimension of Theorem 3.4's run (the same mixture)"),
            "simple_m": Int(1, 100_000, doc="neurons per block of Theorem 3.4's run (4m in all)"),
            "simple_n": Int(100, 10_000_000, doc="training points of Theorem 3.4's run"),
            "simple_test": Int(100, 10_000_000, doc="test points of Theorem 3.4's run"),
            "simple_steps": Int(2, 1_000_000, doc="iterates T of Theorem 3.4's gradient descent"),
            "opt_steps": Int(10, 1_000_000, doc="FISTA steps of each OPT over a ball"),
            "mi_d": Int(3, 100_000, doc="dimension of the multiple-index example (B.5.7)"),
            "mi_n": Int(100, 100_000_000, doc="samples of its first step (Algorithm 7)"),
            "mi_m": Int(2, 1_000_000, doc="neurons of its first step"),
        },
        presets={
            "smoke": dict(
                d=50,
                r=4,
                mean_norm=1.0,
                sigma=1.0,
                m=128,
                n=2000,
                seeds=3,
                b_tilde=1.0,
                eta1=0.2,
                gammas=[0.05, 0.1, 0.2, 0.4],
                bg_fraction=0.5,
                pop_neurons=2000,
                pop_n=10_000,
                simple_d=50,
                simple_m=8,
                simple_n=5000,
                simple_test=20_000,
                simple_steps=300,
                opt_steps=200,
                mi_d=30,
                mi_n=20_000,
                mi_m=128,
            ),
            "default": dict(
                d=100,
                r=4,
                mean_norm=1.0,
                sigma=1.0,
                m=512,
                n=10_000,
                seeds=5,
                b_tilde=1.0,
                eta1=0.2,
                gammas=[0.02, 0.05, 0.1, 0.2, 0.4],
                bg_fraction=0.5,
                pop_neurons=10_000,
                pop_n=50_000,
                simple_d=50,
                simple_m=8,
                simple_n=20_000,
                simple_test=50_000,
                simple_steps=1000,
                opt_steps=400,
                mi_d=50,
                mi_n=50_000,
                mi_m=256,
            ),
            "paper": dict(
                d=1000,
                r=8,
                mean_norm=1.0,
                sigma=1.0,
                m=10_000,
                n=200_000,
                seeds=10,
                b_tilde=1.0,
                eta1=0.2,
                gammas=[0.01, 0.02, 0.05, 0.1, 0.2, 0.4],
                bg_fraction=0.5,
                pop_neurons=100_000,
                pop_n=500_000,
                simple_d=50,
                simple_m=8,
                simple_n=200_000,
                simple_test=200_000,
                simple_steps=5000,
                opt_steps=2000,
                mi_d=100,
                mi_n=300_000,
                mi_m=1024,
            ),
        },
        checks=(_check_framework,),
        snap=_snap_framework,
        claims=FRAMEWORK_CLAIMS,
    )
)


# -------------------------------------------------------------------------------------------------
# gradient-mixtures
# -------------------------------------------------------------------------------------------------
def _beats(claim_id: str, where: str, base: str, decides: str) -> Claim:
    return Claim(
        id=claim_id,
        source="this book",
        kind="prediction",
        statistic=f"{where}: test accuracy of Algorithm 1 (first step, then Adam) minus that of "
        f"{base}, paired by seed (same data, steps and optimizer)",
        rule=DifferenceAbove(_GAP, paired=True),
        could_fail=f"if the first step found no features that {base} lacks, the gap would be "
        "below the margin",
        decides=decides,
    )


_XOR = "XOR mixture (Assumption B.36) at the chapter's d and largest n"
_XOR_DECIDES = "more seeds (the paper preset: 10 seeds, d = 200, n up to 16000)"

MIXTURES_CLAIMS = (
    Claim(
        id="gstar-hinge-closed-form",
        source="this book (Lemma 3.17's g*)",
        kind="prediction",
        statistic="the Monte Carlo hinge loss of Lemma 3.17's g* at d = 300 (r = 4 orthogonal "
        "means, B_mu = sigma = 1, tau = 8), against this book's Lipschitz upper bound (its slack, "
        "the cross-component terms, is below 1e-30 there)",
        rule=WithinErrors(4.0),
        could_fail="a wrong upper bound, or a sampler whose components are not N(mu_j, I), "
        "differs by many standard errors",
    ),
    Claim(
        id="lemma-3-17-hinge-bound",
        source="Lemma 3.17 (Lemma B.34)",
        kind="bound",
        statistic="log10 of this book's upper bound on the hinge loss of g* minus log10 of the "
        "lemma's 3/d^tau + 4/(d^(0.9 tau - 1) sqrt(tau log d)), at every d of gt_d that meets "
        "the proof's B_mu1 >= 4 sigma_B+ sqrt(tau log d / d) (r = 4, B_mu = sigma = 1, tau = 8; "
        "60-digit arithmetic)",
        rule=Every(AtMost(0.0)),
        could_fail="if the lemma's bound were false inside its hypotheses, the upper bound (the "
        "loss itself at these d) would exceed it at some d",
        amended=(
            Amendment(
                _AMENDED,
                previous="lemma-3-17-hinge-bound-d<d>, one prediction per d of gt_d, d = 300 "
                "included: the upper bound at most the lemma's bound (differs at d = 300)",
                reason="the proof of Lemma B.34 states the constant the page called unspecified, "
                "B_mu1 >= 4 sigma_B+ sqrt(tau log d / d); at d = 300 that is 1.56 > B_mu1 = 1, so "
                "d = 300 is outside the lemma's hypotheses and the earlier differs blamed the "
                "source for it",
            ),
        ),
    ),
    _beats("xor-network-beats-rf", _XOR, "random features (W^(0) frozen)", _XOR_DECIDES),
    _beats(
        "xor-network-beats-ntk", _XOR, "the NTK (the network linearised at W^(0))", _XOR_DECIDES
    ),
    Claim(
        id="xor-linear-at-chance",
        source="this book (E[yx] = 0 for Assumption B.36)",
        kind="prediction",
        statistic="test accuracy of the linear model on the XOR mixture at the largest n, per seed",
        rule=MeanWithin(0.5, _GAP),
        could_fail="labels leaking into the inputs, or a mixture with E[yx] != 0, lets a linear "
        "model beat chance",
        decides="more seeds",
    ),
)


def _check_mixtures(p):
    if len(set(p["n_values"])) != len(p["n_values"]) or sorted(p["n_values"]) != list(
        p["n_values"]
    ):
        return f"parameter 'n_values' = {list(p['n_values'])} is not allowed: it must increase"
    return None


MIXTURES = register_chapter(
    Chapter(
        id="gradient-mixtures",
        title="Mixtures of Gaussians, and the XOR mixture beyond kernels",
        notebook="book/gradient-features/mixtures.md",
        params={
            "tau": Float(8.0, 1e6, doc="tau of Assumption 3.15 (at least 8)"),
            "gt_d": ListOf(Int(4, 10**9), min_len=1, doc="dimensions at which g* is evaluated"),
            "gt_samples": Int(1000, 100_000_000, doc="Monte Carlo points for g*'s hinge loss"),
            "d": Int(4, 100_000, doc="dimension of the XOR mixture (Assumption B.36)"),
            "sigma": Float(0.0, 100.0, low_open=True, doc="sigma_B of the XOR mixture"),
            "m": Int(2, 1_000_000, doc="neurons per block of (3.9); the network has 4m"),
            "n_values": ListOf(Int(10, 10_000_000), min_len=1, doc="training set sizes"),
            "n_test": Int(100, 10_000_000, doc="test points per seed"),
            "seeds": Int(2, 1000, doc="independent seeds"),
            "eta1": Float(0.0, 1e6, low_open=True, doc="first step size, lambda = 1/eta"),
            "steps": Int(1, 1_000_000, doc="Adam steps after the first step, every method"),
            "lr": Float(0.0, 10.0, low_open=True, doc="Adam learning rate, every method"),
            "batch": Int(1, 1_000_000, doc="minibatch size of the later steps"),
        },
        presets={
            "smoke": dict(
                tau=8.0,
                gt_d=[300, 1000, 10_000],
                gt_samples=20_000,
                d=100,
                sigma=2.0,
                m=64,
                n_values=[500],
                n_test=4000,
                seeds=3,
                eta1=0.2,
                steps=200,
                lr=1e-2,
                batch=256,
            ),
            "default": dict(
                tau=8.0,
                gt_d=[300, 1000, 10_000, 100_000],
                gt_samples=200_000,
                d=100,
                sigma=2.0,
                m=128,
                n_values=[250, 500, 1000, 2000],
                n_test=10_000,
                seeds=5,
                eta1=0.2,
                steps=400,
                lr=1e-2,
                batch=256,
            ),
            "paper": dict(
                tau=8.0,
                gt_d=[300, 1000, 10_000, 100_000, 1_000_000],
                gt_samples=1_000_000,
                d=200,
                sigma=2.0,
                m=512,
                n_values=[500, 1000, 2000, 4000, 8000, 16000],
                n_test=50_000,
                seeds=10,
                eta1=0.2,
                steps=2000,
                lr=1e-2,
                batch=512,
            ),
        },
        checks=(_check_mixtures,),
        claims=MIXTURES_CLAIMS,
    )
)


# -------------------------------------------------------------------------------------------------
# gradient-parities
# -------------------------------------------------------------------------------------------------
_PARITY = "structured parity (B.396)-(B.397) with r = {r} at the chapter's d, k, n"
_PARITY_DECIDES = "more seeds, or the paper preset (d = 200, 4m = 8192, n = 10^5)"
_SIGN = (
    "fresh neurons w ~ N(0, I/d) whose G~ (on fresh points of the r = {r} distribution) is in "
    f"the cone of some D_j at gamma = {SIGN_GAMMA} with ||G~|| >= {SIGN_BG_FRACTION} sqrt(k) p_A, "
    f"bias s b~ with b~ = {SIGN_BIAS} sqrt(k) sigma_w: the share with s = -1 against the share "
    "with s = +1 (independent draws, pooled over features)"
)

PARITIES_CLAIMS = (
    Claim(
        id="parity-ground-truth-zero-hinge",
        source="Lemma 3.21 (B.469)",
        kind="identity",
        statistic="the smallest y g*(x) of (B.469) over every point of the support (every "
        "phi_A in {+-1}^(rk) and the 2r structured patterns), k in gt_k and r in gt_r, exact "
        "integers",
        rule=AtLeast(1),
        could_fail="a wrong sign pattern or bias in (B.469) leaves a point with margin below 1 "
        "(a positive hinge loss)",
    ),
    Claim(
        id="uniform-parity-ground-truth",
        source="Lemma B.64 (B.551)",
        kind="identity",
        statistic="the smallest y g*(x) of (B.551) over {+-1}^k, k in {2, 4, 6}, exact integers",
        rule=AtLeast(1),
        could_fail="a network that is not the parity on some point has margin below 1 there",
    ),
    Claim(
        id="parity-eyx-closed-form",
        source="this book (E[yx] of the parity distribution)",
        kind="identity",
        statistic="E[y phi_l] - 2 p_A for every l in A, by exact enumeration of X_U and the 2r "
        "patterns (Fractions), at (k, r, p_A) = (k, 1, 1/4), (k, 3, 1/10), (3, 3, 1/8)",
        rule=Exact(0),
        could_fail="if the uniform part contributed to E[y phi_l] (r >= 3), or the patterns did "
        "not give 2 p_A, some residual would be nonzero",
    ),
    Claim(
        id="remark-b45-eyx-zero",
        source="Remark B.45",
        kind="erratum",
        statistic="the sample mean of y x_l with its standard error, for every l in A, on 2 x 10^5 "
        "points of the library's sampler (r = 1, p_A = 1/4), against the remark's E[yx] = 0",
        rule=WithinErrors(4.0),
        could_fail="means many standard errors from 0 (differs) confirm the erratum",
    ),
    Claim(
        id="majority-coefficients",
        source="(B.547) / O'Donnell Theorem 5.19",
        kind="identity",
        statistic="(B.547)'s xi_k minus Majority's Fourier coefficient by a Walsh-Hadamard "
        "transform of {+-1}^enum_d, every odd k, exact rationals",
        rule=Exact(0),
        could_fail="a wrong binomial or sign in (B.547) or in the library leaves a nonzero "
        "residual",
    ),
    Claim(
        id="b480-numerator",
        source="(B.480)",
        kind="erratum",
        statistic="(B.480)'s xi_k as printed (numerator binom((d-1)/2, (d-1)/2)) minus the "
        "enumerated coefficient, every odd k, exact rationals; the rule is the source's formula",
        rule=Exact(0),
        could_fail="nonzero residuals (differs) confirm the erratum",
    ),
    Claim(
        id="lemma-b63-corrected",
        source="this book (Lemma B.63 corrected)",
        kind="identity",
        statistic="the enumerated g_ij (B.546) minus 1/2 xi_(k-1) prod_(A - j) w (j in A) or "
        "1/2 xi_(k+1) prod_(A + j) w (j not in A), every j, 6 random (w, b), exact rationals",
        rule=Exact(0),
        could_fail="another factor or another xi leaves a nonzero residual",
    ),
    Claim(
        id="lemma-b63-as-printed",
        source="Lemma B.63 (B.548)-(B.549)",
        kind="erratum",
        statistic="the enumerated g_ij minus the lemma as printed (xi_(k-1) prod w in both cases, "
        "no factor 1/2), the same draws; the rule is the source's formula",
        rule=Exact(0),
        could_fail="nonzero residuals (differs) confirm the erratum",
    ),
    *(
        _beats(
            f"parity-r{r}-network-beats-{base}",
            _PARITY.format(r=r),
            name,
            _PARITY_DECIDES,
        )
        for r in (1, 3)
        for base, name in (("rf", "random features (W^(0) frozen)"), ("ntk", "the NTK"))
    ),
    Claim(
        id="parity-linear-above-chance",
        source="this book (E[yx] != 0, the erratum to Remark B.45)",
        kind="prediction",
        statistic="test accuracy of the linear model on structured parity at the first r of "
        "r_values, per seed",
        rule=MeanAbove(0.5 + _GAP),
        could_fail="with E[yx] = 0, as Remark B.45 says, a linear model would stay at chance",
        decides="more seeds",
    ),
    Claim(
        id="uniform-step-magnitude-half",
        source="this book (Lemma B.63 corrected)",
        kind="prediction",
        statistic="k times the mean |w_ij^(1)| over j in A after Algorithm 6's first step "
        "(eta = 1/(k |xi_(k-1)|)), per seed: 1/2 by the corrected lemma, 1 as printed",
        rule=MeanWithin(0.5, 0.05),
        could_fail="the lemma as printed (no factor 1/2) puts it near 1",
        decides="a larger uniform_n (the sampling noise adds about eta / sqrt(n))",
    ),
    Claim(
        id="uniform-one-step-beats-rf",
        source="this book (Algorithm 6's setting, Adam on the second layer)",
        kind="prediction",
        statistic="test accuracy on uniform parity of one step plus a trained second layer minus "
        "that of random features (W^(0) frozen), paired by seed",
        rule=DifferenceAbove(_GAP, paired=True),
        could_fail="if the first step did not find the parity's coordinates, the gap would be "
        "below the margin",
        decides="more seeds",
    ),
    Claim(
        id="lemma-3-21-minus-sign-r3",
        source="Lemma 3.21 ((D_j, -1) in S_(p, gamma, B_G)) / Lemma B.47",
        kind="erratum",
        statistic=_SIGN.format(r=3),
        rule=RatioOfProportions(0.25),
        could_fail="the lemma gives both signs one p; a share for s = -1 below a quarter of the "
        "share for s = +1 (differs) confirms that (D_j, -1) is not a gradient feature for r >= 3",
        decides="more fresh neurons (sign_neurons)",
    ),
    Claim(
        id="lemma-3-21-minus-sign-r1",
        source="Lemma 3.21 (r = 1, where E[yx] is along D_1)",
        kind="prediction",
        statistic=_SIGN.format(r=1),
        rule=RatioOfProportions(0.25),
        could_fail="if the negative sign failed for r = 1 too, the cause would not be the "
        "components of E[yx] along other blocks",
        decides="more fresh neurons (sign_neurons)",
    ),
)


def _check_parities(p):
    if p["k"] % 2 == 0:
        return f"parameter 'k' = {p['k']} is not allowed: structured parity needs k odd"
    if p["p_A"] > 1 / (2 * max(p["r_values"])):
        return (
            f"parameter 'p_A' = {p['p_A']} is not allowed: the mixture needs p_A <= 1/(2r) for "
            f"every r in r_values = {list(p['r_values'])}"
        )
    if any(r % 2 == 0 for r in p["r_values"]):
        return f"parameter 'r_values' = {list(p['r_values'])} is not allowed: r must be odd"
    if max(p["r_values"]) * p["k"] > p["d"]:
        return f"parameter 'd' = {p['d']} is not allowed: it must be at least r k"
    if p["uniform_k"] % 2:
        return f"parameter 'uniform_k' = {p['uniform_k']} is not allowed: B.53 needs k even"
    if p["uniform_d"] % 2 == 0 or p["enum_d"] % 2 == 0:
        return "parameters 'uniform_d' and 'enum_d' must be odd (Majority's coefficients)"
    if p["uniform_k"] + 1 > p["enum_d"]:
        return f"parameter 'enum_d' = {p['enum_d']} is not allowed: it must exceed uniform_k"
    return None


def _snap_parities(v: dict, t: float) -> dict:
    """Between the presets: every ``r`` odd, ``uniform_k`` even, ``uniform_d`` and ``enum_d``
    odd."""
    v["r_values"] = list(dict.fromkeys(nearest_int(r, _odd) for r in v["r_values"]))
    v["uniform_k"] = nearest_int(v["uniform_k"], _even, low=2)
    for name in ("uniform_d", "enum_d"):
        v[name] = nearest_int(v[name], _odd)
    return v


PARITIES = register_chapter(
    Chapter(
        id="gradient-parities",
        title="Parities: structured inputs, uniform inputs, and fixed features",
        notebook="book/gradient-features/parities.md",
        params={
            "d": Int(2, 100_000, doc="input dimension of structured parity"),
            "k": Int(1, 1000, doc="block size (odd)"),
            "r_values": ListOf(Int(1, 99), min_len=1, doc="numbers of blocks r (odd)"),
            "p_A": Float(0.0, 0.5, doc="weight of each structured pattern X_{j,+-}"),
            "p_o": Float(0.0, 0.5, doc="background: P(phi_l = +1) = P(phi_l = -1) = p_o"),
            "gt_k": ListOf(Int(1, 15), min_len=1, doc="odd k at which (B.469) is enumerated"),
            "gt_r": ListOf(Int(1, 5), min_len=1, doc="odd r at which (B.469) is enumerated"),
            "m": Int(2, 1_000_000, doc="neurons per block of (3.9); the network has 4m"),
            "n": Int(10, 10_000_000, doc="training points per seed"),
            "n_test": Int(100, 10_000_000, doc="test points per seed"),
            "seeds": Int(2, 1000, doc="independent seeds"),
            "eta1": Float(0.0, 1e6, low_open=True, doc="first step size, lambda = 1/eta"),
            "b_scale": Float(0.0, 100.0, low_open=True, doc="b~ = b_scale sqrt(r k log d) sigma_w"),
            "steps": Int(1, 1_000_000, doc="Adam steps after the first step, every method"),
            "lr": Float(0.0, 10.0, low_open=True, doc="Adam learning rate"),
            "batch": Int(1, 1_000_000, doc="minibatch size"),
            "enum_d": Int(3, 17, doc="odd dimension of the exact uniform-parity enumeration"),
            "uniform_d": Int(3, 1001, doc="odd dimension of the uniform-parity run"),
            "uniform_k": Int(2, 20, doc="even parity degree of the uniform-parity run"),
            "uniform_n": Int(100, 100_000_000, doc="samples of the uniform-parity first step"),
            "uniform_m": Int(2, 1_000_000, doc="neurons of the uniform-parity run"),
            "sign_neurons": Int(100, 10_000_000, doc="fresh neurons per sign (Lemma 3.21's sign)"),
            "sign_n": Int(100, 10_000_000, doc="fresh points of their simplified gradients"),
        },
        presets={
            "smoke": dict(
                d=50,
                k=5,
                r_values=[1, 3],
                p_A=0.1,
                p_o=0.05,
                gt_k=[1, 3, 5],
                gt_r=[1, 3],
                m=64,
                n=2000,
                n_test=4000,
                seeds=3,
                eta1=2.0,
                b_scale=1.0,
                steps=200,
                lr=1e-2,
                batch=256,
                enum_d=9,
                uniform_d=15,
                uniform_k=2,
                uniform_n=20_000,
                uniform_m=64,
                sign_neurons=2000,
                sign_n=20_000,
            ),
            "default": dict(
                d=100,
                k=5,
                r_values=[1, 3],
                p_A=0.1,
                p_o=0.05,
                gt_k=[1, 3, 5, 7],
                gt_r=[1, 3],
                m=128,
                n=10_000,
                n_test=10_000,
                seeds=5,
                eta1=2.0,
                b_scale=1.0,
                steps=300,
                lr=1e-2,
                batch=256,
                enum_d=13,
                uniform_d=21,
                uniform_k=2,
                uniform_n=100_000,
                uniform_m=128,
                sign_neurons=4000,
                sign_n=50_000,
            ),
            "paper": dict(
                d=200,
                k=5,
                r_values=[1, 3, 5],
                p_A=0.1,
                p_o=0.05,
                gt_k=[1, 3, 5, 7, 9],
                gt_r=[1, 3],
                m=2048,
                n=100_000,
                n_test=50_000,
                seeds=10,
                eta1=2.0,
                b_scale=1.0,
                steps=2000,
                lr=1e-2,
                batch=1024,
                enum_d=17,
                uniform_d=41,
                uniform_k=4,
                uniform_n=2_000_000,
                uniform_m=2048,
                sign_neurons=20_000,
                sign_n=200_000,
            ),
        },
        checks=(_check_parities,),
        snap=_snap_parities,
        claims=PARITIES_CLAIMS,
    )
)
