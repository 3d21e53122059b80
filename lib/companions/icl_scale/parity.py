"""Sparse parity in context (Section 5.5, Appendix D.3): the constructed networks of Theorem
5.5.1, checked exactly in the limit N -> infinity; their behaviour with M examples and flipped
labels (Theorem 5.5.2); and zero-loss networks with fewer heads (:func:`four_heads`) or smaller
norm (:func:`smaller_norm_search`).

Coordinates: the dictionary ``G`` is orthonormal and ``W = G V G^T``, so every quantity here is
computed in the hidden coordinates ``phi`` (``x = G phi``): ``y^T X / N W x_q = h^T V phi_q``
with ``h = (1/N) sum_l y_l phi_l``. A network is ``(a, V)``: head signs ``a`` and, for diagonal
heads, the diagonals ``V`` (one list per head). Exact work uses Fractions.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import torch

from companions.claims import Estimate
from companions.train import progress

SIGNS = ((1, 1), (1, -1), (-1, 1), (-1, -1))


def _log2(n: int, name: str) -> int:
    v = n.bit_length() - 1
    if n < 2 or 2**v != n:
        raise ValueError(f"parameter '{name}' = {n} is not allowed: expected a power of 2, >= 2")
    return v


def construction(d: int, gamma, positive_scale: int | None = None):
    """Theorem 5.5.1's ``g_2^*`` for ``d = 2^{v_2}``: heads ``i <= v_2`` with ``a = -1`` and
    ``V_ll = (2 digit(bin(l-1), i) - 1)/(4 gamma)``; head ``v_2+1`` with ``a = +1`` and
    ``V = -positive_scale/(4 gamma) I`` (``positive_scale = v_2`` by default); then the mirrors
    ``a_{i+v_2+1} = a_i``, ``V^{(i+v_2+1)} = -V^{(i)}``. Returns ``(a, V)``."""
    v2 = _log2(d, "d")
    scale = v2 if positive_scale is None else positive_scale
    c = Fraction(1) / (4 * Fraction(gamma))
    heads = [[(2 * ((n >> (i - 1)) & 1) - 1) * c for n in range(d)] for i in range(1, v2 + 1)]
    heads.append([-scale * c] * d)
    a = [-1] * v2 + [1]
    return a + a, heads + [[-x for x in h] for h in heads]


def construction_small(k: int, d: int, gamma):
    """Theorem 5.5.1's ``g_1^*`` for ``k = 2^{v_1}``: the neurons ``{1..v_1, v_2+1, v_2+2 ..
    v_2+v_1+1, 2v_2+2}`` of ``g_2^*``, with the positive head's scale ``v_1``."""
    v1, v2 = _log2(k, "k"), _log2(d, "d")
    if v1 > v2:
        raise ValueError(f"parameter 'k' = {k} is not allowed: expected k <= d = {d}")
    a, V = construction(d, gamma, positive_scale=v1)
    keep = list(range(v1)) + [v2] + list(range(v2 + 1, v2 + v1 + 1)) + [2 * v2 + 1]
    return [a[i] for i in keep], [V[i] for i in keep]


def output(a, V, *, gamma, i, j, phi_i, phi_j):
    """``g`` at ``N -> infinity`` on task ``(i, j)`` for a query with ``phi_i, phi_j``: the
    prompt average ``h -> 2 gamma (e_i + e_j)`` (``E[y phi_i] = E[y phi_j] = 2 gamma``), so head
    ``k`` sees ``2 gamma (V_ii phi_i + V_jj phi_j)`` (diagonal heads)."""
    g = Fraction(2) * Fraction(gamma)
    return sum(ak * max(0, g * (Vk[i] * phi_i + Vk[j] * phi_j)) for ak, Vk in zip(a, V))


def tasks(d: int, k: int):
    """``(S_1, S_2)``: ordered pairs inside ``A = [k]`` and the other ordered pairs (Section
    5.5)."""
    pairs = [(i, j) for i in range(d) for j in range(d) if i != j]
    s1 = [(i, j) for i, j in pairs if i < k and j < k]
    return s1, [p for p in pairs if p not in s1]


