"""The DomainBed results of Chapter 6, transcribed whole: Table 6.1 (all 25 rows), Table 6.2,
Table 6.3.

Each entry is (mean, error) in %, the error as printed ("±"; DomainBed reports the standard error
over three trials). Averages are printed without an error. Nothing here is measured by this book.
"""

from __future__ import annotations

import math
from fractions import Fraction

from companions.stats import welch_df

DATASETS = ("VLCS", "PACS", "OfficeHome", "TerraInc", "DomainNet")

# Table 6.1: OOD accuracy of every algorithm, in the printed order (the first 21 rows are the
# source's and other papers' reported numbers), with the printed averages.
TABLE_6_1 = {
    "MMD": ([(77.5, 0.9), (84.6, 0.5), (66.3, 0.1), (42.2, 1.6), (23.4, 9.5)], 58.8),
    "Mixstyle": ([(77.9, 0.5), (85.2, 0.3), (60.4, 0.3), (44.0, 0.7), (34.0, 0.1)], 60.3),
    "GroupDRO": ([(76.7, 0.6), (84.4, 0.8), (66.0, 0.7), (43.2, 1.1), (33.3, 0.2)], 60.7),
    "IRM": ([(78.5, 0.5), (83.5, 0.8), (64.3, 2.2), (47.6, 0.8), (33.9, 2.8)], 61.6),
    "ARM": ([(77.6, 0.3), (85.1, 0.4), (64.8, 0.3), (45.5, 0.3), (35.5, 0.2)], 61.7),
    "VREx": ([(78.3, 0.2), (84.9, 0.6), (66.4, 0.6), (46.4, 0.6), (33.6, 2.9)], 61.9),
    "CDANN": ([(77.5, 0.1), (82.6, 0.9), (65.8, 1.3), (45.8, 1.6), (38.3, 0.3)], 62.0),
    "AND-mask": ([(78.1, 0.9), (84.4, 0.9), (65.6, 0.4), (44.6, 0.3), (37.2, 0.6)], 62.0),
    "DANN": ([(78.6, 0.4), (83.6, 0.4), (65.9, 0.6), (46.7, 0.5), (38.3, 0.1)], 62.6),
    "RSC": ([(77.1, 0.5), (85.2, 0.9), (65.5, 0.9), (46.6, 1.0), (38.9, 0.5)], 62.7),
    "MTL": ([(77.2, 0.4), (84.6, 0.5), (66.4, 0.5), (45.6, 1.2), (40.6, 0.1)], 62.9),
    "Mixup": ([(77.4, 0.6), (84.6, 0.6), (68.1, 0.3), (47.9, 0.8), (39.2, 0.1)], 63.4),
    "MLDG": ([(77.2, 0.4), (84.9, 1.0), (66.8, 0.6), (47.7, 0.9), (41.2, 0.1)], 63.6),
    "Fish": ([(77.8, 0.3), (85.5, 0.3), (68.6, 0.4), (45.1, 1.3), (42.7, 0.2)], 63.9),
    "Fishr": ([(77.8, 0.1), (85.5, 0.4), (67.8, 0.1), (47.4, 1.6), (41.7, 0.0)], 64.0),
    "SagNet": ([(77.8, 0.5), (86.3, 0.2), (68.1, 0.1), (48.6, 1.0), (40.3, 0.1)], 64.2),
    "SelfReg": ([(77.8, 0.9), (85.6, 0.4), (67.9, 0.7), (47.0, 0.3), (41.5, 0.2)], 64.2),
    "CORAL": ([(78.8, 0.6), (86.2, 0.3), (68.7, 0.3), (47.6, 1.0), (41.5, 0.1)], 64.5),
    "SAM": ([(79.4, 0.1), (85.8, 0.2), (69.6, 0.1), (43.3, 0.7), (44.3, 0.0)], 64.5),
    "mDSDI": ([(79.0, 0.3), (86.2, 0.2), (69.2, 0.4), (48.1, 1.4), (42.8, 0.1)], 65.1),
    "MIRO": ([(79.0, 0.0), (85.4, 0.4), (70.5, 0.4), (50.4, 1.1), (44.3, 0.2)], 65.9),
    "ERM": ([(77.5, 0.4), (85.5, 0.2), (66.5, 0.3), (46.1, 1.8), (40.9, 0.1)], 63.3),
    "ERM-NU": ([(78.3, 0.3), (85.6, 0.1), (68.1, 0.1), (49.6, 0.6), (43.4, 0.1)], 65.0),
    "SWAD": ([(79.1, 0.1), (88.1, 0.1), (70.6, 0.2), (50.0, 0.3), (46.5, 0.1)], 66.9),
    "SWAD-NU": ([(79.8, 0.2), (88.5, 0.2), (71.3, 0.3), (52.2, 0.3), (47.1, 0.1)], 67.8),
}

