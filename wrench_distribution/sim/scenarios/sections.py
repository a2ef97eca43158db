"""Demo scenarios: parameter files ``config/demo_<name>.yaml`` and the objects built from them.

Each file is an ordinary ROS 2 parameter file with one section per node of the demo
(``object_sim``, ``object_controller``, ``wrench_distributor``, ``wrench_analyzer``,
``baseline_distributor``). Values shared by several nodes (effectors, contacts, centre of
mass) are repeated in each section; :func:`check_consistency` verifies that they agree.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

import numpy as np
import yaml

from ..physics.ft_sensor import SimulatedFTSensors
from ..physics.grasp import GraspCompliance
from ..physics.held_object import HeldObjectSim
from ...config.loading import sensor_models_from
from ...config.schema import ConfigError
from ...config.sim import BASELINE_DEFAULTS  # noqa: F401 (re-exported)
from ...config.validation import validate_params
from ...core.contacts import inertia_matrix
from ...core.spatial import matrix_to_quaternion, quaternion_to_matrix

SCENARIOS = ('dual_arm', 'three_finger_hand', 'quadruped_stance', 'dual_arm_admittance',
             'dual_arm_joints', 'dual_arm_real_cell', 'dual_arm_real_cell_tilt')

#: Sections of a demo file and their node names.
NODES = ('object_sim', 'object_controller', 'wrench_distributor', 'wrench_analyzer',
         'baseline_distributor')

#: Section (node name) -> kind of :func:`~wrench_distribution.config.validation.validate_params`.
SECTION_KINDS = {'object_sim': 'object_sim', 'object_controller': 'object_controller',
                 'wrench_distributor': 'distributor', 'wrench_analyzer': 'analyzer',
                 'baseline_distributor': 'baseline_distributor'}

#: Parameters that must be equal in every section that sets them.
SHARED = ('object_frame', 'effectors', 'contact_types', 'contact_positions',
          'contact_orientations', 'object_com', 'object_mass', 'friction_coefficients',
          'contact_normals')


def config_dir() -> Path:
    """Directory of the demo parameter files (source tree first, then the installed share).

    :return: path to ``config/``
    """
    here = Path(__file__).resolve().parents[3] / 'config'
    if here.is_dir():
        return here
    try:
        from ament_index_python.packages import get_package_share_directory
        return Path(get_package_share_directory('wrench_distribution')) / 'config'
    except Exception:  # noqa: BLE001 - no ament index: keep the source path
        return here


def scenario_file(name: str) -> Path:
    """Path of a scenario's parameter file.

    :param name: one of :data:`SCENARIOS`, or a path to a YAML file.
    :return: the file path
    :raises ValueError: for an unknown scenario
    """
    if os.path.sep in name or name.endswith('.yaml'):
        return Path(name)
    if name not in SCENARIOS:
        raise ValueError(f'unknown scenario {name!r}; choose one of: {", ".join(SCENARIOS)}')
    return config_dir() / f'demo_{name}.yaml'


def load_sections(name: str) -> dict:
    """Read a scenario file into ``{node_name: {param: value}}``.

    :param name: scenario name or file path.
    :return: the ``ros__parameters`` of each section
    """
    with open(scenario_file(name), 'r', encoding='utf-8') as f:
        data = yaml.safe_load(f)
    return {str(k).lstrip('/'): dict(v.get('ros__parameters') or {}) for k, v in data.items()}


def check_consistency(sections: Mapping[str, Mapping]) -> list:
    """List the shared parameters whose values differ between sections.

    :param sections: as returned by :func:`load_sections`.
    :return: human-readable problems (empty when consistent)
    """
    problems = []
    for key in SHARED:
        values = {node: p[key] for node, p in sections.items() if key in p}
        distinct = {repr(v) for v in values.values()}
        if len(distinct) > 1:
            problems.append(f'{key} differs: {values}')
    return problems


def validate_sections(sections: Mapping[str, Mapping]) -> dict:
    """Validate every section of a scenario with its node's schema.

    :param sections: as returned by :func:`load_sections`.
    :return: node name -> validated parameters (defaults filled in).
    :raises ConfigError: naming the node's parameter and its accepted values.
    """
    out = {}
    for node, params in sections.items():
        if node not in SECTION_KINDS:
            raise ConfigError(f'unknown section {node!r}; expected: {", ".join(NODES)}')
        try:
            out[node] = validate_params(SECTION_KINDS[node], params)
        except ConfigError as e:
            raise ConfigError(f'{node}: {e}') from None
    return out


def sim_params(params: Mapping) -> dict:
    """Return the simulator parameters validated by the schema, with defaults filled in.

    :param params: the ``object_sim`` section (or a subset).
    :return: complete dict
    :raises ConfigError: for an unknown parameter or a value the schema refuses (a
        ``ValueError``; the message names the parameter and the accepted values)
    """
    return validate_params('object_sim', params)


def _per_effector(values, n: int, width: int, default) -> np.ndarray:
    v = np.asarray(values, dtype=float).ravel()
    if v.size == 0:
        return np.tile(np.asarray(default, dtype=float), (n, 1))
    if v.size != n * width:
        raise ValueError(f'expected {width} numbers per effector ({n * width}), got {v.size}')
    return v.reshape(n, width)


def build_sim(params: Mapping) -> HeldObjectSim:
    """Build the physics of a scenario.

    :param params: ``object_sim`` parameters.
    :return: a simulator at its initial state
    """
    p = sim_params(params)
    n = len(p['effectors'])
    types = list(p['contact_types']) or ['rigid'] * n
    positions = _per_effector(p['contact_positions'], n, 3, [0, 0, 0])
    orientations = _per_effector(p['contact_orientations'], n, 4, [0, 0, 0, 1])
    if p['effector_model'] == 'admittance':
        return _build_arm_sim(p, positions, orientations, _sim_arguments(p, types))
    if p['effector_model'] == 'joints':
        from .joints import build_joint_sim
        return build_joint_sim(p, positions, orientations, build_sensors(p))
    return HeldObjectSim(contact_positions=positions, contact_orientations=orientations,
                         **_sim_arguments(p, types))


def true_object(p: Mapping) -> tuple:
    """Return the simulator's object: the configured mass and centre of mass plus their errors.

    :param p: validated ``object_sim`` parameters.
    :return: ``(mass, centre of mass (3,))`` of the truth
    """
    com = np.asarray(p['object_com'], float) + np.asarray(p['object_com_error'], float)
    return float(p['object_mass'] * p['object_mass_ratio']), com


def _sim_arguments(p: Mapping, types: list) -> dict:
    """Arguments of :class:`HeldObjectSim` other than the contact poses."""
    n = len(types)
    mass, com = true_object(p)
    return {
        'mass': mass, 'inertia': inertia_matrix(p['object_inertia']),
        'com': com, 'contact_types': types,
        'effector_mass': p['effector_mass'], 'effector_inertia': p['effector_inertia'],
        'compliance': GraspCompliance(p['grasp_stiffness'], p['grasp_damping'],
                                      p['grasp_rot_stiffness'], p['grasp_rot_damping']),
        'gravity': p['gravity'], 'position': p['initial_position'],
        'orientation': p['initial_orientation'],
        'friction': _friction(p['friction_coefficients'], n),
        'normals': _per_effector(p['contact_normals'], n, 3, [0, 0, 1])}


def _build_arm_sim(p: Mapping, positions: np.ndarray, orientations: np.ndarray, arguments: dict):
    """Build the admittance-arm physics: true contacts, sensors, laws, reference motion.

    :param p: validated ``object_sim`` parameters.
    :param positions: (n, 3) configured contact positions.
    :param orientations: (n, 4) configured contact quaternions.
    :param arguments: the other :class:`HeldObjectSim` arguments.
    :return: an :class:`~.arm_sim.ArmHeldObjectSim`
    """
    from ..physics.admittance_arms import ArmHeldObjectSim, laws_from, reference_motion, true_contacts
    n = len(positions)
    true_pos, true_rot = true_contacts(
        positions, orientations, _per_effector(p['contact_position_errors'], n, 3, [0, 0, 0]),
        _per_effector(p['contact_orientation_errors'], n, 3, [0, 0, 0]))
    sensors = build_sensors(p)
    configured = (positions, np.stack([quaternion_to_matrix(q) for q in orientations]))
    sensor_poses = (np.stack([np.asarray(m.position, float) for m in sensors.models]), sensors.rot)
    return ArmHeldObjectSim(
        sensors, laws_from(p), p['position_bandwidth'],
        reference_motion(p, configured, sensor_poses), contact_positions=true_pos,
        contact_orientations=np.stack([matrix_to_quaternion(r) for r in true_rot]), **arguments)


def _friction(values, n: int):
    """Per-effector Coulomb coefficients (<= 0 or empty: none), NaN where none."""
    v = np.asarray(values, dtype=float).ravel()
    if v.size == 0:
        return None
    if v.size != n:
        raise ValueError(f'friction_coefficients: expected {n} numbers, got {v.size}')
    return np.where(v > 0, v, np.nan)


def build_sensors(params: Mapping) -> SimulatedFTSensors:
    """Build the simulated sensors of a scenario.

    :param params: ``object_sim`` parameters.
    :return: the sensors
    """
    p = sim_params(params)
    return SimulatedFTSensors(sensor_models_from(p), p['sensor_force_noise'],
                              p['sensor_torque_noise'], p['sensor_biases'], int(p['noise_seed']))