def margins(a, V, gamma, task_list):
    """``{(i, j, phi_i, phi_j): y g}`` with ``y = phi_i phi_j`` over every task and sign."""
    return {
        (i, j, p, q): p * q * output(a, V, gamma=gamma, i=i, j=j, phi_i=p, phi_j=q)
        for i, j in task_list
        for p, q in SIGNS
    }


def squared_norm(V) -> Fraction:
    """``sum_i ||W^(i)||_F^2 = sum_i ||V^(i)||_F^2`` (``G`` orthonormal), diagonal heads."""
    return sum(x * x for Vk in V for x in Vk)


def task_rate_threshold(d: int, gamma) -> Fraction:
    """Theorem 5.5.1's bound on ``p_T``: ``(1/4 - gamma) / (d(d-1)/2 (1/4 + gamma) + 1/4 -
    gamma)``."""
    g = Fraction(gamma)
    q = Fraction(1, 4)
    return (q - g) / (Fraction(d * (d - 1), 2) * (q + g) + q - g)


def four_heads(d: int, gamma):
    """A four-head network with zero population hinge loss on every ordered task and sign pattern,
    at every ``d >= 2`` (this book's; Theorem 5.5.1 gives ``g_1^*`` four heads for ``k = 2``, with
    margin 0 on some ``S_2`` patterns): ``a = (+1, +1, -1, -1)``,
    ``V^(1) = c (d-1) I``, ``V^(2) = -c (d-1) I``, ``V^(3) = c diag(2l - d - 1)_(l=1..d)``,
    ``V^(4) = -V^(3)``, ``c = 1/(4 gamma)``.

    On a positive pattern (``phi_i = phi_j``) the output is ``(d-1) - |i + j - d - 1| >= 1``; on a
    negative one it is ``-|i - j| <= -1``: margin at least 1 everywhere."""
    if d < 2:
        raise ValueError(f"parameter 'd' = {d} is not allowed: expected d >= 2")
    c = Fraction(1) / (4 * Fraction(gamma))
    ramp = [c * (2 * n - d - 1) for n in range(1, d + 1)]
    V = [[c * (d - 1)] * d, [-c * (d - 1)] * d, ramp, [-x for x in ramp]]
    return [1, 1, -1, -1], V


def rescale_to_margin_one(a, V, gamma, task_list):
    """``(a, V / mu)`` with ``mu`` the smallest margin (> 0 required): the heads are
    1-homogeneous in ``V``, so the result has smallest margin exactly 1."""
    mu = min(margins(a, V, gamma, task_list).values())
    if mu <= 0:
        raise ValueError("the network misclassifies a pattern: it cannot be rescaled")
    return a, [[x / mu for x in Vk] for Vk in V]


def search_small_norm(d, a, *, gamma, steps, generator, lam=1e-4, lr=0.05):
    """Adam on the mean hinge loss over every pattern plus ``lam sum ||V||^2``, over diagonal
    heads with fixed signs ``a`` (float64); returns the diagonals rounded to Fractions
    (denominator <= 1000) for exact re-checking. A search, not a theorem."""
    s1, s2 = tasks(d, 1)
    pats = [(i, j, p, q) for i, j in s2 for p, q in SIGNS]
    idx_i = torch.tensor([t[0] for t in pats])
    idx_j = torch.tensor([t[1] for t in pats])
    pi = torch.tensor([t[2] for t in pats], dtype=torch.float64)
    pj = torch.tensor([t[3] for t in pats], dtype=torch.float64)
    y = pi * pj
    av = torch.tensor(a, dtype=torch.float64)
    V = torch.randn(len(a), d, generator=generator, dtype=torch.float64).requires_grad_()
    opt = torch.optim.Adam([V], lr=lr)
    g2 = 2 * float(gamma)
    for _ in range(steps):
        pre = g2 * (V[:, idx_i] * pi + V[:, idx_j] * pj)  # (heads, patterns)
        out = (av[:, None] * torch.relu(pre)).sum(0)
        loss = torch.relu(1 - y * out).mean() + lam * (V**2).sum()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return [[Fraction(float(x)).limit_denominator(1000) for x in row] for row in V.detach()]


def all_patterns(d):
    """Every ordered pair ``i != j`` (``S_1`` and ``S_2`` together)."""
    return [(i, j) for i, j in itertools.permutations(range(d), 2)]


