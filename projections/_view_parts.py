"""HTML fragments of the view: one live message, one event row, one row of each list.

Every text of a session (messages, tool arguments and outputs, titles, reasons) is hostile:
it goes through `esc` and nowhere else, so `</script>` or `<img onerror=...>` in an output
reads as text. The page's script only ever places these fragments (made here, escaped) or
sets `textContent`.
"""

from __future__ import annotations

import html
from datetime import datetime
from urllib.parse import quote

from sessionstore.events import FilePart, NativePart, ReasoningPart, TextPart, ToolCallPart
from sessionstore.projections._artifacts import (
    CommandRun,
    ErrorSeen,
    FileArtifact,
    TodoItem,
    UserRequest,
)
from sessionstore.projections._live import LiveMessage, LiveToolResult, native_text
from sessionstore.projections._timeline import TimelineRow
from sessionstore.projections._view_model import LiveVersion


def esc(text: str) -> str:
    """Text as HTML text or an attribute's value: nothing in it opens a tag or ends a quote."""
    return html.escape(text, quote=True)


def when(at: datetime) -> str:
    return at.strftime("%Y-%m-%d %H:%M:%S UTC")


def page_link(session_id: str) -> str:
    """The relative address of a session's page, as `view --all` names the files."""
    return esc(quote(session_id, safe="") + ".html")


CLIP = 3_000
"""Characters of a text a message shows at first: the rest of a long output is in the page's
table of texts, written in when the reader asks, so showing 200 messages of 50 KB outputs
lays out 200 short blocks, not 10 MB of text."""


def message_html(version: LiveVersion | LiveMessage, texts: dict[str, str]) -> str:
    """One message as the model was shown it: role, its parts, what was cut and the original
    behind a click, the marks of a summary and a pin. A text longer than `CLIP` shows its
    head, and its whole is put in `texts` (the page's table) under a new key."""
    if isinstance(version, LiveVersion):
        message, originals = version.message, version.originals
    else:
        message, originals = version, {}
    classes = f"msg role-{esc(message.role)}"
    badges = ""
    if message.summary:
        classes += " summary"
        badges += '<span class="badge summary">summary</span>'
    if message.pinned:
        badges += '<span class="badge">pinned</span>'
    if message.reasoning_cleared:
        badges += '<span class="badge">thinking cleared</span>'
    parts = "".join(_part(part, message, originals.get(part.id), texts) for part in message.parts)
    return (
        f'<article class="{classes}" data-id="{esc(message.id)}">'
        f'<header><span class="role">{esc(message.role)}</span>{badges}'
        f'<span class="meta">{esc(message.id)} · {message.tokens:,} tokens</span></header>'
        f"{parts}</article>"
    )


def _part(
    part: TextPart | ReasoningPart | ToolCallPart | LiveToolResult | FilePart | NativePart,
    message: LiveMessage,
    original: str | None,
    texts: dict[str, str],
) -> str:
    if isinstance(part, TextPart):
        note = _badge("truncated") if original is not None else ""
        return f'<div class="text">{note}{_shown(part.text, texts)}' + (
            _original(part.id, original) + "</div>"
        )
    if isinstance(part, ReasoningPart):
        return (
            '<details class="thinking"><summary>thinking</summary>'
            f"{_shown(part.text, texts, 'pre')}</details>"
        )
    if isinstance(part, ToolCallPart):
        status = message.call_status.get(part.id)
        note = _badge(status) if status else ""
        return (
            f'<div class="call"><span class="tool">{esc(part.name)}</span>'
            f'<span class="meta">{esc(part.call_id)}</span>{note}'
            f"{_shown(part.arguments, texts)}{_original(part.id, original)}</div>"
        )
    if isinstance(part, LiveToolResult):
        shown = "" if part.status == "original" else _badge(part.status)
        error = " error" if part.is_error else ""
        name = esc(part.name or "tool")
        return (
            f'<div class="result status-{esc(part.status)}{error}">'
            f'<span class="tool">{name} →</span><span class="meta">{esc(part.call_id)} · '
            f"{part.tokens:,} tokens</span>{shown}"
            f"{_shown(part.output, texts)}{_original(part.id, original)}</div>"
        )
    if isinstance(part, FilePart):
        label = part.filename or part.url or part.media_type
        return f'<div class="file">[{esc(part.media_type)}: {esc(label)}]</div>'
    shown = part.text or native_text(part)
    return f'<div class="native"><span class="meta">{esc(part.native.api)}</span>' + (
        f"{_shown(shown, texts, 'pre')}</div>"
    )


