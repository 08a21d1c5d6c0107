"""The fidelity benchmark (`python -m bench.fidelity`) is run by hand; these keep it from
rotting: a tiny replay through every measure, the measures on a known trail, and the
committed fixtures equal to what `bench.make_fixtures` writes."""

from __future__ import annotations

import json
from pathlib import Path

from bench.fidelity import Run, as_json, replay, scripted, table
from bench.fidelity_measure import context_text, decisive_line, kept
from bench.make_fixtures import main as make_fixtures
from sessionstore import SessionStore
from sessionstore.events import TextPart
from sessionstore.projections import (
    ArtifactTrail,
    ErrorSeen,
    FileArtifact,
    LiveMessage,
    UserRequest,
)


def test_a_tiny_scripted_session_replays_compacts_and_stays_restorable(tmp_path: Path) -> None:
    with SessionStore(f"sqlite:///{tmp_path / 'fidelity.db'}") as store:
        run = replay(store, scripted(store, turns=6), 16_000)
    assert run.samples, "a 6-turn session must compact in a 16k window"
    assert run.llm_calls > 0 and run.peak > 0
    assert run.not_restorable == [] and run.chain_ok
    assert run.failed_checks == []
    for sample in run.samples:
        assert 0 <= sample.kept.requests <= sample.kept.requests_total
        assert 0 <= sample.kept.paths <= sample.kept.paths_total
        assert sample.saved > 0
    assert "| scripted (6 turns), 16k |" in table([run])
    json.dumps(as_json(run))


def test_kept_counts_what_the_context_text_holds() -> None:
    error = ErrorSeen(
        seq=9,
        call_id="c",
        tool="Bash",
        target="pytest",
        decisive="E   assert 1 == 2\nFAILED tests/t.py::test_x - assert 1 == 2\n=== 1 failed ===",
        kind="pytest",
    )
    trail = ArtifactTrail(
        session_id="s",
        seq=10,
        user_messages=(
            UserRequest(1, "m1", "Fix   the\nparser " + "x" * 100),
            UserRequest(2, "m2", "<system-reminder>hi</system-reminder>", injected=True),
            UserRequest(3, "m3", "Add a --since option"),
        ),
        files=(
            FileArtifact("/a/b.py", "modified", 5, 2, (("read", 4), ("modified", 5))),
            FileArtifact("/a/c.py", "read", 6, 1, (("read", 6),)),
            FileArtifact("/a/d.py", "created", 7, 1, (("created", 7),)),
        ),
        commands=(),
        errors=(error,),
        todos=(),
        todos_seq=None,
        tool_calls=(),
    )
    summary = LiveMessage(
        id="sum",
        role="user",
        tokens=1,
        summary=True,
        parts=(TextPart(text="Fix the parser " + "x" * 65 + " /a/b.py"),),
    )
    text = context_text([summary])
    assert decisive_line(error) == "FAILED tests/t.py::test_x - assert 1 == 2"
    got = kept(trail, text)
    assert (got.requests, got.requests_total) == (1, 2)
    assert got.lost_requests == ("Add a --since option",)
    assert (got.paths, got.paths_total, got.lost_paths) == (1, 2, ("/a/d.py",))
    assert got.error is False and got.error_lines == 0.0


def test_the_committed_fixtures_are_what_make_fixtures_writes() -> None:
    make_fixtures(["--check"])


def test_a_run_without_compaction_prunes_first_only_when_it_pruned() -> None:
    assert Run("s", 1, 1, prune_seqs=[5]).prune_first
    assert not Run("s", 1, 1).prune_first


def test_each_strategy_gets_a_row_of_its_own(tmp_path: Path) -> None:
    with SessionStore(f"sqlite:///{tmp_path / 'fidelity.db'}") as store:
        run = replay(store, scripted(store, turns=6), 16_000, "sliding_window")
    assert run.strategy == "sliding_window"
    assert run.samples, "a 6-turn session must overflow a 16k window"
    assert run.not_restorable == [] and run.chain_ok and run.failed_checks == []
    assert "| scripted (6 turns), 16k, sliding_window |" in table([run])
    json.dumps(as_json(run))


def test_previews_are_sampled_and_counted_apart_from_compactions(tmp_path: Path) -> None:
    with SessionStore(f"sqlite:///{tmp_path / 'fidelity.db'}") as store:
        run = replay(store, scripted(store, turns=12), 16_000, "tool_blocks")
    assert run.previews > 0, "12 turns of long outputs must be cut to previews in 16k"
    assert run.compactions + run.previews == len(run.samples)
    assert all(s.saved > 0 and s.summary_tokens == 0 for s in run.samples if s.kind == "previews")
    assert run.not_restorable == [] and run.chain_ok and run.failed_checks == []
    row = next(line for line in table([run]).splitlines() if "tool_blocks |" in line)
    assert row.split(" | ")[1:3] == [str(run.compactions), str(run.previews)]