# Table 6.2 (a)-(e): per test domain, then the printed average.
TABLE_6_2 = {
    "VLCS": (
        ("C", "L", "S", "V"),
        {
            "ERM": ([(97.7, 0.4), (64.3, 0.9), (73.4, 0.5), (74.6, 1.3)], 77.5),
            "ERM-NU": ([(97.9, 0.4), (65.1, 0.3), (73.2, 0.9), (76.9, 0.5)], 78.3),
            "Mixup": ([(98.3, 0.6), (64.8, 1.0), (72.1, 0.5), (74.3, 0.8)], 77.4),
            "Mixup-NU": ([(97.9, 0.2), (64.1, 1.4), (73.1, 0.9), (74.8, 0.5)], 77.5),
            "SWAD": ([(98.8, 0.1), (63.3, 0.3), (75.3, 0.5), (79.2, 0.6)], 79.1),
            "SWAD-NU": ([(99.1, 0.4), (63.6, 0.4), (75.9, 0.4), (80.5, 1.0)], 79.8),
        },
    ),
    "PACS": (
        ("A", "C", "P", "S"),
        {
            "ERM": ([(84.7, 0.4), (80.8, 0.6), (97.2, 0.3), (79.3, 1.0)], 85.5),
            "ERM-NU": ([(87.4, 0.5), (79.6, 0.9), (96.3, 0.7), (79.0, 0.5)], 85.6),
            "Mixup": ([(86.1, 0.5), (78.9, 0.8), (97.6, 0.1), (75.8, 1.8)], 84.6),
            "Mixup-NU": ([(86.7, 0.3), (78.0, 1.3), (97.3, 0.3), (77.3, 2.0)], 84.8),
            "SWAD": ([(89.3, 0.2), (83.4, 0.6), (97.3, 0.3), (82.5, 0.5)], 88.1),
            "SWAD-NU": ([(89.8, 1.1), (82.8, 1.0), (97.7, 0.3), (83.7, 1.1)], 88.5),
        },
    ),
    "OfficeHome": (
        ("A", "C", "P", "R"),
        {
            "ERM": ([(61.3, 0.7), (52.4, 0.3), (75.8, 0.1), (76.6, 0.3)], 66.5),
            "ERM-NU": ([(63.3, 0.2), (54.2, 0.3), (76.7, 0.2), (78.2, 0.3)], 68.1),
            "Mixup": ([(62.4, 0.8), (54.8, 0.6), (76.9, 0.3), (78.3, 0.2)], 68.1),
            "Mixup-NU": ([(64.3, 0.5), (55.9, 0.6), (76.9, 0.4), (78.0, 0.6)], 68.8),
            "SWAD": ([(66.1, 0.4), (57.7, 0.4), (78.4, 0.1), (80.2, 0.2)], 70.6),
            "SWAD-NU": ([(67.5, 0.3), (58.4, 0.6), (78.6, 0.9), (80.7, 0.1)], 71.3),
        },
    ),
    "TerraInc": (
        ("L100", "L38", "L43", "L46"),
        {
            "ERM": ([(49.8, 4.4), (42.1, 1.4), (56.9, 1.8), (35.7, 3.9)], 46.1),
            "ERM-NU": ([(52.5, 1.2), (45.0, 0.5), (60.2, 0.2), (40.7, 1.0)], 49.6),
            "Mixup": ([(59.6, 2.0), (42.2, 1.4), (55.9, 0.8), (33.9, 1.4)], 47.9),
            "Mixup-NU": ([(55.1, 3.1), (45.8, 0.7), (56.4, 1.2), (41.1, 0.6)], 49.6),
            "SWAD": ([(55.4, 0.0), (44.9, 1.1), (59.7, 0.4), (39.9, 0.2)], 50.0),
            "SWAD-NU": ([(58.1, 3.3), (47.7, 1.6), (60.5, 0.8), (42.3, 0.9)], 52.2),
        },
    ),
    "DomainNet": (
        ("clip", "info", "paint", "quick", "real", "sketch"),
        {
            "ERM": (
                [(58.1, 0.3), (18.8, 0.3), (46.7, 0.3), (12.2, 0.4), (59.6, 0.1), (49.8, 0.4)],
                40.9,
            ),
            "ERM-NU": (
                [(60.9, 0.0), (21.1, 0.2), (49.9, 0.3), (13.7, 0.2), (62.5, 0.2), (52.5, 0.4)],
                43.4,
            ),
            "Mixup": (
                [(55.7, 0.3), (18.5, 0.5), (44.3, 0.5), (12.5, 0.4), (55.8, 0.3), (48.2, 0.5)],
                39.2,
            ),
            "Mixup-NU": (
                [(59.5, 0.3), (20.5, 0.1), (49.3, 0.4), (13.3, 0.5), (59.6, 0.3), (51.5, 0.2)],
                42.3,
            ),
            "SWAD": (
                [(66.0, 0.1), (22.4, 0.3), (53.5, 0.1), (16.1, 0.2), (65.8, 0.4), (55.5, 0.3)],
                46.5,
            ),
            "SWAD-NU": (
                [(66.6, 0.2), (23.2, 0.2), (54.3, 0.2), (16.2, 0.2), (66.1, 0.6), (56.2, 0.2)],
                47.1,
            ),
        },
    ),
}

