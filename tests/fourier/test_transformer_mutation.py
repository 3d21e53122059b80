"""companions.fourier.transformer against independent reimplementations (issue 23, mutation
testing).

- ``build`` / ``ModularTransformer`` / ``Block``: the initialization as the code's docstrings and
  shapes state it, redrawn from the seed; the forward pass written out head by head with explicit
  loops (causal mask, 1/sqrt(d_head) scaling, pre-norm residuals, readout at the last position).
- ``spectrum_2d`` / ``top_power_fraction`` / ``cosine_structure``: a DFT written as a matrix
  product, rectangular inputs, the zero matrix.
- ``split`` / ``History.first_step`` / ``accuracy``: small cases worked out by hand.
- ``train_transformer``: against ``torch.optim.AdamW`` with the stated warm-up, driven by hand.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch

import companions.train as ctrain
from companions.fourier import transformer as ft

F64 = torch.float64
SIZES = dict(d_model=8, heads=2, d_head=3, d_mlp=6)


def _randomize_norms(model, seed=0):
    """Non-trivial LayerNorm weights and biases, so that swapping two norms shows."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for mod in model.modules():
            if isinstance(mod, torch.nn.LayerNorm):
                mod.weight.copy_(1 + 0.5 * torch.randn(mod.weight.shape, generator=g))
                mod.bias.copy_(0.5 * torch.randn(mod.bias.shape, generator=g))
    return model


def _block_reference(blk, x):
    """Block.forward written out per head, per query position."""
    N, T, d = x.shape
    ln = torch.nn.functional.layer_norm
    h = ln(x, (d,), blk.ln1.weight, blk.ln1.bias, blk.ln1.eps)
    heads = []
    for head in range(blk.WQ.shape[0]):
        q, k, v = h @ blk.WQ[head], h @ blk.WK[head], h @ blk.WV[head]
        e = q.shape[-1]
        out = torch.zeros(N, T, e, dtype=x.dtype)
        for i in range(T):
            s = torch.stack([(q[:, i] * k[:, j]).sum(-1) for j in range(i + 1)], -1) / math.sqrt(e)
            w = torch.exp(s - s.max(-1, keepdim=True).values)
            w = w / w.sum(-1, keepdim=True)  # softmax over the keys j <= i
            out[:, i] = sum(w[:, j, None] * v[:, j] for j in range(i + 1))
        heads.append(out)
    x = x + torch.cat(heads, -1) @ blk.WO
    h2 = ln(x, (d,), blk.ln2.weight, blk.ln2.bias, blk.ln2.eps)
    lin1, lin2 = blk.mlp[0], blk.mlp[2]
    hid = h2 @ lin1.weight.T + lin1.bias
    hid = 0.5 * hid * (1 + torch.erf(hid / math.sqrt(2)))  # exact GELU
    return x + hid @ lin2.weight.T + lin2.bias


def test_build_draws_the_stated_initialization_from_the_seed_and_keeps_the_global_stream():
    p, k, d, H, e, dm = 5, 3, 8, 2, 3, 6
    torch.manual_seed(123)
    before = torch.get_rng_state()
    model = ft.build(p, k, seed=4, layers=2, **SIZES)
    assert torch.equal(torch.get_rng_state(), before)  # forked: the global stream is untouched
    torch.manual_seed(4)
    embed = torch.randn(p, d)
    pos = torch.randn(k, d) / math.sqrt(d)
    assert torch.equal(model.embed, embed) and torch.equal(model.pos, pos)
    for blk in model.blocks:
        WQ = torch.randn(H, d, e) / math.sqrt(d)
        WK = torch.randn(H, d, e) / math.sqrt(d)
        WV = torch.randn(H, d, e) / math.sqrt(d)
        WO = torch.randn(H * e, d) / math.sqrt(H * e)
        assert torch.equal(blk.WQ, WQ) and torch.equal(blk.WK, WK)
        assert torch.equal(blk.WV, WV) and torch.equal(blk.WO, WO)
        torch.nn.Linear(d, dm), torch.nn.Linear(dm, d)  # the MLP's draws
        assert blk.heads == H and blk.d_head == e
    assert len(model.blocks) == 2 and model.p == p and model.k == k
    assert model.unembed.out_features == p and model.ln_f.normalized_shape == (d,)


