"""Tests of companions.contrastive.training written against its surviving mutants (issue 23).

Expected values come from loops over runs and pairs (eq (1), the logits and the surrogate written
out), from autograd of ``tau`` times InfoNCE (the gradient the module's docstring says (21) is),
and from a second implementation of the training loop (Algorithm 1, line 7: decoupled weight
decay, then the bias schedule) replaying the same generator's draws in the order the docstring of
:func:`train` gives (dictionaries, initial weights, then one batch per step and one at the end).
"""

from __future__ import annotations

import copy
import math

import pytest
import torch

from companions import losses
from companions.contrastive import data as cd
from companions.contrastive import model as cm
from companions.contrastive import training as tr

F64 = torch.float64


def g(seed=0):
    return torch.Generator().manual_seed(seed)


def _setup(**kw):
    base = dict(d=4, n_maj=2, d1=12, L=3, m=5, K=8, n_neg=3, sigma0=0.3, eta=0.2, lam=0.01)
    base.update(tau=0.5, c_b=0.3, t1_steps=2)
    base.update(kw)
    return tr.Setup(**base)


# -- Setup ----------------------------------------------------------------------------------------


def test_setup_defaults_stated_in_the_docstrings():
    s = tr.Setup()
    # the papers' sizes the class docstring cites: d = 9 with 5 majority features, m = 30,
    # d1 = 500; "all in-batch" negatives n_neg = K - 1; grad_scale "paper" and attention
    # "uniform" are the defaults the module docstrings name; bias on, post_t2 "norm" (its comment)
    assert (s.d, s.n_maj, s.m, s.d1) == (9, 5, 30, 500)
    assert s.n_neg == s.K - 1
    assert (s.grad_scale, s.attention, s.post_t2, s.bias) == ("paper", "uniform", "norm", True)
    # data.py's docstring: p0 = 0.25, mag_low = 0.5, token_q = 1; model.py's: t1_rule "mean"
    assert (s.p0, s.mag_low, s.token_q, s.t1_rule) == (0.25, 0.5, 1.0, "mean")
    assert s.c_tau == 1.0 and s.pooled


@pytest.mark.parametrize(
    "kw, msg",
    [
        (dict(grad_scale="true"), "parameter 'grad_scale' = 'true' is not allowed: "),
        (dict(attention="linear"), "parameter 'attention' = 'linear' is not allowed: "),
        (dict(K=8, n_neg=0), "parameter 'n_neg' = 0 is not allowed: "),
        (dict(K=8, n_neg=8), "parameter 'n_neg' = 8 is not allowed: "),
    ],
)
def test_setup_rejects_bad_choices(kw, msg):
    with pytest.raises(ValueError) as e:
        tr.Setup(**kw)
    full = {
        "grad_scale": msg + "expected 'paper' or 'standard'",
        "attention": msg + "expected 'uniform' or 'softmax'",
        "n_neg": msg + "expected 1 <= n_neg <= K - 1 = 7",
    }[next(iter(set(kw) - {"K"}))]
    assert str(e.value) == full


def test_setup_accepts_the_allowed_choices_and_derives_c_tau():
    for n_neg in (1, 7):
        assert tr.Setup(K=8, n_neg=n_neg).n_neg == n_neg
    paper = tr.Setup(tau=0.25, grad_scale="paper")
    standard = tr.Setup(tau=0.25, grad_scale="standard")
    assert paper.c_tau == 1.0 and standard.c_tau == 4.0  # c_tau = 1 / tau for the true gradient
    assert tr.Setup(attention="softmax").pooled is False
    assert tr.Setup(attention="uniform").pooled is True


# -- logits, info_nce, surrogate ---------------------------------------------------------------


def _feats(seed, R=2, K=6, m=4):
    gen = g(seed)
    return (
        torch.randn(R, K, m, generator=gen, dtype=F64),
        torch.randn(R, K, m, generator=gen, dtype=F64),
    )


