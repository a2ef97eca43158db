"""Outputs committed whole or not at all, and the identity that ``--resume`` compares.

A run of ``analyze-bag`` on one bag writes every file into a hidden directory beside its
output directory, ``.<name>.partial-<host>-<pid>-<random>``; when every file is finished it
writes ``manifest.json`` last (the bag's identity, the settings' identity, each file's size
and row count), makes the files and the directory durable (fsync) and renames the directory
into place. So the output directory either does not exist or holds one whole run; a run
that fails or is interrupted removes its hidden directory (a killed one leaves it, under its
``.partial-`` name, until the next run into the same place removes it). A directory whose
``manifest.json`` is missing, or disagrees with a file, is not a result (:func:`read_result`).

Replacing (``--replace``) removes every file of the old run: the old directory is renamed
aside (``.<name>.old-...``) when the new one is renamed into place, then removed. Only a
directory that holds nothing but what ``analyze-bag`` writes is ever replaced.

The renames and removals hold Ctrl-C until they are done (:func:`.shell.held_interrupts`):
an interruption never leaves a hidden directory behind, only a kill does.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
import shutil
import socket
from typing import Callable, Iterator, Optional
import uuid

from .errors import BagError
from .shell import held_interrupts

MANIFEST = 'manifest.json'
#: ``format`` of ``manifest.json``
FORMAT = 'wrench_distribution analyze-bag output'
FORMAT_VERSION = 1
#: what ``--replace`` and ``--resume`` accept to remove: the files analyze-bag writes
OWN_FILES = frozenset({'samples.parquet', 'samples.csv', 'summary.json', 'plotjuggler_layout.xml',
                       'friction.parquet', 'internal_load.png', 'constraint_wrenches.png',
                       MANIFEST, 'index.parquet'})
#: markers of the hidden directories of runs in progress (or killed) and of replaced runs
PARTIAL, OLD = '.partial-', '.old-'
#: bytes hashed at each end of a storage file for the bag's identity
IDENTITY_BYTES = 1 << 20
#: what an existing output may meet: refuse it, replace it, or keep it if it matches
POLICIES = ('refuse', 'replace', 'resume')


# -- identities ------------------------------------------------------------------------------
def bag_directory(path: Path) -> Path:
    """Return the bag directory of ``path`` (a storage file given instead of its bag)."""
    path = Path(path)
    return path.parent if path.is_file() and (path.parent / 'metadata.yaml').exists() else path


def bag_identity(path: Path) -> str:
    """Return the identity of a bag.

    SHA-256 of ``metadata.yaml`` and of each storage file's name, size and first and last MiB.

    The same bag copied elsewhere keeps its identity; a bag reindexed, re-recorded, cut or
    grown does not.

    :raises BagError: when a file of the bag cannot be read.
    """
    bag = bag_directory(path)
    digest = hashlib.sha256()
    try:
        digest.update((bag / 'metadata.yaml').read_bytes())
        for file in sorted(p for p in bag.iterdir() if p.is_file() and p.name != 'metadata.yaml'):
            size = file.stat().st_size
            digest.update(f'\0{file.name}\0{size}\0'.encode())
            with open(file, 'rb') as f:
                digest.update(f.read(IDENTITY_BYTES))
                if size > IDENTITY_BYTES:
                    f.seek(max(IDENTITY_BYTES, size - IDENTITY_BYTES))
                    digest.update(f.read(IDENTITY_BYTES))
    except OSError as err:
        raise BagError(f'cannot read bag {bag}: {err}') from None
    return 'sha256:' + digest.hexdigest()


def settings_identity(settings: dict) -> str:
    """Return the identity of what shapes the output files besides the bag (parameters, options).

    :param settings: JSON-serialisable description of the run.
    """
    text = json.dumps(settings, sort_keys=True, default=str, separators=(',', ':'))
    return 'sha256:' + hashlib.sha256(text.encode()).hexdigest()


# -- reading a result ------------------------------------------------------------------------
def read_result(directory: Path) -> dict:
    """Return the manifest of a committed output directory, after checking every file.

    :raises BagError: naming why ``directory`` is not a whole result (no manifest, another
        format, a file missing or of another size).
    """
    directory = Path(directory)
    try:
        manifest = json.loads((directory / MANIFEST).read_text(encoding='utf-8'))
    except (OSError, ValueError) as err:
        raise BagError(f'{directory} is not a committed analyze-bag output: {err}') from None
    if not isinstance(manifest, dict) or manifest.get('format') != FORMAT:
        raise BagError(f'{directory / MANIFEST} is not an analyze-bag manifest')
    for name, entry in (manifest.get('files') or {}).items():
        try:
            size = (directory / name).stat().st_size
        except OSError:
            raise BagError(f'{directory}: {name} listed in {MANIFEST} is missing') from None
        if size != entry.get('bytes'):
            raise BagError(f'{directory}: {name} has {size} bytes, {MANIFEST} says '
                           f'{entry.get("bytes")}')
    return manifest


def matching_result(directory: Path, bag_id: str, settings_id: str) -> Optional[dict]:
    """Return the manifest of ``directory`` if it is a whole result of this bag and settings."""
    try:
        manifest = read_result(directory)
    except BagError:
        return None
    if manifest.get('bag_identity') == bag_id and manifest.get('settings_identity') == settings_id:
        return manifest
    return None


def manifest(bag: Path, bag_id: str, settings_id: str, directory: Path, summary: dict,
             rows: dict) -> dict:
    """Return the manifest of the files in ``directory`` (written last, :meth:`Commit.commit`).

    :param rows: file name -> row count of the tables.
    """
    files = {p.name: dict({'bytes': p.stat().st_size},
                          **({'rows': rows[p.name]} if p.name in rows else {}))
             for p in sorted(directory.iterdir()) if p.is_file() and p.name != MANIFEST}
    return {'format': FORMAT, 'format_version': FORMAT_VERSION, 'bag': str(bag),
            'bag_identity': bag_id, 'settings_identity': settings_id,
            'samples': summary.get('samples'), 'complete': summary.get('complete'),
            'files': files}


# -- committing ------------------------------------------------------------------------------
def _host() -> str:
    return socket.gethostname().replace('-', '_') or 'host'


def _hidden(target: Path, marker: str) -> Path:
    return target.parent / f'.{target.name}{marker}{_host()}-{os.getpid()}-{uuid.uuid4().hex[:8]}'


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process
        return True
    return True


def stale(path: Path) -> bool:
    """Tell whether ``path`` is the hidden directory (or temporary file) of a dead run on this host."""
    name = path.name
    marker = PARTIAL if PARTIAL in name else OLD if OLD in name else None
    if not name.startswith('.') or marker is None:
        return False
    owner = name.rsplit(marker, 1)[1].split('-')
    if len(owner) < 3 or owner[0] != _host() or not owner[1].isdigit():
        return False
    return not _alive(int(owner[1]))


def sweep(directory: Path, recursive: bool = False) -> None:
    """Remove what killed runs on this host left in ``directory``.

    Their hidden directories, and their temporary files (an index's).
    """
    directory = Path(directory)
    if not directory.is_dir():
        return
    for entry in list(directory.iterdir()):
        if entry.is_symlink():
            continue
        if stale(entry):
            with held_interrupts():
                if entry.is_dir():
                    shutil.rmtree(entry, ignore_errors=True)
                else:
                    with contextlib.suppress(FileNotFoundError):
                        entry.unlink()
        elif recursive and entry.is_dir() and not entry.name.startswith('.'):
            sweep(entry, recursive=True)


def _ours(name: str) -> bool:
    """Tell whether a hidden name is one of a run's (``.<name>.partial-...``, ``.old-``)."""
    return name.startswith('.') and (PARTIAL in name or OLD in name)


def foreign_file(directory: Path) -> Optional[Path]:
    """Return a file below ``directory`` that analyze-bag does not write, or None."""
    for folder, dirs, files in os.walk(directory):
        dirs[:] = [d for d in dirs if not _ours(d)]
        for name in files:
            if name not in OWN_FILES and not _ours(name):
                return Path(folder) / name
    return None


def check_target(target: Path, policy: str) -> bool:
    """Check what is at ``target`` against the policy; return True when it holds files.

    :raises BagError: a file where a directory is expected, a directory holding files with
        ``refuse``, or files analyze-bag did not write with ``replace`` or ``resume``.
    """
    if not target.exists() and not target.is_symlink():
        return False
    if target.is_symlink() or not target.is_dir():
        raise BagError(f'output {target} exists and is not a directory')
    if not any(target.iterdir()):
        return False
    if policy == 'refuse':
        raise BagError(f'output directory {target} already exists and is not empty; add --replace '
                       'to replace it (every file of the old run is removed) or --resume to keep '
                       'what it holds of the same bags and settings')
    other = foreign_file(target)
    if other is not None:
        raise BagError(f'output directory {target} holds {other.relative_to(target)}, which '
                       'analyze-bag did not write; it is never replaced: remove it or choose '
                       'another --out')
    return True


def remove_contents(directory: Path) -> None:
    """Remove everything in ``directory``.

    The directory is renamed aside first, so that nothing of it stays beside a new run if the
    removal is stopped; it is emptied in place where it cannot be renamed (a mount point).
    """
    aside = _hidden(directory, OLD)
    with held_interrupts():
        try:
            os.rename(directory, aside)
        except OSError:  # a mount point, or no right on the parent: remove in place
            for entry in list(directory.iterdir()):
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry)
                else:
                    entry.unlink()
            return
        directory.mkdir()
        shutil.rmtree(aside, ignore_errors=True)


