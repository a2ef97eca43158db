"""Episodes of a health check over n sensors, vectorised over a chunk of readings (no ROS).

A check flags readings; a sensor is in doubt from its first flagged reading until
:data:`~wrench_distribution.core.health.RECOVERY` clean readings have followed its last one.
An episode is one stretch of doubt: counted once, with the onset the check gives (which may
precede the first flagged reading: a freeze starts at its first repeat) and the stamp of
the reading that raised it. Readings are numbered from 0 by the caller; the same rule
reading by reading (live) and chunk by chunk (offline) gives the same episodes.
"""
from dataclasses import dataclass, field
from typing import List

import numpy as np

from wrench_distribution.core.health import RECOVERY

#: reading index of a flag that never was
NEVER = -(2 ** 62)


@dataclass
class Episode:
    """One episode.

    :param sensor: the sensor's index.
    :param onset_ns: when it began (the check's estimate).
    :param detected_ns: stamp of the reading that raised it.
    """

    sensor: int
    onset_ns: int
    detected_ns: int


@dataclass
class Episodes:
    """The episodes of one check.

    :param n: number of sensors.
    :param recovery: clean readings after the last flagged one before the doubt ends.
    """

    n: int
    recovery: int = RECOVERY
    #: episodes per sensor, and readings flagged per sensor
    count: np.ndarray = field(init=False)
    flagged: np.ndarray = field(init=False)
    #: onset of the first and of the latest episode, stamp of the latest flagged reading (-1: none)
    first_onset_ns: np.ndarray = field(init=False)
    onset_ns: np.ndarray = field(init=False)
    last_ns: np.ndarray = field(init=False)
    #: index of the latest flagged reading per sensor
    last_index: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.count = np.zeros(self.n, np.int64)
        self.flagged = np.zeros(self.n, np.int64)
        self.first_onset_ns = np.full(self.n, -1, np.int64)
        self.onset_ns = np.full(self.n, -1, np.int64)
        self.last_ns = np.full(self.n, -1, np.int64)
        self.last_index = np.full(self.n, NEVER, np.int64)

    def update(self, first: int, raw: np.ndarray, onset_ns: np.ndarray,
               stamps_ns: np.ndarray) -> tuple:
        """Take the flags of k readings numbered from ``first``.

        :param first: index of the first of them.
        :param raw: (k, n) whether the check flags each sensor's reading.
        :param onset_ns: (k, n) the onset of an episode that would start at that reading.
        :param stamps_ns: (k,) the readings' stamps.
        :return: ``(doubt (k, n), new episodes)``.
        """
        index = first + np.arange(len(raw))[:, None]
        if not raw.any():  # the common case: nothing flagged
            return index - self.last_index <= self.recovery, []
        marks = np.where(raw, index, NEVER)
        last = np.maximum.accumulate(np.vstack([self.last_index[None], marks]), axis=0)
        new = raw & (index - last[:-1] > self.recovery)
        found: List[Episode] = []
        for row, sensor in zip(*np.nonzero(new)):
            onset = int(onset_ns[row, sensor])
            found.append(Episode(int(sensor), onset, int(stamps_ns[row])))
            self.count[sensor] += 1
            self.onset_ns[sensor] = onset
            if self.first_onset_ns[sensor] < 0:
                self.first_onset_ns[sensor] = onset
        self.flagged += raw.sum(axis=0)
        hit = raw.any(axis=0)
        latest = len(raw) - 1 - np.argmax(raw[::-1], axis=0)
        self.last_ns[hit] = np.asarray(stamps_ns)[latest[hit]]
        self.last_index = last[-1].copy()
        return index - last[1:] <= self.recovery, found

    def in_doubt(self, latest: int) -> np.ndarray:
        """(n,) whether each sensor is in doubt after reading ``latest``."""
        return latest - self.last_index <= self.recovery

    def doubt_until(self) -> np.ndarray:
        """(n,) the last reading index at which each sensor is still in doubt."""
        return self.last_index + self.recovery
