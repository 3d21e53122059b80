"""A chapter's closing summary, written from its ledger."""

from __future__ import annotations

from collections import Counter


def summary(claims: list[dict]) -> str:
    """Markdown: the count of claims per status, then each claim that is not ``holds`` or
    ``reproduced`` with its note (what differs, what a small run cannot decide)."""
    counts = Counter(c["status"] for c in claims)
    order = ("holds", "reproduced", "differs", "inconclusive", "fails")
    head = ", ".join(f"{counts[s]} {s}" for s in order if counts[s])
    lines = [f"This run recorded {len(claims)} claims: {head}."]
    rest = [c for c in claims if c["status"] not in ("holds", "reproduced")]
    if rest:
        lines.append("")
        for c in rest:
            lines.append(f"- `{c['id']}` ({c['source']}, {c['status']}): {c['note']}")
    return "\n".join(lines)