def test_default_sizes_are_the_chapters():
    model = ft.ModularTransformer(3, 2)
    blk = model.blocks[0]
    assert model.embed.shape == (3, 128) and len(model.blocks) == 1
    assert blk.WQ.shape == (8, 128, 32) and blk.WO.shape == (256, 128)
    assert blk.mlp[0].out_features == 512


def test_forward_matches_a_head_by_head_reference():
    p, k = 5, 4
    model = _randomize_norms(ft.build(p, k, seed=1, layers=2, **SIZES).double())
    a = torch.randint(0, p, (6, k), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        x = model.embed[a] + model.pos
        for blk in model.blocks:
            y = _block_reference(blk, x)
            assert torch.allclose(blk(x), y, atol=1e-10)
            x = y
        ln = torch.nn.functional.layer_norm
        f = ln(x[:, -1], (8,), model.ln_f.weight, model.ln_f.bias, model.ln_f.eps)
        logits = f @ model.unembed.weight.T + model.unembed.bias
        assert torch.allclose(model(a), logits, atol=1e-10)


def test_attention_matrices_of_each_layer():
    model = _randomize_norms(ft.build(5, 2, seed=2, layers=2, **SIZES).double())
    ln = torch.nn.functional.layer_norm
    with torch.no_grad():
        for layer in (0, 1):
            blk = model.blocks[layer]
            h = ln(model.embed, (8,), blk.ln1.weight, blk.ln1.bias, blk.ln1.eps)
            A = model.attention_matrices(layer)
            for head in range(2):
                ref = h @ blk.WQ[head] @ blk.WK[head].T @ h.T
                assert torch.allclose(A[head], ref, atol=1e-10)
        assert torch.equal(model.attention_matrices(), model.attention_matrices(0))


def _dft_power(A):
    """|F A F'|^2 with F the DFT matrix, of A minus its mean (numpy)."""
    A = np.asarray(A, dtype=float)
    A = A - A.mean()
    n1, n2 = A.shape
    F1 = np.exp(-2j * np.pi * np.outer(np.arange(n1), np.arange(n1)) / n1)
    F2 = np.exp(-2j * np.pi * np.outer(np.arange(n2), np.arange(n2)) / n2)
    return np.abs(F1 @ A @ F2.T) ** 2


def test_spectrum_is_the_dft_power_of_the_centred_matrix_per_batch_entry():
    g = torch.Generator().manual_seed(3)
    A = torch.randn(2, 5, 7, generator=g, dtype=F64) + torch.tensor([[[3.0]], [[-1.0]]], dtype=F64)
    S = ft.spectrum_2d(A)
    for b in range(2):
        assert np.allclose(S[b].numpy(), _dft_power(A[b].numpy()), atol=1e-9)
    assert float(S[:, 0, 0].abs().max()) < 1e-20  # the mean is removed per matrix
    # top fractions by hand from the sorted powers
    frac = ft.top_power_fraction(A)
    frac2 = ft.top_power_fraction(A, top=2)
    for b in range(2):
        pw = np.sort(_dft_power(A[b].numpy()).ravel())[::-1]
        assert float(frac[b]) == pytest.approx(pw[:4].sum() / pw.sum(), rel=1e-12)
        assert float(frac2[b]) == pytest.approx(pw[:2].sum() / pw.sum(), rel=1e-12)


def test_a_constant_matrix_has_no_power_and_fraction_zero():
    A = torch.full((5, 5), 2.5, dtype=F64)
    assert float(ft.top_power_fraction(A)) == 0.0
    frac, z1, z2 = ft.cosine_structure(A)
    assert float(frac) == 0.0


def test_cosine_structure_on_rectangular_matrices_and_high_frequencies():
    p1, p2 = 7, 11
    i = torch.arange(p1, dtype=F64)[:, None]
    j = torch.arange(p2, dtype=F64)[None, :]
    # frequencies 5 (folds to 2 on Z_7) and 8 (folds to 3 on Z_11)
    prod = torch.cos(2 * math.pi * 5 * i / p1 + 0.4) * torch.cos(2 * math.pi * 8 * j / p2 - 1.1)
    frac, z1, z2 = ft.cosine_structure(prod)
    assert float(frac) == pytest.approx(1.0, abs=1e-12)
    assert int(z1) == 2 and int(z2) == 3
    # a product plus a weaker one: the on-fraction is the strong one's power share, by hand
    other = torch.cos(2 * math.pi * 1 * i / p1) * torch.cos(2 * math.pi * 4 * j / p2)
    frac, z1, z2 = ft.cosine_structure(prod + 0.5 * other)
    assert float(frac) == pytest.approx(1 / 1.25, abs=1e-9)
    # a 1-D wave along either axis is not a 2-D cosine
    assert float(ft.cosine_structure(torch.cos(2 * math.pi * 3 * j / p2).expand(p1, p2))[0]) == 0
    assert float(ft.cosine_structure(torch.cos(2 * math.pi * 3 * i / p1).expand(p1, p2))[0]) == 0
    for shape in ((5, 4), (4, 5), (2, 4, 4)):
        with pytest.raises(ValueError, match="'A'"):
            ft.cosine_structure(torch.zeros(shape))


def test_history_first_step_reaches_the_level_inclusively():
    h = ft.History(steps=[0, 10, 20], train_acc=[0.1, 0.5, 1.0], test_acc=[0.0, 0.2, 0.5])
    assert h.first_step("train_acc", 0.5) == 10
    assert h.first_step("test_acc", 0.5) == 20
    assert h.first_step("test_acc", 0.6) is None
    assert ft.History().steps == [] and ft.History().kq_top4 == []


def test_split_is_the_generators_permutation():
    a_tr, y_tr, a_te, y_te = ft.split(3, 2, 0.5, torch.Generator().manual_seed(9))
    perm = torch.randperm(9, generator=torch.Generator().manual_seed(9))
    every = torch.tensor([[x, y] for x in range(3) for y in range(3)])
    n = 4  # round(4.5) = 4 (round half to even)
    assert torch.equal(a_tr, every[perm[:n]]) and torch.equal(a_te, every[perm[n:]])
    assert torch.equal(y_tr, a_tr.sum(-1) % 3) and torch.equal(y_te, a_te.sum(-1) % 3)
    # at least one training input
    a_tr, _, a_te, _ = ft.split(3, 2, 0.0, torch.Generator().manual_seed(9))
    assert len(a_tr) == 1 and len(a_te) == 8
    a_tr, _, a_te, _ = ft.split(3, 2, 0.7, torch.Generator().manual_seed(9))
    assert len(a_tr) == 6  # round(6.3)


class _Fixed(torch.nn.Module):
    """Answers ``a[:, 0]``: right exactly where the label equals the first token."""

    def __init__(self, p):
        super().__init__()
        self.p = p

    def forward(self, a):
        return torch.nn.functional.one_hot(a[:, 0], self.p).double()


def test_accuracy_counts_by_hand_in_and_out_of_chunks():
    a = torch.tensor([[0, 0], [1, 0], [2, 1], [1, 1], [0, 2]])
    y = torch.tensor([0, 1, 0, 2, 2])  # right on rows 0, 1
    m = _Fixed(3)
    assert ft.accuracy(m, a, y) == pytest.approx(0.4)
    for chunk in (1, 2, 4, 5):
        assert ft.accuracy(m, a, y, chunk=chunk) == pytest.approx(0.4, abs=1e-7)
    assert ft.accuracy(m, a, y, chunk=2) == float(torch.tensor(2 / 5, dtype=torch.float32))
    assert ft.EVAL_CHUNK == 8192  # stated in the source
    with pytest.raises(ValueError, match="'chunk' = -1"):
        ft.accuracy(m, a, y, chunk=-1)


def test_a_dry_run_counts_the_first_chunk_of_the_accuracy(monkeypatch):
    a = torch.tensor([[0, 0], [1, 0], [2, 1], [1, 1], [0, 2]])
    y = torch.tensor([0, 1, 0, 2, 2])  # right on rows 0, 1
    monkeypatch.setenv("COMPANIONS_DRY_RUN", "1")
    assert ft.accuracy(_Fixed(3), a, y, chunk=2) == 1.0  # rows 0, 1 only
    assert ft.accuracy(_Fixed(3), a, y, chunk=3) == float(torch.tensor(2 / 3, dtype=torch.float32))


def _reference_train(model, data, steps, lr, wd, g, batch, log_every, warmup):
    a_tr, y_tr, a_te, y_te = data
    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.98), weight_decay=wd)
    logs = []

    def log(t, loss):
        with torch.no_grad():
            tr = float((model(a_tr).argmax(-1) == y_tr).double().mean())
            te = float((model(a_te).argmax(-1) == y_te).double().mean())
            A = model.attention_matrices(0)
            top = np.mean(
                [
                    np.sort(_dft_power(x.numpy()).ravel())[-4:].sum() / _dft_power(x.numpy()).sum()
                    for x in A
                ]
            )
            logs.append((t, tr, te, loss, top))

    loss_value = float("nan")
    for t in range(steps):
        if t % log_every == 0:
            log(t, loss_value)
        for group in opt.param_groups:
            group["lr"] = lr * min(1.0, (t + 1) / warmup)
        if batch:
            idx = torch.randint(0, len(y_tr), (batch,), generator=g)
            ab, yb = a_tr[idx], y_tr[idx]
        else:
            ab, yb = a_tr, y_tr
        logits = model(ab)
        loss = (torch.logsumexp(logits, -1) - logits.gather(1, yb[:, None])[:, 0]).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        loss_value = float(loss.detach())
    log(steps, loss_value)
    return logs


