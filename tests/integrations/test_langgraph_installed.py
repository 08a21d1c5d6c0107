"""CI runs the LangGraph tests: there, LangGraph, LangChain's agent and LangGraph's conformance
suite must be installed. Elsewhere tests/integrations/test_langgraph.py skips without them,
naming what to install; under `CI=true` a missing one fails here instead of skipping there."""

from __future__ import annotations

import importlib
import os

import pytest


@pytest.mark.parametrize(
    "module", ["langgraph.graph", "langchain.agents", "langgraph.checkpoint.conformance"]
)
def test_ci_installs_what_the_langgraph_tests_need(module: str) -> None:
    if os.environ.get("CI") != "true":
        pytest.skip("only CI must have every extra installed")
    importlib.import_module(module)
