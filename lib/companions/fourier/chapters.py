"""The Fourier chapters: their parameters, presets, checks and registered claims (Chapter 4 and
Appendix C)."""

from __future__ import annotations

from companions.claims import (
    Amendment,
    AtLeast,
    AtMost,
    Claim,
    Close,
    Exact,
    MeanAbove,
    Trend,
)
from companions.fourier.network import construction_width, is_odd_prime
from companions.fourier.transformer import split_size
from companions.scale import (
    Chapter,
    Float,
    Int,
    ListOf,
    get_chapter,
    nearest_int,
    register_chapter,
    toward,
)


def _check_p(name: str, p: int):
    if not is_odd_prime(p):
        return (
            f"parameter {name!r} = {p} is not allowed: "
            "the source needs an odd prime p > 2 (Section 4.3.1)"
        )
    return None


def _check_exact(params):
    for name in ("p",):
        msg = _check_p(name, params[name])
        if msg:
            return msg
    for i, p in enumerate(params["p_values"]):
        msg = _check_p(f"p_values[{i}]", p)
        if msg:
            return msg
    size = params["p"] ** (params["k"] + 1) * construction_width(params["p"], params["k"])
    if size > 1e12:
        return (
            f"parameters 'p' = {params['p']} and 'k' = {params['k']} "
            "are not allowed together: the explicit network "
            f"evaluated on all p^k inputs costs p^(k+1) m* = {size:.3g} (at most 1e12)"
        )
    return None


def _check_training(params):
    for name in ("p", "adamw_p"):
        msg = _check_p(name, params[name])
        if msg:
            return msg
    if params["batch"] and params["batch"] > params["p"] ** params["k"]:
        return (
            f"parameter 'batch' = {params['batch']} is not allowed: "
            f"it exceeds |D_p| = p^k = {params['p'] ** params['k']}"
        )
    return None


def _prime(n: int) -> int:
    return nearest_int(n, is_odd_prime, low=3)


def _snap_exact(v: dict, t: float) -> dict:
    """Between the presets (``companions.scale.between``): every modulus an odd prime."""
    v["p"] = _prime(v["p"])
    v["p_values"] = list(dict.fromkeys(_prime(q) for q in v["p_values"]))
    return v


def _batch(presets: dict, t: float, full_now: int, full_default: int) -> int:
    """The batch a fraction ``t`` of the way between the ``presets``, where the default preset
    trains on the full batch (``batch`` 0, ``full_default`` inputs) and the paper preset on
    minibatches: the number of inputs a step sees moves geometrically from ``full_default`` to
    the paper's batch, and is the full batch again (0) where it reaches the ``full_now`` inputs
    there are. (Moved as a plain number, 0 to 1024, a step would see far fewer inputs at
    ``t = 0.05`` than at ``t = 0``.)"""
    start, end = presets["default"]["batch"], presets["paper"]["batch"]
    if t == 1 or start != 0:
        return round(toward(start, end, t))
    seen = round(toward(full_default, end, t))
    return 0 if seen >= full_now else seen


def _snap_training(v: dict, t: float) -> dict:
    """Between the presets: ``p`` and ``adamw_p`` odd primes, the batch as :func:`_batch` says."""
    v["p"] = _prime(v["p"])
    v["adamw_p"] = _prime(v["adamw_p"])
    presets = get_chapter("fourier-training").presets
    default = presets["default"]
    v["batch"] = _batch(presets, t, v["p"] ** v["k"], default["p"] ** default["k"])
    return v


def _snap_transformer(v: dict, t: float) -> dict:
    """Between the presets: every modulus an odd prime, the batch as :func:`_batch` says."""
    v["p"] = _prime(v["p"])
    v["grok_p"] = [_prime(q) for q in v["grok_p"]]
    presets = get_chapter("fourier-transformer").presets
    default = presets["default"]
    full_default = split_size(default["p"], default["k"], default["train_fraction"])
    full_now = split_size(v["p"], v["k"], v["train_fraction"])
    v["batch"] = _batch(presets, t, full_now, full_default)
    return v


_AMENDED = "2026-12-05"
_SWEEP = "every (p, k) of p_values x k_values within sweep_size, and the chapter's (p, k)"

