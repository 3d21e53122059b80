"""Unit tests of the shared core: scale.py, ledger.py, runtime.py, train.py.

Every test uses a throwaway chapter registered under ``_test-chapter`` so that it does not depend
on any real chapter's presets.
"""

from __future__ import annotations

import json
import os
import random
import re
import sys

import numpy as np
import pytest
import torch

from companions import ledger as L
from companions import runtime as R
from companions import scale as S
from companions import train as T

CHAPTER_ID = "_test-chapter"


def _sizes_fit_n(p):
    if p["n"] < len(p["sizes"]):
        return (
            f"parameter 'n' = {p['n']} is not allowed: "
            f"it must be at least len(sizes) = {len(p['sizes'])}"
        )
    return None


PRESETS = {
    "smoke": {"n": 2, "lr": 0.5, "mode": "a", "sizes": [1, 2]},
    "default": {"n": 10, "lr": 0.1, "mode": "b", "sizes": [1, 2, 3]},
    "paper": {"n": 100, "lr": 0.01, "mode": "b", "sizes": [4, 8, 16, 32]},
}


@pytest.fixture
def chapter(monkeypatch):
    monkeypatch.delenv(S.SCALE_ENV, raising=False)
    ch = S.register_chapter(
        S.Chapter(
            id=CHAPTER_ID,
            title="A throwaway chapter",
            notebook="book/_test/nothing.md",
            params={
                "n": S.Int(1, 100, doc="a size"),
                "lr": S.Float(0, 1, low_open=True, doc="a step size"),
                "mode": S.Choice(("a", "b")),
                "sizes": S.ListOf(S.Int(1), min_len=2, max_len=4),
            },
            presets=PRESETS,
            checks=(_sizes_fit_n,),
        )
    )
    yield ch
    S._REGISTRY.pop(CHAPTER_ID, None)


# ---------------------------------------------------------------------------------------------
# scale.py
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("scale", S.SCALES)
def test_preset_gives_the_scale_values(chapter, scale):
    cfg = S.preset(CHAPTER_ID, scale)
    assert cfg.chapter == CHAPTER_ID and cfg.scale == scale
    assert cfg.n == PRESETS[scale]["n"] and cfg["lr"] == PRESETS[scale]["lr"]
    assert cfg.sizes == tuple(PRESETS[scale]["sizes"])
    assert cfg.device == "auto" and cfg.seed == 0


def test_overrides_replace_preset_values(chapter):
    cfg = S.preset(CHAPTER_ID, "smoke", n=7, sizes=[3, 4, 5], device="cpu", seed=11)
    assert (cfg.n, cfg.sizes, cfg.device, cfg.seed) == (7, (3, 4, 5), "cpu", 11)
    assert cfg.lr == PRESETS["smoke"]["lr"]


@pytest.mark.parametrize(
    "name, value, fragment",
    [
        ("n", 0, "parameter 'n' = 0"),
        ("n", -3, "parameter 'n' = -3"),
        ("n", 101, "parameter 'n' = 101"),
        ("n", 2.5, "parameter 'n' = 2.5"),
        ("n", True, "parameter 'n' = True"),
        ("n", "4", "parameter 'n' = '4'"),
        ("lr", 0, "parameter 'lr' = 0"),  # the low end is open
        ("lr", 1.5, "parameter 'lr' = 1.5"),
        ("lr", float("nan"), "parameter 'lr' = nan"),
        ("lr", float("inf"), "parameter 'lr' = inf"),
        ("mode", "c", "parameter 'mode' = 'c'"),
        ("device", "tpu", "parameter 'device' = 'tpu'"),
        ("seed", -1, "parameter 'seed' = -1"),
    ],
)
def test_bad_value_names_the_parameter_and_value(chapter, name, value, fragment):
    with pytest.raises(ValueError) as err:
        S.preset(CHAPTER_ID, "smoke", **{name: value})
    assert fragment in str(err.value)
    assert "expected" in str(err.value)  # says what is allowed


def test_error_message_states_the_allowed_range(chapter):
    with pytest.raises(ValueError, match=r"an integer in \[1, 100\]"):
        S.preset(CHAPTER_ID, "smoke", n=0)
    with pytest.raises(ValueError, match=r"a real number in \(0, 1\]"):
        S.preset(CHAPTER_ID, "smoke", lr=0.0)


def test_integral_floats_are_accepted_as_ints(chapter):
    cfg = S.preset(CHAPTER_ID, "smoke", n=4.0)
    assert cfg.n == 4 and isinstance(cfg.n, int)
    assert S.preset(CHAPTER_ID, "smoke", lr=1).lr == 1.0  # closed high end


