"""``samples.parquet`` (and ``samples.csv`` on request): one row per synchronised sample.

Written with pyarrow, one Parquet row group per analysis chunk, so memory stays
bounded by the chunk size. The columns come from :func:`.columns.columns`: the
stamp ``stamp_ns`` (header stamp, int64 ns) and float64 value columns, each with its
unit in the field metadata. The file metadata (key ``wrench_distribution``, JSON)
holds the package version, the basis names and units, the effectors, the output
frame, the bag and the validated analyzer parameters. ``samples.csv`` has the same
columns except the stamp, written as ``stamp`` in seconds (exact decimal, 9 digits),
which PlotJuggler's CSV loader takes as its time axis.

Following recorded contact weights (``weights``), the ``internal_load`` columns are the union
of the bases met (:mod:`.columns`); when a chunk brings a new element, the rows written so far
are set aside and, at :meth:`SamplesWriter.close`, copied row group by row group into the
final file with NaN in the new columns (memory stays bounded by a row group).
"""
from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
import json
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from wrench_distribution.engine.results import ChunkResult
from .columns import columns, STAMP

#: key of the JSON document in the Parquet file metadata
METADATA_KEY = b'wrench_distribution'
#: name and type of the CSV stamp column (seconds, exact to the ns)
CSV_STAMP = 'stamp'
_CSV_STAMP_TYPE = pa.decimal128(19, 9)


