"""Files the package writes and reads back: written whole or not at all, never through a planted link.

:func:`write_atomically` is the package's one way to write a file another run will read (a
calibration, a parameter fragment): a unique temporary in the target's own directory (created
exclusively, so nothing planted under its name is opened), the text written and flushed to disk
(``fsync``), then renamed over the target, and the directory synced; on any error the temporary
is removed and the target is as it was. The target itself must not be a symbolic link (a link
planted where a calibration is kept would redirect the next write, or feed the next start, from
elsewhere) nor anything but a regular file, and its directory must exist (nothing is created
outside it). :func:`read_regular_file` reads such a file back the same way: not through a link,
a regular file, of bounded size.
"""
from __future__ import annotations

import os
import stat
import tempfile


class FileRefused(OSError):
    """A path the package will not write or read; the message says why and what to do."""


def _checked_target(path: str, verb: str) -> os.stat_result:
    """Return the target's ``lstat`` (None when absent) after refusing a link or a non-file."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(info.st_mode):
        raise FileRefused(f'{path} is a symbolic link (to {os.readlink(path)!r}): not {verb} through it; '
                          'remove the link, or give the real path')
    if not stat.S_ISREG(info.st_mode):
        raise FileRefused(f'{path} is not a regular file: not {verb}')
    return info


def write_atomically(path, text: str) -> str:
    """Write ``text`` to ``path`` whole (a unique temporary in its directory, fsync, rename).

    :param path: the file (``~`` expanded); its directory must exist.
    :param text: the content (UTF-8).
    :return: the absolute path written.
    :raises FileRefused: the target is a link or not a regular file, or its directory is missing.
    :raises OSError: the write failed (the target is untouched, no temporary is left).
    """
    target = os.path.abspath(os.path.expanduser(os.fspath(path)))
    directory = os.path.dirname(target)
    if not os.path.isdir(directory):
        raise FileRefused(f'{directory} does not exist: create it first (nothing is created here)')
    previous = _checked_target(target, 'written')
    descriptor, partial = tempfile.mkstemp(prefix=f'.{os.path.basename(target)}.', suffix='.partial',
                                           dir=directory)
    try:
        with os.fdopen(descriptor, 'w', encoding='utf-8') as stream:
            stream.write(text)
            stream.flush()
            os.fchmod(stream.fileno(), stat.S_IMODE(previous.st_mode) if previous else 0o644)
            os.fsync(stream.fileno())
        _checked_target(target, 'written')  # planted while writing: refused, nothing replaced
        os.replace(partial, target)
    except BaseException:
        try:
            os.unlink(partial)
        except FileNotFoundError:
            pass
        raise
    _sync_directory(directory)
    return target


def _sync_directory(directory: str) -> None:
    """Make the rename durable (a directory cannot be opened for syncing on every system)."""
    try:
        handle = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(handle)
    except OSError:
        pass
    finally:
        os.close(handle)


def read_regular_file(path, limit: int) -> bytes:
    """Read a regular file, not through a symbolic link, of at most ``limit`` bytes.

    :param path: the file (``~`` expanded).
    :param limit: the largest size accepted (bytes).
    :return: its content.
    :raises FileNotFoundError: it does not exist.
    :raises FileRefused: a link, not a regular file, or larger than ``limit``.
    """
    target = os.path.abspath(os.path.expanduser(os.fspath(path)))
    try:
        handle = os.open(target, os.O_RDONLY | getattr(os, 'O_NOFOLLOW', 0) | getattr(os, 'O_NONBLOCK', 0))
    except OSError:
        if os.path.islink(target):
            raise FileRefused(f'{target} is a symbolic link (to {os.readlink(target)!r}): not read '
                              'through it; remove the link, or give the real path') from None
        raise
    with os.fdopen(handle, 'rb') as stream:
        info = os.fstat(stream.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise FileRefused(f'{target} is not a regular file: not read')
        data = stream.read(limit + 1)
        if info.st_size > limit or len(data) > limit:
            raise FileRefused(f'{target} is larger than {limit} bytes ({max(info.st_size, len(data))}): not read')
        return data
