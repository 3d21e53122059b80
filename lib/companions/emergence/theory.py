"""Closed forms and exact checks of Chapter 2 / Appendix A.

* Lemma 2.5 (= A.2, with the bump of Lemma A.1): the 3(k+1)-neuron network in exact rationals;
* Lemma 2.6 / A.9 and A.14: the gradient terms ``T_j`` by exact enumeration of a tiny support;
* the best-halfspace ceiling on D_A^mix (this book's derivation, used for the One-Step probe);
* Theorem 2.2 (= A.22, via A.23): the fixed-feature bound and its Fourier/Bessel argument;
* Theorem 2.4 (= A.27): SQ-dimension numbers and exact pairwise uncorrelation of parities.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import torch

from companions.boolean import cube, walsh_hadamard  # noqa: F401  (moved to the core)
from companions.emergence.network import Params, smoothed_relu_derivative
from companions.train import progress

# ---------------------------------------------------------------------------------------------
# Lemma A.1 and Lemma 2.5 / A.2
# ---------------------------------------------------------------------------------------------


def relu(z):
    return z if z > 0 else 0 * z


def truncated(z):
    """``sigma(z) = min(1, max(z, 0))`` on exact numbers."""
    return min(1, max(z, 0 * z))


def bump(z, s, a, b):
    """``delta_{s,a,b}(z) = a relu(z - s + b) - 2a relu(z - s) + a relu(z - s - b)`` (A.4)."""
    return a * relu(z - s + b) - 2 * a * relu(z - s) + a * relu(z - s - b)


def bump_closed_form(z, s, a, b):
    """The piecewise form (A.5): the triangle through ``(s-b, 0), (s, ab), (s+b, 0)``."""
    if z <= s - b or z >= s + b:
        return 0 * z
    return a * (z - s) + a * b if z <= s else -a * (z - s) + a * b


def target_network(k: int, P, mu) -> dict:
    """The network of the proof of Lemma 2.5 (A.6)-(A.16), in exact rationals.

    With ``w = sigma~ sum_{j in A} M_j``, ``<w, x> = S - mu`` (A.6). Two candidates:
    ``g_1^*`` (A.7) with bumps ``delta_{p - mu, 2, 1/2}`` and ``g_2^*`` (A.11) with
    ``delta_{p - mu + 1/4, 4, 1/2}``, ``+`` for ``p in P`` and ``-`` for ``p notin P``,
    ``0 <= p <= k``; the one whose biases all have ``|b| >= 1/8`` is kept and rescaled by ``4k``
    (A.15)-(A.16): ``a^* = 4k a``, ``w^* = w/(4k)``, ``b^* = b/(4k)``.

    Returns ``{'a': [...], 'b': [...], 'scale': 1/(4k), 'candidate': 1 or 2}``: neuron ``i``
    computes ``a_i sigma(scale (S - mu) + b_i)`` (``<w^*, x> = (S - mu)/(4k)`` for every neuron).
    """
    return _bump_network(k, P, mu, heights=(2, 4), rescale=4 * k, lemma="2.5")


def target_output(net: dict, S: int, mu) -> Fraction:
    """``g^*(x)`` for an input with ``sum_{j in A} phi~_j = S`` (truncated ReLU, exact)."""
    z = net["scale"] * (S - Fraction(mu))
    return sum(ai * truncated(z + bi) for ai, bi in zip(net["a"], net["b"]))


def lemma_2_5_report(k: int, P, mu) -> dict:
    """Every statement of Lemma 2.5 for one ``(k, P, mu)``, exactly: ``g^*(S) = y(S)`` for
    ``S = 0..k``, ``n = 3(k+1)``, ``|a^*| <= 32k``, ``1/(32k) <= |b^*| <= 1/2``,
    ``|<w^*, x> + b^*| <= 1``."""
    net = target_network(k, P, mu)
    mu = Fraction(mu)
    outputs = [target_output(net, S, mu) for S in range(k + 1)]
    labels = [1 if S in set(P) else -1 for S in range(k + 1)]
    pre = [net["scale"] * (S - mu) + bi for S in range(k + 1) for bi in net["b"]]
    return {
        "fits": all(o == y for o, y in zip(outputs, labels)),
        "n": len(net["a"]),
        "max_a": max(abs(v) for v in net["a"]),
        "min_b": min(abs(v) for v in net["b"]),
        "max_b": max(abs(v) for v in net["b"]),
        "max_pre": max(abs(v) for v in pre),
        "candidate": net["candidate"],
    }


def lemma_2_5_exhaustive(k_max: int, mu_denominator: int = 7) -> dict:
    """Lemma 2.5 for every ``k <= k_max``, every ``P subseteq [k]`` and every
    ``mu in {0, 1/q, ..., k}`` (``q = mu_denominator``); returns counts of cases and of violations
    of each statement."""
    counts = dict(cases=0, misfit=0, size=0, a_bound=0, b_bound=0, pre_bound=0, candidate2=0)
    for k in progress(range(1, k_max + 1), desc="Lemma 2.5, every k"):
        subsets = [set(c) for r in range(k + 1) for c in itertools.combinations(range(1, k + 1), r)]
        for P in subsets:
            for num in range(0, k * mu_denominator + 1):
                r = lemma_2_5_report(k, P, Fraction(num, mu_denominator))
                counts["cases"] += 1
                counts["misfit"] += not r["fits"]
                counts["size"] += r["n"] != 3 * (k + 1)
                counts["a_bound"] += r["max_a"] > 32 * k
                counts["b_bound"] += not (
                    Fraction(1, 32 * k) <= r["min_b"] and r["max_b"] <= Fraction(1, 2)
                )
                counts["pre_bound"] += r["max_pre"] > 1
                counts["candidate2"] += r["candidate"] == 2
    return counts


def target_params(dist, dtype=torch.float64, device="cpu", sigma: float | None = None) -> Params:
    """The Lemma 2.5 network for a :class:`~companions.emergence.data.Distribution` as float
    tensors: ``w_i^* = sigma~ sum_{j in A} M_j / (4k)`` for every neuron (``sigma``: another
    normaliser in place of ``sigma~``, such as the noisy data's of :func:`noisy_sample`)."""
    net = target_network(dist.k, dist.P, dist.mu)
    n = len(net["a"])
    w = (dist.sigma if sigma is None else sigma) * dist.signal_direction / (4 * dist.k)
    W = w.unsqueeze(0).expand(n, -1).clone()
    b = torch.tensor([float(v) for v in net["b"]], dtype=torch.float64)
    a = torch.tensor([float(v) for v in net["a"]], dtype=torch.float64)
    return Params(
        W.to(device=device, dtype=dtype),
        b.to(device=device, dtype=dtype),
        a.to(device=device, dtype=dtype),
    )


def target_network_a29(k: int, P, mu) -> dict:
    """The network of the proof of Lemma A.29 (noisy inputs, Section A.8), in exact rationals:
    bumps ``delta_{p - mu, 4, 1/2}`` (A.309) or ``delta_{p - mu + 1/4, 8, 1/2}`` (A.312), twice the
    heights of Lemma 2.5, the candidate with all biases ``>= 1/8`` rescaled by ``8k`` (A.315):
    ``a^* = 8k a``, ``b^* = b/(8k)``, ``<w^*, x> = <w, x>/(8k)``. Same keys as
    :func:`target_network`."""
    return _bump_network(k, P, mu, heights=(4, 8), rescale=8 * k, lemma="A.29")


def _bump_network(k: int, P, mu, heights: tuple[int, int], rescale: int, lemma: str) -> dict:
    """The construction shared by Lemmas 2.5 and A.29: for ``p = 0..k`` a bump
    ``delta_{p - mu + shift, h, 1/2}``, signed by ``p in P``, with ``(shift, h)`` = ``(0,
    heights[0])`` or ``(1/4, heights[1])``, the first candidate whose biases are all ``>= 1/8``,
    then ``a^* = rescale a``, ``b^* = b / rescale``."""
    P = set(P)
    mu = Fraction(mu)
    half = Fraction(1, 2)
    for candidate, (shift, height) in (
        (1, (Fraction(0), heights[0])),
        (2, (Fraction(1, 4), heights[1])),
    ):
        a, b = [], []
        for p in range(k + 1):
            sign = 1 if p in P else -1
            s = p - mu + shift
            # delta_{s,h,1/2}(z) = h relu(z - s + 1/2) - 2h relu(z - s) + h relu(z - s - 1/2)
            for coef, off in ((height, half), (-2 * height, Fraction(0)), (height, -half)):
                a.append(sign * coef)
                b.append(-s + off)
        if all(abs(v) >= Fraction(1, 8) for v in b):
            scale = Fraction(1, rescale)
            return {
                "a": [rescale * v for v in a],
                "b": [v * scale for v in b],
                "scale": scale,
                "candidate": candidate,
            }
    raise AssertionError(
        f"neither candidate of Lemma {lemma} has all biases >= 1/8 (impossible: they are 1/4 apart)"
    )


def noisy_sample(dist, sigma_zeta: float, n: int, generator: torch.Generator) -> dict:
    """``n`` points of ``dist`` with the input noise of Section A.8 (A.292): ``x~ = M phi~ + zeta``,
    ``zeta ~ N(0, sigma_zeta^2 I_d)``, normalised by the population mean and
    ``sigma~'^2 = sigma~^2 + d sigma_zeta^2``. Returns ``x``, ``y``, ``phi~``, the normaliser
    ``sigma`` (``sigma~'``) and the shift ``eps_x = sum_{j in A} <M_j, zeta>`` that the noise adds
    to ``S - mu`` (orthonormal ``M``), float64 on the CPU."""
    phi = dist.sample_phi_tilde(n, generator)
    M = dist.M.to(torch.float64)
    zeta = sigma_zeta * torch.randn(n, dist.d, generator=generator, dtype=torch.float64)
    sigma_p = math.sqrt(float(dist.sigma2) + dist.d * sigma_zeta**2)
    x = ((phi - dist.mean_phi.to(phi)) @ M.T + zeta) / sigma_p
    eps = zeta @ M[:, list(dist.A)].sum(1)
    return {"x": x, "y": dist.labels(phi), "phi": phi, "sigma": sigma_p, "eps": eps}


def lemma_a29_noisy(dist, sigma_zeta: float, n: int, generator: torch.Generator, device="cpu"):
    """Lemma A.29 on ``n`` noisy samples of ``dist`` (orthonormal ``M``, so the coherence
    ``mu_M = 0``): ``x~ = M phi~ + zeta``, ``zeta ~ N(0, sigma_zeta^2 I_d)``, normalised by the
    population mean and ``sigma~'^2 = sigma~^2 + d sigma_zeta^2`` (Section A.8.1), and the network
    of :func:`target_network_a29` with ``w = sigma~' sum_A M_j``. Then
    ``<w, x> = S - mu + eps_x`` with ``eps_x = sum_{j in A} <M_j, zeta> ~ N(0, k sigma_zeta^2)``.
    Returns the per-point indicator of ``y g^*(x) < 1``, ``eps_x``, the margins, and the bound
    ``Pr[|eps_x| > 1/8] = 2 (1 - Phi(1 / (8 sqrt(k) sigma_zeta)))`` of the proof ((A.307), every
    point with ``|eps_x| <= 1/8`` has ``y g^* >= 1``)."""
    noisy = noisy_sample(dist, sigma_zeta, n, generator)
    x, y, eps, sigma_p = noisy["x"], noisy["y"], noisy["eps"], noisy["sigma"]
    net = target_network_a29(dist.k, dist.P, dist.mu)
    w = sigma_p * dist.signal_direction.to(torch.float64) * float(net["scale"])
    a = torch.tensor([float(v) for v in net["a"]], dtype=torch.float64)
    b = torch.tensor([float(v) for v in net["b"]], dtype=torch.float64)
    x, y, w, a, b, eps = (t.to(device) for t in (x, y, w, a, b, eps))
    out = ((x @ w).unsqueeze(1) + b).clamp(0, 1) @ a
    margin = y * out
    z = 1 / (8 * math.sqrt(dist.k) * sigma_zeta)
    return {
        "below": (margin < 1).to(torch.float64),
        "eps": eps,
        "margin": margin,
        "good": eps.abs() <= 0.125,
        "bound": math.erfc(z / math.sqrt(2)),
        "candidate": net["candidate"],
    }


def a29_rate_estimates(noise: dict) -> dict:
    """Per noise level of :func:`lemma_a29_noisy` results (``{level: result}``): the fraction of
    points with ``y g^* < 1`` less the proof's bound (A.307), as an
    :class:`companions.claims.Estimate` (keyed by the level, 4 decimals).

    Its standard error is Agresti and Coull's, sqrt(p~(1 - p~)/n~) with p~ = (x + 2)/(n + 4) for
    x of n points below: the plain sqrt(p(1 - p)/n) is 0 when no point falls below, and would
    decide a rare event's rate exactly from a sample that never saw it."""
    from companions.claims import Estimate

    out = {}
    for level, r in noise.items():
        below = r["below"]
        n = len(below)
        tilde = (float(below.sum()) + 2) / (n + 4)
        out[f"{level:.4f}"] = Estimate(
            float(below.mean()) - r["bound"], math.sqrt(tilde * (1 - tilde) / (n + 4)), n
        )
    return out


# ---------------------------------------------------------------------------------------------
# Lemma A.8 and the gradient terms T_j of Lemma 2.6 / A.9 and A.14, by enumeration
# ---------------------------------------------------------------------------------------------


def lemma_a8(dist) -> dict:
    """(A.29)-(A.33) from the exact support of a tiny distribution (float64): returns each side."""
    grid, prob = dist.support()
    phi = dist.normalise(grid)
    y = dist.labels(grid)
    A = list(dist.A)
    bg = [j for j in range(dist.D) if j not in set(A)]
    s2 = float(dist.sigma2)
    sigma_phi2 = float(dist.p_o * (1 - dist.p_o)) / s2
    return {
        "E_y": float(prob @ y),
        "E_abs_y": float(prob @ y.abs()),
        "E_abs_phi_bg": [float(prob @ phi[:, j].abs()) for j in bg],
        "two_sigma_phi2_sigma": 2 * sigma_phi2 * dist.sigma,
        "E_y_phi_A": [float(prob @ (y * phi[:, j])) for j in A],
        "gamma_over_sigma": float(dist.gamma) / dist.sigma,
        "E_abs_y_phi": [float(prob @ (y * phi[:, j]).abs()) for j in range(dist.D)],
        "one_over_sigma": 1 / dist.sigma,
    }


def gradient_terms(
    dist, w: torch.Tensor, b: float, s: float, u: torch.Tensor | None = None
) -> dict:
    """The exact population ``T_j = E{u E_xi I[<w, x> + b + xi in (0,1)] phi_j}`` of (A.50) on the
    support of a tiny distribution (``u = y`` at ``g = 0``; pass ``u = y I[y g <= 1]`` for a later
    step), with ``beta = Pr[<phi_{-A}, q_{-A}> + b + xi in (0, 1)]`` and the prediction
    ``beta gamma / sigma~`` for ``j in A``. Also ``T_b`` (Lemma A.10: the same without
    ``phi_j``)."""
    grid, prob = dist.support()
    phi = dist.normalise(grid)
    y = dist.labels(grid)
    u = y if u is None else u
    q = dist.M.T @ w.to(torch.float64)  # q_l = <w, M_l>
    A = list(dist.A)
    mask = torch.ones(dist.D, dtype=torch.bool)
    mask[A] = False
    act = smoothed_relu_derivative(phi @ q + b, s)
    act_minus_A = smoothed_relu_derivative(phi[:, mask] @ q[mask] + b, s)
    T = (prob * u * act) @ phi
    beta = float(prob @ act_minus_A)
    return {
        "T": T,
        "T_b": float(prob @ (u * act)),
        "beta": beta,
        "predicted_A": beta * float(dist.gamma) / dist.sigma,
        "q": q,
    }


# ---------------------------------------------------------------------------------------------
# The best-halfspace ceiling on D_A^mix (this book's derivation; see the chapter)
# ---------------------------------------------------------------------------------------------


def linear_ceiling(k: int, p_o) -> Fraction:
    """``acc_lin(k, p_o) = 1 - p_o/2 + (p_o/2) binom(k-1, (k-1)/2) 2^{-(k-1)}`` (k odd): a halfspace
    in ``z_A`` that is right on all of D^(1) (``z_A = +-1``) and agrees with the parity on
    ``1/2 + binom(k-1,(k-1)/2)/2^k`` of the uniform part. Majority attains it only for
    ``k = 1 (mod 4)``; for ``k = 3 (mod 4)`` majority is *anti*-correlated with the parity (it gets
    ``1 - p_o/2 - (p_o/2) binom(k-1,(k-1)/2) 2^{-(k-1)}``, 5/8 at ``k = 3``, ``p_o = 1/2``) and the
    weights ``(2, ..., 2, -1)`` attain the value (see :func:`ceiling_weights`). That no halfspace
    does better is proven by enumeration for ``k <= 5`` (:func:`best_halfspace_accuracy`)."""
    p_o = Fraction(p_o).limit_denominator(10**6)
    return 1 - p_o / 2 + p_o / 2 * Fraction(math.comb(k - 1, (k - 1) // 2), 2 ** (k - 1))


def ceiling_weights(k: int) -> list[int]:
    """Integer weights ``u`` of a halfspace ``sign(<u, z_A>)`` that attains :func:`linear_ceiling`
    (this book's derivation): majority ``(1, ..., 1)`` for ``k = 1 (mod 4)``, and
    ``(2, ..., 2, -1)`` for ``k = 3 (mod 4)``. With ``S' = z_1 + ... + z_{k-1}`` the latter
    predicts ``sign S'`` when ``S' != 0`` (right half the time, ``z_k`` being independent) and
    ``-z_k`` when ``S' = 0``, which is the parity there since ``(k-1)/2`` is odd."""
    if k < 1 or k % 2 == 0:
        raise ValueError(f"parameter 'k' = {k} is not allowed: expected an odd positive integer")
    return [1] * k if k % 4 == 1 else [2] * (k - 1) + [-1]


def halfspace_accuracy(u, c, p_o) -> Fraction:
    """Exact accuracy of ``sign(<u, z_A> + c)`` (``sign 0 = -1``) for the parity of ``z_A`` on
    D_A^mix at ``p_o``, over the ``2^k`` relevant patterns (``k = len(u)``): weight
    ``p_o / 2^k`` each, plus ``(1 - p_o)/2`` on ``z_A = +-1``."""
    k = len(u)
    p_o = Fraction(p_o).limit_denominator(10**6)
    total = Fraction(0)
    for z in itertools.product((-1, 1), repeat=k):
        weight = p_o / 2**k + ((1 - p_o) / 2 if abs(sum(z)) == k else 0)
        score = sum(a * b for a, b in zip(u, z)) + c
        total += weight * ((1 if score > 0 else -1) == math.prod(z))
    return total


def best_halfspace_accuracy(k: int, p_o, max_weight: int | None = None) -> Fraction:
    """The best accuracy of ``sign(<u, z_A> + c)`` on D_A^mix, by enumerating integer weights
    ``|u_i| <= max_weight`` and every useful threshold (every threshold function on ``k <= 5``
    inputs has integer weights at most 1, 1, 2, 3, 5 for k = 1..5; S. Muroga, Threshold Logic and
    Its Applications, Wiley 1971). Background coordinates cannot help at
    ``p_o = 1/2`` (independent of everything), so the accuracy is over the ``2^k`` relevant
    patterns."""
    if max_weight is None:
        max_weight = {1: 1, 2: 1, 3: 2, 4: 3, 5: 5}.get(k)
        if max_weight is None:
            raise ValueError(
                f"parameter 'k' = {k} is not allowed: enumeration is exact for k <= 5 only"
            )
    p_o = Fraction(p_o).limit_denominator(10**6)
    Z = np.array(list(itertools.product((-1, 1), repeat=k)))
    y = Z.prod(1)
    weights = np.array(
        [(p_o / 2**k) + ((1 - p_o) / 2 if abs(z.sum()) == k else 0) for z in Z], dtype=object
    )
    U = np.array(list(itertools.product(range(-max_weight, max_weight + 1), repeat=k)))
    scores = U @ Z.T  # (U, 2^k) integer
    wf = np.array([float(v) for v in weights])
    best, best_row = -1.0, None
    # thresholds between consecutive integer scores: c = t + 1/2, t in [-k w - 1, k w]
    lim = k * max_weight
    for t in range(-lim - 1, lim + 1):
        correct = np.where(scores > t, 1, -1) == y
        acc = correct @ wf
        i = int(acc.argmax())
        if acc[i] > best:
            best, best_row = float(acc[i]), correct[i]
    best = sum(weights[best_row])
    return best


# ---------------------------------------------------------------------------------------------
# Theorem 2.2 / A.22 (via A.23) and Corollary 2.3
# ---------------------------------------------------------------------------------------------


def fixed_feature_bound(N, B, k, p_o, reading: str = "linear") -> float:
    """The hinge-loss lower bound of Theorem 2.2: ``p_o (1 - sqrt(2N) B / 2^k)``
    (``reading='linear'``, what the Bessel argument gives), or ``p_o (1 - sqrt(2 N B) / 2^k)``
    (``reading='root'``, the text's typesetting). Negative values mean the bound is vacuous."""
    if reading == "linear":
        return p_o * (1 - math.sqrt(2 * N) * B / 2**k)
    if reading == "root":
        return p_o * (1 - math.sqrt(2 * N * B) / 2**k)
    raise ValueError(
        f"parameter 'reading' = {reading!r} is not allowed: expected 'linear' or 'root'"
    )


def bessel_bound(N, B, D, k) -> float:
    """This book's Bessel form: some ``A`` with ``|A| = k`` has best hinge loss
    ``>= 1 - B sqrt(N / binom(D, k))`` on the uniform parity ``D_A`` (Theorem A.23's setting)."""
    return 1 - B * math.sqrt(N / math.comb(D, k))


def radial_walsh_coefficient(kernel: str, D: int, k: int, scale2: float, bandwidth: float) -> float:
    """``c_k = E_{x, x'}[chi_A(x) chi_A(x') K(x, x')]`` over the uniform cube ``{0, 1}^D`` for a
    radial kernel of :data:`companions.emergence.baselines.KERNELS` (``'rbf'``, ``'laplace'``) on
    inputs whose squared distance is ``scale2`` times the Hamming distance (``1/sigma~^2`` for the
    normalised data ``x = M (phi~ - E phi~) / sigma~``), and any ``|A| = k``: the squared RKHS norm
    of ``E[chi_A(x) K(x, .)]``, the same for every ``A`` of size ``k``. Summed over the Hamming
    distance ``h`` with the Krawtchouk sum ``sum_j (-1)^j C(k, j) C(D - k, h - j)``, in 60-digit
    arithmetic (the sum cancels to far below its terms)."""
    import mpmath

    if kernel not in ("rbf", "laplace"):
        raise ValueError(f"parameter 'kernel' = {kernel!r} is not allowed: 'rbf' or 'laplace'")
    with mpmath.workdps(60):
        h2 = mpmath.mpf(bandwidth) ** 2
        total = mpmath.mpf(0)
        for h in range(D + 1):
            d2 = mpmath.mpf(scale2) * h
            r = mpmath.exp(-d2 / (2 * h2)) if kernel == "rbf" else mpmath.exp(-mpmath.sqrt(d2 / h2))
            kraw = sum(
                (-1) ** j * math.comb(k, j) * math.comb(D - k, h - j)
                for j in range(max(0, h - D + k), min(k, h) + 1)
            )
            total += r * kraw
        return float(total / mpmath.mpf(2) ** D)


def corollary_2_3_bound(rkhs_norm: float, c_k: float, p_o: float) -> dict:
    """This book's explicit Corollary 2.3 for a kernel predictor ``f`` with ``||f||_H = L``: on the
    uniform part ``E[chi_A f] = <f, E[chi_A K(x, .)]>_H <= L sqrt(c_k) = eps`` (Cauchy-Schwarz in
    the RKHS), so its hinge loss is at least ``1 - eps`` there for every ``A`` of size ``k``, and at
    least ``p_o (1 - eps)`` on ``D_A^mix``. Returns ``eps`` and both bounds."""
    eps = rkhs_norm * math.sqrt(c_k)
    return {"eps": eps, "uniform part": 1 - eps, "mixture": p_o * (1 - eps)}


def integer_features(D: int, N: int, rng: np.random.Generator, L: int = 6) -> np.ndarray:
    """``N`` clipped ReLU-like features with integer numerators:
    ``Psi_i(z) = clip(<u_i, z> + c_i, -L, L) / L`` with integer ``u_i, c_i``; returns the numerators
    (``2^D x N``), so ``Psi = numerators / L`` in ``[-1, 1]``."""
    Z = cube(D)
    U = rng.integers(-2, 3, size=(N, D))
    c = rng.integers(-2, 3, size=N)
    return np.clip(Z @ U.T + c, -L, L).astype(np.int64)


def parseval_check(numerators: np.ndarray, D: int, k: int) -> dict:
    """Exact integer checks behind Theorem A.23: Parseval ``sum_S hat Psi_i(S)^2 = E Psi_i^2`` for
    every feature, and Bessel ``sum_{|A|=k} ||E[chi_A Psi]||^2 <= sum_i E Psi_i^2 <= N`` (in units
    of ``1 / (L^2 4^D)``), hence ``min_A ||E[chi_A Psi]||^2 <= N / binom(D, k)``."""
    n = 2**D
    coeffs = walsh_hadamard(numerators)  # 2^D * L * hat Psi
    lhs = (coeffs.astype(object) ** 2).sum(0)  # per feature: 4^D L^2 sum_S hat^2
    rhs = n * (numerators.astype(object) ** 2).sum(0)  # 4^D L^2 E Psi^2
    popcount = np.array([bin(r).count("1") for r in range(n)])
    level_k = coeffs[popcount == k].astype(object)
    per_A = (level_k**2).sum(1)  # 4^D L^2 ||E[chi_A Psi]||^2 for every |A| = k
    return {
        "parseval_exact": bool(np.all(lhs == rhs)),
        "parseval_violations": int(np.sum(lhs != rhs)),
        "level_k_total": int(per_A.sum()),
        "total_energy": int(rhs.sum()),
        "min_per_A": int(per_A.min()),
        "count_A": len(per_A),
        "unit": 4**D,
    }


# ---------------------------------------------------------------------------------------------
# Theorem 2.4 / A.27: SQ dimension
# ---------------------------------------------------------------------------------------------


def sq_numbers(D: int, k: int) -> dict:
    """``d = binom(D, k)`` (a lower bound on SQ-DIM by pairwise uncorrelated parities), the query
    bound ``d^{1/3}/2`` and the error threshold ``1/2 - 1/d^3`` of Theorem 2.4 (A.26)."""
    dim = math.comb(D, k)
    return {
        "sq_dim": dim,
        "queries": 0.5 * dim ** (1 / 3),
        "error_threshold_gap": Fraction(1, dim**3),
    }


def parity_correlations(D: int, k: int) -> dict:
    """For every pair ``A != A'`` of size ``k``, ``Pr[c_A = c_A'] - Pr[c_A != c_A']`` under the
    uniform law, exactly (integer counts over ``{0,1}^D``), with
    ``c_A = I[sum_{j in A}(1 - phi~_j) odd]``."""
    Z = cube(D)  # z = 2 phi~ - 1
    phi_t = (Z + 1) // 2
    subsets = list(itertools.combinations(range(D), k))
    C = np.stack([((1 - phi_t[:, list(A)]).sum(1) % 2) for A in subsets], 1)  # 0/1 concepts
    S = 1 - 2 * C  # +-1
    G = (
        (S.T.astype(np.float64) @ S.astype(np.float64)).round().astype(np.int64)
    )  # 2^D (Pr[=] - Pr[!=]), exact (< 2^53)
    off = G[~np.eye(len(subsets), dtype=bool)]
    return {
        "pairs": len(off),
        "max_abs_correlation_count": int(np.abs(off).max()),
        "concepts": len(subsets),
    }


def binomial_at_least_16_to_k(D_max: int) -> dict:
    """Exhaustive integer check of ``binom(D, k) >= 16^k`` for every ``1 <= k <= D/16``,
    ``D <= D_max`` (the step from Bessel's ``B sqrt(N / binom(D, k))`` to the ``2^k`` form of
    Theorem 2.2)."""
    cases = violations = 0
    for D in range(16, D_max + 1):
        for k in range(1, D // 16 + 1):
            cases += 1
            violations += math.comb(D, k) < 16**k
    return {"cases": cases, "violations": violations}


def readings_symbolic() -> dict:
    """Sympy: the Bessel form ``B sqrt(N)/4^k`` is at most both readings of Theorem 2.2's term,
    ``sqrt(2N) B / 2^k`` always, and ``sqrt(2 N B) / 2^k`` whenever that reading is non-vacuous
    (``2NB = t 4^k`` with ``0 < t < 1``, ``N >= 1``). Returns the two simplified ratios."""
    import sympy as sp

    N, B, k, t = sp.symbols("N B k t", positive=True)
    bessel = B * sp.sqrt(N) / 4**k
    r_linear = sp.simplify(bessel / (sp.sqrt(2 * N) * B / 2**k))
    r_root = sp.simplify((bessel / (sp.sqrt(2 * N * B) / 2**k)).subs(B, t * 4**k / (2 * N)))
    return {"linear": r_linear, "root": r_root, "symbols": (N, B, k, t)}


def nontrivial_size(k: int) -> float:
    """The bound ``p_o (1 - sqrt(2N) B / 2^k)`` is positive iff ``N B^2 < 4^k / 2``: returns
    ``4^k / 2``."""
    return 4**k / 2


def mixture_background_covariance(p_o) -> Fraction:
    """Covariance of two background coordinates under D_A^mix: ``p_o (2 p_o - 1)^2 / (4 (1 - p_o))``
    (zero only at ``p_o = 1/2``; (A2) asks for independence)."""
    p = Fraction(p_o).limit_denominator(10**6)
    q = p / (2 - 2 * p)
    e1 = p * Fraction(1, 2) + (1 - p) * q  # = p
    e12 = p * Fraction(1, 4) + (1 - p) * q * q
    return e12 - e1 * e1


def sq_concept(D: int, A, literal: bool = False) -> np.ndarray:
    """The concept of the proof of Theorem 2.4 on every ``phi~ in {0,1}^D`` (rows in the order of
    :func:`cube`, ``phi~ = (z + 1)/2``): ``g_A = I[sum_{j in A} (1 - phi~_j) odd]`` (0/1). With
    ``literal=True``, the sum runs over all ``j`` as printed, and ``A`` plays no role."""
    phi_t = (cube(D) + 1) // 2
    cols = list(range(D)) if literal else list(A)
    return (1 - phi_t[:, cols]).sum(1) % 2


def theorem_2_1_rates() -> dict:
    """Sympy: the rate algebra of the proof of Theorem 2.1. Substituting the late-stage rate
    ``eta = k^2 / (T m^{1/3})`` (A.276) into the terms of (A.281),
    ``{k^9/m, k^4 eta^2 T^2, k^3 T/m^2, k^9/(eta T m), eta m}``, gives
    ``{k^9/m, k^8/m^{2/3}, k^3 T/m^2, k^7/m^{2/3}, k^2 m^{2/3}/T}``; at ``T = m^{4/3}`` the largest
    is ``k^8/m^{2/3}`` once ``m >= k^3``, and ``k^8/m^{2/3} = epsilon`` gives the width
    ``m = k^12/epsilon^{3/2}`` of Theorem 2.1. ``residuals``: the source's (A.282) against the
    substitution (its three terms, and the two others over ``k^8/m^{2/3}`` against ``1/u`` at
    ``m = k^3 u^3`` and ``1/k``), and the width against Theorem 2.1's; all 0 when (A.282) and the
    width follow from (A.281)."""
    import sympy as sp

    k, m, T, eps = sp.symbols("k m T epsilon", positive=True)
    eta = k**2 / (T * m ** sp.Rational(1, 3))
    terms = [k**9 / m, k**4 * eta**2 * T**2, k**3 * T / m**2, k**9 / (eta * T * m), eta * m]
    substituted = [sp.simplify(t) for t in terms]
    expected = [
        k**9 / m,
        k**8 / m ** sp.Rational(2, 3),
        k**3 * T / m**2,
        k**7 / m ** sp.Rational(2, 3),
        k**2 * m ** sp.Rational(2, 3) / T,
    ]
    at_T = [sp.simplify(t.subs(T, m ** sp.Rational(4, 3))) for t in substituted]
    width = sp.solve(sp.Eq(k**8 / m ** sp.Rational(2, 3), eps), m)
    # against the source's (A.282): its three terms, and the two others of (A.281) over k^8/m^(2/3),
    # which are at most 1 once m >= k^3 (with m = k^3 u^3, u >= 1: 1/u and 1/k)
    u = sp.Symbol("u", positive=True)
    lead = k**8 / m ** sp.Rational(2, 3)
    residuals = [
        substituted[1] - lead,
        substituted[2] - k**3 * T / m**2,
        substituted[4] - k**2 * m ** sp.Rational(2, 3) / T,
        (substituted[0] / lead).subs(m, k**3 * u**3) - 1 / u,
        substituted[3] / lead - 1 / k,
        *(w - k**12 / eps ** sp.Rational(3, 2) for w in width),
    ]
    return {
        "residuals": [sp.simplify(r) for r in residuals],
        "substituted": substituted,
        "matches": all(sp.simplify(a - b) == 0 for a, b in zip(substituted, expected)),
        "at_T": at_T,
        "width": width,
        "symbols": (k, m, T, eps),
    }
