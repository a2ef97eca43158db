"""Bags written the way the field writes them, for the bag-variant tests.

- MCAP: Foxglove's ``mcap`` writer with rosbag2's layout (profile ``ros2``, schemas of
  encoding ``ros2msg`` holding the message definition, channels of encoding ``cdr`` with
  ``offered_qos_profiles`` in their metadata), plus the ``metadata.yaml`` rosbag2 writes.
- sqlite3: rosbag2's tables written with ``sqlite3`` itself, in WAL mode, by a process that
  is killed before it checkpoints (a recorder killed mid-run).

The payloads are serialised with rosbags' typestore (the scenario messages of
:mod:`bag_fixtures`), never by the code under test.
"""
from __future__ import annotations

import os
from pathlib import Path
import signal
import subprocess
import sys
from typing import Optional, Sequence

from mcap.writer import CompressionType, IndexType, Writer
import yaml

import bag_fixtures as F

_INFINITE = '{sec: 9223372036, nsec: 854775807}'
#: QoS text as rosbag2 writes it (a YAML list of profiles in a string)
QOS_A = ('- history: 3\n  depth: 0\n  reliability: 1\n  durability: 2\n'
         f'  deadline: {_INFINITE}\n  lifespan: {_INFINITE}\n  liveliness: 1\n'
         f'  liveliness_lease_duration: {_INFINITE}\n'
         '  avoid_ros_namespace_conventions: false\n')
QOS_B = ('- history: 1\n  depth: 10\n  reliability: 2\n  durability: 2\n'
         '  deadline: {sec: 0, nsec: 0}\n  lifespan: {sec: 0, nsec: 0}\n  liveliness: 0\n'
         '  liveliness_lease_duration: {sec: 0, nsec: 0}\n'
         '  avoid_ros_namespace_conventions: false\n')


def msgdef(msgtype: str) -> bytes:
    """Message definition text as rosbag2 stores it (``ros2msg``)."""
    return F.TYPESTORE.generate_msgdef(msgtype)[0].encode()


def ft_messages(sc: F.Scenario, effectors: Sequence[str] = F.EFFECTORS) -> list:
    """``(topic, type, receive ns, payload)`` of the scenario's F/T streams in receive order."""
    out = []
    for j, ns in enumerate(sc.stamps_ns):
        for i, e in enumerate(effectors):
            raw = F.TYPESTORE.serialize_cdr(
                F.wrench_msg(int(ns), f'{e}_ft', sc.readings[j, i]), F.WS)
            out.append((f'/{e}/ft_sensor', F.WS, int(ns) + 300_000 * (i + 1), bytes(raw)))
    out.sort(key=lambda m: m[2])
    return out


def write_mcap(path: Path, messages: list, *, qos: str = QOS_A, chunked: bool = True,
               chunk_size: int = 4096, schemas: Optional[dict] = None,
               compression: CompressionType = CompressionType.ZSTD,
               index_types: IndexType = IndexType.ALL) -> dict:
    """Write one MCAP file as rosbag2_storage_mcap does; return its counts per (topic, type).

    :param schemas: type -> ``(encoding, definition bytes)`` overriding the ``ros2msg``
        definition of that type (e.g. ``('unknown', b'')`` for an action topic).
    """
    schemas = schemas or {}
    counts: dict = {}
    with open(path, 'wb') as f:
        writer = Writer(f, chunk_size=chunk_size, compression=compression,
                        use_chunking=chunked, index_types=index_types)
        writer.start(profile='ros2', library='rosbag2.mcap.test')
        ids: dict = {}
        for topic, msgtype, recv, raw in messages:
            if (topic, msgtype) not in ids:
                encoding, text = (schemas[msgtype] if msgtype in schemas
                                  else ('ros2msg', msgdef(msgtype)))
                schema = writer.register_schema(name=msgtype, encoding=encoding, data=text)
                ids[(topic, msgtype)] = writer.register_channel(
                    topic=topic, message_encoding='cdr', schema_id=schema,
                    metadata={'offered_qos_profiles': qos, 'topic_type_hash': ''})
            counts[(topic, msgtype)] = counts.get((topic, msgtype), 0) + 1
            writer.add_message(ids[(topic, msgtype)], log_time=recv, data=raw, publish_time=recv)
        writer.finish()
    return counts