def test_logits_by_loops_with_and_without_a_negatives_mask():
    hx, hy = _feats(1)
    for n_neg in (2, 4, 5):  # 4 = K - 2: the last pair left out; 5 = K - 1: no mask
        S = tr.logits(hx, hy, 0.5, n_neg)
        for r in range(2):
            for k in range(6):
                for kk in range(6):
                    inside = (kk - k) % 6 <= n_neg  # the positive and the n_neg next pairs
                    want = float(hx[r, k] @ hy[r, kk]) / 0.5 if inside else -math.inf
                    assert float(S[r, k, kk]) == pytest.approx(want, rel=1e-13)


def test_logits_and_info_nce_stop_the_gradient_at_the_positives():
    hx, hy = _feats(2)
    hx.requires_grad_(True)
    hy.requires_grad_(True)
    tr.logits(hx, hy, 1.0, 2).masked_fill(torch.eye(6, dtype=torch.bool), 0).exp().sum().backward()
    assert hy.grad is None and hx.grad is not None
    hx.grad = None
    tr.info_nce(hx, hy, 1.0, 2).sum().backward()
    assert hy.grad is None and hx.grad is not None


def test_info_nce_by_loops():
    hx, hy = _feats(3)
    for n_neg in (1, 5):
        got = tr.info_nce(hx, hy, 2.0, n_neg)
        for r in range(2):
            total = 0.0
            for k in range(6):
                keys = [(k + o) % 6 for o in range(n_neg + 1)]
                z = [float(hx[r, k] @ hy[r, kk]) / 2.0 for kk in keys]
                total += -(z[0] - math.log(sum(math.exp(v) for v in z)))  # eq (1)
            assert float(got[r]) == pytest.approx(total / 6, rel=1e-12)


def test_surrogate_by_loops_and_its_gradient_is_tau_times_infonces():
    hx, hy = _feats(4)
    P = torch.softmax(torch.randn(2, 6, 6, generator=g(5), dtype=F64), dim=-1)
    got = tr.surrogate(hx, hy, P)
    for r in range(2):
        want = sum(
            (float(P[r, k, kk]) - (k == kk)) * float(hx[r, k] @ hy[r, kk])
            for k in range(6)
            for kk in range(6)
        )
        assert float(got[r]) == pytest.approx(want / 6, rel=1e-12)
    # with P the softmax of this model's logits, d(surrogate)/dhx = tau d(eq (1))/dhx
    tau = 0.5
    a = hx.clone().requires_grad_(True)
    Pm = torch.softmax(a.detach() @ hy.transpose(-1, -2) / tau, dim=-1)
    (ga,) = torch.autograd.grad(tr.surrogate(a, hy, Pm).sum(), a)
    b = hx.clone().requires_grad_(True)
    (gb,) = torch.autograd.grad(tr.info_nce(b, hy, tau, 5).sum(), b)
    assert torch.allclose(ga, tau * gb, atol=1e-13)
    # P and hy are constants of the surrogate
    Pg, hyg = P.clone().requires_grad_(True), hy.clone().requires_grad_(True)
    tr.surrogate(hx.clone().requires_grad_(True), hyg, Pg).sum().backward()
    assert Pg.grad is None and hyg.grad is None


# -- gradient and batch_loss ---------------------------------------------------------------------


def _batch(s, R=2, seed=6):
    gen = g(seed)
    M = cd.dictionary(R, s.d1, s.d, gen)
    probs = cd.activation_probs(torch.full((R, s.d), 0.8, dtype=F64), 1.0)
    sigma = torch.full((R,), 0.1, dtype=F64)
    batch = cd.sample_batch(
        M, probs, sigma=sigma, K=s.K, L=s.L, mag_low=0.5, q=1.0, generator=gen, pooled=s.pooled
    )
    W = cm.init_weights(R, s.m, d1=s.d1, sigma0=0.5, generator=gen)
    b = 0.05 * torch.rand(R, s.m, generator=gen, dtype=F64)
    return W, b, batch


