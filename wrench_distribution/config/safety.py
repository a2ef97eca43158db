"""Which runtime parameter changes make the distributor less safe (no ROS import).

A running distributor may only be made safer without a restart (docs/security.md): every
parameter that bounds what can be commanded, or guards against stale or bogus input, has a
safe direction, and a change the other way is refused unless the start-up-only option
``allow_unsafe_runtime_changes`` is true (a lab bench). One :class:`RuntimeRule` per such
parameter, in :data:`RUNTIME_RULES`; the docs' table and the refusal messages come from it.
"""
from collections import deque, OrderedDict
from dataclasses import dataclass
import time
from typing import AbstractSet, Callable, Deque, Dict, List, Mapping, Optional, Sequence, Tuple

from .arrays import expand_limits

#: The start-up-only option that lets a lab bench raise limits at runtime.
OPT_IN = 'allow_unsafe_runtime_changes'

#: ``on_limit`` by what it may send after a violation: hold and zero send nothing new, scale
#: sends a scaled copy of the over-limit request.
ON_LIMIT_RANK = {'hold': 0, 'zero': 0, 'scale': 1}
#: ``on_timeout`` by what stays in force after a timeout: zero ends every command, hold_object_weight
#: keeps commanding what carries the object's weight (inside the limits), stop leaves the last
#: command to the arm controller (admittance_controller and cartesian_force_controller keep
#: applying the last reference they received).
ON_TIMEOUT_RANK = {'zero': 0, 'hold_object_weight': 1, 'stop': 2}

#: Longest text of the values asked kept for diagnostics (a huge array is cut).
ASKED_CHARS = 200
#: The limits whose package defaults are collaborative-arm values (a WARN while in force).
LIMIT_PARAMS = ('force_limits', 'torque_limits', 'desired_force_limit', 'desired_torque_limit',
                'internal_load_limit')


def _no_higher(old, new, n: int) -> bool:
    """Tell whether a limit stays at most the one in force (per effector, expanded)."""
    if isinstance(old, (list, tuple)):
        return all(b <= a for a, b in zip(expand_limits(old, n), expand_limits(new, n)))
    return new <= old


def _guard(old: float, new: float, n: int) -> bool:
    """Tell whether a timeout guard (0: off) is switched on or shortened, never off or longer."""
    if old == 0.0:
        return True
    return 0.0 < new <= old


def _no_shorter(old: float, new: float, n: int) -> bool:
    """Tell whether a duration stays at least the one in force."""
    return new >= old


def _ranked(rank: Mapping[str, int]) -> Callable[[object, object, int], bool]:
    return lambda old, new, n: rank[new] <= rank[old]


@dataclass(frozen=True)
class RuntimeRule:
    """The safe direction of one runtime parameter.

    :param safer: ``safer(old, new, n)``: True when ``new`` is at least as safe as ``old``
        (``n`` effectors, for per-effector limits).
    :param text: the rule, as messages and docs/security.md state it.
    :param why: what the other direction would open.
    """

    safer: Callable[[object, object, int], bool]
    text: str
    why: str


_LIMIT = 'a limit may only be lowered at runtime'
_GUARD = 'a timeout guard may only be shortened or switched on at runtime (0 disables it)'
_TIMEOUT = 'a staleness timeout may only be shortened at runtime'
_BIGGER = 'a higher limit lets larger commands through'
_LONGER = 'a longer or disabled guard lets staler (or further future-stamped) input through'

