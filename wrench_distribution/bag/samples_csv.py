"""``samples.csv``: one row per synchronised sample."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from .analysis import PARTS, ChunkResult
from .csvformat import csv_rows

COMPONENTS = ('fx', 'fy', 'fz', 'tx', 'ty', 'tz')


def column_names(effectors: Sequence[str], basis_names: Sequence[str]) -> list[str]:
    """Header of ``samples.csv``.

    ``stamp`` (header stamp, s), ``<effector>.<part>.<component>`` for part in
    manipulating, constraint, internal, ``resultant.<component>``,
    ``internal_load.<basis name>``, ``internal_load_norm`` and ``residual``.
    """
    cols = ['stamp']
    for eff in effectors:
        for part in PARTS:
            cols += [f'{eff}.{part}.{c}' for c in COMPONENTS]
    cols += [f'resultant.{c}' for c in COMPONENTS]
    cols += [f'internal_load.{b}' for b in basis_names]
    cols += ['internal_load_norm', 'residual']
    return cols


def _quote(name: str) -> str:
    return f'"{name}"' if ',' in name or '"' in name else name


def chunk_matrix(chunk: ChunkResult) -> np.ndarray:
    """Values of a chunk in column order (without the stamp), shape (k, columns - 1)."""
    k, n = chunk.manipulating.shape[:2]
    parts = np.stack([chunk.manipulating, chunk.constraint, chunk.internal], axis=2)
    return np.concatenate([
        parts.reshape(k, n * 18), chunk.resultant, chunk.internal_load,
        chunk.internal_load_norm[:, None], chunk.residual[:, None]], axis=1)


def _writer_loop(path: str, queue, errors) -> None:
    """Writer process: format and append the chunks it receives until ``None``."""
    try:
        with open(path, 'ab') as f:
            while True:
                item = queue.get()
                if item is None:
                    break
                f.write(item if isinstance(item, bytes) else csv_rows(*item))
    except BaseException as err:  # reported to the parent, which raises BagError
        errors.put(f'{type(err).__name__}: {err}')
        while queue.get() is not None:  # drain so that the parent never blocks
            pass


class SamplesCsv:
    """Streaming writer of ``samples.csv``; the header is written with the first chunk.

    :param background: format the numbers in a second process (uses a second core;
        at most ``queue_chunks`` chunks wait in memory). When that process falls behind,
        the caller formats the chunk itself and hands over the text, so no core idles.
    """

    def __init__(self, path: Path, effectors: Sequence[str], background: bool = False,
                 queue_chunks: int = 2) -> None:
        self.path = Path(path)
        self.effectors = list(effectors)
        self._file = open(self.path, 'wb')
        self._header = False
        self.rows = 0
        self._background = background
        self._queue_chunks = queue_chunks
        self._proc = None

    def write_header(self, basis_names: Sequence[str]) -> None:
        """Write the header line (once)."""
        if not self._header:
            names = column_names(self.effectors, basis_names)
            self._file.write((','.join(_quote(c) for c in names) + '\n').encode())
            self._header = True
            if self._background:
                self._start()

    def _start(self) -> None:
        import multiprocessing as mp
        self._file.close()
        ctx = mp.get_context('fork' if 'fork' in mp.get_all_start_methods() else 'spawn')
        self._queue = ctx.Queue(maxsize=self._queue_chunks)
        self._errors = ctx.Queue()
        self._proc = ctx.Process(target=_writer_loop, daemon=True,
                                 args=(str(self.path), self._queue, self._errors))
        self._proc.start()

    def write(self, chunk: ChunkResult, basis_names: Sequence[str]) -> None:
        """Append the rows of one chunk."""
        self.write_header(basis_names)
        if len(chunk):
            if self._proc is not None:
                item = (chunk.stamp_ns, chunk_matrix(chunk))
                if self._queue.full():  # the writer is behind: format here, it only writes
                    item = csv_rows(*item)
                self._queue.put(item)
            else:
                self._file.write(csv_rows(chunk.stamp_ns, chunk_matrix(chunk)))
            self.rows += len(chunk)

    def close(self) -> None:
        """Flush and close the file.

        :raises OSError: when the writer process failed (e.g. disk full).
        """
        if self._proc is None:
            self._file.close()
            return
        self._queue.put(None)
        self._proc.join()
        proc, self._proc = self._proc, None
        if not self._errors.empty() or proc.exitcode != 0:
            why = self._errors.get() if not self._errors.empty() else f'exit code {proc.exitcode}'
            raise OSError(f'cannot write {self.path}: {why}')
