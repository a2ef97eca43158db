"""Simulator section of the schema: the parameters of the demo's own nodes.

``object_sim``, ``object_controller`` and ``baseline_distributor`` declare their parameters
through the same :class:`ParamSpec` as the distributor and the analyzer (type, default,
range, description), and :func:`~wrench_distribution.config.validation.validate_params`
checks them with the same messages. A parameter the simulator shares with the two nodes
(effectors, contacts, sensors) takes its spec from the node schema, with the simulator's
default where it differs. See docs/simulator.md.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from .schema import (ANALYZER_PARAMS, BOOL, COMMON_PARAMS, DOUBLE, DOUBLE_ARRAY, INTEGER,
                     ParamSpec, STRING, STRING_ARRAY)

_NODE_SPECS = {s.name: s for s in list(COMMON_PARAMS) + list(ANALYZER_PARAMS)}


def _shared(name: str, **changes: Any) -> ParamSpec:
    """Return the node schema's spec of ``name``, with some fields changed for the simulator."""
    return replace(_NODE_SPECS[name], **changes)


def _p(name: str, type_: str, default: Any, description: str, **kw: Any) -> ParamSpec:
    return ParamSpec(name, type_, default, description, **kw)


def _positive(name: str, default: float, description: str) -> ParamSpec:
    return _p(name, DOUBLE, default, description, minimum=0.0, minimum_excluded=True)


def _vector(name: str, default: list, description: str) -> ParamSpec:
    return _p(name, DOUBLE_ARRAY, default, description, constraints='3 finite numbers')


_WORLD_FRAME = _p('world_frame', STRING, 'world',
                  "World frame (object_pose, object_twist, markers; the controller's reference).",
                  constraints='a non-empty frame id')
_OBJECT_MASS = _positive('object_mass', 1.0, 'Mass of the object (kg).')
_OBJECT_INERTIA = _p(
    'object_inertia', DOUBLE_ARRAY, [0.01, 0.01, 0.01],
    'Inertia of the object about its CoM in object axes (kg m^2): 3 principal moments, '
    '[Ixx, Iyy, Izz, Ixy, Ixz, Iyz] or 9 numbers row-major.',
    constraints='3, 6 or 9 finite numbers, symmetric positive definite')
_GRAVITY = _vector('gravity', [0.0, 0.0, -9.81], 'Gravity in the world frame (m/s^2).')


_TILT_FORM = ('5 finite numbers per tilt [start, duration, rx, ry, rz], in time order, '
              'not overlapping')


def _tilts(name: str, description: str) -> ParamSpec:
    return _p(name, DOUBLE_ARRAY, [], description, constraints=_TILT_FORM + ', or empty')


def _six(name: str, default: list, description: str) -> ParamSpec:
    return _p(name, DOUBLE_ARRAY, default, description,
              constraints='6 finite numbers [x, y, z, rx, ry, rz]')


#: The ``effector_model`` values: the names of the simulator's effector models, each an entry
#: of its registry (:mod:`wrench_distribution.sim.scenarios.models`: builder, checks, node
#: options, report hooks).
EFFECTOR_MODELS = ('force', 'admittance', 'joints')
#: Robots the arms with joints can be (example-robot-data models, :mod:`..sim.physics.arm_models`).
ARM_ROBOTS = ('panda', 'ur5')

