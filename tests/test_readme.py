"""The README's Python examples run as written, in order, on a fresh folder."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import pytest

from tests.providers.fake_anthropic import FakeAnthropic, serving

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_readme_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert len(blocks) >= 2
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SESSIONSTORE_URL", raising=False)
    with serving(FakeAnthropic()) as url:  # the Anthropic loop's model, on 127.0.0.1
        monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
        for number, block in enumerate(blocks):
            script = tmp_path / f"example_{number}.py"
            script.write_text(block, encoding="utf-8")
            runpy.run_path(str(script), run_name="__main__")
    assert (tmp_path / "agent.db").exists()