@pytest.mark.parametrize("attention", ["uniform", "softmax"])
@pytest.mark.parametrize("grad_scale", ["paper", "standard"])
def test_gradient_loss_and_positive_probabilities(attention, grad_scale):
    s = _setup(attention=attention, att_scale=0.3, grad_scale=grad_scale)
    W, b, batch = _batch(s)
    grad, loss, p_pos = tr.gradient(W, b, batch, s)
    Wg = W.clone().requires_grad_(True)
    hx = cm.features(Wg, batch.x, b, s.L, 0.3)
    hy = cm.features(W, batch.y, b, s.L, 0.3)
    ell = losses.info_nce(hx, hy, s.tau, n_neg=s.n_neg, stop_grad=True)
    (want,) = torch.autograd.grad(ell.sum(), Wg)
    # "paper": (21) is the gradient of tau * ell; "standard": the gradient of ell (1)
    want = want * (s.tau if grad_scale == "paper" else 1.0)
    assert torch.allclose(grad, want, rtol=1e-10, atol=1e-14)
    assert torch.allclose(loss, ell.detach(), rtol=1e-12)
    S = tr.logits(hx.detach(), hy, s.tau, s.n_neg)
    assert torch.allclose(p_pos, torch.diagonal(torch.softmax(S, -1), dim1=-2, dim2=-1))
    assert p_pos.shape == (2, s.K)
    assert batch_loss_equals(W, b, batch, s, ell)


def batch_loss_equals(W, b, batch, s, ell):
    return torch.allclose(tr.batch_loss(W, b, batch, s), ell.detach(), rtol=1e-12)


def test_gradient_with_a_mask_takes_the_logits_from_the_masked_model():
    s = _setup()
    W, b, batch = _batch(s, seed=7)
    mask = torch.tensor([[1.0, 0.0, 1.0, 1.0, 0.0], [0.0, 1.0, 1.0, 1.0, 1.0]], dtype=F64)
    grad, loss, p_pos = tr.gradient(W, b, batch, s, mask=mask)
    hx_full = cm.features(W, batch.x, b, s.L)
    hy_full = cm.features(W, batch.y, b, s.L)
    hxm, hym = hx_full * mask[:, None, :], hy_full * mask[:, None, :]
    ell_masked = losses.info_nce(hxm, hym, s.tau, n_neg=s.n_neg)
    assert torch.allclose(loss, ell_masked, rtol=1e-12)
    P = torch.softmax(tr.logits(hxm, hym, s.tau, s.n_neg), -1)
    assert torch.allclose(p_pos, torch.diagonal(P, dim1=-2, dim2=-1))
    # eq (5): the masked model's P, the full model's neuron factors
    Wg = W.clone().requires_grad_(True)
    hx = cm.features(Wg, batch.x, b, s.L)
    C = P - torch.eye(s.K, dtype=F64)
    sur = sum(
        float(C[r, k, kk]) * (hx[r, k] @ hy_full[r, kk])
        for r in range(2)
        for k in range(s.K)
        for kk in range(s.K)
    )
    (want,) = torch.autograd.grad(sur / s.K, Wg)
    assert torch.allclose(grad, want, rtol=1e-10, atol=1e-14)


# -- train / resume against a second implementation ---------------------------------------------


