"""Tests of companions.fine_labels.training written against its surviving mutants (issue 23).

Every expected value is computed here independently: closed forms (eq. 17), the masks of
Theorems F.1 / G.1 built from the features' names, and a step-by-step replay of the training loop
with plain loops over seeds, neurons and features.
"""

import math

import pytest
import torch

from companions.fine_labels import data as fdata
from companions.fine_labels import experiments as fx
from companions.fine_labels import model as fmodel
from companions.fine_labels import training as ftrain

K = 2
DC = fdata.DataConfig(d=8, k=K, P=6, s_star=2, sigma_zeta=0.3, s_dagger=1, sigma_star=0.5)
F64 = torch.float64


def g(seed=0):
    return torch.Generator().manual_seed(seed)


def coarse(y, c, g):
    return y


# -- eq. (17) and the step -------------------------------------------------------------------------
def test_label_dL_dF_is_softmax_minus_onehot_over_N():
    F = torch.randn(2, 3, 4, generator=g(1), dtype=F64)
    lab = torch.tensor([[0, 3, 1], [2, 2, 0]])
    got = ftrain.label_dL_dF(lambda f: f, F, lab)
    want = (torch.softmax(F, -1) - torch.nn.functional.one_hot(lab, 4)) / 3  # eq. (17), N = 3
    assert torch.allclose(got, want, atol=1e-12)
    # through scores 2 F the chain rule doubles the gradient of the softmax at 2 F
    got2 = ftrain.label_dL_dF(lambda f: 2 * f, F, lab)
    want2 = 2 * (torch.softmax(2 * F, -1) - torch.nn.functional.one_hot(lab, 4)) / 3
    assert torch.allclose(got2, want2, atol=1e-12)


@pytest.mark.parametrize("eta, lam", [(0.0, 1.0), (-0.1, 1.0), (0.1, 0.0), (0.1, -2.0)])
def test_sgd_step_rejects_non_positive_rates(eta, lam):
    net = fmodel.init(1, 2, m=2, d=8, sigma0=0.5, tau=0.1, g=g())
    X = torch.randn(1, 2, 6, 8, generator=g(1))
    with pytest.raises(ValueError, match="'eta' = .* and 'lam_b' = .* must be positive"):
        ftrain.sgd_step(net, X, labels=torch.tensor([[0, 1]]), eta=eta, lam_b=lam)


def test_sgd_step_returns_F_before_the_step_and_calls_before_update_first():
    net = fmodel.init(2, 4, m=3, d=8, sigma0=0.5, tau=0.1, g=g(2), dtype=F64)
    X = torch.randn(2, 4, 6, 8, generator=g(3), dtype=F64)
    lab = torch.tensor([[0, 1, 2, 3], [3, 2, 1, 0]])
    W_old = net.W.clone()
    want = fmodel.forward(net, X)  # eq. (176) at the old weights
    seen = []
    ftrain_F = ftrain.sgd_step(
        net,
        X,
        labels=lab,
        eta=0.5,
        lam_b=2.0,
        before_update=lambda F: seen.append((F.clone(), net.W.clone())),
    )
    assert torch.allclose(ftrain_F, want, atol=1e-12)
    assert len(seen) == 1
    assert torch.allclose(seen[0][0], want, atol=1e-12)
    assert torch.equal(seen[0][1], W_old)
    assert not torch.equal(net.W, W_old)


# -- Theorem F.1 point 3 / Theorem G.1 ----------------------------------------------------------
def names(k):
    """Feature index -> (superclass, subclass or None): v+, v-, v+c..., v-c... (data.py)."""
    return [(0, None), (1, None)] + [(y, c) for y in (0, 1) for c in range(k)]


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_off_diagonal_mask_from_the_features_names(k):
    coarse_m = ftrain.off_diagonal_mask(2, k)
    assert coarse_m.shape == (2, 2 + 2 * k) and coarse_m.dtype == torch.bool
    for o in range(2):
        assert coarse_m[o].tolist() == [y != o for y, _ in names(k)]
    fine_m = ftrain.off_diagonal_mask(2 * k, k)
    assert fine_m.shape == (2 * k, 2 + 2 * k)
    for o in range(2 * k):
        yo, co = o // k, o % k
        want = [y != yo or (c is not None and c != co) for y, c in names(k)]
        assert fine_m[o].tolist() == want