@pytest.mark.parametrize(
    "value, fragment",
    [
        ([1], "parameter 'sizes' = [1]"),  # too short
        ([1, 2, 3, 4, 5], "parameter 'sizes' = [1, 2, 3, 4, 5]"),  # too long
        ("12", "parameter 'sizes' = '12'"),  # a string is not a list
        (3, "parameter 'sizes' = 3"),
        ([1, 0], "parameter 'sizes[1]' = 0"),  # the bad item is named by index
        ([1, 2.5], "parameter 'sizes[1]' = 2.5"),
    ],
)
def test_list_validation(chapter, value, fragment):
    with pytest.raises(ValueError) as err:
        S.preset(CHAPTER_ID, "smoke", sizes=value)
    assert fragment in str(err.value)


def test_list_values_become_tuples_and_params_lists(chapter):
    cfg = S.preset(CHAPTER_ID, "smoke", sizes=(2, 3), ledger_dir="/tmp/x")
    assert cfg.sizes == (2, 3)
    params = cfg.params()
    assert params == {
        "n": 2,
        "lr": 0.5,
        "mode": "a",
        "sizes": [2, 3],
    }  # no device, seed, ledger_dir
    json.dumps(params)


def test_summary_is_one_sentence_of_the_scale_runtime_and_knobs(chapter):
    cfg = S.preset(CHAPTER_ID, "smoke", sizes=(2, 3), ledger_dir="/tmp/x")
    assert cfg.summary("cpu, 2 threads") == (
        "Scale `smoke`; cpu, 2 threads. Parameters: `n` = 2; `lr` = 0.5; `mode` = a; "
        "`sizes` = 2, 3."
    )


def test_cross_parameter_check(chapter):
    with pytest.raises(ValueError, match="parameter 'n' = 1"):
        S.preset(CHAPTER_ID, "smoke", n=1)  # sizes has 2 items


def test_cross_parameter_check_accepts_consistent_values(chapter):
    cfg = S.preset(CHAPTER_ID, "smoke", n=2, sizes=[5, 6])
    assert cfg.n == 2


def test_unknown_scale_is_named(chapter):
    with pytest.raises(ValueError, match="parameter 'scale' = 'huge'"):
        S.preset(CHAPTER_ID, "huge")


def test_unknown_parameter_is_named(chapter):
    with pytest.raises(ValueError, match="bogus"):
        S.preset(CHAPTER_ID, "smoke", bogus=1)


def test_unknown_chapter_is_named():
    with pytest.raises(ValueError, match="no-such-chapter"):
        S.preset("no-such-chapter", "smoke")


def test_book_scale_env_sets_the_default_scale(chapter, monkeypatch):
    assert S.preset(CHAPTER_ID).scale == "default"
    monkeypatch.setenv(S.SCALE_ENV, "paper")
    cfg = S.preset(CHAPTER_ID)
    assert cfg.scale == "paper" and cfg.n == PRESETS["paper"]["n"]
    # an explicit scale wins over the environment
    assert S.preset(CHAPTER_ID, "smoke").n == PRESETS["smoke"]["n"]


def test_bad_book_scale_env_is_named(chapter, monkeypatch):
    monkeypatch.setenv(S.SCALE_ENV, "gigantic")
    with pytest.raises(ValueError, match=S.SCALE_ENV):
        S.preset(CHAPTER_ID)


def test_config_is_read_only(chapter):
    cfg = S.preset(CHAPTER_ID, "smoke")
    with pytest.raises(AttributeError):
        cfg.n = 5
    with pytest.raises(TypeError):
        cfg["n"] = 5  # no item assignment on a Mapping
    with pytest.raises(TypeError):
        cfg._data["n"] = 5  # the underlying mapping is a read-only proxy
    assert cfg.n == PRESETS["smoke"]["n"]


def test_config_missing_attribute_raises_attribute_error(chapter):
    cfg = S.preset(CHAPTER_ID, "smoke")
    assert not hasattr(cfg, "no_such_knob")
    with pytest.raises(KeyError):
        cfg["no_such_knob"]


def test_none_overrides_are_ignored(chapter):
    cfg = S.preset(
        CHAPTER_ID,
        "default",
        n=None,
        lr=None,
        mode=None,
        sizes=None,
        device=None,
        seed=None,
        ledger_dir=None,
    )
    assert dict(cfg) == {
        "device": "auto",
        "seed": 0,
        "n": 10,
        "lr": 0.1,
        "mode": "b",
        "sizes": (1, 2, 3),
    }
    assert "ledger_dir" not in cfg


def test_ledger_dir_is_kept_as_a_string(chapter, tmp_path):
    cfg = S.preset(CHAPTER_ID, "smoke", ledger_dir=tmp_path)
    assert cfg.ledger_dir == str(tmp_path)


def test_chapter_must_have_every_scale():
    with pytest.raises(ValueError, match="paper"):
        S.Chapter(
            id="_x",
            title="x",
            notebook="x.md",
            params={"n": S.Int(1)},
            presets={"smoke": {"n": 1}, "default": {"n": 1}},
        )


