"""Counters, one status per concern, per-reason log throttling and ``/diagnostics`` messages.

A node reports into named *concerns* (``input``, ``contacts``, ``internal load``,
``solver``, ``limits``, ...). Each concern is its own ``DiagnosticStatus``
(``<node>: <concern>``), so a STALE input stream can never hide an ERROR of the solver; a
summary status (``<node>: <summary>``) carries every counter and the node's values, with the
most severe level of all concerns, where ERROR outranks STALE. The summary comes first
in the array.
"""
import time
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue

from wrench_distribution.core.codec import ns_to_seconds, seconds_to_ns
from wrench_distribution.engine.status import ERROR, OK, STALE, WARN
_LEVEL_IS_BYTES = isinstance(DiagnosticStatus().level, (bytes, bytearray))
_LEVEL_NAMES = {OK: 'OK', WARN: 'WARN', ERROR: 'ERROR', STALE: 'STALE'}

#: Concern of the problem keys used before concerns existed (and by ``ContactInput``).
KEY_CONCERNS = {
    'rejected_contacts': 'contacts', 'rejected_frame': 'contacts',
    'rejected_length': 'contacts', 'tf_failures': 'contacts', 'no_contacts': 'contacts',
    'basis_changes': 'contacts',
    'rejected_internal_load': 'internal load', 'unrealisable': 'solver',
    'rejected': 'solver', 'solver_nan': 'solver', 'limit': 'limits',
    'refused_parameter_changes': 'limits', 'refused_unsafe_changes': 'limits',
    'refused_publishes': 'outputs',
}
#: The refused-change counters in a node whose runtime parameters have their own status
#: (the analyzer's ``parameters``; the distributor's are in ``limits``).
PARAMETER_COUNTERS = {'refused_parameter_changes': 'parameters', 'refused_unsafe_changes': 'parameters'}
#: Seconds between two log lines of the same reason.
LOG_THROTTLE_S = 2.0


def severity(levels: Sequence[int]) -> int:
    """Return the level a set of levels makes: ERROR if any is ERROR, else the highest.

    :param levels: diagnostic levels.
    :return: the level (OK when empty).
    """
    levels = list(levels)
    if ERROR in levels:
        return ERROR
    return max(levels, default=OK)


