"""The six methods of Section A.7.1 on one data set, as the source runs them (Tables A.1-A.5).

Network: symmetric init, the two large-weight-decay steps on the full training set, then
``steps`` minibatch steps (batch 1000 in the source) with the practical optimizer (Adam) or the
theory's SGD rate ``k^2/(T m^{1/3})`` (A.276). RF and NTK: the same init, trained for the same
number of steps with Adam. One Step / Two Step: probes on the first layer after step 1 / step 2.
"Cos Similarity" is ``max_i cos(w_i, sum_{j in A} M_j)`` over the 2m neurons.
"""

from __future__ import annotations

import torch

from companions.emergence import analysis, baselines
from companions.emergence import network as net

METHODS = ("network", "network-theory", "rf", "ntk", "one-step", "two-step")


def _acc(out: torch.Tensor, y: torch.Tensor) -> float:
    return float((torch.sign(out) == y).double().mean())


def run_methods(dist, x, y, evals: dict, m: int, steps: int, batch: int, generator_seed: int,
                schedule: str = "A.214", methods=METHODS, lr: float = 1e-2, eval_every: int = 10,
                progress: bool = True, probe_steps: int | None = None, gamma: float | None = None) -> dict:
    """Run ``methods`` on the training set ``(x, y)``; ``evals`` maps names to ``(x, y)`` evaluation sets
    (the first is "test"). ``gamma`` overrides the gamma used by the initialisation and schedule (needed
    without input structure, where gamma = 0). Returns, per method, final accuracies per evaluation
    set and the training set, a test-accuracy curve, and the max cosine to ``sum_A M_j``."""
    device, dtype = x.device, x.dtype
    gamma = float(dist.gamma) if gamma is None else gamma
    sigma = dist.sigma
    gen = torch.Generator().manual_seed(generator_seed)
    p0 = net.symmetric_init(m, dist.d, dist.k, sigma, gamma, gen, dtype=dtype, device=device)
    sched = net.schedule(schedule, dist.k, m, sigma, gamma, steps)
    p1, p2 = net.first_two_steps(p0, x, y, sched)
    v = dist.signal_direction.to(device=device, dtype=dtype)
    first = next(iter(evals))
    out: dict = {"schedule": sched}

    def max_cos(W):
        return float(net.cosines(W, v).max())

    def finals(fn):
        res = {name: _acc(fn(xe), ye) for name, (xe, ye) in evals.items()}
        res["train"] = _acc(fn(x), y)
        return res

    for method in methods:
        g = torch.Generator().manual_seed(generator_seed + 1 + METHODS.index(method))
        if method in ("network", "network-theory"):
            theory = method == "network-theory"
            xe, ye = evals[first]
            p, hist = net.train_late(p2, x, y, steps, batch, g, optimizer="theory" if theory else "adam",
                                     lr=sched["late"]["eta"] if theory else lr, eval_every=eval_every,
                                     evaluate=lambda q: {"test": net.accuracy(q, xe, ye)}, desc=method, progress=progress)
            res = finals(lambda X: net.forward(p, X))
            res.update(curve=hist, cos=max_cos(p.W), params=p)
        elif method == "rf":
            F = net.features(p0, x)
            xe, ye = evals[first]
            Fe = net.features(p0, xe)
            a, hist = baselines.train_linear_head(F, y, steps, batch, g, lr=lr, eval_every=eval_every, desc="RF",
                                                  evaluate=lambda a: {"test": _acc(Fe @ a, ye)}, progress=progress)
            res = finals(lambda X: net.features(p0, X) @ a)
            res.update(curve=hist, cos=max_cos(p0.W), head_norm=float(a.norm()))
        elif method == "ntk":
            xe, ye = evals[first]
            model, hist = baselines.train_ntk(p0, x, y, steps, batch, g, lr=lr, eval_every=eval_every,
                                              evaluate=lambda mod: {"test": _acc(mod(xe), ye)}, progress=progress)
            with torch.no_grad():
                res = finals(model)
            res.update(curve=hist, cos=float("nan"))
        elif method in ("one-step", "two-step"):
            p = p1 if method == "one-step" else p2
            F = net.features(p, x)
            mean, std = F.mean(0), F.std(0)
            keep = std > 1e-300
            xe, ye = evals[first]
            r = baselines.standardised_probe(F, y, net.features(p, xe), ye)
            res = {"train": r["train"], first: r["test"]}
            for name, (xo, yo) in list(evals.items())[1:]:
                res[name] = baselines.standardised_probe(F, y, net.features(p, xo), yo)["test"]
            if probe_steps:
                raw = analysis.probes(p, x, y, xe, ye, probe_steps, batch, g)["raw"]
                res["raw_train"], res["raw_test"] = raw["train"], raw["test"]
            res.update(cos=max_cos(p.W), kept=int(keep.sum()))
        else:
            raise ValueError(f"parameter 'methods' has {method!r}: expected items of {METHODS}")
        out[method] = res
    out["p0"], out["p1"], out["p2"] = p0, p1, p2
    return out
