"""Cross-checks of a node's whole parameter set, per node kind (no ROS import).

Each value has already passed its own check (:mod:`.values`); here the values are judged
together: per-effector widths against ``effectors``, the object, friction, limits, the
simulator's tilts and arms. One function per group of checks, and :data:`CHECKS` lists the
groups of each node kind.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from wrench_distribution.core.spatial import unusable_quaternions

from .arrays import check_width, first_zero_group
from .calibration import check_ranges
from .handles import parse_schedule, parse_weights_schedule
from .index import INDEX
from .schema import ConfigError, LIMIT_CEILING
from .sensor_faults import parse_faults
from .sim import ARM_ROBOTS
from .values import is_finite_number


def cross_check_errors(kind: str, v: dict) -> list:
    """Every cross-check of a node's values that fails, one :class:`ConfigError` each.

    Each group of checks (frames and effectors, contacts, the node's own) stops at its first
    error; the groups run independently, so one run reports an error of each.

    :param kind: the node kind.
    :param v: the node's values, each already valid on its own (defaults filled in).
    :return: the errors (empty: the values pass).
    """
    errors = []
    for check in (_check_frames_and_effectors,) + CHECKS[kind]:
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
    _width(v, idx, 'contact_types', n, 1)
    _width(v, idx, 'contact_positions', n, 3, allow_empty=v['contact_source'] != 'static')
    _width(v, idx, 'contact_orientations', n, 4)
    _width(v, idx, 'contact_frames', n, 1, allow_empty=v['contact_source'] != 'tf')
    _width(v, idx, 'virtual_mass_values', n, 1, allow_empty=v['virtual_masses'] != 'explicit')
    _width(v, idx, 'torque_weights', n, 1)
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


def _width(v: dict, idx: dict, name: str, n: int, width: int, allow_empty: bool = True) -> None:
    """Check a per-effector array of ``v`` (:func:`~.arrays.check_width`)."""
    check_width(v[name], name, n, width, allow_empty, idx[name])


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
    _width(v, idx, 'command_topics', n, 1)
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
    _check_contact_weights(v, idx, n)


def _check_contact_weights(v: dict, idx: dict, n: int) -> None:
    """``contact_weights``: one per effector (or none), not every contact released."""
    _width(v, idx, 'contact_weights', n, 1)
    if v['contact_weights'] and not any(w > 0.0 for w in v['contact_weights']):
        raise ConfigError("parameter 'contact_weights': every weight is 0, no contact would "
                          f"carry the object; accepted: {idx['contact_weights'].constraint_text()}")


def _check_holding(v: dict, idx: dict) -> None:
    """``hold_object_weight`` and ``on_timeout: hold_object_weight``: a mass, gravity, its frame from tf."""
    _fixed_widths(v, idx, (('gravity', 3),))
    holders = [name for name, on in (('hold_object_weight', v['hold_object_weight']),
                                     ('on_timeout', v['on_timeout'] == 'hold_object_weight')) if on]
    if not holders:
        return
    if v['object_mass'] <= 0.0:
        value, other = (('true', 'false') if holders[0] == 'hold_object_weight'
                        else ('hold_object_weight', 'zero or stop'))
        raise ConfigError(f"parameter '{holders[0]}': {value} needs object_mass > 0 (got "
                          f"{v['object_mass']:g}); accepted: {other}, or {value} with the mass")
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
        _width(v, idx, name, n, width)


def _check_health(v: dict, idx: dict) -> None:
    """Analyzer cross-check: the sensors' ranges and the set's consistency tolerance."""
    n, ranges = len(v['effectors']), v['sensor_ranges']
    if len(ranges) not in (0, 6, 6 * n):
        raise ConfigError(f"parameter 'sensor_ranges': got {ranges!r} ({len(ranges)} numbers, "
                          f"{n} effectors); accepted: {idx['sensor_ranges'].constraint_text()}")
    tolerance = v['consistency_tolerance']
    if len(tolerance) != 2 or any(t <= 0 for t in tolerance):
        raise ConfigError(f"parameter 'consistency_tolerance': got {tolerance!r}; accepted: "
                          f"{idx['consistency_tolerance'].constraint_text()}")


def _check_gravity(v: dict, idx: dict) -> None:
    """Analyzer cross-check: the gravity vector."""
    _fixed_widths(v, idx, (('gravity', 3),))


def _check_sensors(v: dict, idx: dict) -> None:
    """Sensor models of the analyzer and the simulator: widths, signs, tool masses."""
    n = len(v['effectors'])
    for name, width in (('sensor_positions', 3), ('sensor_orientations', 4),
                        ('sensor_signs', 1), ('tool_masses', 1), ('tool_coms', 3)):
        _width(v, idx, name, n, width)
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
        _width(v, idx, name, n, width)
    _check_admittance(v, idx)
    _check_free_tilts(v, idx)
    _check_quaternions(v, idx, 'contact_orientations')
    _check_friction(v, n, idx)
    _fixed_widths(v, idx, (('object_com', 3), ('initial_position', 3), ('initial_orientation', 4),
                           ('gravity', 3), ('object_com_error', 3)))
    _check_quaternions(v, idx, 'initial_orientation')
    _check_inertia(v, idx)
    _check_sensors(v, idx)
    parse_faults(v['sensor_faults'], v['effectors'])


def _check_free_tilts(v: dict, idx: dict) -> None:
    """``object_sim`` tilts: the arms' after their move, the free ones back level by the grasp."""
    _check_tilts(v, idx, 'arm_tilts', v['arm_move_start'] + v['arm_move_duration'])
    _check_tilts(v, idx, 'free_tilts')
    _check_tilts(v, idx, 'contact_shifts')
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
        _width(v, idx, name, n, width)
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
    parse_weights_schedule(v['contact_weights_schedule'])
    _check_inertia(v, idx)
    parse_schedule(v['internal_load_schedule'])


def _check_baseline(v: dict, idx: dict) -> None:
    """``baseline_distributor`` cross-checks: contact types and centre of mass."""
    _width(v, idx, 'contact_types', len(v['effectors']), 1)
    _fixed_widths(v, idx, (('object_com', 3),))


#: The cross-checks of each node kind, after :func:`_check_frames_and_effectors`.
CHECKS = {'distributor': (_check_contacts, _check_object, _check_distributor),
          'analyzer': (_check_contacts, _check_object, _check_analyzer, _check_sensors,
                       _check_gravity, _check_health, check_ranges),
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
    big = [x for x in v['internal_load'] if abs(x) > lim]  # handles: when they are parsed
    if big:
        raise ConfigError(f"parameter 'internal_load': {big[0]:g} is over "
                          f'internal_load_limit={lim:g}; accepted: |value| <= the limit')


def _check_friction(v: dict, n: int, idx: dict) -> None:
    _width(v, idx, 'friction_coefficients', n, 1)
    _width(v, idx, 'contact_normals', n, 3)
    if any(not (is_finite_number(m) and m >= 0) for m in v['friction_coefficients']):
        raise ConfigError(f"parameter 'friction_coefficients': got {v['friction_coefficients']!r}; "
                          'accepted: one finite number >= 0 per effector (0: none)')
    i = first_zero_group(v['contact_normals'], 3)
    if i is not None:
        raise ConfigError(f"parameter 'contact_normals': normal of '{v['effectors'][i]}' "
                          'is zero; accepted: 3 numbers per effector, not all zero')
