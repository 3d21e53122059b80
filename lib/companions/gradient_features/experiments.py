"""The measurements the chapters run, batched over seeds.

* :func:`one_step` - the symmetric initialisation (3.9), a training sample, and the first step of
  Algorithm 1 (B.16)-(B.17);
* :func:`nice_fractions` - the fraction of the ``m`` neurons with bias sign ``s`` whose simplified
  gradient vector lies in the cone of a feature with norm ``>= B_G`` (the event of (3.6), measured
  on the neurons of the run: the ``|G_Nice| / m`` of Lemma 3.13);
* :func:`population_fraction` - the same probability from fresh weights and a large independent
  sample (an estimate of ``Pr_w[G(w, b) in C, ||G|| >= B_G]`` of Definition 3.7);
* :func:`compare_methods` - Algorithm 1 against random features, the NTK and a linear model, with
  the same data, optimizer and number of steps.
"""

from __future__ import annotations

import math

import torch

from companions.gradient_features import network as nw


def one_step(
    dist,
    seeds: int,
    m: int,
    n: int,
    sigma_a: float,
    sigma_w: float,
    b_tilde: float,
    eta1: float,
    generator: torch.Generator,
    dtype=torch.float32,
    device="cpu",
):
    """``(net0, net1, X, y)``: the initialisation (3.9) with ``4m`` neurons, ``n`` training points
    per seed, and the network after the first step."""
    net0 = nw.symmetric_init(seeds, m, dist.d, sigma_a, sigma_w, b_tilde, generator, dtype, device)
    X, y = dist.sample(seeds, n, generator, dtype)
    X, y = X.to(device), y.to(device)
    return net0, nw.first_step(net0, X, y, eta1), X, y


def nice_fractions(net0, X, y, D, gammas, B_G: float, m: int, sign: int = 1):
    """Per cone width, seed and feature, the fraction of the ``m`` neurons with
    ``b_i / |b_i| = sign`` (neurons ``1..m`` for ``+1``, ``m+1..2m`` for ``-1`` in (3.9)) whose
    ``G~(w_i^(0), b_i)`` is in ``C_{D_j, gamma}`` with norm ``>= B_G``: shape (len(gammas), S, r).
    The simplified gradient vectors are computed once for every ``gamma``."""
    if sign not in (1, -1):
        raise ValueError(f"parameter 'sign' = {sign} is not allowed: it must be +1 or -1")
    block = slice(0, m) if sign == 1 else slice(m, 2 * m)
    G = nw.simplified_gradient(net0.W[:, block], net0.b[:, block], X, y)
    D = D.to(G.dtype)
    return torch.stack([nw.feature_hits(G, D, g, B_G).to(torch.float64).mean(1) for g in gammas])


def population_fraction(
    dist,
    D,
    gammas,
    B_G: float,
    sigma_w: float,
    b_tilde: float,
    neurons: int,
    n: int,
    generator: torch.Generator,
    chunk: int = 512,
):
    """``Pr_w[G(w, b~) in C_{D_j, gamma}, ||G(w, b~)|| >= B_G]`` for ``w ~ N(0, sigma_w^2 I)``,
    estimated with ``neurons`` fresh weights and ``n`` fresh points (float64), for every cone
    width: shape (len(gammas), r), and the binomial standard errors."""
    X, y = dist.sample(1, n, generator, torch.float64)
    hits = []
    for start in range(0, neurons, chunk):
        size = min(chunk, neurons - start)
        W = torch.randn(1, size, dist.d, generator=generator, dtype=torch.float64) * sigma_w
        b = torch.full((1, size), float(b_tilde), dtype=torch.float64)
        G = nw.simplified_gradient(W, b, X, y)
        hits.append(torch.stack([nw.feature_hits(G, D.double(), g, B_G)[0] for g in gammas]))
    p = torch.cat(hits, 1).to(torch.float64).mean(1)
    return p, (p * (1 - p) / neurons).sqrt()