def _replay(s, W, M, sched, probs, sigma, t0, steps, gen, log_every, masks=None):
    """Algorithm 1 written out: per step a batch, the gradient of c * InfoNCE (c = tau for the
    paper's convention, 1 for the standard one) by autograd, W <- (1 - eta lam) W - eta g, then
    the bias schedule; the state every log_every steps and a fresh batch's loss at the end."""
    rec = dict(steps=[], A=[], norm=[], noise=[], b=[], loss=[])

    def record(t, loss):
        rec["steps"].append(t)
        rec["A"].append(W @ M)
        rec["norm"].append(W.norm(dim=-1))
        P = torch.eye(s.d1, dtype=F64) - M @ M.transpose(-1, -2)
        rec["noise"].append((W @ P).norm(dim=-1))  # ||P_perp w||, P_perp symmetric
        rec["b"].append(sched.b.clone())
        rec["loss"].append(loss)

    c = s.tau if s.grad_scale == "paper" else 1.0
    for t in range(t0, t0 + steps):
        batch = cd.sample_batch(
            M,
            probs,
            sigma=sigma,
            K=s.K,
            L=s.L,
            mag_low=s.mag_low,
            q=s.token_q,
            generator=gen,
            pooled=s.pooled,
        )
        Wg = W.clone().requires_grad_(True)
        hx = cm.features(Wg, batch.x, sched.b, s.L, s.att_scale)
        hy = cm.features(W, batch.y, sched.b, s.L, s.att_scale)
        mask = None if masks is None else masks(t, W, M)
        if mask is None:
            ell = losses.info_nce(hx, hy, s.tau, n_neg=s.n_neg, stop_grad=True)
            (grad,) = torch.autograd.grad(c * ell.sum(), Wg)
        else:  # eq (5)
            hxm, hym = hx.detach() * mask[:, None, :], hy * mask[:, None, :]
            ell = losses.info_nce(hxm, hym, s.tau, n_neg=s.n_neg)
            P = torch.softmax(tr.logits(hxm, hym, s.tau, s.n_neg), -1)
            C = P - torch.eye(s.K, dtype=F64)
            sur = (C * (hx @ hy.transpose(-1, -2))).sum() / s.K
            (grad,) = torch.autograd.grad(sur * c / s.tau, Wg)
        if (t - t0) % log_every == 0:
            record(t, ell.detach())
        W_new = (1 - s.eta * s.lam) * W - s.eta * grad
        if s.bias:
            sched.update(t, W, W_new, M)
        W = W_new
    batch = cd.sample_batch(
        M,
        probs,
        sigma=sigma,
        K=s.K,
        L=s.L,
        mag_low=s.mag_low,
        q=s.token_q,
        generator=gen,
        pooled=s.pooled,
    )
    hx = cm.features(W, batch.x, sched.b, s.L, s.att_scale)
    hy = cm.features(W, batch.y, sched.b, s.L, s.att_scale)
    record(t0 + steps, losses.info_nce(hx, hy, s.tau, n_neg=s.n_neg))
    return W, sched, {k: (v if k == "steps" else torch.stack(v)) for k, v in rec.items()}


def _compare(h, W, sched, rec):
    assert h.steps.tolist() == rec["steps"]
    for name in ("A", "norm", "noise", "b", "loss"):
        got = getattr(h, name)
        assert got.dtype == torch.float32, name  # the history is float32
        assert torch.allclose(got.double(), rec[name], rtol=1e-5, atol=1e-7), name
    assert torch.allclose(h.W, W, rtol=1e-9, atol=1e-12) and h.W.dtype == F64
    assert torch.allclose(h.b_final, sched.b, rtol=1e-9, atol=1e-14)
    assert h.t1.tolist() == sched.t1.tolist() and h.t2.tolist() == sched.t2.tolist()
    assert torch.equal(h.schedule.stage, sched.stage)


def _start(s, eps_min, nsr, seed, eps_max=None):
    """What train draws first: per-run frequencies, p_j, sigma = sqrt(nsr / d1), then M and W."""
    R = len(eps_min)
    emax = [s.eps_max] * R if eps_max is None else eps_max
    eps = torch.tensor(
        [[emax[r]] * s.n_maj + [float(eps_min[r])] * (s.d - s.n_maj) for r in range(R)], dtype=F64
    )
    probs = (s.p0 * eps).clamp(max=1.0)
    sigma = torch.tensor([math.sqrt(float(v) / s.d1) for v in nsr], dtype=F64)
    gen = g(seed)
    M = cd.dictionary(R, s.d1, s.d, gen)
    W = cm.init_weights(R, s.m, d1=s.d1, sigma0=s.sigma0, generator=gen)
    sched = cm.BiasSchedule(
        R,
        s.m,
        d=s.d,
        eta=s.eta,
        c_b=s.c_b,
        t1_rule=s.t1_rule,
        t1_steps=s.t1_steps,
        post_t2=s.post_t2,
    )
    return eps, probs, sigma, gen, M, W, sched


