"""Parameter schema and validation for the two ROS nodes (pure Python, no ROS import).

One schema serves three users: the nodes declare their ROS parameters from it, the
YAML configs in ``config/`` are checked against it, and scripts without ROS (the bag
tools) read a node's YAML section into validated config objects with
:func:`load_analyzer_config` / :func:`load_distributor_config`.

Per-effector settings are flat arrays aligned with the ``effectors`` parameter
(``contact_positions`` holds 3 numbers per effector, ``contact_orientations`` 4, ...),
because ROS parameters cannot hold lists of dicts. An empty array means "default for
every effector".
"""
from __future__ import annotations

from dataclasses import dataclass, field
import math
import os
from typing import Any, Mapping, Optional, Sequence

__all__ = [
    'ParamSpec', 'ConfigError', 'DISTRIBUTOR_PARAMS', 'ANALYZER_PARAMS',
    'DistributorConfig', 'AnalyzerConfig', 'load_distributor_config',
    'load_analyzer_config', 'read_ros_params_yaml', 'validate_params',
    'check_param_value',
    'parse_handles',
]

STRING = 'string'
DOUBLE = 'double'
INTEGER = 'integer'
BOOL = 'bool'
STRING_ARRAY = 'string_array'
DOUBLE_ARRAY = 'double_array'
INTEGER_ARRAY = 'integer_array'


class ConfigError(ValueError):
    """A parameter value or a config file is invalid; the message names the parameter."""


@dataclass(frozen=True)
class ParamSpec:
    """One ROS parameter: name, type, default and what it accepts.

    :param name: parameter name.
    :param type: one of ``string``, ``double``, ``integer``, ``bool``,
        ``string_array``, ``double_array``, ``integer_array``.
    :param default: default value (also the value the node declares).
    :param description: one-line description (ParameterDescriptor.description).
    :param accepted: accepted values (for strings and string arrays), or None.
    :param minimum: inclusive lower bound for numbers, or None.
    :param maximum: inclusive upper bound for numbers, or None.
    :param read_only: True when it cannot change after start-up.
    :param constraints: human-readable accepted values (additional_constraints).
    """

    name: str
    type: str  # noqa: A003 (field name of the schema, read by the README generator)
    default: Any
    description: str
    accepted: Optional[tuple] = None
    minimum: Optional[float] = None
    maximum: Optional[float] = None
    read_only: bool = True
    constraints: str = ''

    def constraint_text(self) -> str:
        """Return the accepted values as text.

        :return: e.g. ``one of: rigid, point`` or ``>= 0.0``.
        """
        if self.constraints:
            return self.constraints
        if self.accepted is not None:
            return 'one of: ' + ', '.join(str(a) for a in self.accepted)
        if self.minimum is not None and self.maximum is not None:
            return f'between {self.minimum} and {self.maximum}'
        if self.minimum is not None:
            return f'>= {self.minimum}'
        return 'any ' + self.type.replace('_', ' ')


def _p(name, type_, default, description, **kw) -> ParamSpec:
    return ParamSpec(name, type_, default, description, **kw)