def test_chapter_presets_must_match_params():
    with pytest.raises(ValueError, match="missing"):
        S.Chapter(
            id="_x",
            title="x",
            notebook="x.md",
            params={"n": S.Int(1), "m": S.Int(1)},
            presets={s: {"n": 1} for s in S.SCALES},
        )
    with pytest.raises(ValueError, match="unknown"):
        S.Chapter(
            id="_x",
            title="x",
            notebook="x.md",
            params={"n": S.Int(1)},
            presets={s: {"n": 1, "extra": 2} for s in S.SCALES},
        )


def test_a_chapter_id_cannot_be_declared_twice(chapter):
    other = S.Chapter(
        id=CHAPTER_ID,
        title="another",
        notebook="y.md",
        params={"n": S.Int(1)},
        presets={s: {"n": 1} for s in S.SCALES},
    )
    with pytest.raises(ValueError, match="declared twice"):
        S.register_chapter(other)
    assert S.register_chapter(chapter) is chapter  # re-declaring the same chapter is harmless


def test_chapters_discovers_registered_chapters(chapter):
    known = S.chapters()
    assert known[CHAPTER_ID] is chapter
    assert list(known) == sorted(known)


def test_spec_descriptions():
    assert S.Int(1, None).describe() == "an integer >= 1"
    assert S.Float(0, 1, low_open=True, high_open=True).describe() == "a real number in (0, 1)"
    assert "'x'" in S.Choice(("x", "y")).describe()
    assert "at least 2" in S.ListOf(S.Int(1), min_len=2).describe()


def _as_lists(values):
    return {k: list(v) if isinstance(v, (list, tuple)) else v for k, v in values.items()}


def test_between_gives_the_presets_at_its_ends(chapter):
    assert S.between(CHAPTER_ID, 0) == _as_lists(PRESETS["default"])
    assert S.between(CHAPTER_ID, 1) == _as_lists(PRESETS["paper"])
    assert S.between(CHAPTER_ID, 1.0) == _as_lists(PRESETS["paper"])


def test_between_gives_every_book_chapter_its_presets_at_its_ends():
    for chapter_id, chapter in S.chapters().items():
        assert S.between(chapter_id, 0) == _as_lists(chapter.presets["default"]), chapter_id
        assert S.between(chapter_id, 1) == _as_lists(chapter.presets["paper"]), chapter_id


def test_between_moves_sizes_geometrically(chapter):
    middle = S.between(CHAPTER_ID, 0.5)
    assert middle["n"] == 32  # sqrt(10 * 100) = 31.6
    assert middle["lr"] == pytest.approx(0.1 * 0.1**0.5)
    assert middle["mode"] == "b"
    # length sqrt(3 * 4) = 3.5 -> 3 items, read at the ends and the middle of each list:
    # [1, 2, 3] and [4, sqrt(8 * 16), 32], then the geometric mean of each pair
    assert middle["sizes"] == [2, round((2 * 128**0.5) ** 0.5), round(96**0.5)] == [2, 5, 10]
    assert S.between(CHAPTER_ID, 0.25)["n"] == round(10 * 10**0.25) == 18


def test_between_keeps_a_choice_until_the_end(chapter, monkeypatch):
    monkeypatch.setitem(PRESETS["paper"], "mode", "a")
    assert S.between(CHAPTER_ID, 0.99)["mode"] == "b"
    assert S.between(CHAPTER_ID, 1)["mode"] == "a"


def test_toward_is_linear_unless_both_ends_are_positive():
    assert S.toward(0.0, 0.001, 0.5) == pytest.approx(0.0005)
    assert S.toward(-2.0, 2.0, 0.25) == pytest.approx(-1.0)
    assert S.toward(2.0, 8.0, 0.5) == pytest.approx(4.0)
    assert S.toward(2.0, 8.0, 0) == 2.0 and S.toward(2.0, 8.0, 1) == 8.0
    assert S.toward(4, 0, 0.5) == 2  # an end at zero: linear, not 4 * 0^0.5
    same = S.toward(3, 3, 0.5)  # a value both presets share is kept as it is
    assert same == 3 and type(same) is int


def test_read_at_spreads_positions_over_the_list():
    assert [S._read_at([1, 4, 16], j, 5) for j in range(5)] == pytest.approx([1, 2, 4, 8, 16])
    assert [S._read_at([1, 4, 16], j, 2) for j in range(2)] == [1, 16]
    assert S._read_at([7], 2, 3) == 7 and S._read_at([3, 9], 0, 1) == 3


def test_between_drops_repeated_integer_items(chapter, monkeypatch):
    monkeypatch.setitem(PRESETS["default"], "sizes", [1, 2])
    monkeypatch.setitem(PRESETS["paper"], "sizes", [1, 2, 3, 4])
    # length sqrt(2 * 4) = 2.8 -> 3 items: [1, 1.41, 2] and [1, 2.45, 4] -> 1, 1.86, 2.83
    assert S.between(CHAPTER_ID, 0.5)["sizes"] == [1, 2, 3]
    monkeypatch.setitem(PRESETS["paper"], "sizes", [1, 1, 2, 2])
    assert S.between(CHAPTER_ID, 0.5)["sizes"] == [1, 2]