# Table 6.3: alternative regularizers with SWAD (VLCS, PACS, DomainNet, then the average).
TABLE_6_3 = {
    "SWAD": ([(79.1, 0.1), (88.1, 0.1), (46.5, 0.1)], 71.2),
    "SWAD-CORAL": ([(78.9, 0.1), (88.3, 0.1), (46.8, 0.0)], 71.3),
    "SWAD-MIRO": ([(79.6, 0.2), (88.4, 0.1), (47.0, 0.0)], 71.7),
    "SWAD-NU": ([(79.8, 0.2), (88.5, 0.2), (47.1, 0.1)], 71.8),
}

# Statements of Section 6.3.2 about these tables:
# (baseline, with NU, dataset or None for the average, gain).
TEXT_GAINS = [
    ("ERM", "ERM-NU", None, 1.7),  # "ERM-NU yields an average accuracy improvement of 1.7%"
    ("SWAD", "SWAD-NU", None, 0.9),  # abstract: "1.7% and 0.9% ... respectively"
    ("ERM", "ERM-NU", "TerraInc", 3.5),  # "improved by 3.5 with ERM-NU over ERM on Terra Incognita"
    ("Mixup", "Mixup-NU", "DomainNet", 3.1),  # "3.1 with Mixup-NU over Mixup on DomainNet"
]


def _exact(x) -> Fraction:
    """A printed number as the decimal it is printed as."""
    return Fraction(str(x))


def average_gap(cells, printed) -> float:
    """The printed average minus the mean of the printed columns ``cells`` ((mean, error) pairs),
    in exact decimal arithmetic, returned as a float."""
    means = [_exact(m) for m, _ in cells]
    return float(_exact(printed) - sum(means) / len(means))


def average_gaps() -> dict[str, list[float]]:
    """Every row's :func:`average_gap`, by table: Table 6.1, Table 6.2 (a)-(e), Table 6.3."""
    tables = {"Table 6.1": TABLE_6_1}
    tables.update({f"Table 6.2 {ds}": rows for ds, (_, rows) in TABLE_6_2.items()})
    tables["Table 6.3"] = TABLE_6_3
    return {
        name: [average_gap(cells, avg) for cells, avg in rows.values()]
        for name, rows in tables.items()
    }


def gain(baseline: str, method: str, dataset: str | None) -> Fraction:
    """Accuracy gain of ``method`` over ``baseline`` on ``dataset`` (None: the five-dataset
    average), exact in the printed decimals. Averages come from Table 6.1's printed column where
    both rows are there, from Table 6.2's printed per-dataset averages otherwise."""
    if dataset is None:
        if baseline in TABLE_6_1 and method in TABLE_6_1:
            return _exact(TABLE_6_1[method][1]) - _exact(TABLE_6_1[baseline][1])
        means = {
            m: sum(_exact(TABLE_6_2[ds][1][m][1]) for ds in DATASETS) / len(DATASETS)
            for m in (baseline, method)
        }
        return means[method] - means[baseline]
    rows = TABLE_6_2[dataset][1]
    return _exact(rows[method][1]) - _exact(rows[baseline][1])