# -- shared between both nodes ---------------------------------------------------------
_COMMON = [
    _p('object_frame', STRING, 'object',
       'Frame of the object (desired wrench, contact poses, CoM are expressed in it).',
       constraints='a non-empty frame id'),
    _p('effectors', STRING_ARRAY, [],
       'Effector names, in the order of contact_poses and of every per-effector array.',
       constraints='at least 2 unique non-empty names (required)'),
    _p('contact_types', STRING_ARRAY, [],
       'Contact type per effector; empty means rigid for all.',
       accepted=('rigid', 'point'),
       constraints='one per effector, each one of: rigid, point (empty: all rigid)'),
    _p('contact_source', STRING, 'topic',
       'Where contact poses come from: topic (PoseArray), static (parameters) or tf.',
       accepted=('topic', 'static', 'tf')),
    _p('contact_poses_topic', STRING, 'contact_poses',
       'PoseArray of contact poses in the object frame (contact_source=topic).',
       constraints='a topic name'),
    _p('contact_positions', DOUBLE_ARRAY, [],
       'Static contact positions in the object frame [x,y,z per effector] (m).',
       constraints='3 numbers per effector (required when contact_source=static)'),
    _p('contact_orientations', DOUBLE_ARRAY, [],
       'Static contact orientations [qx,qy,qz,qw per effector]; empty: identity.',
       constraints='4 numbers per effector, or empty'),
    _p('contact_frames', STRING_ARRAY, [],
       'Contact frame ids per effector (tf lookups, command frame_id); '
       'empty: <effector>_contact.',
       constraints='one frame id per effector, or empty'),
    _p('contact_pose_tolerance', DOUBLE, 1e-6,
       'Contacts that move less than this (m, and rad) reuse the cached distributor.',
       minimum=0.0),
    _p('contact_timeout', DOUBLE, 0.0,
       'Contact poses older than this (s) are stale; 0 disables.', minimum=0.0,
       read_only=False),
    _p('object_com', DOUBLE_ARRAY, [0.0, 0.0, 0.0],
       'Centre of mass of the object in the object frame (m).',
       constraints='3 finite numbers'),
    _p('object_mass', DOUBLE, 0.0,
       'Object mass (kg), informational for the core; 0 means unknown.', minimum=0.0),
    _p('object_inertia', DOUBLE_ARRAY, [],
       'Object inertia about the CoM in object axes (kg m^2): 9 numbers row-major or '
       '[Ixx, Iyy, Izz, Ixy, Ixz, Iyz]; empty: unknown.',
       constraints='9 or 6 finite numbers, or empty'),
    _p('torque_share', DOUBLE, 0.0,
       'Share of the object torque produced by contact torques (paper VI-C).',
       minimum=0.0, maximum=1.0, read_only=False),
    _p('virtual_masses', STRING, 'auto',
       'Virtual masses: auto, reduced (eq. 64), full (eq. 59) or explicit '
       '(virtual_mass_values).', accepted=('auto', 'reduced', 'full', 'explicit')),
    _p('virtual_mass_values', DOUBLE_ARRAY, [],
       'Explicit virtual masses, one per effector (virtual_masses=explicit).',
       constraints='one finite number per effector, or empty'),
    _p('torque_weights', DOUBLE_ARRAY, [],
       'Torque weights per effector; empty: core default.',
       constraints='one finite number >= 0 per effector, or empty'),
    _p('basis_reference_axis', DOUBLE_ARRAY, [0.0, 0.0, 1.0],
       'Reference axis that fixes the internal-load basis orientation.',
       constraints='3 finite numbers, not all zero'),
    _p('friction_coefficients', DOUBLE_ARRAY, [],
       'Coulomb friction coefficient per effector; 0: no friction cone; empty: none.',
       constraints='one finite number >= 0 per effector, or empty'),
    _p('contact_normals', DOUBLE_ARRAY, [],
       'Direction in which each effector pushes on the object, in its contact frame '
       '[x,y,z per effector]; empty: +z for all.',
       constraints='3 numbers per effector, not all zero, or empty'),
    _p('friction_margin', DOUBLE, 0.1,
       'Friction utilisation above 1 - margin is near the limit (WARN); auto mode keeps '
       'every contact at or below it.', minimum=0.0, maximum=0.95),
    _p('diagnostics_period', DOUBLE, 1.0,
       'Period of /diagnostics messages (s).', minimum=0.01),
    _p('input_qos', STRING, 'sensor_data',
       'QoS of the streaming inputs (wrench / F/T topics).',
       accepted=('sensor_data', 'reliable', 'best_effort')),
    _p('output_qos', STRING, 'reliable',
       'QoS of the per-effector outputs.', accepted=('reliable', 'best_effort', 'sensor_data')),
    _p('qos_depth', INTEGER, 10, 'History depth of inputs and outputs.', minimum=1,
       maximum=1000),
    _p('max_future', DOUBLE, 0.1,
       'Input stamps further than this (s) ahead of the node clock are rejected and counted '
       '(cause "future"); 0 disables.', minimum=0.0, read_only=False),
    _p('summary_period', DOUBLE, 10.0,
       'Period (s, steady clock) of the log line that sums up dropped inputs per cause; '
       'nothing is logged while nothing is dropped.', minimum=0.1),
]

#: Largest value any configured limit may take (keeps every product of limits finite).
LIMIT_CEILING = 1e9

