"""Several publishers on one F/T topic: found, reported, and separated by one rule.

A bag records a second publisher of a topic in one of two ways:

- as a second connection of the topic in a storage file (a second row of the sqlite3
  ``topics`` table, a second MCAP channel): what rosbags writes for another QoS, and what
  rosbag2 writes for a publisher whose QoS or type hash differs. The messages of each
  connection are known. Rule: the first connection (the lowest id in its file, the first one
  recorded) is analysed; the messages of the others are not, they are counted per topic
  (``dropped.other_publisher_messages`` in summary.json, ``publishers`` names the
  connections);
- as one connection whose ``offered_qos_profiles`` lists several profiles: rosbag2's record
  of a topic that had several publishers when the recorder subscribed. Their messages
  cannot be told apart; they are analysed together, and said.

Either way the bag does not hold one stream per sensor: it is incomplete (refused unless
``--allow-incomplete``), and ``complete`` is false.
"""
from __future__ import annotations

from typing import Optional

import yaml

#: added to a stream index for the messages of a topic's other publishers
OTHER = 1 << 20
#: longest QoS text parsed (bytes); a longer one is not counted
MAX_QOS_TEXT = 65536


def qos_profile_count(text: str) -> int:
    """Return how many QoS profiles a connection's ``offered_qos_profiles`` text lists (0: unknown)."""
    if not text.strip() or len(text) > MAX_QOS_TEXT:
        return 0
    try:
        profiles = yaml.safe_load(text)
    except yaml.YAMLError:
        return 0
    return len(profiles) if isinstance(profiles, list) else 0


def report(files: list, key: tuple, others: int) -> Optional[dict]:
    """Return the publishers of ``key`` when there are several, else None.

    :param files: the bag's storage files (their :attr:`publishers`).
    :param others: messages of the other connections that were read.
    :return: ``{'connections', 'analysed', 'qos_profiles', 'other_publisher_messages'}``.
    """
    per_file = [(f.path.name, f.publishers.get(key, [])) for f in files]
    most = max((len(entries) for _, entries in per_file), default=0)
    profiles = max((q for _, entries in per_file for _, q in entries[:1]), default=0)
    if most < 2 and profiles < 2:
        return None
    return {'connections': {name: [c for c, _ in entries] for name, entries in per_file if entries},
            'analysed': 'the first connection of each file' if most > 1 else 'all (one connection)',
            'qos_profiles': profiles, 'other_publisher_messages': others}


def problem(topic: str, info: dict) -> str:
    """Return the line that says what was done with a topic's several publishers."""
    count = max(len(ids) for ids in info['connections'].values())
    if count > 1:
        return (f'{topic} has {count} publishers (connections '
                + '; '.join(f'{name}: {", ".join(map(str, ids))}'
                            for name, ids in info['connections'].items())
                + f'): only the first is analysed, {info["other_publisher_messages"]} messages '
                'of the others are not')
    return (f'{topic} had {info["qos_profiles"]} publishers when it was recorded, on one '
            'connection (offered_qos_profiles): their messages cannot be told apart and are '
            'analysed together')
