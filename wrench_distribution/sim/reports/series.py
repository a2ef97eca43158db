"""A demo bag read into time series (header stamps), topic by topic (no ROS needed)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from wrench_distribution.core.codec import stamp_to_ns


@dataclass
class Series:
    """Time series of one topic: times (s, header stamps) and values (k, d)."""

    t: np.ndarray
    v: np.ndarray
    labels: list = field(default_factory=list)


def _stamp(h) -> float:
    return stamp_to_ns(h.stamp) * 1e-9


def read_bag(path: Path, topics: Optional[Sequence[str]] = None) -> dict:
    """Read topics of a demo bag into :class:`Series`.

    :param path: bag directory.
    :param topics: topic names (without the leading slash) to read; None for all.
    :return: topic name -> Series (missing topics are absent); ``message_counts`` of
        every topic in the bag is under the key ``'_counts'``
    """
    from rosbags.rosbag2 import Reader
    from rosbags.typesys import Stores, get_typestore
    typestore = get_typestore(Stores.ROS2_KILTED)
    raw: dict = {}
    counts = {}
    with Reader(Path(path)) as reader:
        for conn in reader.connections:
            counts[conn.topic.lstrip('/')] = counts.get(conn.topic.lstrip('/'), 0) + conn.msgcount
        wanted = [c for c in reader.connections
                  if topics is None or c.topic.lstrip('/') in topics]
        for conn, timestamp, data in reader.messages(connections=wanted):
            msg = typestore.deserialize_cdr(data, conn.msgtype)
            raw.setdefault(conn.topic, []).append((timestamp * 1e-9, msg))
    out = {}
    for topic, items in raw.items():
        name = topic.lstrip('/')
        items.sort(key=lambda item: _stamp(item[1].header) if hasattr(item[1], 'header')
                   else item[0])
        first = items[0][1]
        if hasattr(first, 'wrench'):
            t = np.array([_stamp(m.header) for _, m in items])
            v = np.array([[m.wrench.force.x, m.wrench.force.y, m.wrench.force.z,
                           m.wrench.torque.x, m.wrench.torque.y, m.wrench.torque.z]
                          for _, m in items])
            out[name] = Series(t, v)
        elif hasattr(first, 'pose') and hasattr(first, 'header'):
            t = np.array([_stamp(m.header) for _, m in items])
            v = np.array([[m.pose.position.x, m.pose.position.y, m.pose.position.z,
                           m.pose.orientation.x, m.pose.orientation.y, m.pose.orientation.z,
                           m.pose.orientation.w] for _, m in items])
            out[name] = Series(t, v)
        elif hasattr(first, 'layout'):
            t = np.array([ts for ts, _ in items])
            labels = [m.layout.dim[0].label if len(m.layout.dim) else '' for _, m in items]
            width = max(len(m.data) for _, m in items)
            v = np.full((len(items), width), np.nan)
            for i, (_, m) in enumerate(items):
                v[i, :len(m.data)] = m.data
            out[name] = Series(t, v, labels)
        else:
            out[name] = Series(np.array([ts for ts, _ in items]), np.zeros((len(items), 0)))
    out['_counts'] = counts
    return out