DISTRIBUTOR_PARAMS: tuple = tuple(_COMMON + [
    _p('desired_wrench_topic', STRING, 'desired_wrench',
       'Desired object wrench (WrenchStamped, object frame, about the CoM).',
       constraints='a topic name'),
    _p('internal_load_topic', STRING, 'internal_load',
       'Prescribed internal load (Float64MultiArray).', constraints='a topic name'),
    _p('command_topics', STRING_ARRAY, [],
       'Command topic per effector; empty: <effector>/wrench_command.',
       constraints='one topic name per effector, or empty'),
    _p('command_frame', STRING, 'contact',
       'Frame of the commands: contact (contact frame, about the contact point) or '
       'object (object axes, about the contact point).', accepted=('contact', 'object')),
    _p('command_sign', INTEGER, 1,
       '+1: commands are the wrench the effector applies to the object; -1: the reaction '
       '(the wrench the object applies to the effector, what a wrist F/T sensor reads).',
       accepted=(1, -1), constraints='one of: 1, -1'),
    _p('internal_load', DOUBLE_ARRAY, [],
       'Internal load lambda_c in the basis order (see diagnostics); empty: none.',
       read_only=False, constraints='one finite number per basis element, or empty'),
    _p('internal_load_handles', STRING_ARRAY, [],
       'Internal load as physical handles "name=value", e.g. "squeeze(left,right)=20".',
       read_only=False, constraints='entries "basis_name=number"'),
    _p('input_timeout', DOUBLE, 0.5,
       'Desired wrench older than this (s, node clock) triggers on_timeout; 0 disables.',
       minimum=0.0, read_only=False),
    _p('on_timeout', STRING, 'zero',
       'What the watchdog does on input timeout: publish zero wrenches or stop publishing.',
       accepted=('zero', 'stop'), read_only=False),
    _p('watchdog_rate', DOUBLE, 20.0, 'Watchdog check rate (Hz).', minimum=1.0,
       maximum=1000.0),
    _p('friction_mode', STRING, 'check',
       'Friction cones: off, check (diagnostics and markers) or auto (add the internal load '
       'that keeps every contact inside its cone).', accepted=('off', 'check', 'auto')),
    _p('on_friction_infeasible', STRING, 'hold',
       'What auto mode does when no internal load keeps the contacts inside their cones: '
       'hold (republish the last commands that did) or zero (publish zero wrenches).',
       accepted=('hold', 'zero')),
    _p('friction_load_topic', STRING, 'friction/internal_load_added',
       'Internal load added by auto mode (Float64MultiArray, layout label names the basis); '
       'empty: not published.', constraints='a topic name, or empty'),
    _p('publish_markers', BOOL, True, 'Publish RViz markers on ~/markers.', read_only=False),
    _p('marker_scale', DOUBLE, 0.01, 'Marker arrow length per newton (m/N).',
       minimum=0.0, read_only=False),
    _p('markers_period', DOUBLE, 0.1, 'Minimum period between marker messages (s).',
       minimum=0.0),
    _p('force_limits', DOUBLE_ARRAY, [1000.0],
       'Largest force norm of one command (N): one value for every effector, or one per '
       'effector. Never exceeded on a command topic.', read_only=False,
       constraints=f'one or n numbers > 0 and <= {LIMIT_CEILING:g}'),
    _p('torque_limits', DOUBLE_ARRAY, [200.0],
       'Largest torque norm of one command (N m): one value for every effector, or one per '
       'effector. Never exceeded on a command topic.', read_only=False,
       constraints=f'one or n numbers > 0 and <= {LIMIT_CEILING:g}'),
    _p('desired_force_limit', DOUBLE, 2000.0,
       'Largest force norm of desired_wrench (N); beyond it on_limit applies.',
       minimum=1e-9, maximum=LIMIT_CEILING, read_only=False,
       constraints=f'a number > 0 and <= {LIMIT_CEILING:g}'),
    _p('desired_torque_limit', DOUBLE, 400.0,
       'Largest torque norm of desired_wrench (N m); beyond it on_limit applies.',
       minimum=1e-9, maximum=LIMIT_CEILING, read_only=False,
       constraints=f'a number > 0 and <= {LIMIT_CEILING:g}'),
    _p('internal_load_limit', DOUBLE, 1000.0,
       'Largest absolute internal-load coordinate (basis units, N or N m); a larger '
       'prescription (parameter or topic) is refused and the previous one stays.',
       minimum=1e-9, maximum=LIMIT_CEILING, read_only=False,
       constraints=f'a number > 0 and <= {LIMIT_CEILING:g}'),
    _p('on_limit', STRING, 'hold',
       'What a desired wrench or command over its limit does: hold (publish the last valid '
       'commands again), zero (publish zero wrenches) or scale (scale the whole command set '
       'uniformly into the limits). Always an ERROR with the figures.',
       accepted=('hold', 'zero', 'scale'), read_only=False),
])