@pytest.mark.parametrize(
    "kw",
    [
        dict(),
        dict(attention="softmax", att_scale=0.4, grad_scale="standard", n_neg=7),
        dict(bias=False, p0=0.5, mag_low=0.25, post_t2="frozen"),
        dict(t1_steps=0, t1_rule="min", token_q=0.5, attention="softmax", L=2),
    ],
)
def test_train_replays_algorithm_1(kw):
    s = _setup(**kw)
    eps_min, nsr = torch.tensor([0.25, 0.5, 1.0]), torch.tensor([0.5, 0.25, 1.0])
    h = tr.train(s, eps_min, nsr=nsr, steps=7, generator=g(11), progress=False, log_every=3)
    eps, probs, sigma, gen, M, W, sched = _start(s, eps_min, nsr, 11)
    assert torch.equal(h.W0, W) and torch.equal(h.M, M)
    assert torch.allclose(h.eps, eps) and torch.allclose(h.probs, probs)
    assert torch.allclose(h.sigma, sigma, rtol=1e-15)
    W, sched, rec = _replay(s, W, M, sched, probs, sigma, 0, 7, gen, 3)
    assert rec["steps"] == [0, 3, 6, 7]
    _compare(h, W, sched, rec)
    assert h.hooks == []
    # the schedule is built from the Setup's rules
    sc = h.schedule
    assert (sc.t1_rule, sc.t1_steps, sc.post_t2, sc.eta, sc.c_b, sc.d) == (
        s.t1_rule,
        s.t1_steps,
        s.post_t2,
        s.eta,
        s.c_b,
        s.d,
    )
    if not s.bias:
        assert not bool(h.b.any()) and h.t1.tolist() == [-1, -1, -1]


def test_train_replays_stage_2_with_large_steps():
    # T1 at the first step (t1_steps = 1) and large steps: the replay must agree on the bias
    # through Stage 2, where (285) takes the larger of its two branches
    s = _setup(eta=5.0, lam=0.0, t1_steps=1, d=3, n_maj=1, sigma0=0.5, tau=0.25)
    eps_min, nsr = torch.tensor([1.0, 0.5]), torch.tensor([0.01, 0.01])
    h = tr.train(s, eps_min, nsr=nsr, steps=12, generator=g(3), progress=False, log_every=1)
    eps, probs, sigma, gen, M, W, sched = _start(s, eps_min, nsr, 3)
    W, sched, rec = _replay(s, W, M, sched, probs, sigma, 0, 12, gen, 1)
    _compare(h, W, sched, rec)
    assert h.t1.tolist() == [1, 1] and bool((h.b[-1] > h.b[2]).any())


def test_train_takes_a_per_run_eps_max():
    s = _setup()
    eps_min, nsr = torch.tensor([0.25, 0.5]), torch.tensor([0.5, 0.5])
    h = tr.train(
        s,
        eps_min,
        nsr=nsr,
        steps=2,
        generator=g(2),
        progress=False,
        eps_max=torch.tensor([0.75, 0.5]),
    )
    eps, probs, sigma, gen, M, W, sched = _start(s, eps_min, nsr, 2, eps_max=[0.75, 0.5])
    assert torch.allclose(h.eps, eps) and h.eps[0, 0] == 0.75 and h.eps[1, 1] == 0.5
    W, sched, rec = _replay(s, W, M, sched, probs, sigma, 0, 2, gen, 10)
    _compare(h, W, sched, rec)