@pytest.mark.parametrize("batch", [0, 5])
def test_train_transformer_is_adamw_with_the_stated_warmup(batch):
    p, k = 5, 2
    data = ft.split(p, k, 0.6, torch.Generator().manual_seed(1))
    model = ft.build(p, k, seed=3, **SIZES).double()
    ref = copy.deepcopy(model)
    hist = ft.train_transformer(
        model,
        data,
        steps=7,
        lr=0.05,
        weight_decay=0.3,
        generator=torch.Generator().manual_seed(2),
        batch=batch,
        log_every=3,
        warmup=4,
        progress=False,
    )
    logs = _reference_train(ref, data, 7, 0.05, 0.3, torch.Generator().manual_seed(2), batch, 3, 4)
    for (name, x), y in zip(model.named_parameters(), ref.parameters()):
        assert torch.allclose(x, y, atol=1e-10, rtol=1e-8), name
    assert hist.steps == [t for t, *_ in logs] == [0, 3, 6, 7]
    assert hist.train_acc == pytest.approx([x[1] for x in logs], abs=1e-6)
    assert hist.test_acc == pytest.approx([x[2] for x in logs], abs=1e-6)
    assert math.isnan(hist.train_loss[0])
    assert hist.train_loss[1:] == pytest.approx([x[3] for x in logs[1:]], rel=1e-9)
    assert hist.kq_top4 == pytest.approx([x[4] for x in logs], rel=1e-9)
    assert model.training  # left in training mode


