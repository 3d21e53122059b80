"""Measurements on trained first layers: alignment, signal/noise, gradient terms, probes.

``v = sum_{j in A} M_j`` is the ground-truth direction (Lemma 2.5, Figure 2.2); ``q_l = <w, M_l>``.
"""

from __future__ import annotations

import math

import torch

from companions import stats
from companions.emergence import baselines
from companions.emergence.network import (
    Params,
    cosines,
    features,
    gradients,
    smoothed_relu_derivative,
)
from companions.stats import all_of  # noqa: F401 (the chapters call analysis.all_of)


def signal_noise(W: torch.Tensor, dist) -> torch.Tensor:
    """``rho_i = ||P_A w_i|| / ||P_{A^c} w_i||``, with ``P_A`` the projection on
    ``span{M_j : j in A}`` and ``P_{A^c}`` the rest of ``R^d`` (background patterns and the
    orthogonal complement of M)."""
    MA = dist.M[:, list(dist.A)].to(W)
    inside = W @ MA
    rest = (W - inside @ MA.T).norm(dim=1)
    return inside.norm(dim=1) / rest.clamp_min(torch.finfo(W.dtype).tiny)


def step_summary(params: dict[str, Params], dist) -> dict:
    """Per step: max and median ``|cos(w_i, v)|`` and the median signal/noise ratio."""
    v = dist.signal_direction
    out = {}
    for name, p in params.items():
        c = cosines(p.W, v.to(p.W)).abs()
        out[name] = {
            "max_cos": float(c.max()),
            "median_cos": float(c.median()),
            "median_rho": float(signal_noise(p.W, dist).median()),
        }
    return out


def sample_gradient_terms(p: Params, X: torch.Tensor, y: torch.Tensor, dist, s: float) -> dict:
    """The decomposition of Lemma 2.6 on a sample: ``-dL/dw_i = a_i sum_j M_j T_j`` (+ a part
    outside span(M), zero here), so ``T_{ij} = <M_j, -dL/dw_i> / a_i``; and the per-neuron
    ``beta_i = E E_xi I[<phi_{-A}, q_{-A}> + b_i + xi in (0, 1)]`` estimated on the same sample."""
    g = gradients(p, X, y, s)
    M = dist.M.to(X)
    T = -(g.W @ M) / p.a.unsqueeze(1)  # (2m, D)
    A = list(dist.A)
    phi = X @ M  # phi = M^T x
    mask = torch.ones(dist.D, dtype=torch.bool)
    mask[A] = False
    q = p.W @ M  # (2m, D)
    z_minus_A = phi[:, mask] @ q[:, mask].T + p.b
    beta = smoothed_relu_derivative(z_minus_A, s).mean(0)
    return {
        "T_A": T[:, A],
        "T_bg": T[:, mask],
        "beta": beta,
        "unit": float(dist.gamma) / dist.sigma,
    }


def epsilon_e(dist, m: int, delta: float = 0.1) -> float:
    """``epsilon_e`` of Lemma A.9:
    ``(k log^{1/2}(Dm/delta) + log^{3/2}(Dm/delta)) / sqrt(sigma_phi^2 sigma~^2 (D-k))``."""
    L = math.log(dist.D * m / delta)
    sigma_phi2 = float(dist.p_o * (1 - dist.p_o)) / float(dist.sigma2)
    return (dist.k * L**0.5 + L**1.5) / math.sqrt(
        sigma_phi2 * float(dist.sigma2) * (dist.D - dist.k)
    )


def probes(
    p: Params,
    X: torch.Tensor,
    *,
    y: torch.Tensor,
    Xt: torch.Tensor,
    yt: torch.Tensor,
    steps: int,
    batch: int,
    generator: torch.Generator,
    lr: float = 1e-2,
    progress: bool = False,
    desc: str = "probe",
) -> dict:
    """Both readings of "train the best classifiers on top" of a frozen first layer (Section A.7.1):
    ``standardised`` (logistic regression on standardised features) and ``raw`` (the network's
    second layer trained with Adam on the raw features, like the RF baseline). Stacked networks
    and data (a leading axis; ``generator``: a list) give one such dict per network."""
    F, Ft = features(p, X), features(p, Xt)
    a, _ = baselines.train_linear_head(
        F, y, steps=steps, batch=batch, generator=generator, lr=lr, progress=progress, desc=desc
    )
    out_train, out_test = baselines.linear(F, a), baselines.linear(Ft, a)
    if F.dim() == 2:
        return _probe_result(F, y, Ft, yt, out_train, out_test)
    return [_probe_result(*args) for args in zip(F, y, Ft, yt, out_train, out_test)]


