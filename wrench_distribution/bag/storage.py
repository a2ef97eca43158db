"""The storage files of a rosbag2 bag, read directly: sqlite3 (with its WAL) and MCAP.

Messages are selected by ``(topic, type)``, never by a connection's QoS text, so a split
bag whose files disagree on QoS, or a ``metadata.yaml`` that disagrees with its files,
reads every message. Topics not asked for are never decoded, whatever their schema.

- sqlite3: opened read-only through ``sqlite3`` (not ``immutable``), so a write-ahead log
  (``-wal``) left by a killed recorder is read; per-message zstd compression is undone.
- MCAP: Foxglove's ``mcap`` reader gives the summary, the chunk indexes and the CRC check
  of each chunk; the message indexes of the wanted channels locate their messages inside
  a decompressed chunk, gathered with numpy (no Python object per message); chunks holding
  no wanted channel are never decompressed. A file without chunk indexes (unchunked, the
  fast-write preset, or truncated) is read record by record in file order
  (:class:`.salvage.McapWalk`), up to a truncation.

A part that cannot be read (CRC failure, corrupt chunk, truncation) is recorded in
:attr:`StorageFile.problems` with where it is and how many messages it held, and reading
goes on with the next part.
"""
from __future__ import annotations

import contextlib
import gc
import io
import operator
import os
from pathlib import Path
import sqlite3
import struct
from typing import Iterator, Optional
import urllib.parse

import numpy as np

from .cdr import rows_at
from .errors import BagError

#: ``(topic, type)`` -> stream index of the caller
Wanted = dict

#: MCAP opcodes (MCAP specification) of the records read with numpy
_OP_MESSAGE = 0x05
_OP_MESSAGE_INDEX = 0x07
#: a message record: opcode 1, length 8, channel 2, sequence 4, log time 8, publish time 8
_MESSAGE_HEAD = 1 + 8 + 2 + 4 + 8 + 8


#: columns of a ``(topic id, receive time, payload)`` row (faster than ``zip(*rows)``)
_KEY, _TIME, _RAW = (operator.itemgetter(j) for j in range(3))


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause cyclic garbage collection while a chunk's rows exist.

    The collector would walk the hundreds of thousands of live tuples again and again; they
    hold no cycles and are freed by reference counting.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _chunk_errors() -> tuple:
    """Exceptions that mean "this part of an MCAP file is damaged", caught by name.

    mcap's own (:class:`McapError`, its CRC check's ``CRCValidationError``, a ``ValueError``),
    ``struct.error`` and ``EOFError`` from short reads, ``OverflowError`` from a garbage length
    beyond any index (``cannot fit 'int' into an index-sized integer``), zstandard's
    ``ZstdError``, and lz4's frame decoder, which raises ``RuntimeError``.
    """
    import zstandard
    from mcap.exceptions import McapError
    return (McapError, struct.error, ValueError, EOFError, OverflowError, OSError, io.UnsupportedOperation,
            zstandard.ZstdError, RuntimeError)


class Batch:
    """Messages in bag order: stream index, receive time and payload bytes of each.

    :param stream: (k,) int64 stream index of each message.
    :param recv: (k,) int64 receive (log) time in ns.
    :param data: flat uint8 buffer holding the payloads.
    :param starts: (k,) int64 offset of each payload in ``data``.
    :param sizes: (k,) int64 size of each payload.
    """

    __slots__ = ('stream', 'recv', 'data', 'starts', 'sizes')

    def __init__(self, stream, recv, data, starts, sizes) -> None:
        self.stream, self.recv, self.data, self.starts, self.sizes = (
            stream, recv, data, starts, sizes)

    def __len__(self) -> int:
        return len(self.stream)

    def part(self, start: int, stop: int) -> 'Batch':
        """Return messages ``start`` to ``stop`` (views; the buffer is shared)."""
        if start == 0 and stop >= len(self):
            return self
        return Batch(self.stream[start:stop], self.recv[start:stop], self.data,
                     self.starts[start:stop], self.sizes[start:stop])

    def select(self, mask: np.ndarray) -> 'Batch':
        """Return the messages where ``mask`` is true (the buffer is shared)."""
        return Batch(self.stream[mask], self.recv[mask], self.data, self.starts[mask],
                     self.sizes[mask])

    def payload(self, j: int) -> bytes:
        """Return the payload of message ``j``."""
        start = int(self.starts[j])
        return self.data[start:start + int(self.sizes[j])].tobytes()

    @classmethod
    def from_rows(cls, stream, recv, raws: list) -> 'Batch':
        """Build a batch from a list of payloads."""
        sizes = np.fromiter(map(len, raws), np.int64, count=len(raws))
        starts = np.zeros(len(raws), np.int64)
        np.cumsum(sizes[:-1], out=starts[1:])
        data = np.frombuffer(b''.join(raws), np.uint8)
        return cls(np.asarray(stream, np.int64), np.asarray(recv, np.int64), data, starts, sizes)


