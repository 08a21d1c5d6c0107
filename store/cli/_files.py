"""The files commands write and read: a new file or a regular one, replaced whole and never
half-written (`export -o`, `verify --checkpoint`), and UTF-8 text read with a one-line error."""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path

import click


def check_target(output: Path) -> None:
    """A file a command writes (`export -o`, `verify --checkpoint`) is a new path or a regular
    file, which it replaces whole. Anything else is refused before anything is read or
    written: the new file is renamed over the target, which would put a text file in place of
    a device (`/dev/full`), a pipe or a socket, and in place of a symbolic link rather than
    the file it points to."""
    if not output.parent.is_dir():
        raise click.ClickException(f"cannot write {output}: no folder {output.parent}")
    try:
        mode = output.lstat().st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise click.ClickException(f"cannot write {output}: {exc.strerror or exc}") from None
    if stat.S_ISREG(mode):
        return
    kind = _FILE_KINDS.get(stat.S_IFMT(mode), "not a regular file")
    raise click.ClickException(
        f"cannot write {output}: it is {kind}, and only a regular file or a new path is "
        "replaced (name the file itself, or write to stdout and redirect it)"
    )


_FILE_KINDS = {
    stat.S_IFLNK: "a symbolic link",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFIFO: "a named pipe",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a folder",
}


def write_lines(output: Path, lines: Iterable[str]) -> int:
    """Write `lines` to a new file beside `output` and rename it over: a failed write leaves
    neither a half-written target nor the partial file behind. The partial file is created
    anew (never through a file or link already at its name) with the permissions a new file
    gets, and the target is checked again just before the rename. Returns how many lines it
    wrote."""
    try:
        descriptor, name = tempfile.mkstemp(
            prefix=f".{output.name}.", suffix=".partial", dir=output.parent
        )
    except OSError as exc:
        raise click.ClickException(f"cannot write {output}: {exc.strerror or exc}") from None
    partial = Path(name)
    count = 0
    try:
        with open(descriptor, "w", encoding="utf-8", newline="\n") as file:
            os.chmod(descriptor, 0o666 & ~_umask())
            for line in lines:
                file.write(line + "\n")
                count += 1
        check_target(output)  # nothing took its place while the lines were written
        partial.replace(output)
    except BaseException as exc:
        partial.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise click.ClickException(f"cannot write {output}: {exc.strerror or exc}") from None
        raise
    return count


def _umask() -> int:
    """The process's umask (reading it means setting it: set it back at once)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def read_text(file: Path) -> str:
    try:
        return file.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise click.ClickException(f"{file} is not UTF-8 text: {exc.reason}") from None
    except FileNotFoundError:
        raise click.ClickException(f"no file {file}") from None