# -- finite M: Theorem 5.5.2 ---------------------------------------------------------------------
def column_space_rank(V) -> int:
    """Rank of ``D_j``, the matrix whose columns are the heads' diagonals (Theorem 5.5.2)."""
    D = torch.tensor([[float(x) for x in Vk] for Vk in V], dtype=torch.float64).T
    return int(torch.linalg.matrix_rank(D))


def projected_noise(V, M, trials, generator, chunk: int = 2**24) -> torch.Tensor:
    """``||P_D Xi||^2`` for ``Xi = (1/M) sum_l xi_l``, ``xi_l`` uniform on ``{+-1}^d``, ``P_D``
    the orthogonal projector onto the heads' diagonals (a pseudo-inverse: the mirrored heads make
    ``D^T D`` singular, so the source's ``D (D^T D)^{-1} D^T`` is undefined).

    The signs are drawn about ``chunk`` at a time, whole trials in order from the same generator
    (the same draws as one call: the paper preset's 10^6 x 64 x 32 in one call took 16 GB)."""
    D = torch.tensor([[float(x) for x in Vk] for Vk in V], dtype=torch.float64).T
    P = D @ torch.linalg.pinv(D)
    d = D.shape[0]
    step = max(1, chunk // (M * d))  # trials per draw
    parts = []
    for start in range(0, trials, step):
        shape = (min(step, trials - start), M, d)
        xi = torch.randint(0, 2, shape, generator=generator).double() * 2 - 1
        parts.append(xi.mean(1))
    Xi = torch.cat(parts)
    return ((Xi @ P) ** 2).sum(-1)


def sample_hidden(trials, M, d, task, gamma, generator):
    """``phi`` of shape ``(trials, M, d)`` for the task ``(i, j)``: the pair drawn with
    probabilities ``1/4 + gamma, 1/4, 1/4, 1/4 - gamma`` for ``(1,1), (1,-1), (-1,1), (-1,-1)``,
    the rest uniform (Section 5.5)."""
    i, j = task
    phi = torch.randint(0, 2, (trials, M, d), generator=generator).double() * 2 - 1
    probs = torch.tensor([0.25 + gamma, 0.25, 0.25, 0.25 - gamma], dtype=torch.float64)
    k = torch.multinomial(probs, trials * M, replacement=True, generator=generator)
    pairs = torch.tensor(SIGNS, dtype=torch.float64)[k].reshape(trials, M, 2)
    phi[..., i], phi[..., j] = pairs[..., 0], pairs[..., 1]
    return phi


def evaluate(nets, d, *, k, gamma, M, flip, trials, generator):
    """Hinge loss and correctness of each network ``(a, V)`` in ``nets`` on the same prompts: a
    task drawn uniformly from ``S_1``, ``M`` examples whose labels are flipped with probability
    ``flip``, an unflipped query (Theorem 5.5.2's evaluation, plus the flips of Section 5.6).
    Returns ``(hinge, correct)``, each of shape ``(len(nets), trials)``."""
    s1, _ = tasks(d, k)
    which = torch.randint(0, len(s1), (trials,), generator=generator)
    hinge = torch.zeros(len(nets), trials, dtype=torch.float64)
    correct = torch.zeros(len(nets), trials, dtype=torch.float64)
    for t_id in range(len(s1)):
        sel = (which == t_id).nonzero().squeeze(-1)
        if len(sel) == 0:
            continue
        i, j = s1[t_id]
        phi = sample_hidden(len(sel), M + 1, d, (i, j), gamma, generator)
        y = phi[..., i] * phi[..., j]
        flips = torch.rand(len(sel), M, generator=generator, dtype=torch.float64) < flip
        yc = torch.where(flips, -y[:, :M], y[:, :M])
        h = torch.einsum("tm,tmd->td", yc, phi[:, :M]) / M
        q, yq = phi[:, M], y[:, M]
        for n, (a, V) in enumerate(nets):
            Vt = torch.tensor([[float(x) for x in Vk] for Vk in V], dtype=torch.float64)
            at = torch.tensor(a, dtype=torch.float64)
            g = (at[:, None] * torch.relu(torch.einsum("td,hd,td->ht", h, Vt, q))).sum(0)
            hinge[n, sel] = torch.relu(1 - yq * g)
            correct[n, sel] = (torch.sign(g) == yq).double()
    return hinge, correct


def norm_formula(d: int, v: int, gamma) -> Fraction:
    """``sum ||W||_F^2 = v (v+1) d / (8 gamma^2)`` for ``g_j^*`` with ``v = v_j`` (this book's
    evaluation of the construction's norm)."""
    return Fraction(v * (v + 1) * d, 8) / Fraction(gamma) ** 2


def mean_se(x: torch.Tensor) -> tuple[float, float]:
    return float(x.mean()), float(x.std() / math.sqrt(len(x)))


def smaller_norm_search(starts, steps, gamma, generator_for, signs=(-1, -1, 1, -1, -1, 1)):
    """Squared norms of the zero-loss six-head networks at ``d = 4`` found by
    :func:`search_small_norm` from ``starts`` random starts (start ``k`` draws from
    ``generator_for(50 + k)``), each rounded, rescaled to smallest margin exactly 1 and checked in
    exact fractions over all patterns; starts that miss zero loss are left out. The starts go
    through :func:`companions.train.progress` (a dry run makes the first only)."""
    pats = all_patterns(4)
    found = []
    for start in progress(range(starts), desc="small-norm search, starts"):
        V = search_small_norm(
            4, list(signs), gamma=gamma, steps=steps, generator=generator_for(50 + start)
        )
        if min(margins(signs, V, gamma, pats).values()) > 0:
            _, V = rescale_to_margin_one(signs, V, gamma, pats)
            if min(margins(signs, V, gamma, pats).values()) != 1:  # exact
                raise ArithmeticError("rescaled network does not have smallest margin 1")
            found.append(squared_norm(V))
    return found


def behaviour(nets, d, *, k, gamma, eval_m, flips, trials, generator_for):
    """``{(M, f): (hinge, correct, hinge gap, accuracy gap)}``: :func:`evaluate` for every ``M``
    and flip probability ``f`` (cell ``(i, j)`` draws from ``generator_for(100 + 10 i + j)``),
    the two networks on the same prompts, so the gaps are paired: ``hinge[1] - hinge[0]`` and
    ``correct[0] - correct[1]``, each an :class:`~companions.claims.Estimate` (positive: the
    first network, the small one, does better)."""
    out = {}
    for i, M in enumerate(eval_m):
        for j, f in enumerate(flips):
            g = generator_for(100 + 10 * i + j)
            hinge, correct = evaluate(
                nets, d, k=k, gamma=float(gamma), M=M, flip=f, trials=trials, generator=g
            )
            hinge_gap, accuracy_gap = hinge[1] - hinge[0], correct[0] - correct[1]
            out[M, f] = (
                hinge,
                correct,
                Estimate(*mean_se(hinge_gap), len(hinge_gap)),
                Estimate(*mean_se(accuracy_gap), len(accuracy_gap)),
            )
    return out


def constructions(dims, k: int, gamma):
    """Theorem 5.5.1's networks at each ``d`` in ``dims`` (``k`` important features), in exact
    fractions: returns ``(smallest margins, rows)``, the margins of ``g_2^*`` over every task and
    of ``g_1^*`` over ``S_1`` (one pair per ``d``), and a row per ``d``: ``(d, min margin g2*,
    min margin g1* on S1, min margin g1* on S2 (None where ``d = k`` leaves S2 empty), S2
    patterns of g1* below margin 1, S2 patterns, norm g2*, norm g1*, the p_T bound)``."""
    smallest, rows = [], []
    for d in dims:
        a2, V2 = construction(d, gamma)
        a1, V1 = construction_small(k, d, gamma)
        s1, s2 = tasks(d, k)
        m2 = min(margins(a2, V2, gamma, s1 + s2).values())
        m1 = min(margins(a1, V1, gamma, s1).values())
        on_s2 = list(margins(a1, V1, gamma, s2).values())
        below = sum(1 for m in on_s2 if m < 1)
        smallest += [m2, m1]
        norms = (squared_norm(V2), squared_norm(V1))
        rows.append(
            (
                d,
                m2,
                m1,
                min(on_s2, default=None),
                below,
                4 * len(s2),
                *norms,
                task_rate_threshold(d, gamma),
            )
        )
    return smallest, rows
