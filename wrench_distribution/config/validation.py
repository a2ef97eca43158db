"""Validation of parameter values against the schema, one by one and as a whole set."""
from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, Optional, Sequence

import numpy as np

from wrench_distribution.core.spatial import unusable_quaternions

from .calibration import check_ranges
from .schema import (BOOL, BUILTIN_PARAMS, ConfigError, DOUBLE, DOUBLE_ARRAY, INTEGER, INTEGER_ARRAY,
                     LIMIT_CEILING, PARAM_INDEX, ParamSpec, STRING, STRING_ARRAY)
from .sim import ARM_ROBOTS, SIM_SPECS

#: Kind (node name) -> parameter name -> spec, for the two nodes and the simulator's nodes.
INDEX = dict(PARAM_INDEX, **{kind: {s.name: s for s in specs} for kind, specs in SIM_SPECS.items()})

#: Node name -> kind of :data:`INDEX`: the sections of a parameter file this package validates.
NODE_KINDS = {'wrench_distributor': 'distributor', 'wrench_analyzer': 'analyzer',
              'object_sim': 'object_sim', 'object_controller': 'object_controller',
              'baseline_distributor': 'baseline_distributor'}


# -- value checks ------------------------------------------------------------------------
def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def check_param_value(spec: ParamSpec, value: Any) -> Any:
    """Check one value against its spec and return it normalised.

    :param spec: the parameter spec.
    :param value: the value (from YAML or a ROS parameter).
    :return: the value as the declared Python type (float for doubles, list for arrays).
    :raises ConfigError: naming the parameter and its accepted values.
    """
    def fail(why: str) -> ConfigError:
        return ConfigError(f"parameter '{spec.name}': {why}; accepted: "
                           f'{spec.constraint_text()}')

    if spec.type.endswith('_array'):
        return _check_array(spec, value, fail)
    return _check_scalar(spec, value, fail)


def _check_scalar(spec: ParamSpec, value: Any, fail) -> Any:
    """Check a string, bool, double or integer value (see :func:`check_param_value`)."""
    t = spec.type
    if t == STRING:
        return _check_string(spec, value, fail, 'a string')
    if t == BOOL:
        if not isinstance(value, bool):
            raise fail(f'expected true or false, got {value!r}')
        return value
    if t in (DOUBLE, INTEGER):
        if t == INTEGER and (isinstance(value, bool) or not isinstance(value, int)):
            raise fail(f'expected an integer, got {value!r}')
        if not _finite(value):
            raise fail(f'expected a finite number, got {value!r}')
        v = float(value) if t == DOUBLE else int(value)
        if spec.minimum is not None and (v < spec.minimum or (spec.minimum_excluded
                                                              and v == spec.minimum)):
            raise fail(f'{v} is too small')
        if spec.maximum is not None and v > spec.maximum:
            raise fail(f'{v} is too large')
        if spec.accepted is not None and v not in spec.accepted:
            raise fail(f'{v} is not accepted')
        return v
    raise fail(f'unknown type {t}')  # pragma: no cover


def _check_string(spec: ParamSpec, value: Any, fail, expected: str) -> str:
    """Check a string, or one entry of a string array, against the accepted values."""
    if not isinstance(value, str):
        raise fail(f'expected {expected}, got {value!r}')
    if spec.accepted is not None and value not in spec.accepted:
        raise fail(f'{value!r} is not accepted')
    return value


def _check_array(spec: ParamSpec, value: Any, fail) -> list:
    """Check an array value (see :func:`check_param_value`)."""
    t = spec.type
    if isinstance(value, (str, bytes)):
        raise fail(f'expected a list, got {value!r}')
    if not isinstance(value, (list, tuple)):
        try:
            value = list(value)  # numpy arrays, array.array from rclpy
        except TypeError:
            raise fail(f'expected a list, got {value!r}') from None
    out = list(value)
    if t == STRING_ARRAY:
        return [_check_string(spec, v, fail, 'strings') for v in out]
    if t == DOUBLE_ARRAY:
        res = []
        for v in out:
            if not _finite(v) and not (hasattr(v, '__float__') and math.isfinite(float(v))):
                raise fail(f'expected finite numbers, got {v!r}')
            res.append(float(v))
        _check_entries(spec, res, fail)
        return res
    if t == INTEGER_ARRAY:
        res = []
        for v in out:
            if isinstance(v, bool) or not (isinstance(v, int) or hasattr(v, '__index__')):
                raise fail(f'expected integers, got {v!r}')
            res.append(int(v))
        return res
    raise fail(f'unknown type {t}')  # pragma: no cover


