"""Which of a node's outputs have a reader, counted a few times a second rather than per message.

An output with no matched subscription reaches nobody, so a node computes and publishes
only what is read. rclpy's ``get_subscription_count`` costs about 1 us a call; the analyzer
asks it for a dozen outputs per sample, a tenth of its 1 kHz budget. :class:`Readers`
counts every output at most once per ``period_ns`` of the steady clock (so it works before
a ROS clock has started), and a subscriber that matches waits at most that long for its
first message, as it waits for discovery anyway.
"""
import time
from typing import Dict, Iterable

#: how long a count is used (ns): a new reader's first message comes at most this late
READERS_PERIOD_NS = 20_000_000


class Readers:
    """Whether each publisher has a subscriber, re-counted at most every ``period_ns``.

    :param publishers: the rclpy publishers to count.
    :param period_ns: how long a count is used (steady clock).
    """

    def __init__(self, publishers: Iterable, period_ns: int = READERS_PERIOD_NS) -> None:
        self.publishers = list(publishers)
        self.period_ns = int(period_ns)
        self._due_ns = 0
        self._read: Dict[object, bool] = {}

    def read(self) -> Dict[object, bool]:
        """Return publisher -> whether it has a subscriber (counted now when the period is over)."""
        now_ns = time.monotonic_ns()
        if now_ns >= self._due_ns:
            self._read = {pub: pub.get_subscription_count() > 0 for pub in self.publishers}
            self._due_ns = now_ns + self.period_ns
        return self._read
