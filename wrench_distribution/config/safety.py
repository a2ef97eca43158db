"""Which runtime parameter changes make the distributor less safe (no ROS import).

A running distributor may only be made safer without a restart (docs/security.md): every
parameter that bounds what can be commanded, or guards against stale or bogus input, has a
safe direction, and a change the other way is refused unless the start-up-only option
``allow_unsafe_runtime_changes`` is true (a lab bench). One :class:`RuntimeRule` per such
parameter, in :data:`RUNTIME_RULES`; the docs' table and the refusal messages come from it.
"""
from dataclasses import dataclass
from typing import AbstractSet, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

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


class RefusedChanges:
    """Counts refused runtime parameter requests and keeps the last one (for diagnostics)."""

    def __init__(self) -> None:
        self.counters: Dict[str, int] = {'refused_parameter_changes': 0,
                                         'refused_unsafe_changes': 0}
        self.last: Optional[Tuple[str, str]] = None

    def note(self, asked: str, reason: str, unsafe: bool) -> None:
        """Count one refused request.

        :param asked: the parameters and values asked, e.g. ``force_limits=[2000.0]``.
        :param reason: the refusal message.
        :param unsafe: True when a safety rule refused it.
        """
        asked = asked if len(asked) <= ASKED_CHARS else asked[:ASKED_CHARS] + '...'
        self.counters['refused_parameter_changes'] += 1
        if unsafe:
            self.counters['refused_unsafe_changes'] += 1
        self.last = (asked, reason)

    def values(self) -> Dict[str, str]:
        """Return the diagnostics key/values: the last refusal (the node adds the counters)."""
        if self.last is None:
            return {'last_refused_change': 'none'}
        return {'last_refused_change': self.last[0], 'last_refusal_reason': self.last[1]}


def runtime_table() -> str:
    """Return the Markdown table of the distributor's runtime parameters (docs/security.md).

    :return: one row per runtime parameter, ruled ones first, with a trailing newline.
    """
    rows = ['| parameter | accepted at runtime | why |', '|---|---|---|']
    rows += [f'| `{name}` | {rule.text} | {rule.why} |' for name, rule in RUNTIME_RULES.items()]
    rows += [f'| `{name}` | any valid value | {why} |' for name, why in FREE_AT_RUNTIME.items()]
    return '\n'.join(rows) + '\n'