def package_version() -> str:
    """Installed version of ``wrench_distribution`` (``unknown`` when not installed)."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version('wrench_distribution')
    except PackageNotFoundError:
        return 'unknown'


def schema(effectors: Sequence[str], basis_names: Sequence[str], basis_units: Sequence[str],
           info: Optional[dict] = None, weights: bool = False) -> pa.Schema:
    """Arrow schema of ``samples.parquet``, with units and ``info`` as metadata.

    :param weights: the followed contact weights are columns (``followed_weights`` in the metadata).
    """
    fields = [pa.field(STAMP, pa.int64(), nullable=False,
                       metadata={'unit': 'ns', 'description': 'header stamp'})]
    fields += [pa.field(name, pa.float64(), nullable=False, metadata={'unit': unit})
               for name, unit, _ in columns(effectors, basis_names, basis_units, weights)]
    doc = dict(info or {}, basis_names=list(basis_names), basis_units=list(basis_units),
               effectors=list(effectors))
    if weights:
        doc['followed_weights'] = True
    return pa.schema(fields, metadata={METADATA_KEY: json.dumps(doc).encode()})


def chunk_table(chunk: ChunkResult, sch: pa.Schema, buffer: Optional[np.ndarray] = None
                ) -> pa.Table:
    """Return the rows of one chunk as a table of schema ``sch``.

    :param buffer: (columns, >= k) float64 scratch to hold the columns; the table
        refers to it, so it may be reused once the table has been written.
    """
    k = len(chunk)
    quantities = []
    for _, _, q in columns_of(sch):
        if not quantities or quantities[-1] is not q:
            quantities.append(q)
    block = buffer[:, :k] if buffer is not None else np.empty((len(sch) - 1, k))
    row = 0
    for q in quantities:
        x = chunk.values[q.name].reshape(k, -1)
        _transpose_into(block[row:row + x.shape[1]], x)
        row += x.shape[1]
    arrays = [pa.array(np.asarray(chunk.stamp_ns, np.int64), type=pa.int64())]
    arrays += [pa.array(r, type=pa.float64()) for r in block]
    return pa.Table.from_arrays(arrays, schema=sch)


def _transpose_into(out: np.ndarray, x: np.ndarray, rows: int = 2048) -> None:
    """Set ``out[:] = x.T`` by blocks of ``rows`` samples, which stay in cache.

    A plain transposed copy of a large array is several times slower.
    """
    for a in range(0, len(x), rows):
        out[:, a:a + rows] = x[a:a + rows].T


def columns_of(sch: pa.Schema) -> list:
    """``(name, unit, quantity)`` of the value columns of a samples schema."""
    doc = json.loads(sch.metadata[METADATA_KEY])
    return columns(doc['effectors'], doc['basis_names'], doc['basis_units'], doc.get('followed_weights', False))


def csv_table(table: pa.Table) -> pa.Table:
    """``table`` with ``stamp_ns`` replaced by ``stamp`` in seconds (exact decimal)."""
    ns = table.column(STAMP).to_numpy()
    # a decimal128 is a 16-byte two's complement integer: ns with scale 9 is seconds
    words = np.empty((len(ns), 2), np.int64)
    words[:, 0] = ns
    words[:, 1] = ns >> 63
    stamp = pa.Array.from_buffers(_CSV_STAMP_TYPE, len(ns), [None, pa.py_buffer(words)])
    return table.set_column(0, CSV_STAMP, stamp)


class SamplesWriter:
    """Streaming writer of ``samples.parquet`` and, with ``csv``, ``samples.csv``.

    The files are opened with the first chunk (the basis names are known then).

    :param out_dir: output directory.
    :param effectors: effector names.
    :param info: JSON-serialisable metadata stored in the Parquet file.
    :param csv: also write ``samples.csv``.
    :param compression: Parquet compression codec.
    :param weights: the chunks carry followed contact weights (their basis may grow).
    """

    def __init__(self, out_dir: Path, effectors: Sequence[str], info: dict,
                 csv: bool = False, compression: str = 'snappy', weights: bool = False) -> None:
        self.out_dir = Path(out_dir)
        self.weights = weights
        self._parts: list[Path] = []  # the rows written before the basis grew, in order
        self._basis: list[str] = []
        self.effectors = list(effectors)
        self.info = info
        self.csv = csv
        self.compression = compression
        self.rows = 0
        self._chunks = 0
        self._schema: Optional[pa.Schema] = None
        self._parquet: Any = None
        self._csv: Any = None
        # two column buffers, reused (fresh pages cost page faults): one is being
        # written by the writer thread while the next chunk fills the other
        self._buffers: list[Optional[np.ndarray]] = [None, None]
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix='samples-writer')
        self._pending: Optional[Future] = None

    @property
    def names(self) -> list[str]:
        """File names written."""
        return ['samples.parquet'] + (['samples.csv'] if self.csv else [])

    def _open(self, basis_names: Sequence[str], basis_units: Sequence[str]) -> None:
        self._schema = schema(self.effectors, basis_names, basis_units, self.info, self.weights)
        self._basis = list(basis_names)
        # no dictionary encoding: measured values are (almost) all distinct, and
        # trying a dictionary first costs more than the rest of the write
        self._parquet = pq.ParquetWriter(self.out_dir / 'samples.parquet', self._schema,
                                         compression=self.compression, use_dictionary=False)
        if self.csv and not self._parts:  # else written whole by _merge
            head = csv_table(self._schema.empty_table()).schema
            self._csv = pa_csv.CSVWriter(str(self.out_dir / 'samples.csv'), head)

    def write(self, chunk: ChunkResult, basis_names: Sequence[str],
              basis_units: Sequence[str]) -> None:
        """Append one chunk (one row group).

        :raises OSError: when a file cannot be written.
        """
        if not len(chunk):
            return
        if self._schema is None:
            self._open(basis_names, basis_units)
        elif list(basis_names) != self._basis:
            self._grow(basis_names, basis_units)
        slot = self._chunks % 2
        buf = self._buffers[slot]
        if buf is None or buf.shape[1] < len(chunk):
            buf = self._buffers[slot] = np.empty((len(self._schema) - 1, len(chunk)))
        table = chunk_table(chunk, self._schema, buf)
        self._wait()  # at most one chunk in flight: memory stays bounded
        self._pending = self._pool.submit(self._write_table, table)
        self._chunks += 1
        self.rows += len(chunk)

    def _grow(self, basis_names: Sequence[str], basis_units: Sequence[str]) -> None:
        """Set the rows written so far aside and go on with more internal-load columns (the union grew)."""
        self._wait()
        for attr in ('_parquet', '_csv'):
            writer = getattr(self, attr)
            setattr(self, attr, None)
            if writer is not None:
                close_writer(writer)
        (self.out_dir / 'samples.csv').unlink(missing_ok=True)
        part = self.out_dir / f'.samples.part{len(self._parts)}.parquet'
        (self.out_dir / 'samples.parquet').replace(part)
        self._parts.append(part)
        self._buffers = [None, None]
        self._open(basis_names, basis_units)

    def _merge(self) -> None:
        """Copy the rows set aside, then the last ones, into one file of the final columns."""
        final = self.out_dir / '.samples.merged.parquet'
        last = self.out_dir / '.samples.last.parquet'
        (self.out_dir / 'samples.parquet').replace(last)
        writer = pq.ParquetWriter(final, self._schema, compression=self.compression, use_dictionary=False)
        text = pa_csv.CSVWriter(str(self.out_dir / 'samples.csv'), csv_table(self._schema.empty_table()).schema) \
            if self.csv else None
        try:
            for path in self._parts + [last]:
                source = pq.ParquetFile(path)
                for group in range(source.num_row_groups):
                    table = conform(source.read_row_group(group), self._schema)
                    writer.write_table(table, row_group_size=table.num_rows)
                    if text is not None:
                        text.write_table(csv_table(table))
        finally:
            for open_writer in (writer, text):
                if open_writer is not None:
                    close_writer(open_writer)
        final.replace(self.out_dir / 'samples.parquet')
        for path in self._parts + [last]:
            path.unlink()
        self._parts = []

    def _write_table(self, table: pa.Table) -> None:
        """Write one table; run in the writer thread (pyarrow releases the GIL while it encodes)."""
        self._parquet.write_table(table, row_group_size=table.num_rows)
        if self._csv is not None:
            self._csv.write_table(csv_table(table))

    def _wait(self) -> None:
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.result()  # re-raises the writer's OSError

    def close(self) -> None:
        """Finish the files (the Parquet footer holds the metadata)."""
        try:
            self._wait()
        finally:
            self._pool.shutdown(wait=True)
            failed = None
            for attr in ('_parquet', '_csv'):  # both, even when the first fails
                writer = getattr(self, attr)
                setattr(self, attr, None)
                try:
                    if writer is not None:
                        close_writer(writer)
                except OSError as err:
                    failed = failed or err
            if failed is not None:
                raise failed
        if self._parts:
            self._merge()


def conform(table: pa.Table, sch: pa.Schema) -> pa.Table:
    """Return ``table`` with the columns of ``sch``: a column it lacks is NaN (an element not in the solve)."""
    arrays = [table.column(f.name) if f.name in table.column_names
              else pa.array(np.full(table.num_rows, np.nan), type=pa.float64()) for f in sch]
    return pa.Table.from_arrays(arrays, schema=sch)


def close_writer(writer: Any) -> None:
    """Close a pyarrow writer; one whose close failed (a full disk) is not closed again.

    A ``ParquetWriter`` whose close raised stays open, and its finaliser closes it again and
    prints "Exception ignored ... OSError" on standard error.

    :raises OSError: from the close.
    """
    try:
        writer.close()
    except OSError:
        if getattr(writer, 'is_open', False):
            writer.is_open = False
        raise


def read_samples(path: Path) -> tuple[pa.Table, dict]:
    """Read ``samples.parquet``: the table and its ``wrench_distribution`` metadata."""
    table = pq.read_table(path)
    return table, json.loads(table.schema.metadata[METADATA_KEY])