@pytest.mark.parametrize("t", [-0.1, 1.5, True, "0.5", float("nan")])
def test_between_names_a_bad_fraction(chapter, t):
    expected = re.escape(f"parameter 't' = {t!r} is not allowed: expected a real number in [0, 1]")
    with pytest.raises(ValueError, match=f"^{expected}$"):
        S.between(CHAPTER_ID, t)


def test_between_does_not_read_the_scale_from_the_environment(chapter, monkeypatch):
    monkeypatch.setenv(S.SCALE_ENV, "no-such-scale")
    assert S.between(CHAPTER_ID, 0) == PRESETS["default"]


def _odd_n(p):
    return f"parameter 'n' = {p['n']} must be odd" if p["n"] % 2 == 0 else None


def _throwaway(**fields):
    """A one-parameter chapter: ``n`` is 11 at default and 101 at paper scale, and must be odd."""
    presets = {"smoke": {"n": 3}, "default": {"n": 11}, "paper": {"n": 101}}
    chapter = S.Chapter(
        id="_odd",
        title="t",
        notebook="x.md",
        params={"n": S.Int(1)},
        presets=presets,
        checks=(_odd_n,),
        **fields,
    )
    S._REGISTRY["_odd"] = chapter
    return chapter


@pytest.fixture
def cleanup():
    yield
    S._REGISTRY.pop("_odd", None)


def test_between_rejects_a_point_the_chapter_does_not_accept(cleanup):
    _throwaway()
    assert S.between("_odd", 0.08) == {"n": 13}  # 11 * (101 / 11)^0.08 = 13.1
    with pytest.raises(ValueError, match="parameter 'n' = 14 must be odd"):
        S.between("_odd", 0.12)  # 14.3


def test_between_moves_a_point_where_the_chapter_snaps_it(cleanup):
    seen = []

    def snap(values, t):
        seen.append((dict(values), t))
        values["n"] = S.nearest_int(values["n"], lambda n: n % 2 == 1)
        return values

    _throwaway(snap=snap)
    assert S.between("_odd", 0.12) == {"n": 13}  # 14 is as near to 13 as to 15: the smaller
    assert seen == [({"n": 14}, 0.12)]
    assert S.between("_odd", 0.135) == {"n": 15}  # 14.8 rounds to 15


def test_every_book_chapter_accepts_the_points_between_its_presets():
    for chapter_id in S.chapters():
        for t in (0.05, 0.1, 0.2, 0.3, 0.5):
            S.between(chapter_id, t)


def test_the_fourier_batch_moves_with_the_inputs_a_step_sees():
    # fourier-training: full batch (0) over 11^2 = 121 inputs at default, 1024 at paper scale
    points = {t: S.between("fourier-training", t) for t in (0.05, 0.1, 0.2)}
    assert points[0.05]["batch"] == 0  # 121 * (1024 / 121)^0.05 = 134 >= 121 inputs: full
    assert (points[0.1]["p"], points[0.1]["batch"]) == (13, round(121 * (1024 / 121) ** 0.1))
    assert points[0.2]["batch"] == 0  # 186 >= 13^2 = 169
    assert S.between("fourier-training", 1)["batch"] == 1024
    # fourier-transformer: the full batch is the training split, half of p^k
    middle = S.between("fourier-transformer", 0.2)
    assert (middle["p"], middle["k"]) == (13, 3)
    assert middle["batch"] == round(666 * (1024 / 666) ** 0.2) < round(0.5 * 13**3)


def test_nearest_int():
    odd = lambda n: n % 2 == 1  # noqa: E731
    assert S.nearest_int(4, odd) == 3 and S.nearest_int(5, odd) == 5
    assert S.nearest_int(1, lambda n: n % 8 == 0) == 8
    assert S.nearest_int(0, odd, low=4) == 5
    assert (
        S.nearest_int(20, lambda n: n % 16 == 0) == 16
        and S.nearest_int(24, lambda n: n % 16 == 0) == 16
    )
    with pytest.raises(ValueError, match="no integer near 3"):
        S.nearest_int(3, lambda n: False)
    # the search reaches 10 max(value, low) + 99 either side of value, and no further
    assert S.nearest_int(5, lambda n: n == 154) == 154
    with pytest.raises(ValueError, match="no integer near 5"):
        S.nearest_int(5, lambda n: n == 155)


def test_is_power_of_two():
    assert [n for n in range(-2, 17) if S.is_power_of_two(n)] == [1, 2, 4, 8, 16]


# ---------------------------------------------------------------------------------------------
# ledger.py
# ---------------------------------------------------------------------------------------------
def _strict_json(text: str):
    def reject(constant):
        raise ValueError(f"non-standard JSON constant {constant}")

    return json.loads(text, parse_constant=reject)


