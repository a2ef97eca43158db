"""Simulator section of the schema: the parameters of the demo's own nodes.

``object_sim``, ``object_controller`` and ``baseline_distributor`` declare their parameters
through the same :class:`ParamSpec` as the distributor and the analyzer.

Each node's defaults are the reference (see docs/simulator.md); the specs take their types
from them.
"""
from __future__ import annotations

from typing import Mapping, Optional

from .schema import ParamSpec

#: Simulator parameters and defaults (see docs/simulator.md).
SIM_DEFAULTS: dict = {
    'world_frame': 'world',
    'object_frame': 'object',
    'effectors': [],
    'contact_types': [],
    'contact_positions': [],
    'contact_orientations': [],
    'friction_coefficients': [],
    'contact_normals': [],
    'object_mass': 1.0,
    'object_inertia': [0.01, 0.01, 0.01],
    'object_com': [0.0, 0.0, 0.0],
    'initial_position': [0.0, 0.0, 0.0],
    'initial_orientation': [0.0, 0.0, 0.0, 1.0],
    'gravity': [0.0, 0.0, -9.81],
    'effector_mass': 0.5,
    'effector_inertia': 0.002,
    'grasp_stiffness': 1.0e4,
    'grasp_damping': 100.0,
    'grasp_rot_stiffness': 100.0,
    'grasp_rot_damping': 0.6,
    'sensor_positions': [],
    'sensor_orientations': [],
    'sensor_signs': [],
    'tool_masses': [],
    'tool_coms': [],
    'sensor_force_noise': 0.0,
    'sensor_torque_noise': 0.0,
    'sensor_biases': [],
    'noise_seed': 0,
    'physics_rate': 1000.0,
    'publish_rate': 250.0,
    'real_time_factor': 1.0,
    'release_time': 0.5,
    'start_timeout': 30.0,
    'duration': 0.0,
    'command_timeout': 0.1,
    'wait_for_subscribers': 0,
    'contact_rate': 20.0,
    'marker_rate': 10.0,
    'lockstep': True,
    'lockstep_timeout': 0.5,
}

#: Parameters of the baseline (Moore-Penrose) distributor node.
BASELINE_DEFAULTS = {
    'object_frame': 'object',
    'effectors': [],
    'contact_types': [],
    'object_com': [0.0, 0.0, 0.0],
}

#: Controller parameters and defaults (see docs/simulator.md).
CONTROLLER_DEFAULTS = {
    'world_frame': 'world',
    'object_frame': 'object',
    'object_mass': 1.0,
    'object_inertia': [0.01, 0.01, 0.01],
    'object_com': [0.0, 0.0, 0.0],
    'gravity': [0.0, 0.0, -9.81],
    'position_gain': 100.0,
    'velocity_gain': 20.0,
    'orientation_gain': 100.0,
    'angular_velocity_gain': 20.0,
    'move_start': 1.0,
    'move_duration': 2.0,
    'move_offset': [0.0, 0.0, 0.0],
    'move_rotation': [0.0, 0.0, 0.0],
    'internal_load_schedule': [],
    'internal_load_rate': 5.0,
}

_EMPTY_TYPES = {
    'effectors': 'string_array', 'contact_types': 'string_array',
    'sensor_signs': 'integer_array', 'internal_load_schedule': 'string_array',
}


def specs_from_defaults(defaults: Mapping, descriptions: Optional[Mapping] = None) -> tuple:
    """Parameter specs whose types are those of the defaults.

    Empty lists are double arrays unless listed in ``_EMPTY_TYPES``.

    :param defaults: name -> default value.
    :param descriptions: name -> one-line description (optional).
    :return: tuple of :class:`ParamSpec`
    """
    out = []
    for name, value in defaults.items():
        if isinstance(value, bool):
            kind = 'bool'
        elif isinstance(value, int):
            kind = 'integer'
        elif isinstance(value, float):
            kind = 'double'
        elif isinstance(value, str):
            kind = 'string'
        elif not value:
            kind = _EMPTY_TYPES.get(name, 'double_array')
        elif isinstance(value[0], str):
            kind = 'string_array'
        elif isinstance(value[0], int) and not isinstance(value[0], bool):
            kind = 'integer_array'
        else:
            kind = 'double_array'
        text = (descriptions or {}).get(name, name.replace('_', ' '))
        out.append(ParamSpec(name, kind, value, text))
    return tuple(out)


#: Parameter specs of each simulator node, by node name.
SIM_PARAMS: tuple = specs_from_defaults(SIM_DEFAULTS)
CONTROLLER_PARAMS: tuple = specs_from_defaults(CONTROLLER_DEFAULTS)
BASELINE_PARAMS: tuple = specs_from_defaults(BASELINE_DEFAULTS)
