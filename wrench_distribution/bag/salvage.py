"""What a damaged storage file still holds.

- sqlite3: when the usual query (receive-time order, through rosbag2's timestamp index) meets
  a damaged page, the rest is read in storage order (by row id, through the table alone):
  rows are fetched in blocks, a block that meets damage is fetched again in smaller blocks
  down to one row, so that every row before the damage is read; then the next row whose page
  can be read is found by probing row ids (doubling steps, then bisection), and reading goes
  on from there. What lies between is lost and said (which rows); a file shorter than its
  header announces is said to be truncated.
- MCAP: a file without a readable summary (truncated, or written without one) is read record
  by record from its start, with ``mcap``'s record classes; a chunk cut by the end of the file
  gives every whole message record before the cut (a compressed chunk, what its decompressor
  can decode of the bytes left); the truncation is said with its byte offsets.
"""
from __future__ import annotations

import io
from pathlib import Path
import sqlite3
import struct
from typing import Iterator, Optional

MAX_ROW_ID = (1 << 63) - 1
MIN_ROW_ID = -(1 << 63) + 1
_ROWS = ('SELECT topic_id, timestamp, data, id FROM messages WHERE id >= ? AND topic_id IN ({}) '
         'ORDER BY id LIMIT ?')
_PROBE = 'SELECT id, data FROM messages WHERE id >= ? ORDER BY id LIMIT 1'