@pytest.fixture
def led(chapter, tmp_path):
    return L.Ledger(
        S.preset(CHAPTER_ID, "smoke", device="cpu", seed=3, ledger_dir=tmp_path / "ledgers")
    )


def test_check_status_is_computed(led):
    assert (
        led.check("a", "Theorem 1", kind="identity", holds=True, expected=0, observed=0)["status"]
        == "holds"
    )
    assert (
        led.check("b", "Theorem 1", kind="bound", holds=False, expected=1, observed=2)["status"]
        == "fails"
    )
    assert (
        led.check(
            "c", "Theorem 1", kind="prediction", holds=np.bool_(True), expected=1, observed=1
        )["status"]
        == "holds"
    )
    assert [c["id"] for c in led.failed] == ["b"]


@pytest.mark.parametrize(
    "observed, tolerance, status",
    [
        (1.0, 0.0, "holds"),
        (1.05, 0.1, "holds"),
        (1.2, 0.1, "fails"),
        (0.8, 0.1, "fails"),
        (float("nan"), 1e9, "fails"),
        (float("inf"), 1e9, "fails"),
        (float("nan"), float("inf"), "fails"),
    ],
)
def test_check_close(led, observed, tolerance, status):
    claim = led.check_close(
        "x", "Lemma 2", kind="bound", expected=1.0, observed=observed, tolerance=tolerance
    )
    assert claim["status"] == status


def test_check_at_most(led):
    assert (
        led.check_at_most("under", "Theorem 3", "bound", bound=2.0, observed=1.5)["status"]
        == "holds"
    )
    assert (
        led.check_at_most("equal", "Theorem 3", "bound", bound=2.0, observed=2.0)["status"]
        == "holds"
    )
    assert (
        led.check_at_most("over", "Theorem 3", "bound", bound=2.0, observed=2.5)["status"]
        == "fails"
    )
    assert (
        led.check_at_most("nan", "Theorem 3", "bound", bound=2.0, observed=float("nan"))["status"]
        == "fails"
    )


def test_compare_status(led):
    assert (
        led.compare("r", "Table 2", expected=4.57, observed=4.6, agrees=True)["status"]
        == "reproduced"
    )
    claim = led.compare(
        "e", "Section 8.6", expected="x", observed="y", agrees=False, kind="erratum", note="why"
    )
    assert claim["status"] == "differs" and claim["kind"] == "erratum"
    assert led.failed == []  # a difference is a finding, not a failure


def test_kinds_are_checked(led):
    with pytest.raises(ValueError):
        led.check("a", "T", kind="reproduction", holds=True, expected=0, observed=0)
    with pytest.raises(ValueError):
        led.compare("b", "T", expected=0, observed=0, agrees=True, kind="identity")
    with pytest.raises(ValueError):
        led.check("c", "T", kind="guess", holds=True, expected=0, observed=0)
    assert led.claims == []


def test_duplicate_and_empty_ids_are_rejected(led):
    led.check("same", "T", kind="identity", holds=True, expected=0, observed=0)
    with pytest.raises(ValueError, match="same"):
        led.check("same", "T", kind="identity", holds=True, expected=0, observed=0)
    with pytest.raises(ValueError, match="same"):
        led.compare("same", "T", expected=0, observed=0, agrees=True)
    with pytest.raises(ValueError):
        led.check("", "T", kind="identity", holds=True, expected=0, observed=0)
    assert len(led.claims) == 1