def _check_entries(spec: ParamSpec, values: list, fail) -> None:
    """Refuse an entry of a double array beyond the spec's bounds (its physical range)."""
    for i, v in enumerate(values):
        low = spec.minimum is not None and (v < spec.minimum or (spec.minimum_excluded and v == spec.minimum))
        if low or (spec.maximum is not None and v > spec.maximum):
            bound = (f'{">" if spec.minimum_excluded else ">="} {spec.minimum:g}' if low
                     else f'<= {spec.maximum:g}')
            raise fail(f'entry {i} ({v:g}) is out of its bounds ({bound})')


def parse_handles(entries: Sequence[str], parameter: str = 'internal_load_handles') -> dict:
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
        depth, token, tokens = 0, '', []
        for ch in rest:  # split on commas outside parentheses
            depth += (ch == '(') - (ch == ')')
            if ch == ',' and depth == 0:
                tokens.append(token)
                token = ''
            else:
                token += ch
        tokens.append(token)
        out.append((time, parse_handles([t for t in tokens if t.strip()],
                                        'internal_load_schedule')))
    return sorted(out, key=lambda x: x[0])


def format_schedule(schedule: Iterable[tuple]) -> list:
    """Write ``(time, {name: value})`` pairs as ``internal_load_schedule`` entries.

    The inverse of :func:`parse_schedule`, exactly (each number as its ``repr``).

    :param schedule: ``(time, {handle name: value})`` pairs.
    :return: ``"<time>: name=value, ..."`` strings.
    """
    return [f'{float(when)!r}: ' + ', '.join(f'{name}={float(value)!r}' for name, value in handles.items())
            for when, handles in schedule]


def _per_effector(values: dict, name: str, n: int, width: int, allow_empty: bool = True,
                  spec: Optional[ParamSpec] = None) -> None:
    v = values[name]
    if allow_empty and len(v) == 0:
        return
    if len(v) != n * width:
        what = f'{width} per effector' if width > 1 else 'one per effector'
        raise ConfigError(
            f"parameter '{name}': has {len(v)} entries, expected {n * width} ({what}, "
            f'{n} effectors)' + ('' if not allow_empty else ' or none')
            + (f'; accepted: {spec.constraint_text()}' if spec else ''))


def validate_params(kind: str, values: Mapping[str, Any], *, strict_unknown: bool = True,
                    fill_defaults: bool = True) -> dict:
    """Validate a full parameter set of one node (types, ranges, cross-checks).

    :param kind: ``'distributor'``, ``'analyzer'``, or a simulator node (``'object_sim'``,
        ``'object_controller'``, ``'baseline_distributor'``).
    :param values: parameter name -> value (missing ones take defaults when
        ``fill_defaults``).
    :param strict_unknown: raise on names the node does not declare.
    :param fill_defaults: add defaults for missing parameters.
    :return: normalised dict of every parameter.
    :raises ConfigError: with a message naming the parameter and the accepted values.
    """
    index = INDEX[kind]
    unknown = unknown_names(kind, values)
    if unknown and strict_unknown:
        raise ConfigError(unknown_message(kind, unknown))
    out = {}
    for name, spec in index.items():
        if name in values:
            out[name] = check_param_value(spec, values[name])
        elif fill_defaults:
            out[name] = list(spec.default) if isinstance(spec.default, list) else spec.default
    _cross_check(kind, out)
    return out


def unknown_names(kind: str, names: Sequence[str]) -> list:
    """Names a node of this kind does not declare (rclpy's own and ``qos_overrides.*`` known).

    :param kind: ``'distributor'``, ``'analyzer'`` or a simulator node.
    :param names: the parameter names given to it.
    :return: the unknown ones, sorted.
    """
    index = INDEX[kind]
    return sorted(str(k) for k in names if k not in index and k not in BUILTIN_PARAMS
                  and not str(k).startswith('qos_overrides.'))


