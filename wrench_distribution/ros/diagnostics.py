"""Counters, sticky problems and ``/diagnostics`` messages for one node."""
from typing import Dict, List, Optional, Tuple

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue

OK = 0
WARN = 1
ERROR = 2
STALE = 3
_LEVEL_IS_BYTES = isinstance(DiagnosticStatus().level, (bytes, bytearray))


class DiagnosticsState:
    """Event counters, the latest problem, and the status they make.

    Problems reported with :meth:`problem` stay visible until the next published
    status (so a single bad message shows up once); persistent conditions (a timeout,
    missing contacts) are passed to :meth:`build` by the node each time.

    :param name: status name, e.g. ``wrench_distributor: distribution``.
    :param hardware_id: ``hardware_id`` of the status (the node name).
    """

    def __init__(self, name: str, hardware_id: str) -> None:
        self.name = name
        self.hardware_id = hardware_id
        self.counters: Dict[str, int] = {}
        self._events: List[Tuple[int, str]] = []

    def count(self, key: str, n: int = 1) -> None:
        """Add to a counter.

        :param key: counter name.
        :param n: increment.
        """
        self.counters[key] = self.counters.get(key, 0) + n

    def problem(self, key: str, message: str, level: int = WARN) -> None:
        """Count an event and keep its message for the next status.

        :param key: counter name, e.g. ``rejected_nan``.
        :param message: what happened, user-readable.
        :param level: diagnostic level of the event.
        """
        self.count(key)
        if len(self._events) < 8 and all(m != message for _, m in self._events):
            self._events.append((level, message))

    def build(self, stamp, conditions: List[Tuple[int, str]],
              values: Optional[Dict[str, object]] = None) -> DiagnosticArray:
        """Make the ``DiagnosticArray`` and clear the one-shot problems.

        :param stamp: ``builtin_interfaces/Time`` of the array.
        :param conditions: persistent ``(level, message)`` pairs.
        :param values: extra key/values (converted with ``str``).
        :return: the message.
        """
        items = list(conditions) + self._events
        self._events = []
        level = max((lv for lv, _ in items), default=OK)
        msg = '; '.join(m for _, m in items) if items else 'OK'
        status = DiagnosticStatus()
        status.level = bytes([level]) if _LEVEL_IS_BYTES else level
        status.name = self.name
        status.hardware_id = self.hardware_id
        status.message = msg
        kv = [KeyValue(key=k, value=str(v)) for k, v in sorted(self.counters.items())]
        if values:
            kv += [KeyValue(key=k, value=str(v)) for k, v in values.items()]
        status.values = kv
        arr = DiagnosticArray()
        arr.header.stamp = stamp
        arr.status = [status]
        return arr


def level_of(status: DiagnosticStatus) -> int:
    """Integer level of a status (the field is a byte in ROS 2).

    :param status: the status.
    :return: 0 OK, 1 WARN, 2 ERROR, 3 STALE.
    """
    lv = status.level
    return lv[0] if isinstance(lv, (bytes, bytearray)) else int(lv)