def sorted_by_time(batch: Batch) -> Batch:
    """Return ``batch`` sorted by receive time (stable)."""
    if len(batch) > 1 and np.any(batch.recv[1:] < batch.recv[:-1]):
        order = np.argsort(batch.recv, kind='stable')
        return Batch(batch.stream[order], batch.recv[order], batch.data, batch.starts[order],
                     batch.sizes[order])
    return batch


class StorageFile:
    """One storage file: its connections, announced counts and messages.

    :ivar connections: ``(topic, type)`` -> message count the file announces (None when
        it announces none).
    :ivar publishers: ``(topic, type)`` -> ``[(connection id, QoS profiles offered)]``, by id:
        a second connection of a topic is another publisher (:mod:`.publishers`).
    :ivar problems: what could not be read, one line each.
    :ivar notes: what was read another way than usual, one line each.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.connections: dict[tuple[str, str], Optional[int]] = {}
        self.publishers: dict[tuple[str, str], list] = {}
        self.problems: list[str] = []
        self.notes: list[str] = []
        #: ``(topic, type)`` -> serialisation formats of its connections (``cdr``...)
        self.encodings: dict[tuple[str, str], set] = {}

    def restore_findings(self, problems: list, notes: list) -> None:
        """Forget what a pass found since these lists were taken (the next pass finds afresh).

        :param problems: the problems to keep.
        :param notes: the notes to keep.
        """
        self.problems, self.notes = list(problems), list(notes)

    def add_connection(self, key: tuple, connection: int, qos: str) -> None:
        """Record one connection of ``key`` and the QoS profiles it offered (rosbag2's text)."""
        from .publishers import qos_profile_count
        entries = self.publishers.setdefault(key, [])
        if all(known != int(connection) for known, _ in entries):
            entries.append((int(connection), qos_profile_count(qos)))
            entries.sort()

    def streams(self, wanted: Wanted, separate: frozenset = frozenset()) -> dict:
        """Return connection id -> stream of the wanted keys.

        :param separate: message types of which only the first publisher of a key maps to
            its stream, the others to the stream plus :data:`.publishers.OTHER` (counted,
            never analysed); every publisher of the other types maps to the stream.
        """
        from .publishers import OTHER
        out = {}
        for key, stream in wanted.items():
            for rank, (connection, _) in enumerate(self.publishers.get(key, ())):
                out[connection] = stream if rank == 0 or key[1] not in separate else stream + OTHER
        return out

    def batches(self, wanted: Wanted, chunk: int,
                separate: frozenset = frozenset()) -> Iterator[Batch]:  # pragma: no cover
        """Yield the wanted messages in bag order, about ``chunk`` at a time.

        :param separate: message types whose other publishers are set apart (:meth:`streams`).
        """
        raise NotImplementedError

    def close(self) -> None:
        """Release the file."""


class SqliteFile(StorageFile):
    """A rosbag2 sqlite3 file (Foxy to Kilted layouts), its ``-wal`` included.

    :param compressed: payloads are zstd-compressed one by one (``compression_mode: message``).
    """

    def __init__(self, path: Path, compressed: bool = False) -> None:
        super().__init__(path)
        self.compressed = compressed
        uri = 'file:' + urllib.parse.quote(str(self.path)) + '?mode=ro'
        try:
            self._db = sqlite3.connect(uri, uri=True, check_same_thread=False)
            # a file shorter than its header announces (truncated) is refused whole unless the
            # schema may be read as it is; read-only, nothing is ever written
            self._db.execute('PRAGMA writable_schema=ON')
            columns = {row[1] for row in self._db.execute('PRAGMA table_info(topics)')}
            qos = 'offered_qos_profiles' if 'offered_qos_profiles' in columns else "''"
            rows = self._db.execute(
                f'SELECT id, name, type, serialization_format, {qos} FROM topics').fetchall()
        except sqlite3.DatabaseError as err:
            raise BagError(f'cannot open {self.path}: corrupt or truncated bag '
                           f'(sqlite3: {err})') from None
        for topic_id, name, msgtype, encoding, offered in rows:
            self.add_connection((name, msgtype), topic_id, str(offered or ''))
            self.encodings.setdefault((name, msgtype), set()).add(str(encoding))
            self.connections.setdefault((name, msgtype), None)

    def batches(self, wanted: Wanted, chunk: int,
                separate: frozenset = frozenset()) -> Iterator[Batch]:
        """Yield the wanted messages ordered by receive time, ``chunk`` at a time.

        Where a damaged page stops the query, the rest is read in storage order
        (:func:`.salvage.rows_in_storage_order`) and what cannot be read is said.
        """
        from .salvage import sqlite_truncation
        to_stream = self.streams(wanted, separate)
        if not to_stream:
            return
        if sqlite_truncation(self.path):  # the index may be cut too: by the table alone
            yield from self._storage_order(to_stream, chunk, None)
            return
        query = ('SELECT topic_id, timestamp, data FROM messages WHERE topic_id IN '
                 f'({",".join("?" for _ in to_stream)}) ORDER BY timestamp, id')
        given = None  # (receive time of the last row given, rows given at that time)
        try:
            cursor = self._db.execute(query, tuple(to_stream))
            while True:
                with _gc_paused():  # C-level calls per row; no collector walking the rows
                    rows = cursor.fetchmany(chunk)
                    batch = self._batch(rows, to_stream)
                    del rows
                if batch is None:
                    return
                given = _given_until(given, batch.recv)
                yield batch
        except sqlite3.DatabaseError as err:
            self.notes.append(f'{self.path.name}: the query in receive-time order stopped '
                              f'({err}); the rest was read in storage order')
        yield from self._storage_order(to_stream, chunk, given)

    def _batch(self, rows: list, to_stream: dict) -> Optional[Batch]:
        """Return the batch of ``(topic id, receive time, payload, ...)`` rows (None: none)."""
        k = len(rows)
        if not k:
            return None
        stream = np.fromiter(map(to_stream.__getitem__, map(_KEY, rows)), np.int64, count=k)
        recv = np.fromiter(map(_TIME, rows), np.int64, count=k)
        raws = list(map(_RAW, rows))
        if self.compressed:
            raws = _decompress_each(raws, self.path)
        return Batch.from_rows(stream, recv, raws)

    def _storage_order(self, to_stream: dict, chunk: int, given: Optional[tuple]
                       ) -> Iterator[Batch]:
        """Yield the rows not given yet in storage order, past damaged pages.

        Each block is sorted by receive time; what was lost is recorded in :attr:`problems`.
        """
        from .salvage import cut_rows, lost_text, rows_in_storage_order, sqlite_truncation
        lost: list = []
        cut = cut_rows(self.path)
        last, ties = given or (None, 0)
        for rows in rows_in_storage_order(self._db, list(to_stream), chunk, lost):
            if last is not None:  # the rows given in receive-time order (ties: by row id)
                kept = []
                for row in rows:
                    if row[1] == last and ties:
                        ties -= 1
                    elif row[1] >= last:
                        kept.append(row)
                rows = kept
            if cut:  # a row the cut took in part: an empty payload, counted as corrupt
                rows = [(r[0], r[1], b'', r[3]) if r[3] in cut else r for r in rows]
            batch = self._batch(rows, to_stream)
            if batch is not None:
                yield sorted_by_time(batch)
        truncation = sqlite_truncation(self.path)
        self.problems.extend(lost_text(self.path.name, after, resume, truncation)
                             for after, resume in lost)
        if truncation and not lost and cut:
            self.problems.append(f'{self.path.name}: {truncation}; {len(cut)} rows it cut were '
                                 'read in part (skipped as corrupt)')
        elif truncation and not lost:  # only the index was cut: every row was read
            self.notes.append(f'{self.path.name}: {truncation}; every row was read')

    def close(self) -> None:
        """Close the database."""
        with contextlib.suppress(sqlite3.Error):
            self._db.close()


def _given_until(given: Optional[tuple], recv: np.ndarray) -> tuple:
    """Return ``(last receive time, rows at that time)`` given so far, rows in receive order."""
    last = int(recv[-1])
    ties = int(np.count_nonzero(recv == last))
    return last, ties + (given[1] if given is not None and given[0] == last else 0)


def decompress_batch(batch: Batch, path: Path) -> Batch:
    """Return ``batch`` with each payload zstd-decompressed (``compression_mode: message``)."""
    raws = [batch.payload(j) for j in range(len(batch))]
    return Batch.from_rows(batch.stream, batch.recv, _decompress_each(raws, path))


def _decompress_each(raws, path: Path) -> list:
    import zstandard
    decompressor = zstandard.ZstdDecompressor()
    try:
        return [decompressor.decompress(r) for r in raws]
    except zstandard.ZstdError as err:
        raise BagError(f'cannot decompress a message in {path}: {err}') from None


class BoundedFile:
    """A file whose reads never ask for more than it holds from where they start.

    A damaged record's length field can hold any number: the ``mcap`` reader reads that many
    bytes at once, and a buffer of terabytes fails (``MemoryError``) or not, as the machine's
    memory allows. Bounded by the file's size, such a read is short, which the reader reports
    as a truncated record, the same on every machine. (Not an ``io.RawIOBase``: ``mcap`` would
    wrap one in a buffer that closes it when collected.)

    :param path: the file, opened for reading.
    """

    def __init__(self, path: Path) -> None:
        self._raw = open(path, 'rb')
        self._size = os.fstat(self._raw.fileno()).st_size

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        """Move to ``offset`` (as ``io``)."""
        return self._raw.seek(offset, whence)

    def tell(self) -> int:
        """Return the position (as ``io``)."""
        return self._raw.tell()

    def read(self, size: int = -1) -> bytes:
        """Read ``size`` bytes, or what is left of the file when that is less."""
        left = max(self._size - self._raw.tell(), 0)
        return self._raw.read(left if size is None or size < 0 else min(size, left))

    def close(self) -> None:
        """Close the file."""
        self._raw.close()


class McapFile(StorageFile):
    """A rosbag2 MCAP file, through Foxglove's ``mcap`` reader."""

    def __init__(self, path: Path) -> None:
        from mcap.exceptions import McapError
        from mcap.reader import SeekingReader
        super().__init__(path)
        try:
            self._file = BoundedFile(self.path)
        except OSError as err:
            raise BagError(f'cannot open {self.path}: {err}') from None
        try:
            self._reader = SeekingReader(self._file, validate_crcs=True)
        except (McapError, struct.error, ValueError) as err:
            self._file.close()
            raise BagError(f'cannot open {self.path}: corrupt or truncated bag '
                           f'(mcap: {type(err).__name__}: {err})') from None
        self.summary = None
        try:
            self.summary = self._reader.get_summary()
        except _chunk_errors() as err:
            self.notes.append(f'{self.path.name}: no readable summary at its end '
                              f'({type(err).__name__}); read record by record from its start')
        if self.summary is not None:
            self._index_connections()

    def _index_connections(self) -> None:
        summary = self.summary
        counts = summary.statistics.channel_message_counts if summary.statistics else {}
        self._channels: dict[int, tuple[str, str]] = {}
        for cid, channel in summary.channels.items():
            schema = summary.schemas.get(channel.schema_id)
            key = (channel.topic, schema.name if schema else '')
            self._channels[cid] = key
            self.add_connection(key, cid, channel.metadata.get('offered_qos_profiles', ''))
            self.encodings.setdefault(key, set()).add(channel.message_encoding)
            if summary.statistics is not None:
                self.connections[key] = (self.connections.get(key) or 0) + counts.get(cid, 0)
            else:
                self.connections.setdefault(key, None)

    def batches(self, wanted: Wanted, chunk: int,
                separate: frozenset = frozenset()) -> Iterator[Batch]:
        """Yield the wanted messages in log-time order (per chunk), about ``chunk`` at a time."""
        if self.summary is not None and self.summary.chunk_indexes:
            yield from self._indexed(wanted, separate)
        else:
            yield from self._linear(wanted, chunk, separate)

    def _indexed(self, wanted: Wanted, separate: frozenset) -> Iterator[Batch]:
        """Yield the wanted messages chunk by chunk (each in log-time order)."""
        by_channel = self.streams(wanted, separate)
        indexes = sorted(self.summary.chunk_indexes,
                         key=lambda c: (c.message_start_time, c.chunk_start_offset))
        for index in indexes:
            if not index.message_index_offsets:  # written without message indexes
                batch = self._chunk_records(index, by_channel)
            elif not any(cid in by_channel for cid in index.message_index_offsets):
                continue  # no wanted channel: never decompressed
            else:
                batch = self._chunk(index, by_channel)
            if batch is not None and len(batch):
                yield batch

    def _where(self, index) -> str:
        return (f'{self.path.name}: chunk at byte {index.chunk_start_offset} '
                f'(log times {index.message_start_time * 1e-9:.9f} .. '
                f'{index.message_end_time * 1e-9:.9f} s)')

    def _chunk(self, index, by_channel: dict) -> Optional[Batch]:
        """Read the wanted messages of one chunk through its message indexes."""
        from mcap.stream_reader import CRCValidationError
        entries = []
        for cid, offset in index.message_index_offsets.items():
            if cid in by_channel:
                entries.append(self._message_index(offset, cid, by_channel[cid], index))
        entries = [e for e in entries if e is not None]
        expected = sum(len(e[1]) for e in entries)
        try:
            data = self._chunk_data(index)
        except CRCValidationError as err:
            self.problems.append(f'{self._where(index)}: CRC check failed ({err}); '
                                 f'{expected} wanted messages lost')
            return None
        except _chunk_errors() as err:
            self.problems.append(f'{self._where(index)}: unreadable ({type(err).__name__}: '
                                 f'{err}); {expected} wanted messages lost')
            return None
        if not entries:
            return None
        stream = np.concatenate([np.full(len(e[1]), e[0], np.int64) for e in entries])
        recv = np.concatenate([e[1] for e in entries])
        offsets = np.concatenate([e[2] for e in entries])
        return self._gather(data, stream, recv, offsets, index)

    def _chunk_records(self, index, by_channel: dict) -> Optional[Batch]:
        """Read the wanted messages of a chunk without message indexes (mcap's record parser)."""
        from mcap.data_stream import ReadDataStream
        from mcap.records import Chunk, Message
        from mcap.stream_reader import breakup_chunk
        try:
            self._file.seek(index.chunk_start_offset + 1 + 8)
            records = breakup_chunk(Chunk.read(ReadDataStream(self._file)), validate_crc=True)
        except _chunk_errors() as err:
            self.problems.append(f'{self._where(index)}: unreadable ({type(err).__name__}: '
                                 f'{err}); its messages are lost')
            return None
        rows = [(by_channel[r.channel_id], r.log_time, r.data) for r in records
                if isinstance(r, Message) and r.channel_id in by_channel]
        return self._rows(rows) if rows else None

    def _message_index(self, offset: int, cid: int, stream: int, index) -> Optional[tuple]:
        """``(stream, log times, offsets in the chunk)`` of a MessageIndex record (MCAP spec)."""
        self._file.seek(offset)
        head = self._file.read(1 + 8 + 2 + 4)
        if len(head) < 15 or head[0] != _OP_MESSAGE_INDEX or \
                int.from_bytes(head[9:11], 'little') != cid:
            self.problems.append(f'{self._where(index)}: message index of channel {cid} '
                                 'unreadable; its messages are lost')
            return None
        size = int.from_bytes(head[11:15], 'little')
        body = self._file.read(size)
        if len(body) != size or size % 16:
            self.problems.append(f'{self._where(index)}: message index of channel {cid} '
                                 'truncated; its messages are lost')
            return None
        pairs = np.frombuffer(body, '<u8').reshape(-1, 2).astype(np.int64)
        return stream, pairs[:, 0], pairs[:, 1]

    def _chunk_data(self, index) -> np.ndarray:
        """Decompressed, CRC-checked content of a chunk (mcap's Chunk record and decoder)."""
        from mcap.data_stream import ReadDataStream
        from mcap.records import Chunk
        from mcap.stream_reader import get_chunk_data_stream
        self._file.seek(index.chunk_start_offset + 1 + 8)
        chunk = Chunk.read(ReadDataStream(self._file))
        stream, length = get_chunk_data_stream(chunk, validate_crc=True)
        return np.frombuffer(stream.read(length), np.uint8)

    def _gather(self, data: np.ndarray, stream, recv, offsets, index) -> Optional[Batch]:
        """Locate each message record in the chunk and check it against its index entry."""
        ok = (offsets >= 0) & (offsets + _MESSAGE_HEAD <= len(data))
        head = rows_at(data, np.where(ok, offsets, 0), _MESSAGE_HEAD)
        length = head[:, 1:9].copy().view('<u8')[:, 0].astype(np.int64)
        log_time = head[:, 15:23].copy().view('<u8')[:, 0].astype(np.int64)
        ok &= (head[:, 0] == _OP_MESSAGE) & (log_time == recv)
        ok &= (length >= _MESSAGE_HEAD - 9) & (offsets + 9 + length <= len(data))
        if not ok.all():
            self.problems.append(f'{self._where(index)}: {int((~ok).sum())} wanted messages do '
                                 'not match their message index; they are lost')
            stream, recv, offsets, length = stream[ok], recv[ok], offsets[ok], length[ok]
        order = np.lexsort((offsets, recv))
        return Batch(stream[order], recv[order], data, (offsets + _MESSAGE_HEAD)[order],
                     (length - (_MESSAGE_HEAD - 9))[order])

    def _linear(self, wanted: Wanted, chunk: int, separate: frozenset) -> Iterator[Batch]:
        """Read the file record by record from its start (:class:`.salvage.McapWalk`).

        No index is needed, and a truncated file gives every whole message before the cut.
        """
        from .salvage import McapWalk
        walk = McapWalk(self._file, self.path.name)
        streams: dict = {}
        rows: list = []
        for channel, log_time, data in walk.messages():
            if channel.id not in streams:
                key = (channel.topic, walk.schema_name(channel))
                if key in wanted:
                    self.add_connection(key, channel.id,
                                        channel.metadata.get('offered_qos_profiles', ''))
                streams = self.streams(wanted, separate)
                streams.setdefault(channel.id, None)
            stream = streams[channel.id]
            if stream is not None:
                rows.append((stream, log_time, data))
                if len(rows) >= chunk:
                    yield self._rows(rows)
                    rows = []
        self.problems.extend(walk.problems)
        self.notes.extend(walk.notes)
        if rows:
            yield self._rows(rows)

    @staticmethod
    def _rows(rows: list) -> Batch:
        stream, recv, raws = zip(*rows)
        return sorted_by_time(Batch.from_rows(stream, recv, list(raws)))

    def close(self) -> None:
        """Close the file."""
        self._file.close()
