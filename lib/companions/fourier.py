"""Fourier circuits for k-input modular addition: the max-margin one-hidden-layer network.

Source: Z. Shi's dissertation, Chapter 4 and Appendix C (Li, Liang, Shi, Song & Zhou, "Fourier
circuits in neural networks and transformers: a case study of modular arithmetic with multiple
inputs"). Numbers in docstrings are the dissertation's: eq. (4.1) the task, eq. (4.2) the network,
Definitions 4.1-4.6 and C.1-C.3 (loss, margins, norms), Lemma 4.10 = C.15 (gamma*), Lemma 4.11 =
C.18 (the explicit network), Lemma C.14 / eq. (C.10) (Fourier form of the single-neuron margin),
Lemma C.16 (sum-to-product), eq. (C.21) (cosine expansion), Lemma C.20 (every frequency is used),
Theorem 4.9 = C.22 (main result).

Shapes: a network with ``m`` neurons is ``U`` of shape ``(..., m, k, p)`` (the ``u_{i,j}``) and ``W``
of shape ``(..., m, p)`` (the ``w_i``); leading dimensions are independent runs. Inputs are integer
tuples ``a`` of shape ``(N, k)``. DFT convention (Section 4.4.1): ``f_hat(j) = sum_a f(a) exp(-2 pi i j a / p)``,
which is ``torch.fft.fft``. Phases use the convention of Lemma C.15, ``u(a) = beta cos(theta + 2 pi zeta a / p)``,
so ``u_hat(zeta) = (p beta / 2) exp(i theta)``.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import sympy as sp
import torch

from companions.scale import Chapter, Float, Int, ListOf, register_chapter

# ---------------------------------------------------------------------------------------------
# Parameters and presets of the chapters
# ---------------------------------------------------------------------------------------------


def is_odd_prime(p: int) -> bool:
    return p > 2 and all(p % q for q in range(2, int(math.isqrt(p)) + 1))


def _check_p(name: str, p: int):
    if not is_odd_prime(p):
        return f"parameter {name!r} = {p} is not allowed: the source needs an odd prime p > 2 (Section 4.3.1)"
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
    if size > 5e11:
        return (f"parameters 'p' = {params['p']} and 'k' = {params['k']} are not allowed together: the explicit network "
                f"evaluated on all p^k inputs costs p^(k+1) m* = {size:.3g} (at most 5e11)")
    return None


def _check_training(params):
    msg = _check_p("p", params["p"])
    if msg:
        return msg
    if params["batch"] and params["batch"] > params["p"] ** params["k"]:
        return f"parameter 'batch' = {params['batch']} is not allowed: it exceeds |D_p| = p^k = {params['p'] ** params['k']}"
    return None


EXACT = register_chapter(Chapter(
    id="fourier-max-margin",
    title="The exact max-margin network for k-input modular addition",
    notebook="book/fourier/max-margin.md",
    params={
        "p": Int(3, 199, doc="the modulus p (an odd prime) of the chapter's main example"),
        "k": Int(2, 8, doc="the number of inputs k of the main example"),
        "p_values": ListOf(Int(3, 199), doc="moduli of the construction sweep (odd primes)"),
        "k_values": ListOf(Int(2, 8), doc="numbers of inputs of the construction sweep"),
        "sweep_size": Int(1000, 10**12, doc="largest p^(k+1) m* evaluated in the sweep (larger pairs are skipped)"),
        "sympy_k_max": Int(2, 7, doc="largest k of the symbolic identities (Lemma C.16, eq. C.21)"),
        "random_neurons": Int(10, 10**7, doc="random unit neurons drawn against gamma* (Lemma C.15)"),
        "ascent_starts": Int(1, 10**5, doc="random starts of the single-neuron ascent"),
        "ascent_steps": Int(1, 10**6, doc="Adam steps of the single-neuron ascent"),
    },
    presets={
        "smoke": dict(p=5, k=3, p_values=[3, 5, 7], k_values=[2, 3], sweep_size=2 * 10**6, sympy_k_max=4,
                      random_neurons=2000, ascent_starts=16, ascent_steps=1500),
        "default": dict(p=7, k=3, p_values=[3, 5, 7, 11], k_values=[2, 3, 4, 5], sweep_size=3 * 10**7, sympy_k_max=6,
                        random_neurons=20000, ascent_starts=64, ascent_steps=3000),
        "paper": dict(p=47, k=4, p_values=[3, 5, 7, 11, 13, 23, 47, 97], k_values=[2, 3, 4, 5], sweep_size=5 * 10**10,
                      sympy_k_max=7, random_neurons=10**5, ascent_starts=512, ascent_steps=5000),
    },
    checks=(_check_exact,),
))

TRAINING = register_chapter(Chapter(
    id="fourier-training",
    title="Training finds the Fourier max-margin network",
    notebook="book/fourier/training.md",
    params={
        "p": Int(3, 199, doc="the modulus p (an odd prime)"),
        "k": Int(2, 8, doc="the number of inputs k"),
        "width_factor": Float(0.01, 100, doc="m = round(width_factor * m*), m* = 2^(2k-1)(p-1)/2"),
        "steps": Int(1, 10**7, doc="optimizer steps of every run"),
        "lr": Float(0, 10, low_open=True, doc="learning rate of every run (Adam, and AdamW for the comparison)"),
        "lam": Float(0, 10, low_open=True, doc="lambda of the L_{2,k+1} penalty (Definition 4.1)"),
        "weight_decay": Float(0, 10, low_open=True, doc="AdamW decoupled weight decay of the comparison run"),
        "batch": Int(0, 10**8, doc="minibatch size; 0 = full batch over all of D_p"),
        "seeds": Int(1, 64, doc="independent runs of the L_{2,k+1} training"),
        "width_sweep": ListOf(Float(0.01, 100), doc="m / m* of the width sweep"),
        "log_every": Int(1, 10**6, doc="steps between margin evaluations"),
    },
    presets={
        "smoke": dict(p=5, k=2, width_factor=1.0, steps=4000, lr=0.1, lam=1e-3, weight_decay=5e-3, batch=0, seeds=2,
                      width_sweep=[0.25, 0.5, 1.0, 2.0], log_every=100),
        "default": dict(p=5, k=3, width_factor=1.0, steps=12000, lr=0.1, lam=1e-3, weight_decay=5e-3, batch=0, seeds=2,
                        width_sweep=[0.25, 0.5, 0.75, 1.0], log_every=200),
        "paper": dict(p=47, k=4, width_factor=1.0, steps=50000, lr=5e-3, lam=5e-3, weight_decay=5e-3, batch=1024, seeds=3,
                      width_sweep=[0.25, 0.5, 1.0, 2.0], log_every=1000),
    },
    checks=(_check_training,),
))

# ---------------------------------------------------------------------------------------------
# Data (eq. 4.1), network (eq. 4.2), norms (Definition C.2), margins (Definitions 4.2-4.6)
# ---------------------------------------------------------------------------------------------


def dataset(p: int, k: int, device="cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """All ``p^k`` tuples ``a`` of Z_p^k (the theory's D_p, Section 4.3.1) and their labels
    ``y = (a_1 + ... + a_k) mod p`` (eq. 4.1). ``a`` has shape ``(p^k, k)``, in lexicographic order."""
    grids = torch.cartesian_prod(*[torch.arange(p, device=device)] * k) if k > 1 else torch.arange(p, device=device)[:, None]
    grids = grids.reshape(-1, k)
    return grids, grids.sum(-1) % p


def construction_width(p: int, k: int) -> int:
    """``m* = 2^(2k-1) (p-1)/2`` neurons of Lemma 4.11 / C.18 (Theorem 4.9's width)."""
    return 2 ** (2 * k - 1) * (p - 1) // 2


def hidden(U: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
    """Pre-activations ``u_{i,1}(a_1) + ... + u_{i,k}(a_k)`` of eq. (4.2): shape ``(..., N, m)``."""
    k = U.shape[-2]
    s = sum(U[..., j, :].index_select(-1, a[:, j]) for j in range(k))  # (..., m, N)
    return s.transpose(-1, -2)


def forward(U: torch.Tensor, W: torch.Tensor, a: torch.Tensor, chunk: int | None = None) -> torch.Tensor:
    """``f(theta, a) = sum_i (u_{i,1}(a_1) + ... + u_{i,k}(a_k))^k w_i`` (eq. 4.2), shape ``(..., N, p)``.

    With ``chunk``, the inputs are processed ``chunk`` at a time (same result, bounded memory)."""
    k = U.shape[-2]
    if chunk is None or a.shape[0] <= chunk:
        return hidden(U, a).pow(k) @ W
    return torch.cat([hidden(U, a[i:i + chunk]).pow(k) @ W for i in range(0, a.shape[0], chunk)], dim=-2)


def neuron_norms(U: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    """``||theta_i||_2 = (sum_j ||u_{i,j}||^2 + ||w_i||^2)^(1/2)`` (Section 4.3.1), shape ``(..., m)``."""
    return (U.pow(2).sum((-1, -2)) + W.pow(2).sum(-1)).sqrt()


def norm_ab(U: torch.Tensor, W: torch.Tensor, b: float) -> torch.Tensor:
    """``||theta||_{2,b} = (sum_i ||theta_i||_2^b)^(1/b)`` (Definition C.2 with a = 2). The power is taken
    of ``||theta_i||^2`` so that the gradient at a zero neuron is zero, not NaN."""
    sq = U.pow(2).sum((-1, -2)) + W.pow(2).sum(-1)
    return sq.pow(b / 2).sum(-1).pow(1 / b)


def margins(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """``g(theta, x, y) = f[y] - max_{y' != y} f[y']`` (Definition 4.2), per input: shape ``(..., N)``."""
    correct = logits.gather(-1, y.expand(*logits.shape[:-1]).unsqueeze(-1)).squeeze(-1)
    others = logits.scatter(-1, y.expand(*logits.shape[:-1]).unsqueeze(-1), float("-inf"))
    return correct - others.amax(-1)


def class_weighted_margins(logits: torch.Tensor, y: torch.Tensor, tau: torch.Tensor | None = None) -> torch.Tensor:
    """``g'(theta, x, y) = f[y] - sum_{y' != y} tau(x, y)[y'] f[y']`` (Definition 4.6). ``tau`` of shape
    ``(N, p)`` (its entry at y is ignored) defaults to the uniform weighting ``1/(p-1)`` of Theorem 4.9."""
    p = logits.shape[-1]
    correct = logits.gather(-1, y.expand(*logits.shape[:-1]).unsqueeze(-1)).squeeze(-1)
    if tau is None:
        return correct - (logits.sum(-1) - correct) / (p - 1)
    tau = tau.scatter(-1, y.unsqueeze(-1), 0.0)
    return correct - (tau * logits).sum(-1)


def margin(U: torch.Tensor, W: torch.Tensor, a: torch.Tensor, y: torch.Tensor, chunk: int | None = 4096) -> torch.Tensor:
    """``h(theta) = min_{D_p} g`` (Definition 4.3), shape ``(...)``."""
    return margins(forward(U, W, a, chunk), y).amin(-1)


def normalized_margin(U: torch.Tensor, W: torch.Tensor, a: torch.Tensor, y: torch.Tensor,
                      chunk: int | None = 4096) -> torch.Tensor:
    """``h(theta / ||theta||_{2,k+1}) = h(theta) / ||theta||_{2,k+1}^(k+1)`` (Definition 4.4; f is
    (k+1)-homogeneous)."""
    k = U.shape[-2]
    return margin(U, W, a, y, chunk) / norm_ab(U, W, k + 1).pow(k + 1)


def gamma_star(p: int, k: int) -> float:
    """``gamma* = 2 k! / ((2k+2)^((k+1)/2) (p-1) p^((k-1)/2))`` (Lemma 4.10 / C.15), as a float."""
    return 2 * math.factorial(k) / ((2 * k + 2) ** ((k + 1) / 2) * (p - 1) * p ** ((k - 1) / 2))


def gamma_star_symbolic(p=None, k=None) -> sp.Expr:
    """The same closed form in sympy (symbols ``p``, ``k`` where not given)."""
    p = sp.Symbol("p", positive=True) if p is None else sp.Integer(p)
    k = sp.Symbol("k", positive=True, integer=True) if k is None else sp.Integer(k)
    return 2 * sp.factorial(k) / ((2 * k + 2) ** ((k + 1) / sp.Integer(2)) * (p - 1) * p ** ((k - 1) / sp.Integer(2)))


# ---------------------------------------------------------------------------------------------
# The single-neuron class-weighted margin (Definitions C.12-C.13, Lemma C.14)
# ---------------------------------------------------------------------------------------------


def neuron_logits(U: torch.Tensor, W: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
    """Every neuron's own output ``phi(theta_i, a)``: shape ``(..., m, N, p)``."""
    k = U.shape[-2]
    return hidden(U, a).pow(k).transpose(-1, -2).unsqueeze(-1) * W.unsqueeze(-2)


def neuron_expected_margin(U: torch.Tensor, W: torch.Tensor, a: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Brute force: ``E_{a ~ D_p}[g'(theta_i, a, y)]`` with uniform tau for every neuron, which is
    ``eta(0) - E_{delta != 0} eta(delta)`` (Definitions C.12, C.13): shape ``(..., m)``."""
    return class_weighted_margins(neuron_logits(U, W, a), y).mean(-1)


def neuron_expected_margin_fourier(U: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    """The same quantity by eq. (C.10): ``k! / ((p-1) p^k) sum_{j != 0} w_hat(-j) prod_i u_hat_i(j)``."""
    k, p = U.shape[-2], U.shape[-1]
    uh = torch.fft.fft(U.to(torch.complex128) if U.dtype == torch.float64 else U.to(torch.complex64))
    wh = torch.fft.fft(W.to(uh.dtype))
    w_minus = torch.roll(torch.flip(wh, [-1]), 1, -1)  # w_hat(-j) = w_hat(p - j)
    terms = (uh.prod(-2) * w_minus)[..., 1:].sum(-1)
    return (math.factorial(k) / ((p - 1) * p ** k)) * terms.real


def eta(U: torch.Tensor, W: torch.Tensor, a: torch.Tensor, multilinear_only: bool = False) -> torch.Tensor:
    """``eta(delta) = E_a[(u_1(a_1) + ... + u_k(a_k))^k w(a_1 + ... + a_k - delta)]`` for delta = 0..p-1
    (Definition C.12) for one neuron ``U (k, p)``, ``W (p,)``; with ``multilinear_only``, the term
    ``k! E_a[w(.) prod_i u_i(a_i)]`` (the proof's eta-tilde times k!)."""
    k, p = U.shape
    vals = torch.stack([U[j, a[:, j]] for j in range(k)])  # (k, N)
    s = math.factorial(k) * vals.prod(0) if multilinear_only else vals.sum(0).pow(k)
    total = a.sum(-1)
    return torch.stack([(s * W[(total - d) % p]).mean() for d in range(p)])


# ---------------------------------------------------------------------------------------------
# The explicit construction (Lemma 4.11 / C.18)
# ---------------------------------------------------------------------------------------------


@dataclass
class Construction:
    """The network of Lemma C.18: ``U (m*, k, p)``, ``W (m*, p)``, each neuron's frequency and its phases
    in the convention ``beta cos(theta + 2 pi zeta a / p)``."""

    U: torch.Tensor
    W: torch.Tensor
    zeta: torch.Tensor
    phases_u: torch.Tensor  # (m*, k)
    phase_w: torch.Tensor   # (m*,)
    beta: float
    scale: float = field(default=0.0)  # C = beta^(k+1) 2^(k-1) k!: f(a)[c] = C sum_zeta cos_zeta(sum a - c)


def _construction_terms(k: int):
    """The neurons of one frequency in the construction of Lemma 4.11 / C.18, as ``(b, c, s)``:
    ``b`` in {0,1}^(k+1) with an even number of ones picks cos (0) or sin (1) for each of the k
    inputs and the output; ``c`` in {1} x {+-1}^(k-1) are the input signs; ``s`` is the output's sign,
    (-1)^(|b|/2) times the product of ``c``. 2^k * 2^(k-1) = 2^(2k-1) terms. Shared by the float
    network (:func:`construction`) and its exact check (:func:`construction_identity`)."""
    for b in itertools.product((0, 1), repeat=k + 1):
        if sum(b) % 2:
            continue
        sign_b = -1 if sum(b) % 4 == 2 else 1
        for tail in itertools.product((1, -1), repeat=k - 1):
            c = (1, *tail)
            yield b, c, sign_b * math.prod(c)


def construction(p: int, k: int, dtype=torch.float64, device="cpu") -> Construction:
    """The ``2^(2k-1)(p-1)/2`` neurons of Lemma 4.11 / C.18, each of norm 1.

    For every frequency zeta, every ``b in {0,1}^(k+1)`` with an even number of ones (the nonzero terms
    of eq. C.21, with ``a_{k+1} = -c``) and every sign vector ``c in {+-1}^k`` with ``c_1 = +1`` (half of
    the signed sum of Lemma C.16, Part 3, since ``c`` and ``-c`` give the same term) one neuron:
    ``u_j = beta c_j T_{b_j}(2 pi zeta a / p)`` with ``T_0 = cos``, ``T_1 = sin``, and
    ``w = beta s T~_{b_{k+1}}(2 pi zeta c / p)`` with ``T~_0 = cos``, ``T~_1 = -sin`` and
    ``s = (-1)^[sum b = 2 mod 4] prod_j c_j``; ``beta = sqrt(2 / ((k+1) p))``.
    """
    beta = math.sqrt(2 / ((k + 1) * p))
    grid = torch.arange(p, dtype=dtype)
    phase = {(0, 1): 0.0, (0, -1): math.pi, (1, 1): -math.pi / 2, (1, -1): math.pi / 2}  # (T, sign) -> theta
    Us, Ws, zetas, ph_u, ph_w = [], [], [], [], []
    for zeta in range(1, (p - 1) // 2 + 1):
        ang = 2 * math.pi * zeta * grid / p
        trig = (torch.cos(ang), torch.sin(ang))
        for b, c, s in _construction_terms(k):
            Us.append(torch.stack([beta * c[j] * trig[b[j]] for j in range(k)]))
            Ws.append(beta * s * (-trig[1] if b[k] else trig[0]))
            zetas.append(zeta)
            ph_u.append([phase[(b[j], c[j])] for j in range(k)])
            ph_w.append(phase[(b[k], -s if b[k] else s)])
    U, W = torch.stack(Us).to(device), torch.stack(Ws).to(device)
    return Construction(U, W, torch.tensor(zetas), torch.tensor(ph_u, dtype=dtype), torch.tensor(ph_w, dtype=dtype),
                        beta, beta ** (k + 1) * 2 ** (k - 1) * math.factorial(k))


# ---------------------------------------------------------------------------------------------
# Fourier diagnostics (Figures 4.1, 4.2; Lemma C.15's form; Lemma C.20)
# ---------------------------------------------------------------------------------------------


def stacked(U: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    """``V_i = [u_{i,1}; ...; u_{i,k}; w_i]`` of shape ``(..., m, k+1, p)``."""
    return torch.cat([U, W.unsqueeze(-2)], dim=-2)


def folded_power(v: torch.Tensor) -> torch.Tensor:
    """One-sided power spectrum of real vectors along the last axis: ``P(0) = |v_hat(0)|^2`` and
    ``P(zeta) = |v_hat(zeta)|^2 + |v_hat(-zeta)|^2`` for zeta = 1..(p-1)/2 (p odd): shape ``(..., (p+1)/2)``.
    Folding +-zeta is what makes a real single-frequency vector have normalized power 1."""
    p = v.shape[-1]
    pw = torch.fft.fft(v).abs().pow(2)
    half = (p - 1) // 2
    return torch.cat([pw[..., :1], pw[..., 1:half + 1] + pw[..., p - half:].flip(-1)], dim=-1)


def neuron_spectrum(U: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    """Per-neuron folded power summed over its k+1 vectors: shape ``(..., m, (p+1)/2)``."""
    return folded_power(stacked(U, W)).sum(-2)


def concentration(power: torch.Tensor) -> torch.Tensor:
    """``max_{zeta >= 1} P(zeta) / sum_{zeta >= 0} P(zeta)``: 1 for a single nonzero frequency."""
    return power[..., 1:].amax(-1) / power.sum(-1).clamp_min(1e-300)


def dominant_frequency(power: torch.Tensor) -> torch.Tensor:
    """``argmax_{zeta >= 1} P(zeta)`` (values in 1..(p-1)/2)."""
    return power[..., 1:].argmax(-1) + 1


def two_sided_max_power(v: torch.Tensor) -> torch.Tensor:
    """Figure 4.2's "maximum normalized power" taken literally: ``max_i |v_hat[i]|^2 / sum_j |v_hat[j]|^2``
    over the unfolded spectrum. It is 1/2 for any real single-frequency vector (the erratum)."""
    pw = torch.fft.fft(v).abs().pow(2)
    return pw.amax(-1) / pw.sum(-1).clamp_min(1e-300)


def phase_lock(U: torch.Tensor, W: torch.Tensor, zeta: torch.Tensor | None = None) -> torch.Tensor:
    """``cos(sum_j theta_{u_j} - theta_w)`` at each neuron's (dominant) frequency, with
    ``theta = arg v_hat(zeta)``; 1 when the phases satisfy Lemma C.15's condition. Shape ``(..., m)``."""
    if zeta is None:
        zeta = dominant_frequency(neuron_spectrum(U, W))
    V = torch.fft.fft(stacked(U, W))  # (..., m, k+1, p)
    at = V.gather(-1, zeta.unsqueeze(-1).unsqueeze(-1).expand(*V.shape[:-1], 1)).squeeze(-1)  # (..., m, k+1)
    ang = torch.angle(at)
    return torch.cos(ang[..., :-1].sum(-1) - ang[..., -1])


def balance(U: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    """``||w_i|| / mean_j ||u_{i,j}||``: 1 at a maximizer of Lemma C.15 (all norms 1/sqrt(k+1))."""
    return W.norm(dim=-1) / U.norm(dim=-1).mean(-1)


def live_neurons(U: torch.Tensor, W: torch.Tensor, fraction: float = 0.1) -> torch.Tensor:
    """Neurons with ``||theta_i|| > fraction * max_j ||theta_j||`` (boolean, shape ``(..., m)``)."""
    n = neuron_norms(U, W)
    return n > fraction * n.amax(-1, keepdim=True)


def network_dft(U: torch.Tensor, W: torch.Tensor, p: int) -> torch.Tensor:
    """The (k+1)-dimensional DFT of ``f(a_1, ..., a_k, c)`` (Section C.8.2), shape ``(p,) * (k+1)``."""
    k = U.shape[-2]
    a, _ = dataset(p, k, device=U.device)
    f = forward(U, W, a, chunk=4096).reshape(*([p] * (k + 1)))
    return torch.fft.fftn(f)


def trig_interpolant(v: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """The real function sharing the DFT of ``v`` (Figure 4.1's pale blue curve):
    ``(1/p) sum_{|j| <= (p-1)/2} v_hat(j) exp(2 pi i j t / p)`` at real points ``t``."""
    p = v.shape[-1]
    vh = torch.fft.fft(v.to(torch.float64))
    js = torch.arange(-(p - 1) // 2, (p - 1) // 2 + 1)
    coef = vh[..., js % p]
    basis = torch.exp(2j * math.pi * js.to(torch.float64)[:, None] * t.to(torch.float64)[None, :] / p)
    return (coef @ basis).real / p


# ---------------------------------------------------------------------------------------------
# Symbolic identities (sympy, exact)
# ---------------------------------------------------------------------------------------------


def sum_to_product_residual(k: int, half: bool = False) -> sp.Expr:
    """Lemma C.16, Part 3: ``sum_c (-1)^((k - sum c)/2) (sum_j c_j a_j)^k - 2^k k! prod a_j``, expanded
    (zero when the identity holds). With ``half``, the sum runs over ``c_1 = +1`` only and the right
    side is ``2^(k-1) k! prod a_j`` (the half used by the construction)."""
    a = sp.symbols(f"a1:{k + 1}")
    signs = [c for c in itertools.product((1, -1), repeat=k) if not half or c[0] == 1]
    lhs = sum(sp.Integer(-1) ** ((k - sum(c)) // 2) * sum(ci * ai for ci, ai in zip(c, a)) ** k for c in signs)
    return sp.expand(lhs - (2 ** (k - 1 if half else k)) * sp.factorial(k) * sp.Mul(*a))


def sum_to_product_sign_is_product(k: int) -> bool:
    """``(-1)^((k - sum c)/2) = prod_j c_j`` for every ``c in {+-1}^k``."""
    return all((-1) ** ((k - sum(c)) // 2) == math.prod(c) for c in itertools.product((1, -1), repeat=k))


def cosine_expansion(K: int) -> tuple[sp.Expr, int]:
    """Eq. (C.21) with K variables: ``cos(x_1 + ... + x_K)`` minus
    ``sum_b prod_i cos^(1-b_i) sin^(b_i)(x_i) 1[sum b even] (-1)^[sum b = 2 mod 4]``, expanded,
    and the number of nonzero terms of the sum (``2^(K-1)``)."""
    x = sp.symbols(f"x1:{K + 1}")
    rhs, terms = 0, 0
    for b in itertools.product((0, 1), repeat=K):
        if sum(b) % 2:
            continue
        terms += 1
        rhs += (-1 if sum(b) % 4 == 2 else 1) * sp.Mul(*[sp.sin(xi) if bi else sp.cos(xi) for xi, bi in zip(x, b)])
    return sp.expand(sp.expand_trig(sp.cos(sum(x))) - rhs), terms


def construction_identity(k: int) -> sp.Expr:
    """This book's exact check of Lemma C.18 at one frequency, free of beta: with symbols
    ``C_j = cos x_j``, ``S_j = sin x_j`` (j = 1..k) and ``C_w = cos y``, ``S_w = sin y``, the
    sum of the ``2^(2k-1)`` neurons of :func:`construction` (beta = 1) minus ``2^(k-1) k! cos(x_1 + ... + x_k - y)``,
    expanded as a polynomial. Zero when the construction computes the cosine exactly."""
    C = sp.symbols(f"C1:{k + 1}")
    S = sp.symbols(f"S1:{k + 1}")
    Cw, Sw = sp.symbols("C_w S_w")
    trig = lambda j, bit: S[j] if bit else C[j]
    total = 0
    for b, c, s in _construction_terms(k):
        total += sum(c[j] * trig(j, b[j]) for j in range(k)) ** k * s * (-Sw if b[k] else Cw)
    x = sp.symbols(f"x1:{k + 1}")
    y = sp.Symbol("y")
    target = sp.expand(sp.expand_trig(sp.cos(sum(x) - y)))
    target = target.subs({**{sp.cos(x[j]): C[j] for j in range(k)}, **{sp.sin(x[j]): S[j] for j in range(k)},
                          sp.cos(y): Cw, sp.sin(y): Sw})
    return sp.expand(total - 2 ** (k - 1) * sp.factorial(k) * target)


def dirichlet_sum_minpoly(p: int, x: int) -> sp.Expr:
    """Minimal polynomial (in ``t``) of ``sum_{zeta=1}^{(p-1)/2} cos(2 pi zeta x / p)``, exact:
    ``t - (p-1)/2`` when p | x, ``2t + 1`` (the value -1/2) otherwise."""
    t = sp.Symbol("t")
    value = sum(sp.cos(2 * sp.pi * z * x / p) for z in range(1, (p - 1) // 2 + 1))
    return sp.minimal_polynomial(value, t)


def c9_arithmetic() -> dict:
    """Eq. (C.9): the identity it states, and the arithmetic step it cites.

    Returns the residual of ``eta(0) - (1/(p-1)) sum_{delta != 0} eta(delta) - p/(p-1)(eta(0) - E_delta eta)``
    with symbolic eta values (p = 5, 7), and ``1 - 1/(p-1) - p/(p-1)`` (the cited step) in symbolic p."""
    out = {}
    for p in (5, 7):
        e = sp.symbols(f"e0:{p}")
        lhs = e[0] - sum(e[1:]) / (p - 1)
        rhs = sp.Rational(p, p - 1) * (e[0] - sum(e) / p)
        out[p] = sp.simplify(lhs - rhs)
    P = sp.Symbol("p", positive=True)
    out["step"] = sp.simplify(1 - 1 / (P - 1) - P / (P - 1))
    return out


# ---------------------------------------------------------------------------------------------
# Random draws and the single-neuron ascent (Lemma C.15 from below)
# ---------------------------------------------------------------------------------------------


def random_unit_neurons(n: int, p: int, k: int, generator: torch.Generator, dtype=torch.float64, device="cpu"):
    """``n`` neurons with Gaussian entries, scaled to ``||theta_i||_2 = 1``: ``U (n, k, p)``, ``W (n, p)``."""
    V = torch.randn(n, k + 1, p, generator=generator, dtype=dtype)
    V = V / V.pow(2).sum((-1, -2), keepdim=True).sqrt()
    V = V.to(device)
    return V[:, :k], V[:, k]


def single_neuron_ascent(p: int, k: int, starts: int, steps: int, generator: torch.Generator, lr: float = 0.02,
                         dtype=torch.float64, device="cpu"):
    """Maximize the single-neuron class-weighted margin over the unit ball (Definition C.13) by Adam on
    ``psi(theta / ||theta||)`` from ``starts`` random starts (vectorized). Returns ``(U, W, values)`` with
    unit-norm neurons and their exact (eq. C.10) objective values."""
    U, W = random_unit_neurons(starts, p, k, generator, dtype, device)
    U, W = U.clone().requires_grad_(True), W.clone().requires_grad_(True)
    opt = torch.optim.Adam([U, W], lr=lr)
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        n = neuron_norms(U, W)
        Un, Wn = U / n[:, None, None], W / n[:, None]
        (-neuron_expected_margin_fourier(Un, Wn).sum()).backward()
        opt.step()
    with torch.no_grad():
        n = neuron_norms(U, W)
        Un, Wn = U / n[:, None, None], W / n[:, None]
        return Un, Wn, neuron_expected_margin_fourier(Un, Wn)


def construction_report(p: int, k: int, device="cpu", dtype=torch.float64, chunk: int = 4096) -> dict:
    """Everything Lemma 4.11 / C.18 and Lemma 4.10 / C.15 say about the explicit network, measured in
    ``dtype`` over all ``p^k`` inputs: its width, normalized margin and gamma*, the spread of the
    margins (all points on the margin: q* uniform), the spread of the wrong logits (Condition 4.8),
    the accuracy, the gap to ``C sum_zeta cos_zeta(sum a - c)``, neuron norms, concentration,
    frequencies covered, the phase condition, and each neuron's own class-weighted margin."""
    c = construction(p, k, dtype=dtype, device=device)
    a, y = dataset(p, k, device=device)
    f = forward(c.U, c.W, a, chunk)
    g = margins(f, y)
    wrong = f.scatter(-1, y.unsqueeze(-1), float("nan"))
    spread_wrong = (torch.nan_to_num(wrong, nan=float("-inf")).amax(-1) - torch.nan_to_num(wrong, nan=float("inf")).amin(-1))
    diff = (a.sum(-1, keepdim=True) - torch.arange(p, device=device)).to(dtype)  # sum a - c
    zetas = torch.arange(1, (p - 1) // 2 + 1, device=device, dtype=dtype)
    target = c.scale * torch.cos(2 * math.pi * diff.unsqueeze(-1) * zetas / p).sum(-1)
    power = neuron_spectrum(c.U, c.W)
    gs = gamma_star(p, k)
    nm = float(g.min() / norm_ab(c.U, c.W, k + 1).pow(k + 1))
    return dict(p=p, k=k, m=c.U.shape[0], m_star=construction_width(p, k), gamma_star=gs, normalized_margin=nm,
                rel_gap=abs(nm / gs - 1), raw_margin=float(g.min()), margin_spread=float(g.max() - g.min()),
                wrong_spread=float(spread_wrong.max()), accuracy=float((f.argmax(-1) == y).double().mean()),
                cosine_gap=float((f - target).abs().max() / target.abs().max()),
                norm_gap=float((neuron_norms(c.U, c.W) - 1).abs().max()),
                min_concentration=float(concentration(power).min()),
                frequencies=sorted(set(dominant_frequency(power).tolist())),
                min_phase_cos=float(phase_lock(c.U, c.W).min()),
                neuron_margin_gap=float((neuron_expected_margin_fourier(c.U, c.W) / gs - 1).abs().max()))


# ---------------------------------------------------------------------------------------------
# Training (Definition 4.1, Lemma 4.7, Theorem 4.9), vectorized over independent runs
# ---------------------------------------------------------------------------------------------


@dataclass
class TrainRun:
    """Runs trained side by side. ``U (R, M, k, p)``, ``W (R, M, p)`` final parameters (neurons beyond a
    run's width stay exactly zero), ``U0``, ``W0`` the initial ones, ``widths (R,)``; the logs ``steps``,
    ``rho (T, R)`` = normalized margin / gamma*, ``loss (T, R)`` (cross-entropy only) and ``accuracy (T, R)``
    on all of D_p."""

    U: torch.Tensor
    W: torch.Tensor
    U0: torch.Tensor
    W0: torch.Tensor
    widths: list
    steps: list = field(default_factory=list)
    rho: list = field(default_factory=list)
    loss: list = field(default_factory=list)
    accuracy: list = field(default_factory=list)


def init_network(runs: int, width: int, p: int, k: int, generator: torch.Generator, widths=None,
                 dtype=torch.float64, device="cpu"):
    """Entries i.i.d. ``N(0, 1/p)`` (the spec's proposal; the source does not give its initialization).
    With ``widths`` (one per run), neurons beyond a run's width are zero, and stay zero in training:
    their gradient, their penalty's gradient and AdamW's decay all vanish at zero for k >= 2."""
    U = torch.randn(runs, width, k, p, generator=generator, dtype=dtype) / math.sqrt(p)
    W = torch.randn(runs, width, p, generator=generator, dtype=dtype) / math.sqrt(p)
    if widths is not None:
        mask = (torch.arange(width)[None, :] < torch.tensor(widths)[:, None]).to(dtype)
        U, W = U * mask[..., None, None], W * mask[..., None]
    return U.to(device), W.to(device)


def train(p: int, k: int, widths: list[int], steps: int, lr: float, generator: torch.Generator,
          regularizer: str = "l2k1", lam: float = 1e-3, weight_decay: float = 0.0, batch: int = 0,
          log_every: int = 100, decay_fraction: float = 0.2, warmup: int = 0, dtype=torch.float64, device="cpu",
          desc: str = "training", progress: bool = True) -> TrainRun:
    """Train one network per entry of ``widths`` (vectorized) on (a_1 + ... + a_k) mod p.

    ``regularizer='l2k1'``: Adam on ``L_lambda = CE + lambda ||theta||_{2,k+1}`` (Definition 4.1, the
    theory's objective); ``'adamw'``: AdamW with betas (0.9, 0.98) and decoupled ``weight_decay`` on CE
    alone (the source's experimental configuration, Appendix C.10.1); ``'l22'``: Adam on
    ``CE + lambda ||theta||_2^2`` (plain L2). ``batch = 0`` is full batch on all of D_p; otherwise
    minibatches drawn from ``generator``. The learning rate warms up linearly over ``warmup`` steps and
    decays by a cosine over the last ``decay_fraction`` of the steps. The normalized margin is measured
    on all of D_p every ``log_every`` steps and at the end.
    """
    if regularizer not in ("l2k1", "adamw", "l22"):
        raise ValueError(f"parameter 'regularizer' = {regularizer!r} is not allowed: expected 'l2k1', 'adamw' or 'l22'")
    from tqdm.std import tqdm

    a, y = dataset(p, k, device=device)
    U, W = init_network(len(widths), max(widths), p, k, generator, widths, dtype, device)
    run = TrainRun(U.clone(), W.clone(), U.clone(), W.clone(), list(widths))
    U, W = U.requires_grad_(True), W.requires_grad_(True)
    if regularizer == "adamw":
        opt = torch.optim.AdamW([U, W], lr=lr, betas=(0.9, 0.98), weight_decay=weight_decay)
    else:
        opt = torch.optim.Adam([U, W], lr=lr)
    decay_from = int(steps * (1 - decay_fraction))

    def lr_at(t):
        scale = min(1.0, (t + 1) / warmup) if warmup else 1.0
        if t >= decay_from and steps > decay_from:
            scale *= 0.5 * (1 + math.cos(math.pi * (t - decay_from) / (steps - decay_from)))
        return lr * scale

    gs = gamma_star(p, k)
    n = a.shape[0]

    def log(t):  # over all of D_p, chunk by chunk (the full logits need not fit in memory)
        with torch.no_grad():
            hmin, ce_sum, correct = None, 0.0, 0.0
            for i in range(0, n, 4096):
                logits = forward(U, W, a[i:i + 4096])
                yc = y[i:i + 4096]
                g = margins(logits, yc).amin(-1)
                hmin = g if hmin is None else torch.minimum(hmin, g)
                ce = torch.nn.functional.cross_entropy(logits.reshape(-1, p), yc.repeat(len(widths)), reduction="none")
                ce_sum = ce_sum + ce.reshape(len(widths), -1).sum(-1)
                correct = correct + (logits.argmax(-1) == yc).to(dtype).sum(-1)
            run.steps.append(t)
            run.rho.append((hmin / norm_ab(U, W, k + 1).pow(k + 1) / gs).cpu())
            run.loss.append((ce_sum / n).cpu())
            run.accuracy.append((correct / n).cpu())

    bar = tqdm(range(steps), desc=desc, disable=not progress, mininterval=0.5)
    for t in bar:
        if t % log_every == 0:
            log(t)
        for group in opt.param_groups:
            group["lr"] = lr_at(t)
        if batch:
            idx = torch.randint(0, n, (batch,), generator=generator).to(device)
            ab, yb = a[idx], y[idx]
        else:
            ab, yb = a, y
        logits = forward(U, W, ab)
        ce = torch.nn.functional.cross_entropy(logits.reshape(-1, p), yb.repeat(len(widths)), reduction="none")
        loss = ce.reshape(len(widths), -1).mean(-1).sum()
        if regularizer == "l2k1":
            loss = loss + lam * norm_ab(U, W, k + 1).sum()
        elif regularizer == "l22":
            loss = loss + lam * (U.pow(2).sum((-1, -2, -3)) + W.pow(2).sum((-1, -2))).sum()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if not math.isfinite(float(loss.detach())):
            bar.close()
            raise FloatingPointError(f"loss became {float(loss.detach())} at step {t}: lower 'lr'")
        opt.step()
    bar.close()
    log(steps)
    run.U, run.W = U.detach(), W.detach()
    run.rho, run.loss, run.accuracy = torch.stack(run.rho), torch.stack(run.loss), torch.stack(run.accuracy)
    return run


def diagnostics(U: torch.Tensor, W: torch.Tensor, live_fraction: float = 0.1) -> dict:
    """Fourier diagnostics of one trained network ``U (M, k, p)``, ``W (M, p)``, over its live neurons
    (``||theta_i|| > live_fraction * max``): their number, folded-spectrum concentration (min, median),
    the frequencies they cover, the phase condition (min, median) and the balance (median)."""
    p = U.shape[-1]
    live = live_neurons(U, W, live_fraction)
    Ul, Wl = U[live], W[live]
    power = neuron_spectrum(Ul, Wl)
    conc = concentration(power)
    phase = phase_lock(Ul, Wl)
    bal = balance(Ul, Wl)
    freqs = dominant_frequency(power)
    return dict(live=int(live.sum()), width=int((neuron_norms(U, W) > 0).sum()),
                min_concentration=float(conc.min()), median_concentration=float(conc.median()),
                frequencies=sorted(set(freqs.tolist())), all_frequencies=sorted(set(freqs.tolist())) == list(range(1, (p - 1) // 2 + 1)),
                frequency_counts=torch.bincount(freqs, minlength=(p + 1) // 2)[1:].tolist(),
                min_phase_cos=float(phase.min()), median_phase_cos=float(phase.median()),
                median_balance=float(bal.median()))