def test_train_with_a_mask_hook_replays_eq5():
    s = _setup()
    eps_min, nsr = torch.tensor([0.25, 0.5]), torch.tensor([0.5, 0.5])
    seen = []

    def masks(t, W, M):
        seen.append(t)
        if t % 2:
            return None
        return torch.tensor([[1.0, 0.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 0.0, 0.0]], dtype=F64)

    h = tr.train(
        s, eps_min, nsr=nsr, steps=5, generator=g(4), progress=False, log_every=2, masks=masks
    )
    assert seen == [0, 1, 2, 3, 4]
    eps, probs, sigma, gen, M, W, sched = _start(s, eps_min, nsr, 4)
    W, sched, rec = _replay(
        s, W, M, sched, probs, sigma, 0, 5, gen, 2, masks=lambda t, W, M: masks(t, W, M)
    )
    _compare(h, W, sched, rec)


def test_train_rejects_mismatched_runs_and_reports_non_finite_weights():
    s = _setup()
    with pytest.raises(ValueError, match="^eps_min and nsr must have one entry per run$"):
        tr.train(
            s,
            torch.tensor([0.5, 0.5]),
            nsr=torch.tensor([0.5]),
            steps=1,
            generator=g(),
            progress=False,
        )
    blow = _setup(eta=math.inf)  # (1 - eta lam) W - eta g is infinite after the first step
    with pytest.raises(
        FloatingPointError, match=r"^weights became non-finite at step 0: lower 'eta'$"
    ):
        tr.train(
            blow,
            torch.tensor([1.0]),
            nsr=torch.tensor([0.1]),
            steps=3,
            generator=g(),
            progress=False,
        )


def test_draw_on_device_on_the_cpu_changes_nothing():
    # on the CPU the generator is already on the device: no reseeding, the same stream
    s = _setup()
    em, ns = torch.tensor([0.5]), torch.tensor([0.5])
    a = tr.train(s, em, nsr=ns, steps=3, generator=g(8), progress=False, draw_on_device=True)
    b = tr.train(s, em, nsr=ns, steps=3, generator=g(8), progress=False, draw_on_device=False)
    c = tr.train(s, em, nsr=ns, steps=3, generator=g(8), progress=False)
    assert torch.equal(a.W, b.W) and torch.equal(a.W, c.W) and torch.equal(a.loss, b.loss)


def test_resume_replays_from_the_checkpoint():
    s = _setup()
    eps_min, nsr = torch.tensor([0.25, 1.0]), torch.tensor([0.5, 0.25])
    ck = tr.train(s, eps_min, nsr=nsr, steps=7, generator=g(12), progress=False, log_every=3)
    W, M = ck.W.clone(), ck.M.clone()
    sched = copy.deepcopy(ck.schedule)
    h = tr.resume(s, ck, steps=5, generator=g(13), progress=False, log_every=3)
    W, sched, rec = _replay(s, W, M, sched, ck.probs, ck.sigma, 7, 5, g(13), 3)
    assert rec["steps"] == [7, 10, 12]
    _compare(h, W, sched, rec)
    assert torch.equal(h.W0, ck.W0) and torch.equal(h.M, ck.M)
    assert h.eps is ck.eps and h.probs is ck.probs and h.sigma is ck.sigma


def test_resume_refuses_an_unfinished_history():
    msg = (
        r"^parameter 'checkpoint' is not a finished training History "
        r"\(no weights or bias schedule\)$"
    )
    with pytest.raises(ValueError, match=msg):
        tr.resume(_setup(), tr.History(), steps=1, generator=g())
    h = tr.History(W=torch.zeros(1, 1, 1))
    with pytest.raises(ValueError, match=msg):
        tr.resume(_setup(), h, steps=1, generator=g())
    h = tr.History(schedule=cm.BiasSchedule(1, 1, d=4, eta=0.1, c_b=0.3))
    with pytest.raises(ValueError, match=msg):
        tr.resume(_setup(), h, steps=1, generator=g())