ANALYZER_PARAMS: tuple = tuple(_COMMON + [
    _p('ft_topics', STRING_ARRAY, [],
       'F/T topic per effector; empty: <effector>/ft_sensor.',
       constraints='one topic name per effector, or empty'),
    _p('sensor_positions', DOUBLE_ARRAY, [],
       'Sensor origin in the contact frame [x,y,z per effector] (m); empty: at the contact.',
       constraints='3 numbers per effector, or empty'),
    _p('sensor_orientations', DOUBLE_ARRAY, [],
       'Sensor orientation in the contact frame [qx,qy,qz,qw per effector]; empty: identity.',
       constraints='4 numbers per effector, or empty'),
    _p('sensor_frames', STRING_ARRAY, [],
       'Sensor frame ids for tf lookups of the sensor pose (contact_source=tf); empty: '
       'static sensor poses.', constraints='one frame id per effector, or empty'),
    _p('sensor_signs', INTEGER_ARRAY, [],
       '+1: sensor reports the wrench applied to the object; -1: the wrench on the sensor.',
       constraints='one of +1, -1 per effector, or empty (all +1)'),
    _p('tool_masses', DOUBLE_ARRAY, [],
       'Mass between sensor and object per effector (kg); empty: 0.',
       constraints='one finite number >= 0 per effector, or empty'),
    _p('tool_coms', DOUBLE_ARRAY, [],
       'Tool centre of mass in the sensor frame [x,y,z per effector] (m); empty: origin.',
       constraints='3 numbers per effector, or empty'),
    _p('gravity', DOUBLE_ARRAY, [0.0, 0.0, -9.81],
       'Gravity vector in the object frame (m/s^2), for tool-mass compensation.',
       constraints='3 finite numbers'),
    _p('sync_tolerance', DOUBLE, 0.005,
       'Largest header-stamp skew between the n F/T messages of one sample (s).',
       minimum=0.0, read_only=False),
    _p('max_age', DOUBLE, 0.5,
       'F/T messages older than this (s, node clock) are stale; 0 disables.',
       minimum=0.0, read_only=False),
    _p('output_frame', STRING, 'contact',
       'Frame of per-effector outputs: contact or object (axes, about the contact point).',
       accepted=('contact', 'object')),
    _p('manipulating_topics', STRING_ARRAY, [],
       'Manipulating-part topic per effector; empty: <effector>/wrench_manipulating.',
       constraints='one topic name per effector, or empty'),
    _p('constraint_topics', STRING_ARRAY, [],
       'Constraint-part topic per effector; empty: <effector>/wrench_constraint.',
       constraints='one topic name per effector, or empty'),
    _p('internal_topics', STRING_ARRAY, [],
       'Internal-load wrench (E lambda of the read-out, applied by the effectors) per effector; '
       'empty: <effector>/wrench_internal.',
       constraints='one topic name per effector, or empty'),
    _p('invariant_topics', STRING_ARRAY, [],
       "Invariant internal load (the paper's eq. 78 state) per effector; empty: "
       '<effector>/wrench_invariant.',
       constraints='one topic name per effector, or empty'),
    _p('internal_load_norm_topic', STRING, 'measured/internal_load_norm',
       'Magnitude of the internal load in newtons (std_msgs/Float64); empty: not published.',
       constraints='a topic name, or empty'),
    _p('invariant_norm_topic', STRING, 'measured/invariant_norm',
       'Magnitude of the invariant internal load in newtons (std_msgs/Float64); empty: not '
       'published.',
       constraints='a topic name, or empty'),
    _p('object_wrench_topic', STRING, 'object_wrench',
       'Resultant on the object (object frame, about the CoM).', constraints='a topic name'),
    _p('ft_frames', STRING_ARRAY, [],
       'Expected header.frame_id of each F/T topic; a reading in another frame is dropped '
       'and counted (cause "frame"); empty (or an empty entry): not checked.',
       constraints='one frame id (or empty string) per effector, or empty'),
    _p('friction_topic', STRING, 'measured/friction',
       'Per-effector friction state (Float64MultiArray, n x 3: utilisation (-1 where '
       'undefined), normal force (N), status code); empty: not published.',
       constraints='a topic name, or empty'),
    _p('internal_load_topic', STRING, 'measured/internal_load',
       'Internal-load coordinates (Float64MultiArray, layout label names the basis). Not '
       "`internal_load`: that is the distributor's prescription input, and both nodes often "
       'share a namespace.',
       constraints='a topic name'),
])

_SPECS = {'distributor': DISTRIBUTOR_PARAMS, 'analyzer': ANALYZER_PARAMS}
_PARAM_INDEX = {kind: {s.name: s for s in specs} for kind, specs in _SPECS.items()}

#: Parameters rclpy declares on every node by itself; config files may set them.
BUILTIN_PARAMS = ('use_sim_time', 'start_type_description_service')


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

    t = spec.type
    if t == STRING:
        if not isinstance(value, str):
            raise fail(f'expected a string, got {value!r}')
        if spec.accepted is not None and value not in spec.accepted:
            raise fail(f'{value!r} is not accepted')
        return value
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
        if spec.minimum is not None and v < spec.minimum:
            raise fail(f'{v} is too small')
        if spec.maximum is not None and v > spec.maximum:
            raise fail(f'{v} is too large')
        if spec.accepted is not None and v not in spec.accepted:
            raise fail(f'{v} is not accepted')
        return v
    # arrays
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        try:
            value = list(value)  # numpy arrays, array.array from rclpy
        except TypeError:
            raise fail(f'expected a list, got {value!r}') from None
        if isinstance(value, (str, bytes)):
            raise fail(f'expected a list, got {value!r}')
    out = list(value)
    if t == STRING_ARRAY:
        for v in out:
            if not isinstance(v, str):
                raise fail(f'expected strings, got {v!r}')
            if spec.accepted is not None and v not in spec.accepted:
                raise fail(f'{v!r} is not accepted')
        return out
    if t == DOUBLE_ARRAY:
        res = []
        for v in out:
            if not _finite(v) and not (hasattr(v, '__float__') and math.isfinite(float(v))):
                raise fail(f'expected finite numbers, got {v!r}')
            res.append(float(v))
        return res
    if t == INTEGER_ARRAY:
        res = []
        for v in out:
            if isinstance(v, bool) or not (isinstance(v, int) or hasattr(v, '__index__')):
                raise fail(f'expected integers, got {v!r}')
            res.append(int(v))
        return res
    raise fail(f'unknown type {t}')  # pragma: no cover


