"""Parameter schema of the two ROS nodes: one :class:`ParamSpec` per parameter (no ROS import).

Per-effector settings are flat arrays aligned with the ``effectors`` parameter
(``contact_positions`` holds 3 numbers per effector, ``contact_orientations`` 4, ...),
because ROS parameters cannot hold lists of dicts. An empty array means "default for
every effector".
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Optional

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
    :param minimum: inclusive lower bound for numbers (each entry of a double array), or None.
    :param maximum: inclusive upper bound for numbers (each entry of a double array), or None.
    :param read_only: True when it cannot change after start-up.
    :param constraints: human-readable accepted values (additional_constraints).
    :param minimum_excluded: True when ``minimum`` itself is refused (a number > minimum).
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
    minimum_excluded: bool = False

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
            return f'{">" if self.minimum_excluded else ">="} {self.minimum}'
        return 'any ' + self.type.replace('_', ' ')


def _p(name, type_, default, description, **kw) -> ParamSpec:
    return ParamSpec(name, type_, default, description, **kw)


#: ``consistency_check``: what the sensor set is checked against (config.settings.CONSISTENCY_MODES).
CONSISTENCY_CHECKS = ('off', 'rest')
#: ``on_sensor_fault``: what the distributor's feedback loops do while a sensor is in doubt.
SENSOR_FAULT_ACTIONS = ('hold', 'release')


# -- physical bounds of the calibration values (config/calibration.py adds the cross-checks) --------
#: No set of arms holds ten tonnes (kg).
MAX_OBJECT_MASS = 1e4
#: No wrist carries a tonne between its sensor and the object (kg).
MAX_TOOL_MASS = 1000.0
#: A tool's centre of mass within this of its sensor (m, per coordinate).
MAX_TOOL_COM = 2.0
#: No F/T sensor reads beyond this (N, N m): bounds sensor_ranges and, with them, the biases.
MAX_SENSOR_RANGE = 1e5


# -- shared between both nodes ---------------------------------------------------------
COMMON_PARAMS = [
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
       'Contact poses older than this (s) are stale (the distributor: against the node '
       'clock; the analyzer and analyze-bag: against the sample stamp); the analyzer also '
       'waits at most this long for tf data covering a sample (1 s when 0); 0 disables.',
       minimum=0.0,
       read_only=False),
    _p('object_com', DOUBLE_ARRAY, [0.0, 0.0, 0.0],
       'Centre of mass of the object in the object frame (m).',
       constraints="3 finite numbers (the analyzer: its weight's moment within the sensors' ranges)"),
    _p('object_mass', DOUBLE, 0.0,
       'Object mass (kg); 0 means unknown. The distributor holds its weight with '
       'hold_object_weight.', minimum=0.0, maximum=MAX_OBJECT_MASS),
    _p('object_inertia', DOUBLE_ARRAY, [],
       'Object inertia about the CoM in object axes (kg m^2): 3 principal moments, '
       '[Ixx, Iyy, Izz, Ixy, Ixz, Iyz] or 9 numbers row-major; empty: unknown.',
       constraints='3, 6 or 9 finite numbers, symmetric positive definite, or empty'),
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
    _p('allow_unknown_parameters', BOOL, False,
       'false: a parameter this node does not declare (a misspelling) stops it at start-up, '
       'naming the nearest declared names; true: a warning, and the node runs on.'),
    _p('autostart', BOOL, True,
       'true: the node configures and activates itself at start-up, as a node without a '
       'lifecycle manager; false: it waits unconfigured for configure and activate (a '
       'lifecycle manager, ros2 lifecycle set; docs/wiring.md, "Bringing a cell up").'),
    _p('summary_period', DOUBLE, 10.0,
       'Period (s, steady clock) of the log line that sums up dropped inputs per cause; '
       'nothing is logged while nothing is dropped.', minimum=0.1),
]

#: Largest value any configured limit may take (keeps every product of limits finite).
LIMIT_CEILING = 1e9

#: gravity, one form for both nodes (analyzer: tool weights; distributor: hold_object_weight)
GRAVITY = _p('gravity', DOUBLE_ARRAY, [0.0, 0.0, -9.81],
             'Gravity vector in gravity_frame (m/s^2): tool-mass compensation (analyzer), the '
             'object weight with hold_object_weight (distributor).',
             constraints='3 finite numbers')
GRAVITY_FRAME = _p('gravity_frame', STRING, '',
                   'Frame the gravity parameter is given in (e.g. world); empty: the object '
                   'frame (gravity constant in the object frame). Another frame: the object '
                   'orientation in it rotates gravity (analyzer: at each sample stamp, '
                   'object_orientation_source; distributor: from tf with the contacts).',
                   constraints='a frame id, or empty')

#: the calibration file, read-only (a path another node could change would redirect what is loaded
#: and written): config/calibration.py says what it may carry
CALIBRATION_FILE = _p('calibration_file', STRING, '',
                      'File of the calibration (the object and the contacts; ~/save_calibration of the '
                      'analyzer, identify): loaded at start-up when it exists, its calibration values '
                      'only, bounded; fixed at start-up; empty: none.',
                      constraints='a file path, or empty')

DISTRIBUTOR_PARAMS: tuple = tuple(COMMON_PARAMS + [
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
       'What the watchdog does on input timeout: publish zero wrenches (arms), stop '
       "publishing, or hold_object_weight: publish the commands that hold the object's weight "
       '(object_mass at object_com) on the contacts of positive weight, at the weights in '
       'force (legs and hands: docs/legs_and_hands.md).',
       accepted=('zero', 'stop', 'hold_object_weight'), read_only=False),
    _p('contact_weights', DOUBLE_ARRAY, [],
       'Target weight of each contact in [0, 1]: 1 carries its full share, 0 is released (its '
       'command is exactly zero), between a partial share (docs/legs_and_hands.md). The '
       'actual weights move toward it no faster than contact_transition_time; a change the '
       'remaining contacts cannot carry is refused, naming why. Empty: all 1.',
       minimum=0.0, maximum=1.0, read_only=False,
       constraints='one number in [0, 1] per effector, not all 0, or empty (all 1)'),
    _p('contact_weights_topic', STRING, 'contact_weights',
       'Target contact weights from a planner (Float64MultiArray, labelled with the effector '
       'names it sets; the others keep their targets); empty: no subscription.',
       constraints='a topic name, or empty'),
    _p('actual_weights_topic', STRING, 'contact_weights/actual',
       'The actual contact weights (Float64MultiArray labelled with every effector), published '
       'when they change and with each diagnostics message; empty: not published.',
       constraints='a topic name, or empty'),
    _p('contact_transition_time', DOUBLE, 1.0,
       'Time (s, of the desired wrench stamps) for a contact weight to go from 0 to 1 or back; '
       'a weight moves toward its target no faster. 0: at the next desired wrench.',
       minimum=0.0, maximum=3600.0, read_only=False),
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
    _p('publish_markers', BOOL, True, 'Publish RViz markers on ~/markers (built only while '
       'it has a subscriber).', read_only=False),
    _p('marker_scale', DOUBLE, 0.01, 'Marker arrow length per newton (m/N).',
       minimum=0.0, read_only=False),
    _p('markers_period', DOUBLE, 0.1, 'Minimum period between marker messages (s).',
       minimum=0.0),
    _p('force_limits', DOUBLE_ARRAY, [150.0],
       'Largest force norm of one command (N): one value for every effector, or one per '
       'effector. Never exceeded on a command topic.', read_only=False,
       constraints=f'one or n numbers > 0 and <= {LIMIT_CEILING:g}'),
    _p('torque_limits', DOUBLE_ARRAY, [20.0],
       'Largest torque norm of one command (N m): one value for every effector, or one per '
       'effector. Never exceeded on a command topic.', read_only=False,
       constraints=f'one or n numbers > 0 and <= {LIMIT_CEILING:g}'),
    _p('desired_force_limit', DOUBLE, 300.0,
       'Largest force norm of desired_wrench (N); beyond it on_limit applies.',
       minimum=1e-9, maximum=LIMIT_CEILING, read_only=False,
       constraints=f'a number > 0 and <= {LIMIT_CEILING:g}'),
    _p('desired_torque_limit', DOUBLE, 40.0,
       'Largest torque norm of desired_wrench (N m); beyond it on_limit applies.',
       minimum=1e-9, maximum=LIMIT_CEILING, read_only=False,
       constraints=f'a number > 0 and <= {LIMIT_CEILING:g}'),
    _p('internal_load_limit', DOUBLE, 100.0,
       'Largest absolute internal-load coordinate (basis units, N or N m); a larger '
       'prescription (parameter or topic) is refused and the previous one stays.',
       minimum=1e-9, maximum=LIMIT_CEILING, read_only=False,
       constraints=f'a number > 0 and <= {LIMIT_CEILING:g}'),
    _p('on_limit', STRING, 'hold',
       'What a desired wrench or command over its limit does: hold (publish the last valid '
       'commands again), zero (publish zero wrenches) or scale (scale the whole command set '
       'uniformly into the limits). Always an ERROR with the figures.',
       accepted=('hold', 'zero', 'scale'), read_only=False),
    _p('allow_unsafe_runtime_changes', BOOL, False,
       'Lab bench only: accept runtime changes that raise a limit or relax a guard (refused '
       'otherwise, docs/security.md); a WARN on the limits status while true.'),
    _p('internal_load_feedback', BOOL, False,
       'Close the loop on the internal load: add a PI correction per basis element, from '
       'the measured internal load on feedback_topic, to the prescription (docs/force_control.md).',
       read_only=False),
    _p('feedback_topic', STRING, 'measured/internal_load',
       "Measured internal load (Float64MultiArray, the analyzer's read-out); its layout label "
       'must name the basis, else it is refused and counted.', constraints='a topic name'),
    _p('feedback_kp', DOUBLE_ARRAY, [0.2],
       'Proportional gain of the internal-load feedback (dimensionless): one value for every '
       'basis element, or one per element.', read_only=False,
       constraints='one or m finite numbers >= 0 (m basis elements)'),
    _p('feedback_ki', DOUBLE_ARRAY, [2.0],
       'Integral gain of the internal-load feedback (1/s): one value for every basis element, '
       'or one per element.', read_only=False,
       constraints='one or m finite numbers >= 0 (m basis elements)'),
    _p('feedback_integral_limit', DOUBLE, 20.0,
       'Largest absolute integral term of the feedback, per element (its unit, N or N m).',
       minimum=0.0, maximum=LIMIT_CEILING, read_only=False),
    _p('feedback_correction_limit', DOUBLE, 20.0,
       'Largest absolute feedback correction, per element (its unit, N or N m).',
       minimum=0.0, maximum=LIMIT_CEILING, read_only=False),
    _p('feedback_timeout', DOUBLE, 0.2,
       'A measured internal load older than this (s, steady clock) suspends the feedback '
       '(correction held, counted, diagnosed).', minimum=1e-3, read_only=False),
    _p('on_sensor_fault', STRING, 'hold',
       "What the feedback loops do while the analyzer doubts a sensor (its read-out's health "
       "label): hold (the internal load's correction held at the integral it had at the onset, "
       'the friction margin at its value there: the prescription open loop) '
       'or release (the correction ramps to zero in 1 s: the prescription alone); both count and '
       'diagnose the suspension (docs/force_control.md).', accepted=SENSOR_FAULT_ACTIONS,
       read_only=False),
    _p('friction_feedback', BOOL, False,
       'Close the loop on friction (friction_mode auto only): raise the margin auto mode uses '
       'while the measured utilisation on friction_feedback_topic exceeds 1 - friction_margin '
       '(docs/force_control.md).', read_only=False),
    _p('friction_feedback_topic', STRING, 'measured/friction',
       "Measured friction state (the analyzer's friction_topic: Float64MultiArray, effectors x "
       '[utilisation, normal force, status]); its layout labels must name the effectors and '
       'fields, else it is refused and counted.', constraints='a topic name'),
    _p('friction_feedback_kp', DOUBLE, 0.5,
       'Proportional gain of the friction feedback (margin per unit of utilisation error).',
       minimum=0.0, maximum=LIMIT_CEILING, read_only=False),
    _p('friction_feedback_ki', DOUBLE, 2.0,
       'Integral gain of the friction feedback (1/s).', minimum=0.0, maximum=LIMIT_CEILING,
       read_only=False),
    _p('friction_feedback_limit', DOUBLE, 0.3,
       'Largest increase of the margin by the friction feedback (auto mode then aims at '
       'utilisation 1 - friction_margin - this at the lowest).', minimum=0.0, maximum=0.95,
       read_only=False, constraints='a number >= 0 with friction_margin + this <= 0.95'),
    _p('friction_feedback_timeout', DOUBLE, 0.2,
       'A measured friction state older than this (s, steady clock) suspends the friction '
       'feedback (margin held, counted, diagnosed).', minimum=1e-3, read_only=False),
    _p('no_subscriber_grace', DOUBLE, 2.0,
       'A command topic without a subscriber for longer than this (s) is a WARN in '
       'diagnostics (counted); 0 disables.', minimum=0.0, read_only=False),
    _p('hold_object_weight', BOOL, False,
       'Add the object weight (object_mass at object_com, gravity in gravity_frame) to the '
       'desired wrench: a zero desired wrench holds the object (docs/wiring.md).'),
    GRAVITY,
    GRAVITY_FRAME,
    CALIBRATION_FILE,
])

ANALYZER_PARAMS: tuple = tuple(COMMON_PARAMS + [
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
       minimum=0.0, maximum=MAX_TOOL_MASS,
       constraints=f'one number >= 0 and <= {MAX_TOOL_MASS:g} per effector, its weight within '
                   'sensor_ranges, or empty'),
    _p('tool_coms', DOUBLE_ARRAY, [],
       'Tool centre of mass in the sensor frame [x,y,z per effector] (m); empty: origin.',
       minimum=-MAX_TOOL_COM, maximum=MAX_TOOL_COM,
       constraints=f'3 numbers within +-{MAX_TOOL_COM:g} m per effector, or empty'),
    _p('sensor_ranges', DOUBLE_ARRAY, [],
       'Rated range (full scale) of the F/T sensors per axis [fx,fy,fz,tx,ty,tz] (N, N m): 6 '
       'numbers for every sensor, or 6 per effector; 0 where an axis is not rated. A reading at '
       'or beyond it is out of range (docs/health.md); each bias component, a tool and the '
       'object must fit inside it (docs/calibration.md). Empty: unknown (a clip is still found '
       'by the value it holds; a calibration is bounded by 1000 N and 100 N m per axis).',
       minimum=0.0, maximum=MAX_SENSOR_RANGE,
       constraints=f'6 or 6 per effector numbers >= 0 and <= {MAX_SENSOR_RANGE:g}, or empty'),
    GRAVITY,
    GRAVITY_FRAME,
    _p('object_orientation_source', STRING, 'tf',
       'Where the object orientation in gravity_frame comes from (gravity_frame set): tf (the '
       'object frame looked up at each sample stamp; analyze-bag: the bag /tf) or topic '
       '(object_pose_topic).', accepted=('tf', 'topic')),
    _p('object_pose_topic', STRING, 'object_pose',
       'Pose of the object frame in gravity_frame (geometry_msgs/PoseStamped, header.frame_id '
       '= gravity_frame), for object_orientation_source=topic.', constraints='a topic name'),
    _p('orientation_timeout', DOUBLE, 0.1,
       'An object pose from object_pose_topic older than this (s, against the sample stamp) is '
       'not used: the sample is dropped (cause no_orientation); 0 disables.',
       minimum=0.0, read_only=False),
    _p('sensor_biases', DOUBLE_ARRAY, [],
       'Bias of each sensor, subtracted from its raw reading in the sensor frame '
       '[fx,fy,fz,tx,ty,tz per effector] (N, N m); ~/tare writes it; empty: none.',
       read_only=False, minimum=-MAX_SENSOR_RANGE, maximum=MAX_SENSOR_RANGE,
       constraints='6 numbers per effector, each within its sensor_ranges, or empty'),
    _p('consistency_check', STRING, 'off',
       "What the sensor set's resultant is checked against (docs/health.md): off, or rest (the "
       'object held still: its weight from object_mass, or with the mass unknown a constant). '
       'Set it to off while the object moves.', accepted=CONSISTENCY_CHECKS, read_only=False),
    _p('consistency_tolerance', DOUBLE_ARRAY, [1.0, 0.2],
       'Force (N) and torque (N m) by which the resultant of the corrected readings may differ '
       "from the object's known wrench through the model's errors (mass, centre of mass, tools, "
       'biases) before the sensor set is inconsistent (docs/health.md).',
       constraints='2 finite numbers > 0'),
    _p('tare_samples', INTEGER, 200,
       'Samples ~/tare averages: the newest synchronised, analysed samples.',
       minimum=1, maximum=100000, read_only=False),
    _p('tare_state', STRING, 'free',
       'What the object does while ~/tare averages: free (not held: every contact wrench is '
       'zero, the sensors carry only their tools) or held (held at rest by the contacts '
       'alone, without internal load; needs object_mass).',
       accepted=('free', 'held'), read_only=False),
    _p('calibration_mounting', BOOL, False,
       '~/calibration/identify_tools also identifies each sensor mounting rotation (applied to the '
       'sensor orientations; saved as sensor_orientations).', read_only=False),
    replace(CALIBRATION_FILE, description=(
        'File of the calibration (biases, tools, mounting rotations, object, contacts): loaded at '
        'start-up when it exists (its calibration values only, bounded), and where '
        '~/save_calibration writes (atomically, never through a link); fixed at start-up; empty: none.')),
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
    _p('actual_weights_topic', STRING, 'contact_weights/actual',
       'The contact weights the distributor applies (its actual_weights_topic: '
       'Float64MultiArray labelled with the effector names), followed by the read-out: a '
       'released contact (weight 0) is out of its solve; empty: no subscription, all 1.',
       constraints='a topic name, or empty'),
    _p('contact_loaded_force', DOUBLE, 1.0,
       'Smallest force (N) above which a contact reads loaded; the threshold is the larger of '
       'this and 6.83 times the force noise learned by the sensor health checks, and a loaded '
       'contact reads free below half of it (docs/legs_and_hands.md).',
       minimum=1e-6, maximum=1e6),
    _p('internal_load_topic', STRING, 'measured/internal_load',
       'Internal-load coordinates (Float64MultiArray, layout label names the basis). Not '
       "`internal_load`: that is the distributor's prescription input, and both nodes often "
       'share a namespace.',
       constraints='a topic name'),
])

#: analyzer parameters of gravity orientation and tare (their table is in docs/sensing.md)
SENSING_PARAMS = ('gravity_frame', 'object_orientation_source', 'object_pose_topic',
                  'orientation_timeout', 'sensor_biases', 'tare_samples', 'tare_state',
                  'calibration_mounting', 'calibration_file')

_SPECS = {'distributor': DISTRIBUTOR_PARAMS, 'analyzer': ANALYZER_PARAMS}
PARAM_INDEX = {kind: {s.name: s for s in specs} for kind, specs in _SPECS.items()}

#: Parameters rclpy declares on every node by itself; config files may set them.
BUILTIN_PARAMS = ('use_sim_time', 'start_type_description_service')


def default_of(kind: str, name: str) -> Any:
    """Return the schema default of one parameter.

    :param kind: ``'distributor'`` or ``'analyzer'``.
    :param name: the parameter name.
    :return: its default (a fresh list for arrays).
    """
    d = PARAM_INDEX[kind][name].default
    return list(d) if isinstance(d, list) else d