# -- progress bar, train_chunked, stage_index ---------------------------------------------------


class _Bar:
    def __init__(self, it, **kw):
        self.it, self.kw, self.closed = it, kw, 0

    def __iter__(self):
        return iter(self.it)

    def close(self):
        self.closed += 1


def _spy(monkeypatch):
    bars = []

    def progress_bar(it, **kw):
        bars.append(_Bar(it, **kw))
        return bars[-1]

    monkeypatch.setattr(tr, "progress_bar", progress_bar)
    return bars


def test_the_progress_bar_covers_the_steps_and_is_closed(monkeypatch):
    bars = _spy(monkeypatch)
    s = _setup()
    tr.train(
        s,
        torch.tensor([0.5]),
        nsr=torch.tensor([0.5]),
        steps=4,
        generator=g(),
        progress=False,
        desc="x",
    )
    tr.train(s, torch.tensor([0.5]), nsr=torch.tensor([0.5]), steps=2, generator=g(), desc="y")
    assert list(bars[0].it) == [0, 1, 2, 3] and bars[0].kw["desc"] == "x"
    assert bars[0].kw["disable"] is True and bars[1].kw["disable"] is False
    assert bars[1].kw["desc"] == "y" and bars[0].closed == 1 and bars[1].closed == 1


def test_train_chunked_names_the_chunks_and_joins_them(monkeypatch):
    bars = _spy(monkeypatch)
    s = _setup()
    em, ns = torch.tensor([0.25, 0.5, 1.0]), torch.tensor([0.5, 0.5, 0.25])
    made = []

    def factory():
        made.append([])
        log = made[-1]

        def hook(t, W, M):
            log.append(t)
            return None

        return hook

    h = tr.train_chunked(
        s,
        em,
        nsr=ns,
        steps=3,
        generator=g(9),
        chunk=2,
        desc="z",
        masks_factory=factory,
        progress=False,
        log_every=2,
    )
    assert [b.kw["desc"] for b in bars] == ["z (runs 0-1)", "z (runs 2-2)"]
    assert [b.kw["disable"] for b in bars] == [True, True]  # train's keywords are passed on
    assert h.steps.tolist() == [0, 2, 3]
    assert made == [[0, 1, 2], [0, 1, 2]] and len(h.hooks) == 2
    whole = tr.train(s, em[:2], nsr=ns[:2], steps=3, generator=g(9), progress=False, log_every=2)
    assert torch.equal(h.W[:2], whole.W) and h.W.shape[0] == 3
    for name in ("t1", "t2", "W0", "M", "b_final", "eps", "probs", "sigma"):
        assert getattr(h, name).shape[0] == 3, name
    for name in ("A", "norm", "noise", "b", "loss"):
        assert getattr(h, name).shape[1] == 3 and torch.equal(
            getattr(h, name)[:, :2], getattr(whole, name)
        ), name
    assert torch.equal(h.schedule.b, h.b_final) and torch.equal(h.steps, whole.steps)
    bars.clear()
    one = tr.train_chunked(
        s,
        em,
        nsr=ns,
        steps=2,
        generator=g(9),
        chunk=5,
        desc="w",
        masks_factory=factory,
        progress=False,
    )
    assert [b.kw["desc"] for b in bars] == ["w"] and len(one.hooks) == 1
    assert one.hooks[0] is not None and one.W.shape[0] == 3
    none = tr.train_chunked(s, em, nsr=ns, steps=1, generator=g(9), chunk=5, progress=False)
    assert none.hooks == [None]


