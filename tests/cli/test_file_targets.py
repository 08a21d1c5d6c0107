"""The files a command writes (`export -o`, `verify --all --checkpoint`): a new path or a
regular file is replaced whole; a device, a pipe, a socket or a symbolic link is refused and
left exactly as it was, and a file already at the partial file's name is never written
through."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli.conftest import Cli

WRITERS: dict[str, Callable[[Path], list[str]]] = {
    "export -o": lambda target: ["export", "s1", "-o", str(target)],
    "export --format markdown -o": lambda target: [
        "export",
        "s1",
        "--format",
        "markdown",
        "-o",
        str(target),
    ],
    "verify --checkpoint": lambda target: ["verify", "--all", "--checkpoint", str(target)],
}

REFUSAL = (
    "and only a regular file or a new path is replaced (name the file itself, or write to "
    "stdout and redirect it)"
)


def refused(run: object, target: Path, kind: str) -> str:
    return f"sessionstore: error: cannot write {target}: it is {kind}, {REFUSAL}\n"


def device_like_dev_full(folder: Path) -> Path:
    """A character device node with /dev/full's numbers, made in `folder`: were the refusal
    broken, the test would replace this node, not the machine's /dev/full."""
    node = folder / "full"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 7))
    except PermissionError:
        pytest.skip("making a device node needs CAP_MKNOD")
    return node


@pytest.mark.parametrize("writer", list(WRITERS))
def test_a_device_is_refused_and_stays_a_device(cli: Cli, tmp_path: Path, writer: str) -> None:
    target = device_like_dev_full(tmp_path)
    run = cli(*WRITERS[writer](target))
    assert (run.code, run.out, run.err) == (1, "", refused(run, target, "a character device"))
    assert target.is_char_device()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cli.db", "full"]


@pytest.mark.parametrize("writer", list(WRITERS))
def test_a_symbolic_link_is_refused_and_neither_it_nor_its_file_changes(
    cli: Cli, tmp_path: Path, writer: str
) -> None:
    kept = tmp_path / "kept.txt"
    kept.write_text("my notes\n")
    link = tmp_path / "link"
    link.symlink_to(kept)
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere")
    for target, pointing_at in ((link, kept), (dangling, tmp_path / "nowhere")):
        run = cli(*WRITERS[writer](target))
        assert (run.code, run.out, run.err) == (1, "", refused(run, target, "a symbolic link"))
        assert target.is_symlink() and os.readlink(target) == str(pointing_at)
    assert kept.read_text() == "my notes\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cli.db", "dangling", "kept.txt", "link"]


@pytest.mark.parametrize("writer", list(WRITERS))
def test_a_named_pipe_is_refused_without_waiting_for_a_reader(
    cli: Cli, tmp_path: Path, writer: str
) -> None:
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    run = cli(*WRITERS[writer](pipe))
    assert (run.code, run.out, run.err) == (1, "", refused(run, pipe, "a named pipe"))
    assert stat.S_ISFIFO(pipe.lstat().st_mode)


@pytest.mark.parametrize("writer", list(WRITERS))
def test_a_file_at_the_partial_files_name_is_not_written_through(
    cli: Cli, tmp_path: Path, writer: str
) -> None:
    """The partial file used to be `.<name>.partial`, opened for writing whatever was there: a
    link planted at that name had the export written into the file it points to."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    planted = tmp_path / ".out.jsonl.partial"
    planted.symlink_to(victim)
    target = tmp_path / "out.jsonl"

    run = cli(*WRITERS[writer](target))

    assert run.code == 0, run.err
    assert victim.read_text() == "precious\n"
    assert planted.is_symlink() and not target.is_symlink()
    assert target.read_text()[0] in "{#"  # a JSONL export, or a Markdown transcript
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".out.jsonl.partial",
        "cli.db",
        "out.jsonl",
        "victim.txt",
    ]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_a_written_file_gets_the_permissions_of_a_new_file(cli: Cli, tmp_path: Path) -> None:
    mask = os.umask(0o027)
    try:
        target = tmp_path / "out.jsonl"
        assert cli("export", "s1", "-o", str(target)).code == 0
        assert stat.S_IMODE(target.stat().st_mode) == 0o640
    finally:
        os.umask(mask)
