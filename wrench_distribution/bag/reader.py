"""Reading rosbag2 bags (sqlite3 and mcap) without ROS.

The storage files are read directly (:mod:`.storage`): messages are selected by topic and
type, the topics the analysis does not need are never decoded, and what was read is counted
against what the bag announces (:meth:`BagReader.completeness`). Messages are deserialised
with one typestore (:func:`default_typestore`), whatever schema the bag embeds.
Every failure is a one-line :class:`BagError`.
"""
from __future__ import annotations

import contextlib
from pathlib import Path
import shutil
import tempfile
from typing import Iterator, Optional, Sequence

import numpy as np
from rosbags.typesys import get_typestore, Stores
import yaml

from wrench_distribution.core.codec import frame_key, stamp_to_ns
from wrench_distribution.core.messages import pose_to_list, wrench_to_array

from .cdr import decode_pose_arrays, decode_wrench_buffer, frame_ids
from .errors import BagError
from .publishers import OTHER, problem as publishers_problem, report as publishers_report
from .storage import Batch, decompress_batch, McapFile, SqliteFile, StorageFile

WRENCH_STAMPED = 'geometry_msgs/msg/WrenchStamped'
POSE_ARRAY = 'geometry_msgs/msg/PoseArray'
TF_MESSAGE = 'tf2_msgs/msg/TFMessage'
#: types whose topics must have one publisher (a second one is reported and not analysed,
#: :mod:`.publishers`); /tf has many by design
ONE_PUBLISHER = frozenset({WRENCH_STAMPED})
#: largest metadata.yaml read (bytes)
MAX_METADATA_BYTES = 20_000_000


def default_typestore():
    """Return the one typestore that deserialises every message the tools read."""
    return get_typestore(Stores.ROS2_HUMBLE)


@contextlib.contextmanager
def translate_errors(path: Path, what: str = 'read') -> Iterator[None]:
    """Turn unexpected reader exceptions into :class:`BagError` naming the bag."""
    try:
        yield
    except BagError:
        raise
    except FileNotFoundError as err:
        raise BagError(f'cannot {what} {path}: {err}') from None
    except Exception as err:  # noqa: BLE001 -- zstd, lz4, numpy ...: one line, no traceback
        raise BagError(f'cannot {what} {path}: corrupt or truncated bag '
                       f'({type(err).__name__}: {err})') from None


def load_metadata(path: Path) -> dict:
    """Return the ``rosbag2_bagfile_information`` mapping of ``path/metadata.yaml``.

    (Its nanosecond times exceed the number bounds of ``core.safe_load``; the size is bounded
    here and ``yaml.safe_load`` builds no objects.)

    :raises BagError: unreadable or not a rosbag2 metadata file.
    """
    file = Path(path) / 'metadata.yaml'
    try:
        if file.stat().st_size > MAX_METADATA_BYTES:
            raise BagError(f'{file} is larger than {MAX_METADATA_BYTES} bytes')
        doc = yaml.safe_load(file.read_text(encoding='utf-8'))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        raise BagError(f'cannot read {file}: {" ".join(str(err).split())[:300]}') from None
    info = doc.get('rosbag2_bagfile_information') if isinstance(doc, dict) else None
    if not isinstance(info, dict):
        raise BagError(f'{file} is not a rosbag2 metadata file '
                       '(no rosbag2_bagfile_information)')
    return info


def announced_counts(info: dict) -> dict[tuple[str, str], int]:
    """``(topic, type)`` -> message count announced by ``metadata.yaml`` (QoS text ignored)."""
    out: dict[tuple[str, str], int] = {}
    for entry in info.get('topics_with_message_count') or []:
        meta = entry.get('topic_metadata') or {}
        key = (str(meta.get('name', '')), str(meta.get('type', '')))
        out[key] = out.get(key, 0) + int(entry.get('message_count') or 0)
    return out


