"""One matplotlib style for the whole book."""

from __future__ import annotations

import matplotlib
import matplotlib.pyplot as plt

#: A colour-blind-safe cycle (Okabe & Ito), used by every figure of the book.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000")

STYLE = {
    "figure.figsize": (6.4, 4.0),
    "figure.dpi": 110,
    "axes.prop_cycle": matplotlib.cycler(color=PALETTE),
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "legend.frameon": False,
    "font.size": 10,
    "lines.linewidth": 1.6,
}


def use_style() -> None:
    """Apply the book's style to every later figure."""
    plt.rcParams.update(STYLE)


def subplots(nrows: int = 1, ncols: int = 1, width: float = 6.4, height: float = 4.0, **kwargs):
    """``plt.subplots`` in the book's style, sized per panel."""
    use_style()
    return plt.subplots(
        nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False, **kwargs
    )


def color(i: int) -> str:
    return PALETTE[i % len(PALETTE)]
