"""The claims ledger: every claim a chapter decides, written to ``<ledger_dir>/<chapter>.json``.

A chapter registers its claims in its declaration (:class:`companions.claims.Claim`: the statistic,
the decision rule with its numbers, how it could fail), and hands the ledger only what it measured:
``ledger.record({"claim-id": value, ...})``. The registered rule decides; the ledger sets the
status, refuses an unregistered id, data of the wrong shape or a NaN (naming the claim), and at
:meth:`Ledger.finish` refuses a registered claim that was never recorded. Its summary and table
are written from what was decided. Chapters not yet registered still record with :meth:`check` and
:meth:`compare` (their ``holds`` and ``agrees`` computed in the chapter); those claims are marked
``registered: false``, and the book counts registered claims only.

A claim has a ``kind`` (what sort of statement it is) and a ``status`` computed here from the
numbers the chapter passes in, never typed by hand:

==============  =====================================  ======================
kind            meaning                                status
==============  =====================================  ======================
identity        exact (symbolic or to round-off)       holds / fails
bound           an inequality checked numerically      holds / fails
prediction      a rate, shape or ordering              holds / fails, or (decided
                                                       with uncertainty) reproduced /
                                                       differs / inconclusive
reproduction    a number the source reports, beside    reproduced / differs /
                ours                                   inconclusive
erratum         a statement of the source shown wrong  reproduced / differs /
                                                       inconclusive
==============  =====================================  ======================

A check that ``fails`` makes :meth:`Ledger.finish` raise :class:`ClaimFailed` after the ledger is
written, so a notebook (and the book build, and the tests) stop at its end. ``differs`` is a
finding, not a failure; ``inconclusive`` says the run was too small to decide (its note names the
scale that would), and is counted apart.

A *dry run* (``$COMPANIONS_DRY_RUN``, see :mod:`companions.train`, which imports nothing of this
module) cuts every tracked loop after its
first steps: its claims are not findings. Its ledger records ``dry_run`` (the steps kept and the
loops cut), its table is headed as a dry run, a failing check does not raise, and :func:`load`
leaves dry-run ledgers out unless asked (``dry_runs=True``), so no page of the book shows one.
A dry run may also *end* after its first tracked loops (``$COMPANIONS_DRY_RUN_LOOPS``): every open
ledger is then written as it stands (:func:`write_open`), and its ``dry_run`` says where it ended.
"""

from __future__ import annotations

import json
import math
import os
import sys
import tempfile
import time
import weakref
from pathlib import Path
from typing import Any, Iterable

CHECK_KINDS = ("identity", "bound", "prediction")
COMPARE_KINDS = ("prediction", "reproduction", "erratum")
KINDS = ("identity", "bound", "prediction", "reproduction", "erratum")
#: Every status a claim can have, in the order the book's tables list them.
STATUSES = ("holds", "reproduced", "differs", "inconclusive", "fails")
LEDGER_ENV = "BOOK_LEDGER_DIR"
#: Where the tests keep the chapters' smoke-scale ledgers, when set (CI sets it, so that the book
#: build can show the smoke and default ledgers side by side).
SMOKE_LEDGER_ENV = "BOOK_SMOKE_LEDGER_DIR"


def peak_memory_mb() -> float | None:
    """The peak resident memory of this process so far, in MiB (``ru_maxrss``; None where the
    platform has no ``resource`` module)."""
    try:
        import resource
    except ImportError:
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (2**20 if sys.platform == "darwin" else 2**10), 1)  # bytes on macOS


def _torch_threads() -> int | None:
    """torch's intra-op threads in this process (None if torch was never imported)."""
    torch = sys.modules.get("torch")
    return torch.get_num_threads() if torch is not None else None


class Claim(dict):
    """A recorded claim. It is a plain dict (the JSON holds it as one); a notebook shows it, as the
    value of a cell, as the table of every claim that cell recorded (a section's collapsed claims
    cell), not as a dict."""

    def __init__(self, fields: dict, ledger: Ledger):
        super().__init__(fields)
        self.ledger = ledger

    def _repr_markdown_(self) -> str:
        cell = self.get("cell")
        same = [c for c in self.ledger.claims if cell is not None and c.get("cell") == cell]
        return claims_table(same or [self])


class Recorded(list):
    """The claims one :meth:`Ledger.record` call decided; a cell ending with the call shows them
    as a table, not as a list of dicts."""

    def _repr_markdown_(self) -> str:
        return claims_table(self)


def _registered_claims(chapter_id: str) -> dict:
    """``{id: Claim}`` registered in the chapter's declaration (empty for a chapter that
    registers none, or an id no topic declares)."""
    from companions import scale

    try:
        chapter = scale.get_chapter(chapter_id)
    except ValueError:
        return {}
    return {c.id: c for c in chapter.claims}