def fsync_tree(directory: Path) -> None:
    """Make the files of ``directory`` and the directory itself durable."""
    for path in directory.iterdir():
        if path.is_file():
            with open(path, 'rb') as f:
                os.fsync(f.fileno())
    fsync_directory(directory)


def fsync_directory(directory: Path) -> None:
    """Make a directory's entries durable (where the platform allows)."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def swap_into_place(source: Path, target: Path) -> None:
    """Rename ``source`` to ``target``; an existing ``target`` is renamed aside, then removed."""
    old = None
    with held_interrupts():
        try:
            os.rename(source, target)  # also replaces an empty directory
        except OSError:
            if not target.is_dir():
                raise
            old = _hidden(target, OLD)
            os.rename(target, old)
            os.rename(source, target)
        fsync_directory(target.parent)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)


def write_atomic(path: Path, write: Callable[[Path], None]) -> None:
    """Write one file by ``write(temporary path)`` in its directory, fsync, rename into place.

    :raises OSError: from the write; the temporary file is removed.
    """
    path = Path(path)
    temporary = path.parent / f'.{path.name}{PARTIAL}{_host()}-{os.getpid()}-{uuid.uuid4().hex[:8]}'
    try:
        write(temporary)
        with open(temporary, 'rb') as f:
            os.fsync(f.fileno())
        os.replace(temporary, path)
    finally:
        with held_interrupts(), contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
    fsync_directory(path.parent)


class Commit:
    """One run's output directory, written hidden and committed by rename (module docstring).

    Use as a context manager: :attr:`path` is where the run writes; :meth:`commit` puts it in
    place; leaving the block without a commit removes it.

    :param target: the output directory.
    :param policy: ``refuse``, ``replace`` or ``resume`` (what an existing target may meet;
        the caller has handled a matching result of ``resume`` already).
    """

    def __init__(self, target: Path, policy: str = 'refuse') -> None:
        self.target = Path(target).absolute()
        self.policy = policy
        self.path: Optional[Path] = None
        self.committed = False

    def __enter__(self) -> 'Commit':
        try:
            check_target(self.target, self.policy)
            self.target.parent.mkdir(parents=True, exist_ok=True)
            sweep(self.target.parent)
            self.path = _hidden(self.target, PARTIAL)
            self.path.mkdir()
        except OSError as err:
            raise BagError(f'cannot create output directory {self.target}: {err}') from None
        return self

    def commit(self, manifest_of: Callable[[Path], dict]) -> None:
        """Write the manifest last, make everything durable and rename into place.

        :param manifest_of: gives the manifest of the finished directory.
        :raises BagError: when a file cannot be written or the directory not renamed.
        """
        try:
            document = manifest_of(self.path)
            (self.path / MANIFEST).write_text(json.dumps(document, indent=2, sort_keys=True) + '\n')
            fsync_tree(self.path)
            check_target(self.target, self.policy)  # something may have come meanwhile
            swap_into_place(self.path, self.target)
        except OSError as err:
            raise BagError(f'cannot write the outputs in {self.target}: {err}') from None
        self.committed = True

    def __exit__(self, *exc: object) -> None:
        if not self.committed and self.path is not None:
            with held_interrupts():
                shutil.rmtree(self.path, ignore_errors=True)


@contextlib.contextmanager
def hidden_paths_named(real: Path, shown: Path) -> Iterator[None]:
    """Say ``shown`` where an error message names ``real`` (the hidden directory of a run)."""
    try:
        yield
    except BagError as err:
        if str(real) in str(err):
            err.args = (str(err).replace(str(real), str(shown)),) + err.args[1:]
        raise
