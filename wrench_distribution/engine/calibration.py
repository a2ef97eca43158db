"""Calibration from recorded samples (no ROS): static poses found, tools and object identified.

The analysis engine records what a calibration needs (:class:`CalibrationRecorder`: raw
readings, contact and sensor poses, gravity in the object frame, per sample); the bag tool
(``wrench-distribution identify``) records a whole bag and finds the rests itself
(:mod:`.rests`); the analyzer node records the newest samples and captures one pose
per service call. Both then call :func:`identify_tools` and :func:`identify_held_object`
(core/calibration.py), and :func:`identify_contacts` (core/grasp_identification.py: where the
grasps are relative to each other, from held rests at several internal loads), and turn the
result into the nodes' parameters (:func:`calibration_parameters`, :func:`contact_parameters`).
:func:`check_signs` says each sensor's sign from the weight it carries.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, replace
from typing import Optional, Sequence

import numpy as np

from wrench_distribution.core import calibration as K
from wrench_distribution.core import spatial as Q
from wrench_distribution.core.grasp_identification import GraspEstimate, identify_grasps
from .poses import sensor_models_at


@dataclass(frozen=True)
class Recording:
    """Recorded samples, in order (at rest or not).

    Stamps (k,), raw readings (k, n, 6), contact poses (k, n, 7) in the object frame, sensor
    poses (k, n, 7) in the contact frames or None, gravity in the object frame (k, 3).
    """

    stamps_ns: np.ndarray
    readings: np.ndarray
    poses: np.ndarray
    sensor_poses: Optional[np.ndarray]
    gravity: np.ndarray

    def take(self, mask: np.ndarray) -> 'Recording':
        """Return the samples selected by ``mask`` (bool or indices)."""
        return Recording(self.stamps_ns[mask], self.readings[mask], self.poses[mask],
                         None if self.sensor_poses is None else self.sensor_poses[mask],
                         self.gravity[mask])


class CalibrationRecorder:
    """The newest ``size`` analysed samples (0: all, up to ``limit``), as :class:`Recording`.

    :param size: samples kept (the newest); 0 keeps every sample up to ``limit``.
    :param limit: most samples ever kept (bounds memory).
    """

    def __init__(self, size: int = 0, limit: int = 1_000_000) -> None:
        self.rows: deque = deque(maxlen=size or limit)
        self.limit = size or limit

    def add(self, stamps_ns, readings, pose, sensor_pose, gravity) -> None:
        """Record samples sharing one contact configuration.

        :param stamps_ns: (k,) stamps.
        :param readings: (k, n, 6) raw readings.
        :param pose: (n, 7) contact poses.
        :param sensor_pose: (n, 7) sensor poses or None.
        :param gravity: (k, 3) or (3,) gravity in the object frame.
        """
        if len(stamps_ns) == 1 and np.ndim(gravity) == 1:  # a live sample
            self.rows.append((int(stamps_ns[0]), readings[0], pose, sensor_pose,
                              np.asarray(gravity, float)))
            return
        gravity = np.broadcast_to(np.asarray(gravity, float), (len(stamps_ns), 3))
        for j in range(len(stamps_ns)):
            self.rows.append((int(stamps_ns[j]), readings[j], pose, sensor_pose, gravity[j]))

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def full(self) -> bool:
        """Whether older samples are being dropped."""
        return len(self.rows) >= self.limit

    def clear(self) -> None:
        """Forget the samples."""
        self.rows.clear()

    def recording(self) -> Recording:
        """Return the samples kept (raises ValueError when there is none)."""
        return recording_of(self.rows)


def recording_of(rows: Sequence) -> Recording:
    """Return recorded rows (``CalibrationRecorder.rows``) as a :class:`Recording`.

    :raises ValueError: when there is none.
    """
    if not rows:
        raise ValueError('no sample recorded')
    stamps, readings, poses, sensors, gravity = zip(*rows)
    return Recording(np.asarray(stamps, np.int64), np.stack(readings), np.stack(poses),
                     None if sensors[0] is None else np.stack(sensors), np.stack(gravity))


def contact_gravity(recording: Recording) -> np.ndarray:
    """Gravity in each contact frame, (k, n, 3)."""
    return Q.rotate_inverse(recording.poses[..., 3:], recording.gravity[:, None, :])


def identify_tools(recording: Recording, sensors: Sequence, labels: np.ndarray, names: Sequence[str],
                   mounting: bool = False) -> list:
    """Identify each sensor's bias and tool (and mounting rotation) from free-tool poses.

    :param sensors: the configured ``SensorModel`` per effector.
    :param labels: (k,) pose labels, -1 for samples not used.
    :param names: effector names (messages).
    :return: one :class:`~wrench_distribution.core.calibration.ToolEstimate` per sensor.
    :raises CalibrationRefused: naming the sensor and the missing motion.
    """
    use = labels >= 0
    rec = recording.take(use)
    gravity = contact_gravity(rec)
    estimates = []
    for i, (sensor, name) in enumerate(zip(sensors, names)):
        model, g = sensor, gravity[:, i]
        if rec.sensor_poses is not None:  # tf sensor frames: gravity into each looked-up frame
            g = Q.rotate_inverse(rec.sensor_poses[:, i, 3:], g)
            model = replace(sensor, orientation=(0.0, 0.0, 0.0, 1.0))
        estimates.append(K.identify_tool(rec.readings[:, i], g, labels[use], model, mounting,
                                         who=f'sensor {name}'))
    return estimates


def calibrated_sensors(sensors: Sequence, tools: Optional[Sequence]) -> list:
    """Sensor models with identified tools (and mounting rotations), or the configured ones."""
    if tools is None:
        return list(sensors)
    return [replace(s, tool_mass=float(t.mass), tool_com=tuple(t.com), orientation=tuple(t.orientation))
            for s, t in zip(sensors, tools)]


def identify_held_object(recording: Recording, sensors: Sequence, biases: np.ndarray,
                         labels: np.ndarray, tools: Optional[Sequence] = None) -> K.ObjectEstimate:
    """Identify the held object's mass and centre of mass from the resultant of all sensors.

    :param sensors: the sensor models (tools known: configured or identified).
    :param biases: (n, 6) sensor biases.
    :param labels: (k,) pose labels, -1 for samples not used.
    :param tools: the identified tools the sensors and biases come from, or None (taken as
        known): their covariance is carried into the object's (:func:`~..core.calibration.tool_sigma_points`).
    :raises CalibrationRefused: naming the missing motion.
    """
    use = labels >= 0
    rec = recording.take(use)
    estimate = K.identify_object(_resultant(rec, sensors, biases), rec.gravity, labels[use])
    if tools is None:
        return estimate
    return K.with_tool_covariance(estimate, _tools_covariance(rec, sensors, biases, tools, estimate))


def _resultant(rec: Recording, sensors: Sequence, biases: np.ndarray) -> np.ndarray:
    if rec.sensor_poses is None:
        return K.object_resultant(rec.readings, rec.gravity, rec.poses, sensors, biases)
    return np.concatenate([
        K.object_resultant(rec.readings[j:j + 1], rec.gravity[j:j + 1], rec.poses[j],
                           sensor_models_at(sensors, rec.sensor_poses[j]), biases)
        for j in range(len(rec.readings))])


def _tools_covariance(rec: Recording, sensors: Sequence, biases: np.ndarray, tools: Sequence,
                      estimate: K.ObjectEstimate) -> np.ndarray:
    """Covariance of ``(M, M c)`` from the tools' own: central differences along their sigma points."""
    total = np.zeros((4, 4))
    for i, tool in enumerate(tools):
        for pair in K.tool_sigma_points(tool):
            solutions = []
            for bias, mass, com, rotation in pair:
                varied, shifted = list(sensors), np.array(biases, float)
                varied[i] = replace(sensors[i], tool_mass=mass, tool_com=tuple(com), orientation=tuple(
                    Q.matrix_to_quaternion(sensors[i].rotation @ Q.exp_so3(rotation))))
                shifted[i] = bias
                solutions.append(K.object_solution(_resultant(rec, varied, shifted), rec.gravity, estimate.fit))
            half = (solutions[0] - solutions[1]) / 2
            total += np.outer(half, half)
    return total


