"""The README's Python examples run as written, in order, on a fresh folder."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import pytest

from tests.providers import fake_responses
from tests.providers.fake_anthropic import FakeAnthropic, serving
from tests.providers.test_responses_loop import README_SNIPPET, readme_turns

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_readme_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert len(blocks) >= 2
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
    assert (tmp_path / "agent.db").exists()


def test_the_readme_shows_the_responses_loop_tested_against_the_fake_server() -> None:
    assert README_SNIPPET in README.read_text(encoding="utf-8")