class DiagnosticsState:
    """Event counters, one-shot problems per concern, drop tallies and throttled logging.

    Problems reported with :meth:`problem` stay visible until the next published array
    (so a single bad message shows up once); persistent conditions (a timeout, missing
    contacts) are passed to :meth:`build` by the node each time.

    :param name: summary status name, e.g. ``wrench_distributor: distribution``.
    :param hardware_id: ``hardware_id`` of the statuses (the node name).
    :param concerns: concern names, in status order.
    :param logger: an rclpy logger (None: no logging).
    :param monotonic: clock for the log throttle (seconds).
    :param key_concerns: counters shown in another concern's status than :data:`KEY_CONCERNS` says.
    """

    def __init__(self, name: str, hardware_id: str,
                 concerns: Sequence[str] = ('input', 'contacts', 'solver'),
                 logger=None, monotonic: Callable[[], float] = time.monotonic,
                 key_concerns: Optional[Mapping[str, str]] = None) -> None:
        self.name = name
        self._key_concerns = dict(key_concerns or {})
        self.hardware_id = hardware_id
        self.concerns = list(concerns)
        self.counters: Dict[str, int] = {}
        self.logger = logger
        self._monotonic = monotonic
        self._events: Dict[str, List[Tuple[int, str]]] = {c: [] for c in self.concerns}
        self._last_log: Dict[str, float] = {}
        self._period_drops: Dict[Tuple[str, str], int] = {}
        self._basis_names: Optional[List[str]] = None

    def count(self, key: str, n: int = 1) -> None:
        """Add to a counter.

        :param key: counter name.
        :param n: increment.
        """
        self.counters[key] = self.counters.get(key, 0) + n

    def problem(self, key: str, message: str, level: int = WARN,
                concern: Optional[str] = None, log: bool = True) -> None:
        """Count an event, keep its message for the next status, log it (throttled per key).

        :param key: counter name, e.g. ``rejected_internal_load``; also the throttle key.
        :param message: what happened, user-readable.
        :param level: diagnostic level of the event.
        :param concern: concern it belongs to (None: from :data:`KEY_CONCERNS`, else input).
        :param log: also write it to the log.
        """
        self.count(key)
        concern = concern or KEY_CONCERNS.get(key, 'input')
        events = self._events.setdefault(concern, [])
        if len(events) < 8 and all(m != message for _, m in events):
            events.append((level, message))
        if log:
            self.log(key, message, level)

    def basis(self, names: Sequence[str]) -> None:
        """Follow the internal-load basis across contact updates; a change of names is a WARN.

        The named basis changes only where its names do (docs/theory.md, section 6), so a
        change of names is what tells a user that coordinates before and after differ in meaning.

        :param names: the basis names of the distributor now in use.
        """
        names = list(names)
        previous = self._basis_names
        if previous is not None and names != previous:
            self.problem('basis_changes', 'internal-load basis changed with the contacts: '
                         f'{";".join(previous)} -> {";".join(names)}', WARN)
        self._basis_names = names

    def log(self, key: str, message: str, level: int = WARN) -> None:
        """Log a message, at most once per :data:`LOG_THROTTLE_S` for each key.

        :param key: throttle key (one per reason).
        :param message: the text.
        :param level: ERROR logs as an error, anything else as a warning.
        """
        if self.logger is None:
            return
        now = self._monotonic()
        last = self._last_log.get(key)
        if last is not None and now - last < LOG_THROTTLE_S:
            return
        self._last_log[key] = now
        # two call sites: rclpy refuses one site logging at two severities
        if level == ERROR:
            self.logger.error(message)
        else:
            self.logger.warning(message)

    def drop(self, source: str, cause: str, message: str, level: int = WARN,
             concern: str = 'input', legacy_key: Optional[str] = None, log: bool = True) -> None:
        """Count one dropped input by source and cause, and report it.

        :param source: effector or input name (``desired_wrench``, ``left``, ...).
        :param cause: ``unsynchronised``, ``stale``, ``future``, ``nan``, ``frame``,
            ``limit``, ``out_of_order``, ...
        :param message: user-readable text.
        :param level: diagnostic level.
        :param concern: the concern of the status that shows it.
        :param legacy_key: an older aggregate counter to increment too.
        :param log: False when the same event was just logged for another source.
        """
        if legacy_key:
            self.count(legacy_key)
        k = (source, cause)
        self._period_drops[k] = self._period_drops.get(k, 0) + 1
        self.problem(f'dropped.{source}.{cause}', message, level, concern, log)

    def drop_summary(self) -> Optional[str]:
        """Return the drops since the last call, as one line (None when there were none).

        :return: e.g. ``dropped inputs: left: unsynchronised 100; right: stale 2``.
        """
        if not self._period_drops:
            return None
        by_source: Dict[str, List[str]] = {}
        for (source, cause), n in sorted(self._period_drops.items()):
            by_source.setdefault(source, []).append(f'{cause} {n}')
        self._period_drops = {}
        return 'dropped inputs: ' + '; '.join(f'{s}: {", ".join(c)}'
                                              for s, c in by_source.items())

    def build(self, stamp, conditions: Mapping[str, List[Tuple[int, str]]],
              values: Optional[Mapping[str, object]] = None,
              concern_values: Optional[Mapping[str, Mapping[str, object]]] = None
              ) -> DiagnosticArray:
        """Make the ``DiagnosticArray`` and clear the one-shot problems.

        :param stamp: ``builtin_interfaces/Time`` of the array.
        :param conditions: persistent ``(level, message)`` pairs per concern.
        :param values: key/values of the summary status (converted with ``str``).
        :param concern_values: key/values per concern status.
        :return: the message: the summary, then one status per concern.
        """
        statuses = []
        levels = []
        texts = []
        for concern in self.concerns:
            items = list(conditions.get(concern, ())) + self._events.get(concern, [])
            self._events[concern] = []
            level = severity(lv for lv, _ in items)
            levels.append(level)
            msg = '; '.join(m for _, m in items) if items else 'OK'
            if level != OK:
                texts.append(f'{concern}: {msg}')
            kv = dict((concern_values or {}).get(concern, {}))
            kv['counters'] = ', '.join(f'{k}={v}' for k, v in sorted(self.counters.items())
                                       if self._key_concerns.get(k, _concern_of(k)) == concern) or 'none'
            statuses.append(self._status(f'{self.hardware_id}: {concern}', level, msg, kv))
        level = severity(levels)
        kv = dict(sorted(self.counters.items()))
        kv.update(values or {})
        kv['level_by_concern'] = ', '.join(f'{c}={_LEVEL_NAMES[lv]}'
                                           for c, lv in zip(self.concerns, levels))
        statuses.insert(0, self._status(self.name, level, '; '.join(texts) or 'OK', kv))
        arr = DiagnosticArray()
        arr.header.stamp = stamp
        arr.status = statuses
        return arr

    def _status(self, name: str, level: int, message: str,
                values: Mapping[str, object]) -> DiagnosticStatus:
        status = DiagnosticStatus()
        status.level = bytes([level]) if _LEVEL_IS_BYTES else level
        status.name = name
        status.hardware_id = self.hardware_id
        status.message = message
        status.values = [KeyValue(key=k, value=str(v)) for k, v in values.items()]
        return status


