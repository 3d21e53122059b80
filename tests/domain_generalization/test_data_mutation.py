"""companions.domain_generalization.data draw for draw: each sampler against the law it states,
written out here with the same generator and draw order (U[0, 1] draws, the D_gamma coin, the
label coin), the argument ranges at their ends, the dtypes and the chunking (issue 23)."""

from __future__ import annotations

import pytest
import torch

from companions.domain_generalization import data

F32, F64 = torch.float32, torch.float64


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def ref_d_gamma(shape, gamma, g, dtype=F64):
    # D_gamma: |z| ~ U[0, 1], positive w.p. 1/2 + gamma
    mag = torch.rand(shape, generator=g, dtype=dtype)
    coin = torch.rand(shape, generator=g, dtype=dtype)
    return torch.where(coin < 0.5 + gamma, mag, -mag)


def ref_features(n, r, d, gamma, g, dtype=F64):
    z_r = torch.rand(n, r, generator=g, dtype=dtype)
    return torch.cat([z_r, ref_d_gamma((n, d - r), gamma, g, dtype)], dim=1)


def test_d_gamma_draw_for_draw_and_its_range():
    z = data.sample_d_gamma((4, 5), 0.2, gen(1))
    assert z.dtype == F64 and torch.equal(z, ref_d_gamma((4, 5), 0.2, gen(1)))
    z = data.sample_d_gamma((7,), -0.3, gen(2), dtype=F32)
    assert z.dtype == F32 and torch.equal(z, ref_d_gamma((7,), -0.3, gen(2), F32))
    # gamma near the ends of (-1/2, 1/2): almost all signs one way (the coin is < 1/2 + gamma)
    assert float((data.sample_d_gamma((2000,), 0.49, gen(3)) > 0).double().mean()) > 0.97
    assert float((data.sample_d_gamma((2000,), -0.49, gen(3)) > 0).double().mean()) < 0.03
    for bad in (0.5, -0.5, 0.7):
        msg = (
            rf"parameter 'gamma' = {bad!r} is not allowed: expected a real number in \(-1/2, 1/2\)"
        )
        with pytest.raises(ValueError, match=msg):
            data.sample_d_gamma((3,), bad, gen())


def test_features_draw_for_draw_and_the_range_of_r():
    z = data.sample_features(6, 2, 5, 0.1, gen(4))
    assert z.shape == (6, 5) and z.dtype == F64
    assert torch.equal(z, ref_features(6, 2, 5, 0.1, gen(4)))
    z = data.sample_features(3, 1, 2, -0.2, gen(5), dtype=F32)  # r = 1 and r = d - 1 allowed
    assert z.dtype == F32 and torch.equal(z, ref_features(3, 1, 2, -0.2, gen(5), F32))
    for r in (0, 5, 6):
        with pytest.raises(ValueError, match=rf"parameter 'r' = {r} is not allowed: expected 1 <="):
            data.sample_features(3, r, 5, 0.1, gen())


def test_sums_are_drawn_in_chunks_of_ten_thousand_rows():
    s_r, s_u = data.sample_sums(10_003, 2, d=5, gamma=0.3, generator=gen(6))
    g = gen(6)
    z = torch.cat([ref_features(10_000, 2, 5, 0.3, g), ref_features(3, 2, 5, 0.3, g)])
    assert s_r.dtype == F64 and s_r.shape == (10_003,)
    assert torch.allclose(s_r, z[:, :2].sum(1), atol=1e-14)
    assert torch.allclose(s_u, z[:, 2:].sum(1), atol=1e-14)
    s_r, s_u = data.sample_sums(5, 3, d=4, gamma=0.0, generator=gen(7), chunk=2)
    g = gen(7)
    z = torch.cat([ref_features(m, 3, 4, 0.0, g) for m in (2, 2, 1)])
    assert torch.allclose(s_r, z[:, :3].sum(1)) and torch.allclose(s_u, z[:, 3])


def test_a_dry_run_draws_the_first_chunk_of_sums(monkeypatch):
    monkeypatch.setenv("COMPANIONS_DRY_RUN", "1")
    s_r, s_u = data.sample_sums(5, 3, d=4, gamma=0.0, generator=gen(7), chunk=2)
    z = ref_features(2, 3, 4, 0.0, gen(7))
    assert torch.allclose(s_r, z[:, :3].sum(1)) and torch.allclose(s_u, z[:, 3])