EXACT_CLAIMS = (
    Claim(
        id="gamma-star-theorem-c21",
        source="Lemma 4.10, Theorem C.21",
        kind="identity",
        statistic="Lemma 4.10's gamma*(p, k) at k = 3 minus Theorem C.21's 3 / (16 p (p - 1)), "
        "symbolic p (sympy)",
        rule=Exact(0),
        could_fail="a general closed form at odds with the source's own k = 3 theorem (another "
        "power of 2k + 2 or of p, a missing factor) leaves a nonzero residual",
        amended=(
            Amendment(
                _AMENDED,
                previous="gamma-star-special-cases: the residuals of k = 2, 3 and 5 all 0 (sympy)",
                reason="the cases k = 2 and k = 5 are this book's own evaluations of the same "
                "formula, so they checked the formula against itself (issue 42): shown as a "
                "derivation; k = 3 is the source's Theorem C.21, proved apart",
            ),
        ),
    ),
    Claim(
        id="lemma-c16-part3",
        source="Lemma C.16",
        kind="identity",
        statistic="the signed sum of Part 3 minus 2^k k! prod a_j, and the c_1 = +1 half minus "
        "2^(k-1) k! prod a_j, k = 2 .. sympy_k_max, expanded (sympy)",
        rule=Exact(0),
        could_fail="a wrong sign rule or a half sum that is not half leaves a nonzero polynomial",
    ),
    Claim(
        id="eq-c21-cosine-expansion",
        source="Eq. (C.21)",
        kind="identity",
        statistic="cos(x_1 + ... + x_K) minus the sum of (C.21), expanded (sympy), and its number "
        "of nonzero terms minus 2^(K-1), K = k + 1 = 2 .. sympy_k_max + 1",
        rule=Exact(0),
        could_fail="a wrong parity or sign rule in (C.21), or another number of terms, leaves a "
        "nonzero item",
    ),
    Claim(
        id="lemma-c18-one-frequency-exact",
        source="Lemma 4.11 = C.18 (this book's exact check)",
        kind="identity",
        statistic="the sum of the 2^(2k-1) neurons of one frequency (beta = 1) minus "
        "2^(k-1) k! cos(x_1 + ... + x_k - y), a polynomial in the cosines and sines, "
        "k = 2 .. min(sympy_k_max, 4) (sympy)",
        rule=Exact(0),
        could_fail="a construction that does not compute the cosine (a wrong sign vector, phase "
        "or output sign) leaves a nonzero polynomial",
    ),
    Claim(
        id="lemma-c14-fourier-form",
        source="Lemma C.14",
        kind="identity",
        statistic="largest relative gap between the expected class-weighted margin by brute "
        "force (uniform tau, all p^k inputs, all classes) and eq. (C.10) by FFT, random unit "
        "neurons, float64",
        rule=AtMost(1e-12),
        could_fail="a wrong constant k!/((p-1)p^k), a conjugate in the wrong place or a false "
        "(C.10) differs at order 1",
    ),
    Claim(
        id="ascent-never-above-gamma-star",
        source="Lemma 4.10",
        kind="bound",
        statistic="largest single-neuron objective / gamma* over the Adam ascents on the unit "
        "sphere, float64",
        rule=AtMost(1 + 1e-12),
        could_fail="a gamma* too small, or an objective scaled wrongly, lets an ascent pass 1",
    ),
    Claim(
        id="ascent-reaches-gamma-star",
        source="Lemma 4.10",
        kind="prediction",
        statistic="the best ascent's objective / gamma*, float64",
        rule=Close(1.0, 1e-6),
        could_fail="a gamma* too large (not attained), or an ascent stuck below it, ends short "
        "of 1",
    ),
    Claim(
        id="ascent-maximizer-one-frequency-locked",
        source="Lemma 4.10",
        kind="prediction",
        statistic="1 - folded-spectrum concentration and 1 - cos(sum theta_u - theta_w) of the "
        "best ascent",
        rule=AtMost(1e-6, strict=True),
        could_fail="if Lemma 4.10's maximizers were not single cosines with locked phases, the "
        "best ascent would spread its power or its phases",
        amended=(
            Amendment(
                _AMENDED,
                previous="ascent-maximizer-has-lemma-form: concentration > 1 - 1e-6, phase cos "
                "> 1 - 1e-6 and |balance - 1| < 1e-4, together",
                reason="one rule reads one kind of number: split into this claim and "
                "ascent-maximizer-balanced, with the same thresholds",
            ),
        ),
    ),
    Claim(
        id="ascent-maximizer-balanced",
        source="Lemma 4.10 (proof, eq. C.16)",
        kind="prediction",
        statistic="|balance - 1| of the best ascent, balance = ||w|| / mean_j ||u_j||",
        rule=AtMost(1e-4, strict=True),
        could_fail="if the maximizer did not split its norm equally over its k + 1 vectors "
        "(the QM-GM equality case), the balance would be off 1",
    ),
    Claim(
        id="explicit-network-margin-is-gamma-star",
        source="Lemma 4.11 = C.18, Lemma 4.10",
        kind="identity",
        statistic=f"|h(theta) / ||theta||_(2,k+1)^(k+1) / gamma* - 1| of the explicit network "
        f"over all p^k inputs, float64, {_SWEEP}",
        rule=AtMost(1e-12),
        could_fail="a construction off by a scale, a neuron of norm other than 1, or a wrong "
        "gamma* leaves a relative gap far above round-off",
        amended=(
            Amendment(
                _AMENDED,
                previous="two claims: explicit-network-normalized-margin-p{p}-k{k} within "
                "1e-12 gamma* of gamma*, and explicit-network-sweep <= 1e-12 over the sweep",
                reason="the same check twice where the chapter's (p, k) is in the sweep: one "
                "claim over the sweep with the chapter's (p, k) added, the same tolerance",
            ),
        ),
    ),
    Claim(
        id="explicit-network-computes-cosines",
        source="Lemma 4.11 = C.18",
        kind="identity",
        statistic="max |f - beta^(k+1) 2^(k-1) k! sum_zeta cos_zeta(sum a - c)| / max |.| over "
        "all inputs and classes, float64",
        rule=AtMost(1e-12),
        could_fail="a construction that is not the cosine sum (a wrong phase or sign in one "
        "neuron of one frequency) differs at order 1",
    ),
    Claim(
        id="all-points-on-the-margin",
        source="Lemma 4.11 (q* uniform), Condition 4.8",
        kind="identity",
        statistic="the larger of the spread of g over all inputs and the largest spread of the "
        "wrong logits of one input, over the raw margin, float64",
        rule=AtMost(1e-12),
        could_fail="if some point sat above the margin, or the wrong classes did not tie, the "
        "duality argument's q* uniform and Condition 4.8 would fail and the spread would show",
    ),
    Claim(
        id="explicit-network-neurons-in-omega",
        source="Lemma 4.11 = C.18 (its 'carefully check'), Lemma 4.10",
        kind="identity",
        statistic=f"1 - min cos(sum theta_u - theta_w) over the neurons, and max |psi'(theta_i) / "
        f"gamma* - 1| (each neuron's own class-weighted margin), float64, {_SWEEP}",
        rule=AtMost(1e-12, strict=True),
        could_fail="if the source's phase bookkeeping were wrong, some neuron would break "
        "sum theta_u = theta_w and its own margin would fall below gamma*",
        amended=(
            Amendment(
                _AMENDED,
                previous="at the chapter's (p, k): norm gap, 1 - concentration, 1 - phase cos "
                "and the neuron-margin gap all < 1e-12; with explicit-network-sweep-form "
                "(accuracy 1, one frequency per neuron, every frequency, phases locked) over "
                "the sweep",
                reason="unit norms, one frequency per neuron and every frequency hold by "
                "construction, and accuracy 1 follows from the margin claim (issue 42): what "
                "the source asserts is the phase condition and each neuron's margin, now over "
                "the whole sweep",
            ),
        ),
    ),
    Claim(
        id="lemma-c20-diagonal",
        source="Lemma C.20",
        kind="identity",
        statistic="max_j |f_hat(j, ..., j, -j) - lambda p^k| / (lambda p^k), j = 1 .. p - 1, "
        "lambda the raw margin, the explicit network's (k+1)-dimensional DFT, float64",
        rule=AtMost(1e-12),
        could_fail="a frequency missing from the network, or a negative diagonal entry, is off "
        "by order 1",
    ),
    Claim(
        id="lemma-c20-off-diagonal",
        source="Lemma C.20 (proof)",
        kind="identity",
        statistic="largest |f_hat| off that diagonal with j_(k+1) != 0, relative to lambda p^k",
        rule=AtMost(1e-12),
        could_fail="neurons mixing frequencies, or a network other than F + lambda 1[sum a = c], "
        "put power off the diagonal",
    ),
    Claim(
        id="erratum-cosine-sum-off-label",
        source="Lemmas C.17, C.18 (proofs)",
        kind="erratum",
        statistic="the mean over all inputs and wrong classes c of sum_zeta cos_zeta(sum a - c), "
        "read off the explicit network's logits / (beta^(k+1) 2^(k-1) k!), float64; the rule "
        "is the source's '0 otherwise'",
        rule=Close(0.0, 1e-9),
        could_fail="a value of 0 (reproduced) would refute the erratum; -1/2 (differs) confirms it",
    ),
    Claim(
        id="eq-c9-identity",
        source="Eq. (C.9)",
        kind="identity",
        statistic="eta(0) - (1/(p-1)) sum_{delta != 0} eta(delta) - p/(p-1) (eta(0) - E_delta "
        "eta), symbolic eta, p = 5 and 7 (sympy)",
        rule=Exact(0),
        could_fail="a false identity (another factor than p/(p-1)) leaves a nonzero residual",
    ),
    Claim(
        id="erratum-c9-arithmetic",
        source="Eq. (C.9)",
        kind="erratum",
        statistic="1 - 1/(p-1) - p/(p-1), symbolic p (sympy); the rule is the source's step "
        "'1 - 1/(p-1) = p/(p-1)'",
        rule=Exact(0),
        could_fail="a residual of 0 (reproduced) would refute the erratum; -2/(p-1) (differs) "
        "confirms it",
    ),
    Claim(
        id="lemma-c14-other-terms-cancel",
        source="Lemma C.14 (proof)",
        kind="identity",
        statistic="|what the monomials of (sum u_i)^k that miss some u_i add to eta(0) - "
        "E_delta eta| / max |eta|, one random unit neuron, float64",
        rule=AtMost(1e-12),
        could_fail="if those terms depended on delta, they would not cancel and (C.10) would "
        "miss them",
    ),
    Claim(
        id="erratum-normalized-power-two-sided",
        source="Figure 4.2",
        kind="erratum",
        statistic="the smallest max_i |u_hat[i]|^2 / sum_j |u_hat[j]|^2 (the unfolded spectrum, "
        "as Figure 4.2 defines it) over u_(i,1) of the explicit network's single-frequency "
        "neurons; the rule is the source's 'almost 1', read as at least 0.9",
        rule=AtLeast(0.9),
        could_fail="a value near 1 (reproduced) would refute the erratum; 1/2 (differs) "
        "confirms that the figure must have folded +-zeta",
    ),
)


