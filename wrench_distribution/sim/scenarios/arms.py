"""Build the admittance-controlled arm tips (``effector_model: admittance``) from a scenario.

The tips carry the sensors and the grasps sit at the true contacts, while the arms'
reference poses are the configured (calibrated) contacts carried along the object
controller's planned move (docs/simulator.md, section 8). The arms with joints
(:mod:`.joints`) take their laws and reference from here too.
"""
from __future__ import annotations

from typing import Callable, Mapping

import numpy as np

from .parts import configured_contacts, held_object_arguments, true_contacts_of
from ..control.admittance import AdmittanceParameters
from ..control.object_controller import PoseController
from ..physics.admittance_arms import ArmHeldObjectSim
from ...config.arrays import rows
from ...config.schema import ConfigError
from ...core.spatial import matrix_to_quaternion, quaternion_to_matrix

#: The object controller's move parameters the arms' reference copies (``arm_<name>``).
MOVE_PARAMETERS = ('move_start', 'move_duration', 'move_offset', 'move_rotation', 'tilts')


def build_admittance_arms(p: Mapping) -> ArmHeldObjectSim:
    """Build the admittance-arm physics: true contacts, sensors, laws, reference motion.

    :param p: validated ``object_sim`` parameters.
    :return: the simulator at its initial state
    """
    positions, orientations = configured_contacts(p)
    true_pos, true_rot = true_contacts_of(p)
    arguments = held_object_arguments(p)
    sensors = arguments.pop('sensors')
    configured = (positions, np.stack([quaternion_to_matrix(q) for q in orientations]))
    sensor_poses = (np.stack([np.asarray(m.position, float) for m in sensors.models]), sensors.rot)
    return ArmHeldObjectSim(
        sensors, laws_from(p), p['position_bandwidth'],
        reference_motion(p, configured, sensor_poses), contact_positions=true_pos,
        contact_orientations=np.stack([matrix_to_quaternion(r) for r in true_rot]), **arguments)


def check_rigid_grasps(p: Mapping) -> None:
    """Refuse point contacts: the arms hold rigid grasps only.

    :param p: validated ``object_sim`` parameters.
    :raises ConfigError: naming ``effector_model`` and what it accepts
    """
    if 'point' in p['contact_types']:
        raise ConfigError("parameter 'effector_model': admittance arms hold rigid grasps only, "
                          f"got contact_types {p['contact_types']!r}; accepted: force, or "
                          'admittance or joints with rigid contacts')


def follow_controller_move(sections: dict) -> None:
    """Give the arms the object controller's planned move as their reference.

    The demo stretches the controller's times with ``--duration``; the arms' copy follows.

    :param sections: node name -> parameters (changed in place).
    """
    sim, ctl = sections['object_sim'], sections['object_controller']
    for name in MOVE_PARAMETERS:
        if name in ctl:
            value = ctl[name]  # a copy: a shared list would be written as a YAML alias
            sim['arm_' + name] = list(value) if isinstance(value, (list, tuple)) else value


def reference_motion(params: Mapping, contacts: tuple, sensor_poses: tuple) -> Callable:
    """Return the arms' reference poses: the configured grasps carried along the planned move.

    :param params: validated ``object_sim`` parameters (initial pose, ``arm_move_*``,
        ``arm_tilts``).
    :param contacts: ``(positions (n, 3), rotations (n, 3, 3))`` configured contacts in the
        object frame.
    :param sensor_poses: ``(positions (n, 3), rotations (n, 3, 3))`` sensors in the contacts.
    :return: ``t -> (positions (n, 3), rotations (n, 3, 3))``, world frame
    """
    plan = PoseController(1.0, np.eye(3), np.zeros(3), np.zeros(3),
                          offset=np.array(params['arm_move_offset']),
                          rotation=np.array(params['arm_move_rotation']),
                          start=params['arm_move_start'], duration=params['arm_move_duration'],
                          tilts=tuple(params['arm_tilts']))
    plan.origin = (np.array(params['initial_position'], float),
                   quaternion_to_matrix(params['initial_orientation']))
    c_pos, c_rot = contacts
    s_pos, s_rot = sensor_poses
    local_pos = c_pos + np.einsum('nij,nj->ni', c_rot, s_pos)
    local_rot = c_rot @ s_rot

    def reference(t: float) -> tuple:
        frame, rot = plan.reference(t)[:2]
        return frame + local_pos @ rot.T, rot @ local_rot
    return reference


def laws_from(params: Mapping) -> list:
    """One :class:`AdmittanceParameters` per arm from the ``object_sim`` parameters.

    :param params: validated ``object_sim`` parameters.
    :return: the laws
    """
    n = len(params['effectors'])
    forces = rows(params['admittance_cog_forces'], n, 1, (0.0,))[:, 0]
    cogs = rows(params['admittance_cog_positions'], n, 3, (0.0, 0.0, 0.0))
    return [AdmittanceParameters(params['admittance_mass'], params['admittance_damping_ratio'],
                                 params['admittance_stiffness'],
                                 params['admittance_joint_damping'],
                                 params['admittance_filter_coefficient'], forces[i], cogs[i])
            for i in range(n)]
