"""Write the fidelity benchmark's long sessions: `python -m bench.make_fixtures`.

Two synthetic but realistic coding-agent sessions, in the agents' own formats, so the
benchmark reads them through the same importers real transcripts go through:
- `claude_code_long.jsonl`: a Claude Code transcript (one entry per content block, chained
  by `parentUuid`; Read/Edit/Write/Bash/Grep/TodoWrite on absolute paths; failed commands as
  `Exit code N` errors; meta entries and system reminders in the user's turn);
- `rollout-...-codex-long.jsonl`: a Codex rollout (`shell` calls with argv and JSON output
  envelopes, `apply_patch` custom tool calls, `update_plan`, reasoning items, token counts).

Deterministic: the same seed writes the same bytes, so the files in `bench/fixtures/` can be
checked against a fresh run (`--check`).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.fixture_projects import ledger, tilemap
from bench.fixture_story import Act, Task, story

FIXTURES = Path(__file__).parent / "fixtures"
CLAUDE_CODE_FILE = "claude_code_long.jsonl"
CODEX_FILE = "rollout-2025-10-02T09-14-00-0199a3f2-codex-long.jsonl"
START = datetime(2025, 10, 2, 9, 14, tzinfo=UTC)


class _Clock:
    def __init__(self) -> None:
        self.now = START

    def tick(self, seconds: float = 2.5) -> str:
        self.now += timedelta(seconds=seconds)
        return self.now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{self.now.microsecond // 1000:03d}Z"


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _line(value: dict[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# Claude Code


def claude_code(tasks: list[Task], root: str, seed: int) -> str:
    rng, clock = random.Random(seed), _Clock()
    session = _uuid(rng)
    lines: list[str] = []
    parent: str | None = None
    cache = 14_000

    def entry(kind: str, message: dict[str, Any], **extra: Any) -> None:
        nonlocal parent
        me = _uuid(rng)
        lines.append(
            _line(
                {
                    "parentUuid": parent,
                    "isSidechain": False,
                    "userType": "external",
                    "cwd": root,
                    "sessionId": session,
                    "version": "1.0.98",
                    "gitBranch": "main",
                    "type": kind,
                    "message": message,
                    "uuid": me,
                    "timestamp": clock.tick(),
                    **extra,
                }
            )
        )
        parent = me

    def assistant(blocks: list[dict[str, Any]], stop: str) -> None:
        nonlocal cache
        message_id = f"msg_01{rng.getrandbits(64):016x}"
        request = f"req_011C{rng.getrandbits(48):012x}"
        cache += rng.randrange(500, 6_000)
        usage = {
            "input_tokens": rng.randrange(3, 12),
            "cache_creation_input_tokens": rng.randrange(200, 3_000),
            "cache_read_input_tokens": cache,
            "output_tokens": rng.randrange(20, 900),
            "service_tier": "standard",
        }
        for n, block in enumerate(blocks):
            message = {
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5-20250929",
                "content": [block],
                "stop_reason": stop if n == len(blocks) - 1 else None,
                "stop_sequence": None,
                "usage": usage,
            }
            entry("assistant", message, requestId=request)

    for n, task in enumerate(tasks):
        if n == 7:  # the user looked at the cost: a slash command, echoed into the turn
            entry("user", {"role": "user", "content": _CAVEAT}, isMeta=True)
            entry("user", {"role": "user", "content": _COST_COMMAND})
            entry("user", {"role": "user", "content": _COST_OUTPUT})
        for injected in task.injected:
            entry("user", {"role": "user", "content": injected}, isMeta=True)
        entry("user", {"role": "user", "content": task.request})
        for reply in task.replies:
            calls = [(f"toolu_01{rng.getrandbits(80):020x}", act) for act in reply.acts]
            blocks: list[dict[str, Any]] = []
            if reply.text:
                blocks.append({"type": "text", "text": reply.text})
            blocks += [
                {"type": "tool_use", "id": call_id, "name": name, "input": arguments}
                for call_id, act in calls
                for name, arguments in [_claude_code_call(act, root)]
            ]
            assistant(blocks, "tool_use")
            for call_id, act in calls:
                output = f"Exit code {act.exit_code}\n{act.output}" if act.exit_code else act.output
                result: dict[str, Any] = {
                    "tool_use_id": call_id,
                    "type": "tool_result",
                    "content": output,
                }
                if act.failed:
                    result["is_error"] = True
                entry("user", {"role": "user", "content": [result]}, toolUseResult=_used(act))
        assistant([{"type": "text", "text": task.answer}], "end_turn")
    return "\n".join(lines) + "\n"


_CAVEAT = (
    "Caveat: The messages below were generated by the user while running local commands. DO "
    "NOT respond to these messages or otherwise consider them in your response unless the user "
    "explicitly asks you to."
)
_COST_COMMAND = (
    "<command-name>/cost</command-name>\n<command-message>cost</command-message>\n"
    "<command-args></command-args>"
)
_COST_OUTPUT = (
    "<local-command-stdout>Total cost:            $4.87\nTotal duration (API):  21m 3.2s\n"
    "Total code changes:    412 lines added, 97 lines removed</local-command-stdout>"
)


def _claude_code_call(act: Act, root: str) -> tuple[str, dict[str, Any]]:
    if act.kind == "read":
        return "Read", {"file_path": act.path}
    if act.kind == "search":
        return "Grep", {"pattern": act.command, "path": root, "output_mode": "content", "-n": True}
    if act.kind == "edit":
        return "Edit", {"file_path": act.path, "old_string": act.old, "new_string": act.new}
    if act.kind == "write":
        return "Write", {"file_path": act.path, "content": act.new}
    if act.kind == "todos":
        todos = [
            {"content": text, "status": status, "activeForm": text.replace("Fix", "Fixing")}
            for text, status in act.todos
        ]
        return "TodoWrite", {"todos": todos}
    return "Bash", {"command": act.command, "description": f"Run {act.command.split()[0]}"}


def _used(act: Act) -> Any:
    """Claude Code's `toolUseResult`: the tool's structured result beside the text."""
    if act.kind == "run":
        if act.failed:
            return f"Error: Exit code {act.exit_code}"
        return {"stdout": act.output[-200:], "stderr": "", "interrupted": False}
    if act.kind in ("read", "edit", "write"):
        return {"filePath": act.path}
    return {"type": act.kind}


# Codex


def codex(tasks: list[Task], root: str, seed: int) -> str:
    rng, clock = random.Random(seed), _Clock()
    thread = "0199a3f2-6c1e-7b40-9d2a-" + f"{rng.getrandbits(48):012x}"
    lines: list[str] = []
    total = 0

    def put(kind: str, payload: dict[str, Any]) -> None:
        lines.append(_line({"timestamp": clock.tick(), "type": kind, "payload": payload}))

    def message(role: str, text: str, kind: str = "input_text") -> None:
        put(
            "response_item",
            {"type": "message", "role": role, "content": [{"type": kind, "text": text}]},
        )

    def tokens() -> None:
        nonlocal total
        last = {
            "input_tokens": rng.randrange(4_000, 60_000),
            "cached_input_tokens": 0,
            "output_tokens": rng.randrange(50, 900),
            "reasoning_output_tokens": 40,
        }
        total += last["input_tokens"]
        info = {
            "total_token_usage": {**last, "input_tokens": total},
            "last_token_usage": last,
            "model_context_window": 272_000,
        }
        put("event_msg", {"type": "token_count", "info": info, "rate_limits": None})

    put(
        "session_meta",
        {
            "id": thread,
            "timestamp": clock.tick(),
            "cwd": root,
            "originator": "codex_cli_rs",
            "cli_version": "0.44.0",
            "instructions": None,
            "source": "cli",
            "model_provider": "openai",
        },
    )
    message(
        "developer",
        "<permissions instructions>\nFilesystem sandboxing: workspace-write. "
        "Approval policy: on-request.\n</permissions instructions>",
    )
    message(
        "user",
        "<user_instructions>\n\n# AGENTS.md\nRun `cargo test` and `cargo clippy` "
        "before you finish. Keep the public API stable.\n\n</user_instructions>",
    )
    message(
        "user",
        f"<environment_context>\n  <cwd>{root}</cwd>\n  <approval_policy>on-request"
        "</approval_policy>\n  <sandbox_mode>workspace-write</sandbox_mode>\n  <shell>bash"
        "</shell>\n</environment_context>",
    )
    for task in tasks:
        put("event_msg", {"type": "task_started", "model_context_window": 272_000})
        put(
            "turn_context",
            {
                "cwd": root,
                "approval_policy": "on-request",
                "model": "gpt-5-codex",
                "effort": "medium",
                "summary": "auto",
            },
        )
        message("user", task.request)
        put(
            "event_msg",
            {"type": "user_message", "message": task.request, "images": [], "kind": "plain"},
        )
        for reply in task.replies:
            summary = (
                [{"type": "summary_text", "text": f"**Next step**\n\n{reply.text}"}]
                if reply.text
                else []
            )
            put(
                "response_item",
                {
                    "type": "reasoning",
                    "summary": summary,
                    "content": None,
                    "encrypted_content": f"gAAAAAB{rng.getrandbits(256):064x}",
                },
            )
            calls = [(f"call_{rng.getrandbits(96):024x}", act) for act in reply.acts]
            for call_id, act in calls:
                put("response_item", _codex_call(act, call_id, root))
            tokens()
            for call_id, act in calls:
                put("response_item", _codex_output(act, call_id, rng))
        message("assistant", task.answer, "output_text")
        put("event_msg", {"type": "agent_message", "message": task.answer})
        tokens()
        put("event_msg", {"type": "task_complete", "last_agent_message": task.answer})
    return "\n".join(lines) + "\n"


def _patch(act: Act) -> str:
    if act.kind == "write":
        body = "".join(f"+{line}\n" for line in act.new.splitlines())
        return f"*** Begin Patch\n*** Add File: {act.path}\n{body}*** End Patch\n"
    return (
        f"*** Begin Patch\n*** Update File: {act.path}\n@@\n-{act.old}\n+{act.new}\n*** End Patch\n"
    )


def _codex_call(act: Act, call_id: str, root: str) -> dict[str, Any]:
    if act.kind in ("edit", "write"):
        return {
            "type": "custom_tool_call",
            "call_id": call_id,
            "name": "apply_patch",
            "input": _patch(act),
        }
    if act.kind == "todos":
        plan = [{"step": text, "status": status} for text, status in act.todos]
        arguments = json.dumps({"plan": plan})
        return {
            "type": "function_call",
            "name": "update_plan",
            "arguments": arguments,
            "call_id": call_id,
        }
    arguments = json.dumps({"command": ["bash", "-lc", act.command], "workdir": root})
    return {"type": "function_call", "name": "shell", "arguments": arguments, "call_id": call_id}


def _codex_output(act: Act, call_id: str, rng: random.Random) -> dict[str, Any]:
    if act.kind in ("edit", "write"):
        return {"type": "custom_tool_call_output", "call_id": call_id, "output": act.output}
    if act.kind == "todos":
        return {"type": "function_call_output", "call_id": call_id, "output": act.output}
    metadata = {"exit_code": act.exit_code, "duration_seconds": round(rng.uniform(0.1, 9), 1)}
    output = json.dumps({"output": act.output, "metadata": metadata})
    return {"type": "function_call_output", "call_id": call_id, "output": output}


def build(seed: int = 18) -> dict[str, str]:
    """The fixtures' file names and texts for `seed`."""
    return {
        CLAUDE_CODE_FILE: claude_code(story(ledger(seed), seed), "/home/dev/ledger", seed),
        CODEX_FILE: codex(story(tilemap(seed + 1), seed + 1), "/home/dev/tilemap", seed + 1),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=18)
    parser.add_argument("--out", type=Path, default=FIXTURES)
    parser.add_argument("--check", action="store_true", help="fail if the files differ")
    args = parser.parse_args(argv)
    stale = []
    for file_name, content in build(args.seed).items():
        path = args.out / file_name
        if args.check:
            if not path.exists() or path.read_text(encoding="utf-8") != content:
                stale.append(file_name)
            continue
        args.out.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
        print(f"{path}: {len(content.encode()):,} bytes, {content.count(chr(10)):,} lines")
    if stale:
        sys.exit(f"stale fixtures (run python -m bench.make_fixtures): {', '.join(stale)}")


if __name__ == "__main__":
    main()