def test_ledger_json_is_strict_and_complete(led, tmp_path):
    led.check_close(
        "nan-gap",
        "Lemma 1",
        kind="bound",
        expected=0.0,
        observed=float("nan"),
        tolerance=1.0,
        note="float64",
    )
    led.check(
        "inf", "Lemma 2", kind="bound", holds=False, expected=float("inf"), observed=float("-inf")
    )
    led.compare(
        "arr",
        "Figure 1",
        expected=np.array([1.0, 2.0]),
        observed=torch.tensor([1.0, 2.5]),
        agrees=False,
        note="n=4",
    )
    led.check(
        "np",
        "Lemma 3",
        kind="identity",
        holds=True,
        expected=np.float64(0.25),
        observed=np.int64(3),
    )
    path = led.write()
    assert path == tmp_path / "ledgers" / f"{CHAPTER_ID}.json"
    data = _strict_json(path.read_text())
    assert set(data) >= {
        "chapter",
        "scale",
        "seed",
        "device",
        "params",
        "wall_seconds",
        "python",
        "claims",
    }
    assert (data["chapter"], data["scale"], data["seed"], data["device"]) == (
        CHAPTER_ID,
        "smoke",
        3,
        "cpu",
    )
    assert data["params"] == {"n": 2, "lr": 0.5, "mode": "a", "sizes": [1, 2]}
    assert data["python"] == sys.executable
    assert data["wall_seconds"] >= 0 and data["cpu_seconds"] >= 0
    # ru_maxrss in MiB: at least the 64 MiB array this process holds, at most the machine's memory
    block = np.ones(64 * 2**20 // 8)
    peak = led.as_dict()["peak_memory_mb"]
    assert block.all() and 64 <= peak < os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    by_id = {c["id"]: c for c in data["claims"]}
    assert by_id["nan-gap"]["observed"] == "nan" and by_id["nan-gap"]["status"] == "fails"
    assert (by_id["inf"]["expected"], by_id["inf"]["observed"]) == ("inf", "-inf")
    assert by_id["arr"]["expected"] == [1.0, 2.0] and by_id["arr"]["observed"] == [1.0, 2.5]
    assert by_id["np"]["expected"] == 0.25 and by_id["np"]["observed"] == 3
    for claim in data["claims"]:
        assert set(claim) >= {
            "id",
            "source",
            "kind",
            "status",
            "expected",
            "observed",
            "tolerance",
            "note",
        }
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left behind


def test_ledger_write_is_atomic(led, monkeypatch):
    led.check("first", "T", kind="identity", holds=True, expected=0, observed=0)
    path = led.write()
    before = path.read_text()
    led.check("second", "T", kind="identity", holds=True, expected=0, observed=0)

    def half_dump(obj, fh, **kwargs):
        fh.write('{"chapter": "half')
        raise RuntimeError("disk full")

    monkeypatch.setattr(L.json, "dump", half_dump)
    with pytest.raises(RuntimeError):
        led.write()
    assert path.read_text() == before  # the reader still sees the whole previous ledger
    assert [c["id"] for c in _strict_json(path.read_text())["claims"]] == ["first"]


def test_finish_writes_then_raises_on_a_failed_check(led):
    led.check("ok", "Theorem 1", kind="identity", holds=True, expected=0, observed=0)
    led.check("bad", "Theorem 2", kind="bound", holds=False, expected=1, observed=2)
    with pytest.raises(L.ClaimFailed, match="bad") as err:
        led.finish(display=False)
    assert isinstance(err.value, AssertionError)
    path = led.dir / f"{CHAPTER_ID}.json"
    statuses = {c["id"]: c["status"] for c in _strict_json(path.read_text())["claims"]}
    assert statuses == {"ok": "holds", "bad": "fails"}


def test_finish_passes_when_only_differs(led, capsys):
    led.check("ok", "Theorem 1", kind="identity", holds=True, expected=0, observed=0)
    led.compare("gap", "Table 2", expected=1.0, observed=2.0, agrees=False, note="other sizes")
    assert led.finish(display=True) is None  # a chapter's last cell shows the table, not a path
    assert led.path.is_file()
    out = capsys.readouterr().out
    assert "| gap |" in out and "**differs**" in out


def test_ledger_dir_defaults(chapter, monkeypatch, tmp_path):
    monkeypatch.setenv(L.LEDGER_ENV, str(tmp_path / "env"))
    assert L.default_dir() == tmp_path / "env"
    assert L.Ledger(S.preset(CHAPTER_ID, "smoke")).dir == tmp_path / "env"
    monkeypatch.delenv(L.LEDGER_ENV)
    (tmp_path / "book" / "part").mkdir(parents=True)
    (tmp_path / "_toc.yml").write_text("root: x\n")
    monkeypatch.chdir(tmp_path / "book" / "part")
    assert L.default_dir() == tmp_path / "_build" / "ledger"


def test_find_root(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    assert L.find_root(tmp_path / "a" / "b") is None
    (tmp_path / "_toc.yml").write_text("root: x\n")
    assert L.find_root(tmp_path / "a" / "b") == tmp_path.resolve()
    assert L.find_root(tmp_path) == tmp_path.resolve()


def _claim(id, status, kind="identity"):
    return {
        "id": id,
        "source": "T",
        "kind": kind,
        "status": status,
        "expected": 0,
        "observed": 0,
        "tolerance": None,
        "note": "",
    }


def test_gathered_counts(tmp_path):
    ledgers = [
        {
            "chapter": "b-chapter",
            "scale": "smoke",
            "seed": 0,
            "device": "cpu",
            "wall_seconds": 2.0,
            "claims": [
                _claim("x", "holds"),
                _claim("y", "fails"),
                _claim("z", "differs", "reproduction"),
                _claim("q", "inconclusive", "prediction"),
            ],
        },
        {
            "chapter": "a-chapter",
            "scale": "paper",
            "seed": 1,
            "device": "cuda",
            "wall_seconds": 1.5,
            "claims": [
                _claim("u", "holds"),
                _claim("v", "holds"),
                _claim("w", "reproduced", "reproduction"),
            ],
        },
    ]
    for led in ledgers:
        (tmp_path / f"{led['chapter']}.json").write_text(json.dumps(led))
    (tmp_path / ".b-chapter.123.tmp").write_text("{half")  # an unfinished write is not read
    loaded = L.load(tmp_path)
    assert [d["chapter"] for d in loaded] == ["a-chapter", "b-chapter"]
    summary, every = L.gathered(loaded)
    rows = [
        r
        for r in summary.splitlines()
        if r.startswith("| a-chapter") or r.startswith("| b-chapter")
    ]
    cells = [[c.strip() for c in r.strip("|").split("|")] for r in rows]
    # chapter | scale | device | seed | wall s | claims | holds | reproduced | differs |
    # inconclusive | fails
    assert cells[0] == ["a-chapter", "paper", "cuda", "1", "1.5", "3", "2", "1", "0", "0", "0"]
    assert cells[1] == ["b-chapter", "smoke", "cpu", "0", "2.0", "4", "1", "0", "1", "1", "1"]
    claim_rows = [
        r for r in every.splitlines() if r.startswith("| a-chapter") or r.startswith("| b-chapter")
    ]
    assert len(claim_rows) == 7
    assert any(r.startswith("| b-chapter | y |") and "**fails**" in r for r in claim_rows)


def test_load_of_a_missing_folder_is_empty(tmp_path):
    assert L.load(tmp_path / "nowhere") == []


def test_claims_table_escapes_pipes():
    table = L.claims_table([{**_claim("a|b", "holds"), "note": "x | y\nz"}])
    row = table.splitlines()[2]
    assert "a\\|b" in row and "x \\| y z" in row
    assert row.count(" | ") == 6  # 7 columns, none split by the content


# ---------------------------------------------------------------------------------------------
# runtime.py
# ---------------------------------------------------------------------------------------------
def _draws():
    return random.random(), float(np.random.rand()), torch.rand(3).tolist()


def test_seeding_gives_identical_draws():
    gen = R.seed_everything(123)
    first, g1 = _draws(), torch.rand(2, generator=gen).tolist()
    gen = R.seed_everything(123)
    second, g2 = _draws(), torch.rand(2, generator=gen).tolist()
    assert first == second and g1 == g2
    R.seed_everything(124)
    assert _draws() != first


def test_setup_and_generators(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    rt = R.setup("auto", seed=5)
    assert rt.device.type == "cpu" and rt.dtype == torch.float64 and rt.seed == 5
    assert torch.are_deterministic_algorithms_enabled()
    a = torch.randn(4, generator=rt.generator(2))
    b = torch.randn(4, generator=torch.Generator().manual_seed(7))
    assert torch.equal(a, b)
    assert not torch.equal(torch.randn(4, generator=rt.generator(0)), a)
    t = rt.tensor([1, 2])
    assert t.dtype == torch.float64 and t.device.type == "cpu"
    assert "device=cpu" in rt.describe() and "float64" in rt.describe()


def test_cuda_without_a_gpu_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match="'device'"):
        R.resolve_device("cuda")
    with pytest.raises(ValueError, match="'device'"):
        R.setup("cuda")
    assert R.resolve_device("auto").type == "cpu"
    assert R.resolve_device("cpu").type == "cpu"


def test_auto_picks_cuda_where_present(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert R.resolve_device("auto").type == "cuda"
    assert R.resolve_device("cuda").type == "cuda"


def test_bad_device_and_dtype_are_named():
    with pytest.raises(ValueError, match="'device' = 'tpu'"):
        R.resolve_device("tpu")
    with pytest.raises(ValueError, match="'dtype' = 'float16'"):
        R.resolve_dtype("float16")
    assert R.resolve_dtype("float32") == torch.float32
    assert R.resolve_dtype(torch.float16) == torch.float16


# ---------------------------------------------------------------------------------------------
# train.py
# ---------------------------------------------------------------------------------------------
def _quadratic(target=(1.0, -2.0)):
    w = torch.nn.Parameter(torch.tensor([3.0, 3.0], dtype=torch.float64))
    goal = torch.tensor(target, dtype=torch.float64)
    return w, goal, (lambda step: ((w - goal) ** 2).sum())


@pytest.mark.parametrize("optimizer, lr", [("adam", 0.1), ("sgd", 0.1)])
def test_fit_reduces_a_quadratic_loss(optimizer, lr):
    w, goal, loss = _quadratic()
    hist = T.fit(loss, [w], steps=300, lr=lr, optimizer=optimizer, log_every=50, progress=False)
    assert hist.loss[-1] < 1e-4 * hist.loss[0]
    assert torch.allclose(w.detach(), goal, atol=1e-2)
    assert hist.steps == [0, 50, 100, 150, 200, 250, 299]
    assert len(hist.loss) == len(hist.steps) and not hist.stopped_early


def test_fit_records_metrics_and_stops_early():
    w, goal, loss = _quadratic()
    hist = T.fit(
        lambda s: (loss(s), {"w0": w[0].item()}),
        [w],
        steps=10_000,
        lr=0.1,
        optimizer="sgd",
        log_every=1000,
        stop_below=1e-6,
        progress=False,
    )
    assert hist.stopped_early and hist.steps[-1] < 9_999
    assert hist.loss[-1] < 1e-6
    assert len(hist.metrics["w0"]) == len(hist.steps)


def test_fit_raises_on_a_non_finite_loss():
    w = torch.nn.Parameter(torch.tensor([1.0]))

    def loss(step):
        return (w * (float("nan") if step == 3 else 1.0)).sum()

    with pytest.raises(FloatingPointError, match="step 3"):
        T.fit(loss, [w], steps=10, lr=0.01, progress=False)


def test_fit_raises_on_divergence():
    w = torch.nn.Parameter(torch.tensor([1.0], dtype=torch.float64))
    with pytest.raises(FloatingPointError):
        T.fit(
            lambda s: (w**2).sum() * 1e300, [w], steps=50, lr=1e10, optimizer="sgd", progress=False
        )


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"steps": 0}, "'steps'"),
        ({"steps": -5}, "'steps'"),
        ({"steps": 10, "lr": 0.0}, "'lr'"),
        ({"steps": 10, "lr": -1.0}, "'lr'"),
        ({"steps": 10, "optimizer": "lbfgs"}, "'optimizer'"),
    ],
)
def test_fit_bad_arguments_are_named(kwargs, name):
    w, _, loss = _quadratic()
    with pytest.raises(ValueError, match=name):
        T.fit(loss, [w], progress=False, **kwargs)
    assert w.detach().tolist() == [3.0, 3.0]  # nothing was trained