def _shown(text: str, texts: dict[str, str], tag: str = 'pre class="shown"') -> str:
    """A text in a `<pre>`: whole when short, else its first `CLIP` characters and a control
    that brings the rest (from `texts`, under the key it names)."""
    if len(text) <= CLIP:
        return f"<{tag}>{esc(text)}</pre>"
    key = f"t{len(texts)}"
    texts[key] = text
    return (
        f"<{tag}>{esc(text[:CLIP])}</pre>"
        f'<details class="more" data-text="{key}"><summary>all {len(text):,} characters'
        "</summary></details>"
    )


def _badge(text: str) -> str:
    return f'<span class="badge cut">{esc(text)}</span>'


def _original(part_id: str, original: str | None) -> str:
    """The original behind a click: the page's script writes it in when the reader opens it
    (from the page's table of originals, where each is once however many versions show it)."""
    if original is None:
        return ""
    return (
        f'<details class="original" data-part="{esc(part_id)}">'
        f"<summary>original ({len(original):,} characters)</summary></details>"
    )


def event_html(row: TimelineRow, kind: str | None) -> str:
    """One event of the list the curve's marks jump to."""
    mark = f" kind-{kind}" if kind else ""
    return (
        f'<li id="ev-{row.seq}" class="event{mark}" data-seq="{row.seq}">'
        f'<span class="seq">{row.seq}</span><span class="type">{esc(row.type)}</span>'
        f'<span class="num">{row.tokens:,}</span><time>{when(row.time)}</time>'
        f'<span class="sum">{esc(row.summary)}</span></li>'
    )


def seq_link(seq: int | None) -> str:
    if seq is None:
        return "-"
    return f'<a href="#ev-{seq}" class="jump" data-seq="{seq}">{seq}</a>'


def request_html(request: UserRequest) -> str:
    flags = " (injected)" if request.injected else ""
    flags += " (reverted)" if request.reverted else ""
    return (
        f"<li>{seq_link(request.seq)}{esc(flags)}"
        f'<pre class="request">{esc(request.text)}</pre></li>'
    )


def file_html(file: FileArtifact) -> str:
    acts = ", ".join(f"{esc(action)} @ {seq_link(seq)}" for action, seq in file.actions)
    return f"<li><code>{esc(file.path)}</code>: {acts}</li>"


def command_html(command: CommandRun) -> str:
    if command.ok is None:
        outcome = '<span class="badge">no result</span>'
    elif command.ok:
        outcome = '<span class="badge ok">ok</span>'
    else:
        code = "" if command.exit_code is None else f" (exit {command.exit_code})"
        outcome = f'<span class="badge bad">failed{esc(code)}</span>'
    decisive = f"<pre>{esc(command.decisive)}</pre>" if command.decisive else ""
    return (
        f"<li>{seq_link(command.seq)} <code>{esc(command.command)}</code> {outcome}{decisive}</li>"
    )


def error_html(error: ErrorSeen) -> str:
    fixed = (
        f"fixed @ {seq_link(error.fixed_by_seq)}"
        if error.fixed_by_seq is not None
        else '<span class="badge bad">open</span>'
    )
    return (
        f"<li>{seq_link(error.seq)} {esc(error.tool)} <code>{esc(error.target)}</code> "
        f"({esc(error.kind)}) {fixed}<pre>{esc(error.decisive)}</pre></li>"
    )


def todo_html(todo: TodoItem) -> str:
    return f'<li><span class="badge">{esc(todo.status)}</span> {esc(todo.text)}</li>'
