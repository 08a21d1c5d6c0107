"""Medians, the ratio to the best peer per row, and the table as Markdown and JSON."""

from __future__ import annotations

import json
import os
import platform
import sqlite3
import statistics
from pathlib import Path
from typing import Any

from bench.peers import Store
from bench.workloads import Config, Results

OURS = ("sessionstore", "sessionstore FULL")


def rows(cfg: Config) -> list[tuple[str, str, str]]:
    """(key, label, unit) in table order; lower is better on every row."""
    k = _k
    out = [
        ("append_single", f"1. Append, 1 session x {k(cfg.single)} msgs: median per call", "ms"),
        ("append_single_p95", "1. … p95 per call", "ms"),
        (
            "append_multi",
            f"1. Append, {cfg.sessions} sessions x {cfg.per_session} msgs: median per call",
            "ms",
        ),
    ]
    for size in cfg.resume_sizes:
        out.append(
            (f"resume@{size}", f"2. Resume {k(size)}-msg session (open + live context)", "ms")
        )
    for size in cfg.resume_sizes:
        out.append((f"resume_scratch@{size}", f"2. … {k(size)} without snapshots", "ms"))
    if cfg.managed:
        out.append(("managed_resume", f"2. Resume managed {k(cfg.managed)}-event session", "ms"))
        out.append(("managed_scratch", "2. … folding from the first event", "ms"))
        out.append(
            ("managed_replay", f"3. Replay: the middle of the managed {k(cfg.managed)}", "ms")
        )
    out.append(
        ("replay", f"3. Replay: context at msg {k(cfg.single // 2)} of {k(cfg.single)}", "ms")
    )
    for mark in cfg.growth:
        out.append(
            (f"growth_append@{mark}", f"4. Append at {k(mark)} msgs (median of last 500)", "ms")
        )
    for mark in cfg.growth:
        out.append((f"growth_context@{mark}", f"4. Live context on open handle at {k(mark)}", "ms"))
    label = f"5. Live token count after each append (first {k(cfg.single)})"
    out.append(("tokens", label, "ms"))
    out.append(("size_per_10k", "6. Size on disk per 10k msgs", "MB"))
    return out


def _k(n: int) -> str:
    return f"{n // 1000}k" if n >= 1000 and n % 1000 == 0 else f"{n:,}"


def summarize(results: Results, stores: list[Store], cfg: Config) -> dict[str, Any]:
    """Per row and store: the median of the runs, or the reason; and the best peer."""
    table: dict[str, Any] = {}
    for key, label, unit in rows(cfg):
        cells: dict[str, Any] = {}
        for store in stores:
            samples = results.samples.get(key, {}).get(store.name)
            reason = results.na.get(key, {}).get(store.name)
            if store.available is not None:
                cells[store.name] = {"na": f"not installed: {store.available}"}
            elif samples:
                cells[store.name] = {"median": statistics.median(samples), "runs": samples}
            elif reason:
                cells[store.name] = {"na": reason}
            else:
                cells[store.name] = {"na": "not measured"}
        peers = {
            name: cell["median"]
            for name, cell in cells.items()
            if name not in OURS and "median" in cell
        }
        best = min(peers, key=lambda name: peers[name]) if peers else None
        for cell in cells.values():
            if best is not None and "median" in cell and peers[best] > 0:
                cell["ratio_to_best_peer"] = cell["median"] / peers[best]
        table[key] = {"label": label, "unit": unit, "best_peer": best, "cells": cells}
    return table


def markdown(table: dict[str, Any], stores: list[Store]) -> str:
    """The table: one column per store, each cell `median (x best peer)`."""
    names = [s.name for s in stores]
    lines = [
        "| workload | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for row in table.values():
        cells = []
        for name in names:
            cell = row["cells"][name]
            if "median" not in cell:
                cells.append("n/a")
                continue
            text = _fmt(cell["median"]) + " " + row["unit"]
            if name == row["best_peer"]:
                text = f"**{text}**"
            if "ratio_to_best_peer" in cell and name != row["best_peer"]:
                text += f" ({_fmt(cell['ratio_to_best_peer'])}x)"
            cells.append(text)
        lines.append(f"| {row['label']} | " + " | ".join(cells) + " |")
    lines.append("| durability | " + " | ".join(s.durability for s in stores) + " |")
    lines.append("")
    lines.append("Bold: the best peer on the row; (Nx): the cell's time or size over it.")
    reasons: dict[str, set[str]] = {}
    for row in table.values():
        for name, cell in row["cells"].items():
            if "na" in cell and cell["na"] != "not measured":
                reasons.setdefault(name, set()).add(cell["na"])
    for name in names:
        for reason in sorted(reasons.get(name, ())):
            lines.append(f"- n/a for {name}: {reason}")
    for store in stores:
        if store.notes:
            lines.append(f"- {store.name}: {store.notes}")
    return "\n".join(lines)


def _fmt(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def write_json(path: Path, payload: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2, default=str) + "\n")


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    model = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "platform": platform.platform(),
    }