#: parameter -> its safe direction at runtime (every other runtime parameter is free).
RUNTIME_RULES: Dict[str, RuntimeRule] = {
    'force_limits': RuntimeRule(_no_higher, _LIMIT + ' (per effector)', _BIGGER),
    'torque_limits': RuntimeRule(_no_higher, _LIMIT + ' (per effector)', _BIGGER),
    'desired_force_limit': RuntimeRule(_no_higher, _LIMIT, _BIGGER),
    'desired_torque_limit': RuntimeRule(_no_higher, _LIMIT, _BIGGER),
    'internal_load_limit': RuntimeRule(_no_higher, _LIMIT, 'a higher limit lets larger '
                                       'squeezes and corrections through'),
    'feedback_correction_limit': RuntimeRule(_no_higher, _LIMIT,
                                             'a larger correction moves the internal load further'),
    'feedback_integral_limit': RuntimeRule(_no_higher, _LIMIT,
                                           'a larger integral moves the internal load further'),
    'friction_feedback_limit': RuntimeRule(_no_higher, _LIMIT,
                                           'a larger margin increase adds more squeeze'),
    'on_limit': RuntimeRule(_ranked(ON_LIMIT_RANK),
                            'on_limit may change among hold and zero, or from scale to either, '
                            'never to scale',
                            'scale sends a scaled copy of an over-limit request; hold and zero '
                            'send nothing new'),
    'on_timeout': RuntimeRule(_ranked(ON_TIMEOUT_RANK),
                              'on_timeout may go from stop to hold_object_weight or zero, and from '
                              'hold_object_weight to zero, not to stop',
                              'stop leaves the arm controllers on their last reference; '
                              'hold_object_weight keeps commanding the weight split'),
    'contact_transition_time': RuntimeRule(_no_shorter,
                                           'a contact transition may only be made slower at '
                                           'runtime',
                                           'a shorter ramp moves the commands further per tick'),
    'input_timeout': RuntimeRule(_guard, _GUARD, _LONGER),
    'contact_timeout': RuntimeRule(_guard, _GUARD, _LONGER),
    'max_future': RuntimeRule(_guard, _GUARD, _LONGER),
    'feedback_timeout': RuntimeRule(_no_higher, _TIMEOUT,
                                    'a staler measurement would drive the correction'),
    'friction_feedback_timeout': RuntimeRule(_no_higher, _TIMEOUT,
                                             'a staler measurement would drive the margin'),
}

#: runtime parameters the rule leaves free, and why none widens what can be commanded
FREE_AT_RUNTIME: Dict[str, str] = {
    'torque_share': 'moves torque between the contacts; the command limits bound every result',
    'internal_load': 'a prescription, refused over internal_load_limit or the command limits',
    'internal_load_handles': 'the same prescription as physical handles, the same checks',
    'internal_load_feedback': 'its correction stays within feedback_correction_limit, '
                              'internal_load_limit and the command limits',
    'feedback_kp': 'a gain: the correction stays within its limits (too high, it oscillates inside '
                   'them: tune on a bench, docs/force_control.md)',
    'feedback_ki': 'a gain: the integral stays within feedback_integral_limit',
    'friction_feedback': 'raises the friction margin only, within friction_feedback_limit and '
                         'the command limits',
    'friction_feedback_kp': 'a gain: the margin increase stays within friction_feedback_limit',
    'friction_feedback_ki': 'a gain: the margin increase stays within friction_feedback_limit',
    'on_sensor_fault': 'holds a correction the loop had, or ramps it to zero: never beyond its limits',
    'contact_weights': 'each change is checked against the contacts that remain before it '
                       'starts (refused, the weights stay) and ramps at contact_transition_time',
    'publish_markers': 'display only',
    'marker_scale': 'display only',
    'no_subscriber_grace': 'delay of a diagnostics WARN; commands are unaffected',
}


class UnsafeChangeError(ValueError):
    """A runtime parameter change that would make the node less safe; names the rule."""

    def __init__(self, name: str, value: object, message: str) -> None:
        super().__init__(message)
        self.name = name
        self.value = value


def check_runtime_change(current: Mapping[str, object], new: Mapping[str, object],
                         touched: Sequence[str]) -> None:
    """Refuse a runtime change that makes the distributor less safe.

    :param current: the parameters in force.
    :param new: the parameters after the change (each value already valid).
    :param touched: the names the request sets.
    :raises UnsafeChangeError: naming the first parameter whose change is less safe, its
        value asked, the value in force and the rule.
    """
    if current.get(OPT_IN, False):
        return
    n = len(current['effectors'])
    for name in sorted(touched):
        rule = RUNTIME_RULES.get(name)
        if rule is None or rule.safer(current[name], new[name], n):
            continue
        raise UnsafeChangeError(name, new[name], (
            f"parameter '{name}': {new[name]!r} refused at runtime, {current[name]!r} stays in "
            f'force ({rule.text}; {OPT_IN}, a start-up option for lab benches, is false)'))


