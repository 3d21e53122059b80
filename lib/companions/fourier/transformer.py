"""A small transformer on k-input modular addition: attention maps' 2-D Fourier spectra and
grokking.

Source: Z. Shi's dissertation, Section 4.5 and Appendix C.10 (Figures 4.3, 4.4, C.5, C.6). The
source's model is built on github.com/Sea-Snell/grokking; it writes the m-head attention layer as
``W^P [W_h^{V T} E softmax(E^T W_h^K W_h^{Q T} E)]_{h=1..m}`` and calls ``W^{KQ} = W^K W^{Q T}`` the
attention matrix. Everything the source leaves open (input format, normalization, initialization,
steps) is this book's choice and is stated in the chapter.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch import nn

from companions.fourier.network import dataset


class Block(nn.Module):
    """Pre-norm block: ``x + Attn(LN(x))``, then ``x + MLP(LN(x))`` (GELU), causal attention."""

    def __init__(self, d_model: int, heads: int, d_head: int, d_mlp: int):
        super().__init__()
        self.heads, self.d_head = heads, d_head
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.WQ = nn.Parameter(torch.randn(heads, d_model, d_head) / math.sqrt(d_model))
        self.WK = nn.Parameter(torch.randn(heads, d_model, d_head) / math.sqrt(d_model))
        self.WV = nn.Parameter(torch.randn(heads, d_model, d_head) / math.sqrt(d_model))
        self.WO = nn.Parameter(torch.randn(heads * d_head, d_model) / math.sqrt(heads * d_head))
        self.mlp = nn.Sequential(nn.Linear(d_model, d_mlp), nn.GELU(), nn.Linear(d_mlp, d_model))

    def forward(self, x):
        h = self.ln1(x)  # (N, T, d)
        q = torch.einsum("ntd,hde->nhte", h, self.WQ)
        kk = torch.einsum("ntd,hde->nhte", h, self.WK)
        v = torch.einsum("ntd,hde->nhte", h, self.WV)
        T = x.shape[1]
        scores = q @ kk.transpose(-1, -2) / math.sqrt(self.d_head)
        scores = scores.masked_fill(
            torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), 1), float("-inf")
        )
        out = (scores.softmax(-1) @ v).permute(0, 2, 1, 3).reshape(x.shape[0], T, -1) @ self.WO
        x = x + out
        return x + self.mlp(self.ln2(x))


class ModularTransformer(nn.Module):
    """Tokens ``a_1, ..., a_k`` (vocabulary Z_p), learned positional embeddings, ``layers`` pre-norm
    blocks, the answer ``(a_1 + ... + a_k) mod p`` read at the last position."""

    def __init__(
        self,
        p: int,
        k: int,
        *,
        d_model: int = 128,
        heads: int = 8,
        d_head: int = 32,
        d_mlp: int = 512,
        layers: int = 1,
    ):
        super().__init__()
        self.p, self.k = p, k
        self.embed = nn.Parameter(torch.randn(p, d_model))
        self.pos = nn.Parameter(torch.randn(k, d_model) / math.sqrt(d_model))
        self.blocks = nn.ModuleList([Block(d_model, heads, d_head, d_mlp) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d_model)
        self.unembed = nn.Linear(d_model, p)

    def forward(self, a: torch.Tensor) -> torch.Tensor:
        x = self.embed[a] + self.pos
        for block in self.blocks:
            x = block(x)
        return self.unembed(self.ln_f(x[:, -1]))

    def attention_matrices(self, layer: int = 0) -> torch.Tensor:
        """``A_h = LN(E) W^Q_h W^{K T}_h LN(E)^T`` for every head of ``layer``: shape
        ``(heads, p, p)``, rows the query token, columns the key token. The source's
        ``E^T W^K_h W^{Q T}_h E`` on the number tokens; this book applies the block's LayerNorm to
        the embeddings (without positions), as the model does."""
        block = self.blocks[layer]
        h = block.ln1(self.embed)
        q = torch.einsum("pd,hde->hpe", h, block.WQ)
        kk = torch.einsum("pd,hde->hpe", h, block.WK)
        return q @ kk.transpose(-1, -2)


def build(p: int, k: int, seed: int, device="cpu", **sizes) -> ModularTransformer:
    """A model initialized from ``seed`` on the CPU (then moved), so a seed gives the same model on
    every device."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = ModularTransformer(p, k, **sizes)
    return model.to(device)


