"""What every effector model is built from: the true object and contacts, the sensors, the grasps.

The nodes know a belief (the configured contacts, mass and centre of mass); the simulator
builds the truth from it and the ``object_sim`` errors (``object_mass_ratio``,
``object_com_error``, ``contact_position_errors``, ``contact_orientation_errors``). Every
function takes the validated ``object_sim`` parameters (:func:`.sections.sim_params`).
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

from ..physics.ft_sensor import SimulatedFTSensors
from ..physics.grasp import GraspCompliance
from ..physics.held_object import HeldObjectSim
from ...config.arrays import rows as per_effector
from ...config.nodes import sensor_models
from ...core.contacts import inertia_matrix
from ...core.spatial import exp_so3, quaternion_to_matrix


def configured_contacts(p: Mapping) -> tuple:
    """Return the configured contacts (the nodes' belief), object frame.

    :param p: validated ``object_sim`` parameters.
    :return: ``(positions (n, 3), quaternions (n, 4))``
    """
    n = len(p['effectors'])
    return (per_effector(p['contact_positions'], n, 3, [0, 0, 0]),
            per_effector(p['contact_orientations'], n, 4, [0, 0, 0, 1]))


def true_object(p: Mapping) -> tuple:
    """Return the simulator's object: the configured mass and centre of mass plus their errors.

    :param p: validated ``object_sim`` parameters.
    :return: ``(mass, centre of mass (3,))`` of the truth
    """
    com = np.asarray(p['object_com'], float) + np.asarray(p['object_com_error'], float)
    return float(p['object_mass'] * p['object_mass_ratio']), com


def true_contacts(positions: np.ndarray, quaternions: np.ndarray, position_errors,
                  orientation_errors) -> tuple:
    """Return the simulator's contacts: the configured ones moved by the calibration errors.

    :param positions: (n, 3) configured contact positions, object frame.
    :param quaternions: (n, 4) configured orientations.
    :param position_errors: (n, 3) truth minus configuration, object frame, m.
    :param orientation_errors: (n, 3) rotation vectors (object frame) from configuration to
        truth, rad.
    :return: ``(positions (n, 3), rotations (n, 3, 3))`` of the truth
    """
    rot = np.stack([quaternion_to_matrix(q) for q in quaternions])
    turned = np.stack([exp_so3(np.asarray(e, float)) @ r for e, r in zip(orientation_errors, rot)])
    return positions + position_errors, turned


def true_contacts_of(p: Mapping) -> tuple:
    """Return the simulator's contacts of a scenario (:func:`true_contacts` of its parameters).

    :param p: validated ``object_sim`` parameters.
    :return: ``(positions (n, 3), rotations (n, 3, 3))`` of the truth
    """
    n = len(p['effectors'])
    return true_contacts(*configured_contacts(p),
                         per_effector(p['contact_position_errors'], n, 3, [0, 0, 0]),
                         per_effector(p['contact_orientation_errors'], n, 3, [0, 0, 0]))


def build_sensors(p: Mapping) -> SimulatedFTSensors:
    """Build the simulated sensors of a scenario (the truth: tools, signs, biases, noise).

    :param p: validated ``object_sim`` parameters.
    :return: the sensors
    """
    return SimulatedFTSensors(list(sensor_models(p)), p['sensor_force_noise'],
                              p['sensor_torque_noise'], p['sensor_biases'], int(p['noise_seed']))


def held_object_arguments(p: Mapping) -> dict:
    """Return the :class:`HeldObjectSim` arguments other than the contact poses.

    :param p: validated ``object_sim`` parameters.
    :return: keyword arguments (the true object, the grasps, the sensors, friction)
    """
    n = len(p['effectors'])
    mass, com = true_object(p)
    return {
        'mass': mass, 'inertia': inertia_matrix(p['object_inertia']),
        'com': com, 'contact_types': list(p['contact_types']) or ['rigid'] * n,
        'effector_mass': p['effector_mass'], 'effector_inertia': p['effector_inertia'],
        'compliance': GraspCompliance(p['grasp_stiffness'], p['grasp_damping'],
                                      p['grasp_rot_stiffness'], p['grasp_rot_damping']),
        'gravity': p['gravity'], 'position': p['initial_position'],
        'orientation': p['initial_orientation'],
        'friction': _friction(p['friction_coefficients'], n),
        'normals': per_effector(p['contact_normals'], n, 3, [0, 0, 1]),
        'sensors': build_sensors(p)}


def build_held_object(p: Mapping) -> HeldObjectSim:
    """Build the ideal force-controlled effector bodies at the configured contacts.

    :param p: validated ``object_sim`` parameters.
    :return: the simulator at its initial state
    """
    positions, orientations = configured_contacts(p)
    return HeldObjectSim(contact_positions=positions, contact_orientations=orientations,
                         **held_object_arguments(p))


def _friction(values, n: int):
    """Per-effector Coulomb coefficients (<= 0 or empty: none), NaN where none."""
    v = np.asarray(values, dtype=float).ravel()
    if v.size == 0:
        return None
    if v.size != n:
        raise ValueError(f'friction_coefficients: expected {n} numbers, got {v.size}')
    return np.where(v > 0, v, np.nan)