class BagReader:
    """An open rosbag2 bag; use as a context manager.

    :param path: bag directory (with ``metadata.yaml``), or one of its storage files.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if not self.path.exists():
            raise BagError(f'bag not found: {self.path}')
        if self.path.is_file():
            if (self.path.parent / 'metadata.yaml').exists():
                self.path = self.path.parent  # the storage file of a bag: read the bag
            else:
                raise BagError(f'{self.path} is a file; give the rosbag2 bag directory '
                               '(the one holding metadata.yaml)')
        if not (self.path / 'metadata.yaml').exists():
            raise BagError(
                f'{self.path} is not a rosbag2 bag: metadata.yaml is missing '
                '(a bag from a crashed recording can be repaired with "ros2 bag reindex")')
        self.info = load_metadata(self.path)
        self.announced = announced_counts(self.info)
        self.files: list[StorageFile] = []
        self.problems: list[str] = []
        self.notes: list[str] = []
        self.read_counts: dict[tuple[str, str], int] = {}
        #: messages of the other publishers of a topic (:mod:`.publishers`), read, not analysed
        self.other_counts: dict[tuple[str, str], int] = {}
        #: messages read that do not decode, and the receive time (ns) of the first of each key
        self.corrupt_counts: dict[tuple[str, str], int] = {}
        self.corrupt_first: dict[tuple[str, str], int] = {}
        self._chosen: dict[str, str] = {}
        self._tmp: Optional[str] = None
        self._typestore = default_typestore()

    def __enter__(self) -> 'BagReader':
        try:
            for file in self._storage_paths():
                self.files.append(self._open(file))
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        for file in self.files:
            file.close()
        self.files = []
        if self._tmp:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def _storage_paths(self) -> list[Path]:
        """Storage files in the order metadata.yaml lists them, then unlisted ones."""
        listed = [self.path / Path(p).name for p in self.info.get('relative_file_paths') or []]
        present = sorted(p for p in self.path.iterdir()
                         if p.suffix in ('.db3', '.mcap', '.zstd') and p not in listed)
        for p in listed:
            if not p.exists():
                self.problems.append(f'storage file {p.name} listed in metadata.yaml is missing')
        for p in present:
            self.notes.append(f'storage file {p.name} is not listed in metadata.yaml; read too')
        files = [p for p in listed if p.exists()] + present
        if not files:
            raise BagError(f'bag {self.path} has no storage file (.db3 or .mcap)')
        return files

    def _open(self, file: Path) -> StorageFile:
        mode = str(self.info.get('compression_mode') or '').lower()
        if file.suffix == '.zstd':
            file = self._decompressed(file)
        with translate_errors(file, 'open'):
            if file.suffix == '.mcap':
                return McapFile(file)
            return SqliteFile(file, compressed=mode == 'message')

    def _decompressed(self, file: Path) -> Path:
        """Decompress a ``.zstd`` storage file (``compression_mode: file``) into a temp dir."""
        import zstandard
        self._tmp = self._tmp or tempfile.mkdtemp(prefix='wrench_bag_')
        out = Path(self._tmp) / file.stem
        try:
            with open(file, 'rb') as src, open(out, 'wb') as dst:
                zstandard.ZstdDecompressor().copy_stream(src, dst)
        except (OSError, zstandard.ZstdError) as err:
            raise BagError(f'cannot decompress {file}: {err}') from None
        return out

    # -- metadata -------------------------------------------------------------------
    @property
    def topic_types(self) -> dict[str, list[str]]:
        """Topic name -> message types, from metadata.yaml and the storage files."""
        keys = set(self.announced)
        for file in self.files:
            keys.update(file.connections)
        out: dict[str, list[str]] = {}
        for topic, msgtype in sorted(keys):
            out.setdefault(topic, []).append(msgtype)
        return out

    @property
    def topics(self) -> dict[str, str]:
        """Topic name -> message type (the chosen or the only one, else the first)."""
        return {t: self._chosen.get(t, types[0]) for t, types in self.topic_types.items()}

    @property
    def message_count(self) -> int:
        """Return the number of messages announced by the bag's metadata."""
        return int(self.info.get('message_count') or sum(self.announced.values()))

    def announced_count(self, topic: str, msgtype: str) -> Optional[int]:
        """Messages announced for ``(topic, type)``: the larger of metadata.yaml and files."""
        key = (topic, msgtype)
        values = [self.announced[key]] if key in self.announced else []
        per_file = [f.connections.get(key) for f in self.files if key in f.connections]
        if per_file and all(v is not None for v in per_file):
            values.append(sum(per_file))
        return max(values) if values else None

    def count(self, topics: Sequence[str]) -> int:
        """Messages announced on ``topics`` (their chosen types)."""
        chosen = self.topics
        return sum(self.announced_count(t, chosen[t]) or 0 for t in topics if t in chosen)

    def require(self, topic: str, msgtype: str, what: str) -> None:
        """Check that ``topic`` carries ``msgtype``; read only those connections from now on.

        :raises BagError: missing topic, or no connection of that type (naming the types).
        """
        types = self.topic_types
        if topic not in types:
            listing = ', '.join(f'{t} ({"|".join(m)})' for t, m in types.items()) or 'none'
            raise BagError(
                f'topic {topic} ({what}) is not in bag {self.path}; the bag has: {listing}')
        if msgtype not in types[topic]:
            if len(types[topic]) > 1:
                raise BagError(
                    f'topic {topic} in bag {self.path} carries several types '
                    f'({" and ".join(types[topic])}), none of them {msgtype}; '
                    'which one is meant is ambiguous')
            raise BagError(f'topic {topic} in bag {self.path} has type {types[topic][0]}, '
                           f'expected {msgtype}')
        encodings = {e for f in self.files for e in f.encodings.get((topic, msgtype), ())}
        if encodings - {'cdr', ''}:
            raise BagError(
                f'topic {topic} in bag {self.path} is recorded as '
                f'{" and ".join(sorted(encodings))}, not CDR; analyze-bag decodes CDR '
                '(the ROS 2 default serialisation)')
        others = [m for m in types[topic] if m != msgtype]
        if others and self._chosen.get(topic) != msgtype:
            self.notes.append(
                f'topic {topic} also carries {", ".join(others)} '
                f'({sum(self.announced_count(topic, m) or 0 for m in others)} messages '
                f'announced); only its {msgtype} connections are read')
        self._chosen[topic] = msgtype

    # -- messages -------------------------------------------------------------------
    def batches(self, topics: Sequence[str], chunk: int) -> Iterator[Batch]:
        """Yield the messages of ``topics`` (their chosen types) in bag order.

        :param chunk: about this many messages per batch.
        """
        chosen = self.topics
        wanted = {(t, chosen[t]): i for i, t in enumerate(topics) if t in chosen}
        for key in wanted:
            self.read_counts.setdefault(key, 0)
            self.other_counts.setdefault(key, 0)
        keys = list(wanted)
        per_message = str(self.info.get('compression_mode') or '').lower() == 'message'
        for file in self.files:
            with translate_errors(file.path):
                for whole in file.batches(wanted, chunk, ONE_PUBLISHER):
                    if per_message and isinstance(file, McapFile):
                        whole = decompress_batch(whole, file.path)
                    whole = self._first_publishers(whole, keys)
                    for start in range(0, len(whole), chunk):
                        batch = whole.part(start, start + chunk)
                        counts = np.bincount(batch.stream, minlength=len(keys))
                        for key, n in zip(keys, counts.tolist()):
                            self.read_counts[key] += n
                        yield batch

    def _first_publishers(self, batch: Batch, keys: list) -> Batch:
        """Count and remove the messages of the topics' other publishers (:mod:`.publishers`)."""
        other = batch.stream >= OTHER
        if not other.any():
            return batch
        counts = np.bincount(batch.stream[other] - OTHER, minlength=len(keys))
        for key, n in zip(keys, counts.tolist()):
            self.other_counts[key] += n
        return batch.select(~other)

    def raw_messages(self, topics: Sequence[str]) -> Iterator[tuple[str, int, bytes]]:
        """Yield ``(topic, receive_time_ns, payload)`` in bag order."""
        topics = list(topics)
        for batch in self.batches(topics, 10_000):
            for j, (i, recv) in enumerate(zip(batch.stream.tolist(), batch.recv.tolist())):
                yield topics[i], recv, batch.payload(j)

    def deserialize(self, raw: bytes, msgtype: str, topic: str = '') -> object:
        """Deserialise one payload with the typestore.

        :raises BagError: naming the topic and the type when the payload does not decode.
        """
        try:
            return self._typestore.deserialize_cdr(bytes(raw), msgtype)
        except Exception as err:  # noqa: BLE001 -- rosbags raises several kinds
            where = f' on {topic}' if topic else ''
            raise BagError(f'corrupt message{where} in {self.path}: it does not decode as '
                           f'{msgtype} ({type(err).__name__}: {err})') from None

    def messages(self, topics: Sequence[str], msgtype: str) -> Iterator[tuple[str, int, object]]:
        """Yield ``(topic, receive_time_ns, message)`` in bag order.

        A message that does not decode is skipped and counted (:meth:`completeness`).
        """
        for topic, recv, raw in self.raw_messages(topics):
            try:
                yield topic, recv, self.deserialize(raw, msgtype, topic)
            except BagError:
                self._count_corrupt((topic, msgtype), recv, 1)

    def _count_corrupt(self, key: tuple, recv_ns: int, count: int) -> None:
        self.corrupt_counts[key] = self.corrupt_counts.get(key, 0) + count
        self.corrupt_first.setdefault(key, int(recv_ns))

    def pose_arrays(self, topic: str) -> Iterator[tuple[int, str, np.ndarray]]:
        """Yield ``(stamp_ns, frame_id, poses (m, 7))`` of every PoseArray on ``topic``.

        Decoded with numpy where the layout allows, else with the typestore.
        """
        def slow(raw: bytes) -> Optional[tuple[int, str, list]]:
            try:
                msg = self.deserialize(raw, POSE_ARRAY, topic)
            except BagError:
                return None
            return (stamp_to_ns(msg.header.stamp), msg.header.frame_id,
                    [pose_to_list(p) for p in msg.poses])
        for batch in self.batches([topic], 100_000):
            decoded = decode_pose_arrays(batch.data, batch.starts, batch.sizes, slow)
            for j, entry in enumerate(decoded):
                if entry is None:
                    self._count_corrupt((topic, POSE_ARRAY), int(batch.recv[j]), 1)
                else:
                    yield entry

    def wrench_chunks(
        self, topics: Sequence[str], chunk: int, frames: Optional[Sequence[str]] = None,
    ) -> Iterator[tuple]:
        """Read ``WrenchStamped`` topics in bag order, about ``chunk`` messages at a time.

        :param frames: expected ``frame_id`` per topic (``''``: any), or None for no check.
        :returns: iterator of ``(stream (k,) int index into topics, receive_ns (k,),
            stamp_ns (k,), wrench (k, 6))``, plus ``frame_ok (k,) bool`` when ``frames``
            is given (frame ids compared without a leading ``/``).
        """
        topics = list(topics)
        parts: list = []
        count = 0
        for batch in self.batches(topics, chunk):
            stamp, wrench, ok = decode_wrench_buffer(batch.data, batch.starts, batch.sizes,
                                                     self._slow(topics))
            if not ok.all():
                self._skip_corrupt(batch, topics, ok)
                batch, stamp, wrench = batch.select(ok), stamp[ok], wrench[ok]
            parts.append((batch.stream, batch.recv, stamp, wrench)
                         + (() if frames is None else (self._frames_ok(batch, frames),)))
            count += len(batch)
            if count >= chunk:
                yield from _in_chunks(parts, chunk)
                parts, count = [], 0
        if parts:
            yield from _in_chunks(parts, chunk)

    def _slow(self, topics: list):
        def decode(raw: bytes) -> tuple[int, list[float]]:
            msg = self.deserialize(raw, WRENCH_STAMPED, ', '.join(topics))
            return stamp_to_ns(msg.header.stamp), wrench_to_array(msg.wrench).tolist()
        return decode

    def _skip_corrupt(self, batch: Batch, topics: list, ok: np.ndarray) -> None:
        """Count the messages of a batch that do not decode, per topic."""
        chosen = self.topics
        for i in np.unique(batch.stream[~ok]).tolist():
            rows = np.flatnonzero(~ok & (batch.stream == i))
            self._count_corrupt((topics[i], chosen[topics[i]]), int(batch.recv[rows[0]]), len(rows))

    def _frames_ok(self, batch: Batch, frames: Sequence[str]) -> np.ndarray:
        """Whether each message's frame id is the expected one of its topic."""
        want = [frame_key(f) for f in frames]
        ids = frame_ids(batch.data, batch.starts, batch.sizes,
                        lambda raw: self.deserialize(raw, WRENCH_STAMPED).header.frame_id)
        return np.fromiter((not want[i] or frame_key(f) == want[i]
                            for i, f in zip(batch.stream.tolist(), ids)), bool, count=len(ids))

    # -- what was read ----------------------------------------------------------------
    def read_state(self) -> tuple:
        """Return what has been counted so far, to undo a preliminary pass (``--tare``).

        :return: an opaque state for :meth:`restore_read_state`.
        """
        counters = (self.read_counts, self.other_counts, self.corrupt_counts, self.corrupt_first)
        return (tuple(dict(c) for c in counters), list(self.problems), list(self.notes),
                [(list(f.problems), list(f.notes)) for f in self.files])

    def restore_read_state(self, state: tuple) -> None:
        """Forget what was counted since :meth:`read_state` (the next pass counts afresh).

        :param state: what :meth:`read_state` returned.
        """
        counters, problems, notes, per_file = state
        (self.read_counts, self.other_counts, self.corrupt_counts,
         self.corrupt_first) = (dict(c) for c in counters)
        self.problems, self.notes = list(problems), list(notes)
        for file, (file_problems, file_notes) in zip(self.files, per_file):
            file.restore_findings(file_problems, file_notes)

    def completeness(self) -> dict:
        """Return what was read of each topic so far, against what the bag announces.

        :return: ``{'complete', 'missing_messages', 'corrupt_messages',
            'other_publisher_messages', 'topics': {topic: {type, read, announced, missing,
            corrupt, other_publishers}}, 'publishers', 'problems', 'notes'}``. ``read`` counts
            the messages read of the topic's (first) publisher, corrupt ones included;
            ``missing`` those announced and never read. Complete when no storage part failed,
            no message is missing or corrupt and every topic has one publisher.
        """
        problems = list(self.problems) + [p for f in self.files for p in f.problems]
        topics, publishers = {}, {}
        for key, read in self.read_counts.items():
            topic, msgtype = key
            announced = self.announced_count(topic, msgtype)
            others = self.other_counts.get(key, 0)
            corrupt = self.corrupt_counts.get(key, 0)
            topics[topic] = {'type': msgtype, 'read': read, 'announced': announced,
                             'missing': max(0, (announced or 0) - read - others),
                             'corrupt': corrupt, 'other_publishers': others}
            if corrupt:
                problems.append(f'{topic}: {corrupt} messages do not decode as {msgtype} and '
                                f'were skipped (the first received at '
                                f'{self.corrupt_first[key] * 1e-9:.9f} s)')
            several = publishers_report(self.files, key, others) if msgtype in ONE_PUBLISHER \
                else None
            if several is not None:
                publishers[topic] = several
                problems.append(publishers_problem(topic, several))
        totals = {name: sum(t[field] for t in topics.values()) for name, field in (
            ('missing_messages', 'missing'), ('corrupt_messages', 'corrupt'),
            ('other_publisher_messages', 'other_publishers'))}
        return dict({'complete': not problems and not totals['missing_messages']}, **totals,
                    topics=topics, publishers=publishers, problems=problems,
                    notes=list(self.notes) + [n for f in self.files for n in f.notes])


def _in_chunks(parts: list, chunk: int) -> Iterator[tuple]:
    """Join decoded parts (tuples of arrays), in receive-time order, ``chunk`` rows at a time."""
    joined = tuple(np.concatenate(column) if len(parts) > 1 else column[0]
                   for column in zip(*parts))
    recv = joined[1]
    if len(recv) > 1 and np.any(recv[1:] < recv[:-1]):  # chunks overlapping in log time
        order = np.argsort(recv, kind='stable')
        joined = tuple(column[order] for column in joined)
    for start in range(0, len(recv), chunk):
        yield tuple(column[start:start + chunk] for column in joined)
