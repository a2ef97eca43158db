"""A calibration file: what it carries, the physical bounds of its values, how a node takes it (no ROS).

``~/save_calibration`` and ``wrench-distribution identify --out`` write node sections
``/**/<node>: {ros__parameters: {...}}`` of calibration values, and each node loads its own
section at start-up from its ``calibration_file`` (read-only: fixed at start-up). Whoever can write
where the file is kept can change what the robot believes, so the file carries calibration values
only (:data:`CALIBRATION_KEYS`): a limit, a switch or a topic in it is refused, naming it. Every
value is bounded by physics:

- on its own (the schema's bounds, :func:`~.values.check_param_value`): masses, centres of
  mass, biases;
- against the sensors (:func:`range_errors`, a cross-check of the analyzer's values, the same at
  start-up, at runtime and in check-config): each bias component within its sensor's range
  (``sensor_ranges``), a tool's weight and its moment about the sensor within it, the held
  object's weight within the sensors' ranges together and its centre of mass where its moment
  stays within what they can hold;
- against the configuration it corrects (:func:`merged`): a mounting rotation (the calibration's
  ``sensor_orientations`` against the configured ones) of at most
  :data:`~wrench_distribution.core.calibration.MAX_MOUNTING_DEG`, as identified; a grasp
  correction (the calibration's contact poses against the configured ones) of at most
  :data:`MAX_GRASP_SHIFT_M` and :data:`MAX_GRASP_TURN_DEG`.
"""
from __future__ import annotations

import math
import os
from typing import Any, Mapping, Optional

import numpy as np

from .schema import ConfigError, PARAM_INDEX

#: The parameters a calibration sets, per node kind (the analyzer's read-out; the distributor's
#: object and contacts, which must match the analyzer's basis).
CALIBRATION_KEYS = {
    'analyzer': ('sensor_biases', 'tool_masses', 'tool_coms', 'sensor_orientations', 'object_mass',
                 'object_com', 'contact_positions', 'contact_orientations'),
    'distributor': ('object_mass', 'object_com', 'contact_positions', 'contact_orientations'),
}
#: A grasp identified from rests corrects a contact by millimetres and degrees; more is a wrong
#: configured contact (fix contact_positions / contact_orientations).
MAX_GRASP_SHIFT_M = 0.05
MAX_GRASP_TURN_DEG = 10.0
#: Largest calibration file read (bytes).
MAX_FILE_BYTES = 100_000
STANDARD_GRAVITY = 9.81
_WILDCARDS = ('/**', '**')


