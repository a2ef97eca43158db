"""Simulated six-axis force/torque sensors: offset, sign, tool mass, bias and noise."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ...core.sensor_model import SensorModel


class SimulatedFTSensors:
    """The readings that n sensors, mounted as the core's :class:`SensorModel` says, report.

    Each reading is the model's own :meth:`SensorModel.reading`, the exact inverse of
    ``SensorModel.to_contact`` the analyzer applies: the wrench applied to the object (contact
    frame, about the contact point) moved into the sensor frame about the sensor origin, the
    quasi-static weight of the tool between sensor and object removed (the sensor carries
    the tool too), the sign convention applied; then a constant bias and white Gaussian noise
    are added. The truth (these models) and the nodes' belief (theirs) differ only by
    their parameters.

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
        #: (n, 3, 3) orientation of each sensor frame in its contact frame.
        self.rot = np.stack([m.rotation for m in self.models])
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
        applied = np.asarray(applied_contact, dtype=float)
        gravity = np.asarray(gravity_contact, dtype=float)
        return np.stack([model.reading(a, g) for model, a, g in zip(self.models, applied, gravity)])

    def read(self, applied_contact: np.ndarray, gravity_contact: np.ndarray) -> np.ndarray:
        """Return the readings, with bias and noise.

        :param applied_contact: see :meth:`ideal`.
        :param gravity_contact: see :meth:`ideal`.
        :return: (n, 6)
        """
        noise = self.rng.standard_normal(self.bias.shape) * self.sigma
        return self.ideal(applied_contact, gravity_contact) + self.bias + noise
