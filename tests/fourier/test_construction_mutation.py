"""companions.fourier.construction on small cases worked out by hand (issue 23, mutation testing):
the terms of Lemma C.18 listed by hand for k = 1, 2, the sign (-1)^(|b|/2) at |b| = 4, the norms,
beta and the scale C of Lemma C.18, the phases against the neurons themselves, the network's output
against its closed form, dtypes and the neuron-count table written out in full."""

from __future__ import annotations

import math

import pytest
import torch

from companions.fourier import construction as fcon
from companions.fourier import network as fnet

F64 = torch.float64


def test_construction_terms_k1_and_k2_by_hand():
    # k = 1: b in {0,1}^2 with |b| even: (0,0) -> sign +1, (1,1) -> |b| = 2 -> sign -1; c = (1,)
    assert list(fcon._construction_terms(1)) == [((0, 0), (1,), 1), ((1, 1), (1,), -1)]
    # k = 2: b in {(0,0,0), (0,1,1), (1,0,1), (1,1,0)} (lexicographic), c in {(1,1), (1,-1)},
    # s = (-1)^(|b|/2) * c_1 c_2
    expected = []
    for b, sb in [((0, 0, 0), 1), ((0, 1, 1), -1), ((1, 0, 1), -1), ((1, 1, 0), -1)]:
        expected += [(b, (1, 1), sb), (b, (1, -1), -sb)]
    assert list(fcon._construction_terms(2)) == expected


def test_construction_terms_k3_sign_and_count():
    terms = list(fcon._construction_terms(3))
    assert len(terms) == 2 ** (2 * 3 - 1)  # 32 = 2^(2k-1)
    for b, c, s in terms:
        assert sum(b) % 2 == 0 and c[0] == 1 and len(c) == 3 and len(b) == 4
        # |b| = 0 or 4: (-1)^0 = (-1)^2 = +1; |b| = 2: -1
        assert s == (1 if sum(b) in (0, 4) else -1) * math.prod(c)
    assert ((1, 1, 1, 1), (1, 1, 1), 1) in terms


