"""Raw F/T readings -> contact wrenches: the analysis engine's sensor models, biases and tare (no ROS).

Per sample, ``h = A (m - b) + B g_o`` (:mod:`.sensing`): ``A`` moves a signed reading from
the sensor frame to the contact, ``b`` is the sensor's bias, ``B g_o`` the tool's weight at
the contact for gravity ``g_o`` in the object frame. ``A`` and ``B`` are built once per
contact configuration (configured sensors) or per looked-up sensor pose (``sensor_frames``);
with configured sensors and constant gravity, ``B g_o - A b`` is one offset.
"""
from typing import Callable, Optional, Sequence

import numpy as np

from wrench_distribution.core import spatial as Q
from .poses import sensor_models_at
from .sensing import parse_biases, tare_biases, TareWindow


class SensorStage:
    """The sensors of one analysis engine.

    :param sensors: one core ``SensorModel`` per effector.
    :param gravity: gravity (3,) when constant in the object frame (m/s^2).
    :param biases: ``sensor_biases`` (6 n numbers, or empty).
    """

    def __init__(self, sensors: Sequence, gravity, biases) -> None:
        self.sensors = list(sensors)
        self.n = len(self.sensors)
        self.gravity = np.asarray(gravity, float)
        self.biases = parse_biases(biases, self.n)
        #: samples recorded for a tare (:meth:`record_tare`), or None
        self.tare_window: Optional[TareWindow] = None
        #: samples recorded for a calibration (``engine/calibration.py``), or None
        self.recorder = None
        self._quaternions: Optional[np.ndarray] = None  # contact orientations of the solver
        self._map: tuple = ()  # (gain (n, 6, 6), gravity map (n, 6, 3)), configured sensors
        self._offset: Optional[np.ndarray] = None  # B g - A b of the configured sensors

    def record_tare(self, window: Optional[TareWindow]) -> None:
        """Record the analysed samples' readings into ``window`` (None: stop recording)."""
        self.tare_window = window

    def set_recorder(self, recorder) -> None:
        """Record the analysed samples for a calibration into ``recorder`` (None: stop)."""
        self.recorder = recorder

    def rebuilt(self, quaternions: np.ndarray) -> None:
        """Rebuild the maps for a new solver's contact orientations.

        :param quaternions: (n, 4) the contacts' orientations in the object frame.
        """
        self._quaternions = np.asarray(quaternions, float)
        self._map = self.affine(None)
        self._offset = None

    def set_biases(self, biases) -> None:
        """Use new sensor biases (6 n numbers, or empty for none)."""
        self.biases = parse_biases(biases, self.n)
        self._offset = None

    def set_sensors(self, sensors: Sequence) -> None:
        """Use new sensor models (a calibration's tools and mounting rotations)."""
        self.sensors = list(sensors)
        if self._quaternions is not None:
            self._map = self.affine(None)
        self._offset = None

    def affine(self, sensor_pose: Optional[np.ndarray]) -> tuple:
        """Return the map from readings to contact wrenches, ``h_i = A_i m_i + B_i g_o``.

        The tools' weight is linear in gravity: column ``k`` of ``B_i`` is the weight's
        wrench at the contact for ``g_o = e_k`` (rotated into each contact frame,
        ``R_i^T e_k``, with the orientations the solver was built for).

        :param sensor_pose: (n, 7) sensor poses in their contact frames, or None for the
            configured ones.
        :return: ``(A (n, 6, 6), B (n, 6, 3))``.
        """
        models = sensor_models_at(self.sensors, sensor_pose)
        gain = np.stack([s.affine(np.zeros(3))[0] for s in models])
        weight = np.zeros((self.n, 6, 3))
        for k, axis in enumerate(np.eye(3)):
            g_contact = Q.rotate_inverse(self._quaternions, axis)
            weight[:, :, k] = [s.affine(g)[1] for s, g in zip(models, g_contact)]
        return gain, weight

    def contact_wrenches(self, readings: np.ndarray, pose: np.ndarray,
                         sensor_pose: Optional[np.ndarray], gravity: Optional[np.ndarray],
                         stamps_ns: np.ndarray, contact_weights: Optional[np.ndarray] = None) -> np.ndarray:
        """Contact wrenches (k, n, 6) of readings sharing one contact configuration.

        Records them for a tare or a calibration when one is recording.

        :param readings: (k, n, 6) raw readings, sensor frames.
        :param pose: (n, 7) contact poses (the calibration's record).
        :param sensor_pose: (n, 7) looked-up sensor poses, or None (configured).
        :param gravity: (k, 3) gravity in the object frame per sample, or None (constant).
        :param stamps_ns: (k,) sample stamps.
        :param contact_weights: (n,) the contact weights of their read-out (the tare's; None: all 1).
        :return: the contact wrenches.
        """
        gain, weight = self._map if sensor_pose is None else self.affine(sensor_pose)
        if gravity is None and sensor_pose is None:
            if self._offset is None:  # configured sensors, constant gravity: one offset
                self._offset = (np.einsum('nij,j->ni', weight, self.gravity)
                                - np.einsum('nij,nj->ni', gain, self.biases))
            contact = np.einsum('nij,knj->kni', gain, readings) + self._offset
        else:
            g = np.broadcast_to(self.gravity, (len(readings), 3)) if gravity is None else gravity
            contact = (np.einsum('nij,knj->kni', gain, readings)
                       + np.einsum('nij,kj->kni', weight, g)
                       - np.einsum('nij,nj->ni', gain, self.biases))
        if self.tare_window is not None:  # the tare's A m + B g_o is formed when it is asked for
            self.tare_window.add(stamps_ns, readings, gain, weight,
                                 self.gravity if gravity is None else gravity, contact_weights)
        if self.recorder is not None:
            self.recorder.add(stamps_ns, readings, pose, sensor_pose,
                              self.gravity if gravity is None else gravity)
        return contact

    def tare(self, state: str, mass: float, solver_at: Callable[[np.ndarray], object], need: int = 0) -> tuple:
        """Biases from the recorded window (:func:`~.sensing.tare_biases`).

        :param state: ``free`` (every contact wrench is zero) or ``held`` (held at rest by
            the contacts alone, without internal load).
        :param mass: the object's mass (``held``).
        :param solver_at: ``weights (n,) -> solver`` of the contacts at these weights, or None
            before any contact pose (``held``: the object's weight on the contacts the window's
            samples were read out with).
        :param need: samples the window must hold (0: any).
        :return: ``(biases (n, 6), spread (n, 6), samples used)``.
        :raises ValueError: on a short or empty window, a ``held`` tare without a mass or a
            solver, or over samples read out with different contact weights.
        """
        window = self.tare_window
        if window is None:
            raise ValueError('no tare window is being recorded')
        if len(window.rows) < need:
            raise ValueError(f'only {len(window.rows)} of tare_samples={need} samples '
                             'recorded since the start or the last change')
        _, gains, unbiased, gravity = window.arrays()
        expected = None
        if state == 'held':
            distributor = solver_at(window.contact_weights(self.n)) if mass else None
            if distributor is None:
                raise ValueError("a 'held' tare needs object_mass > 0 and known contacts")
            weight = np.concatenate([-mass * gravity, np.zeros_like(gravity)], axis=1)
            expected = distributor.synthesize_batch(weight).wrench_contact
        biases, spread = tare_biases(gains, unbiased, expected)
        return biases, spread, len(unbiased)

    def values(self, names: Sequence[str]) -> dict:
        """Return the ``sensing`` status's biases in use, per effector."""
        return {f'sensor_biases.{name}': ', '.join(f'{x:.9g}' for x in row)
                for name, row in zip(names, self.biases.tolist())}