def _amendment(amendment, measured: Any) -> dict:
    """An amendment's record, with the status the earlier rule gives the same measured value
    where that rule is a :class:`~companions.claims.Rule` that can read it."""
    from companions import claims as registry

    out = amendment.record()
    if isinstance(amendment.previous, registry.Rule):
        try:
            decision = amendment.previous.decide(measured)
        except (registry.BadMeasurement, TypeError, ValueError):
            out["previous_status"] = "cannot read this measurement"
        else:
            out["previous_verdict"] = decision.verdict
            out["previous_observed"] = _plain(decision.observed)
    return out


class ClaimFailed(AssertionError):
    """Raised at the end of a chapter when one of its checks fails."""


def _plain(value: Any) -> Any:
    """JSON-friendly copy of a number, string, or (nested) list of them."""
    if hasattr(value, "tolist"):  # numpy / torch scalars and arrays
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # 'inf', '-inf', 'nan': strict JSON has no such numbers
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def find_root(start: str | os.PathLike | None = None) -> Path | None:
    """The repository root: the nearest folder at or above ``start`` holding ``_toc.yml``."""
    here = Path(start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "_toc.yml").is_file():
            return folder
    return None


def write_json_atomically(path: str | os.PathLike, data) -> Path:
    """Write ``data`` to ``path`` as strict JSON (no NaN or infinity), creating its folder: through
    a temporary file beside it, renamed over ``path`` in one step, so a reader never sees half a
    file and a failure leaves nothing behind."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(data, fh, indent=1, allow_nan=False)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def root_or_cwd() -> Path:
    """The repository root (:func:`find_root`) above the current folder, else the current folder."""
    return find_root() or Path.cwd()


def default_dir() -> Path:
    """Where ledgers go when a chapter is not told: ``$BOOK_LEDGER_DIR``, else
    ``<root>/_build/ledger`` (so a book build gathers all chapters in one place), else
    ``./ledger``."""
    if os.environ.get(LEDGER_ENV):
        return Path(os.environ[LEDGER_ENV])
    root = find_root()
    return root / "_build" / "ledger" if root else Path("ledger")


class Ledger:
    """Collects a chapter's claims and writes them as one JSON file.

    >>> led = Ledger(cfg)                       # cfg from companions.preset(...)
    >>> led.check_close("gd-equals-tf", "Theorem 8.14", kind="identity", expected=0,
    ...                 observed=err, tolerance=1e-12)
    >>> led.finish()                            # writes, shows the table, raises if a check failed
    """

    def __init__(self, cfg, device: str | None = None, ledger_dir: str | os.PathLike | None = None):
        self.chapter = cfg.chapter
        self.scale = cfg.scale
        self.seed = cfg.get("seed", 0)
        if device is None:  # record the device actually used, never 'auto'
            from companions.runtime import resolve_device

            device = resolve_device(cfg.get("device", "auto")).type
        self.device = device
        self.params = cfg.params() if hasattr(cfg, "params") else {}
        self.dir = Path(ledger_dir or cfg.get("ledger_dir") or default_dir())
        self.claims: list[dict] = []
        self.registered = _registered_claims(self.chapter)
        import companions

        # From the library's first import (a batch run: the whole chapter, its imports included;
        # a reader's session: since its first cell), not from this line, which a chapter may reach
        # late. CPU time is the process's own, every thread, so it does not count other load.
        self._start = min(time.perf_counter(), companions.IMPORTED_AT)
        _OPEN.add(self)
        from companions import train

        train.on_dry_run_end(write_open)  # a dry run that ends early writes this ledger

    # -- recording ---------------------------------------------------------------------------
    def _add(self, claim: dict) -> dict:
        if not claim["id"] or any(c["id"] == claim["id"] for c in self.claims):
            raise ValueError(
                f"claim id {claim['id']!r} is empty or used twice in chapter {self.chapter!r}"
            )
        if self.registered and not claim.get("registered"):
            raise ValueError(
                f"chapter {self.chapter!r} registers its claims: record {claim['id']!r} with "
                "ledger.record({id: measured value}), after registering it in the chapter's "
                "declaration"
            )
        claim.setdefault("registered", False)
        if claim["kind"] not in KINDS:
            raise ValueError(f"claim kind {claim['kind']!r} is not one of {KINDS}")
        self.claims.append(Claim({k: _plain(v) for k, v in claim.items()}, self))
        cell = _current_cell()
        if cell is not None:  # where the claim is computed: the book's ledger page links there
            self.claims[-1]["cell"] = cell
        return self.claims[-1]

    def record(self, measured: dict, notes: dict | None = None) -> Recorded:
        """Decide registered claims from what the chapter measured: ``{claim id: value}``, where
        the value has the shape the claim's rule reads (a number, values per seed, a pair of value
        lists, ...; see :mod:`companions.claims`). ``notes``: ``{claim id: short text}`` about this
        run (sizes it ran at), shown beside the verdict. Returns the recorded claims (a cell that
        ends with this call shows them as a table).

        Raises ``ValueError``, naming the claim, for an id the chapter did not register, a claim
        recorded twice, and a value its rule cannot decide (wrong shape, NaN, one seed)."""
        if not isinstance(measured, dict) or not measured:
            raise ValueError("record() takes a non-empty dict {claim id: measured value}")
        notes = dict(notes or {})
        stray = sorted(set(notes) - set(measured))
        if stray:
            raise ValueError(f"notes name claim(s) {stray} that this call does not record")
        if not self.registered:
            raise ValueError(
                f"chapter {self.chapter!r} registers no claims: declare them in its Chapter "
                "(claims=...) before recording them"
            )
        out = Recorded()
        for claim_id, value in measured.items():
            out.append(self._record_one(claim_id, value, str(notes.get(claim_id, ""))))
        return out

    def _record_one(self, claim_id: str, value: Any, note: str) -> dict:
        from companions import claims as registry

        spec = self.registered.get(claim_id)
        if spec is None:
            raise ValueError(
                f"claim {claim_id!r} is not registered for chapter {self.chapter!r}: "
                f"its claims are {sorted(self.registered)}"
            )
        try:
            if isinstance(value, registry.Undecided):
                decision = registry.Decision(None, None, "not decided", {})
                note = "; ".join(x for x in (value.reason, note) if x)
            else:
                decision = spec.rule.decide(value)
        except registry.BadMeasurement as exc:
            if not _dry_run_record():
                raise ValueError(f"claim {claim_id!r} of chapter {self.chapter!r}: {exc}") from None
            decision = registry.Decision(None, None, "not decided", {})
            note = f"dry run: {exc}"
        undecided = decision.observed is None and decision.verdict is None
        status = "inconclusive" if undecided else spec.status(decision.verdict)
        entry = dict(
            id=spec.id,
            source=spec.source,
            kind=spec.kind,
            statistic=spec.statistic,
            rule=spec.rule.text(),
            could_fail=spec.could_fail,
            status=status,
            expected=spec.rule.text(),
            observed=decision.observed,
            shown=decision.shown,
            note=note,
            registered=True,
            **decision.extra,
        )
        if status == "inconclusive":
            entry["decides"] = spec.decides
        if spec.amended and not isinstance(value, registry.Undecided):
            entry["amended"] = [_amendment(a, value) for a in spec.amended]
        elif spec.amended:
            entry["amended"] = [a.record() for a in spec.amended]
        return self._add(entry)

    def check(
        self,
        id: str,
        source: str,
        *,
        kind: str,
        holds: bool,
        expected: Any,
        observed: Any,
        tolerance: Any = None,
        note: str = "",
    ) -> dict:
        """A check whose truth the caller computed (``holds``) from ``expected`` and
        ``observed``."""
        if kind not in CHECK_KINDS:
            raise ValueError(f"check kind must be one of {CHECK_KINDS}, not {kind!r}")
        return self._add(
            dict(
                id=id,
                source=source,
                kind=kind,
                status="holds" if bool(holds) else "fails",
                expected=expected,
                observed=observed,
                tolerance=tolerance,
                note=note,
            )
        )

    def check_close(
        self,
        id: str,
        source: str,
        *,
        kind: str,
        expected: float,
        observed: float,
        tolerance: float,
        note: str = "",
    ) -> dict:
        """Holds when ``|observed - expected| <= tolerance`` (a NaN never holds)."""
        gap = abs(float(observed) - float(expected))
        return self.check(
            id,
            source,
            kind=kind,
            holds=gap <= tolerance,
            expected=expected,
            observed=observed,
            tolerance=tolerance,
            note=note,
        )

    def check_at_most(
        self, id: str, source: str, kind: str, bound: float, observed: float, note: str = ""
    ) -> dict:
        """Holds when ``observed <= bound`` (``expected`` records the bound)."""
        return self.check(
            id,
            source,
            kind=kind,
            holds=float(observed) <= float(bound),
            expected=f"<= {_plain(float(bound))}",
            observed=observed,
            tolerance=None,
            note=note,
        )

    def compare(
        self,
        id: str,
        source: str,
        *,
        expected: Any,
        observed: Any,
        agrees: bool | None,
        kind: str = "reproduction",
        tolerance: Any = None,
        note: str = "",
    ) -> dict:
        """A number (or statement) of the source beside ours: ``reproduced`` or ``differs``;
        ``agrees=None`` records ``inconclusive`` (the run cannot decide; say in ``note`` what
        scale would)."""
        if kind not in COMPARE_KINDS:
            raise ValueError(f"compare kind must be one of {COMPARE_KINDS}, not {kind!r}")
        if agrees is None:
            status = "inconclusive"
            if not note.strip():
                raise ValueError(
                    f"claim {id!r} is inconclusive: "
                    "its note must name the scale that would decide it"
                )
        else:
            status = "reproduced" if bool(agrees) else "differs"
        return self._add(
            dict(
                id=id,
                source=source,
                kind=kind,
                status=status,
                expected=expected,
                observed=observed,
                tolerance=tolerance,
                note=note,
            )
        )

    # -- output ------------------------------------------------------------------------------
    @property
    def failed(self) -> list[dict]:
        return [c for c in self.claims if c["status"] == "fails"]

    def as_dict(self) -> dict:
        dry_run = _dry_run_record()  # a dry run keeps its loops there, not in "loops"
        return {
            "chapter": self.chapter,
            "scale": self.scale,
            "seed": self.seed,
            "device": str(self.device),
            "params": _plain(self.params),
            "wall_seconds": round(time.perf_counter() - self._start, 3),
            "cpu_seconds": round(time.process_time(), 3),
            "peak_memory_mb": peak_memory_mb(),
            "threads": _torch_threads(),
            "python": sys.executable,
            **dry_run,
            **({} if dry_run else _loops_record()),
            "claims": self.claims,
        }

    def write(self) -> Path:
        """Write ``<dir>/<chapter>.json`` atomically (a reader never sees half a ledger)."""
        return write_json_atomically(self.path, self.as_dict())

    def table(self) -> str:
        """The claims as a markdown table (headed as a dry run in a dry run), with the status of
        each at the paper scale where a paper ledger is committed."""
        if _dry_run_record():
            return DRY_RUN_HEADING + "\n\n" + claims_table(self.claims)
        return claims_table(self.claims, paper=self.paper())

    @property
    def path(self) -> Path:
        """The ledger's file, ``<dir>/<chapter>.json``."""
        return self.dir / f"{self.chapter}.json"

    @property
    def missing(self) -> list[str]:
        """Registered claims not recorded yet."""
        recorded = {c["id"] for c in self.claims}
        return [cid for cid in self.registered if cid not in recorded]

    def status(self, claim_id: str) -> str:
        """The status of a recorded claim (``KeyError`` naming it if it was not recorded)."""
        for claim in self.claims:
            if claim["id"] == claim_id:
                return claim["status"]
        raise KeyError(f"claim {claim_id!r} is not recorded in chapter {self.chapter!r}")

    def choose(self, claim_id: str, **by_status: str) -> str:
        """The text for the recorded claim's status, from ``by_status`` (``holds=...``,
        ``reproduced=...``, ...): a sentence that reads correctly whatever the status is. A status
        with no text given raises ``KeyError``, naming it."""
        status = self.status(claim_id)
        unknown = sorted(set(by_status) - set(STATUSES))
        if unknown:
            raise ValueError(f"choose(): {unknown} are not statuses; expected some of {STATUSES}")
        if status not in by_status:
            raise KeyError(f"claim {claim_id!r} is {status!r}, and no text was given for it")
        return by_status[status]

    def paper(self) -> dict | None:
        """The chapter's committed paper-scale ledger (:func:`paper_ledger`) to show beside this
        run, or None (none committed, no repository, or this run is itself at the paper scale or
        a dry run)."""
        if self.scale == "paper" or _dry_run_record():
            return None
        try:
            return paper_ledger(self.chapter)
        except (OSError, ValueError):
            return None

    def summary(self) -> str:
        """The chapter's summary, written from its ledger (Markdown): the counts, then every
        claim that differs, is inconclusive or fails, with its one-line reason, and every amended
        rule (:func:`summary_markdown`); then the paper scale: what its committed ledger decided
        differently, or what a paper run needs where none is committed."""
        text = summary_markdown(self.claims)
        if self.scale == "paper" or _dry_run_record():
            return text
        return text + "\n\n" + paper_summary(self.chapter, self.claims, self.paper())

    def finish(self, display: bool = True) -> None:
        """Write the ledger (to :attr:`path`), show the summary and the table, and raise
        :class:`ClaimFailed` if any check failed. A registered claim the chapter never recorded
        raises ``ValueError``, naming it, before anything is written (a dry run that cut its
        loops is let through). It returns nothing, so the last cell shows only the tables."""
        if self.missing and not _dry_run_record():
            raise ValueError(
                f"chapter {self.chapter!r} registers claim(s) {self.missing} but never recorded "
                "them: record each with ledger.record(...)"
            )
        path = self.write()
        if display:
            _show_markdown(self.summary() + "\n\n" + self.table())
        if self.failed and not _dry_run_record():
            names = ", ".join(f"{c['id']} ({c['source']})" for c in self.failed)
            raise ClaimFailed(
                f"{len(self.failed)} claim(s) of chapter {self.chapter!r} failed: {names}. "
                f"Ledger: {path}"
            )


