"""Unit tests of companions.fourier_transformer."""

import math

import pytest
import torch

from companions.fourier import transformer as ft


def test_top_power_fraction_on_known_matrices():
    p = 13
    i = torch.arange(p, dtype=torch.float64)
    prod = torch.cos(2 * math.pi * 3 * i[:, None] / p + 0.2) * torch.cos(
        2 * math.pi * 5 * i[None, :] / p
    )
    assert math.isclose(float(ft.top_power_fraction(prod)), 1.0, rel_tol=1e-12)
    two = prod + torch.cos(2 * math.pi * 1 * i[:, None] / p) * torch.cos(
        2 * math.pi * 2 * i[None, :] / p + 1.0
    )
    assert math.isclose(float(ft.top_power_fraction(two)), 0.5, rel_tol=1e-12)
    noise = torch.randn(p, p, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    assert float(ft.top_power_fraction(noise)) < 0.3


def test_model_shapes_attention_matrix_and_causality():
    m = ft.build(7, 3, 0, d_model=16, heads=2, d_head=4, d_mlp=8, layers=2)
    a = torch.randint(0, 7, (5, 3), generator=torch.Generator().manual_seed(1))
    assert m(a).shape == (5, 7)
    A = m.attention_matrices(0)
    blk = m.blocks[0]
    h = blk.ln1(m.embed)
    assert A.shape == (2, 7, 7)
    assert torch.allclose(A[1], h @ blk.WQ[1] @ blk.WK[1].T @ h.T, atol=1e-5)
    # same seed, same model
    assert torch.equal(
        ft.build(7, 3, 0, d_model=16, heads=2, d_head=4, d_mlp=8, layers=2).embed, m.embed
    )


def test_split_is_partition_and_training_fits():
    g = torch.Generator().manual_seed(2)
    data = ft.split(5, 2, 0.6, g)
    assert len(data[0]) == 15 and len(data[2]) == 10
    m = ft.build(5, 2, 0, d_model=32, heads=2, d_head=8, d_mlp=32)
    hist = ft.train_transformer(
        m, data, steps=150, lr=3e-3, weight_decay=0.1, generator=g, log_every=50, progress=False
    )
    assert hist.steps == [0, 50, 100, 150] and hist.train_acc[-1] == 1.0
    assert hist.first_step("train_acc", 0.99) is not None


def test_split_size_rounds_to_nearest_and_keeps_one_input():
    assert ft.split_size(5, 2, 0.6) == 15
    assert ft.split_size(3, 2, 0.7) == 6  # 6.3
    assert ft.split_size(3, 3, 0.5) == 14  # 13.5 rounds to even
    assert ft.split_size(7, 2, 0.0) == 1
    assert ft.split_size(7, 2, 1.0) == 49
    for p, k, f in [(5, 2, 0.6), (3, 2, 0.0), (7, 3, 0.35)]:
        assert len(ft.split(p, k, f, torch.Generator().manual_seed(0))[0]) == ft.split_size(p, k, f)


def test_bad_parameters():
    import companions

    with pytest.raises(ValueError, match="grok_p"):
        companions.preset("fourier-transformer", "smoke", grok_p=[11], grok_k=[2, 3])
    with pytest.raises(ValueError, match="'p'"):
        companions.preset("fourier-transformer", "smoke", p=4)


def test_cosine_structure_tells_a_product_of_cosines_from_noise_and_1d_waves():
    p = 11
    i = torch.arange(p, dtype=torch.float64)
    prod = torch.cos(2 * math.pi * 3 * i[:, None] / p + 0.3) * torch.cos(
        2 * math.pi * 2 * i[None, :] / p - 0.7
    )
    frac, z1, z2 = ft.cosine_structure(torch.stack([prod, prod.T]))
    assert torch.allclose(frac, torch.ones(2, dtype=torch.float64), atol=1e-12)
    assert z1.tolist() == [3, 2] and z2.tolist() == [2, 3]
    # a 1-D wave is not a 2-D cosine; noise spreads its power
    wave_1d = torch.cos(2 * math.pi * 4 * i[:, None] / p).expand(p, p)
    assert float(ft.cosine_structure(wave_1d)[0]) == 0.0
    noise = torch.randn(200, p, p, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    assert float(ft.cosine_structure(noise)[0].mean()) < 0.2
    # two products at different frequency pairs: half the power on the strongest pair's points
    other = torch.cos(2 * math.pi * 1 * i[:, None] / p) * torch.cos(
        2 * math.pi * 5 * i[None, :] / p
    )
    assert float(ft.cosine_structure(prod + 0.5 * other)[0]) == pytest.approx(0.8, abs=1e-9)
    with pytest.raises(ValueError, match="'A'"):
        ft.cosine_structure(torch.zeros(4, 4))


def test_gaps_by_k_sorts_the_ks_and_needs_every_run_to_grok():
    def run(k, t_train, t_test):
        return dict(k=k, t_train=t_train, t_test=t_test)

    runs = [run(3, 100, 400), run(2, 50, 950), run(3, 120, 420), run(2, 60, 1000)]
    gaps = ft.gaps_by_k(runs)
    assert list(gaps) == [2, 3]
    assert gaps == {2: [900, 940], 3: [300, 300]}
    assert ft.gaps_by_k(runs + [run(4, 80, None)]) is None
    assert ft.gaps_by_k(runs + [run(4, None, None)]) is None


def test_training_logs_the_claims_statistic_of_the_attention_matrices():
    data = ft.split(7, 2, 0.5, torch.Generator().manual_seed(1))
    model = ft.build(7, 2, 0, d_model=16, heads=2, d_head=4, d_mlp=8)
    with torch.no_grad():
        share0 = float(ft.cosine_structure(model.attention_matrices(0))[0].mean())
    hist = ft.train_transformer(
        model,
        data,
        steps=3,
        lr=1e-2,
        weight_decay=0.0,
        generator=torch.Generator().manual_seed(2),
        log_every=2,
        progress=False,
    )
    assert hist.steps == [0, 2, 3] and len(hist.kq_share) == 3
    assert hist.kq_share[0] == pytest.approx(share0, abs=1e-6)
    with torch.no_grad():
        share = float(ft.cosine_structure(model.attention_matrices(0))[0].mean())
    assert hist.kq_share[-1] == pytest.approx(share, abs=1e-6)


def test_train_seeds_and_grokking_runs_train_one_model_per_seed():
    sizes = dict(d_model=16, heads=2, d_head=4, d_mlp=8)
    data = ft.split(5, 2, 0.5, torch.Generator().manual_seed(1))

    def gen(s):
        return torch.Generator().manual_seed(s)

    kw = dict(steps=4, lr=1e-2, weight_decay=0.0, generator_for=gen, sizes=sizes, log_every=2)
    runs = ft.train_seeds(5, 2, data=data, seeds=2, seed=0, **kw)
    assert len(runs) == 2
    for s, (A0, A1, hist) in enumerate(runs):
        assert A0.shape == A1.shape == (2, 5, 5)
        assert torch.equal(A0, ft.build(5, 2, s, **sizes).attention_matrices(0).detach())
        assert not torch.equal(A0, A1) and hist.steps[-1] == 4
    grok = ft.grokking_runs([(5, 2), (3, 3)], 2, seed=0, layers=1, train_fraction=0.5, **kw)
    assert [(g["p"], g["k"], g["seed"], g["size"]) for g in grok] == [
        (5, 2, 0, 25),
        (5, 2, 1, 25),
        (3, 3, 0, 27),
        (3, 3, 1, 27),
    ]
    for g in grok:
        assert g["t_train"] == g["hist"].first_step("train_acc", 0.99)
        assert g["t_test"] == g["hist"].first_step("test_acc", 0.95)
        assert g["final_test"] == g["hist"].test_acc[-1]


def test_accuracy_is_the_same_in_chunks():
    model = ft.build(7, 3, seed=1, d_model=16, heads=2, d_head=4, d_mlp=16)
    a = torch.cartesian_prod(*[torch.arange(7)] * 3)
    y = a.sum(-1) % 7
    whole = ft.accuracy(model, a, y)  # one pass, as train_transformer logged before
    assert whole == float((model(a).argmax(-1) == y).float().mean())
    assert 0 < whole < 1  # an untrained model: some hits, some misses
    for chunk in (1, 50, len(y) - 1):
        assert ft.accuracy(model, a, y, chunk=chunk) == whole
    with pytest.raises(ValueError, match="'chunk'"):
        ft.accuracy(model, a, y, chunk=0)
