"""Which of a node's outputs have a reader, counted a few times a second rather than per message.

An output with no matched subscription reaches nobody, so a node computes and publishes
only what is read. rclpy's ``get_subscription_count`` costs about 1 us a call; the analyzer
asks it for a dozen outputs per sample, a tenth of its 1 kHz budget. :class:`Readers`
counts every output at most once per ``period_ns`` of the steady clock (so it works before
a ROS clock has started), and a subscriber that matches waits at most that long for its
first message, as it waits for discovery anyway.
"""
import time
from typing import Dict, Iterable, List, Set, Tuple

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
        """Return publisher -> whether it has a subscriber (counted now when the period is over).

        :return: the same mapping object until the next count (a new one then).
        """
        now_ns = time.monotonic_ns()
        if now_ns >= self._due_ns:
            self._read = {pub: pub.get_subscription_count() > 0 for pub in self.publishers}
            self._due_ns = now_ns + self.period_ns
        return self._read


class QuietOutputs:
    """Output topics without a subscriber for longer than a grace period (a WARN in diagnostics).

    Each such episode counts once; a subscriber ends it.

    :param outputs: ``(topic, publisher)`` pairs.
    """

    def __init__(self, outputs: Iterable[Tuple[str, object]]) -> None:
        self.outputs = list(outputs)
        self._since: Dict[str, int] = {}  # topic -> steady ns without a subscriber
        self._counted: Set[str] = set()

    def quiet(self, mono_ns: int, grace_ns: int) -> Tuple[List[str], int]:
        """Return the topics quiet for longer than ``grace_ns`` and the episodes new among them.

        :param mono_ns: steady clock now.
        :param grace_ns: the grace period (0: none is reported).
        :return: ``(topics, new episodes)``.
        """
        quiet, new = [], 0
        for topic, pub in self.outputs:
            if pub.get_subscription_count() > 0:
                self._since.pop(topic, None)
                self._counted.discard(topic)
                continue
            since = self._since.setdefault(topic, mono_ns)
            if grace_ns > 0 and mono_ns - since > grace_ns:
                new += topic not in self._counted
                self._counted.add(topic)
                quiet.append(topic)
        return quiet, new