def test_compare_records_inconclusive_only_with_a_note(led):
    claim = led.compare(
        "undecided",
        "Figure 1",
        expected=1.0,
        observed=1.1,
        agrees=None,
        kind="prediction",
        note="two seeds cannot separate the arms; 16 would",
    )
    assert claim["status"] == "inconclusive" and claim["kind"] == "prediction"
    with pytest.raises(ValueError, match="inconclusive"):
        led.compare("silent", "Figure 1", expected=1.0, observed=1.1, agrees=None)
    assert (
        led.compare("no", "Figure 1", expected=1.0, observed=2.0, agrees=np.False_)["status"]
        == "differs"
    )
    assert (
        led.compare("yes", "Figure 1", expected=1.0, observed=1.0, agrees=np.True_)["status"]
        == "reproduced"
    )


def test_ledger_records_the_notebook_cell_of_a_claim(chapter, tmp_path, monkeypatch):
    import types

    cfg = S.preset(CHAPTER_ID, "smoke", device="cpu", ledger_dir=tmp_path)
    plain = L.Ledger(cfg)
    assert "cell" not in plain.check("a", "T", kind="identity", holds=True, expected=0, observed=0)
    shell = types.SimpleNamespace(execution_count=7)
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: shell))
    led = L.Ledger(cfg)
    assert led.check("b", "T", kind="identity", holds=True, expected=0, observed=0)["cell"] == 7
    shell.execution_count = 0  # no cell running: nothing recorded
    assert "cell" not in led.check("c", "T", kind="identity", holds=True, expected=0, observed=0)


