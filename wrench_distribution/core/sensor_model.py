"""From an F/T sensor reading to the wrench an effector applies to the object."""
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from .errors import InvalidInputError
from .spatial import cross, quaternion_to_matrix, skew
from .validation import finite_vector


def weight_wrench(mass, moment, gravity) -> np.ndarray:
    """Wrench of a body's weight about the frame origin: ``[m g; (m c) x g]``.

    Linear in ``mass`` and in the first moment of mass ``moment = m c`` (the one tool-weight
    formula: the sensor model and the calibration use it both).

    :param mass: mass (kg).
    :param moment: first moment of mass ``m c`` (3,) or (..., 3) in the frame (kg m).
    :param gravity: gravity vector(s) (3,) or (..., 3) in the same frame (m/s^2).
    :return: wrench(es) (..., 6) about the origin.
    """
    gravity = np.asarray(gravity, float)
    return np.concatenate([mass * gravity, cross(np.asarray(moment, float), gravity)], axis=-1)


@dataclass(frozen=True)
class SensorModel:
    """Where a sensor sits relative to its contact and what it reports.

    :param position: sensor origin in the contact frame.
    :param orientation: sensor frame orientation in the contact frame, ``[qx, qy, qz, qw]``.
    :param sign: ``+1`` if the sensor reports the wrench the effector applies to the object,
        ``-1`` if it reports the wrench acting on the sensor (the reaction).
    :param tool_mass: mass in kg of what hangs between the sensor and the object.
    :param tool_com: centre of mass of that tool in the sensor frame.
    """

    position: Sequence[float] = (0.0, 0.0, 0.0)
    orientation: Sequence[float] = (0.0, 0.0, 0.0, 1.0)
    sign: int = 1
    tool_mass: float = 0.0
    tool_com: Sequence[float] = (0.0, 0.0, 0.0)
    #: rotation matrix of ``orientation`` (computed once, not per reading)
    rotation: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.sign not in (1, -1):
            raise InvalidInputError(f'sensor sign must be +1 or -1, got {self.sign!r}')
        if not np.isfinite(self.tool_mass) or self.tool_mass < 0:
            raise InvalidInputError(f'tool_mass must be a non-negative number, got {self.tool_mass!r}')
        object.__setattr__(self, 'position', tuple(finite_vector(self.position, 3, 'sensor position')))
        object.__setattr__(self, 'tool_com', tuple(finite_vector(self.tool_com, 3, 'tool_com')))
        quaternion = finite_vector(self.orientation, 4, 'sensor orientation')
        object.__setattr__(self, 'rotation', quaternion_to_matrix(quaternion))
        object.__setattr__(self, 'orientation', tuple(quaternion))

    def transport(self) -> np.ndarray:
        """Matrix ``T`` (6, 6) moving a wrench from the sensor frame to the contact frame.

        ``[f'; t'] = T [f; t]`` with ``f' = R f`` and ``t' = R t + p x (R f)``.

        :return: ``T``.
        """
        t = np.zeros((6, 6))
        t[:3, :3] = t[3:, 3:] = self.rotation
        t[3:, :3] = skew(self.position) @ self.rotation
        return t

    def inverse_transport(self) -> np.ndarray:
        """Matrix ``T^-1`` (6, 6) moving a wrench from the contact frame to the sensor frame.

        ``f = R^T f'`` and ``t = R^T (t' - p x f')``, about the sensor origin.

        :return: ``T^-1``.
        """
        back = self.rotation.T
        t = np.zeros((6, 6))
        t[:3, :3] = t[3:, 3:] = back
        t[3:, :3] = -back @ skew(self.position)
        return t

    def tool_wrench(self, gravity_contact) -> np.ndarray:
        """Weight of the tool (quasi-static: ``m g`` at its centre of mass), sensor frame.

        :param gravity_contact: gravity vector(s) in the contact frame, (3,) or (..., 3), m/s^2.
        :return: wrench(es) (..., 6) about the sensor origin.
        """
        gravity_sensor = np.asarray(gravity_contact, float) @ self.rotation  # R^T g
        return weight_wrench(self.tool_mass, self.tool_mass * np.asarray(self.tool_com), gravity_sensor)

    def to_contact(self, measured, gravity_contact) -> np.ndarray:
        """Wrench applied to the object, in the contact frame about the contact point.

        The reading is signed, the tool's weight is added, and the sum is transported
        (:meth:`transport`).

        :param measured: sensor wrench(es) (..., 6), sensor frame about the sensor origin.
        :param gravity_contact: gravity vector(s) in the contact frame, (3,) or (..., 3), m/s^2.
        :return: wrench(es) (..., 6) in the contact frame about the contact point.
        """
        wrench = self.sign * np.asarray(measured, dtype=float)
        if self.tool_mass:
            wrench = wrench + self.tool_wrench(gravity_contact)
        return wrench @ self.transport().T

    def reading(self, applied_contact, gravity_contact) -> np.ndarray:
        """Return what the sensor reads, without bias or noise: the inverse of :meth:`to_contact`.

        The wrench applied to the object is moved to the sensor frame (:meth:`inverse_transport`),
        the tool's weight taken off (the sensor carries it too) and the sign applied. The
        simulator's sensors read through it, so their truth differs from the analyzer's belief
        only by the parameters of the two models.

        :param applied_contact: wrench(es) (..., 6) the effector applies to the object, contact
            frame about the contact point.
        :param gravity_contact: gravity vector(s) in the contact frame, (3,) or (..., 3), m/s^2.
        :return: reading(s) (..., 6), sensor frame about the sensor origin.
        """
        wrench = np.asarray(applied_contact, dtype=float) @ self.inverse_transport().T
        if self.tool_mass:
            wrench = wrench - self.tool_wrench(gravity_contact)
        return self.sign * wrench

    def affine(self, gravity_contact) -> tuple:
        """Return the reading-to-contact map for one gravity vector: ``h = A m + b``.

        :param gravity_contact: gravity vector (3,) in the contact frame, m/s^2.
        :return: ``(A (6, 6), b (6,))``.
        """
        transport = self.transport()
        return self.sign * transport, transport @ self.tool_wrench(gravity_contact)