def identify_contacts(recording: Recording, sensors: Sequence, biases: np.ndarray, labels: np.ndarray,
                      names: Sequence[str], rigid: Sequence[bool], object_mass: float, object_com) -> GraspEstimate:
    """Identify the contacts' poses relative to each other from held rests (one label per rest).

    :param recording: samples with the contacts fixed (static contacts, sensors on them).
    :param sensors: the sensor models (tools known: configured or identified).
    :param biases: (n, 6) sensor biases (a constant error is taken in by the fitted offset).
    :param labels: (k,) rest labels, -1 for samples not used.
    :param names: effector names.
    :param rigid: (n,) False for point contacts.
    :param object_mass: the object's mass (kg); ``object_com`` its centre of mass.
    :raises CalibrationRefused: naming what is missing.
    """
    use = labels >= 0
    rec = recording.take(use)
    if rec.sensor_poses is not None:
        raise K.CalibrationRefused('grasps: the sensor frames come from tf; grasp identification needs the '
                                   'sensors fixed on their contacts (sensor_frames empty)')
    if not np.allclose(rec.poses, rec.poses[0], atol=1e-12):
        raise K.CalibrationRefused('grasps: the contact poses changed between the rests; grasp identification '
                                   'corrects fixed contacts (contact_source: static)')
    return identify_grasps(rec.readings, rec.gravity, labels[use], rec.poses[0], sensors, biases,
                           object_mass, object_com, rigid=rigid, names=names)


def contact_parameters(grasps: GraspEstimate) -> dict:
    """Return the nodes' contact parameters of identified grasps (flat arrays, as the schema has them)."""
    return {'contact_positions': [round(float(x), 9) for x in grasps.positions.ravel()],
            'contact_orientations': [round(float(x), 9) for x in grasps.quaternions.ravel()]}