def parse_handles(entries: Sequence[str]) -> dict:
    """Parse ``["squeeze(left,right)=20", ...]`` into ``{name: value}``.

    :param entries: strings ``name=value``.
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
                f"parameter 'internal_load_handles': bad entry {e!r}; accepted: entries "
                '"basis_name=number", e.g. "squeeze(left,right)=20.0"')
        out[name] = x
    return out


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

    :param kind: ``'distributor'`` or ``'analyzer'``.
    :param values: parameter name -> value (missing ones take defaults when
        ``fill_defaults``).
    :param strict_unknown: raise on names the node does not declare.
    :param fill_defaults: add defaults for missing parameters.
    :return: normalised dict of every parameter.
    :raises ConfigError: with a message naming the parameter and the accepted values.
    """
    index = _PARAM_INDEX[kind]
    unknown = [k for k in values if k not in index and k not in BUILTIN_PARAMS
               and not k.startswith('qos_overrides.')]
    if unknown and strict_unknown:
        raise ConfigError(f'unknown parameter(s) for the {kind}: {", ".join(sorted(unknown))}; '
                          f'declared: {", ".join(index)}')
    out = {}
    for name, spec in index.items():
        if name in values:
            out[name] = check_param_value(spec, values[name])
        elif fill_defaults:
            out[name] = list(spec.default) if isinstance(spec.default, list) else spec.default
    _cross_check(kind, out)
    return out


def _cross_check(kind: str, v: dict) -> None:
    idx = _PARAM_INDEX[kind]
    effs = v['effectors']
    if not v['object_frame']:
        raise ConfigError("parameter 'object_frame': must not be empty; accepted: a frame id")
    if len(effs) < 2:
        raise ConfigError(f"parameter 'effectors': required, got {effs!r}; accepted: "
                          f'{idx["effectors"].constraint_text()}')
    if any(not e for e in effs) or len(set(effs)) != len(effs):
        raise ConfigError(f"parameter 'effectors': names must be non-empty and unique, got "
                          f'{effs!r}')
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
    for name, width in (('object_com', 3), ('basis_reference_axis', 3)):
        if len(v[name]) != width:
            raise ConfigError(f"parameter '{name}': expected {width} numbers, got {v[name]!r}")
    if not any(abs(x) > 0 for x in v['basis_reference_axis']):
        raise ConfigError("parameter 'basis_reference_axis': must not be zero; accepted: "
                          '3 finite numbers, not all zero')
    if len(v['object_inertia']) not in (0, 6, 9):
        raise ConfigError("parameter 'object_inertia': expected 9 numbers (row-major), 6 "
                          '([Ixx, Iyy, Izz, Ixy, Ixz, Iyz]) or none')
    if any(w < 0 for w in v['torque_weights']):
        raise ConfigError("parameter 'torque_weights': must be >= 0")
    q = v['contact_orientations']
    for i in range(0, len(q), 4):
        if math.sqrt(sum(x * x for x in q[i:i + 4])) < 1e-9:
            raise ConfigError(f"parameter 'contact_orientations': quaternion of "
                              f"'{effs[i // 4]}' is zero; accepted: unit quaternions")
    if kind == 'distributor':
        _per_effector(v, 'command_topics', n, 1, spec=idx['command_topics'])
        parse_handles(v['internal_load_handles'])
        if v['internal_load'] and v['internal_load_handles']:
            raise ConfigError("parameters 'internal_load' and 'internal_load_handles': set "
                              'at most one of them')
        _check_limits(v, n)
    else:
        for name, width in (('ft_topics', 1), ('sensor_positions', 3),
                            ('sensor_orientations', 4), ('sensor_frames', 1),
                            ('sensor_signs', 1), ('tool_masses', 1), ('tool_coms', 3),
                            ('manipulating_topics', 1), ('constraint_topics', 1),
                            ('internal_topics', 1), ('invariant_topics', 1), ('ft_frames', 1)):
            _per_effector(v, name, n, width, spec=idx[name])
        if any(s not in (1, -1) for s in v['sensor_signs']):
            raise ConfigError(f"parameter 'sensor_signs': got {v['sensor_signs']!r}; "
                              'accepted: +1 or -1 per effector')
        if any(m < 0 for m in v['tool_masses']):
            raise ConfigError("parameter 'tool_masses': must be >= 0")
        if len(v['gravity']) != 3:
            raise ConfigError("parameter 'gravity': expected 3 numbers")
        q = v['sensor_orientations']
        for i in range(0, len(q), 4):
            if math.sqrt(sum(x * x for x in q[i:i + 4])) < 1e-9:
                raise ConfigError("parameter 'sensor_orientations': zero quaternion")


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
    normals = v['contact_normals']
    for i in range(0, len(normals), 3):
        if math.sqrt(sum(x * x for x in normals[i:i + 3])) < 1e-9:
            raise ConfigError(f"parameter 'contact_normals': normal of '{v['effectors'][i // 3]}' "
                              'is zero; accepted: 3 numbers per effector, not all zero')