def did_you_mean(kind: str, name: str) -> str:
    """Return the declared names closest to a misspelt one, as text (difflib).

    :param kind: the node kind.
    :param name: the unknown name.
    :return: ``did you mean 'tool_masses'?`` or a pointer to the list of names.
    """
    import difflib
    close = difflib.get_close_matches(str(name), list(INDEX[kind]), n=3, cutoff=0.6)
    if close:
        return 'did you mean ' + ' or '.join(f"'{c}'" for c in close) + '?'
    return 'no declared name is close (every name: docs/parameters.md)'


def unknown_message(kind: str, unknown: Sequence[str]) -> str:
    """One message for the unknown names of a node, each with its nearest declared names.

    :param kind: the node kind.
    :param unknown: the unknown names.
    :return: the message.
    """
    return (f'unknown parameter(s) for the {kind}: '
            + '; '.join(f"'{u}' ({did_you_mean(kind, u)})" for u in unknown))


def _cross_check(kind: str, v: dict) -> None:
    errors = cross_check_errors(kind, v)
    if errors:
        raise errors[0]


def cross_check_errors(kind: str, v: dict) -> list:
    """Every cross-check of a node's values that fails, one :class:`ConfigError` each.

    Each group of checks (frames and effectors, contacts, the node's own) stops at its first
    error; the groups run independently, so one run reports an error of each.

    :param kind: the node kind.
    :param v: the node's values, each already valid on its own (defaults filled in).
    :return: the errors (empty: the values pass).
    """
    errors = []
    for check in (_check_frames_and_effectors,) + _CHECKS[kind]:
        try:
            check(v, INDEX[kind])
        except ConfigError as e:
            errors.append(e)
            if check is _check_frames_and_effectors:
                break  # the per-effector checks need the effectors
    return errors


def _check_frames_and_effectors(v: dict, idx: dict) -> None:
    for frame in ('object_frame', 'world_frame'):
        if frame in v and not v[frame]:
            raise ConfigError(f"parameter '{frame}': must not be empty; accepted: a frame id")
    if 'effectors' in v:
        effs = v['effectors']
        if len(effs) < 2:
            raise ConfigError(f"parameter 'effectors': required, got {effs!r}; accepted: "
                              f'{idx["effectors"].constraint_text()}')
        if any(not e for e in effs) or len(set(effs)) != len(effs):
            raise ConfigError(f"parameter 'effectors': names must be non-empty and unique, got "
                              f'{effs!r}; accepted: {idx["effectors"].constraint_text()}')


def _check_contacts(v: dict, idx: dict) -> None:
    """Cross-checks shared by both nodes: per-effector widths, friction."""
    effs = v['effectors']
    n = len(effs)
    _per_effector(v, 'contact_types', n, 1, spec=idx['contact_types'])
    _per_effector(v, 'contact_positions', n, 3, allow_empty=v['contact_source'] != 'static',
                  spec=idx['contact_positions'])
    _per_effector(v, 'contact_orientations', n, 4, spec=idx['contact_orientations'])
    _per_effector(v, 'contact_frames', n, 1, allow_empty=v['contact_source'] != 'tf',
                  spec=idx['contact_frames'])
    _per_effector(v, 'virtual_mass_values', n, 1,
                  allow_empty=v['virtual_masses'] != 'explicit',
                  spec=idx['virtual_mass_values'])
    _per_effector(v, 'torque_weights', n, 1, spec=idx['torque_weights'])
    _check_friction(v, n, idx)


def _check_object(v: dict, idx: dict) -> None:
    """Cross-checks shared by both nodes: the object, the basis axis, contact orientations."""
    _fixed_widths(v, idx, (('object_com', 3), ('basis_reference_axis', 3)))
    if not any(abs(x) > 0 for x in v['basis_reference_axis']):
        raise ConfigError("parameter 'basis_reference_axis': must not be zero; accepted: "
                          '3 finite numbers, not all zero')
    if v['object_inertia']:
        _check_inertia(v, idx)
    if any(w < 0 for w in v['torque_weights']):
        raise ConfigError("parameter 'torque_weights': must be >= 0")
    _check_quaternions(v, idx, 'contact_orientations')