def compare_methods(
    dist,
    seeds: int,
    m: int,
    n: int,
    n_test: int,
    sigma_a: float,
    sigma_w: float,
    b_tilde: float,
    eta1: float,
    steps: int,
    lr: float,
    batch: int,
    generator: torch.Generator,
    dtype=torch.float32,
    device="cpu",
) -> dict:
    """Test accuracy (per seed, shape (S,)) of: ``network`` (Algorithm 1: the first step, then
    Adam on ``a`` and ``W``), ``frozen`` (the first step, then ``a`` only: Theorem 3.4's setting),
    ``rf`` (random features: ``W^(0)`` frozen, ``a`` trained from 0), ``ntk`` (the network
    linearised at ``W^(0)``) and ``linear``; every method sees the same data, steps and
    optimizer."""
    net0, net1, X, y = one_step(
        dist, seeds, m, n, sigma_a, sigma_w, b_tilde, eta1, generator, dtype, device
    )
    Xt, yt = dist.sample(seeds, n_test, generator, dtype)
    Xt, yt = Xt.to(device), yt.to(device)
    kw = dict(batch=batch, generator=generator)
    out = {}
    trained = nw.train(net1, X, y, steps, lr, True, "adam", **kw)
    out["network"] = nw.accuracy(nw.forward(trained, Xt), yt)
    frozen = nw.train(net1, X, y, steps, lr, False, "adam", **kw)
    out["frozen"] = nw.accuracy(nw.forward(frozen, Xt), yt)
    rf0 = nw.Net(torch.zeros_like(net0.a), net0.W, net0.b)
    rf = nw.train(rf0, X, y, steps, lr, False, "adam", **kw)
    out["rf"] = nw.accuracy(nw.forward(rf, Xt), yt)
    ntk = nw.train_ntk(net0, X, y, steps, lr, **kw)
    out["ntk"] = nw.accuracy(ntk(Xt), yt)
    lin = nw.train_linear(X, y, steps, lr, **kw)
    out["linear"] = nw.accuracy(lin(Xt), yt)
    return {k: v.cpu() for k, v in out.items()}


def equivalence(diff_mean: float, diff_se: float, n: int, margin: float, decide) -> bool | None:
    """Whether a difference is within ``+-margin`` (True), outside it (False) or undecided (None),
    from ``companions.stats.decide`` applied to both signs (``margin`` fixed in advance)."""
    above = decide(diff_mean, diff_se, n, margin)
    below = decide(-diff_mean, diff_se, n, margin)
    if above or below:
        return False
    if above is False and below is False:
        return True
    return None


def log10_or_floor(x: float, floor: float = -300.0) -> float:
    return math.log10(x) if x > 0 else floor


def rademacher(features: torch.Tensor, B: float, draws: int, generator: torch.Generator):
    """Monte Carlo estimate of the empirical Rademacher complexity of ``{x -> <a, F(x)>:
    ||a|| <= B}`` on features ``F`` (n, N): ``(B/n) E_eps ||sum_l eps_l F(x_l)||`` (the supremum
    over the ball is attained at ``a`` along the sum), with its standard error."""
    n = features.shape[0]
    eps = 2.0 * torch.randint(0, 2, (draws, n), generator=generator).to(features.dtype) - 1
    vals = (eps @ features).norm(dim=1) * B / n
    return float(vals.mean()), float(vals.std() / math.sqrt(draws))


def rademacher_bound(W: torch.Tensor, b: torch.Tensor, B: float, B_x: float, n: int) -> float:
    """(B.595), Lemma B.78: ``sqrt(B^2 (||W||_F^2 B_x^2 + ||b||^2) / n)``."""
    return math.sqrt(B**2 * (float(W.pow(2).sum()) * B_x**2 + float(b.pow(2).sum())) / n)


def expected_yx(mixture) -> torch.Tensor:
    """``E[y x] = sum_j q_j y_(j) mu_j`` of a Gaussian mixture (the noise has mean zero)."""
    return (mixture.weights[:, None] * mixture.labels[:, None] * mixture.means).sum(0)


