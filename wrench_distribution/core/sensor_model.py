"""From an F/T sensor reading to the wrench an effector applies to the object."""
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .errors import InvalidInputError
from .spatial import quaternion_to_matrix, transform_wrench
from .validation import finite_vector


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

    def __post_init__(self) -> None:
        if self.sign not in (1, -1):
            raise InvalidInputError(f'sensor sign must be +1 or -1, got {self.sign!r}')
        if not np.isfinite(self.tool_mass) or self.tool_mass < 0:
            raise InvalidInputError(f'tool_mass must be a non-negative number, got {self.tool_mass!r}')
        object.__setattr__(self, 'position', tuple(finite_vector(self.position, 3, 'sensor position')))
        object.__setattr__(self, 'tool_com', tuple(finite_vector(self.tool_com, 3, 'tool_com')))
        quaternion = finite_vector(self.orientation, 4, 'sensor orientation')
        quaternion_to_matrix(quaternion)
        object.__setattr__(self, 'orientation', tuple(quaternion))

    def to_contact(self, measured, gravity_contact) -> np.ndarray:
        """Wrench applied to the object, in the contact frame about the contact point.

        The reading is signed, the tool's weight (quasi-static: ``m g`` at the tool's centre
        of mass) is added, and the sum is transported with ``f' = R f``,
        ``t' = R t + p x (R f)``.

        :param measured: sensor wrench(es) (..., 6), sensor frame about the sensor origin.
        :param gravity_contact: gravity vector(s) in the contact frame, (3,) or (..., 3), m/s^2.
        :return: wrench(es) (..., 6) in the contact frame about the contact point.
        """
        measured = np.asarray(measured, dtype=float)
        rotation = quaternion_to_matrix(self.orientation)
        wrench = self.sign * measured
        if self.tool_mass:
            gravity_sensor = np.einsum('ji,...j->...i', rotation, np.asarray(gravity_contact, float))
            weight = self.tool_mass * gravity_sensor
            tool = np.concatenate(
                [np.broadcast_to(weight, wrench[..., :3].shape),
                 np.broadcast_to(np.cross(np.asarray(self.tool_com), weight), wrench[..., 3:].shape)],
                axis=-1,
            )
            wrench = wrench + tool
        return transform_wrench(wrench, rotation, np.asarray(self.position))