EXACT = register_chapter(
    Chapter(
        id="fourier-max-margin",
        title="The exact max-margin network for k-input modular addition",
        notebook="book/fourier/max-margin.md",
        params={
            "p": Int(3, 199, doc="the modulus p (an odd prime) of the chapter's main example"),
            "k": Int(2, 8, doc="the number of inputs k of the main example"),
            "p_values": ListOf(Int(3, 199), doc="moduli of the construction sweep (odd primes)"),
            "k_values": ListOf(Int(2, 8), doc="numbers of inputs of the construction sweep"),
            "sweep_size": Int(
                1000,
                10**12,
                doc="largest p^(k+1) m* evaluated in the sweep (larger pairs are skipped)",
            ),
            "sympy_k_max": Int(
                2, 7, doc="largest k of the symbolic identities (Lemma C.16, eq. C.21)"
            ),
            "random_neurons": Int(
                10, 10**7, doc="random unit neurons drawn against gamma* (Lemma C.15)"
            ),
            "ascent_starts": Int(1, 10**5, doc="random starts of the single-neuron ascent"),
            "ascent_steps": Int(1, 10**6, doc="Adam steps of the single-neuron ascent"),
        },
        presets={
            "smoke": dict(
                p=5,
                k=3,
                p_values=[3, 5, 7],
                k_values=[2, 3],
                sweep_size=2 * 10**6,
                sympy_k_max=4,
                random_neurons=2000,
                ascent_starts=16,
                ascent_steps=1500,
            ),
            "default": dict(
                p=7,
                k=3,
                p_values=[3, 5, 7, 11],
                k_values=[2, 3, 4, 5],
                sweep_size=3 * 10**7,
                sympy_k_max=6,
                random_neurons=20000,
                ascent_starts=64,
                ascent_steps=3000,
            ),
            "paper": dict(
                p=47,
                k=4,
                p_values=[3, 5, 7, 11, 13, 23, 47, 97],
                k_values=[2, 3, 4, 5],
                sweep_size=5 * 10**10,
                sympy_k_max=7,
                random_neurons=10**5,
                ascent_starts=512,
                ascent_steps=5000,
            ),
        },
        checks=(_check_exact,),
        snap=_snap_exact,
        claims=EXACT_CLAIMS,
    )
)

