"""A demo bag read into time series (header stamps), topic by topic (no ROS needed).

Read with the bag tools' one reader and typestore (:class:`~wrench_distribution.bag.reader.BagReader`)
and converted with the one message conversion (:mod:`wrench_distribution.core.messages`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from wrench_distribution.bag.reader import BagReader
from wrench_distribution.core.codec import ns_to_seconds, stamp_to_ns
from wrench_distribution.core.messages import pose_to_list, wrench_to_array


@dataclass
class Series:
    """Time series of one topic: times (s, header stamps) and values (k, d).

    ``received``: for a topic with headers, each message's reception time in the bag (s, the
    recorder's clock), in the order of ``t``; None for the others (their ``t`` is that time).
    """

    t: np.ndarray
    v: np.ndarray
    labels: list = field(default_factory=list)
    received: Optional[np.ndarray] = None


def _stamp(h) -> float:
    return ns_to_seconds(stamp_to_ns(h.stamp))


def read_bag(path: Path, topics: Optional[Sequence[str]] = None) -> dict:
    """Read topics of a demo bag into :class:`Series`.

    :param path: bag directory.
    :param topics: topic names (without the leading slash) to read; None for all.
    :return: topic name -> Series (missing topics are absent); ``message_counts`` of
        every topic in the bag is under the key ``'_counts'``
    :raises BagError: for a bag that cannot be read (the message names the problem)
    """
    raw: dict = {}
    counts = {}
    with BagReader(Path(path)) as bag:
        for topic, msgtypes in bag.topic_types.items():
            name = topic.lstrip('/')
            counts[name] = counts.get(name, 0) + sum(bag.announced_count(topic, m) or 0
                                                     for m in msgtypes)
        types = bag.topics
        wanted = [t for t in types if topics is None or t.lstrip('/') in topics]
        for topic, receive_ns, data in bag.raw_messages(wanted):
            msg = bag.deserialize(data, types[topic], topic)
            raw.setdefault(topic, []).append((ns_to_seconds(receive_ns), msg))
    out = {}
    for topic, items in raw.items():
        out[topic.lstrip('/')] = _series(items)
    out['_counts'] = counts
    return out


def _series(items: list) -> Series:
    """Return one topic's messages ``[(receive time s, message)]`` as a series, by stamp."""
    items.sort(key=lambda item: _stamp(item[1].header) if hasattr(item[1], 'header')
               else item[0])
    first = items[0][1]
    received = np.array([ts for ts, _ in items])
    if hasattr(first, 'wrench'):
        return Series(np.array([_stamp(m.header) for _, m in items]),
                      np.array([wrench_to_array(m.wrench) for _, m in items]), received=received)
    if hasattr(first, 'pose') and hasattr(first, 'header'):
        return Series(np.array([_stamp(m.header) for _, m in items]),
                      np.array([pose_to_list(m.pose) for _, m in items]), received=received)
    if hasattr(first, 'layout'):
        labels = [m.layout.dim[0].label if len(m.layout.dim) else '' for _, m in items]
        width = max(len(m.data) for _, m in items)
        v = np.full((len(items), width), np.nan)
        for i, (_, m) in enumerate(items):
            v[i, :len(m.data)] = m.data
        return Series(np.array([ts for ts, _ in items]), v, labels)
    return Series(np.array([ts for ts, _ in items]), np.zeros((len(items), 0)))
