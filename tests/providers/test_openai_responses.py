"""`append_openai_response` and `to_responses()`, with the OpenAI SDK's own types as the oracle.

Responses are real SDK objects (`Response.model_validate`) built from golden files; every render
is checked strictly by the SDK's input types (`responses_api.accepted_input`) and compared with
a golden file. Regenerate the golden renders after a deliberate change with
`UPDATE_GOLDEN=1 pytest tests/providers`, then read the diff before committing it.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from openai._models import construct_type
from openai.types.responses import Response

from sessionstore import Session, SessionStore
from sessionstore.events import (
    OPENAI_RESPONSES,
    InvalidArgument,
    Message,
    Native,
    NativePart,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    Usage,
)
from tests.conftest import Backend
from tests.providers.responses_api import accepted_input, output_item_types, response

FIXTURES = Path(__file__).parent / "fixtures" / "responses"


def fixture(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    return data


def appendable(data: dict[str, Any]) -> dict[str, Any]:
    """The response without its `compaction` item: with one, the response is the provider's
    compaction, and everything before the item leaves the context (see
    `test_provider_compaction`); here every other item is looked at in place."""
    return {**data, "output": [item for item in data["output"] if item["type"] != "compaction"]}


def natives(parts: Sequence[object]) -> list[Any]:
    """The provider items the parts keep, in order (parts without one are skipped)."""
    found = [getattr(part, "native", None) for part in parts]
    return [native.value for native in found if native is not None]


def check_golden(name: str, rendered: Any) -> None:
    """`rendered` equals the golden file as JSON (PostgreSQL's JSONB hands keys back in its own
    order, which JSON does not care about)."""
    path = FIXTURES / name
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.write_text(json.dumps(rendered, indent=2, ensure_ascii=False) + "\n", "utf-8")
    assert rendered == json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[SessionStore]:
    opened = SessionStore(f"sqlite:///{tmp_path / 'store.db'}")
    yield opened
    opened.close()


def new_session(store: SessionStore) -> Session:
    s = store.create_session(model="gpt-5.2", context_window=400_000)
    s.append_system("You are a careful coding agent.")
    s.append_user("test_sum fails, please fix it")
    return s


def minimal_response(output: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    return {
        "id": "resp_min",
        "object": "response",
        "created_at": 1795000000,
        "model": "gpt-5.2",
        "status": "completed",
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "output": output,
        **fields,
    }


REASONING = {
    "type": "reasoning",
    "id": "rs_a",
    "summary": [{"type": "summary_text", "text": "Read the file first."}],
    "encrypted_content": "gAAAAABp-rs_a-opaque==",
}
CALL = {
    "type": "function_call",
    "id": "fc_a",
    "call_id": "call_a",
    "name": "read",
    "arguments": '{"path": "calc.py"}',
    "status": "completed",
}
HEAD = [
    {
        "type": "message",
        "role": "developer",
        "content": [{"type": "input_text", "text": "You are a careful coding agent."}],
    },
    {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": "test_sum fails, please fix it"}],
    },
]


# every output item the SDK defines


def test_the_fixture_holds_every_output_item_type_of_the_installed_sdk() -> None:
    """A newer SDK with a new item type fails here: add an example of it to the fixture and
    decide how it renders (the converter keeps it as a NativePart meanwhile)."""
    data = fixture("every_item.response.json")
    assert {item["type"] for item in data["output"]} == output_item_types()
    assert response(data).model_dump(mode="json", exclude_unset=True, by_alias=True) == data


def test_every_output_item_is_kept_verbatim_with_its_id_and_status(store: SessionStore) -> None:
    data = appendable(fixture("every_item.response.json"))
    s = new_session(store)
    message = s.append_openai_response(response(data))

    assert natives(message.parts) == data["output"]
    kinds = [
        (type(part).__name__, item["type"])
        for part, item in zip(message.parts, natives(message.parts), strict=True)
    ]
    assert kinds == [
        ("ReasoningPart", "reasoning"),
        ("TextPart", "message"),
        ("ToolCallPart", "function_call"),
        *[("NativePart", kind) for kind in [
            "file_search_call", "web_search_call", "computer_call", "computer_call_output",
            "code_interpreter_call", "image_generation_call", "local_shell_call",
            "local_shell_call_output", "shell_call", "shell_call_output", "apply_patch_call",
            "apply_patch_call_output", "mcp_list_tools", "mcp_approval_request",
            "mcp_approval_response", "mcp_call", "program",
            # a call answered in the same response: nothing waits for the loop
            "function_call", "function_call_output", "program_output", "tool_search_call",
            "tool_search_output", "additional_tools",
            "custom_tool_call", "custom_tool_call_output",
        ]],
        ("ReasoningPart", "reasoning"),
        ("ToolCallPart", "custom_tool_call"),
    ]  # fmt: skip
    reasoning, text, call = message.parts[0], message.parts[1], message.parts[2]
    assert isinstance(reasoning, ReasoningPart)
    assert reasoning.text == "**Reading the failing test**\n\nThe sum is off by the sign."
    assert isinstance(text, TextPart)
    assert text.text == "add() subtracts; see calc.py and the docs.I will not delete the tests."
    assert isinstance(call, ToolCallPart)
    assert (call.call_id, call.arguments) == ("call_read_1", '{"path": "calc.py"}')
    last_reasoning, custom = message.parts[-2], message.parts[-1]
    assert isinstance(last_reasoning, ReasoningPart)
    assert last_reasoning.text == "Patch, then run the tests."  # no summary: its raw content
    assert isinstance(custom, ToolCallPart)
    assert custom.arguments == data["output"][-1]["input"]

    # the envelope: everything but the output and the request's echo (instructions, tools)
    assert message.native == Native(
        api=OPENAI_RESPONSES,
        value={k: v for k, v in data.items() if k not in ("output", "instructions", "tools")},
    )
    # input_tokens counts cached and cache-written tokens too; Usage keeps them apart
    assert message.usage == Usage(
        input=5120 - 4096 - 512, output=812, cache_read=4096, cache_write=512
    )

    stored = store.session(s.id).context().messages[-1]
    assert natives(stored.parts) == data["output"]


def test_every_item_renders_back_as_the_api_takes_it(store: SessionStore) -> None:
    s = new_session(store)
    s.append_openai_response(response(appendable(fixture("every_item.response.json"))))
    s.append_tool_result("call_read_1", output="def add(a, b):\n    return a - b\n")
    s.append_tool_result("call_patch_1", output="patched")

    items = accepted_input(s.context().to_responses())
    check_golden("every_item.input.json", items)
    assert store.session(s.id).context().to_responses() == items


def test_output_only_fields_are_left_out_and_the_rest_goes_back_as_it_came(
    sqlite_store: SessionStore,
) -> None:
    """`created_by` (server-assigned, on any item and on each chunk of a shell output) and a
    custom tool output's `status` have no input form: the API would answer `Unknown
    parameter`. Everything else, ids and status included, goes back unchanged."""
    data = appendable(fixture("every_item.response.json"))
    s = new_session(sqlite_store)
    s.append_openai_response(response(data))
    s.append_tool_result("call_read_1", output="x")
    s.append_tool_result("call_patch_1", output="y")
    rendered = {item.get("id"): item for item in s.context().to_responses()}

    for item in data["output"]:
        sent = rendered[item["id"]]
        removed = {k: v for k, v in item.items() if k not in sent}
        if item["type"] == "custom_tool_call_output":
            assert removed == {"created_by": "program", "status": "completed"}
        elif "created_by" in item:
            assert removed == {"created_by": item["created_by"]}
        else:
            assert removed == {}
        if item["type"] == "shell_call_output":
            assert sent["output"] == [
                {k: v for k, v in chunk.items() if k != "created_by"} for chunk in item["output"]
            ]
        else:
            assert {k: v for k, v in item.items() if k in sent} == sent


def test_reasoning_then_its_call_then_the_output(sqlite_store: SessionStore) -> None:
    s = new_session(sqlite_store)
    s.append_openai_response(response(minimal_response([REASONING, CALL])))
    s.append_tool_result("call_a", output="def add(a, b):\n    return a - b\n")

    assert accepted_input(s.context().to_responses()) == [
        *HEAD,
        REASONING,
        CALL,
        {
            "type": "function_call_output",
            "call_id": "call_a",
            "output": "def add(a, b):\n    return a - b\n",
        },
    ]


def test_a_custom_tool_call_is_answered_by_a_custom_tool_call_output(
    sqlite_store: SessionStore,
) -> None:
    custom = {
        "type": "custom_tool_call",
        "id": "ctc_a",
        "call_id": "call_c",
        "name": "apply_diff",
        "input": "*** Begin Patch\n*** End Patch",
    }
    s = new_session(sqlite_store)
    s.append_openai_response(response(minimal_response([REASONING, custom, CALL])))
    s.append_tool_result("call_c", output="applied")
    s.append_tool_result("call_a", output="read")

    assert accepted_input(s.context().to_responses())[2:] == [
        REASONING,
        custom,
        CALL,
        {"type": "custom_tool_call_output", "call_id": "call_c", "output": "applied"},
        {"type": "function_call_output", "call_id": "call_a", "output": "read"},
    ]


def test_a_call_without_a_result_yet_is_answered_as_interrupted(
    sqlite_store: SessionStore,
) -> None:
    s = new_session(sqlite_store)
    s.append_openai_response(response(minimal_response([REASONING, CALL])))
    items = accepted_input(s.context().to_responses())
    assert items[-1] == {
        "type": "function_call_output",
        "call_id": "call_a",
        "output": "[No result: the tool call was interrupted before it returned.]",
    }


# the SDK's object and its dict


def test_the_dict_and_the_sdk_object_append_the_same(sqlite_store: SessionStore) -> None:
    data = appendable(fixture("every_item.response.json"))
    s = new_session(sqlite_store)
    from_object = s.append_openai_response(response(data))
    t = new_session(sqlite_store)
    from_dict = t.append_openai_response(copy.deepcopy(data))

    def strip_ids(message: Message) -> list[Any]:
        return [p.model_dump(exclude={"id"}) for p in message.parts]

    assert strip_ids(from_object) == strip_ids(from_dict)
    assert (from_object.native, from_object.usage) == (from_dict.native, from_dict.usage)
    assert s.context().to_responses() == t.context().to_responses()


def test_an_aliased_field_keeps_its_wire_name(sqlite_store: SessionStore) -> None:
    """The SDK names `async` `async_` in Python; the API, and so the render, must see `async`
    (and the envelope's `text.format.schema`, `schema_` in Python, the same)."""
    call = {**CALL, "async": True}
    s = new_session(sqlite_store)
    message = s.append_openai_response(
        response(
            minimal_response(
                [REASONING, call],
                text={"format": {"type": "json_schema", "name": "a", "schema": {"type": "object"}}},
            )
        )
    )
    assert natives(message.parts)[1] == call
    assert message.native is not None and isinstance(message.native.value, dict)
    assert message.native.value["text"] == {
        "format": {"type": "json_schema", "name": "a", "schema": {"type": "object"}}
    }
    s.append_tool_result("call_a", output="x")
    assert accepted_input(s.context().to_responses())[3] == call


def test_an_item_type_newer_than_this_code_is_kept_and_sent_back(
    sqlite_store: SessionStore,
) -> None:
    future = {"type": "hologram_call", "id": "hg_1", "status": "completed", "scene": {"cubes": 3}}
    s = new_session(sqlite_store)
    message = s.append_openai_response(minimal_response([REASONING, future]))
    assert message.parts[1] == NativePart(
        id=message.parts[1].id,
        native=Native(api=OPENAI_RESPONSES, value=future),
        text="[hologram_call]",
        tokens=message.parts[1].tokens,
    )
    assert s.context().to_responses()[2:] == [REASONING, future]


def test_an_unknown_item_type_from_the_sdk_client_is_kept_as_the_api_sent_it(
    sqlite_store: SessionStore,
) -> None:
    """The SDK's client builds responses without validating them, so an item type it does not
    know arrives as some other model holding the item's fields; they are kept as sent."""
    future = {"type": "hologram_call", "id": "hg_1", "scene": {"cubes": 3}}
    built = construct_type(type_=Response, value=minimal_response([REASONING, future]))
    assert isinstance(built, Response)
    s = new_session(sqlite_store)
    message = s.append_openai_response(built)
    assert natives(message.parts)[1] == future


# what cannot be appended


def malformed_responses() -> list[tuple[str, object]]:
    good = minimal_response([REASONING, CALL])

    def with_output(*items: object) -> dict[str, Any]:
        return {**good, "output": list(items)}

    return [
        ("not a response", "resp_1"),
        ("a list", [good]),
        ("no output", {k: v for k, v in good.items() if k != "output"}),
        ("output not a list", {**good, "output": {"0": CALL}}),
        ("an item that is not an object", with_output(REASONING, "function_call")),
        ("an item without a type", with_output({k: v for k, v in CALL.items() if k != "type"})),
        ("a call without call_id", with_output({k: v for k, v in CALL.items() if k != "call_id"})),
        ("an empty call_id", with_output({**CALL, "call_id": ""})),
        ("an empty name", with_output({**CALL, "name": ""})),
        ("arguments as an object", with_output({**CALL, "arguments": {"path": "a"}})),
        ("a custom call without input", with_output({**CALL, "type": "custom_tool_call"})),
        ("a reasoning item without id", with_output({**REASONING, "id": None}, CALL)),
        ("a summary that is not a list", with_output({**REASONING, "summary": "x"}, CALL)),
        ("a message without content", with_output(
            {"type": "message", "id": "m", "role": "assistant"}
        )),
        ("a message from the user", with_output(
            {"type": "message", "id": "m", "role": "user", "status": "completed", "content": []}
        )),
        ("a content entry that is not an object", with_output(
            {"type": "message", "id": "m", "role": "assistant", "content": ["hi"]}
        )),
        ("not JSON", {**good, "created_at": float("nan")}),
    ]  # fmt: skip


@pytest.mark.parametrize(
    "value", [v for _, v in malformed_responses()], ids=[n for n, _ in malformed_responses()]
)
def test_a_malformed_response_raises_invalid_argument_and_writes_nothing(
    backend: Backend, value: object
) -> None:
    store = SessionStore(backend.url)
    try:
        s = new_session(store)
        before = backend.table_rows()
        with pytest.raises(InvalidArgument):
            s.append_openai_response(value)
        assert backend.table_rows() == before
    finally:
        store.close()


# the order the API requires


def test_a_reasoning_item_with_nothing_after_it_is_left_out(sqlite_store: SessionStore) -> None:
    """An incomplete response can end in a reasoning item: sent back alone, the API refuses it
    ("Item of type 'reasoning' was provided without its required following item")."""
    s = new_session(sqlite_store)
    s.append_openai_response(
        response(
            minimal_response(
                [REASONING],
                status="incomplete",
                incomplete_details={"reason": "max_output_tokens"},
            )
        )
    )
    s.append_user("go on")
    assert accepted_input(s.context().to_responses()) == [
        *HEAD,
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go on"}]},
    ]


def test_items_the_loop_sends_are_sent_as_items_in_their_place(
    sqlite_store: SessionStore,
) -> None:
    """An MCP approval (or a computer call's screenshot) is an input item the loop writes: kept
    in a user message as a NativePart, it is sent as an item of its own, not as content."""
    request = {
        "type": "mcp_approval_request",
        "id": "mcpr_1",
        "server_label": "github",
        "name": "search_issues",
        "arguments": '{"q": "add"}',
    }
    approval = {"type": "mcp_approval_response", "approval_request_id": "mcpr_1", "approve": True}
    s = new_session(sqlite_store)
    s.append_openai_response(response(minimal_response([REASONING, request])))
    s.append_message(
        Message(
            role="user",
            parts=(
                TextPart(text="Approved."),
                NativePart(native=Native(api=OPENAI_RESPONSES, value=approval)),
                NativePart(
                    native=Native(
                        api=OPENAI_RESPONSES,
                        value={"type": "input_text", "text": "Only read, never write."},
                    )
                ),
            ),
        )
    )
    assert accepted_input(s.context().to_responses())[2:] == [
        REASONING,
        request,
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "Approved."}],
        },
        approval,
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "Only read, never write."}],
        },
    ]