def test_a_ledger_times_the_chapter_from_the_librarys_import(chapter, tmp_path, monkeypatch):
    """A chapter that makes its ledger late is timed from its first import of the library, and its
    CPU time is the process's whole CPU time."""
    import time

    import companions

    monkeypatch.setattr(companions, "IMPORTED_AT", time.perf_counter() - 100.0)
    led = L.Ledger(S.preset(CHAPTER_ID, "smoke", device="cpu", ledger_dir=tmp_path))
    data = led.as_dict()
    assert 100.0 <= data["wall_seconds"] < 200.0
    assert data["cpu_seconds"] >= time.process_time() - 1.0 > 0


def test_a_claim_shows_the_claims_of_its_cell_as_a_table(chapter, tmp_path, monkeypatch):
    import types

    cfg = S.preset(CHAPTER_ID, "smoke", device="cpu", ledger_dir=tmp_path)
    shell = types.SimpleNamespace(execution_count=3)
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: shell))
    led = L.Ledger(cfg)
    led.check("before", "T", kind="identity", holds=True, expected=0, observed=0)
    shell.execution_count = 4
    first = led.check("one", "Lemma 1", kind="identity", holds=True, expected=0, observed=0)
    last = led.compare("two", "Table 2", expected=1.0, observed=2.0, agrees=False, note="why")
    shown = last._repr_markdown_()
    assert shown == L.claims_table([first, last])  # this cell's claims, not the earlier cell's
    assert "before" not in shown and "**differs**" in shown
    assert dict(last) == {k: last[k] for k in last} and json.loads(json.dumps(last))["id"] == "two"
    outside = L.Ledger(cfg)
    monkeypatch.setitem(sys.modules, "IPython", None)
    alone = outside.check("alone", "T", kind="identity", holds=True, expected=0, observed=0)
    assert alone._repr_markdown_() == L.claims_table([alone])