class SimClockMonitor:
    """Watches the node clock against the steady clock under ``use_sim_time``.

    :param patience_s: steady seconds without a sim-time change before it is reported.
    """

    def __init__(self, patience_s: float = 1.0) -> None:
        self.patience_ns = seconds_to_ns(patience_s)
        self._last_value: Optional[int] = None
        self._last_change = time.monotonic_ns()
        self._sim = False

    def tick(self, node_now_ns: int, use_sim_time: bool) -> None:
        """Record the node clock (call periodically from a steady timer).

        :param node_now_ns: node clock now.
        :param use_sim_time: the node's ``use_sim_time``.
        """
        mono = time.monotonic_ns()
        if use_sim_time != self._sim or node_now_ns != self._last_value:
            self._last_change = mono
        self._sim = use_sim_time
        self._last_value = node_now_ns

    def problem(self) -> Optional[tuple]:
        """``(level, message)`` when sim time is set but not advancing, else None.

        :return: ERROR when no /clock ever came, WARN when it stopped (a paused bag).
        """
        if not self._sim:
            return None
        frozen = time.monotonic_ns() - self._last_change
        if frozen <= self.patience_ns:
            return None
        if not self._last_value:
            return (ERROR, f'use_sim_time is true but no /clock has arrived '
                           f'({frozen * 1e-9:.1f} s); the watchdog and diagnostics run on the '
                           'steady clock, stamp checks are suspended')
        return (WARN, f'use_sim_time is true and /clock has not advanced for '
                      f'{frozen * 1e-9:.1f} s (paused?); the watchdog runs on the steady clock')


def start_steady_timers(node, ros, publish, summarise):
    """Diagnostics and drop-summary timers on the steady clock.

    They keep running under ``use_sim_time`` when no ``/clock`` arrives.

    :param node: the rclpy node.
    :param ros: the node's ``RosSettings`` (``diagnostics_period``, ``summary_period``).
    :param publish: diagnostics callback.
    :param summarise: summary callback.
    :return: the steady ``Clock`` (for more timers).
    """
    from rclpy.clock import Clock, ClockType
    steady = Clock(clock_type=ClockType.STEADY_TIME)
    node.create_timer(ns_to_seconds(ros.diagnostics_period_ns), publish, clock=steady)
    node.create_timer(ns_to_seconds(ros.summary_period_ns), summarise, clock=steady)
    return steady


def _concern_of(key: str) -> str:
    if key.startswith('dropped.'):
        cause = key.rsplit('.', 1)[-1]
        return 'limits' if cause == 'limit' else 'input'
    if key.startswith('sensor_health.'):
        return 'sensor health'
    return KEY_CONCERNS.get(key, '')


def level_of(status: DiagnosticStatus) -> int:
    """Integer level of a status (the field is a byte in ROS 2).

    :param status: the status.
    :return: 0 OK, 1 WARN, 2 ERROR, 3 STALE.
    """
    lv = status.level
    return lv[0] if isinstance(lv, (bytes, bytearray)) else int(lv)