_P13 = "the default preset p = 13, k = 2, 12000 steps, 5 seeds (the rule unchanged: mean > 0.95)"

TRAINING_CLAIMS = (
    Claim(
        id="margin-never-above-gamma-star",
        source="Theorem 4.9 (i)",
        kind="bound",
        statistic="largest normalized margin / gamma* of the L_{2,k+1} runs (main runs and "
        "width sweep) at every logged step, float64 (a narrower network is a wider one with "
        "zero neurons, so the bound holds for it too)",
        rule=AtMost(1 + 1e-9),
        could_fail="a gamma* too small, or a margin or norm computed wrongly, lets a trained "
        "network pass 1",
    ),
    Claim(
        id="trained-margin-approaches-gamma-star",
        source="this book (Lemma 4.7's limit, read for a finite run)",
        kind="prediction",
        statistic="final normalized margin / gamma* of each main run (m = width_factor m*, "
        "Adam on Definition 4.1's loss), one value per seed",
        rule=MeanAbove(0.95),
        could_fail="if the penalty's runs did not drive the normalized margin towards its "
        "maximum, the mean would sit below 0.95",
        decides="more steps or seeds per run: the paper preset (p = 47, k = 4, 50000 steps)",
        amended=(
            Amendment(
                "2026-12-05",
                previous=_P13,
                reason="on 2026-11-25 the default preset became p = 11, 10000 steps, 6 seeds "
                "after p = 13 "
                "left a seed far from gamma* (issue 42 found the change undisclosed). At p = "
                "13, rerun with this library on 2026-12-05, the seeds ended at 0.016, 0.933, "
                "0.9999, 0.9999, 0.9999: mean 0.790 +- 0.194 (SE), inconclusive",
            ),
        ),
    ),
    Claim(
        id="trained-single-frequency",
        source="Figure 4.1",
        kind="prediction",
        statistic="the smallest folded-spectrum concentration over the live neurons of each "
        "main run, one value per seed",
        rule=MeanAbove(0.95),
        could_fail="trained neurons that mix frequencies keep a concentration near its value "
        "at initialization",
        decides="more steps or seeds per run: the paper preset",
    ),
    Claim(
        id="trained-phase-lock",
        source="this book (Lemma 4.10's phase condition, on a trained network)",
        kind="prediction",
        statistic="the smallest cos(sum_j theta_(u_j) - theta_w) over the live neurons of each "
        "main run, one value per seed",
        rule=MeanAbove(0.95),
        could_fail="neurons whose phases do not lock (a random network's lie anywhere in "
        "[-1, 1]) keep the minimum far below 1",
        decides="more steps or seeds per run: the paper preset",
    ),
    Claim(
        id="trained-every-frequency-on-the-diagonal",
        source="Figure 4.2 (a) (Lemma C.20's statistic)",
        kind="prediction",
        statistic="min_j Re f_hat(j, ..., j, -j) / max_j |f_hat(j, ..., j, -j)|, j = 1 .. p - 1, "
        "of each main run, one value per seed",
        rule=MeanAbove(0.0),
        could_fail="a trained network that leaves a frequency out, or lets one subtract from "
        "the correct logit, has a diagonal entry <= 0",
        decides="more seeds: the paper preset",
    ),
    Claim(
        id="adamw-margin-never-above-gamma-star",
        source="Theorem 4.9 (i)",
        kind="bound",
        statistic="largest normalized margin / gamma* of the AdamW runs at every logged step, "
        "float64 (the bound holds for any network)",
        rule=AtMost(1 + 1e-9),
        could_fail="a gamma* too small, or a margin computed wrongly, lets a network pass 1",
    ),
    Claim(
        id="figure-4-2-adamw",
        source="Figure 4.2 (c), at this book's size",
        kind="prediction",
        statistic="the 5th percentile over live neurons of the folded maximum normalized power "
        "of u_(i,1), one value per AdamW run (weight decay, a random half of D_p at adamw_p); "
        "recorded only where every run generalizes (held-out accuracy >= 0.99 at the end), "
        "since the source's networks solve the task",
        rule=MeanAbove(0.95),
        could_fail="networks that solve the task with neurons mixing frequencies keep the 5th "
        "percentile well below 0.95",
        decides="more seeds; or, where the runs memorise, more steps or data (the paper "
        "preset: p = 47, k = 4)",
        amended=(
            Amendment(
                "2026-12-05",
                previous="a reproduction of Figure 4.2 on the main runs' p = 11, lr 0.1, weight "
                "decay 0.005: the gate (every held-out accuracy >= 0.99) was never met, the "
                "runs memorised their 60 inputs (held-out accuracy 0.03 to 0.12), so the claim "
                "could not be decided",
                reason="issue 42: the arm is sized to generalize: adamw_p = 23, lr 0.01, "
                "weight decay 1.0, chosen by pilot runs on held-out accuracy alone (p = 11 to "
                "47, lr 0.005 to 0.1, weight decay 0.005 to 1: only weight decay 1 generalized, "
                "at p = 23 and 31 and not at p = 11); the rule is unchanged; a prediction at "
                "this book's size, since it is not the source's p = 47, k = 4",
            ),
        ),
    ),
    Claim(
        id="figure-4-2-statistic-l2k1",
        source="Figure 4.2 (c)'s statistic (this book: on Definition 4.1's objective)",
        kind="prediction",
        statistic="the same 5th percentile on the main L_{2,k+1} runs, one value per seed",
        rule=MeanAbove(0.95),
        could_fail="penalty-trained neurons that mix frequencies keep the 5th percentile low",
        decides="more steps or seeds per run: the paper preset",
    ),
)