def unsafe_changes_allowed(new_cfg: Mapping[str, object], current: Mapping[str, object],
                           touched: Sequence[str]) -> List[str]:
    """Name the changes that pass only because of the opt-in (for a WARN in the log).

    :param new_cfg: the parameters after the change.
    :param current: the parameters in force.
    :param touched: the names the request sets.
    :return: ``name: old -> new`` for each change against its rule.
    """
    n = len(current['effectors'])
    return [f'{name}: {current[name]!r} -> {new_cfg[name]!r}' for name in sorted(touched)
            if name in RUNTIME_RULES
            and not RUNTIME_RULES[name].safer(current[name], new_cfg[name], n)]


def defaults_in_force(values: Mapping[str, object], given: AbstractSet[str]) -> Tuple[str, ...]:
    """Name the limits the user left unset: the package defaults (collaborative-arm values).

    A limit set to the same value as its default is set: the user chose it.

    :param values: validated distributor parameters.
    :param given: the names the user set (a file, the command line, a runtime change).
    :return: ``name=value`` of each limit not in ``given``.
    """
    return tuple(f'{name}={values[name]!r}' for name in LIMIT_PARAMS if name not in given)


#: Refusals kept per parameter for the diagnostics (the newest; the counters keep every one).
REFUSALS_KEPT = 5
#: Parameters whose refusals are kept (the least recently refused one is forgotten first).
NAMES_KEPT = 24
#: Longest reason, and longest parameter name, kept (characters; a longer one is cut).
REASON_CHARS = 300
NAME_CHARS = 64
#: Log lines per parameter: a burst of :data:`LOG_BURST`, then one per :data:`LOG_PERIOD_NS`.
LOG_BURST = 5
LOG_PERIOD_NS = 1_000_000_000
#: The same attempt (parameter, value, reason) is logged again only after this long.
REPEAT_NS = 10_000_000_000


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + '...'


def asked_text(pairs: Sequence[Tuple[str, object]]) -> str:
    """Return the text of a request, ``name=value`` each, a long array shortened first.

    :param pairs: ``(name, value)`` of each parameter asked.
    :return: e.g. ``force_limits=[1500.0], on_limit='scale'``, at most :data:`ASKED_CHARS` (+3).
    """
    parts = []
    for name, value in pairs:
        if isinstance(value, (list, tuple)) and len(value) > 12:
            shown = ', '.join(repr(v) for v in value[:12])
            text = f'[{shown}, ... ({len(value)} values)]'
        else:
            text = repr(value)
        parts.append(f'{_cut(str(name), NAME_CHARS)}={_cut(text, ASKED_CHARS)}')
    return _cut(', '.join(parts), ASKED_CHARS)


class _ParameterRefusals:
    """The refusals of one parameter: count, the newest few, and its log budget."""

    def __init__(self, now_ns: int) -> None:
        self.count = 0
        self.recent: Deque[Tuple[str, str]] = deque(maxlen=REFUSALS_KEPT)
        self.tokens = float(LOG_BURST)
        self.refilled_ns = now_ns
        self.logged: 'OrderedDict[Tuple[str, str], int]' = OrderedDict()  # attempt -> when logged
        self.unlogged = 0

    def add(self, attempt: Tuple[str, str], now_ns: int, log: bool = True) -> Optional[int]:
        """Keep a refusal; tell whether to log it.

        :param attempt: ``(asked, reason)``.
        :param now_ns: monotonic time (ns).
        :param log: False: kept only (another parameter's line names it).
        :return: None when not logged now (a repeat of an attempt logged within
            :data:`REPEAT_NS`, or the budget spent), else how many were not logged before it.
        """
        self.count += 1
        self.recent.appendleft(attempt)
        if not log:
            return None
        self.tokens = min(float(LOG_BURST), self.tokens + (now_ns - self.refilled_ns) / LOG_PERIOD_NS)
        self.refilled_ns = now_ns
        when = self.logged.get(attempt)
        if (when is not None and now_ns - when < REPEAT_NS) or self.tokens < 1.0:
            self.unlogged += 1
            return None
        self.tokens -= 1.0
        self.logged.pop(attempt, None)
        self.logged[attempt] = now_ns
        while len(self.logged) > 2 * LOG_BURST:
            self.logged.popitem(last=False)
        skipped, self.unlogged = self.unlogged, 0
        return skipped