def uniform_parity_init(
    seeds: int, m: int, d: int, k: int, generator: torch.Generator, dtype=torch.float32
) -> nw.Net:
    """(B.479) inside the symmetric pattern of (3.9) (Algorithm 6): for ``i <= m``,
    ``a_i ~ Unif{+-1}``, ``w_i ~ Unif{+-1}^d``, ``b_i ~ Unif{-1 + 1/k, ..., 1 - 1/k}`` (step
    ``1/k``); neurons ``m+1..2m`` are ``(-a, -w, -b)`` and ``2m+1..4m`` are ``(-a, w, b)``."""
    if k < 1:
        raise ValueError(f"parameter 'k' = {k} is not allowed: it must be >= 1")
    a = 2.0 * torch.randint(0, 2, (seeds, m), generator=generator).double() - 1
    W = 2.0 * torch.randint(0, 2, (seeds, m, d), generator=generator).double() - 1
    b = (torch.randint(0, 2 * k - 1, (seeds, m), generator=generator).double() - (k - 1)) / k
    a, W, b = torch.cat([a, -a], 1), torch.cat([W, -W], 1), torch.cat([b, -b], 1)
    a, W, b = torch.cat([a, -a], 1), torch.cat([W, W], 1), torch.cat([b, b], 1)
    return nw.Net(a.to(dtype), W.to(dtype), b.to(dtype))


def uniform_parity_run(
    d: int,
    k: int,
    seeds: int,
    m: int,
    n: int,
    n_test: int,
    steps: int,
    lr: float,
    batch: int,
    generator: torch.Generator,
    eta1: float,
    dtype=torch.float32,
    device="cpu",
) -> dict:
    """Algorithm 6 on uniform parity: one step with ``lambda = 1/eta1`` on ``n`` samples, then the
    second layer only (Adam), against random features (``W^(0)`` frozen). Returns per-seed test
    accuracies and, per seed, the mean ``|w^(1)_j|`` over ``j in A`` and over ``j not in A``."""
    from companions.gradient_features import data as gdata

    dist = gdata.uniform_parity(d, k)
    net0 = uniform_parity_init(seeds, m, d, k, generator, dtype)
    net0 = nw.Net(net0.a.to(device), net0.W.to(device), net0.b.to(device))
    X, y = dist.sample(seeds, n, generator, dtype)
    Xt, yt = dist.sample(seeds, n_test, generator, dtype)
    X, y, Xt, yt = X.to(device), y.to(device), Xt.to(device), yt.to(device)
    net1 = nw.first_step(net0, X, y, eta1)
    kw = dict(batch=batch, generator=generator)
    one = nw.train(net1, X, y, steps, lr, False, "adam", **kw)
    rf = nw.train(
        nw.Net(torch.zeros_like(net0.a), net0.W, net0.b), X, y, steps, lr, False, "adam", **kw
    )
    W1 = net1.W.abs()
    return {
        "network": nw.accuracy(nw.forward(one, Xt), yt).cpu(),
        "rf": nw.accuracy(nw.forward(rf, Xt), yt).cpu(),
        "w_in_A": W1[..., :k].mean((1, 2)).cpu(),
        "w_out_A": W1[..., k:].mean((1, 2)).cpu(),
    }


def multi_index_alignment(d: int, n: int, seeds: int, m: int, generator: torch.Generator) -> dict:
    """Algorithm 7's first step on the multiple-index example (float64): ``x ~ N(0, I_d)``, labels
    de-meaned and de-linearised with their sample mean and ``E^[y x]``, ``a ~ Unif{+-1}``,
    ``w ~ N(0, I/d)``, ``b = 0``, square loss. With ``lambda = 1/eta`` the step gives ``w^(1) =
    eta a G~(w, 0)`` (the square loss at ``f = 0`` has ``-(f - y) = y``), so the direction of
    ``w^(1)`` is that of ``G~``. Returns per seed the mean of ``||P_U w|| / ||w||`` over neurons at
    initialisation and after the step."""
    from companions.gradient_features import theory

    X = torch.randn(seeds, n, d, generator=generator, dtype=torch.float64)
    y = theory.multi_index_label(X)
    beta = torch.einsum("sn,snd->sd", y, X) / n
    y = y - y.mean(1, keepdim=True) - torch.einsum("snd,sd->sn", X, beta)
    W = torch.randn(seeds, m, d, generator=generator, dtype=torch.float64) / math.sqrt(d)
    b = torch.zeros(seeds, m, dtype=torch.float64)
    G = nw.simplified_gradient(W, b, X, y)

    def frac(V):
        return (V[..., :2].norm(dim=-1) / V.norm(dim=-1)).mean(1)

    return {"init": frac(W), "step": frac(G)}
