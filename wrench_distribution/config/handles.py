"""The grammar of internal-load handles: ``"squeeze(left,right)=20"`` entries and schedules (no ROS).

A handle entry is parsed here once, into ``{name: value}``; its name is judged against the
effectors by the core's own grammar (:func:`~wrench_distribution.core.internal_basis.handle_problem`),
so a misspelt kind or effector is refused when the configuration is built, by the node and by
``check-config`` alike.
"""
from __future__ import annotations

import math
from typing import Iterable, Mapping, Sequence

from wrench_distribution.core.internal_basis import handle_problem

from .schema import ConfigError

HANDLES = 'internal_load_handles'


def parse_handles(entries: Sequence[str], parameter: str = HANDLES) -> dict:
    """Parse ``["squeeze(left,right)=20", ...]`` into ``{name: value}``.

    :param entries: strings ``name=value``.
    :param parameter: the parameter they come from (named in the message).
    :return: dict of handle name to float.
    :raises ConfigError: on a malformed entry or a non-finite value.
    """
    out = {}
    for e in entries:
        name, sep, val = str(e).rpartition('=')
        name = name.strip()
        try:
            x = float(val)
        except ValueError:
            x = float('nan')
        if not sep or not name or not math.isfinite(x):
            raise ConfigError(
                f"parameter '{parameter}': bad entry {e!r}; accepted: entries "
                '"basis_name=number", e.g. "squeeze(left,right)=20.0"')
        out[name] = x
    return out


def check_handle_names(handles: Mapping[str, float], names: Sequence[str],
                       types: Sequence[str] = (), parameter: str = HANDLES) -> None:
    """Refuse a handle that names no element of any grasp of these effectors.

    :param handles: parsed handles.
    :param names: the effector names.
    :param types: ``rigid`` / ``point`` per effector (empty: not judged).
    :param parameter: the parameter they come from (named in the message).
    :raises ConfigError: naming the parameter, the handle and the accepted forms.
    """
    for key in handles:
        why = handle_problem(key, names, types)
        if why is not None:
            raise ConfigError(f"parameter '{parameter}': {why}")


def parse_schedule(entries: Sequence[str]) -> list:
    """Parse ``["0.0: squeeze(a,b)=20", "3.0: squeeze(a,b)=40, twist(a,b)=1"]``.

    An entry with nothing after the colon prescribes no internal load; the handles of an
    entry are those of :func:`parse_handles`, separated by commas outside parentheses.

    :param entries: ``"<time>: name=value, name=value"`` strings.
    :return: list of ``(time, {name: value})`` sorted by time.
    :raises ConfigError: on a malformed entry (the message names the parameter).
    """
    out = []
    for entry in entries:
        when, sep, rest = str(entry).partition(':')
        try:
            time = float(when)
        except ValueError:
            time = float('nan')
        if not sep or not math.isfinite(time):
            raise ConfigError(f"parameter 'internal_load_schedule': {entry!r} does not start with "
                              'a finite "<time>:"; accepted: entries "<time>: name=value, ..."')
        out.append((time, parse_handles([t for t in _split_outside_parentheses(rest) if t.strip()],
                                        'internal_load_schedule')))
    return sorted(out, key=lambda x: x[0])


def parse_weights_schedule(entries: Sequence[str]) -> list:
    """Parse ``contact_weights_schedule``: ``["2.0: lf=0", "3.5: lf=1, rf=0"]``.

    :param entries: ``"<time>: effector=weight, ..."`` strings, weights in [0, 1].
    :return: list of ``(time, {effector: weight})`` in time order.
    :raises ConfigError: on a malformed entry, a repeated name, a weight outside [0, 1] or
        entries out of time order (the message names the parameter).
    """
    accepted = 'accepted: entries "<time>: effector=number in [0, 1], ..." in time order'
    out = []
    for entry in entries:
        when, sep, rest = str(entry).partition(':')
        pairs = [item.partition('=') for item in rest.split(',') if item.strip()]
        try:
            time = float(when)
            weights = {name.strip(): float(value) for name, _, value in pairs}
        except ValueError:
            time, weights = float('nan'), {}
        if (not sep or not math.isfinite(time) or len(weights) != len(pairs)
                or not all(name and 0.0 <= value <= 1.0 for name, value in weights.items())
                or (out and time < out[-1][0])):
            raise ConfigError(f"parameter 'contact_weights_schedule': {entry!r} is not valid; {accepted}")
        out.append((time, weights))
    return out


def _split_outside_parentheses(text: str) -> list:
    depth, token, tokens = 0, '', []
    for ch in text:
        depth += (ch == '(') - (ch == ')')
        if ch == ',' and depth == 0:
            tokens.append(token)
            token = ''
        else:
            token += ch
    tokens.append(token)
    return tokens


def format_schedule(schedule: Iterable[tuple]) -> list:
    """Write ``(time, {name: value})`` pairs as ``internal_load_schedule`` entries.

    The inverse of :func:`parse_schedule`, exactly (each number as its ``repr``).

    :param schedule: ``(time, {handle name: value})`` pairs.
    :return: ``"<time>: name=value, ..."`` strings.
    """
    return [f'{float(when)!r}: ' + ', '.join(f'{name}={float(value)!r}' for name, value in handles.items())
            for when, handles in schedule]
