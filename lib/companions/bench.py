"""``python -m companions bench``: time every topic's trainers on this machine.

Each topic declares its cases in ``companions.<topic>.bench.bench_cases()`` (a list of
:class:`BenchCase`, in the topic's own package); :func:`cases` collects them from
:data:`companions.scale.TOPICS`. A case
builds its trainer's state once and returns a ``step()`` that runs one optimizer step (or
``per_call`` of them). The cases of a topic are timed interleaved, step by step (case A, case B,
case A, ...), so that other load on the machine hits each of them equally; a public peer (written
in this module as a reference, never imported from elsewhere) sits beside the case it is matched
with, and the report gives their ratio.

Reported per case: milliseconds per step (median over the timed steps), steps per second,
FLOPs per step (a closed form derived for the case where it has one, otherwise the matrix-product
FLOPs that ``torch.utils.flop_counter`` counts in one step), achieved GFLOP/s against the
machine's torch matmul peak measured in the same command (float32 and float64), and peak memory:
the peak resident set size (``VmHWM`` of ``/proc/self/status``; ``resource.getrusage``'s
``ru_maxrss`` where there is no ``/proc``) of a fresh process that builds the case and runs two
steps, and its increase over that process's peak after its imports (torch's allocations do not
go through Python's allocator, so ``tracemalloc`` would not see them).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import math
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Callable

import torch

from companions import scale as scale_mod


@dataclass
class BenchCase:
    """One trainer to time. ``build()`` returns ``step()``; each ``step()`` call runs
    ``per_call`` optimizer steps. ``flops``: FLOPs per optimizer step from a derived closed form
    (``None``: counted). ``peer``: the name of the case of the same topic this one is the public
    peer of."""

    topic: str
    name: str
    build: Callable[[], Callable[[], object]]
    flops: float | None = None
    dtype: str = "float32"
    per_call: int = 1
    peer: str | None = None
    note: str = ""


def cases(topic: str | None = None) -> list[BenchCase]:
    """Every topic's bench cases (or one topic's), in the book's order."""
    topics = scale_mod.TOPICS if topic is None else (topic,)
    if topic is not None and topic not in scale_mod.TOPICS:
        raise ValueError(
            f"parameter 'topic' = {topic!r} is not allowed: expected one of {scale_mod.TOPICS}"
        )
    out = []
    for t in topics:
        if importlib.util.find_spec(f"companions.{t}.bench") is not None:
            out.extend(importlib.import_module(f"companions.{t}.bench").bench_cases())
    return out