TRAINING = register_chapter(
    Chapter(
        id="fourier-training",
        title="Training finds the Fourier max-margin network",
        notebook="book/fourier/training.md",
        params={
            "p": Int(3, 199, doc="the modulus p (an odd prime)"),
            "k": Int(2, 8, doc="the number of inputs k"),
            "width_factor": Float(
                0.01, 100, doc="m = round(width_factor * m*), m* = 2^(2k-1)(p-1)/2"
            ),
            "steps": Int(1, 10**7, doc="optimizer steps of every run"),
            "lr": Float(
                0,
                10,
                low_open=True,
                doc="learning rate of the L_{2,k+1} runs (Adam)",
            ),
            "lam": Float(
                0, 10, low_open=True, doc="lambda of the L_{2,k+1} penalty (Definition 4.1)"
            ),
            "weight_decay": Float(
                0, 10, low_open=True, doc="AdamW decoupled weight decay of the comparison runs"
            ),
            "adamw_p": Int(
                3,
                199,
                doc="the modulus p (an odd prime) of the AdamW comparison runs, which train on a "
                "random half of its D_p",
            ),
            "adamw_lr": Float(0, 10, low_open=True, doc="learning rate of the AdamW runs"),
            "batch": Int(0, 10**8, doc="minibatch size; 0 = full batch over all of D_p"),
            "seeds": Int(1, 64, doc="independent runs of the L_{2,k+1} training"),
            "width_sweep": ListOf(Float(0.01, 100), doc="m / m* of the width sweep"),
            "log_every": Int(1, 10**6, doc="steps between margin evaluations"),
        },
        presets={
            "smoke": dict(
                p=11,
                k=2,
                width_factor=1.0,
                steps=4000,
                lr=0.1,
                lam=1e-3,
                weight_decay=1.0,
                adamw_p=23,
                adamw_lr=0.01,
                batch=0,
                seeds=4,
                width_sweep=[0.25, 0.5, 1.0, 2.0],
                log_every=100,
            ),
            "default": dict(
                p=11,
                k=2,
                width_factor=1.0,
                steps=10000,
                lr=0.1,
                lam=1e-3,
                weight_decay=1.0,
                adamw_p=23,
                adamw_lr=0.01,
                batch=0,
                seeds=6,
                width_sweep=[0.25, 0.5, 0.75, 1.0],
                log_every=200,
            ),
            "paper": dict(
                p=47,
                k=4,
                width_factor=1.0,
                steps=50000,
                lr=5e-3,
                lam=5e-3,
                weight_decay=5e-3,
                adamw_p=47,
                adamw_lr=5e-3,
                batch=1024,
                seeds=3,
                width_sweep=[0.25, 0.5, 1.0, 2.0],
                log_every=1000,
            ),
        },
        checks=(_check_training,),
        snap=_snap_training,
        claims=TRAINING_CLAIMS,
    )
)