def test_construction_terms_k5_sign_at_six_ones_and_integer_signs():
    # |b| = 6 is 2 mod 4: (-1)^3 = -1 (a mod-5 or mod-3 test would call it +1); the signs are ints
    terms = list(fcon._construction_terms(5))
    assert len(terms) == 2 ** (2 * 5 - 1)
    for b, c, s in terms:
        assert type(s) is int and all(type(x) is int for x in c)
        assert s == (-1) ** (sum(b) // 2) * math.prod(c)
    assert ((1, 1, 1, 1, 1, 1), (1, 1, 1, 1, 1), -1) in terms


@pytest.mark.parametrize("p,k", [(3, 1), (5, 2), (7, 3)])
def test_construction_shapes_beta_norms_and_frequencies(p, k):
    c = fcon.construction(p, k)
    m = 2 ** (2 * k - 1) * (p - 1) // 2
    assert c.U.shape == (m, k, p) and c.W.shape == (m, p)
    assert c.U.dtype == F64 and c.W.dtype == F64
    assert c.phases_u.shape == (m, k) and c.phase_w.shape == (m,)
    assert c.phases_u.dtype == F64 and c.phase_w.dtype == F64
    # beta = sqrt(2 / ((k+1) p)) (Lemma C.18)
    assert math.isclose(c.beta, math.sqrt(2 / ((k + 1) * p)), rel_tol=1e-15)
    # every u_j and w is beta * (+-cos or +-sin) at a nonzero frequency: squared norm beta^2 p / 2
    # = 1 / (k+1), so each neuron has norm 1
    norms = c.U.pow(2).sum((-1, -2)) + c.W.pow(2).sum(-1)
    assert torch.allclose(norms, torch.ones(m, dtype=F64), atol=1e-13)
    assert torch.allclose(c.U.pow(2).sum(-1), torch.full((m, k), 1 / (k + 1), dtype=F64))
    # frequencies 1..(p-1)/2 in order, each with 2^(2k-1) neurons
    per = 2 ** (2 * k - 1)
    assert torch.equal(c.zeta, torch.arange(1, (p - 1) // 2 + 1).repeat_interleave(per))
    # scale C = beta^(k+1) 2^(k-1) k!
    assert math.isclose(c.scale, c.beta ** (k + 1) * 2 ** (k - 1) * math.factorial(k))


@pytest.mark.parametrize("p,k", [(3, 1), (5, 2), (5, 3)])
def test_construction_neurons_are_beta_cos_at_the_stated_phases(p, k):
    # the docstring's convention: u_j(a) = beta cos(theta_j + 2 pi zeta a / p), same for w
    c = fcon.construction(p, k)
    ang = 2 * math.pi * c.zeta[:, None].to(F64) * torch.arange(p, dtype=F64) / p  # (m, p)
    U = c.beta * torch.cos(c.phases_u[:, :, None] + ang[:, None, :])
    W = c.beta * torch.cos(c.phase_w[:, None] + ang)
    assert torch.allclose(c.U, U, atol=1e-13) and torch.allclose(c.W, W, atol=1e-13)
    # the phases are among the four of the table: 0, pi, -pi/2, pi/2
    allowed = torch.tensor([0.0, math.pi, -math.pi / 2, math.pi / 2], dtype=F64)
    for ph in (c.phases_u.flatten(), c.phase_w):
        assert torch.isclose(ph[:, None], allowed[None]).any(-1).all()


@pytest.mark.parametrize("p,k", [(3, 1), (5, 2), (7, 2), (5, 3)])
def test_construction_output_is_scale_times_the_cosine_sum(p, k):
    # the field's comment: f(a)[c] = C sum_zeta cos(2 pi zeta (a_1 + ... + a_k - c) / p)
    con = fcon.construction(p, k)
    a, _ = fnet.dataset(p, k)
    f = fnet.forward(con.U, con.W, a)
    d = a.sum(-1)[:, None] - torch.arange(p)[None]  # (N, p)
    zetas = torch.arange(1, (p - 1) // 2 + 1, dtype=F64)
    closed = torch.cos(2 * math.pi * zetas[:, None, None] * d.to(F64) / p).sum(0)
    assert torch.allclose(f, con.scale * closed, atol=1e-13)


def test_construction_float32_and_device():
    c = fcon.construction(5, 2, dtype=torch.float32, device="cpu")
    assert c.U.dtype == torch.float32 and c.W.dtype == torch.float32
    assert c.phases_u.dtype == torch.float32 and c.phase_w.dtype == torch.float32
    assert c.U.device.type == "cpu" and c.W.device.type == "cpu"
    ref = fcon.construction(5, 2)
    assert torch.allclose(c.U.double(), ref.U, atol=1e-6)
    assert torch.allclose(c.W.double(), ref.W, atol=1e-6)
    assert c.zeta.dtype == torch.int64


def test_construction_is_placed_on_the_device_asked():
    # the meta device stands in for an accelerator: no data, but the placement is checked
    c = fcon.construction(3, 1, device="meta")
    assert c.U.device.type == "meta" and c.W.device.type == "meta"


def test_construction_scale_defaults_to_zero():
    t = torch.zeros(1)
    assert fcon.Construction(t, t, t, t, t, 1.0).scale == 0.0


def test_neuron_count_table_in_full():
    # rows by hand: k=1: 2^0 = 1 neuron per term, 2 * 1 = 2, 2^1 = 2; k=3: 8 * 4 = 32, 2^5 = 32
    expected = "\n".join(
        [
            "| k | nonzero terms of (C.21), k+1 variables | neurons per term | per frequency "
            "| $2^{2k-1}$ | the source |",
            "|---|---|---|---|---|---|",
            "| 1 | 2 | 1 | 2 | 2 |  |",
            "| 3 | 8 | 4 | 32 | 32 | 56 (Lemma C.17), 32 (Lemma C.18) |",
        ]
    )
    assert fcon.neuron_count_table({3: 8, 1: 2}) == expected
    # zero terms is allowed (only negative counts and k < 1 are bad)
    assert fcon.neuron_count_table({1: 0}).splitlines()[2] == "| 1 | 0 | 1 | 0 | 2 |  |"


@pytest.mark.parametrize("bad", [{0: 1}, {-1: 2}, {2: -1}])
def test_neuron_count_table_rejects_bad_entries(bad):
    ((k, t),) = bad.items()
    msg = f"parameter 'nonzero_terms' has a bad entry {k}: {t}"
    with pytest.raises(ValueError) as err:
        fcon.neuron_count_table(bad)
    assert str(err.value) == msg
