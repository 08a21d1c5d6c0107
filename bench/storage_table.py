"""The rows of `bench.storage` and their table: one line per measure, sessionstore beside the
fastest peer (the Agents SDK's `SQLiteSession`) and beside a raw baseline (the same rows read
with plain `sqlite3` and `json.loads`, or inserted with plain psycopg), each with its ratio and
the storage target set for it.

Its columns differ from the main table of `python -m bench` (one column per store): a raw
baseline is not a store, and the interleaved rows have one peer only. `python -m bench` prints
this table under its own and writes it to the same JSON file under `"storage"`.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

OURS = "sessionstore"
PEER = "agents SQLiteSession"
RAW = "raw"


@dataclass
class Row:
    """One measure. `samples` keeps every timing by column (`OURS`, `PEER`, `RAW`); a column's
    value is their median, or `values` sets it directly (sizes, rates); `na` says why a
    column has no value; `outcome` replaces our cell's text (a refusal, say)."""

    key: str
    label: str
    unit: str
    target: str = ""
    higher_is_better: bool = False
    samples: dict[str, list[float]] = field(default_factory=dict)
    values: dict[str, float] = field(default_factory=dict)
    na: dict[str, str] = field(default_factory=dict)
    outcome: str = ""
    ratios: bool = True
    """False when our value is not comparable (a refused write took no space, say)."""

    def value(self, column: str) -> float | None:
        if column in self.values:
            return self.values[column]
        samples = self.samples.get(column)
        return statistics.median(samples) if samples else None

    def ratio(self, column: str) -> float | None:
        """Our value over the column's: under 1 is faster or smaller, except on a rate row
        (`higher_is_better`), where it is the share of the baseline's rate we reach."""
        ours, other = self.value(OURS), self.value(column)
        if not self.ratios or ours is None or other is None or other == 0:
            return None
        return ours / other

    def as_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "unit": self.unit,
            "target": self.target,
            "higher_is_better": self.higher_is_better,
            "values": {c: self.value(c) for c in (OURS, PEER, RAW)},
            "ratio_to_peer": self.ratio(PEER),
            "ratio_to_raw": self.ratio(RAW),
            "outcome": self.outcome,
            "na": self.na,
            "samples": self.samples,
        }


def markdown(rows: list[Row]) -> str:
    """The table: each cell its median (or value), the ratios in their own columns."""
    lines = [
        f"| storage row (interleaved) | {OURS} | {PEER} | {RAW} | ours/peer | ours/raw | target |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        cells = []
        for column in (OURS, PEER, RAW):
            value = row.value(column)
            if column == OURS and row.outcome:
                cells.append(row.outcome)
            elif value is None:
                cells.append("n/a" if column in row.na else "")
            else:
                cells.append(f"{fmt(value)} {row.unit}")
        ratios = [row.ratio(c) for c in (PEER, RAW)]
        cells += [f"{fmt(r)}x" if r is not None else "" for r in ratios]
        cells.append(row.target)
        lines.append(f"| {row.label} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(
        "Times are medians of alternating runs in one process; ours/peer and ours/raw are our "
        "value over theirs (on the appends/s row: the share of their rate we reach)."
    )
    for row in rows:
        for column, reason in sorted(row.na.items()):
            lines.append(f"- n/a, {row.label}, {column}: {reason}")
    return "\n".join(lines)


def fmt(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    if value >= 0.1:
        return f"{value:.2f}"
    return f"{value:.3f}"