def _probe_result(F, y, Ft, yt, out_train, out_test) -> dict:
    raw = {
        "train": float((torch.sign(out_train) == y).double().mean()),
        "test": float((torch.sign(out_test) == yt).double().mean()),
        "output_spread": float(out_test.std()),
    }
    return {"standardised": baselines.standardised_probe(F, y, Ft, yt), "raw": raw}


def decided(values, margin: float = 0.0, direction: str = "above", target: float | None = None):
    """A statistic repeated over seeds, decided against a margin fixed in advance with
    :func:`companions.stats.decide` (Student's t for ``n - 1`` degrees of freedom).

    ``direction='above'``: is the mean above ``margin``; ``'below'``: below ``margin``;
    ``'within'``: is ``|mean - target|`` below ``margin`` (an equivalence test). Returns
    ``(verdict, mean, se, n)`` with ``verdict`` True, False or None (undecided)."""
    mean, se, n = stats.mean_and_se(values)
    if direction == "above":
        verdict = stats.decide(mean, se, n, margin)
    elif direction == "below":
        verdict = stats.decide(-mean, se, n, -margin)
    elif direction == "within":
        if target is None:
            raise ValueError("parameter 'target' is needed with direction='within'")
        verdict = stats.decide(margin - abs(mean - target), se, n, 0.0)
    else:
        raise ValueError(
            f"parameter 'direction' = {direction!r} is not allowed: "
            "expected 'above', 'below' or 'within'"
        )
    return verdict, mean, se, n


def mean_se_text(mean: float, se: float, n: int, digits: int = 4) -> str:
    """``'0.9876 +- 0.0012 (3 seeds)'``."""
    return f"{mean:.{digits}f} +- {se:.{digits}f} ({n} seeds)"


def first_steps_stats(
    d: int,
    D: int,
    *,
    k: int,
    p_o,
    m: int,
    n: int,
    n_test: int,
    schedule: str,
    probe_steps: int,
    seed: int,
    device="cpu",
) -> dict:
    """One seed of the two forgetful steps on a fresh sample of D_A^mix (Section A.7.1): the
    statistics the chapter decides over seeds. Returns the fraction of neurons whose step-1 cosine
    to ``v = sum_A M_j`` has the sign of ``a_i^(0)``, max/median ``|cos|`` after steps 1 and 2, the
    fraction of training points with ``y g^(1) < 1`` (Lemma A.13), the least-squares slope of
    ``mean_{j in A} T_ij / (gamma / sigma~)`` on ``beta_i`` (Lemma 2.6), and both readings of the
    One-Step and Two-Step probes (train and test)."""
    from fractions import Fraction

    from companions.emergence import data as em_data
    from companions.emergence import network as net

    gen = torch.Generator().manual_seed(10 + 1000 * seed)
    dist = em_data.parity_mixture(
        d, D, k=k, p_o=Fraction(p_o).limit_denominator(1000), generator=gen
    )
    x, y, _ = dist.sample(n, gen, device=device)
    xt, yt, _ = dist.sample(n_test, gen, device=device)
    sched = net.schedule(schedule, k, m, dist.sigma, float(dist.gamma), 600)
    p0 = net.symmetric_init(
        m,
        d,
        k=k,
        sigma_tilde=dist.sigma,
        gamma=float(dist.gamma),
        generator=torch.Generator().manual_seed(11 + 1000 * seed),
        device=device,
    )
    p1, p2 = net.first_two_steps(p0, x, y, sched)
    v = dist.signal_direction.to(device)
    cos1, cos2 = cosines(p1.W, v), cosines(p2.W, v)
    terms = sample_gradient_terms(p0, x, y, dist, sched["step1"]["s"])
    ta = terms["T_A"].mean(1) / terms["unit"]
    slope = float((terms["beta"] * ta).sum() / (terms["beta"] ** 2).sum())
    out = {
        "sign_agree": float((torch.sign(cos1) == torch.sign(p0.a)).double().mean()),
        "max_cos1": float(cos1.abs().max()),
        "median_cos1": float(cos1.abs().median()),
        "max_cos2": float(cos2.abs().max()),
        "median_cos2": float(cos2.abs().median()),
        "hinge_active": float((y * net.forward(p1, x, sched["step2"]["s"]) < 1).double().mean()),
        "slope": slope,
    }
    for name, p in (("one", p1), ("two", p2)):
        g = torch.Generator().manual_seed(20 + 1000 * seed + (name == "two"))
        pr = probes(p, x, y=y, Xt=xt, yt=yt, steps=probe_steps, batch=1000, generator=g)
        out[f"{name}_std_test"] = pr["standardised"]["test"]
        out[f"{name}_raw_train"] = pr["raw"]["train"]
        out[f"{name}_raw_test"] = pr["raw"]["test"]
    return out