class RefusedChanges:
    """Every refused runtime parameter request, named: counted, kept per parameter, logged.

    A request refused by the node's checks or by rclpy's own (a read-only parameter, a wrong
    type, a value outside the declared range, an undeclared name) is counted once; each
    parameter it names keeps its newest :data:`REFUSALS_KEPT` refusals for the diagnostics
    (for the :data:`NAMES_KEPT` parameters refused last). Each distinct attempt gets a log
    line, rate-limited per parameter (:data:`LOG_BURST` at once, then one per
    :data:`LOG_PERIOD_NS`), so one parameter flooded never silences another; an attempt
    repeated within :data:`REPEAT_NS` is not logged again, and the next line of that
    parameter says how many were not.
    """

    def __init__(self) -> None:
        self.counters: Dict[str, int] = {'refused_parameter_changes': 0,
                                         'refused_unsafe_changes': 0}
        self.last: Optional[Tuple[str, str]] = None
        self._names: 'OrderedDict[str, _ParameterRefusals]' = OrderedDict()

    def note(self, asked: str, reason: str, unsafe: bool, names: Optional[Sequence[str]] = None,
             now_ns: Optional[int] = None) -> Optional[str]:
        """Count one refused request; return its log line, or None when not logged now.

        :param asked: the parameters and values asked (:func:`asked_text`).
        :param reason: the refusal message.
        :param unsafe: True when a safety rule refused it.
        :param names: the parameters refused (default: the first name in ``asked``).
        :param now_ns: monotonic time (ns; default: now).
        :return: the line to log (naming the parameter, the value and the reason), or None.
        """
        now_ns = time.monotonic_ns() if now_ns is None else now_ns
        asked, reason = _cut(asked, ASKED_CHARS), _cut(' '.join(str(reason).split()), REASON_CHARS)
        self.counters['refused_parameter_changes'] += 1
        if unsafe:
            self.counters['refused_unsafe_changes'] += 1
        self.last = (asked, reason)
        names = list(dict.fromkeys(_cut(str(name), NAME_CHARS) for name in names or [asked.split('=', 1)[0]]))
        skipped = self._record(names[0], now_ns).add((asked, reason), now_ns)
        for name in names[1:]:  # the log budget is the first one's
            self._record(name, now_ns).add((asked, reason), now_ns, log=False)
        if skipped is None:
            return None
        return f'parameter change refused: {reason} (asked: {asked})' + (
            f'; {skipped} more refusal(s) of this parameter not logged since (see /diagnostics)'
            if skipped else '')

    def _record(self, name: str, now_ns: int) -> _ParameterRefusals:
        record = self._names.pop(name, None) or _ParameterRefusals(now_ns)
        self._names[name] = record  # the most recently refused last
        while len(self._names) > NAMES_KEPT:
            self._names.popitem(last=False)
        return record

    def values(self) -> Dict[str, str]:
        """Return the diagnostics key/values: the last refusal and, per parameter, its newest ones.

        :return: ``last_refused_change``, ``last_refusal_reason`` and ``refused.<parameter>``
            (``<n> refused, newest first: <asked>: <reason> | ...``); the node adds the counters.
        """
        if self.last is None:
            return {'last_refused_change': 'none'}
        out = {'last_refused_change': self.last[0], 'last_refusal_reason': self.last[1]}
        for name, record in reversed(self._names.items()):
            out[f'refused.{name}'] = f'{record.count} refused, newest first: ' + ' | '.join(
                f'{asked}: {reason}' for asked, reason in record.recent)
        return out


def runtime_table() -> str:
    """Return the Markdown table of the distributor's runtime parameters (docs/security.md).

    :return: one row per runtime parameter, ruled ones first, with a trailing newline.
    """
    rows = ['| parameter | accepted at runtime | why |', '|---|---|---|']
    rows += [f'| `{name}` | {rule.text} | {rule.why} |' for name, rule in RUNTIME_RULES.items()]
    rows += [f'| `{name}` | any valid value | {why} |' for name, why in FREE_AT_RUNTIME.items()]
    return '\n'.join(rows) + '\n'
