"""sessionstore as the OpenAI Agents SDK's session: `AgentsSession(session_id, store)`, and
`AdvancedAgentsSession(session_id, store)` for the API of the SDK's `AdvancedSQLiteSession`
(branches, turns, usage per turn) on sessionstore's forks.

```python
from agents import Runner, RunConfig
from sessionstore.integrations.openai_agents import AgentsSession, context_filter

session = AgentsSession("support-42", store)
await Runner.run(agent, "hi", session=session, run_config=RunConfig(
    call_model_input_filter=context_filter(session)))
```

`AgentsSession` keeps each SDK item verbatim as one message of a sessionstore session
(`_session`); `AdvancedAgentsSession` makes each branch a fork and reads turns from the items
(`_branches`, `_turns`). The Runner sends the items of a run to the model from memory, so the
session's truncation, pruning and compaction reach the model through `context_filter(session)`.
"""

try:
    import agents  # noqa: F401
except ImportError as exc:  # the framework is an extra
    raise ImportError(
        "sessionstore.integrations.openai_agents needs the OpenAI Agents SDK: "
        "pip install 'sessionstore[openai-agents]'"
    ) from exc

from sessionstore.integrations.openai_agents._branches import AdvancedAgentsSession
from sessionstore.integrations.openai_agents._session import AgentsSession, context_filter

__all__ = ["AdvancedAgentsSession", "AgentsSession", "context_filter"]