# -- YAML files -------------------------------------------------------------------------
def read_ros_params_yaml(path_or_dict: Any, node_name: str) -> dict:
    """Return the flattened ``ros__parameters`` of one node from a ROS parameter file.

    Sections keyed ``<node_name>``, ``/<node_name>``, ``<ns>/<node_name>`` and the
    wildcard ``/**`` are merged (the node's own section wins). Nested dicts are
    flattened with dots, like ROS does.

    :param path_or_dict: a file path, or the already-parsed YAML dict.
    :param node_name: node name, e.g. ``wrench_analyzer``.
    :return: ``{param_name: value}``.
    :raises ConfigError: when the file cannot be read or parsed, or has no section.
    """
    if isinstance(path_or_dict, Mapping):
        data = path_or_dict
    else:  # bounded safe loading: size, depth, aliases, number magnitudes
        from wrench_distribution.core.errors import InvalidInputError
        from wrench_distribution.core.safe_load import load_document
        try:
            data = load_document(os.fspath(path_or_dict), 'parameter file')
        except InvalidInputError as e:
            raise ConfigError(str(e)) from None
    if not isinstance(data, Mapping):
        raise ConfigError('parameter file: expected a mapping of node names to '
                          '{ros__parameters: ...}')
    merged: dict = {}
    found = False
    own = []
    for key, section in data.items():
        k = str(key)
        if k in ('/**', '**'):
            merged.update(_section(section, k))
            found = True
        elif k.lstrip('/').split('/')[-1] == node_name:
            own.append((k, section))
    for k, section in own:
        merged.update(_section(section, k))
        found = True
    if not found:
        raise ConfigError(f"parameter file: no section for node '{node_name}' (keys: "
                          f'{", ".join(map(str, data))}); expected "{node_name}:" or "/**:" '
                          'with "ros__parameters:"')
    return merged


def _section(section: Any, key: str) -> dict:
    if not isinstance(section, Mapping) or 'ros__parameters' not in section:
        raise ConfigError(f"parameter file: section '{key}' has no 'ros__parameters'")
    params = section['ros__parameters'] or {}
    if not isinstance(params, Mapping):
        raise ConfigError(f"parameter file: '{key}.ros__parameters' must be a mapping")
    out: dict = {}

    def flat(prefix: str, d: Mapping) -> None:
        for k, v in d.items():
            name = f'{prefix}{k}'
            if isinstance(v, Mapping):
                flat(name + '.', v)
            else:
                out[name] = v
    flat('', params)
    return out


# -- config objects -------------------------------------------------------------------
@dataclass
class _BaseConfig:
    params: dict
    effectors: list
    contact_types: list
    contact_source: str
    contact_frames: list
    contacts: Optional[list]
    object_frame: str
    object_model: Any
    options: Any
    topics: dict = field(default_factory=dict)


@dataclass
class DistributorConfig(_BaseConfig):
    """Validated distributor configuration.

    :ivar params: every parameter, validated and normalised (name -> value).
    :ivar effectors: effector names.
    :ivar contact_types: ``'rigid'`` / ``'point'`` per effector.
    :ivar contact_source: ``'topic'``, ``'static'`` or ``'tf'``.
    :ivar contact_frames: contact frame id per effector.
    :ivar contacts: list of core ``Contact`` from the static poses, or None when no
        static positions are configured.
    :ivar object_frame: object frame id.
    :ivar object_model: core ``ObjectModel``.
    :ivar options: core ``DistributionOptions``.
    :ivar topics: ``{'desired_wrench', 'contact_poses', 'internal_load': str,
        'commands': [str per effector]}``.
    :ivar internal_load: prescribed lambda_c coordinates (list) or None.
    :ivar internal_load_handles: ``{handle name: value}`` (may be empty).
    """

    internal_load: Optional[list] = None
    internal_load_handles: dict = field(default_factory=dict)


@dataclass
class AnalyzerConfig(_BaseConfig):
    """Validated analyzer configuration (what the bag tools need).

    :ivar params: every parameter, validated and normalised (name -> value).
    :ivar effectors: effector names (order of every per-effector list).
    :ivar contact_types: ``'rigid'`` / ``'point'`` per effector.
    :ivar contact_source: ``'topic'``, ``'static'`` or ``'tf'``.
    :ivar contact_frames: contact frame id per effector.
    :ivar contacts: list of core ``Contact`` (static poses), or None when no static
        positions are configured.
    :ivar object_frame: object frame id.
    :ivar object_model: core ``ObjectModel`` (com, mass or None, inertia or None).
    :ivar options: core ``DistributionOptions``.
    :ivar sensors: list of core ``SensorModel``, one per effector.
    :ivar gravity: gravity vector in the object frame, tuple of 3 floats (m/s^2).
    :ivar sync_tolerance: largest stamp skew inside one sample (s).
    :ivar max_age: staleness limit (s), 0 disables.
    :ivar topics: ``{'ft': [...], 'manipulating': [...], 'constraint': [...]`` (one per
        effector), ``'object_wrench': str, 'internal_load': str, 'contact_poses': str}``.
    :ivar output_frame: ``'contact'`` or ``'object'``.
    """

    sensors: list = field(default_factory=list)
    gravity: tuple = (0.0, 0.0, -9.81)
    sync_tolerance: float = 0.005
    max_age: float = 0.5
    output_frame: str = 'contact'


def _group(xs: Sequence[float], width: int) -> list:
    return [tuple(xs[i:i + width]) for i in range(0, len(xs), width)]


def _per_eff_topics(values: Sequence[str], effs: Sequence[str], suffix: str) -> list:
    return list(values) if values else [f'{e}/{suffix}' for e in effs]


