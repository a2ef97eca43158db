"""Simulated six-axis force/torque sensors: offset, sign, tool mass, bias and noise."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ...core.sensor_model import SensorModel
from ...core.spatial import inverse_pose, quaternion_to_matrix, transform_wrench


class SimulatedFTSensors:
    """The readings that n sensors, mounted as the core's :class:`SensorModel` says, report.

    This is the exact inverse of ``SensorModel.to_contact``: the wrench applied to the
    object (contact frame, about the contact point) is moved into the sensor frame about
    the sensor origin, the quasi-static weight of the tool between sensor and object is
    removed (the sensor carries the tool too), the sign convention is applied, and a
    constant bias and white Gaussian noise are added.

    :param models: one sensor model per effector.
    :param force_noise: standard deviation of each force component, N.
    :param torque_noise: standard deviation of each torque component, N*m.
    :param bias: constant offset (n, 6) added to the readings, or None for zero.
    :param seed: seed of the noise generator.
    """

    def __init__(self, models: Sequence[SensorModel], force_noise: float = 0.0,
                 torque_noise: float = 0.0, bias=None, seed: int = 0) -> None:
        self.models = list(models)
        n = len(self.models)
        self.rot = np.stack([quaternion_to_matrix(m.orientation) for m in self.models])
        inv = [inverse_pose(r, m.position) for r, m in zip(self.rot, self.models)]
        self.inv_rot = np.stack([p[0] for p in inv])
        self.inv_pos = np.stack([p[1] for p in inv])
        self.sign = np.array([m.sign for m in self.models], dtype=float)[:, None]
        self.tool_mass = np.array([m.tool_mass for m in self.models], dtype=float)[:, None]
        self.tool_com = np.array([m.tool_com for m in self.models], dtype=float)
        self.sigma = np.array([force_noise] * 3 + [torque_noise] * 3, dtype=float)
        self.bias = np.zeros((n, 6)) if bias is None or len(bias) == 0 else np.asarray(
            bias, dtype=float).reshape(n, 6)
        self.rng = np.random.default_rng(seed)

    def ideal(self, applied_contact: np.ndarray, gravity_contact: np.ndarray) -> np.ndarray:
        """Noise- and bias-free readings.

        :param applied_contact: (n, 6) wrench each effector applies to the object, in its
            contact frame about the contact point.
        :param gravity_contact: (n, 3) gravity vector in each contact frame, m/s^2.
        :return: (n, 6) readings in the sensor frames about the sensor origins.
        """
        in_sensor = transform_wrench(applied_contact, self.inv_rot, self.inv_pos)
        gravity_sensor = np.einsum('nji,nj->ni', self.rot, np.asarray(gravity_contact, float))
        weight = self.tool_mass * gravity_sensor
        tool = np.concatenate([weight, np.cross(self.tool_com, weight)], axis=-1)
        return self.sign * (in_sensor - tool)

    def read(self, applied_contact: np.ndarray, gravity_contact: np.ndarray) -> np.ndarray:
        """Return the readings, with bias and noise.

        :param applied_contact: see :meth:`ideal`.
        :param gravity_contact: see :meth:`ideal`.
        :return: (n, 6)
        """
        noise = self.rng.standard_normal(self.bias.shape) * self.sigma
        return self.ideal(applied_contact, gravity_contact) + self.bias + noise