def _check_transformer(params):
    if not is_odd_prime(params["p"]):
        return f"parameter 'p' = {params['p']} is not allowed: the source needs an odd prime p > 2"
    if len(params["grok_p"]) != len(params["grok_k"]):
        return (
            f"parameters 'grok_p' = {list(params['grok_p'])} and "
            f"'grok_k' = {list(params['grok_k'])} are not allowed "
            "together: they pair up, so they need the same length"
        )
    for i, q in enumerate(params["grok_p"]):
        if not is_odd_prime(q):
            return f"parameter 'grok_p[{i}]' = {q} is not allowed: expected an odd prime"
    return None


TRANSFORMER_CLAIMS = (
    Claim(
        id="kq-measure-on-known-matrices",
        source="this book (the measure of Figure 4.3)",
        kind="identity",
        statistic="the largest |score - its derived value| at the run's p, float64: the top-4 "
        "fraction of cos * cos (1), of one 2-D wave (1) and of two products at different "
        "frequency pairs (1/2, p > 3); the (+-zeta1, +-zeta2) share of cos * cos (1), of a 1-D "
        "wave (0) and of the two products (1/2, p > 3)",
        rule=AtMost(1e-12, strict=True),
        could_fail="a measure that folds the wrong coefficients, keeps the mean, or counts a 1-D "
        "wave as a 2-D cosine misses a derived value by order 1, and the caveat's argument "
        "(two products score 1/2) would not hold for the statistic the claim reads",
        amended=(
            Amendment(
                "2026-12-05",
                previous="the same tolerance, without the (+-zeta1, +-zeta2) share of the two "
                "products",
                reason="the caveat on Figure 4.3's floor of 1/2 rests on that share: it is "
                "measured too",
            ),
        ),
    ),
    Claim(
        id="transformer-fits-training-split",
        source="this book (the Figure 4.3 run)",
        kind="prediction",
        statistic="the best training accuracy over the logged steps of each Figure 4.3 model, "
        "one value per seed",
        rule=AtLeast(0.99),
        could_fail="a model or a training loop that cannot fit the training half (a broken "
        "mask, a wrong label) stays below 0.99",
    ),
    Claim(
        id="figure-4-3-kq-cosine",
        source="Figure 4.3 (its '2-dim cosine shape', at this book's size)",
        kind="prediction",
        statistic="the share of the 2-D DFT power of A_h - mean on the four points "
        "(+-zeta1, +-zeta2) around its strongest coefficient, both frequencies nonzero, mean "
        "over heads, one value per seed (kq_seeds models)",
        rule=MeanAbove(0.5),
        could_fail="heads that are not one 2-D cosine (noise scores about 4/p^2, a 1-D wave 0, "
        "two cosine products of equal weight 1/2) keep the mean at or below 1/2",
        decides="more seeds (kq_seeds), or the paper preset (p = 31, k = 4, 160 heads)",
        amended=(
            Amendment(
                "2026-12-05",
                previous="a reproduction of Figure 4.3 with the same rule (mean > 0.5), a match "
                "decided only at the source's (p, k) = (31, 4), (61, 3), (17, 5) and a miss "
                "anywhere",
                reason="a reproduction is compared at the source's sizes, and a rule that "
                "decides only one way is not a rule: at this book's size the claim is a "
                "prediction from Figure 4.3's reading, decided the same way for a match and a "
                "miss",
            ),
        ),
    ),
    Claim(
        id="grokking-runs-fit-training",
        source="Figure 4.4 (its training curves)",
        kind="prediction",
        statistic="the best training accuracy over the logged steps of each grokking run, "
        "one value per (k, p, seed)",
        rule=AtLeast(0.99),
        could_fail="a run that cannot fit its training half stays below 0.99",
    ),
    Claim(
        id="figure-4-4-grokking-weakens-with-k",
        source="Figure 4.4",
        kind="reproduction",
        statistic="t_test - t_train (first logged steps with test accuracy >= 0.95 and training "
        "accuracy >= 0.99) per seed, at each k in increasing order; recorded only where every "
        "run groks and there are two seeds or more per k",
        rule=Trend("decreasing"),
        could_fail="a gap that grows with k beyond its uncertainty (differs) refutes 'grokking "
        "becomes weak as k increases'",
        decides="grok_seeds >= 2 and runs long enough to grok: the paper preset (3 seeds, "
        "20000 steps, a GPU)",
    ),
)