def spectrum_2d(A: torch.Tensor) -> torch.Tensor:
    """2-D DFT power of ``A - mean(A)`` over the last two axes."""
    A = A - A.mean((-1, -2), keepdim=True)
    return torch.fft.fft2(A).abs().pow(2)


def top_power_fraction(A: torch.Tensor, top: int = 4) -> torch.Tensor:
    """Fraction of the 2-D DFT power of ``A - mean(A)`` in its ``top`` largest coefficients (this
    book's measure of "2-D cosine shape": a product of two cosines has exactly 4 nonzero
    coefficients, a single 2-D cosine wave 2). Shape ``A.shape[:-2]``."""
    pw = spectrum_2d(A).flatten(-2)
    return pw.topk(top, dim=-1).values.sum(-1) / pw.sum(-1).clamp_min(1e-300)


def cosine_structure(A: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The (±zeta1, ±zeta2) structure of a "2-D cosine shape" (Figure 4.3): with ``(zeta1, zeta2)``
    the strongest coefficient of the 2-D DFT power of ``A - mean(A)``, the fraction of the power on
    the four points ``(±zeta1, ±zeta2)`` (1 for cos(zeta1 i + phi) cos(zeta2 j + psi), both
    frequencies nonzero; about ``4 / p^2`` for noise), set to 0 where ``zeta1`` or ``zeta2`` is 0
    (a 1-D wave is not a 2-D cosine). Returns ``(fraction, zeta1, zeta2)``, each of shape
    ``A.shape[:-2]``; frequencies in ``0..p//2``."""
    p1, p2 = A.shape[-2:]
    if p1 % 2 == 0 or p2 % 2 == 0:
        raise ValueError(
            f"parameter 'A' has shape {tuple(A.shape)}: the last two sizes must be odd"
        )
    pw = spectrum_2d(A)
    flat = pw.flatten(-2)
    idx = flat.argmax(-1)
    z1, z2 = idx // p2, idx % p2
    total = flat.sum(-1).clamp_min(1e-300)
    on = torch.zeros_like(total)
    for s1, s2 in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
        i1, i2 = (s1 * z1) % p1, (s2 * z2) % p2
        on = on + torch.gather(flat, -1, (i1 * p2 + i2).unsqueeze(-1)).squeeze(-1)
    frac = torch.where((z1 == 0) | (z2 == 0), torch.zeros_like(on), on / total)
    fold = lambda z, n: torch.minimum(z, n - z)  # noqa: E731
    return frac, fold(z1, p1), fold(z2, p2)


@dataclass
class History:
    steps: list = field(default_factory=list)
    train_acc: list = field(default_factory=list)
    test_acc: list = field(default_factory=list)
    train_loss: list = field(default_factory=list)
    kq_top4: list = field(default_factory=list)
    kq_share: list = field(default_factory=list)

    def first_step(self, which: str, level: float):
        """First logged step at which ``train_acc``/``test_acc`` reaches ``level`` (None if
        never)."""
        values = getattr(self, which)
        return next((s for s, v in zip(self.steps, values) if v >= level), None)


def split_size(p: int, k: int, train_fraction: float) -> int:
    """The number of training inputs :func:`split` takes: ``train_fraction`` of the ``p^k``,
    rounded, and at least one."""
    return max(1, int(round(train_fraction * p**k)))


def split(p: int, k: int, train_fraction: float, generator: torch.Generator, device="cpu"):
    """All ``p^k`` inputs, shuffled by ``generator`` and split:
    ``(a_train, y_train, a_test, y_test)``; the training part has :func:`split_size` inputs."""
    a, y = dataset(p, k)
    perm = torch.randperm(len(a), generator=generator)
    n = split_size(p, k, train_fraction)
    tr, te = perm[:n], perm[n:]
    return a[tr].to(device), y[tr].to(device), a[te].to(device), y[te].to(device)


def train_transformer(
    model: ModularTransformer,
    data,
    *,
    steps: int,
    lr: float,
    weight_decay: float,
    generator: torch.Generator,
    batch: int = 0,
    log_every: int = 50,
    warmup: int = 10,
    desc: str = "transformer",
    progress: bool = True,
) -> History:
    """AdamW with betas (0.9, 0.98) and a linear warm-up over ``warmup`` steps (Appendix C.10.1),
    cross-entropy at the last position; logs train and test accuracy, and the mean over heads of the
    first layer's attention matrices' top-4 2-D power fraction (:func:`top_power_fraction`) and
    (+-zeta1, +-zeta2) share (:func:`cosine_structure`), every ``log_every`` steps and at the
    end."""
    from companions.train import progress as progress_bar

    a_tr, y_tr, a_te, y_te = data
    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.98), weight_decay=weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda t: min(1.0, (t + 1) / warmup) if warmup else 1.0
    )
    hist = History()

    def log(t, loss):
        with torch.no_grad():
            model.eval()
            hist.steps.append(t)
            hist.train_acc.append(accuracy(model, a_tr, y_tr))
            hist.test_acc.append(accuracy(model, a_te, y_te) if len(y_te) else float("nan"))
            hist.train_loss.append(loss)
            A = model.attention_matrices(0)
            hist.kq_top4.append(float(top_power_fraction(A).mean()))
            hist.kq_share.append(float(cosine_structure(A)[0].mean()))
            model.train()

    bar = progress_bar(range(steps), desc=desc, disable=not progress, mininterval=0.5)
    loss_value = float("nan")
    for t in bar:
        if t % log_every == 0:
            log(t, loss_value)
        if batch:
            idx = torch.randint(0, len(y_tr), (batch,), generator=generator).to(a_tr.device)
            ab, yb = a_tr[idx], y_tr[idx]
        else:
            ab, yb = a_tr, y_tr
        loss = nn.functional.cross_entropy(model(ab), yb)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        loss_value = float(loss.detach())
        if not math.isfinite(loss_value):
            bar.close()
            raise FloatingPointError(f"loss became {loss_value} at step {t}: lower 'lr'")
    bar.close()
    log(steps, loss_value)
    return hist