def write_metadata(bag: Path, storage: str, files: Sequence[str], counts: dict,
                   qos: str = QOS_A, times: Sequence[int] = (0, 1)) -> None:
    """Write the ``metadata.yaml`` of a bag (rosbag2 format version 8, Humble/Jazzy)."""
    topics = [{'topic_metadata': {'name': t, 'type': m, 'serialization_format': 'cdr',
                                  'offered_qos_profiles': qos, 'type_description_hash': ''},
               'message_count': n} for (t, m), n in sorted(counts.items())]
    doc = {'rosbag2_bagfile_information': {
        'version': 8, 'storage_identifier': storage, 'duration': {'nanoseconds': times[1]},
        'starting_time': {'nanoseconds_since_epoch': times[0]},
        'message_count': sum(counts.values()), 'topics_with_message_count': topics,
        'compression_format': '', 'compression_mode': '', 'relative_file_paths': list(files),
        'files': [{'path': p, 'message_count': 0} for p in files],
        'custom_data': {}, 'ros_distro': 'jazzy'}}
    (Path(bag) / 'metadata.yaml').write_text(yaml.safe_dump(doc, sort_keys=False))


def mcap_bag(bag: Path, parts: Sequence[list], **kwargs) -> dict:
    """Write a (possibly split) MCAP bag of ``parts`` (one message list per file)."""
    bag.mkdir(parents=True)
    counts: dict = {}
    names = []
    qos = kwargs.pop('file_qos', [QOS_A] * len(parts))
    meta_qos = kwargs.pop('metadata_qos', qos[0])  # by default as rosbag2: the same text
    for k, (part, file_qos) in enumerate(zip(parts, qos)):
        names.append(f'{bag.name}_{k}.mcap')
        for key, n in write_mcap(bag / names[-1], part, qos=file_qos, **kwargs).items():
            counts[key] = counts.get(key, 0) + n
    write_metadata(bag, 'mcap', names, counts, qos=meta_qos)
    return counts


_SQLITE_WRITER = r"""
import os, signal, sqlite3, sys
path, split = sys.argv[1], int(sys.argv[2])
rows = [line.split(' ') for line in sys.stdin.read().split('\n') if line]
db = sqlite3.connect(path, isolation_level=None)
db.execute('PRAGMA journal_mode=WAL')
db.execute('PRAGMA wal_autocheckpoint=0')
db.execute('CREATE TABLE schema(schema_version INTEGER PRIMARY KEY, ros_distro TEXT NOT NULL)')
db.execute('CREATE TABLE metadata(id INTEGER PRIMARY KEY, metadata_version INTEGER NOT NULL, '
           'metadata TEXT NOT NULL)')
db.execute('CREATE TABLE topics(id INTEGER PRIMARY KEY, name TEXT NOT NULL, type TEXT NOT NULL, '
           'serialization_format TEXT NOT NULL, offered_qos_profiles TEXT NOT NULL, '
           'type_description_hash TEXT NOT NULL)')
db.execute('CREATE TABLE messages(id INTEGER PRIMARY KEY, topic_id INTEGER NOT NULL, '
           'timestamp INTEGER NOT NULL, data BLOB NOT NULL)')
db.execute('CREATE INDEX timestamp_idx ON messages (timestamp ASC)')
ids = {}
for n, (topic, msgtype, recv, hexdata) in enumerate(rows):
    if n == split:
        db.execute('PRAGMA wal_checkpoint(TRUNCATE)')
    if topic not in ids:
        ids[topic] = len(ids) + 1
        db.execute('INSERT INTO topics VALUES (?, ?, ?, ?, ?, ?)',
                   (ids[topic], topic, msgtype, 'cdr', '', ''))
    db.execute('INSERT INTO messages(topic_id, timestamp, data) VALUES (?, ?, ?)',
               (ids[topic], int(recv), bytes.fromhex(hexdata)))
sys.stdout.write('written\n')
sys.stdout.flush()
os.kill(os.getpid(), signal.SIGKILL)  # the recorder dies: no checkpoint, no close
"""


def killed_sqlite_bag(bag: Path, messages: list, checkpointed: int) -> dict:
    """Write a sqlite3 bag in WAL mode whose recorder is killed after writing ``messages``.

    The first ``checkpointed`` messages are in the ``.db3``; the rest only in its ``-wal``.
    """
    bag.mkdir(parents=True)
    name = f'{bag.name}_0.db3'
    text = '\n'.join(f'{t} {m} {r} {raw.hex()}' for t, m, r, raw in messages)
    proc = subprocess.run([sys.executable, '-c', _SQLITE_WRITER, str(bag / name),
                           str(checkpointed)], input=text, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == -signal.SIGKILL and proc.stdout == 'written\n', proc.stderr
    assert os.path.getsize(bag / f'{name}-wal') > 0
    counts: dict = {}
    for t, m, _, _ in messages:
        counts[(t, m)] = counts.get((t, m), 0) + 1
    write_metadata(bag, 'sqlite3', [name], counts)
    return counts
