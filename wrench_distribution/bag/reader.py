"""Reading rosbag2 bags (sqlite3 and mcap) with ``rosbags``, without ROS.

Every failure of the underlying reader (missing metadata, truncated file, corrupt
chunk, undecodable message) is turned into a one-line :class:`BagError`.
"""
from __future__ import annotations

import contextlib
import functools
import gc
import itertools
import operator
from pathlib import Path
from typing import Iterator, Optional, Sequence

import numpy as np
from rosbags.highlevel import AnyReader
from rosbags.typesys import get_typestore, Stores

from wrench_distribution.core.codec import frame_key, stamp_to_ns

from .cdr import decode_wrench_stamped, frame_ids
from .errors import BagError

WRENCH_STAMPED = 'geometry_msgs/msg/WrenchStamped'
POSE_ARRAY = 'geometry_msgs/msg/PoseArray'
TF_MESSAGE = 'tf2_msgs/msg/TFMessage'


def default_typestore():
    """Typestore used when a bag embeds no message definitions."""
    return get_typestore(Stores.ROS2_HUMBLE)


def _reason(err: BaseException) -> str:
    text = ' '.join(str(a) for a in err.args) if err.args else ''
    return f'{type(err).__name__}: {text}'.strip().rstrip(':')


@contextlib.contextmanager
def translate_errors(path: Path, what: str = 'read') -> Iterator[None]:
    """Turn reader exceptions into :class:`BagError` naming the bag."""
    try:
        yield
    except BagError:
        raise
    except FileNotFoundError as err:
        raise BagError(f'cannot {what} {path}: {err}') from None
    except Exception as err:  # rosbags, sqlite3, mcap, zstd, struct ... all mean "corrupt"
        raise BagError(
            f'cannot {what} {path}: corrupt or truncated bag ({_reason(err)})') from None


#: columns of a ``(key, receive time, payload)`` row (faster than ``zip(*rows)``);
#: the key is a topic id (sqlite3 fast path) or a rosbags connection
_KEY, _TIME, _RAW = (operator.itemgetter(j) for j in range(3))