def test_off_diagonal_mask_names_a_bad_C():
    with pytest.raises(ValueError, match=r"'C' = 4 is not allowed: expected 2 or 2k = 6"):
        ftrain.off_diagonal_mask(4, 3)


# -- scores and evaluation ------------------------------------------------------------------------
def test_coarse_scores_default_is_the_max():
    F = torch.tensor([[[0.0, 5.0, 1.0, 3.0]]])
    assert ftrain.coarse_scores(F).tolist() == [[[5.0, 3.0]]]
    assert ftrain.coarse_scores(F, "sum").tolist() == [[[5.0, 4.0]]]
    F6 = torch.arange(6.0).reshape(1, 1, 6)  # k = 3: groups (0, 1, 2) and (3, 4, 5)
    assert ftrain.coarse_scores(F6).tolist() == [[[2.0, 5.0]]]
    # two samples of a fine model: the samples axis must not be mistaken for the outputs
    F2 = torch.tensor([[[0.0, 5.0, 1.0, 3.0], [4.0, 1.0, 0.0, 2.0]]])
    assert ftrain.coarse_scores(F2).tolist() == [[[5.0, 3.0], [4.0, 2.0]]]
    # a coarse model is its own score, whatever the aggregation
    assert ftrain.coarse_scores(F2[..., :2], "no such rule").tolist() == [[[0.0, 5.0], [4.0, 1.0]]]
    with pytest.raises(ValueError, match="3 outputs"):  # an odd count has no two superclasses
        ftrain.coarse_scores(torch.zeros(1, 1, 3))


def test_evaluate_reads_each_set_through_how():
    net = fmodel.init(2, 4, m=2, d=8, sigma0=0.7, tau=0.1, g=g(4))
    tests = {}
    for i, name in enumerate(("easy", "hard")):
        X, y, _ = fdata.sample(DC, 2, 8, name == "hard", g(10 + i))
        tests[name] = (X, y)
    for how in ("max", "sum"):
        acc, sc = ftrain.evaluate(net, tests, how, scores=True)
        assert set(acc) == set(sc) == {"easy", "hard"}
        for name, (X, y) in tests.items():
            F = fmodel.forward(net, X)
            G = F.reshape(2, 8, 2, 2)
            want_sc = G.amax(-1) if how == "max" else G.sum(-1)
            assert torch.allclose(sc[name], want_sc)
            right = want_sc.gather(-1, y[..., None])[..., 0]
            want_acc = (right > want_sc.gather(-1, 1 - y[..., None])[..., 0]).double().mean(-1)
            assert torch.allclose(acc[name].double(), want_acc)
    plain = ftrain.evaluate(net, tests)
    assert isinstance(plain, dict) and set(plain) == {"easy", "hard"}
    assert torch.equal(plain["easy"], ftrain.evaluate(net, tests, "max")["easy"])


# -- train: arguments and one log at t = 0 ---------------------------------------------------------
def small_net(C, seed=0, dtype=F64, m=3):
    return fmodel.init(2, C, m=m, d=DC.d, sigma0=0.6, tau=0.5, g=g(seed), dtype=dtype)


def make_tests(seed=20, n=8, dtype=F64):
    tests = {}
    for i, name in enumerate(("easy", "hard")):
        X, y, _ = fdata.sample(DC, 2, n, name == "hard", g(seed + i), dtype=dtype)
        tests[name] = (X, y)
    return tests


@pytest.mark.parametrize("steps, N", [(-1, 4), (3, 0)])
def test_train_rejects_bad_steps_and_N(steps, N):
    with pytest.raises(ValueError, match="'steps' = .* and 'N' = .* must be >= 0 and >= 1"):
        ftrain.train(
            small_net(2),
            DC,
            steps=steps,
            N=N,
            eta=0.1,
            lam_b=1.0,
            labels_of=coarse,
            g=g(),
            log_times=[0],
            tests=make_tests(),
            tau_sigma0=0.3,
            delta=0.1,
        )


@pytest.mark.parametrize("log_times", [[], [-1, 4], [5]])
def test_train_names_log_times_without_a_time_in_range(log_times):
    with pytest.raises(ValueError) as err:
        ftrain.train(
            small_net(2),
            DC,
            steps=3,
            N=2,
            eta=0.1,
            lam_b=1.0,
            labels_of=coarse,
            g=g(),
            log_times=log_times,
            tests=make_tests(),
            tau_sigma0=0.3,
            delta=0.1,
        )
    assert str(err.value) == (
        f"parameter 'log_times' = {log_times!r} has no time in [0, steps = 3]: "
        "nothing would be logged"
    )