_OPEN: weakref.WeakSet = weakref.WeakSet()  # every Ledger of this process still referenced


def write_open() -> list[Path]:
    """Write every ledger of this process as it stands (a dry run that ends early, see
    :data:`companions.train.DRY_RUN_LOOPS_ENV`, has no :meth:`Ledger.finish`); return their
    paths."""
    return sorted(led.write() for led in list(_OPEN))


DRY_RUN_HEADING = (
    "**Dry run** ($COMPANIONS_DRY_RUN): every tracked loop stopped after its first steps, "
    "so these statuses are not findings."
)


def _dry_run_record() -> dict:
    """``{"dry_run": {...}}`` in a dry run (the steps each loop kept, and the loops cut), else
    ``{}``. Only :mod:`companions.train` cuts loops: where it was never imported, nothing was cut
    and the run is a real one."""
    train = sys.modules.get("companions.train")
    steps = train.dry_run_steps() if train is not None else None
    if steps is None:
        return {}
    record = {"steps": steps, "loops": train.dry_run_loops()}
    limit = train.dry_run_loop_limit()
    if limit is not None:
        record["ends_after_loops"] = limit
        record["ended"] = train.dry_run_ended()
    return {"dry_run": record}


def _loops_record() -> dict:
    """``{"loops": [...]}`` in a run that tracked loops (``companions.train.tracked_loops``: each
    with the time of its first step and of all its steps), else ``{}``. :meth:`Ledger.as_dict`
    asks only outside a dry run, which keeps its loops in ``dry_run``."""
    train = sys.modules.get("companions.train")  # not imported: no loop was tracked
    if train is None:
        return {}
    loops = train.tracked_loops()
    return {"loops": loops} if loops else {}