# -- sqlite3 -----------------------------------------------------------------------------------
def rows_in_storage_order(db: sqlite3.Connection, topic_ids: list, chunk: int,
                          lost: list) -> Iterator[list]:
    """Yield ``(topic_id, timestamp, data, id)`` rows of ``topic_ids`` by row id, past damage.

    Each block is asked from the first row id not read yet (``id >= start``: a search for a
    row id before it would land on its page, which may be the damaged one).

    :param chunk: rows per block.
    :param lost: receives ``(last row id read, next readable row id or None)`` per damaged
        stretch.
    """
    query = _ROWS.format(','.join('?' for _ in topic_ids))
    start, limit, resumed_at = MIN_ROW_ID, chunk, None
    while True:
        try:
            rows = db.execute(query, (start, *topic_ids, limit)).fetchall()
        except sqlite3.DatabaseError:
            if limit > 1:
                limit = max(1, limit // 4)  # again in smaller blocks: lose nothing before it
                continue
            # stopped again where reading went on: a row a probe reads, a scan does not
            resume = next_readable(db, start if start == resumed_at else start - 1)
            lost.append((start - 1, resume))
            if resume is None:
                return
            start = resumed_at = resume
            limit = chunk
            continue
        if not rows:
            return
        start = rows[-1][3] + 1
        limit = min(chunk, limit * 4)
        yield rows


def _probe(db: sqlite3.Connection, row_id: int) -> tuple:
    """``('row', id)`` of the first row at or after ``row_id``, ``('end', None)``, or ``('bad', None)``."""
    try:
        row = db.execute(_PROBE, (row_id,)).fetchone()
    except sqlite3.DatabaseError:
        return 'bad', None
    return ('row', int(row[0])) if row else ('end', None)


def next_readable(db: sqlite3.Connection, after: int) -> Optional[int]:
    """Return the first row id after ``after`` whose row can be read, or None (none can).

    Probes at ``after + 1, + 2, + 4, ...`` until one reads, then bisects down to the first.
    """
    bad, step = after, 1
    while True:
        at = after + step
        if at > MAX_ROW_ID:
            return None
        kind, found = _probe(db, at)
        if kind != 'bad':
            break
        bad, step = at, step * 2
    good = at
    while good - bad > 1:
        middle = (good + bad) // 2
        if _probe(db, middle)[0] == 'bad':
            bad = middle
        else:
            good = middle
    kind, found = _probe(db, good)
    return found if kind == 'row' and found > after else None


def lost_text(name: str, after: int, resume: Optional[int], truncation: str) -> str:
    """One line saying which rows a damaged stretch of a sqlite3 file took."""
    start = 'the first row' if after < MIN_ROW_ID else f'row id {after + 1}'
    if resume is None:
        return (f'{name}: nothing can be read from {start} on ({truncation or "damaged pages"}); '
                'the rows before were read in storage order')
    return (f'{name}: damaged pages: rows from {start} to row id {resume - 1} cannot be read '
            '(read on in storage order)')


def sqlite_truncation(path: Path) -> str:
    """Return ``truncated: N of the M bytes its header announces``, or ``''``."""
    try:
        size = path.stat().st_size
        with open(path, 'rb') as f:
            head = f.read(100)
    except OSError:
        return ''
    if len(head) < 100 or not head.startswith(b'SQLite format 3\0'):
        return ''
    page_size = struct.unpack('>H', head[16:18])[0]
    page_size = 65536 if page_size == 1 else page_size
    pages, counter, valid_for = (struct.unpack('>I', head[a:a + 4])[0] for a in (28, 24, 92))
    announced = page_size * pages
    if counter != valid_for or not pages or size >= announced:
        return ''
    return f'truncated: {size} of the {announced} bytes its header announces'


def _varint(data: bytes, at: int) -> tuple:
    """Return ``(value, bytes used)`` of sqlite's big-endian varint at ``at``."""
    value = 0
    for used in range(9):
        if at + used >= len(data):
            raise IndexError(at)
        byte = data[at + used]
        if used == 8:
            return (value << 8) | byte, 9
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value, used + 1
    raise IndexError(at)  # pragma: no cover


def cut_rows(path: Path) -> set:
    """Return the row ids whose cell a cut inside a table leaf page took in part.

    sqlite reads the missing end of the file's last page as zeros and gives such a row without
    an error: its payload would be silently wrong. The page is read here (sqlite file format:
    page header, cell pointer array, each cell's payload size and row id as varints).
    """
    try:
        size = path.stat().st_size
        with open(path, 'rb') as f:
            head = f.read(100)
            page_size = struct.unpack('>H', head[16:18])[0] if len(head) >= 18 else 0
            page_size = 65536 if page_size == 1 else page_size
            if not page_size or not size % page_size:
                return set()
            start = size - size % page_size
            f.seek(start)
            page = f.read()
    except OSError:
        return set()
    at = 100 if start == 0 else 0
    if len(page) < at + 8 or page[at] != 0x0D:  # not a table leaf page: no row read from it
        return set()
    cut = set()
    for cell in range(struct.unpack('>H', page[at + 3:at + 5])[0]):
        pointer = at + 8 + 2 * cell
        if pointer + 2 > len(page):
            break  # the rest of the pointers read as zeros: sqlite finds no row there
        offset = struct.unpack('>H', page[pointer:pointer + 2])[0]
        try:
            payload, used = _varint(page, offset)
            row, used_row = _varint(page, offset + used)
        except IndexError:
            continue  # a cell wholly in the missing part: zeros, no row id to give
        if offset + used + used_row + payload > len(page):
            cut.add(row)
    return cut


# -- MCAP --------------------------------------------------------------------------------------
_MAGIC = b'\x89MCAP0\r\n'
_OP = {'schema': 0x03, 'channel': 0x04, 'message': 0x05, 'chunk': 0x06, 'data_end': 0x0F,
       'footer': 0x02}
_NAMES = {0x01: 'header', 0x02: 'footer', 0x03: 'schema', 0x04: 'channel', 0x05: 'message',
          0x06: 'chunk', 0x07: 'message index', 0x08: 'chunk index', 0x09: 'attachment',
          0x0A: 'attachment index', 0x0B: 'statistics', 0x0C: 'metadata',
          0x0D: 'metadata index', 0x0E: 'summary offset', 0x0F: 'data end'}


class McapWalk:
    """An MCAP file read record by record from its start (module docstring).

    Iterate :meth:`messages`; afterwards :attr:`problems` says where it stopped short (and
    :attr:`notes` where a cut lost no message).

    :param file: the open file.
    :param name: file name for the messages.
    """

    def __init__(self, file, name: str) -> None:
        self.file = file
        self.name = name
        self.size = _size(file)
        self.schemas: dict = {}
        self.channels: dict = {}
        self.problems: list[str] = []
        self.notes: list[str] = []
        self.messages_read = 0

    def messages(self) -> Iterator[tuple]:
        """Yield ``(channel record, log time, payload)`` of every whole message, in file order."""
        self.file.seek(0)
        if self.file.read(len(_MAGIC)) != _MAGIC:
            self.problems.append(f'{self.name}: not an MCAP file (no magic at its start)')
            return
        while True:
            start = self.file.tell()
            head = self.file.read(9)
            if len(head) < 9:
                self._cut(start, 'a record header' if head else None)
                return
            opcode, length = struct.unpack('<BQ', head)
            body = self.file.read(min(length, max(0, self.size - start - 9)))
            whole = len(body) == length
            if opcode in (_OP['footer'], _OP['data_end']) and whole:
                return  # the data section ends: the summary repeats what was read
            try:
                yield from self._record(opcode, body, whole, start)
            except _record_errors() as err:
                self.problems.append(f'{self.name}: unreadable {_NAMES.get(opcode, "unknown")} '
                                     f'record at byte {start} ({type(err).__name__}: {err}); '
                                     'its messages are lost')
            if not whole:
                self._cut(start, f'a {_NAMES.get(opcode, "unknown")} record '
                                 f'({len(body)} of its {length} bytes)',
                          lost=opcode in (_OP['chunk'], _OP['message']))
                return

    def _cut(self, start: int, inside: Optional[str], lost: bool = True) -> None:
        """Say where the file ends; a problem when messages may be lost with it, else a note.

        A cut inside an index or summary record loses no message; a cut inside a chunk or a
        message record, or between records before the footer, may.
        """
        where = f'inside {inside} that starts at byte {start}' if inside else \
            f'at byte {start}, before its summary and footer'
        text = (f'{self.name}: truncated: the file ends {where} (file size {self.size} '
                f'bytes); the {self.messages_read} messages before the cut were read')
        (self.problems if lost else self.notes).append(text)

    def _record(self, opcode: int, body: bytes, whole: bool, start: int) -> Iterator[tuple]:
        if opcode == _OP['chunk']:
            yield from self._inner(_chunk_records(body, whole, start, self.problems, self.name))
        elif whole:
            yield from self._inner(_one(opcode, body))

    def _inner(self, records: Iterator) -> Iterator[tuple]:
        from mcap.records import Channel, Message, Schema
        for record in records:
            if isinstance(record, Schema):
                self.schemas[record.id] = record
            elif isinstance(record, Channel):
                self.channels[record.id] = record
            elif isinstance(record, Message) and record.channel_id in self.channels:
                self.messages_read += 1
                yield self.channels[record.channel_id], record.log_time, record.data

    def schema_name(self, channel) -> str:
        """Return the schema (message type) name of a channel record ('' when unknown)."""
        schema = self.schemas.get(channel.schema_id)
        return schema.name if schema is not None else ''


def _record_errors() -> tuple:
    """Return what a damaged record raises: mcap's errors, short reads, the decompressors'."""
    import zstandard
    from mcap.exceptions import McapError
    return (McapError, struct.error, EOFError, ValueError, UnicodeDecodeError,
            zstandard.ZstdError, RuntimeError)


def _size(file) -> int:
    here = file.tell()
    file.seek(0, io.SEEK_END)
    size = file.tell()
    file.seek(here)
    return size


def _one(opcode: int, body: bytes) -> Iterator:
    """Yield the schema, channel or message record in ``body`` (others are skipped)."""
    from mcap.data_stream import ReadDataStream
    from mcap.records import Channel, Message, Schema
    stream = ReadDataStream(io.BytesIO(body))
    if opcode == _OP['schema']:
        yield Schema.read(stream)
    elif opcode == _OP['channel']:
        yield Channel.read(stream)
    elif opcode == _OP['message']:
        yield Message.read(stream, len(body))


def _chunk_records(body: bytes, whole: bool, start: int, problems: list, name: str) -> Iterator:
    """Yield the whole schema, channel and message records of a chunk, cut or not."""
    from mcap.data_stream import ReadDataStream
    stream = ReadDataStream(io.BytesIO(body))
    stream.read(8 + 8 + 8)  # start and end times, uncompressed size
    crc = stream.read4()
    compression = stream.read_prefixed_string()
    size = stream.read8()
    data = _decompressed(body[stream.count:stream.count + size], compression, whole)
    if whole and crc:
        import zlib
        if zlib.crc32(data) != crc:
            problems.append(f'{name}: chunk at byte {start}: CRC check failed; its messages '
                            'are lost')
            return
    records = io.BytesIO(data)
    while True:
        head = records.read(9)
        if len(head) < 9:
            return
        opcode, length = struct.unpack('<BQ', head)
        record = records.read(length)
        if len(record) < length:
            return  # the cut: the records before it are whole
        yield from _one(opcode, record)


def _decompressed(data: bytes, compression: str, whole: bool) -> bytes:
    """Decompress a chunk's records; of a cut chunk, what the bytes left decode to."""
    if compression == '':
        return data
    if compression == 'zstd':  # a stream decoder: of a cut frame, the blocks before the cut
        import zstandard
        try:
            return zstandard.ZstdDecompressor().decompressobj().decompress(data)
        except zstandard.ZstdError:
            if whole:
                raise
            return b''
    if compression == 'lz4':
        import lz4.frame
        decompressor = lz4.frame.LZ4FrameDecompressor()
        try:
            return decompressor.decompress(data)
        except RuntimeError:
            if whole:
                raise
            return b''
    raise ValueError(f'unknown chunk compression {compression!r}')