#: Inputs per forward pass when :func:`accuracy` evaluates a whole split: at the paper preset
#: (p = 31, k = 4, 160 heads) one pass over the 461760 training inputs would hold 35 GiB of queries,
#: and a chunk of 16384 went past the 8 GiB cap of the paper dry run (a 1.3 GB allocation failed).
#: The smoke and default splits are smaller than one chunk.
EVAL_CHUNK = 8192


def accuracy(model: nn.Module, a: torch.Tensor, y: torch.Tensor, chunk: int = EVAL_CHUNK) -> float:
    """The fraction of ``a`` that ``model`` answers ``y``, evaluated ``chunk`` inputs at a time
    (memory bounded at any split size) and reported as float32's mean of the hits, which is what
    one pass gives: the count of hits is exact below 2^24 inputs. The chunks go through
    :func:`companions.train.progress` without a bar (training logs call this inside its bar), so
    a dry run evaluates the first chunk only."""
    from companions.train import progress

    if chunk < 1:
        raise ValueError(f"parameter 'chunk' = {chunk!r} is not allowed: expected >= 1")
    if len(y) <= chunk:
        return float((model(a).argmax(-1) == y).float().mean())
    hits = seen = 0
    for i in progress(range(0, len(y), chunk), desc="accuracy", disable=True):
        hits += int((model(a[i : i + chunk]).argmax(-1) == y[i : i + chunk]).sum())
        seen += len(y[i : i + chunk])
    return float(torch.tensor(float(hits), dtype=torch.float32) / seen)