def lemma_a18_drift(
    d: int,
    D: int,
    *,
    k: int,
    m: int,
    n: int,
    steps: int,
    batch: int,
    seed: int,
    lam: float | None = None,
    device="cpu",
) -> dict:
    """The recursion in the proof of Lemma A.18 on one run of the later steps (A.276): plain SGD
    with ``eta = k^2/(T m^{1/3})``, weight decay ``lam`` on ``a`` and ``W`` (default: the largest
    (A.276) allows, ``k^3/(sigma~ m^{1/3})``), ``sigma_xi = 0``, after the two forgetful steps on
    a fresh D_A^mix. With ``R = max ||x||`` over the sample, every neuron ``i`` and step ``t``
    must satisfy

    * ``|a_i^(t)| <= eta t + |a_i^(2)|`` (A.254),
    * ``||w_i^(t) - w_i^(2)|| <= 2 t eta lam ||w_i^(2)|| + R (eta^2 t (t-1)/2 + t eta |a_i^(2)|)``,
    * ``|b_i^(t) - b_i^(2)| <= eta^2 t (t-1)/2 + t eta |a_i^(2)|``,

    the sums of the per-step increments (A.253), (A.261) and (A.267) (the hinge's derivative and
    ``sigma'`` are at most 1 in absolute value; biases are not regularised). Returns the largest
    ratio left side / right side of each (at most 1 if the bounds hold), the drifts at ``T``, and
    ``ratio_a262``: the largest ratio of ``||w_i^(t) - w_i^(2)||`` to the right side of (A.262) as
    the source prints it, ``2 eta lam ||w_i^(2)|| + eta^2 t^2 + t |a_i^(2)|`` with the source's
    step index ``t`` (the later steps start at ``t = 3``), without the factor ``t`` on the first
    term that the sum of (A.261) gives."""
    from fractions import Fraction

    from companions.emergence import data as em_data
    from companions.emergence import network as net

    gen = torch.Generator().manual_seed(10 + 1000 * seed)
    dist = em_data.parity_mixture(d, D, k=k, p_o=Fraction(1, 2), generator=gen)
    x, y, _ = dist.sample(n, gen, device=device)
    sched = net.schedule("A.214", k, m, dist.sigma, float(dist.gamma), steps)
    p0 = net.symmetric_init(
        m,
        d,
        k=k,
        sigma_tilde=dist.sigma,
        gamma=float(dist.gamma),
        generator=torch.Generator().manual_seed(11 + 1000 * seed),
        device=device,
    )
    _, p2 = net.first_two_steps(p0, x, y, sched)
    eta = sched["late"]["eta"]
    lam = sched["late"]["lam_max"] if lam is None else lam
    if not 0 <= 2 * eta * lam < 1:
        raise ValueError(f"parameter 'lam' = {lam} is not allowed: need 0 <= 2 eta lam < 1")
    R = float(x.norm(dim=1).max())
    a2, w2n = p2.a.abs(), p2.W.norm(dim=1)
    worst = {"a": 0.0, "w": 0.0, "b": 0.0, "a262": 0.0}
    counter = [0]

    def evaluate(p):
        t = counter[0]
        counter[0] += 1
        if t == 0:
            return {}
        lin = t * eta * a2 + eta**2 * t * (t - 1) / 2
        drift_w = (p.W - p2.W).norm(dim=1)
        tt = t + 2  # the source's step index: the later steps start at t = 3
        ratios = {
            "a": p.a.abs() / (eta * t + a2),
            "w": drift_w / (2 * t * eta * lam * w2n + R * lin),
            "b": (p.b - p2.b).abs() / lin,
            "a262": drift_w / (2 * eta * lam * w2n + eta**2 * tt**2 + tt * a2),
        }
        for key, r in ratios.items():
            worst[key] = max(worst[key], float(r.max()))
        return {}

    p, _ = net.train_late(
        p2,
        x,
        y=y,
        steps=steps,
        batch=batch,
        generator=torch.Generator().manual_seed(12 + 1000 * seed),
        optimizer="theory",
        lr=eta,
        lam=lam,
        eval_every=1,
        evaluate=evaluate,
        progress=False,
    )
    return {
        "ratio_a": worst["a"],
        "ratio_w": worst["w"],
        "ratio_b": worst["b"],
        "ratio_a262": worst["a262"],
        "eta": eta,
        "lam": lam,
        "R": R,
        "drift_w": float(((p.W - p2.W).norm(dim=1) / w2n.clamp_min(1e-300)).max()),
        "max_a": float(p.a.abs().max()),
    }