def _groups(values, width: int) -> np.ndarray:
    values = np.asarray(list(values or []), float)
    return values[:len(values) // width * width].reshape(-1, width)


#: What bounds a calibration value on a sensor axis whose range is not given (N, N m): no wrist
#: or finger sensor this package serves reads more.
UNRATED_RANGE = (1000.0,) * 3 + (100.0,) * 3
AXES = ('fx', 'fy', 'fz', 'tx', 'ty', 'tz')


def sensor_ranges(v: Mapping, n: int) -> np.ndarray:
    """Return each sensor's range per axis (n, 6), :data:`UNRATED_RANGE` where it is not given.

    :param v: the analyzer's values (``sensor_ranges``: 6 numbers for every sensor, 6 per
        effector, 0 where an axis is not rated, or empty).
    :param n: number of sensors.
    :return: ``[fx, fy, fz, tx, ty, tz]`` ranges per sensor.
    """
    given = _groups(v.get('sensor_ranges'), 6)
    table = np.repeat(given, n, axis=0) if len(given) == 1 else given
    if len(table) != n:
        table = np.zeros((n, 6))
    return np.where(table > 0, table, UNRATED_RANGE)


def range_errors(v: Mapping) -> list:
    """Judge the analyzer's calibration values against its sensors' ranges: one :class:`ConfigError` each.

    :param v: the analyzer's values (each valid on its own, per-effector widths checked).
    :return: the errors (empty when every value fits).
    """
    names = list(v['effectors'])
    n = len(names)
    axes = sensor_ranges(v, n)
    ranges = np.column_stack([axes[:, :3].min(axis=1), axes[:, 3:].min(axis=1)])  # any direction
    g = float(np.linalg.norm(v.get('gravity') or [0.0, 0.0, -STANDARD_GRAVITY])) or STANDARD_GRAVITY
    out = []
    for i, bias in enumerate(_groups(v.get('sensor_biases'), 6)[:n]):  # wrong widths: their own checks
        for part, values, limit, unit, first in (('force', bias[:3], axes[i, :3], 'N', 0),
                                                 ('torque', bias[3:], axes[i, 3:], 'N m', 3)):
            over = np.flatnonzero(np.abs(values) > limit)
            if len(over):
                axis = AXES[first + over[0]]
                out.append(ConfigError(
                    f"parameter 'sensor_biases': the {part} bias of '{names[i]}' {_text(values)} {unit} exceeds its "
                    f"sensor's range {limit[over[0]]:g} {unit} on {axis} (sensor_ranges); accepted: each "
                    'component within its range'))
    masses, coms = list(v.get('tool_masses') or []), _groups(v.get('tool_coms'), 3)
    for i, mass in enumerate(masses[:n]):
        lever = float(np.linalg.norm(coms[i])) if i < len(coms) else 0.0
        if mass * g > ranges[i, 0] or mass * g * lever > ranges[i, 1]:
            out.append(ConfigError(
                f"parameter 'tool_masses': the tool of '{names[i]}' weighs {mass * g:.4g} N with a moment of "
                f'{mass * g * lever:.4g} N m about its sensor, beyond its range {ranges[i, 0]:g} N, '
                f'{ranges[i, 1]:g} N m '
                '(sensor_ranges); accepted: a tool the sensor can carry'))
    return out + _object_errors(v, ranges, g)


def _object_errors(v: Mapping, ranges: np.ndarray, g: float) -> list:
    """Judge the object's weight against the sensors' force ranges together, its moment against what they hold.

    About the contacts' centre ``o`` the contacts hold the weight's moment ``M g |c - o|`` (at the
    worst orientation) with forces on their levers and their torques, at most
    ``sqrt(3) (sum_i F_i |p_i - o| + sum_i T_i)`` with ``(F_i, T_i)`` the sensors' ranges (per axis).
    """
    weight = float(v.get('object_mass') or 0.0) * g
    if weight > ranges[:, 0].sum():
        return [ConfigError(
            f"parameter 'object_mass': {v['object_mass']:g} kg weighs {weight:.4g} N, beyond what the sensors "
            f'read together ({ranges[:, 0].sum():g} N, sensor_ranges); accepted: an object the sensors can carry')]
    positions, com = _groups(v.get('contact_positions'), 3), list(v.get('object_com') or [0.0] * 3)
    if weight <= 0 or len(positions) != len(ranges) or len(com) != 3:
        return []
    centre = positions.mean(axis=0)
    moment = weight * float(np.linalg.norm(np.asarray(com, float) - centre))
    capacity = np.sqrt(3.0) * float(ranges[:, 0] @ np.linalg.norm(positions - centre, axis=1) + ranges[:, 1].sum())
    if moment <= capacity:
        return []
    return [ConfigError(
        f"parameter 'object_com': {_text(v['object_com'])} puts the weight's moment about the contacts' centre at "
        f'{moment:.4g} N m, beyond what the sensors can hold ({capacity:.4g} N m, sensor_ranges); accepted: a '
        'centre of mass the grasp can carry')]


def check_ranges(v: dict, idx: dict) -> None:
    """Cross-check of the analyzer (validation's ``_CHECKS``): the first of :func:`range_errors`."""
    errors = range_errors(v)
    if errors:
        raise errors[0]


def _text(values) -> str:
    return '[' + ', '.join(f'{x:.4g}' for x in values) + ']'


# -- the file ---------------------------------------------------------------------------------
def is_own_section(key: Any, node_name: str) -> bool:
    """Whether a section key reaches a node of this name (``/**``, ``name``, ``/ns/name``, ``/**/name``)."""
    key = str(key)
    return key in _WILDCARDS or key.lstrip('/').split('/')[-1] == node_name


def document_problems(data: Any, kind: Optional[str] = None, node_name: str = '') -> list:
    """Return what a calibration document holds that a calibration must not: ``(section, parameter, message)`` each.

    Every section must be a node's ``ros__parameters`` of calibration values (of any node kind);
    with ``kind``, the sections reaching ``node_name`` must hold that kind's values only.

    :param data: the parsed document.
    :param kind: the node kind loading it, or None (judged alone).
    :param node_name: that node's name.
    :return: the problems (empty: a calibration).
    """
    if not isinstance(data, Mapping):
        return [('', '', 'expected a mapping of node sections {ros__parameters: {...}}')]
    every = set(CALIBRATION_KEYS['analyzer']) | set(CALIBRATION_KEYS['distributor'])
    out = []
    for key, section in data.items():
        params = section.get('ros__parameters') if isinstance(section, Mapping) else None
        if not isinstance(params, Mapping) or set(section) != {'ros__parameters'}:
            out.append((str(key), '', f"section '{key}': expected only 'ros__parameters' with calibration values"))
            continue
        own = bool(kind) and is_own_section(key, node_name)
        allowed = set(CALIBRATION_KEYS[kind]) if own else every
        for name in params:
            if name not in allowed:
                out.append((str(key), str(name), f"section '{key}': '{name}' is not a calibration value "
                            f"{f'of the {kind}' if own else 'of any node'} (accepted: {', '.join(sorted(allowed))}): "
                            'a calibration file carries calibration only; limits, switches and topics belong '
                            'in your own parameter file'))
    return out


def read_calibration(path, kind: str, node_name: str) -> dict:
    """Read a node's calibration from its ``calibration_file``: its values, checked one by one.

    :param path: the file; None when it does not exist (a cell not calibrated yet).
    :param kind: ``'analyzer'`` or ``'distributor'``.
    :param node_name: the node's name (its sections).
    :return: ``{parameter: value}``, or None when the file does not exist.
    :raises ConfigError: the file is a link, too large, not YAML, carries anything but calibration
        values, or a value is out of its bounds (the message names the file and the value).
    """
    from wrench_distribution.core.errors import InvalidInputError
    from wrench_distribution.core.safe_load import load_text
    from .files import read_regular_file
    from .values import check_param_value
    label = f"calibration_file '{os.path.expanduser(os.fspath(path))}'"
    try:
        data = load_text(read_regular_file(path, MAX_FILE_BYTES).decode('utf-8'), label)
    except FileNotFoundError:
        return None
    except (OSError, InvalidInputError, UnicodeDecodeError) as error:
        raise ConfigError(f'{label}: {error}') from None
    problems = document_problems(data, kind, node_name)
    if problems:
        raise ConfigError(f'{label}: ' + '; '.join(message for _, _, message in problems))
    values: dict = {}
    for key, section in data.items():
        if is_own_section(key, node_name):
            values.update(section['ros__parameters'] or {})
    try:
        return {name: check_param_value(PARAM_INDEX[kind][name], value) for name, value in values.items()}
    except ConfigError as error:
        raise ConfigError(f'{label}: {error}') from None


def checked(parameters: Mapping, configured: Mapping) -> dict:
    """Refuse a calibration before it is written (the analyzer's values; the distributor's are a part).

    The same rules as at the next start: calibration values only, each within its bounds, the
    corrections within theirs against the configuration, the whole valid for the analyzer (its
    sensors' ranges).

    :param parameters: the calibration, analyzer parameters.
    :param configured: the analyzer's configured values (all of them).
    :return: the analyzer's values with the calibration.
    :raises ConfigError: naming the value and its bound.
    """
    from .validation import validate_params
    from .values import check_param_value
    extra = sorted(set(parameters) - set(CALIBRATION_KEYS['analyzer']))
    if extra:
        raise ConfigError(f"not calibration values: {', '.join(extra)}")
    values = {name: check_param_value(PARAM_INDEX['analyzer'][name], value) for name, value in parameters.items()}
    return validate_params('analyzer', merged(configured, values, 'analyzer'))


def merged(values: Mapping, calibration: Mapping, kind: str) -> dict:
    """Return the configuration with a calibration over it, its corrections within their bounds.

    :param values: the node's configured values (each valid on its own).
    :param calibration: :func:`read_calibration`'s values.
    :param kind: the node kind.
    :return: the values the node runs with.
    :raises ConfigError: a mounting rotation or a grasp correction beyond its bound, naming it.
    """
    from wrench_distribution.core.calibration import MAX_MOUNTING_DEG
    out = dict(values, **calibration)
    names = list(values.get('effectors') or [])
    if 'sensor_orientations' in calibration:
        _within_turn(values.get('sensor_orientations'), calibration['sensor_orientations'], names,
                     'sensor_orientations', MAX_MOUNTING_DEG, 'a mounting rotation')
    if 'contact_orientations' in calibration:
        _within_turn(values.get('contact_orientations'), calibration['contact_orientations'], names,
                     'contact_orientations', MAX_GRASP_TURN_DEG, 'a grasp correction')
    if 'contact_positions' in calibration and values.get('contact_positions'):
        shift = np.linalg.norm(_groups(calibration['contact_positions'], 3) - _groups(values['contact_positions'], 3),
                               axis=1) if len(calibration['contact_positions']) == len(values['contact_positions']) \
            else np.array([math.inf])
        if shift.max() > MAX_GRASP_SHIFT_M:
            i = int(np.argmax(shift))
            raise ConfigError(f"parameter 'contact_positions': the calibration moves '{_name(names, i)}' by "
                              f'{shift[i]:.4g} m from the configured pose, beyond a grasp correction '
                              f'({MAX_GRASP_SHIFT_M:g} m); accepted: within it (fix the configured contact)')
    return out


def _name(names: list, i: int) -> str:
    return names[i] if i < len(names) else str(i)


def _within_turn(configured, calibrated, names: list, parameter: str, bound_deg: float, what: str) -> None:
    """Refuse quaternions turned from the configured ones (identity when empty) by more than the bound."""
    new = _groups(calibrated, 4)
    old = _groups(configured, 4) if configured else np.tile([0.0, 0.0, 0.0, 1.0], (len(new), 1))
    if len(old) != len(new):
        raise ConfigError(f"parameter '{parameter}': the calibration has {len(new)} quaternions, the "
                          f'configuration {len(old)}; accepted: one per effector')
    unit = [q / np.linalg.norm(q) if np.linalg.norm(q) > 0 else np.array([0.0, 0.0, 0.0, 1.0]) for q in (*old, *new)]
    dots = np.abs(np.sum(np.array(unit[:len(old)]) * np.array(unit[len(old):]), axis=1))
    angles = np.degrees(2 * np.arccos(np.clip(dots, 0.0, 1.0)))
    if angles.max() > bound_deg:
        i = int(np.argmax(angles))
        raise ConfigError(f"parameter '{parameter}': the calibration turns '{_name(names, i)}' by {angles[i]:.3g} deg "
                          f'from the configured orientation, beyond {what} ({bound_deg:g} deg); accepted: '
                          'within it (fix the configured orientation)')