def train_seeds(
    p: int,
    k: int,
    *,
    data,
    seeds: int,
    steps: int,
    lr: float,
    weight_decay: float,
    seed: int,
    generator_for,
    sizes: dict,
    layers: int = 1,
    batch: int = 0,
    log_every: int = 50,
    device="cpu",
) -> list:
    """The Figure 4.3 runs: one model per seed ``s`` (built from ``seed + s``, trained with the
    generator ``generator_for(2 + s)``) on the same ``data``; returns ``(A0, A1, history)`` per
    seed, with the first layer's attention matrices at initialization and after training (on the
    CPU)."""
    runs = []
    for s in range(seeds):
        model = build(p, k, seed + s, device=device, layers=layers, **sizes)
        with torch.no_grad():
            A0 = model.attention_matrices(0).cpu()
        hist = train_transformer(
            model,
            data,
            steps=steps,
            lr=lr,
            weight_decay=weight_decay,
            generator=generator_for(2 + s),
            batch=batch,
            log_every=log_every,
            desc=f"p={p}, k={k}, seed {s}",
        )
        with torch.no_grad():
            runs.append((A0, model.attention_matrices(0).cpu(), hist))
    return runs


def grokking_runs(
    pairs,
    seeds: int,
    *,
    steps: int,
    lr: float,
    weight_decay: float,
    seed: int,
    generator_for,
    sizes: dict,
    layers: int,
    train_fraction: float,
    batch: int = 0,
    log_every: int = 50,
    device="cpu",
) -> list[dict]:
    """Figure 4.4's runs: for each ``(p, k)`` of ``pairs`` and each seed ``s``, a split drawn
    with ``generator_for(100 + 10 k + s)``, a model built from ``seed + 1000 k + s`` and trained
    with ``generator_for(200 + 10 k + s)``. Returns one dict per run: ``p``, ``k``, ``seed``,
    ``size`` (p^k), ``hist``, ``t_train`` and ``t_test`` (the first logged steps with training
    accuracy >= 0.99 and test accuracy >= 0.95, None if never) and ``final_test``."""
    out = []
    for q, kk in pairs:
        for s in range(seeds):
            data = split(q, kk, train_fraction, generator_for(100 + 10 * kk + s), device=device)
            model = build(q, kk, seed + 1000 * kk + s, device=device, layers=layers, **sizes)
            hist = train_transformer(
                model,
                data,
                steps=steps,
                lr=lr,
                weight_decay=weight_decay,
                generator=generator_for(200 + 10 * kk + s),
                batch=batch,
                log_every=log_every,
                desc=f"grokking p={q}, k={kk}, seed {s}",
            )
            out.append(
                dict(
                    p=q,
                    k=kk,
                    seed=s,
                    size=q**kk,
                    hist=hist,
                    t_train=hist.first_step("train_acc", 0.99),
                    t_test=hist.first_step("test_acc", 0.95),
                    final_test=hist.test_acc[-1],
                )
            )
    return out


def gaps_by_k(runs: list[dict]) -> dict | None:
    """``{k: [t_test - t_train per seed]}`` in increasing k, for Figure 4.4's trend; None where
    some run did not reach both thresholds (a run that never groks has no gap)."""
    if any(g["t_test"] is None or g["t_train"] is None for g in runs):
        return None
    gaps: dict = {}
    for g in sorted(runs, key=lambda g: g["k"]):
        gaps.setdefault(g["k"], []).append(g["t_test"] - g["t_train"])
    return gaps