def test_train_transformer_defaults_warmup_10_and_log_every_50():
    p, k = 3, 2
    data = ft.split(p, k, 0.7, torch.Generator().manual_seed(1))
    model = ft.build(p, k, seed=5, **SIZES).double()
    ref = copy.deepcopy(model)
    hist = ft.train_transformer(
        model,
        data,
        steps=51,
        lr=0.01,
        weight_decay=0.0,
        generator=torch.Generator(),
        progress=False,
    )
    _reference_train(ref, data, 51, 0.01, 0.0, None, 0, 50, 10)
    for x, y in zip(model.parameters(), ref.parameters()):
        assert torch.allclose(x, y, atol=1e-9, rtol=1e-7)
    assert hist.steps == [0, 50, 51]


def test_no_warmup_and_no_test_split():
    p, k = 3, 2
    data = ft.split(p, k, 1.0, torch.Generator().manual_seed(1))
    assert len(data[3]) == 0
    model = ft.build(p, k, seed=5, **SIZES).double()
    ref = copy.deepcopy(model)
    hist = ft.train_transformer(
        model,
        data,
        steps=3,
        lr=0.02,
        weight_decay=0.0,
        generator=torch.Generator(),
        warmup=0,
        log_every=2,
        progress=False,
    )
    opt = torch.optim.AdamW(ref.parameters(), lr=0.02, betas=(0.9, 0.98), weight_decay=0.0)
    for _ in range(3):  # full learning rate from the first step
        opt.zero_grad()
        torch.nn.functional.cross_entropy(ref(data[0]), data[1]).backward()
        opt.step()
    for x, y in zip(model.parameters(), ref.parameters()):
        assert torch.allclose(x, y, atol=1e-10)
    assert hist.steps == [0, 2, 3] and all(math.isnan(x) for x in hist.test_acc)