def calibration_parameters(tools: Optional[Sequence], obj: Optional[K.ObjectEstimate],
                           mounting: bool) -> dict:
    """Return the nodes' parameters the calibration sets (flat arrays, as the schema has them).

    :param tools: tool estimates or None.
    :param obj: object estimate or None.
    :param mounting: write ``sensor_orientations`` (the mounting rotations applied).
    :return: ``{parameter: value}``.
    """
    out: dict = {}
    if tools is not None:
        out['tool_masses'] = [round(float(t.mass), 6) for t in tools]
        out['tool_coms'] = [round(float(x), 6) for t in tools for x in t.com]
        out['sensor_biases'] = [round(float(x), 6) for t in tools for x in t.bias]
        if mounting:
            out['sensor_orientations'] = [round(float(x), 9) for t in tools for x in t.orientation]
    if obj is not None:
        out['object_mass'] = round(float(obj.mass), 6)
        out['object_com'] = [round(float(x), 6) for x in obj.com]
    return out


def check_signs(recording: Recording, sensors: Sequence, biases: np.ndarray, names: Sequence[str],
                labels: np.ndarray) -> list:
    """Each sensor's sign from the weight it carries (object held at rest).

    A contact that holds an object up pushes against gravity: the force it applies, in the
    object frame, has a negative component along gravity. A sensor whose configured sign
    gives a force along gravity reads the reaction: its sign is the other one.

    :return: one dict per sensor: ``effector``, ``configured``, ``measured`` (or None when
        the sensor carries no weight), ``upward_force`` (N), ``z`` (its mean over its
        standard error, the scatter at least :data:`SIGN_NOISE_FLOOR`), ``fix``.
    """
    use = labels >= 0
    rec = recording.take(use)
    report = []
    for i, name in enumerate(names):
        quats = rec.poses[:, i, 3:]
        models = [sensors[i]] if rec.sensor_poses is None else None
        g_contact = Q.rotate_inverse(quats, rec.gravity)
        if models is None:
            contact = np.stack([sensor_models_at([sensors[i]], rec.sensor_poses[j, i:i + 1])[0].to_contact(
                rec.readings[j, i] - biases[i], g_contact[j]) for j in range(len(quats))])
        else:
            contact = sensors[i].to_contact(rec.readings[:, i] - biases[i], g_contact)
        force = Q.rotate(quats, contact[:, :3])
        down = rec.gravity / np.linalg.norm(rec.gravity, axis=1, keepdims=True)
        upward = -np.einsum('kj,kj->k', force, down)
        report.append(_sign_verdict(name, sensors[i].sign, upward, i))
    return report


#: A force sensor resolves no finer than this (N): the scatter the sign's z-score assumes at least,
#: so that clean or quantised readings do not claim a certainty no sensor has.
SIGN_NOISE_FLOOR = 0.05


def _sign_verdict(name: str, configured: int, upward: np.ndarray, index: int) -> dict:
    mean = float(np.mean(upward))
    scatter = max(float(np.std(upward)), SIGN_NOISE_FLOOR)
    z = mean / (scatter / np.sqrt(len(upward))) if len(upward) > 1 else 0.0
    if abs(mean) < 0.5 or abs(z) < 5:
        measured, fix = None, (f'undetermined: {name} carries {mean:.3g} N of weight; hold the object '
                               'at rest by the effectors alone (grippers closed, nothing else under it)')
    else:
        measured = configured if mean > 0 else -configured
        fix = 'ok' if measured == configured else f'set sensor_signs[{index}] to {measured} ({name})'
    return {'effector': name, 'configured': configured, 'measured': measured,
            'upward_force': round(mean, 6), 'z': round(z, 3), 'fix': fix}


#: The calibration's parameters both nodes take (the distributor's basis must be the analyzer's).
SHARED_PARAMETERS = ('object_mass', 'object_com', 'contact_positions', 'contact_orientations')


def fragment(parameters: dict, analyzer: str = 'wrench_analyzer', distributor: str = 'wrench_distributor') -> dict:
    """Return a parameter file of the calibration: the analyzer's section; the object and the contacts for the distributor.

    Sections are keyed ``/**/<node>``: the nodes take them in any namespace.

    :param parameters: :func:`calibration_parameters`.
    :param analyzer: the analyzer node's name.
    :param distributor: the distributor node's name.
    :return: ``{node: {'ros__parameters': {...}}}``.
    """
    analyzer, distributor = f'/**/{analyzer}', f'/**/{distributor}'
    doc = {analyzer: {'ros__parameters': dict(parameters)}}
    # copies: rcl refuses the YAML aliases that shared lists would become
    shared = {k: list(v) if isinstance(v, list) else v for k, v in parameters.items()
              if k in SHARED_PARAMETERS}
    if shared:
        doc[distributor] = {'ros__parameters': shared}
    return doc
