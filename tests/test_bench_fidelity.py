"""The fidelity benchmark (`python -m bench.fidelity`) is run by hand; these keep it from
rotting: a tiny replay through every measure, the measures on a known trail, and the
committed fixtures equal to what `bench.make_fixtures` writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.fidelity import Run, Source, as_json, chosen, main, replay, scripted, table
from bench.fidelity_measure import context_text, decisive_line, kept
from bench.fidelity_real import BY_NAME, REAL, TRANSCRIPTS, missing, real_messages
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
        run = replay(store, scripted(store, turns=20), 16_000)
    assert run.samples, "a 20-turn session must compact in a 16k window"
    assert run.llm_calls > 0 and run.peak > 0
    assert run.not_restorable == [] and run.chain_ok
    assert run.failed_checks == []
    for sample in run.samples:
        assert 0 <= sample.kept.requests <= sample.kept.requests_total
        assert 0 <= sample.kept.paths <= sample.kept.paths_total
        assert sample.saved > 0
    assert "| scripted (20 turns), 16k |" in table([run])
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


@pytest.mark.slow  # 465 model calls replayed: 20 s
def test_a_real_pi_session_at_32k_keeps_every_first_sentence_and_the_last_errors_lines(
    tmp_path: Path,
) -> None:
    """Replays pi's own recorded session (`../shared/transcripts`, outside the repository) at
    32k: after every compaction, each request so far is in the context from its first
    sentence on, and the last error with every one of its decisive lines."""
    why = missing(BY_NAME["real-pi"], TRANSCRIPTS)
    if why is not None:
        pytest.skip(why)
    with SessionStore(f"sqlite:///{tmp_path / 'pi.db'}") as store:
        messages = real_messages(store, BY_NAME["real-pi"], TRANSCRIPTS, tmp_path)
    source = Source("pi", messages)
    with SessionStore(f"sqlite:///{tmp_path / 'pi-32k.db'}") as store:
        run = replay(store, source, 32_000)
    assert run.compactions >= 10 and run.failed_checks == []
    for sample in run.samples:
        assert sample.kept.lost_first_sentences == ()
        assert sample.kept.requests == sample.kept.requests_total
        if sample.kept.error is not None:
            assert sample.kept.error and sample.kept.error_lines == 1.0
    whole, total = run.whole_requests()
    assert whole >= total - run.compactions  # at most the pasted log is shortened


def test_real_sessions_absent_are_skipped_with_a_message_and_nothing_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    absent = tmp_path / "absent"
    out = tmp_path / "out.json"
    main(["--sessions", "real", "--transcripts", str(absent), "--out", str(out)])
    printed = capsys.readouterr().out.splitlines()
    assert printed == [
        *(
            f"skipped {t.name}: {absent} is absent (the real transcripts are kept outside the "
            "repository)"
            for t in REAL
        ),
        "nothing to replay: every session asked for is absent",
    ]
    assert not out.exists()
    assert chosen(["scripted", "real-pi"], absent, log=lambda _: None) == ["scripted"]