def _conn_id(row: tuple) -> int:
    """Return the connection id of a rosbags ``(connection, t, raw)`` row."""
    return row[0].id


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause cyclic garbage collection while a chunk's rows are built.

    The collector would walk the hundreds of thousands of live tuples again and again (it
    doubled the read time on a 4M-message mcap bag); they hold no cycles and are freed by
    refcount.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class BagReader:
    """An open rosbag2 bag; use as a context manager.

    :param path: bag directory (with ``metadata.yaml``).
    :param fast_sqlite: read an uncompressed sqlite3 bag's F/T messages with one query
        (:meth:`fast_path`) instead of through rosbags' generators; same messages, same order.
    """

    def __init__(self, path: str | Path, fast_sqlite: bool = True) -> None:
        self.path = Path(path)
        self.fast_sqlite = fast_sqlite
        if not self.path.exists():
            raise BagError(f'bag not found: {self.path}')
        if self.path.is_file():
            if (self.path.parent / 'metadata.yaml').exists():
                self.path = self.path.parent  # the storage file of a bag: read the bag
            else:
                raise BagError(f'{self.path} is a file; give the rosbag2 bag directory '
                               '(the one holding metadata.yaml)')
        if self.path.is_dir() and not (self.path / 'metadata.yaml').exists():
            raise BagError(
                f'{self.path} is not a rosbag2 bag: metadata.yaml is missing '
                '(a bag from a crashed recording can be repaired with "ros2 bag reindex")')
        with translate_errors(self.path, 'open'):
            self._reader = AnyReader([self.path], default_typestore=default_typestore())
        self._open = False

    def __enter__(self) -> 'BagReader':
        with translate_errors(self.path, 'open'):
            self._reader.open()
        self._open = True
        return self

    def __exit__(self, *exc: object) -> None:
        if self._open:
            self._open = False
            with contextlib.suppress(Exception):
                self._reader.close()

    # -- metadata -------------------------------------------------------------------
    @property
    def topics(self) -> dict[str, str]:
        """Topic name -> message type."""
        return {c.topic: c.msgtype for c in self._reader.connections}

    @property
    def message_count(self) -> int:
        """Return the number of messages announced by the bag's metadata."""
        return int(self._reader.message_count)

    def count(self, topics: Sequence[str]) -> int:
        """Messages announced on ``topics``."""
        return sum(c.msgcount for c in self._reader.connections if c.topic in topics)

    def require(self, topic: str, msgtype: str, what: str) -> None:
        """Check that ``topic`` is in the bag with type ``msgtype``.

        :raises BagError: missing topic or wrong type, listing what the bag has.
        """
        topics = self.topics
        if topic not in topics:
            listing = ', '.join(f'{t} ({m})' for t, m in sorted(topics.items())) or 'none'
            raise BagError(
                f'topic {topic} ({what}) is not in bag {self.path}; the bag has: {listing}')
        if topics[topic] != msgtype:
            raise BagError(
                f'topic {topic} in bag {self.path} has type {topics[topic]}, expected {msgtype}')

    # -- messages -------------------------------------------------------------------
    def raw_messages(self, topics: Sequence[str]) -> Iterator[tuple[str, int, bytes]]:
        """Yield ``(topic, receive_time_ns, payload)`` in bag order."""
        conns = [c for c in self._reader.connections if c.topic in topics]
        if not conns:
            return
        with translate_errors(self.path):
            for conn, recv, raw in self._reader.messages(connections=conns):
                yield conn.topic, recv, raw

    def deserialize(self, raw: bytes, msgtype: str) -> object:
        """Deserialize one payload with the bag's typestore."""
        with translate_errors(self.path):
            return self._reader.deserialize(raw, msgtype)

    def wrench_chunks(
        self, topics: Sequence[str], chunk: int, frames: Optional[Sequence[str]] = None,
    ) -> Iterator[tuple]:
        """Read ``WrenchStamped`` topics in bag order, ``chunk`` messages at a time.

        :param frames: expected ``frame_id`` per topic (``''``: any), or None for no check.
        :returns: iterator of ``(stream (k,) int index into topics, receive_ns (k,),
            stamp_ns (k,), wrench (k, 6))``, plus ``frame_ok (k,) bool`` when ``frames``
            is given (frame ids compared without a leading ``/``).
        """
        index = {t: i for i, t in enumerate(topics)}

        def slow(raw: bytes) -> tuple[int, list[float]]:
            msg = self.deserialize(raw, WRENCH_STAMPED)
            st, w = msg.header.stamp, msg.wrench
            return (stamp_to_ns(st),
                    [w.force.x, w.force.y, w.force.z, w.torque.x, w.torque.y, w.torque.z])

        with translate_errors(self.path):
            sources = self._sqlite_sources(index) if self.fast_sqlite else None
            if sources is None:  # mcap, or compressed messages: through rosbags
                conns = [c for c in self._reader.connections if c.topic in index]
                by_conn = {c.id: index[c.topic] for c in conns}
                sources = [(lambda: self._reader.messages(connections=conns), by_conn,
                            _conn_id)] if conns else []
            for open_rows, to_stream, key_of in sources:
                rows = open_rows()
                while True:
                    with _gc_paused():
                        # the per-message work is done by C-level calls (islice, map)
                        batch = list(itertools.islice(rows, chunk))
                        k = len(batch)
                        stream = np.fromiter(map(to_stream.__getitem__, map(key_of, batch)),
                                             dtype=np.int64, count=k)
                        recv = np.fromiter(map(_TIME, batch), dtype=np.int64, count=k)
                        raws = list(map(_RAW, batch))
                        del batch
                    if not k:
                        break
                    decoded = self._decode(stream, recv, raws, topics, slow)
                    yield decoded if frames is None else decoded + (
                        self._frames_ok(stream, raws, frames),)

    def _frames_ok(self, stream: np.ndarray, raws: list, frames: Sequence[str]) -> np.ndarray:
        """Whether each message's frame id is the expected one of its topic."""
        want = [frame_key(f) for f in frames]
        ids = frame_ids(raws, lambda raw: self.deserialize(raw, WRENCH_STAMPED).header.frame_id)
        return np.fromiter((not want[i] or frame_key(f) == want[i]
                            for i, f in zip(stream.tolist(), ids)), bool, count=len(ids))

    def fast_path(self, topics: Sequence[str]) -> bool:
        """Tell whether :meth:`wrench_chunks` reads these topics with the sqlite3 query.

        :param topics: the F/T topics.
        :return: True for an uncompressed sqlite3 bag holding them (and ``fast_sqlite``).
        """
        index = {t: i for i, t in enumerate(topics)}
        return self.fast_sqlite and self._sqlite_sources(index) is not None

    def _sqlite_sources(self, index: dict) -> Optional[list]:
        """``(query, topic id -> stream, key of a row)`` per sqlite3 storage file, or None.

        Reads the storage files with rosbags' own query (so the order is the same),
        without its per-message Python generators. None when that does not apply
        (mcap, per-message compression, several bags): then rosbags reads.
        """
        readers = getattr(self._reader, 'readers', [])
        if len(readers) != 1 or getattr(readers[0], 'compression_mode', 'unknown'):
            return None
        storages = getattr(getattr(readers[0], 'storage', None), 'storages', [])
        if not storages or not all(hasattr(st, 'dbconn') for st in storages):
            return None
        sources = []
        for st in storages:
            ids = {c.id: index[c.topic] for c in st.connections if c.topic in index}
            if ids:
                query = ('SELECT topics.id,messages.timestamp,messages.data FROM messages '
                         'JOIN topics ON messages.topic_id=topics.id WHERE topics.id IN '
                         f'({",".join("?" for _ in ids)}) ORDER BY timestamp')
                sources.append((functools.partial(st.dbconn.execute, query, tuple(ids)), ids,
                                _KEY))
        return sources

    def _decode(self, stream, recv, raws, topics, slow):
        try:  # every topic at once: one frame_id length means one array reshape
            stamp, wrench = decode_wrench_stamped(raws, ', '.join(topics), slow)
            return stream, recv, stamp, wrench
        except BagError as err:
            first = err  # again topic by topic, for an error that names the topic
        for i, topic in enumerate(topics):
            rows = np.flatnonzero(stream == i)
            if len(rows):
                decode_wrench_stamped(list(map(raws.__getitem__, rows.tolist())), topic, slow)
        raise first