def contact_friction_fields(v: dict) -> list:
    """Build the per-effector ``Contact`` keyword arguments of the friction parameters.

    From ``friction_coefficients`` and ``contact_normals`` (0 or empty: no friction; empty
    normals: +z).

    :param v: validated parameters.
    :return: one ``{'friction': mu or None, 'normal': (x, y, z)}`` per effector.
    """
    n = len(v['effectors'])
    mu = list(v.get('friction_coefficients') or [0.0] * n)
    normals = _group(v.get('contact_normals') or [0.0, 0.0, 1.0] * n, 3)
    return [{'friction': float(m) if m > 0 else None, 'normal': tuple(nv)}
            for m, nv in zip(mu, normals)]


def build_core_objects(v: dict) -> tuple:
    """Build core ``Contact`` list (or None), ``ObjectModel`` and ``DistributionOptions``.

    :param v: validated parameters (:func:`validate_params`).
    :return: ``(contacts or None, object_model, options)``.
    """
    from wrench_distribution.core import Contact, DistributionOptions, ObjectModel
    effs = v['effectors']
    n = len(effs)
    types = v['contact_types'] or ['rigid'] * n
    contacts = None
    if v['contact_positions']:
        pos = _group(v['contact_positions'], 3)
        ori = _group(v['contact_orientations'], 4) or [(0.0, 0.0, 0.0, 1.0)] * n
        extras = contact_friction_fields(v)
        contacts = [Contact(name=e, type=t, position=p, orientation=q, **x)
                    for e, t, p, q, x in zip(effs, types, pos, ori, extras)]
    inertia = list(v['object_inertia']) or None  # the core's inertia_matrix reads its forms
    obj = ObjectModel(com=tuple(v['object_com']),
                      mass=v['object_mass'] if v['object_mass'] > 0 else None,
                      inertia=inertia)
    vm: Any = v['virtual_masses']
    if vm == 'explicit':
        vm = list(v['virtual_mass_values'])
    opts = DistributionOptions(torque_share=v['torque_share'], virtual_masses=vm,
                               torque_weights=list(v['torque_weights']) or None,
                               basis_reference_axis=tuple(v['basis_reference_axis']))
    return contacts, obj, opts


def _base_fields(v: dict) -> dict:
    effs = v['effectors']
    try:
        contacts, obj, opts = build_core_objects(v)
    except ConfigError:
        raise
    except ValueError as e:  # core InvalidInputError
        raise ConfigError(f'invalid configuration: {e}') from None
    return dict(params=v, effectors=list(effs),  # noqa: C408 (keyword names of the config)
                contact_types=list(v['contact_types'] or ['rigid'] * len(effs)),
                contact_source=v['contact_source'],
                contact_frames=list(v['contact_frames'] or [f'{e}_contact' for e in effs]),
                contacts=contacts, object_frame=v['object_frame'], object_model=obj,
                options=opts)


def load_distributor_config(path_or_dict: Any, node_name: str = 'wrench_distributor',
                            strict_unknown: bool = True) -> DistributorConfig:
    """Read and validate the distributor section of a ROS parameter YAML file.

    :param path_or_dict: file path, or parsed YAML (``{node: {ros__parameters: {...}}}``),
        or directly a flat ``{param: value}`` dict.
    :param node_name: node section to read (``/**`` is merged in too).
    :param strict_unknown: raise on parameters the distributor does not declare.
    :return: :class:`DistributorConfig`.
    :raises ConfigError: on any invalid or unknown parameter (message names it).
    """
    v = validate_params('distributor', _params_of(path_or_dict, node_name),
                        strict_unknown=strict_unknown)
    f = _base_fields(v)
    f['topics'] = {'desired_wrench': v['desired_wrench_topic'],
                   'contact_poses': v['contact_poses_topic'],
                   'internal_load': v['internal_load_topic'],
                   'commands': _per_eff_topics(v['command_topics'], v['effectors'],
                                               'wrench_command')}
    return DistributorConfig(**f, internal_load=list(v['internal_load']) or None,
                             internal_load_handles=parse_handles(v['internal_load_handles']))