def text_gain_gaps() -> dict[str, float]:
    """Each gain quoted in Section 6.3.2 minus the same gain computed from the tables."""
    return {
        f"{method} over {baseline}, {dataset or 'average'}": float(
            gain(baseline, method, dataset) - _exact(quoted)
        )
        for baseline, method, dataset, quoted in TEXT_GAINS
    }


def trials_with(mean: float, error: float, trials: int = 3) -> list[float]:
    """``trials`` values whose mean is ``mean`` and whose standard error (sample standard
    deviation over sqrt(trials)) is ``error``: half of them (rounded down) at mean - delta, as
    many at mean + delta, the rest at the mean. Welch's interval of a difference reads only the
    means, standard errors and counts, so two rows of a table, turned into such values, give the
    interval their printed numbers give."""
    if trials < 2:
        raise ValueError(f"parameter 'trials' = {trials} is not allowed: expected >= 2")
    half = trials // 2
    # sample variance: 2 half delta^2 / (trials - 1) = (error sqrt(trials))^2
    delta = error * math.sqrt(trials) * math.sqrt((trials - 1) / (2 * half))
    return [mean - delta] * half + [mean] * (trials - 2 * half) + [mean + delta] * half


def nu_gain_samples(trials: int = 3) -> dict[str, tuple[list[float], list[float]]]:
    """For each baseline of Table 6.1 with an NU row (ERM, SWAD) and each dataset: (the NU row's
    trials, the baseline's trials), rebuilt by :func:`trials_with` from the printed numbers."""
    out = {}
    for base in ("ERM", "SWAD"):
        for i, ds in enumerate(DATASETS):
            nu, b = TABLE_6_1[base + "-NU"][0][i], TABLE_6_1[base][0][i]
            out[f"{base} on {ds}"] = (trials_with(*nu, trials), trials_with(*b, trials))
    return out


def significant_gains(
    baseline: str, method: str, critical, trials: int = 3
) -> dict[str, tuple[float, float, float]]:
    """Per dataset of Table 6.1: (gain, c * standard error of the gain, Welch degrees of freedom),
    for display.

    The errors are as printed (standard errors over ``trials`` trials, DomainBed's three);
    ``critical(df)`` gives the critical value c for the Welch degrees of freedom df of the two rows.
    """
    out = {}
    for i, ds in enumerate(DATASETS):
        (mb, eb), (mm, em) = TABLE_6_1[baseline][0][i], TABLE_6_1[method][0][i]
        df = welch_df(eb, trials, em, trials)
        out[ds] = (round(mm - mb, 6), round(critical(df) * (eb**2 + em**2) ** 0.5, 6), df)
    return out


def gains_table(critical) -> str:
    """The Markdown table of Table 6.1's NU gains over ERM and SWAD per dataset, each beside its
    ``critical(df)`` times standard error (the Welch interval that decides the claim
    ``table-6-1-nu-improves-every-dataset``)."""
    rows = [
        "| dataset | ERM → ERM-NU | t · se | SWAD → SWAD-NU | t · se |",
        "|---|---|---|---|---|",
    ]
    sig = {b: significant_gains(b, b + "-NU", critical) for b in ("ERM", "SWAD")}
    for ds in DATASETS:
        rows.append(
            f"| {ds} | {sig['ERM'][ds][0]:+.1f} | {sig['ERM'][ds][1]:.2f} | "
            f"{sig['SWAD'][ds][0]:+.1f} | {sig['SWAD'][ds][1]:.2f} |"
        )
    return "\n".join(rows)


def measurements() -> dict:
    """The three claims on the tables: every row's average gap (:func:`average_gaps`), the text's
    quoted gains against the tables (:func:`text_gain_gaps`), and Table 6.1's NU rows against
    their baselines as rebuilt trials (:func:`nu_gain_samples`)."""
    return {
        "tables-averages": average_gaps(),
        "text-gains-match-tables": text_gain_gaps(),
        "table-6-1-nu-improves-every-dataset": nu_gain_samples(),
    }
