"""The simulator's truth: what each effector really applies, and the internal load it makes (no ROS).

The nodes know a belief (the configured contacts, the object's configured mass and centre of
mass); the simulator knows the truth (the contacts moved by ``contact_position_errors`` and
``contact_orientation_errors``, the object by ``object_mass_ratio`` and ``object_com_error``).
:class:`TruthReadout` turns the wrenches the simulator applies at the true contacts into:

- the resultant on the object, object axes about its true centre of mass;
- where the true geometry differs, the true internal load in the *true contacts' basis*:
  the package's own ``LoadDistributor.analyze`` built on the true contacts and the true
  object, reading the true wrenches where they act. The named elements on the actual
  geometry (the squeeze along the line joining the actual contacts...): the yardstick every
  run is judged on;
- the true internal load *in the believed basis*: each true wrench moved (``f' = R f``,
  ``t' = R t + p x (R f)``) from its true contact to the believed one, in the believed
  contact frame, then read out on the believed geometry. It is what the analyzer would
  report with perfect sensors, tools and biases but the believed grasps; the transport adds
  the lever arms of the belief's position errors, ``(p_true - p_believed) x f``, which no
  effector applies (25 N x 3 mm = 0.075 N*m): a secondary figure, and the yardstick only
  where the true geometry is the belief.

See docs/simulator.md, "The truth", and docs/theory.md, "The truth's yardstick".
"""
from __future__ import annotations

from dataclasses import replace
from typing import Mapping, Optional

import numpy as np

from wrench_distribution.core.spatial import cross, matrix_to_quaternion, quaternion_to_matrix


def _distributor(contacts, mass: float, com):
    """Return the package's read-out on these contacts (default options), or None when refused."""
    from wrench_distribution.core import LoadDistributor, ObjectModel
    if contacts is None:
        return None
    try:
        return LoadDistributor(contacts, ObjectModel(com=tuple(float(c) for c in com), mass=mass))
    except ValueError:  # the core refuses a degenerate geometry: the wrenches alone are known
        return None


class TruthReadout:
    """The truth's figures from the wrenches applied at the true contacts.

    :param params: validated ``object_sim`` parameters (the belief: ``contact_positions``,
        ``contact_orientations``, ``object_mass``, ``object_com``; the truth's errors).
    :param true_positions: (n, 3) true contact points, object frame (the simulator's).
    :param true_rotations: (n, 3, 3) true contact frames in the object frame.
    """

    def __init__(self, params: Mapping, true_positions, true_rotations) -> None:
        from wrench_distribution.config.nodes import static_contacts
        from .parts import true_object
        self.true_positions = np.asarray(true_positions, float).reshape(-1, 3)
        self.true_rotations = np.asarray(true_rotations, float).reshape(-1, 3, 3)
        n = len(self.true_positions)
        self.mass, self.com = true_object(params)
        believed = static_contacts(params)
        self.believed = _distributor(believed, params['object_mass'], params['object_com'])
        if believed is None:
            self.believed_positions, self.believed_rotations = self.true_positions, self.true_rotations
        else:
            self.believed_positions = np.array([c.position for c in believed], float)
            self.believed_rotations = np.stack([quaternion_to_matrix(c.orientation)
                                                for c in believed])
        differs = not (np.allclose(self.believed_positions, self.true_positions, atol=1e-12)
                       and np.allclose(self.believed_rotations, self.true_rotations, atol=1e-12)
                       and np.allclose(self.com, params['object_com'], atol=1e-12)
                       and self.mass == params['object_mass'])
        self.true = None
        if differs and believed is not None:
            true = [replace(c, position=tuple(p), orientation=tuple(matrix_to_quaternion(r)))
                    for c, p, r in zip(believed, self.true_positions, self.true_rotations)]
            self.true = _distributor(true, self.mass, self.com)
        self.n = n

    @property
    def basis_names(self) -> list:
        """Names of the believed basis (the analyzer's), empty when there is no read-out."""
        return [] if self.believed is None else list(self.believed.basis_names)

    @property
    def true_basis_names(self) -> list:
        """Names of the true contacts' basis, empty when the truth is the belief."""
        return [] if self.true is None else list(self.true.basis_names)

    def object_axes(self, contact_wrenches) -> np.ndarray:
        """Return the true wrenches in object axes, each about its true contact.

        :param contact_wrenches: (n, 6) true contact frames about the true contacts.
        :return: (n, 6)
        """
        w = np.asarray(contact_wrenches, float).reshape(self.n, 6)
        return np.concatenate([np.einsum('nij,nj->ni', self.true_rotations, w[:, :3]),
                               np.einsum('nij,nj->ni', self.true_rotations, w[:, 3:])], axis=1)

    def resultant(self, contact_wrenches) -> np.ndarray:
        """Return the sum of the true wrenches, object axes, about the true centre of mass.

        :param contact_wrenches: (n, 6) true contact frames about the true contacts.
        :return: (6,)
        """
        w = self.object_axes(contact_wrenches)
        torque = w[:, 3:] + cross(self.true_positions - self.com, w[:, :3])
        return np.concatenate([w[:, :3].sum(axis=0), torque.sum(axis=0)])

    def at_believed(self, contact_wrenches) -> np.ndarray:
        """Move the true wrenches to the believed contacts, in the believed contact frames.

        :param contact_wrenches: (n, 6) true contact frames about the true contacts.
        :return: (n, 6) believed contact frames about the believed contacts
        """
        w = self.object_axes(contact_wrenches)
        torque = w[:, 3:] + cross(self.true_positions - self.believed_positions, w[:, :3])
        back = np.swapaxes(self.believed_rotations, -1, -2)
        return np.concatenate([np.einsum('nij,nj->ni', back, w[:, :3]),
                               np.einsum('nij,nj->ni', back, torque)], axis=1)

    def internal_loads(self, contact_wrenches) -> tuple:
        """Return the true internal load in the believed basis and in the true contacts' basis.

        :param contact_wrenches: (n, 6) true contact frames about the true contacts.
        :return: ``(believed (m,) or None, true (m,) or None)``
        """
        believed: Optional[np.ndarray] = None
        true: Optional[np.ndarray] = None
        if self.believed is not None:
            believed = np.asarray(self.believed.analyze(self.at_believed(contact_wrenches))
                                  .internal_load, float)
        if self.true is not None:
            true = np.asarray(self.true.analyze(contact_wrenches).internal_load, float)
        return believed, true
