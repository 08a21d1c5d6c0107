"""Every Python block of the README and of the docs site runs as written, a page's blocks in
order in a fresh folder, against fake providers on 127.0.0.1.

A page whose blocks import a framework whose extra is not installed is skipped, naming the
extra: the README's install line installs only `dev` and `postgres`, and its test command must
pass with that.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import runpy
from pathlib import Path

import pytest

from tests.providers import fake_responses
from tests.providers.fake_anthropic import FakeAnthropic, serving
from tests.providers.test_anthropic_loop import README_LOOP
from tests.providers.test_responses_loop import README_SNIPPET, readme_turns

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]

EXTRAS = {
    "agents": "openai-agents",
    "pydantic_ai": "pydantic-ai",
    "langchain_core": "langchain",
    "langchain": "langchain",
    "langgraph": "langgraph",
    "google": "adk",
    "claude_agent_sdk": "claude-agent-sdk",
}
"""Top-level modules a page may import that only an extra installs, and that extra."""


def python_blocks(page: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S)


def missing_extras(blocks: list[str]) -> list[str]:
    """The extras the blocks need that are not installed."""
    missing: set[str] = set()
    for block in blocks:
        for node in ast.walk(ast.parse(block)):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                if top in EXTRAS and importlib.util.find_spec(top) is None:
                    missing.add(EXTRAS[top])
    return sorted(missing)


def page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


@pytest.mark.parametrize("page", [p for p in PAGES if python_blocks(p)], ids=page_id)
def test_the_python_blocks_of_a_page_run(
    page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocks = python_blocks(page)
    missing = missing_extras(blocks)
    if missing:
        pytest.skip(f"needs the extras {missing}: pip install -e '.[{','.join(missing)}]'")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SESSIONSTORE_URL", raising=False)
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a - b\n")  # what the loops read
    (tmp_path / "test_calc.py").write_text("def test_sum():\n    assert add(1, 2) == 3\n")
    # the providers the loops call, on 127.0.0.1
    with serving(FakeAnthropic()) as url, fake_responses.serving(readme_turns) as (base, _):
        monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
        monkeypatch.setenv("OPENAI_BASE_URL", base)
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        for number, block in enumerate(blocks):
            script = tmp_path / f"example_{number}.py"
            script.write_text(block, encoding="utf-8")
            runpy.run_path(str(script), run_name="__main__")


def test_the_readme_stays_a_front_door() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, len(lines)


def test_the_docs_show_the_provider_loops_tested_against_the_fake_servers() -> None:
    providers = (DOCS / "providers.md").read_text(encoding="utf-8")
    assert README_SNIPPET in providers
    assert README_LOOP.read_text(encoding="utf-8") in providers


def test_no_page_refers_to_issues_or_editions() -> None:
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        assert not re.search(r"\bissue \d+|\bthis edition\b|the issue's", text), page