def test_stage_index_by_hand():
    h = tr.History()
    h.steps = torch.tensor([0, 5, 10, 15])
    h.t1 = torch.tensor([5, 6, 15, 0])
    h.t2 = torch.tensor([-1, 20, 11, 3])
    # T at a logged step maps to it; between two, to the next; past the last, to the last
    assert tr.stage_index(h, "t1") == [1, 2, 3, 0]
    assert tr.stage_index(h, "t2", [1, 2, 3]) == [3, 3, 1]
    assert tr.stage_index(h, "t2", torch.tensor([3])) == [1]
    with pytest.raises(ValueError) as e:
        tr.stage_index(h, "t2", [3, 0])
    assert str(e.value) == (
        "runs [0] never reached T2 within 15 steps: raise parameter 'steps' "
        "(or, for T1, lower 'sigma0' less)"
    )
    with pytest.raises(ValueError) as e:
        tr.stage_index(h, "T1")
    assert str(e.value) == "parameter 'which' = 'T1' is not allowed: expected 't1' or 't2'"


def test_history_stack():
    h = tr.History()
    for t in range(3):
        h.steps.append(t)
        for name in ("A", "norm", "noise", "b", "loss"):
            getattr(h, name).append(torch.full((2,), float(t)))
    assert h.stack() is h
    assert torch.equal(h.steps, torch.tensor([0, 1, 2]))
    for name in ("A", "norm", "noise", "b", "loss"):
        assert torch.equal(getattr(h, name), torch.tensor([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]]))


def test_resume_and_train_chunked_default_to_trains_logging_and_bar(monkeypatch):
    # the defaults of resume and train_chunked are train's: a step logged every log_every steps
    # (the same spacing), a bar shown, the same description
    bars = _spy(monkeypatch)
    s = _setup()
    em, ns = torch.tensor([0.5]), torch.tensor([0.5])
    ck = tr.train(s, em, nsr=ns, steps=21, generator=g(1))
    r = tr.resume(s, ck, steps=21, generator=g(2))
    c = tr.train_chunked(s, em, nsr=ns, steps=21, generator=g(1), chunk=4)
    assert (r.steps - 21).tolist() == ck.steps.tolist() == c.steps.tolist()
    assert len(ck.steps) > 2  # more than the first and last step
    assert [b.kw["desc"] for b in bars[1:]] == [bars[0].kw["desc"]] * 2
    assert [b.kw["disable"] for b in bars] == [False] * 3


def test_resume_runs_in_the_checkpoints_weight_dtype():
    # dtype = checkpoint.W.dtype: weights cast to float32 resume in float32, the dictionary
    # follows them (a float64 M against float32 W could not be multiplied)
    s = _setup()
    eps_min, nsr = torch.tensor([0.25, 1.0]), torch.tensor([0.5, 0.25])
    ck = tr.train(s, eps_min, nsr=nsr, steps=4, generator=g(12), progress=False)
    ck32 = copy.copy(ck)
    ck32.W = ck.W.float()
    h = tr.resume(s, ck32, steps=3, generator=g(13), progress=False)
    h64 = tr.resume(s, ck, steps=3, generator=g(13), progress=False)
    assert h.W.dtype == torch.float32 and h64.W.dtype == F64
    assert torch.allclose(h.W.double(), h64.W, rtol=1e-4, atol=1e-5)


def test_train_in_float32_keeps_every_tensor_in_float32():
    # dtype: the dictionaries, the weights and the bias follow it (a float64 M against float32
    # weights could not be multiplied); the trajectory is the float64 one up to rounding
    s = _setup()
    em, ns = torch.tensor([0.25, 1.0]), torch.tensor([0.5, 0.25])
    h = tr.train(s, em, nsr=ns, steps=4, generator=g(5), dtype=torch.float32, progress=False)
    h64 = tr.train(s, em, nsr=ns, steps=4, generator=g(5), progress=False)
    for name in ("W", "W0", "M", "b_final"):
        assert getattr(h, name).dtype == torch.float32, name
        assert torch.allclose(getattr(h, name).double(), getattr(h64, name), rtol=1e-4, atol=1e-5)