def _check_quaternions(v: dict, idx: dict, name: str) -> None:
    """Refuse a quaternion parameter holding one that names no rotation (zero).

    The check is the core's one (:func:`~wrench_distribution.core.spatial.unusable_quaternions`).

    :param v: the parameters.
    :param idx: their specs by name.
    :param name: a parameter of quaternions ``[qx, qy, qz, qw, ...]``, one or one per effector.
    :raises ConfigError: naming the parameter (and the effector) and the accepted values
    """
    values = list(v[name])
    quaternions = np.reshape(np.asarray(values[:len(values) // 4 * 4], float), (-1, 4))
    bad = np.flatnonzero(unusable_quaternions(quaternions))
    if len(bad):
        i = int(bad[0])
        of = '' if name == 'initial_orientation' else f" of '{v['effectors'][i]}'"
        accepted = idx[name].constraint_text()
        accepted += '' if 'not all zero' in accepted else ', not all zero'
        raise ConfigError(f"parameter '{name}': quaternion{of} is zero; accepted: {accepted}")


def _zero_group(values: Sequence[float], width: int) -> Optional[int]:
    """Return the index of the first group of ``width`` numbers whose norm is zero, or None."""
    for i in range(0, len(values), width):
        if math.sqrt(sum(x * x for x in values[i:i + width])) < 1e-9:
            return i // width
    return None


def _fixed_widths(v: dict, idx: dict, widths: Sequence[tuple]) -> None:
    """Check arrays of a fixed number of entries: ``(name, width)`` pairs."""
    for name, width in widths:
        if len(v[name]) != width:
            raise ConfigError(f"parameter '{name}': expected {width} numbers, got {v[name]!r}; "
                              f'accepted: {idx[name].constraint_text()}')


def _check_tilts(v: dict, idx: dict, name: str, after: float = 0.0) -> None:
    """Check a tilt sequence: 5 numbers per tilt, durations > 0, in time order from ``after``."""
    values = v[name]
    if len(values) % 5:
        raise ConfigError(f"parameter '{name}': expected 5 numbers per tilt, got {len(values)}; "
                          f'accepted: {idx[name].constraint_text()}')
    end = after
    for k in range(0, len(values), 5):
        start, duration = values[k], values[k + 1]
        if duration <= 0 or start < end - 1e-9:
            raise ConfigError(f"parameter '{name}': tilt {k // 5} starts at {start:g} s for "
                              f'{duration:g} s, before {end:g} s or with a duration <= 0; '
                              f'accepted: {idx[name].constraint_text()}')
        end = start + duration


def _check_inertia(v: dict, idx: dict) -> None:
    """Check ``object_inertia`` in the forms the core reads (``core.contacts.inertia_matrix``)."""
    from wrench_distribution.core.contacts import inertia_matrix
    from wrench_distribution.core.errors import InvalidInputError
    try:
        inertia_matrix(v['object_inertia'])
    except InvalidInputError as e:
        raise ConfigError(f"parameter 'object_inertia': {e}, got {v['object_inertia']!r}; "
                          f"accepted: {idx['object_inertia'].constraint_text()}") from None


def _check_distributor(v: dict, idx: dict) -> None:
    """Distributor cross-checks: command topics, internal load, limits."""
    n = len(v['effectors'])
    _per_effector(v, 'command_topics', n, 1, spec=idx['command_topics'])
    parse_handles(v['internal_load_handles'])
    if v['internal_load'] and v['internal_load_handles']:
        raise ConfigError("parameters 'internal_load' and 'internal_load_handles': set "
                          'at most one of them')
    _check_limits(v, n)
    for name in ('feedback_kp', 'feedback_ki'):
        gains = v[name]
        if not gains or not all(math.isfinite(g) and g >= 0 for g in gains):
            raise ConfigError(f"parameter '{name}': got {gains!r}; accepted: "
                              f'{idx[name].constraint_text()}')
    _check_friction_feedback(v)
    _check_holding(v, idx)


def _check_holding(v: dict, idx: dict) -> None:
    """``hold_object_weight``: a mass to hold, gravity, and its frame's orientation from tf."""
    _fixed_widths(v, idx, (('gravity', 3),))
    if not v['hold_object_weight']:
        return
    if v['object_mass'] <= 0.0:
        raise ConfigError("parameter 'hold_object_weight': true needs object_mass > 0 (got "
                          f"{v['object_mass']:g}); accepted: false, or true with the mass")
    if v['gravity_frame'] and v['contact_source'] != 'tf':
        raise ConfigError(f"parameter 'gravity_frame': '{v['gravity_frame']}' needs the object's "
                          'orientation from tf (contact_source tf); accepted: empty (gravity '
                          'in the object frame) or contact_source tf')


def _check_friction_feedback(v: dict) -> None:
    """Check that the friction feedback has auto mode and leaves it a utilisation to aim at."""
    from ..core.friction import UTILISATION_FLOOR
    if not v['friction_feedback']:
        return  # the limit is checked when the loop is switched on (the law clamps anyway)
    if v['friction_mode'] != 'auto':
        raise ConfigError(f"parameter 'friction_feedback': true needs friction_mode auto "
                          f"(friction_mode is {v['friction_mode']!r}: nothing to tighten); "
                          'accepted: false, or true with friction_mode auto')
    top = 1.0 - UTILISATION_FLOOR
    if v['friction_margin'] + v['friction_feedback_limit'] > top + 1e-12:
        raise ConfigError(f"parameter 'friction_feedback_limit': got "
                          f"{v['friction_feedback_limit']:g} with friction_margin "
                          f"{v['friction_margin']:g}; accepted: friction_margin + "
                          f'friction_feedback_limit <= {top:g}')


def _check_analyzer(v: dict, idx: dict) -> None:
    """Analyzer cross-checks: per-effector topic, frame and bias arrays."""
    n = len(v['effectors'])
    for name, width in (('ft_topics', 1), ('sensor_frames', 1),
                        ('manipulating_topics', 1), ('constraint_topics', 1),
                        ('internal_topics', 1), ('invariant_topics', 1), ('ft_frames', 1),
                        ('sensor_biases', 6)):
        _per_effector(v, name, n, width, spec=idx[name])


def _check_gravity(v: dict, idx: dict) -> None:
    """Analyzer cross-check: the gravity vector."""
    _fixed_widths(v, idx, (('gravity', 3),))


def _check_sensors(v: dict, idx: dict) -> None:
    """Sensor models of the analyzer and the simulator: widths, signs, tool masses."""
    n = len(v['effectors'])
    for name, width in (('sensor_positions', 3), ('sensor_orientations', 4),
                        ('sensor_signs', 1), ('tool_masses', 1), ('tool_coms', 3)):
        _per_effector(v, name, n, width, spec=idx[name])
    if any(s not in (1, -1) for s in v['sensor_signs']):
        raise ConfigError(f"parameter 'sensor_signs': got {v['sensor_signs']!r}; "
                          'accepted: +1 or -1 per effector')
    if any(m < 0 for m in v['tool_masses']):
        raise ConfigError(f"parameter 'tool_masses': must be >= 0, got {v['tool_masses']!r}; "
                          f"accepted: {idx['tool_masses'].constraint_text()}")
    _check_quaternions(v, idx, 'sensor_orientations')


def _check_sim(v: dict, idx: dict) -> None:
    """``object_sim`` cross-checks: per-effector arrays, object, initial pose, sensors."""
    n = len(v['effectors'])
    for name, width in (('contact_types', 1), ('contact_positions', 3),
                        ('contact_orientations', 4), ('sensor_biases', 6),
                        ('admittance_cog_forces', 1), ('admittance_cog_positions', 3),
                        ('contact_position_errors', 3), ('contact_orientation_errors', 3)):
        _per_effector(v, name, n, width, spec=idx[name])
    _check_admittance(v, idx)
    _check_free_tilts(v, idx)
    _check_quaternions(v, idx, 'contact_orientations')
    _check_friction(v, n, idx)
    _fixed_widths(v, idx, (('object_com', 3), ('initial_position', 3), ('initial_orientation', 4),
                           ('gravity', 3), ('object_com_error', 3)))
    _check_quaternions(v, idx, 'initial_orientation')
    _check_inertia(v, idx)
    _check_sensors(v, idx)


def _check_free_tilts(v: dict, idx: dict) -> None:
    """``object_sim`` tilts: the arms' after their move, the free ones back level by the grasp."""
    _check_tilts(v, idx, 'arm_tilts', v['arm_move_start'] + v['arm_move_duration'])
    _check_tilts(v, idx, 'free_tilts')
    free = v['free_tilts']
    if free and (any(abs(x) > 1e-12 for x in free[-3:])
                 or free[-5] + free[-4] > v['grasp_time'] + 1e-9):
        raise ConfigError("parameter 'free_tilts': the last tilt must turn back to [0, 0, 0] "
                          f"and end by grasp_time ({v['grasp_time']:g} s), got {free[-5:]!r}; "
                          f"accepted: {idx['free_tilts'].constraint_text()}")


def _check_admittance(v: dict, idx: dict) -> None:
    """``object_sim`` admittance laws: six numbers per law, masses > 0 (the models check the rest)."""
    _fixed_widths(v, idx, (('admittance_mass', 6), ('admittance_damping_ratio', 6),
                           ('admittance_stiffness', 6), ('arm_move_offset', 3),
                           ('arm_move_rotation', 3)))
    if any(m <= 0 for m in v['admittance_mass']):
        raise ConfigError(f"parameter 'admittance_mass': must be > 0, got {v['admittance_mass']!r}; "
                          f"accepted: {idx['admittance_mass'].constraint_text()}, each > 0")
    for name in ('admittance_stiffness', 'admittance_damping_ratio', 'admittance_cog_forces'):
        if any(x < 0 for x in v[name]):
            raise ConfigError(f"parameter '{name}': must be >= 0, got {v[name]!r}; "
                              f'accepted: {idx[name].constraint_text()}, each >= 0')
    _check_joint_arms(v, idx)


def _check_joint_arms(v: dict, idx: dict) -> None:
    """``object_sim`` arms with joints: a robot, a base position and orientation per arm."""
    n = len(v['effectors'])
    for name, width in (('arm_robots', 1), ('arm_base_positions', 3),
                        ('arm_base_orientations', 4)):
        _per_effector(v, name, n, width, spec=idx[name])
    unknown = [r for r in v['arm_robots'] if r not in ARM_ROBOTS]
    if unknown:
        raise ConfigError(f"parameter 'arm_robots': unknown {unknown!r}; accepted: "
                          f"{idx['arm_robots'].constraint_text()}")
    _check_quaternions(v, idx, 'arm_base_orientations')


def _check_controller(v: dict, idx: dict) -> None:
    """``object_controller`` cross-checks: object, move, schedule."""
    _fixed_widths(v, idx, (('object_com', 3), ('gravity', 3), ('move_offset', 3),
                           ('move_rotation', 3)))
    _check_tilts(v, idx, 'tilts', v['move_start'] + v['move_duration'])
    _check_inertia(v, idx)
    parse_schedule(v['internal_load_schedule'])


def _check_baseline(v: dict, idx: dict) -> None:
    """``baseline_distributor`` cross-checks: contact types and centre of mass."""
    _per_effector(v, 'contact_types', len(v['effectors']), 1, spec=idx['contact_types'])
    _fixed_widths(v, idx, (('object_com', 3),))


#: The cross-checks of each node kind, after :func:`_check_frames_and_effectors`.
_CHECKS = {'distributor': (_check_contacts, _check_object, _check_distributor),
           'analyzer': (_check_contacts, _check_object, _check_analyzer, _check_sensors,
                        _check_gravity, check_ranges),
           'object_sim': (_check_sim,), 'object_controller': (_check_controller,),
           'baseline_distributor': (_check_baseline,)}


def _check_limits(v: dict, n: int) -> None:
    for name in ('force_limits', 'torque_limits'):
        vals = v[name]
        if len(vals) not in (1, n):
            raise ConfigError(f"parameter '{name}': has {len(vals)} entries, expected 1 (every "
                              f'effector) or {n} (one per effector)')
        bad = [x for x in vals if not 0.0 < x <= LIMIT_CEILING]
        if bad:
            raise ConfigError(f"parameter '{name}': {bad[0]!r} is out of range; accepted: "
                              f'numbers > 0 and <= {LIMIT_CEILING:g}')
    lim = v['internal_load_limit']
    big = [x for x in v['internal_load'] if abs(x) > lim]
    big += [x for x in parse_handles(v['internal_load_handles']).values() if abs(x) > lim]
    if big:
        raise ConfigError(f"parameter 'internal_load': {big[0]:g} is over "
                          f'internal_load_limit={lim:g}; accepted: |value| <= the limit')


def per_effector_limits(values: Sequence[float], n: int) -> list:
    """Expand a limit given once for every effector, or once per effector.

    :param values: 1 or n limits.
    :param n: number of effectors.
    :return: n limits.
    """
    return list(values) * n if len(values) == 1 else list(values)


def _check_friction(v: dict, n: int, idx: dict) -> None:
    _per_effector(v, 'friction_coefficients', n, 1, spec=idx['friction_coefficients'])
    _per_effector(v, 'contact_normals', n, 3, spec=idx['contact_normals'])
    if any(not (_finite(m) and m >= 0) for m in v['friction_coefficients']):
        raise ConfigError(f"parameter 'friction_coefficients': got {v['friction_coefficients']!r}; "
                          'accepted: one finite number >= 0 per effector (0: none)')
    i = _zero_group(v['contact_normals'], 3)
    if i is not None:
        raise ConfigError(f"parameter 'contact_normals': normal of '{v['effectors'][i]}' "
                          'is zero; accepted: 3 numbers per effector, not all zero')


def ros_yaml_type_problems(kind: str, values: Mapping[str, Any]) -> list:
    """Values not written in the form rcl types them as declared (the shipped files' style).

    rcl types a value by its YAML form: ``0`` is an integer (the nodes take it for a double,
    other ROS tools such as ``ros2 param load`` do not), a list mixing integers and doubles
    is refused outright, an empty list has no type. :mod:`.judge` (check-config) reports
    the same with the fix, and says which of them stop a node.

    :param kind: ``'distributor'``, ``'analyzer'`` or a simulator node.
    :param values: flat parameters as read from YAML.
    :return: list of messages (empty when the file is fine for ROS).
    """
    index = INDEX[kind]
    out = []
    for name, value in values.items():
        spec = index.get(name)
        if spec is None:
            continue
        if spec.type == DOUBLE and not isinstance(value, float):
            out.append(f"'{name}': write {value!r} as a float (e.g. {value}.0): rcl types it "
                       'as another type')
        if spec.type.endswith('_array'):
            if isinstance(value, (list, tuple)) and not value:
                out.append(f"'{name}': empty arrays cannot be parsed by rcl; omit the "
                           'parameter for its default')
            elif spec.type == DOUBLE_ARRAY and isinstance(value, (list, tuple)) and not all(
                    isinstance(v, float) for v in value):
                out.append(f"'{name}': write every entry as a float (1.0, not 1; rcl refuses a "
                           'list that mixes integers and doubles)')
            elif spec.type == INTEGER_ARRAY and isinstance(value, (list, tuple)) and not all(
                    isinstance(v, int) and not isinstance(v, bool) for v in value):
                out.append(f"'{name}': write every entry as an integer")
    return out


def contact_friction_fields(v: dict) -> list:
    """Build the per-effector ``Contact`` keyword arguments of the friction parameters.

    From ``friction_coefficients`` and ``contact_normals`` (0 or empty: no friction; empty
    normals: +z).

    :param v: validated parameters.
    :return: one ``{'friction': mu or None, 'normal': (x, y, z)}`` per effector.
    """
    n = len(v['effectors'])
    mu = list(v.get('friction_coefficients') or [0.0] * n)
    flat = v.get('contact_normals') or [0.0, 0.0, 1.0] * n
    normals = [tuple(flat[i:i + 3]) for i in range(0, len(flat), 3)]
    return [{'friction': float(m) if m > 0 else None, 'normal': tuple(nv)}
            for m, nv in zip(mu, normals)]