def test_progress_bar_and_a_nonfinite_loss(monkeypatch):
    seen = []

    class Bar:
        def __init__(self, it, **kw):
            self.it, self.kw, self.closed = it, kw, 0
            seen.append(self)

        def __iter__(self):
            return iter(self.it)

        def close(self):
            self.closed += 1

    monkeypatch.setattr(ctrain, "progress", Bar)
    data = ft.split(3, 2, 0.5, torch.Generator().manual_seed(1))
    model = ft.build(3, 2, seed=0, **SIZES)
    ft.train_transformer(
        model, data, steps=2, lr=0.01, weight_decay=0.0, generator=torch.Generator(), desc="grok"
    )
    assert seen[0].kw == dict(desc="grok", disable=False, mininterval=0.5)
    assert seen[0].closed >= 1 and list(seen[0].it) == [0, 1]
    ft.train_transformer(
        model, data, steps=1, lr=0.01, weight_decay=0.0, generator=torch.Generator(), progress=False
    )
    assert seen[1].kw["desc"] == "transformer" and seen[1].kw["disable"] is True
    with torch.no_grad():
        model.unembed.bias[0] = float("nan")
    with pytest.raises(FloatingPointError, match="loss became nan at step 0: lower 'lr'"):
        ft.train_transformer(
            model, data, steps=3, lr=0.01, weight_decay=0.0, generator=torch.Generator()
        )
    assert seen[2].closed == 1


def test_small_matrices_keep_their_fractions():
    """The floor under the total power (1e-300) only guards the zero matrix: a matrix with total
    power below 1 has the same fractions as a large one."""
    p1, p2 = 7, 5
    i = torch.arange(p1, dtype=F64)[:, None]
    j = torch.arange(p2, dtype=F64)[None, :]
    A = torch.cos(2 * math.pi * 2 * i / p1 + 0.3) * torch.cos(2 * math.pi * 1 * j / p2) + 0.4 * (
        torch.cos(2 * math.pi * 3 * i / p1) * torch.cos(2 * math.pi * 2 * j / p2 + 1.0)
    )
    small = 1e-4 * A
    assert float(ft.spectrum_2d(small).sum()) < 1e-3
    assert float(ft.top_power_fraction(small)) == pytest.approx(1 / 1.16, rel=1e-9)
    assert float(ft.top_power_fraction(A)) == pytest.approx(1 / 1.16, rel=1e-9)
    assert float(ft.cosine_structure(small)[0]) == pytest.approx(1 / 1.16, rel=1e-9)


def test_cosine_structure_sums_the_four_sign_points():
    """A plane wave cos(a i + b j) puts its power on (a, b) and (-a, -b) only, two of the four
    points (+-a, +-b): the fraction is 1, and each point is counted once."""
    p1, p2 = 7, 11
    i = torch.arange(p1, dtype=F64)[:, None]
    j = torch.arange(p2, dtype=F64)[None, :]
    for a, b in ((2, 3), (2, -3), (1, 4)):
        wave = torch.cos(2 * math.pi * (a * i / p1 + b * j / p2) + 0.5)
        frac, z1, z2 = ft.cosine_structure(wave)
        assert float(frac) == pytest.approx(1.0, abs=1e-12)
        assert (int(z1), int(z2)) == (abs(a), abs(b))
    # a product whose strongest point has zeta1 = 1 is a 2-D cosine
    prod = torch.cos(2 * math.pi * i / p1) * torch.cos(2 * math.pi * 3 * j / p2 + 0.2)
    frac, z1, z2 = ft.cosine_structure(prod)
    assert float(frac) == pytest.approx(1.0, abs=1e-12) and (int(z1), int(z2)) == (1, 3)


def test_accuracy_in_chunks_is_float32_whatever_the_default_dtype():
    a = torch.tensor([[0, 0], [1, 1], [2, 2]])
    y = torch.tensor([0, 2, 1])  # one hit in three
    m = _Fixed(3)
    third = float(torch.tensor(1.0, dtype=torch.float32) / 3)
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        assert ft.accuracy(m, a, y, chunk=2) == third
        assert ft.accuracy(m, a, y) == third
    finally:
        torch.set_default_dtype(old)
    assert third != 1 / 3