def is_dry_run(led: dict) -> bool:
    """Whether a loaded ledger comes from a dry run (its claims are not findings)."""
    return bool(led.get("dry_run"))


def _current_cell() -> int | None:
    """The execution count of the notebook cell running now (IPython's ``In [n]``), or None
    outside a kernel. The book's Sphinx extension matches it to the rendered cell of the same run,
    so that each row of the ledger page links to the cell that computed the claim."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return None
    shell = ipython.get_ipython()
    count = getattr(shell, "execution_count", None) if shell is not None else None
    return count if isinstance(count, int) and count > 0 else None


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list):
        return "[" + ", ".join(_fmt(v) for v in value) + "]"
    if isinstance(value, dict):
        return "; ".join(f"{k}: {_fmt(v)}" for k, v in value.items())
    return "" if value is None else str(value)


def observed_text(claim: dict) -> str:
    """What a claim observed, in a few characters (the rule's own rendering where it gave one)."""
    return str(claim["shown"]) if claim.get("shown") else _fmt(claim.get("observed"))


def claim_note(claim: dict) -> str:
    """The note a table shows: the run's note, what would decide an inconclusive claim, and the
    amendments with the earlier rule's verdict."""
    parts = [str(claim.get("note") or "").strip()]
    if claim.get("status") == "inconclusive" and claim.get("decides"):
        needs = claim.get("seeds_to_decide")
        more = f"; about {needs} seeds at this mean and spread" if needs else ""
        parts.append(f"decided at: {claim['decides']}{more}")
    for a in claim.get("amended", []):
        earlier = ""
        if "previous_verdict" in a:
            v = a["previous_verdict"]
            earlier = f" (verdict under it: {'undecided' if v is None else v})"
        parts.append(f"amended {a['date']}: earlier rule {a['previous']}{earlier}; {a['reason']}")
    return "; ".join(p for p in parts if p)


def claims_table(
    claims: Iterable[dict], chapter_column: bool = False, paper: dict | None = None
) -> str:
    """The claims as a Markdown table: claim, source, status, statistic, rule, observed, note;
    with ``paper`` (a paper-scale ledger of the same chapter), the status and value each claim
    has there, after its own."""
    head = ["chapter"] if chapter_column else []
    head += ["claim", "source", "status"]
    head += ["at paper scale"] if paper is not None else []
    head += ["statistic", "rule", "observed", "note"]
    at_paper = {c["id"]: c for c in (paper or {}).get("claims", [])}
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for c in claims:
        cells = [c.get("chapter", "")] if chapter_column else []
        cells += [c["id"], c["source"], f"**{c['status']}**"]
        if paper is not None:
            there = at_paper.get(c["id"])
            cells.append(f"{there['status']} ({observed_text(there)})" if there else "—")
        cells += [
            c.get("statistic", ""),
            c.get("rule") or _fmt(c.get("expected")),
            observed_text(c),
            claim_note(c),
        ]
        rows.append(
            "| " + " | ".join(str(x).replace("|", "\\|").replace("\n", " ") for x in cells) + " |"
        )
    return "\n".join(rows)


#: Chapters whose paper run has not been made here, with what it needs (written when a paper run
#: was tried and stopped, or measured by its dry run), relative to the repository root.
PAPER_NOT_RUN = Path("book") / "data" / "ledgers" / "paper-not-run.json"


def paper_not_run(chapter_id: str, root: str | os.PathLike | None = None) -> str | None:
    """What a chapter's paper run needs, where none is committed (from :data:`PAPER_NOT_RUN`)."""
    root = Path(root) if root is not None else find_root(Path(__file__).parent)
    path = root / PAPER_NOT_RUN if root is not None else None
    if path is None or not path.is_file():
        return None
    return json.loads(path.read_text()).get(chapter_id)


#: Why a claim's status changes between the default and the paper scale, written after both runs
#: (a finding's explanation, never a decision): ``{chapter: {claim: {"default": status,
#: "paper": status, "why": text}}}``, relative to the repository root.
PAPER_FINDINGS = Path("book") / "data" / "ledgers" / "paper-findings.json"


def scale_finding(
    chapter_id: str, claim_id: str, default: str, paper: str, root: str | os.PathLike | None = None
) -> str | None:
    """The recorded reason (:data:`PAPER_FINDINGS`) why ``claim_id`` goes from ``default`` to
    ``paper`` between the scales; None where none is recorded for that very change (a reason
    written for another pair of statuses is not shown)."""
    root = Path(root) if root is not None else find_root(Path(__file__).parent)
    path = root / PAPER_FINDINGS if root is not None else None
    if path is None or not path.is_file():
        return None
    entry = json.loads(path.read_text()).get(chapter_id, {}).get(claim_id)
    if not entry or (entry.get("default"), entry.get("paper")) != (default, paper):
        return None
    return str(entry["why"])


def provenance_text(led: dict) -> str:
    """A paper ledger's provenance in one line: date, commit, machine, time and memory."""
    prov = led.get("provenance") or {}
    mach = prov.get("machine") or {}
    where = mach.get("processor", "an unknown machine")
    if mach.get("cores"):
        where += f", {mach['cores']} cores"
    if mach.get("gpu"):
        where += f", {mach['gpu']}"
    seconds = prov.get("wall_seconds")
    took = f"{seconds / 60:.1f} min" if isinstance(seconds, (int, float)) else "time unknown"
    memory = prov.get("peak_memory_mb")
    peak = f", peak {memory / 1024:.1f} GiB" if isinstance(memory, (int, float)) else ""
    commit = str(prov.get("commit", "?"))[:7] + ("" if prov.get("clean", True) else ", modified")
    return f"made {prov.get('date', '?')} at commit {commit} on {where}: {took}{peak}"


def paper_summary(chapter_id: str, claims: list[dict], paper: dict | None) -> str:
    """The summary's paragraph on the paper scale: the paper ledger's counts, whether it is stale,
    and each claim whose status differs from this run's; or, where none is committed, what the
    paper run needs."""
    if paper is None:
        needs = paper_not_run(chapter_id)
        return "**At the paper scale.** No paper-scale ledger is committed for this chapter" + (
            f": {needs}" if needs else "."
        )
    at_paper = counted(paper["claims"])
    counts = ", ".join(
        f"{n} {s}" for s in STATUSES if (n := sum(c["status"] == s for c in at_paper))
    )
    try:
        stale = stale_sources(paper)
    except (OSError, ValueError):
        stale = ["(sources unreadable)"]
    lines = [
        f"**At the paper scale** (the committed ledger, {provenance_text(paper)}): "
        f"{len(at_paper)} claims, {counts}."
        + (f" **Stale**: changed since it was made: {', '.join(stale)}." if stale else "")
    ]
    for change in scale_changes(counted(claims), at_paper):
        why = scale_finding(chapter_id, change["id"], change["default"], change["paper"])
        lines.append(
            f"- `{change['id']}`: {change['default']} in this run, {change['paper']} at the "
            "paper scale. "
            + (_sentence(why) if why else "The book records no reason for this change yet.")
        )
    return "\n".join(lines)


def ladder_markdown(ledgers: list[dict], root: str | os.PathLike | None = None) -> str:
    """The book's scale ladder (Markdown): for each chapter with a committed paper ledger, how
    many of its claims are inconclusive at this build's scale, and what the paper scale made of
    them; every other change of status; whether the paper ledger is stale. Then the totals, and
    the chapters without a paper ledger."""
    rows = [
        "| chapter | paper ledger | inconclusive here | → reproduced | → differs | "
        "→ still inconclusive | other changes |",
        "|---|---|---|---|---|---|---|",
    ]
    total = {"inconclusive": 0, "reproduced": 0, "differs": 0, "still": 0, "other": 0}
    missing = []
    for led in ledgers:
        try:
            paper = paper_ledger(led["chapter"], root)
        except (OSError, ValueError):
            paper = None
        if paper is None or led.get("scale") == "paper":
            missing.append(led["chapter"])
            continue
        here = counted(led["claims"])
        there = {c["id"]: c["status"] for c in counted(paper["claims"])}
        open_here = [c["id"] for c in here if c["status"] == "inconclusive" and c["id"] in there]
        went = [there[i] for i in open_here]
        other = [
            f"{c['id']}: {c['status']} → {there[c['id']]}"
            for c in here
            if c["status"] != "inconclusive" and there.get(c["id"], c["status"]) != c["status"]
        ]
        stale = stale_sources(paper, root)
        made = (paper.get("provenance") or {}).get("date", "?") + (" (**stale**)" if stale else "")
        counts = [went.count("reproduced"), went.count("differs"), went.count("inconclusive")]
        total["inconclusive"] += len(open_here)
        total["reproduced"] += counts[0]
        total["differs"] += counts[1]
        total["still"] += counts[2]
        total["other"] += len(other)
        rows.append(
            f"| {led['chapter']} | {made} | {len(open_here)} | {counts[0]} | {counts[1]} | "
            f"{counts[2]} | {'; '.join(other) or '—'} |"
        )
    if len(rows) == 2:
        text = "No chapter of this build has a committed paper-scale ledger."
    else:
        text = "\n".join(rows) + (
            f"\n\nOf the {total['inconclusive']} claims inconclusive here that a paper ledger "
            f"also records, the paper scale decides {total['reproduced'] + total['differs']} "
            f"({total['reproduced']} reproduced, {total['differs']} differs) and leaves "
            f"{total['still']} inconclusive; {total['other']} other claims change status."
        )
    if missing:
        text += "\n\nWithout a paper-scale ledger: " + ", ".join(f"`{c}`" for c in missing) + "."
    return text


def counted(claims: Iterable[dict]) -> list[dict]:
    """The claims the book counts: registered ones. A ledger with no registered claim (a chapter
    not yet moved to registered claims) is counted whole."""
    claims = list(claims)
    registered = [c for c in claims if c.get("registered")]
    return registered if registered else claims


def _sentence(text: str) -> str:
    """``text`` as a sentence: a capital first letter and a full stop."""
    text = text.strip()
    if not text:
        return ""
    text = text[0].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."


def summary_markdown(claims: Iterable[dict]) -> str:
    """A chapter's summary from its claims: the counts by status, then each claim that differs,
    is inconclusive or fails, with its one-line reason, and each amended rule."""
    claims = counted(claims)
    counts = {s: sum(c["status"] == s for c in claims) for s in STATUSES}
    parts = [f"{counts[s]} {s}" for s in STATUSES if counts[s] or s != "fails"]
    lines = [f"**Summary.** This run decided {len(claims)} claims: " + ", ".join(parts) + "."]
    for status, heading in (
        ("fails", "Fails"),
        ("differs", "Differs"),
        ("inconclusive", "Inconclusive"),
    ):
        for c in claims:
            if c["status"] != status:
                continue
            rule = c.get("rule") or _fmt(c.get("expected"))
            line = f"- **{heading}:** `{c['id']}` ({c['source']}): {observed_text(c)}"
            line += f", against the rule {rule}."
            why = claim_note(c) if status == "inconclusive" else str(c.get("note") or "")
            if why:
                line += f" {_sentence(why)}"
            if status != "inconclusive" and c.get("could_fail"):
                line += f" {_sentence(c['could_fail'])}"
            lines.append(line)
    for c in claims:
        for a in c.get("amended", []):
            lines.append(
                f"- **Amended:** `{c['id']}`, on {a['date']}: the rule was {a['previous']}; "
                f"{a['reason']}"
            )
    return "\n".join(lines)


# -------------------------------------------------------------------------------------------------
# Paper-scale ledgers: committed data, made outside CI, marked stale when their sources change
# -------------------------------------------------------------------------------------------------
#: Where the book keeps the ledgers of paper-scale runs made on a real machine (relative to the
#: repository root): data, not runs; CI never makes one.
PAPER_DIR = Path("book") / "data" / "ledgers" / "paper"


def chapter_sources(chapter_id: str, root: str | os.PathLike | None = None) -> list[Path]:
    """The files a chapter's results depend on, for its fingerprint: its page (the MyST notebook)
    and every Python file of its topic's subpackage, relative to the repository root, sorted."""
    from companions import scale

    chapter = scale.get_chapter(chapter_id)
    root = Path(root) if root is not None else find_root(Path(__file__).parent)
    if root is None:
        raise FileNotFoundError("no repository root (a folder with _toc.yml) above the package")
    topic = scale.topic_of(chapter_id)
    files = [Path(chapter.notebook)]
    files += sorted(
        p.relative_to(root) for p in (root / "lib" / "companions" / topic).rglob("*.py")
    )
    return files


def fingerprint(chapter_id: str, root: str | os.PathLike | None = None) -> dict[str, str]:
    """``{path: sha256}`` of :func:`chapter_sources`: recorded in a paper ledger when it is made,
    compared by :func:`stale_sources` when the book shows it."""
    import hashlib

    root = Path(root) if root is not None else find_root(Path(__file__).parent)
    return {
        str(path): hashlib.sha256((root / path).read_bytes()).hexdigest()
        for path in chapter_sources(chapter_id, root)
    }


def stale_sources(led: dict, root: str | os.PathLike | None = None) -> list[str]:
    """The sources of a paper ledger that changed since it was made (added, removed or edited
    files of its chapter's page and topic), sorted; empty when it is current. A ledger without a
    recorded fingerprint is stale as a whole (``["(no fingerprint)"]``)."""
    made = (led.get("provenance") or {}).get("sources")
    if not made:
        return ["(no fingerprint)"]
    now = fingerprint(led["chapter"], root)
    return sorted(path for path in set(made) | set(now) if made.get(path) != now.get(path))


def paper_ledger(chapter_id: str, root: str | os.PathLike | None = None) -> dict | None:
    """The committed paper-scale ledger of a chapter (``<root>/book/data/ledgers/paper/<id>.json``),
    or None where there is none (or no repository, as in a downloaded notebook)."""
    root = Path(root) if root is not None else find_root(Path(__file__).parent)
    if root is None:
        return None
    path = root / PAPER_DIR / f"{chapter_id}.json"
    if not path.is_file():
        return None
    data = json.loads(path.read_text())
    if not isinstance(data, dict) or data.get("chapter") != chapter_id or "claims" not in data:
        raise ValueError(f"{path} is not the paper ledger of chapter {chapter_id!r}")
    return data


def scale_changes(default: list[dict], paper: list[dict]) -> list[dict]:
    """Claims whose status differs between two runs (the default scale and the paper scale): one
    ``{"id", "default", "paper"}`` per claim present in both, in the default run's order."""
    at_paper = {c["id"]: c["status"] for c in paper}
    return [
        {"id": c["id"], "default": c["status"], "paper": at_paper[c["id"]]}
        for c in default
        if c["id"] in at_paper and at_paper[c["id"]] != c["status"]
    ]


def load(ledger_dir: str | os.PathLike | None = None, dry_runs: bool = False) -> list[dict]:
    """Every ledger found in ``ledger_dir`` (default: :func:`default_dir`), sorted by chapter;
    the ledgers of dry runs (:func:`is_dry_run`) only with ``dry_runs=True``."""
    folder = Path(ledger_dir or default_dir())
    if not folder.is_dir():
        return []
    ledgers = []
    for path in sorted(folder.glob("*.json")):
        data = json.loads(path.read_text())
        if not isinstance(data, dict) or not {"chapter", "claims"} <= set(data):
            raise ValueError(
                f"{path} is not a chapter ledger (it has no 'chapter' and 'claims'): "
                f"move it out of {folder}"
            )
        if dry_runs or not is_dry_run(data):
            ledgers.append(data)
    return sorted(ledgers, key=lambda d: d["chapter"])


def gathered(ledgers: list[dict]) -> tuple[str, str]:
    """(summary table per chapter, table of every claim) for the book's ledger page and the CLI."""
    summary = [
        "| chapter | scale | device | seed | wall s | claims | " + " | ".join(STATUSES) + " |",
        "|---|---|---|---|---|---|" + "---|" * len(STATUSES),
    ]
    every = []
    for led in ledgers:
        claims = counted(led["claims"])
        counts = [sum(c["status"] == s for c in claims) for s in STATUSES]
        scale = f"{led['scale']} (dry run)" if is_dry_run(led) else led["scale"]
        summary.append(
            f"| {led['chapter']} | {scale} | {led['device']} | {led['seed']} | "
            f"{led['wall_seconds']:.1f} | {len(claims)} | "
            + " | ".join(str(n) for n in counts)
            + " |"
        )
        every += [{"chapter": led["chapter"], **c} for c in claims]
    return "\n".join(summary), claims_table(every, chapter_column=True)


def _show_markdown(text: str) -> None:
    try:
        from IPython import get_ipython
        from IPython.display import Markdown, display

        if get_ipython() is not None:
            display(Markdown(text))
            return
    except ImportError:  # pragma: no cover - IPython is part of the pinned environment
        pass
    print(text)