TRANSFORMER = register_chapter(
    Chapter(
        id="fourier-transformer",
        title="Transformers on k-input modular addition: Fourier attention and grokking",
        notebook="book/fourier/transformer.md",
        params={
            "p": Int(3, 199, doc="modulus of the Figure 4.3 run"),
            "k": Int(2, 8, doc="number of inputs of the Figure 4.3 run"),
            "layers": Int(1, 8, doc="transformer layers of the Figure 4.3 run (the source: one)"),
            "grok_layers": Int(
                1, 8, doc="transformer layers of the grokking runs (Figure 4.4 says two)"
            ),
            "d_model": Int(8, 4096, doc="hidden dimension"),
            "heads": Int(1, 512, doc="attention heads per layer"),
            "d_head": Int(1, 1024, doc="dimension of each head's queries, keys and values"),
            "d_mlp": Int(1, 16384, doc="MLP width"),
            "steps": Int(1, 10**7, doc="AdamW steps of the Figure 4.3 run"),
            "grok_steps": Int(1, 10**7, doc="AdamW steps of each grokking run"),
            "lr": Float(0, 1, low_open=True, doc="AdamW learning rate"),
            "weight_decay": Float(0, 100, doc="AdamW weight decay"),
            "batch": Int(0, 10**8, doc="minibatch size; 0 = full batch on the training split"),
            "train_fraction": Float(
                0,
                1,
                low_open=True,
                high_open=True,
                doc="fraction of the p^k inputs used for training",
            ),
            "grok_p": ListOf(Int(3, 199), doc="moduli of the grokking runs (paired with grok_k)"),
            "grok_k": ListOf(Int(2, 8), doc="numbers of inputs of the grokking runs"),
            "grok_seeds": Int(1, 16, doc="seeds per grokking run"),
            "kq_seeds": Int(
                2, 16, doc="seeds of the Figure 4.3 run (its structure is decided over them)"
            ),
            "log_every": Int(1, 10**6, doc="steps between evaluations"),
        },
        presets={
            "smoke": dict(
                p=11,
                k=3,
                layers=1,
                grok_layers=1,
                d_model=32,
                heads=4,
                d_head=8,
                d_mlp=64,
                steps=300,
                grok_steps=200,
                lr=3e-3,
                weight_decay=1.0,
                batch=0,
                train_fraction=0.5,
                grok_p=[11, 5],
                grok_k=[2, 3],
                grok_seeds=1,
                kq_seeds=3,
                log_every=25,
            ),
            "default": dict(
                p=11,
                k=3,
                layers=1,
                grok_layers=1,
                d_model=64,
                heads=4,
                d_head=16,
                d_mlp=256,
                steps=700,
                grok_steps=600,
                lr=3e-3,
                weight_decay=1.0,
                batch=0,
                train_fraction=0.5,
                grok_p=[37, 11, 5],
                grok_k=[2, 3, 4],
                grok_seeds=1,
                kq_seeds=3,
                log_every=50,
            ),
            "paper": dict(
                p=31,
                k=4,
                layers=1,
                grok_layers=2,
                d_model=128,
                heads=160,
                d_head=32,
                d_mlp=512,
                steps=20000,
                grok_steps=20000,
                lr=1e-3,
                weight_decay=1e-3,
                batch=1024,
                train_fraction=0.5,
                grok_p=[97, 31, 11, 5],
                grok_k=[2, 3, 4, 5],
                grok_seeds=3,
                kq_seeds=3,
                log_every=250,
            ),
        },
        checks=(_check_transformer,),
        snap=_snap_transformer,
        claims=TRANSFORMER_CLAIMS,
    )
)
