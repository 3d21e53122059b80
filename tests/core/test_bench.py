"""``python -m companions bench``: the command runs and its report has the documented schema
(no timing is asserted)."""

import json

import pytest
import torch

from companions import bench
from companions.book import cli

ROW_KEYS = {
    "topic",
    "case",
    "dtype",
    "ms_per_step",
    "steps_per_s",
    "flops_per_step",
    "flops_source",
    "gflops",
    "fraction_of_peak",
    "peak_rss_bytes",
    "peak_rss_increase_bytes",
    "peer_of",
    "peer_ms_over_book_ms",
    "note",
}


def _tiny(n):
    def build():
        a = torch.randn(n, n)
        return lambda: a @ a

    return build


def test_bench_command_runs_a_tiny_case(tmp_path, capsys, monkeypatch):
    tiny = [bench.BenchCase("t", "tiny", _tiny(8))]
    monkeypatch.setattr(bench, "cases", lambda topic=None: tiny)
    peak = bench.matmul_peak
    monkeypatch.setattr(bench, "matmul_peak", lambda dtype: peak(dtype, size=64, repeats=2))
    out = tmp_path / "bench.json"
    argv = ["bench", "--steps", "2", "--threads", "1", "--no-memory", "--json", str(out)]
    assert cli.main(argv) == 0
    report = json.loads(out.read_text())
    assert set(report) >= {"torch", "threads", "steps", "matmul_peak_gflops", "memory", "cases"}
    assert report["threads"] == 1 and report["steps"] == 2
    assert set(report["matmul_peak_gflops"]) == {"float32", "float64"}
    assert all(v > 0 for v in report["matmul_peak_gflops"].values())
    (row,) = report["cases"]
    assert set(row) == ROW_KEYS and row["case"] == "tiny"
    assert row["ms_per_step"] > 0 and row["flops_source"] == "counted"
    assert row["flops_per_step"] == 2 * 8**3 and row["peak_rss_bytes"] is None
    assert "tiny" in capsys.readouterr().out


def test_memory_child_reports_peak_and_increase(monkeypatch):
    big = [bench.BenchCase("t", "big", lambda: lambda: torch.ones(2**24).sum())]
    monkeypatch.setattr(bench, "cases", lambda topic=None: big)
    peak, increase = bench._memory_child("t", "big", 1)
    assert peak > 0 and 0 <= increase <= peak


def test_peers_sit_beside_their_cases_with_the_ratio(monkeypatch):
    def tiny(n):
        a = torch.randn(n, n)
        return lambda: lambda: a @ a

    cases = [
        bench.BenchCase("t", "book", tiny(8), flops=2 * 8**3),
        bench.BenchCase("t", "peer", tiny(16), flops=2 * 16**3, peer="book"),
    ]
    monkeypatch.setattr(bench, "cases", lambda topic=None: cases)
    report = bench.run(steps=2, memory=False)
    book, peer = report["cases"]
    assert book["peer_ms_over_book_ms"] is None
    assert peer["peer_ms_over_book_ms"] == pytest.approx(peer["ms_per_step"] / book["ms_per_step"])
    assert book["flops_source"] == "derived"


def test_every_topic_registers_a_case_and_peers_name_real_cases():
    from companions import scale

    found = bench.cases()
    assert {c.topic for c in found} == set(scale.TOPICS)
    names = {(c.topic, c.name) for c in found}
    peers = [c for c in found if c.peer]
    assert {c.topic for c in peers} == {"fourier", "looped"}
    assert all((c.topic, c.peer) in names for c in peers)


def test_peer_flop_counts_match_torch_counter():
    """The derived FLOP counts of the peers against torch's own count of one step."""
    step = bench.grokking_peer(p=7, width=10)
    assert bench.counted_flops(step) == bench.grokking_peer_flops(7, 10)
    step = bench.linear_transformer_peer(d=2, n=4, loops=2, batch=3)
    assert bench.counted_flops(step) == bench.linear_transformer_peer_flops(2, 4, 2, 3)


def test_book_trainer_flop_counts_match_torch_counter():
    from companions.fourier import bench as fb
    from companions.looped import bench as lb

    step = fb.trainer(5, 2, widths=[6, 4], regularizer="l2k1")()
    assert bench.counted_flops(step) == fb.step_flops(5, 2, 2, 6)
    step = fb.trainer(5, 3, widths=[6], regularizer="adamw", batch=7)()
    assert bench.counted_flops(step) == fb.step_flops(5, 3, 1, 6, batch=7)
    step = lb.trainer(2, 4, 3, 5)()
    products_by_c = 5 * 2 * 3**2 * (3 + 3)  # (zQ) C is elementwise: torch does not count it
    assert bench.counted_flops(step) == lb.step_flops(2, 4, 3, 5) - products_by_c


def test_bad_parameters():
    with pytest.raises(ValueError, match="steps"):
        bench.run(steps=0, memory=False)
    with pytest.raises(ValueError, match="topic"):
        bench.cases("nope")