#: ``object_sim`` parameters of the admittance-controlled arms (docs/simulator.md, 8): the
#: controllers' own settings (ros2_controllers ``admittance_controller`` names), the arms'
#: reference motion, and how the simulator's truth differs from the nodes' configuration.
ADMITTANCE_PARAMS: tuple = (
    _p('effector_model', STRING, 'force',
       'force: ideal force-controlled effector bodies; admittance: position-controlled arm '
       'tips, each driven by an admittance controller fed with wrench_command as its '
       '~/wrench_reference (rigid contacts only); joints: arms with joints (Panda, UR5; '
       'needs pip install .[sim]) under the same admittance law, damped least squares and a '
       'joint position loop.', accepted=EFFECTOR_MODELS),
    _six('admittance_mass', [10.0, 10.0, 10.0, 0.5, 0.5, 0.5],
         'admittance.mass per axis of the control frame (the sensor frame) (kg, kg m^2).'),
    _six('admittance_damping_ratio', [1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
         'admittance.damping_ratio per axis: D = 2 zeta sqrt(M K).'),
    _six('admittance_stiffness', [0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
         'admittance.stiffness per axis, about the reference pose (N/m, N m/rad).'),
    _p('admittance_joint_damping', DOUBLE, 5.0,
       'admittance.joint_damping: the offset acceleration loses this times its velocity (1/s).',
       minimum=0.0),
    _p('admittance_filter_coefficient', DOUBLE, 0.05,
       'ft_sensor.filter_coefficient: exponential smoothing of reading + reference, per '
       'physics step; 1: none.', minimum=0.0, maximum=1.0, minimum_excluded=True),
    _p('admittance_cog_forces', DOUBLE_ARRAY, [],
       "gravity_compensation.CoG.force per effector: the controller's own tool weight (N); "
       'empty: 0.', constraints='one finite number >= 0 per effector, or empty'),
    _p('admittance_cog_positions', DOUBLE_ARRAY, [],
       'gravity_compensation.CoG.pos per effector, in the F/T sensor frame (m); empty: origin.',
       constraints='3 numbers per effector, or empty'),
    _positive('position_bandwidth', 60.0,
              "Bandwidth of each arm's position loop (rad/s): the tip follows the admittance "
              'output with this first-order lag.'),
    _p('contact_position_errors', DOUBLE_ARRAY, [],
       'Truth minus configuration of each contact position, object frame [x,y,z per '
       'effector] (m); the nodes keep contact_positions; empty: none.',
       constraints='3 numbers per effector, or empty'),
    _p('contact_orientation_errors', DOUBLE_ARRAY, [],
       'Truth relative to configuration of each contact orientation, rotation vector in the '
       'object frame [rx,ry,rz per effector] (rad); empty: none.',
       constraints='3 numbers per effector, or empty'),
    _positive('object_mass_ratio', 1.0,
              "Truth over configuration of the object's mass; the nodes keep object_mass."),
    _vector('object_com_error', [0.0, 0.0, 0.0],
            "Truth minus configuration of the object's centre of mass, object frame (m); the "
            'nodes keep object_com.'),
    _p('grasp_time', DOUBLE, 0.0,
       'Sim time at which the grippers close on the object (s): before it the arms hold still '
       'and transmit nothing (the object rests in its fixture, held at least until then), so '
       'the F/T sensors read their tools alone, as for a free tare.', minimum=0.0),
    _p('arm_move_start', DOUBLE, 1.0,
       "Start of the arms' reference move (s): the object_controller's move_start.", minimum=0.0),
    _positive('arm_move_duration', 2.0,
              "Duration of the arms' reference move (s): the object_controller's move_duration."),
    _vector('arm_move_offset', [0.0, 0.0, 0.0],
            "Translation of the arms' reference move, world axes (m): the controller's "
            'move_offset.'),
    _vector('arm_move_rotation', [0.0, 0.0, 0.0],
            "Rotation of the arms' reference move, rotation vector (rad): the controller's "
            'move_rotation.'),
    _tilts('arm_tilts', "Tilts of the arms' reference after the move: the controller's tilts."),
    _p('contact_shifts', DOUBLE_ARRAY, [],
       'Moves of every contact together in the object frame (a trunk swaying over its feet): '
       'each a minimum-jerk move from start for duration (s) to the offset [dx, dy, dz] (m) '
       'from the configured positions; contact_poses follow.',
       constraints='5 finite numbers per move [start, duration, dx, dy, dz], in time order, '
                   'not overlapping, or empty'),
    _tilts('free_tilts',
           'Turns of the open grippers before grasp_time (a tools-free calibration): the '
           'grippers and the fixture holding the object turn together about the object-frame '
           'origin, each tilt a minimum-jerk turn from start for duration (s) to the world '
           'rotation vector (rad) from the initial orientation; the last must be [0, 0, 0] '
           'and end before grasp_time.'),
)

#: ``object_sim`` parameters of the arms with joints (``effector_model: joints``;
#: docs/simulator.md, "Running the arms with joints").
JOINT_ARM_PARAMS: tuple = (
    _p('arm_robots', STRING_ARRAY, [],
       'Robot of each arm (example-robot-data models); empty: panda for every arm.',
       constraints=f'one of {", ".join(ARM_ROBOTS)} per effector, or empty'),
    _p('arm_base_positions', DOUBLE_ARRAY, [],
       'World position of each arm base [x,y,z per effector] (m); needed by '
       'effector_model joints.',
       constraints='3 numbers per effector (empty only without joints)'),
    _p('arm_base_orientations', DOUBLE_ARRAY, [],
       'World orientation of each arm base [qx,qy,qz,qw per effector]; empty: identity.',
       constraints='4 numbers per effector, or empty'),
    _p('arm_joint_guesses', DOUBLE_ARRAY, [],
       'Starting joint positions of the inverse kinematics that closes the chain, the arms '
       "one after the other (rad); empty: each robot's home.",
       constraints='nq numbers per arm (Panda 7, UR5 6), or empty'),
    _positive('joint_loop_bandwidth', 120.0,
              'Bandwidth of each joint position loop (rad/s): kp = m w^2, kd = 2 m w with m = '
              '1 / (M^-1)_jj, the inertia the joint moves with the others held, at the start '
              'configuration; integral at w/10.'),
    _positive('dls_damping', 0.05,
              'Largest damping of the damped least squares (reached at a singular pose).'),
    _positive('dls_singular_threshold', 0.08,
              'Smallest singular value of the flange Jacobian below which the damping grows.'),
    _positive('dls_limit_margin', 0.15,
              'Distance to a joint limit (rad) inside which a joint moving toward it is '
              'weighted down.'),
)

#: Parameter specs of ``object_sim``.
SIM_PARAMS: tuple = (
    _WORLD_FRAME,
    _shared('object_frame'),
    _shared('effectors'),
    _shared('contact_types'),
    _shared('contact_positions',
            description='Contact positions in the object frame [x,y,z per effector] (m).',
            constraints='3 numbers per effector, or empty (every contact at the origin)'),
    _shared('contact_orientations',
            description='Contact orientations in the object frame [qx,qy,qz,qw per effector]; '
                        'empty: identity.'),
    _shared('friction_coefficients'),
    _shared('contact_normals'),
    _OBJECT_MASS,
    _OBJECT_INERTIA,
    _shared('object_com'),
    _vector('initial_position', [0.0, 0.0, 0.0],
            'Initial position of the object frame in the world frame (m).'),
    _p('initial_orientation', DOUBLE_ARRAY, [0.0, 0.0, 0.0, 1.0],
       'Initial orientation of the object frame in the world frame [qx,qy,qz,qw].',
       constraints='4 numbers, not all zero'),
    _GRAVITY,
    _positive('effector_mass', 0.5, 'Mass of each effector body (kg).'),
    _positive('effector_inertia', 0.002,
              'Isotropic inertia of each rigid-contact effector body (kg m^2).'),
    _positive('grasp_stiffness', 1.0e4, 'Translational stiffness of each grasp spring (N/m).'),
    _p('grasp_damping', DOUBLE, 100.0, 'Translational damping of each grasp (N s/m).',
       minimum=0.0),
    _p('grasp_rot_stiffness', DOUBLE, 100.0,
       'Rotational stiffness of each rigid grasp (N m/rad).', minimum=0.0),
    _p('grasp_rot_damping', DOUBLE, 0.6, 'Rotational damping of each rigid grasp (N m s/rad).',
       minimum=0.0),
    _shared('sensor_positions'),
    _shared('sensor_orientations'),
    _shared('sensor_signs'),
    _shared('tool_masses'),
    _shared('tool_coms'),
    _p('sensor_force_noise', DOUBLE, 0.0,
       'Standard deviation of the white noise on each force reading (N).', minimum=0.0),
    _p('sensor_torque_noise', DOUBLE, 0.0,
       'Standard deviation of the white noise on each torque reading (N m).', minimum=0.0),
    _p('sensor_biases', DOUBLE_ARRAY, [],
       'Constant bias of each sensor [fx,fy,fz,tx,ty,tz per effector]; empty: none.',
       constraints='6 numbers per effector, or empty'),
    _p('noise_seed', INTEGER, 0, 'Seed of the sensor noise.', minimum=0),
    _p('sensor_faults', STRING_ARRAY, [],
       'Faults written into the published F/T readings: entries "<effector> <kind> <start s> '
       '<duration s> [<axis> <size>]", kind freeze, clip, drift or spike (docs/simulator.md, '
       '"Sensor faults"); empty: none.',
       constraints='entries "<effector> freeze|clip|drift|spike <start> <duration> [<axis> <size>]"'),
    _p('physics_rate', DOUBLE, 1000.0, 'Physics step rate (Hz).', minimum=1.0),
    _positive('publish_rate', 250.0,
              'Rate of /clock, the state and the sensors (Hz), a whole number of physics steps.'),
    _p('real_time_factor', DOUBLE, 1.0, 'Largest sim time per wall time; 0: as fast as possible.',
       minimum=0.0),
    _p('release_time', DOUBLE, 0.5, 'Sim time at which the fixture releases the object (s).',
       minimum=0.0),
    _p('start_timeout', DOUBLE, 30.0,
       "Wall time to wait for every effector's first command before the clock starts (s).",
       minimum=0.0),
    _p('duration', DOUBLE, 0.0, 'Sim time after which the node exits (s); 0: never.',
       minimum=0.0),
    _p('command_timeout', DOUBLE, 0.1, 'Commands older than this (s, sim time) count as zero.',
       minimum=0.0),
    _p('wait_for_subscribers', INTEGER, 0,
       'Subscribers each F/T topic must have before the clock starts.', minimum=0),
    _positive('contact_rate', 20.0, 'Rate of contact_poses (Hz, sim time).'),
    _p('marker_rate', DOUBLE, 10.0, 'Rate of ~/markers (Hz, sim time); 0: none.', minimum=0.0),
    _p('lockstep', BOOL, True,
       'After each publish, wait for the commands stamped with it (at most lockstep_timeout).'),
    _p('lockstep_timeout', DOUBLE, 0.5,
       'Longest wait for the commands of one step in lockstep (s, wall clock).', minimum=0.0),
) + ADMITTANCE_PARAMS + JOINT_ARM_PARAMS

#: Parameter specs of ``object_controller``.
CONTROLLER_PARAMS: tuple = (
    _WORLD_FRAME,
    _shared('object_frame'),
    _OBJECT_MASS,
    _OBJECT_INERTIA,
    _shared('object_com'),
    _GRAVITY,
    _p('position_gain', DOUBLE, 100.0, 'Position gain (1/s^2).', minimum=0.0),
    _p('velocity_gain', DOUBLE, 20.0, 'Velocity gain (1/s).', minimum=0.0),
    _p('orientation_gain', DOUBLE, 100.0, 'Orientation gain (1/s^2).', minimum=0.0),
    _p('angular_velocity_gain', DOUBLE, 20.0, 'Angular velocity gain (1/s).', minimum=0.0),
    _p('move_start', DOUBLE, 1.0, 'Sim time at which the move starts (s).', minimum=0.0),
    _positive('move_duration', 2.0, 'Duration of the minimum-jerk move (s).'),
    _vector('move_offset', [0.0, 0.0, 0.0], 'Translation of the move, world axes (m).'),
    _vector('move_rotation', [0.0, 0.0, 0.0], 'Rotation of the move, rotation vector (rad).'),
    _tilts('tilts', 'Tilts after the move: each a minimum-jerk turn from start for duration (s) '
                    'to the world rotation vector (rad) from the orientation the move ends in.'),
    _p('internal_load_schedule', STRING_ARRAY, [],
       'Internal load over time: entries "<time>: name=value, name=value" (handle names).',
       constraints='entries "<time>: basis_name=number, ..."'),
    _p('internal_load_rate', DOUBLE, 5.0, 'Rate of internal_load messages (Hz, sim time).',
       minimum=0.0),
    _p('contact_weights_schedule', STRING_ARRAY, [],
       "Contact weights over time, streamed on the distributor's contact_weights topic at "
       'internal_load_rate: entries "<time>: effector=weight, ..." (weights in [0, 1]; the '
       'effectors an entry does not name keep their weights).',
       constraints='entries "<time>: effector=number in [0, 1], ...", in time order'),
)

#: Parameter specs of ``baseline_distributor`` (the Moore-Penrose distribution).
BASELINE_PARAMS: tuple = tuple(_shared(name) for name in
                               ('object_frame', 'effectors', 'contact_types', 'object_com'))

#: Node name -> specs of the simulator's nodes (the kinds of ``validate_params``).
SIM_SPECS = {'object_sim': SIM_PARAMS, 'object_controller': CONTROLLER_PARAMS,
             'baseline_distributor': BASELINE_PARAMS}


def defaults_of(specs: tuple) -> dict:
    """Return the defaults of some specs.

    :param specs: parameter specs.
    :return: name -> default (fresh lists for arrays).
    """
    return {s.name: list(s.default) if isinstance(s.default, list) else s.default
            for s in specs}


#: Parameters and defaults of each simulator node (see docs/simulator.md).
SIM_DEFAULTS: dict = defaults_of(SIM_PARAMS)
CONTROLLER_DEFAULTS: dict = defaults_of(CONTROLLER_PARAMS)
BASELINE_DEFAULTS: dict = defaults_of(BASELINE_PARAMS)