# -- the public peers, written here as references -------------------------------------------------
def grokking_peer(p: int = 97, width: int = 500, seed: int = 0, dtype=torch.float32):
    """A Grokking-style fully connected peer (the role of d-doshi/Grokking's ``fcn``): the two
    inputs as concatenated one-hots (2p) -> Linear(2p, width) -> x^2 -> Linear(width, p),
    cross-entropy, AdamW, full batch over all p^2 pairs. Returns ``step()``."""
    g = torch.Generator().manual_seed(seed)
    a = torch.cartesian_prod(torch.arange(p), torch.arange(p))
    y = a.sum(-1) % p
    x = torch.cat(
        [torch.nn.functional.one_hot(a[:, 0], p), torch.nn.functional.one_hot(a[:, 1], p)], dim=1
    ).to(dtype)
    first, second = torch.nn.Linear(2 * p, width), torch.nn.Linear(width, p)
    with torch.no_grad():
        for lin in (first, second):
            lin.weight.copy_(
                torch.randn(lin.weight.shape, generator=g) / math.sqrt(lin.in_features)
            )
            lin.bias.zero_()
    net = torch.nn.Sequential(first, _Square(), second).to(dtype)
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3, betas=(0.9, 0.98), weight_decay=1.0)

    def step():
        loss = torch.nn.functional.cross_entropy(net(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    return step


def grokking_peer_flops(p: int = 97, width: int = 500) -> float:
    """Matrix-product FLOPs of one peer step: forward ``2 N (2p) m + 2 N m p``, backward twice
    the second layer's and once the first layer's (its input needs no gradient), ``N = p^2``."""
    n = p * p
    first, second = 2 * n * 2 * p * width, 2 * n * width * p
    return 2 * first + 3 * second


class _Square(torch.nn.Module):
    def forward(self, x):
        return x * x


def linear_transformer_peer(
    d: int = 5, n: int = 20, loops: int = 3, batch: int = 4000, seed: int = 0, dtype=torch.float32
):
    """A LinearTransformer-style peer (the role of chengxiang/LinearTransformer): linear
    attention on the full ``Z`` (``(n+1) x (d+1)``, all rows updated, the ``(n+1) x (n+1)`` score
    matrix masked so no token attends to the query), one ``(Q, P)`` shared by ``loops`` loops,
    Adam on the squared error of the query's label read from ``Z``, fresh prompts every step.
    Returns ``step()``."""
    g = torch.Generator().manual_seed(seed)
    Q = torch.nn.Parameter(0.1 * torch.randn(d + 1, d + 1, generator=g, dtype=dtype))
    P = torch.nn.Parameter(0.1 * torch.randn(d + 1, d + 1, generator=g, dtype=dtype))
    mask = torch.ones(n + 1, n + 1, dtype=dtype)
    mask[:, n] = 0
    opt = torch.optim.Adam([Q, P], lr=1e-3)

    def step():
        X = torch.randn(batch, n + 1, d, generator=g, dtype=dtype)
        w = torch.randn(batch, d, generator=g, dtype=dtype)
        y = (X @ w.unsqueeze(-1)).squeeze(-1)
        Z = torch.cat([X, y.unsqueeze(-1)], dim=-1)
        Z = torch.cat([Z[:, :n], torch.cat([X[:, n:], torch.zeros(batch, 1, 1)], -1)], dim=1)
        for _ in range(loops):
            scores = (Z @ Q @ Z.transpose(-1, -2)) * mask
            Z = Z + scores @ (Z @ P) / n
        loss = ((Z[:, n, d] + y[:, n]) ** 2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    return step


def linear_transformer_peer_flops(d=5, n=20, loops=3, batch=4000) -> float:
    """Matrix-product FLOPs of one peer step, per prompt (``t = n+1`` rows, ``D = d+1``): the
    labels ``y = X w`` (``2 t d``); per loop ``Z Q`` and ``Z P`` (``2 t D^2`` each), the scores
    and the scores times ``Z P`` (``2 t^2 D`` each), ``F = 4 t D^2 + 4 t^2 D`` in all; the
    backward costs ``2F`` per loop, less in the first loop, whose ``Z`` needs no gradient (only
    the weights' and the scores' products: ``F + 2 t^2 D``)."""
    D, t = d + 1, n + 1
    F = 4 * t * D * D + 4 * t * t * D
    return batch * (2 * t * d + (3 * loops - 1) * F + 2 * t * t * D)


# -- measuring ------------------------------------------------------------------------------------
def matmul_peak(dtype: torch.dtype, size: int = 1024, repeats: int = 5) -> float:
    """The best of ``repeats`` timings of one ``size x size`` matrix product: GFLOP/s."""
    a = torch.randn(size, size, dtype=dtype)
    b = torch.randn(size, size, dtype=dtype)
    a @ b
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t0)
    return 2 * size**3 / best / 1e9


def counted_flops(step: Callable[[], object]) -> float:
    """Matrix-product FLOPs of one ``step()`` as ``torch.utils.flop_counter`` counts them."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        step()
    return float(counter.get_total_flops())


def _peak_rss() -> int:
    """This process's peak resident set size in bytes: ``VmHWM`` of ``/proc/self/status`` where
    there is one (Linux; it starts afresh at ``exec``), else ``ru_maxrss``, which Linux carries
    over from the parent across ``fork`` and ``exec``."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    import resource

    scale = 1 if sys.platform == "darwin" else 1024  # ru_maxrss is in KiB on Linux
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale


def _memory_child(topic: str, name: str, threads: int) -> tuple[int, int]:
    """In a fresh process: build the case, run two steps, return ``(peak, increase)`` bytes."""
    torch.set_num_threads(threads)
    case = next(c for c in cases(topic) if c.name == name)
    before = _peak_rss()
    step = case.build()
    step()
    step()
    after = _peak_rss()
    return after, after - before


def peak_memory(case: BenchCase, threads: int) -> tuple[int, int] | None:
    """``(peak, increase)`` in bytes: the maximum resident set size of a fresh Python process
    that builds ``case`` and runs two steps, and how much it grew over that process's peak before
    the build (after its imports). ``None`` if the process fails."""
    code = (
        "import json, sys\nfrom companions.bench import _memory_child\n"
        "print(json.dumps(_memory_child(*json.loads(sys.argv[1]))))"
    )
    args = json.dumps([case.topic, case.name, threads])
    proc = subprocess.run([sys.executable, "-c", code, args], capture_output=True, text=True)
    if proc.returncode != 0:
        return None
    peak, increase = json.loads(proc.stdout.strip().splitlines()[-1])
    return peak, increase


def run(
    topic: str | None = None,
    steps: int = 20,
    threads: int | None = None,
    memory: bool = True,
    warmup: int = 2,
    out=None,
) -> dict:
    """Time the cases of ``topic`` (every topic by default): ``steps`` timed calls of each, after
    ``warmup`` untimed ones, interleaved within a topic. Returns the report as a dict (see the
    module docstring); writes lines to ``out`` (a text stream) as it goes."""
    if steps < 1:
        raise ValueError(f"parameter 'steps' = {steps} is not allowed: expected an integer >= 1")
    if threads is not None:
        if threads < 1:
            raise ValueError(f"parameter 'threads' = {threads} is not allowed: expected >= 1")
        torch.set_num_threads(threads)
    threads = torch.get_num_threads()
    say = (lambda s: print(s, file=out, flush=True)) if out is not None else (lambda s: None)
    peak = {"float32": matmul_peak(torch.float32), "float64": matmul_peak(torch.float64)}
    say(
        f"torch {torch.__version__}, {threads} threads; matmul peak: "
        f"{peak['float32']:.1f} GFLOP/s float32, {peak['float64']:.1f} GFLOP/s float64"
    )
    selected = cases(topic)
    rows = []
    for t in dict.fromkeys(c.topic for c in selected):
        group = [c for c in selected if c.topic == t]
        built = [c.build() for c in group]
        flops = []
        for c, step in zip(group, built):
            flops.append(c.flops if c.flops is not None else counted_flops(step) / c.per_call)
            for _ in range(warmup):
                step()
        times = [[] for _ in group]
        for _ in range(steps):
            for i, step in enumerate(built):
                t0 = time.perf_counter()
                step()
                times[i].append((time.perf_counter() - t0) / group[i].per_call)
        for c, ts, f in zip(group, times, flops):
            med = statistics.median(ts)
            mem = peak_memory(c, threads) if memory else None
            rows.append(
                dict(
                    topic=c.topic,
                    case=c.name,
                    dtype=c.dtype,
                    ms_per_step=1e3 * med,
                    steps_per_s=1 / med,
                    flops_per_step=f,
                    flops_source="derived" if c.flops is not None else "counted",
                    gflops=f / med / 1e9,
                    fraction_of_peak=f / med / 1e9 / peak[c.dtype],
                    peak_rss_bytes=mem and mem[0],
                    peak_rss_increase_bytes=mem and mem[1],
                    peer_of=c.peer,
                    note=c.note,
                )
            )
    by_name = {(r["topic"], r["case"]): r for r in rows}
    for r in rows:
        mine = by_name.get((r["topic"], r["peer_of"])) if r["peer_of"] else None
        r["peer_ms_over_book_ms"] = mine and r["ms_per_step"] / mine["ms_per_step"]
    for r in rows:
        mem = (
            "-"
            if r["peak_rss_bytes"] is None
            else f"{r['peak_rss_bytes'] / 2**20:.0f} MiB "
            f"(+{r['peak_rss_increase_bytes'] / 2**20:.0f} MiB over the imports)"
        )
        ratio = (
            f"  peer / book = {r['peer_ms_over_book_ms']:.2f}x" if r["peer_ms_over_book_ms"] else ""
        )
        say(
            f"{r['topic']:>22} {r['case']:<44} {r['dtype']:<8} {r['ms_per_step']:9.2f} ms/step "
            f"{r['steps_per_s']:8.1f} steps/s {r['gflops']:7.2f} GFLOP/s "
            f"({100 * r['fraction_of_peak']:4.1f}% of peak, {r['flops_source']}) "
            f"peak RSS {mem}{ratio}"
        )
    return dict(
        torch=torch.__version__,
        threads=threads,
        steps=steps,
        matmul_peak_gflops=peak,
        memory="peak RSS (VmHWM, else ru_maxrss) of a fresh process that builds the case and "
        "runs 2 steps, and its increase over its peak after the imports",
        cases=rows,
    )