def load_analyzer_config(path_or_dict: Any, node_name: str = 'wrench_analyzer',
                         strict_unknown: bool = True) -> AnalyzerConfig:
    """Read and validate the analyzer section of a ROS parameter YAML file.

    :param path_or_dict: file path, or parsed YAML (``{node: {ros__parameters: {...}}}``),
        or directly a flat ``{param: value}`` dict.
    :param node_name: node section to read (``/**`` is merged in too).
    :param strict_unknown: raise on parameters the analyzer does not declare.
    :return: :class:`AnalyzerConfig` (``contacts`` is None unless static contact
        positions are configured; ``sensors`` has one ``SensorModel`` per effector).
    :raises ConfigError: on any invalid or unknown parameter (message names it).
    """
    from wrench_distribution.core import SensorModel
    v = validate_params('analyzer', _params_of(path_or_dict, node_name),
                        strict_unknown=strict_unknown)
    effs = v['effectors']
    n = len(effs)
    f = _base_fields(v)
    f['topics'] = {'ft': _per_eff_topics(v['ft_topics'], effs, 'ft_sensor'),
                   'manipulating': _per_eff_topics(v['manipulating_topics'], effs,
                                                   'wrench_manipulating'),
                   'constraint': _per_eff_topics(v['constraint_topics'], effs,
                                                 'wrench_constraint'),
                   'internal': _per_eff_topics(v['internal_topics'], effs, 'wrench_internal'),
                   'invariant': _per_eff_topics(v['invariant_topics'], effs, 'wrench_invariant'),
                   'internal_load_norm': v['internal_load_norm_topic'],
                   'invariant_norm': v['invariant_norm_topic'],
                   'object_wrench': v['object_wrench_topic'],
                   'internal_load': v['internal_load_topic'],
                   'contact_poses': v['contact_poses_topic']}
    pos = _group(v['sensor_positions'], 3) or [(0.0, 0.0, 0.0)] * n
    ori = _group(v['sensor_orientations'], 4) or [(0.0, 0.0, 0.0, 1.0)] * n
    signs = v['sensor_signs'] or [1] * n
    masses = v['tool_masses'] or [0.0] * n
    coms = _group(v['tool_coms'], 3) or [(0.0, 0.0, 0.0)] * n
    try:
        sensors = [SensorModel(position=p, orientation=q, sign=s, tool_mass=m, tool_com=c)
                   for p, q, s, m, c in zip(pos, ori, signs, masses, coms)]
    except ValueError as e:  # core InvalidInputError
        raise ConfigError(f'invalid sensor configuration: {e}') from None
    return AnalyzerConfig(**f, sensors=sensors, gravity=tuple(v['gravity']),
                          sync_tolerance=v['sync_tolerance'], max_age=v['max_age'],
                          output_frame=v['output_frame'])


def _params_of(path_or_dict: Any, node_name: str) -> dict:
    if isinstance(path_or_dict, Mapping) and not any(
            isinstance(s, Mapping) and 'ros__parameters' in s for s in path_or_dict.values()):
        return dict(path_or_dict)  # already flat parameters
    return read_ros_params_yaml(path_or_dict, node_name)


def ros_yaml_type_problems(kind: str, values: Mapping[str, Any]) -> list:
    """Problems the ROS YAML parser (rcl) would have with these parameter values.

    rcl types a value by its YAML form: ``0`` is an integer and cannot set a double
    parameter, arrays must not be empty or mix types.

    :param kind: ``'distributor'`` or ``'analyzer'``.
    :param values: flat parameters as read from YAML.
    :return: list of messages (empty when the file is fine for ROS).
    """
    index = _PARAM_INDEX[kind]
    out = []
    for name, value in values.items():
        spec = index.get(name)
        if spec is None:
            continue
        if spec.type == DOUBLE and not isinstance(value, float):
            out.append(f"'{name}': write {value!r} as a float (e.g. {value}.0): rcl reads it "
                       'as another type')
        if spec.type.endswith('_array'):
            if isinstance(value, (list, tuple)) and not value:
                out.append(f"'{name}': empty arrays cannot be parsed by rcl; omit the "
                           'parameter for its default')
            elif spec.type == DOUBLE_ARRAY and isinstance(value, (list, tuple)) and not all(
                    isinstance(v, float) for v in value):
                out.append(f"'{name}': write every entry as a float (1.0, not 1)")
            elif spec.type == INTEGER_ARRAY and isinstance(value, (list, tuple)) and not all(
                    isinstance(v, int) and not isinstance(v, bool) for v in value):
                out.append(f"'{name}': write every entry as an integer")
    return out


def _default_text(spec: ParamSpec) -> str:
    if isinstance(spec.default, bool):
        return 'true' if spec.default else 'false'
    return str(spec.default)


def parameter_table(specs: Sequence[ParamSpec]) -> str:
    """Return the README's Markdown table of some parameters (the README is checked against it).

    :param specs: the parameters, in table order.
    :return: the table, one line per parameter, with a trailing newline.
    """
    lines = ['| parameter | type | default | runtime | meaning (accepted values) |',
             '|---|---|---|---|---|']
    for s in specs:
        lines.append(f'| `{s.name}` | {s.type.replace("_", " ")} | `{_default_text(s)}` | '
                     f'{"no" if s.read_only else "yes"} | {s.description} '
                     f'({s.constraint_text()}) |')
    return '\n'.join(lines) + '\n'


def readme_tables() -> dict:
    """Return the three parameter tables of the README: both nodes, distributor, analyzer.

    :return: ``{'common': str, 'distributor': str, 'analyzer': str}``.
    """
    common = {s.name for s in _COMMON}
    return {'common': parameter_table(_COMMON),
            'distributor': parameter_table([s for s in DISTRIBUTOR_PARAMS
                                            if s.name not in common]),
            'analyzer': parameter_table([s for s in ANALYZER_PARAMS if s.name not in common])}


if __name__ == '__main__':  # python -m wrench_distribution.params: print the README tables
    for _title, _table in readme_tables().items():
        print(f'<!-- {_title} -->\n{_table}')