def test_two_d_draw_for_draw_and_the_range_of_p():
    def ref(n, p, g, dtype):
        y = torch.where(torch.rand(n, generator=g) < 0.5, 1.0, -1.0).to(dtype)
        x1 = torch.rand(n, generator=g, dtype=dtype) * y
        aligned = torch.rand(n, generator=g) < p
        x2 = torch.rand(n, generator=g, dtype=dtype) * torch.where(aligned, y, -y)
        return torch.stack([x1, x2], dim=1), y

    for p, dtype in ((0.7, F32), (0.0, F64), (1.0, F32)):
        x, y = data.sample_two_d(9, p, gen(8), **({} if dtype is F32 else {"dtype": dtype}))
        xr, yr = ref(9, p, gen(8), dtype)
        assert x.dtype == y.dtype == dtype and torch.equal(x, xr) and torch.equal(y, yr)
    # the ends: p = 1 always aligned, p = 0 never
    x, y = data.sample_two_d(200, 1.0, gen(9))
    assert torch.all(x[:, 1] * y >= 0)
    x, y = data.sample_two_d(200, 0.0, gen(9))
    assert torch.all(x[:, 1] * y <= 0)
    for bad in (-0.1, 1.1):
        with pytest.raises(ValueError, match=rf"parameter 'p_aligned' = {bad} is not allowed"):
            data.sample_two_d(3, bad, gen())


def test_domains_draw_for_draw():
    x, y, dom = data.sample_domains(4, 2, 5, [0.1, -0.3, 0.2], gen(10))
    g = gen(10)
    xs, ys = [], []
    for gamma in (0.1, -0.3, 0.2):
        z = ref_features(4, 2, 5, gamma, g, F32)
        yy = torch.where(torch.rand(4, generator=g) < 0.5, 1.0, -1.0)
        xs.append(z * yy[:, None])  # x = z * y: the label's sign on every feature
        ys.append(yy)
    assert x.dtype == y.dtype == F32 and x.shape == (12, 5)
    assert torch.equal(x, torch.cat(xs)) and torch.equal(y, torch.cat(ys))
    assert dom.tolist() == [0] * 4 + [1] * 4 + [2] * 4
    x64, y64, _ = data.sample_domains(2, 1, 3, [0.0], gen(11), dtype=F64)
    g = gen(11)
    z = ref_features(2, 1, 3, 0.0, g, F64)  # the features are drawn in float64 too
    yy = torch.where(torch.rand(2, generator=g) < 0.5, 1.0, -1.0).to(F64)
    assert x64.dtype == y64.dtype == F64 and torch.equal(x64, z * yy[:, None])
    with pytest.raises(ValueError, match=r"parameter 'gammas\[1\]' = 0.5 is not allowed"):
        data.sample_domains(2, 1, 3, [0.0, 0.5], gen())


def test_a_draw_on_the_threshold_falls_on_the_strict_side():
    # every coin is `u < threshold` with u ~ U[0, 1): a draw equal to the threshold is a tails.
    # (seeds found by search: their draw is exactly 1/2, a float32 grid point k / 2^24)
    y_two_d = data.sample_two_d(256, 0.7, gen(174657))[1]
    assert float(torch.rand(256, generator=gen(174657))[193]) == 0.5
    assert float(y_two_d[193]) == -1.0
    # sample_domains: z_R, |z_U| and the D_gamma coin take 3 x 256 draws before the label's coin
    y_dom = data.sample_domains(256, 1, 2, [0.0], gen(1965))[1]
    assert float(torch.rand(1024, generator=gen(1965))[768 + 219]) == 0.5
    assert float(y_dom[219]) == -1.0
    # the D_gamma coin against 1/2 + gamma, and alignment against p: put the threshold on a draw
    draws = torch.rand(10, generator=gen(12), dtype=F64)  # 5 magnitudes, then 5 coins
    gamma = float(draws[7]) - 0.5  # exact (Sterbenz): 0.5 + gamma is the draw itself
    assert 0.5 + gamma == float(draws[7]) and abs(gamma) < 0.5
    z = data.sample_d_gamma((5,), gamma, gen(12))
    assert float(z[2]) == -float(draws[2])
    raw = torch.rand(3 * 8, generator=gen(13))  # label coins, |x1| (float32), alignment coins
    p = float(raw[16 + 3])
    x, y = data.sample_two_d(8, p, gen(13))
    assert float(x[3, 1] * y[3]) < 0  # not aligned: the coin equals p