def test_train_logs_only_the_times_in_range_each_once():
    h = ftrain.train(
        small_net(2),
        DC,
        steps=2,
        N=4,
        eta=0.1,
        lam_b=1.0,
        labels_of=coarse,
        g=g(),
        log_times=(3, 2, -1, 2),
        tests=make_tests(),
        tau_sigma0=0.3,
        delta=0.1,
    )
    assert h["t"].tolist() == [2]


def test_train_accepts_zero_steps_and_one_sample():
    h = ftrain.train(
        small_net(2),
        DC,
        steps=0,
        N=1,
        eta=0.1,
        lam_b=1.0,
        labels_of=coarse,
        g=g(),
        log_times=[0],
        tests=make_tests(),
        tau_sigma0=0.3,
        delta=0.1,
    )
    assert h["t"].tolist() == [0]


def log_by_hand(W, b, W0, b0, C, m, tau_sigma0, delta, tests, noise_W_draw, how="max", off=None):
    """Every logged quantity of train at one time, with loops (S = 2, features 2 + 2k)."""
    S, M, d = W.shape
    nf = 2 + 2 * K
    det = W0[:, :, :nf] >= tau_sigma0 + delta
    det_low = W0[:, :, :nf] >= tau_sigma0 - delta
    A = torch.full((S, C, nf), math.nan, dtype=W.dtype)
    R = torch.zeros(S, C, nf, dtype=W.dtype)
    nonact = torch.zeros(S, dtype=torch.long)
    offdiag = torch.full((S,), -math.inf, dtype=W.dtype)
    for s in range(S):
        for o in range(C):
            for f in range(nf):
                rows = range(o * m, o * m + m)
                ds = [float(W[s, r, f] - W0[s, r, f]) for r in rows if det[s, r, f]]
                if ds:
                    A[s, o, f] = sum(ds) / len(ds)
                R[s, o, f] = sum(max(float(W[s, r, f] + b[s, r]), 0.0) for r in rows)
                gain = max(
                    max(float(W[s, r, f] + b[s, r]), 0.0) - max(float(W0[s, r, f] + b0[s, r]), 0.0)
                    for r in rows
                )
                if off is not None and off[o, f]:
                    offdiag[s] = max(float(offdiag[s]), gain)
        for r in range(M):
            for f in range(nf):
                nonact[s] += bool(W[s, r, f] + b[s, r] > 0) and not bool(det_low[s, r, f])
    zeta = noise_W_draw
    noise = torch.tensor([int(((zeta[s] @ W[s].T + b[s]) > 0).sum()) for s in range(S)])
    net = fmodel.Net(W, b, C, m)
    acc, margin = {}, None
    for name, (X, y) in tests.items():
        F = fmodel.forward(net, X)
        sc = F if C == 2 else fmodel.aggregate(F, C // 2, how)
        right = sc.gather(-1, y[..., None])[..., 0]
        wrong = sc.gather(-1, 1 - y[..., None])[..., 0]  # two superclasses: the other one
        acc[name] = (right > wrong).double().mean(-1)
        if name == "easy":
            margin = right - wrong
    return dict(
        det=det,
        det_low=det_low,
        A=A,
        R=R,
        nonact=nonact,
        offdiag=offdiag,
        noise=noise,
        acc=acc,
        margin=margin,
        bias=b.mean(-1),
    )


@pytest.mark.parametrize(
    "C, how, with_scores_fn",
    [(2, "max", False), (4, "max", False), (4, "sum", False), (4, "max", True)],
)
def test_train_log_at_t0_matches_a_hand_computation(C, how, with_scores_fn):
    net = small_net(C, seed=5)
    net.W[0, 1] = 0.0  # a neuron whose every pre-activation is exactly 0: relu'(0) = 0 counts as
    net.b[0, 1] = 0.0  # inactive (the strict '> 0' of nonact and noise)
    W, b = net.W.clone(), net.b.clone()
    # a start that differs from the current weights, so that growth and gains are not zero
    W0 = W + 0.4 * torch.randn(W.shape, generator=g(6), dtype=F64)
    b0 = b - 0.2
    tests = make_tests()
    tau_sigma0, delta = 0.3, 0.2
    sfn = (lambda F: fmodel.aggregate(F, C // 2, "max")) if with_scores_fn else None
    h = ftrain.train(
        net,
        DC,
        steps=0,
        N=4,
        eta=0.1,
        lam_b=1.0,
        labels_of=coarse,
        g=g(7),
        log_times=[0, 3, -1],
        tests=tests,
        tau_sigma0=tau_sigma0,
        delta=delta,
        scores_fn=sfn,
        how=how,
        W0=W0,
        b0=b0,
    )
    zeta = torch.randn(2, 256, DC.d, generator=g(7), dtype=F64) * DC.sigma_zeta  # n_noise = 256
    off = None if with_scores_fn else ftrain.off_diagonal_mask(C, K)
    want = log_by_hand(W, b, W0, b0, C, 3, tau_sigma0, delta, tests, zeta, how, off)
    assert h["t"].tolist() == [0]
    assert h["W0"] is W0 and h["b0"] is b0
    assert torch.equal(h["det"], want["det"]) and torch.equal(h["det_low"], want["det_low"])
    assert h["A"].shape == (1, 2, C, 2 + 2 * K)
    assert torch.allclose(h["A"][0], want["A"], equal_nan=True)
    assert torch.allclose(h["R"][0], want["R"])
    assert torch.equal(h["nonact"][0], want["nonact"])
    assert torch.equal(h["noise"][0], want["noise"]) and int(want["noise"].sum()) > 0
    assert torch.allclose(h["offdiag"][0], want["offdiag"])
    if not with_scores_fn:
        assert bool(torch.isfinite(want["offdiag"]).all())
    assert torch.allclose(h["bias"][0], want["bias"])
    assert torch.allclose(h["margin"][0], want["margin"])
    for key in ("A", "R", "nonact", "noise", "offdiag", "bias", "margin"):
        assert h[key][0].shape == want[key].shape, key
    for name in ("easy", "hard"):
        assert torch.allclose(h["acc"][name][0].double(), want["acc"][name])
    assert h["T0"].tolist() == [-1, -1]
    assert all(math.isnan(float(v)) for v in h["at_T0"]["easy"])


def test_train_log_defaults_W0_b0_to_the_start():
    net = small_net(2, seed=8)
    W, b = net.W.clone(), net.b.clone()
    tests = make_tests()
    h = ftrain.train(
        net,
        DC,
        steps=0,
        N=4,
        eta=0.1,
        lam_b=1.0,
        labels_of=coarse,
        g=g(9),
        log_times=[0],
        tests=tests,
        tau_sigma0=0.3,
        delta=0.2,
        n_noise=5,
    )
    assert torch.equal(h["W0"], W) and torch.equal(h["b0"], b)
    assert h["W0"] is not net.W and h["b0"] is not net.b  # copies, not the trained tensors
    zeta = torch.randn(2, 5, DC.d, generator=g(9), dtype=F64) * DC.sigma_zeta
    want = log_by_hand(W, b, W, b, 2, 3, 0.3, 0.2, tests, zeta, off=ftrain.off_diagonal_mask(2, K))
    assert torch.equal(h["noise"][0], want["noise"])
    assert bool((h["A"][0].nan_to_num() == 0).all())  # no growth at the start
    assert h["offdiag"][0].tolist() == [0.0, 0.0]  # no gain at the start


def test_train_offdiag_is_empty_for_grouped_models():
    net = small_net(6, seed=8, m=2)  # k = 2 but 6 outputs: neither coarse (2) nor fine (2k)
    tests = make_tests()
    h = ftrain.train(
        net,
        DC,
        steps=0,
        N=6,
        eta=0.1,
        lam_b=1.0,
        labels_of=coarse,
        g=g(9),
        log_times=[0],
        tests=tests,
        tau_sigma0=0.3,
        delta=0.2,
        n_noise=5,
    )
    assert h["offdiag"][0].tolist() == [-math.inf, -math.inf]


# -- train: the loop, replayed -------------------------------------------------------------------
def replay(
    net,
    steps,
    N,
    eta,
    lam,
    labels_of,
    seed,
    logs,
    n_noise,
    B=None,
    tests=None,
    how="max",
    scores_fn=None,
):
    """The loop of train, by hand: snapshots of W at each log time, and T0 / accuracies at T0."""
    gen = g(seed)
    net = net.clone()
    snaps, T0, at, bests = {}, [-1, -1], {}, []
    for t in range(steps + 1):
        if t in logs:
            snaps[t] = net.W.clone()
            torch.randn(2, n_noise, DC.d, generator=gen, dtype=net.W.dtype)
        if t == steps:
            break
        X, y, c = fdata.sample(DC, 2, N, hard=False, g=gen, dtype=net.W.dtype)
        lab = labels_of(y, c, gen)
        if B is not None:
            F = fmodel.forward(net, X)
            # Definition G.2: some output (any y, not only the label's) reaches B on some sample
            bests.append([max(float(F[s, n].max()) for n in range(N)) for s in range(2)])
            for s in range(2):
                best = bests[-1][s]
                if best >= B and T0[s] < 0:
                    T0[s] = t
                    acc = ftrain.evaluate(net, tests, how)
                    at[s] = {k: float(v[s]) for k, v in acc.items()}
        ftrain.sgd_step(net, X, labels=lab, eta=eta, lam_b=lam, scores_fn=scores_fn)
    return net, snaps, T0, at, bests


def test_a_dry_run_takes_the_first_step_with_its_log(monkeypatch):
    monkeypatch.setenv("COMPANIONS_DRY_RUN", "1")
    labels_of = fx.labeller("random", K, 2)
    net = small_net(4, seed=11)
    start = net.clone()
    h = ftrain.train(
        net,
        DC,
        steps=3,
        N=4,
        eta=0.4,
        lam_b=3.0,
        labels_of=labels_of,
        g=g(12),
        log_times=[0, 1, 3],
        tests=make_tests(),
        tau_sigma0=0.3,
        delta=0.2,
    )
    end, _, _, _, _ = replay(start, 1, 4, 0.4, 3.0, labels_of, 12, [0], 256)
    assert h["t"].tolist() == [0]
    assert torch.allclose(net.W, end.W, atol=1e-12) and torch.allclose(net.b, end.b, atol=1e-12)


def test_train_loop_is_a_replay_of_sgd_steps():
    net = small_net(4, seed=11)
    start = net.clone()
    labels_of = fx.labeller("random", K, 2)  # draws from g: the loop must pass its generator
    h = ftrain.train(
        net,
        DC,
        steps=3,
        N=4,
        eta=0.4,
        lam_b=3.0,
        labels_of=labels_of,
        g=g(12),
        log_times=[5, 1, 1, -1, 3, 0],
        tests=make_tests(),
        tau_sigma0=0.3,
        delta=0.2,
        n_noise=7,
        progress=False,
    )
    end, snaps, _, _, _ = replay(start, 3, 4, 0.4, 3.0, labels_of, 12, [0, 1, 3], 7)
    assert h["t"].tolist() == [0, 1, 3]
    assert torch.allclose(net.W, end.W, atol=1e-12) and torch.allclose(net.b, end.b, atol=1e-12)
    assert not torch.allclose(net.W, start.W)
    for i, t in enumerate([0, 1, 3]):
        R = fmodel.response(fmodel.Net(snaps[t], net.b, 4, 3), torch.arange(6))
        if t == 3:
            assert torch.allclose(h["R"][i], R)
        assert torch.allclose(
            h["A"][i],
            fmodel.growth(
                snaps[t],
                start.W,
                torch.arange(6),
                fmodel.detectors(start.W, torch.arange(6), 0.5),
                4,
            ),
            equal_nan=True,
        )
    for key in ("margin", "A", "R", "bias", "nonact", "noise", "offdiag"):
        assert h[key].shape[0] == 3


def test_train_records_T0_as_the_first_crossing():
    net = small_net(2, seed=13)
    tests = make_tests()
    # B below every score: both seeds cross at t = 0, and later crossings never move T0
    h = ftrain.train(
        net.clone(),
        DC,
        steps=3,
        N=4,
        eta=0.4,
        lam_b=3.0,
        labels_of=coarse,
        g=g(14),
        log_times=[0],
        tests=tests,
        tau_sigma0=0.3,
        delta=0.2,
        B=-1.0,
    )
    assert h["T0"].tolist() == [0, 0]
    start_acc = ftrain.evaluate(net, tests)
    for name in tests:
        assert torch.allclose(h["at_T0"][name], start_acc[name].float())
    # a B between the start's best score and the end's: the replay finds the first crossing
    args = (net, 6, 4, 2.0, 1e3, coarse, 14, [0], 256)
    _, _, T0_none, _, bests = replay(*args, B=math.inf, tests=tests)
    assert T0_none == [-1, -1]
    B = (bests[0][0] + max(b[0] for b in bests[1:])) / 2  # seed 0 crosses after its first step
    assert B > bests[0][0]
    _, _, T0, at, _ = replay(*args, B=B, tests=tests)
    h = ftrain.train(
        net.clone(),
        DC,
        steps=6,
        N=4,
        eta=2.0,
        lam_b=1e3,
        labels_of=coarse,
        g=g(14),
        log_times=[0],
        tests=tests,
        tau_sigma0=0.3,
        delta=0.2,
        B=B,
    )
    assert h["T0"].tolist() == T0
    assert T0[0] > 0, T0  # the crossing is not at the start
    # B equal to seed 0's best score over the run: crossing means F_y >= B (Definition G.2)
    B = max(b[0] for b in bests)
    _, _, T0, _, _ = replay(*args, B=B, tests=tests)
    assert T0[0] == [b[0] for b in bests].index(B)
    h = ftrain.train(
        net.clone(),
        DC,
        steps=6,
        N=4,
        eta=2.0,
        lam_b=1e3,
        labels_of=coarse,
        g=g(14),
        log_times=[0],
        tests=tests,
        tau_sigma0=0.3,
        delta=0.2,
        B=B,
    )
    assert h["T0"].tolist() == T0
    for s in range(2):
        for name in tests:
            if T0[s] < 0:
                assert math.isnan(float(h["at_T0"][name][s]))
            else:
                assert float(h["at_T0"][name][s]) == pytest.approx(at[s][name])


def test_train_fine_tuning_steps_through_scores_fn_and_reads_T0_through_how():
    net = small_net(4, seed=15)
    tests = make_tests()
    sfn = lambda F: fmodel.aggregate(F, 2, "max")  # noqa: E731  fine-tuning through hat F
    args = (net, 4, 4, 2.0, 1e3, coarse, 16, [0], 256)
    end, _, _, _, bests = replay(*args, B=math.inf, tests=tests, scores_fn=sfn)
    B = max(b[0] for b in bests)
    _, _, T0, at, _ = replay(*args, B=B, tests=tests, how="sum", scores_fn=sfn)
    trained = net.clone()
    h = ftrain.train(
        trained,
        DC,
        steps=4,
        N=4,
        eta=2.0,
        lam_b=1e3,
        labels_of=coarse,
        g=g(16),
        log_times=[0],
        tests=tests,
        tau_sigma0=0.3,
        delta=0.2,
        B=B,
        scores_fn=sfn,
        how="sum",
    )
    assert torch.allclose(trained.W, end.W, atol=1e-12)
    plain = net.clone()  # the same steps without scores_fn train the four outputs directly
    ftrain.train(
        plain,
        DC,
        steps=4,
        N=4,
        eta=2.0,
        lam_b=1e3,
        labels_of=coarse,
        g=g(16),
        log_times=[0],
        tests=tests,
        tau_sigma0=0.3,
        delta=0.2,
    )
    assert not torch.allclose(plain.W, end.W)
    assert h["T0"].tolist() == T0 and T0[0] >= 0
    for name in tests:
        assert float(h["at_T0"][name][0]) == pytest.approx(at[0][name])


def test_train_reads_accuracies_at_T0_through_how():
    # outputs (+,0), (+,1), (-,0), (-,1) respond 1, 0, 0.6, 0.6 to v+ and 0 to anything else:
    # a '+' sample holding v+ is right under the max (1 > 0.6) and wrong under the sum
    # (1 < 1.2); a sample without v+ ties at 0, a mistake under both
    W = torch.zeros(2, 4, DC.d, dtype=F64)
    W[:, 0, 0], W[:, 2, 0], W[:, 3, 0] = 1.0, 0.6, 0.6
    X = torch.zeros(2, 2, DC.P, DC.d, dtype=F64)
    X[:, 0, 0, 0] = 1.0
    tests = {"easy": (X, torch.tensor([[0, 1], [0, 1]]))}
    for how, want in (("max", 0.5), ("sum", 0.0)):
        net = fmodel.Net(W.clone(), torch.zeros(2, 4, dtype=F64), 4, 1)
        h = ftrain.train(
            net,
            DC,
            steps=1,
            N=4,
            eta=0.1,
            lam_b=1.0,
            labels_of=coarse,
            g=g(17),
            log_times=[0],
            tests=tests,
            tau_sigma0=0.3,
            delta=0.2,
            B=-1.0,
            how=how,
        )
        assert h["T0"].tolist() == [0, 0]
        assert h["at_T0"]["easy"].tolist() == [want, want]
        assert h["acc"]["easy"][0].tolist() == [want, want]
