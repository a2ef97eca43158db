"""Build the ``dual_arm_joints`` physics from the ``object_sim`` parameters (needs ``.[sim]``).

Arms from :mod:`..physics.arm_models` at their configured bases; the truth's grippers weigh
``tool_masses`` at ``tool_coms`` (the sensors' truth), the controllers' models the
grippers the controllers believe in (``admittance_cog_forces / g`` at
``admittance_cog_positions``); compliant grasps at the true contacts (the configured ones
moved by ``contact_position_errors`` / ``contact_orientation_errors``); the arms' reference
poses are the configured contacts carried along the planned move, as for the admittance
arm tips (:mod:`.arms`). The model's own checks and the test that its optional extra is
installed are here too (:mod:`.models` names them).
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

from .arms import laws_from, reference_motion
from .parts import build_sensors, configured_contacts, true_contacts_of, true_object
from ..physics.arm_models import load_arm, pinocchio
from ..physics.closed_chain import ClosedChain, Grasp
from ..physics.joint_arms import DlsSettings, drive_gains, JointArmController, JointArmsSim
from ...config.arrays import rows as per_effector
from ...core.contacts import inertia_matrix
from ...core.spatial import quaternion_to_matrix


def _arms(p: Mapping, gripper_masses, gripper_coms) -> list:
    """Load one :class:`~.arm_models.ArmModel` per effector with the given grippers."""
    n = len(p['effectors'])
    robots = list(p['arm_robots']) or ['panda'] * n
    bases = per_effector(p['arm_base_positions'], n, 3, [0, 0, 0])
    turns = per_effector(p['arm_base_orientations'], n, 4, [0, 0, 0, 1])
    return [load_arm(robot, name, pinocchio.SE3(quaternion_to_matrix(turn), base),
                     float(mass), tuple(com))
            for robot, name, base, turn, mass, com in zip(
                robots, p['effectors'], bases, turns, gripper_masses, gripper_coms)]


def _guesses(p: Mapping, arms: list) -> list:
    """Return the starting joint positions of the closing inverse kinematics, per arm."""
    values = np.asarray(p['arm_joint_guesses'], float)
    if values.size == 0:
        return [arm.home.copy() for arm in arms]
    sizes = np.cumsum([arm.model.nq for arm in arms])
    if values.size != sizes[-1]:
        raise ValueError(f"arm_joint_guesses: expected {sizes[-1]} numbers (the arms' joints "
                         f'one after the other), got {values.size}')
    return np.split(values, sizes[:-1])


def build_joint_sim(p: Mapping) -> JointArmsSim:
    """Build the arms with joints, the object, the grasps, the controllers, at rest.

    :param p: validated ``object_sim`` parameters.
    :return: the simulator, its chain closed at the initial object pose; its flange F/T
        sensors are :func:`.parts.build_sensors`'
    :raises ValueError: when an arm cannot reach its grasp, or a bad parameter
    """
    positions, orientations = configured_contacts(p)
    n = len(positions)
    sensors = build_sensors(p)
    true_pos, true_rot = true_contacts_of(p)
    truth = _arms(p, [m.tool_mass for m in sensors.models], [m.tool_com for m in sensors.models])
    laws = laws_from(p)
    gravity = float(np.linalg.norm(p['gravity']))
    believed = _arms(p, [law.cog_force / gravity if gravity else 0.0 for law in laws],
                     [law.cog_position for law in laws])
    stiffness = np.array([p['grasp_stiffness']] * 3 + [p['grasp_rot_stiffness']] * 3)
    damping = np.array([p['grasp_damping']] * 3 + [p['grasp_rot_damping']] * 3)
    grasps = [Grasp(pinocchio.SE3(rot, pos), stiffness, damping)
              for pos, rot in zip(true_pos, true_rot)]
    mass, com = true_object(p)
    inertia = pinocchio.Inertia(mass, com, inertia_matrix(p['object_inertia']))
    chain = ClosedChain(truth, inertia, grasps, gravity=p['gravity'])
    start = pinocchio.SE3(quaternion_to_matrix(p['initial_orientation']),
                          np.asarray(p['initial_position'], float))
    state = chain.close(_guesses(p, truth), start)
    configured = (positions, np.stack([quaternion_to_matrix(q) for q in orientations]))
    flanges = (np.zeros((n, 3)), np.tile(np.eye(3), (n, 1, 1)))
    dls = DlsSettings(p['dls_damping'], p['dls_singular_threshold'], p['dls_limit_margin'])
    controllers = [JointArmController(arm, law,
                                      drive_gains(arm, p['joint_loop_bandwidth'], q), q, dls)
                   for arm, law, q in zip(believed, laws, state.q)]
    return JointArmsSim(chain, controllers, sensors, reference_motion(p, configured, flanges),
                        state, com)
