"""Two arms holding a box, read by two F/T sensors: readings written from physics, faults injected.

The truth is built by hand, independently of the code under test: the wrench the arms apply
to the box is Newton-Euler's (``m (a - g)`` about the centre of mass, ``I alpha + omega x I
omega``); each arm carries half the force plus a squeeze along the line joining the contacts,
and equal torques make up the rest; each contact wrench is moved into its sensor by hand
(``f_s = R_s^T f``, ``t_s = R_s^T (t - p x f)``) and the tool's weight taken off from its free
body (the sensor holds the tool as well as pushing); then the sign, Gaussian noise and, if
asked, quantisation. Faults are written on the readings as a broken sensor would: a driver
repeating its last value, a clip, a spike, a drifting channel.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
from scipy.spatial.transform import Rotation

from wrench_distribution.config.loading import load_analyzer_config
from wrench_distribution.engine import AnalysisEngine, StaticPoses
from wrench_distribution.engine.health import HealthMonitor

NAMES = ['left', 'right']
POSITIONS = np.array([[0.0, -0.2, 0.0], [0.02, 0.2, 0.01]])
ORIENTATIONS = np.array([Rotation.from_euler('x', -90, degrees=True).as_quat(),
                         Rotation.from_euler('xz', [90, 30], degrees=True).as_quat()])
SENSOR_POSITIONS = np.array([[0.0, 0.0, -0.05], [0.01, 0.0, -0.06]])
SENSOR_ORIENTATIONS = np.array([Rotation.from_euler('z', 45, degrees=True).as_quat(),
                                Rotation.from_euler('x', 180, degrees=True).as_quat()])
SIGNS = [1, -1]
TOOL_MASSES = [0.6, 0.4]
TOOL_COMS = np.array([[0.0, 0.0, 0.02], [0.01, 0.0, 0.03]])
MASS = 2.0
COM = np.array([0.01, 0.0, 0.03])
INERTIA = np.diag([0.05, 0.04, 0.06])
GRAVITY = np.array([0.0, 0.0, -9.81])
START_NS = 1_800_000_000_000_000_000


def params(tools: bool = True, **overrides) -> dict:
    """Return the analyzer's parameters for the rig (static contacts)."""
    p = {'effectors': NAMES, 'contact_types': ['rigid', 'rigid'], 'contact_source': 'static',
         'contact_positions': POSITIONS.ravel().tolist(),
         'contact_orientations': ORIENTATIONS.ravel().tolist(),
         'sensor_positions': SENSOR_POSITIONS.ravel().tolist(),
         'sensor_orientations': SENSOR_ORIENTATIONS.ravel().tolist(),
         'sensor_signs': SIGNS, 'tool_masses': TOOL_MASSES if tools else [0.0, 0.0],
         'tool_coms': TOOL_COMS.ravel().tolist(), 'object_com': COM.tolist(),
         'object_mass': MASS, 'gravity': GRAVITY.tolist(), 'max_age': 0.0,
         'sync_tolerance': 0.0005}
    p.update(overrides)
    return p


def config(tools: bool = True, **overrides):
    """Return the rig's ``AnalyzerConfig``."""
    return load_analyzer_config({'wrench_analyzer': {'ros__parameters': params(tools, **overrides)}})


@dataclass
class Recording:
    """Readings of the rig."""

    stamps_ns: np.ndarray    # (k,)
    readings: np.ndarray     # (k, 2, 6)
    period_ns: int


def stamps(seconds: float, rate: float) -> tuple:
    """Return the samples' stamps, (k,) at ``rate`` Hz, and the period (ns)."""
    period = int(round(1e9 / rate))
    return START_NS + period * np.arange(int(round(seconds * rate)), dtype=np.int64), period


def object_wrench_at_rest(k: int) -> np.ndarray:
    """Return what the arms apply to the box at rest, about its centre of mass: ``[-m g; 0]``."""
    return np.tile(np.concatenate([-MASS * GRAVITY, np.zeros(3)]), (k, 1))


def contact_wrenches(wrench: np.ndarray, squeeze: np.ndarray) -> np.ndarray:
    """Return each arm's wrench (k, 2, 6) in its contact frame about the contact, by hand.

    Half the force each, plus the squeeze (left pushes towards right and right towards left);
    equal torques make the rest of the resultant's torque about the centre of mass.
    """
    line = (POSITIONS[1] - POSITIONS[0]) / np.linalg.norm(POSITIONS[1] - POSITIONS[0])
    forces = np.stack([0.5 * wrench[:, :3] + squeeze[:, None] * line,
                       0.5 * wrench[:, :3] - squeeze[:, None] * line], axis=1)
    levers = POSITIONS - COM
    moment = np.cross(levers[0], forces[:, 0]) + np.cross(levers[1], forces[:, 1])
    torque = 0.5 * (wrench[:, 3:] - moment)
    out = np.empty((len(wrench), 2, 6))
    for i in range(2):
        to_contact = Rotation.from_quat(ORIENTATIONS[i]).inv()
        out[:, i, :3] = to_contact.apply(forces[:, i])
        out[:, i, 3:] = to_contact.apply(torque)
    return out


def sensor_readings(contact: np.ndarray, gravity_object: np.ndarray, tools: bool = True) -> np.ndarray:
    """Return what each sensor reads (k, 2, 6) when its arm applies ``contact`` (no noise), by hand."""
    out = np.empty_like(contact)
    for i in range(2):
        rs = Rotation.from_quat(SENSOR_ORIENTATIONS[i]).as_matrix()
        p = SENSOR_POSITIONS[i]
        f, t = contact[:, i, :3], contact[:, i, 3:]
        f_s = f @ rs
        t_s = (t - np.cross(p, f)) @ rs
        g_s = Rotation.from_quat(ORIENTATIONS[i]).inv().apply(gravity_object) @ rs
        weight = (TOOL_MASSES[i] if tools else 0.0) * g_s
        tool = np.concatenate([weight, np.cross(TOOL_COMS[i], weight)], axis=1)
        out[:, i] = SIGNS[i] * (np.concatenate([f_s, t_s], axis=1) - tool)
    return out


def squeeze_wave(t_s: np.ndarray) -> np.ndarray:
    """Return a 15 +- 10 N squeeze at 0.5 Hz."""
    return 15.0 + 10.0 * np.sin(np.pi * t_s)


def noisy(truth: np.ndarray, rng: np.random.Generator, noise: float, quantum: float,
          torque_noise: Optional[float]) -> np.ndarray:
    """Return readings: the truth with Gaussian noise, quantised if asked (torques at a tenth)."""
    sigma = np.r_[[noise] * 3, [noise / 10 if torque_noise is None else torque_noise] * 3]
    readings = truth + rng.normal(size=truth.shape) * sigma
    if quantum:
        step = np.r_[[quantum] * 3, [quantum / 10] * 3]
        readings = np.round(readings / step) * step
    return readings


def at_rest(seconds: float, rate: float, noise: float = 0.05, quantum: float = 0.0,
            seed: int = 0, torque_noise: Optional[float] = None) -> Recording:
    """Return the box held at rest with a varying squeeze, read with Gaussian noise (and quantised).

    :param noise: force noise (N); torque noise ``torque_noise`` (N m), by default noise / 10.
    :param quantum: quantisation step of forces (N), and of torques over 10 (0: none).
    """
    stamps_ns, period = stamps(seconds, rate)
    rng = np.random.default_rng(seed)
    readings = np.empty((len(stamps_ns), 2, 6))
    for a in range(0, len(stamps_ns), 100_000):  # in pieces: ten minutes at 1 kHz stay small
        t = (stamps_ns[a:a + 100_000] - START_NS) * 1e-9
        k = len(t)
        truth = sensor_readings(contact_wrenches(object_wrench_at_rest(k), squeeze_wave(t)),
                                np.tile(GRAVITY, (k, 1)))
        readings[a:a + k] = noisy(truth, rng, noise, quantum, torque_noise)
    return Recording(stamps_ns, readings, period)


AXIS = np.array([1.0, 2.0, 2.0]) / 3.0  # the moving box turns about this axis (world)


def box_pose(t: np.ndarray) -> tuple:
    """Return the moving box in the world: ``(origin (k, 3), rotation)``, a swing about AXIS and a sway."""
    angle = 0.4 * np.sin(2.0 * t)
    rotation = Rotation.from_rotvec(angle[:, None] * AXIS) * Rotation.from_euler('x', 20, degrees=True)
    origin = np.column_stack([0.3 * np.sin(3 * t), 0.2 * np.cos(3 * t), 0.5 + 0.05 * np.sin(t)])
    return origin, rotation


def box_wrench(t: np.ndarray) -> np.ndarray:
    """Return, by Newton-Euler by hand, what the arms apply to the moving box (object frame, about the CoM)."""
    _, rotation = box_pose(t)
    rate, accel = 0.8 * np.cos(2.0 * t), -1.6 * np.sin(2.0 * t)
    omega, alpha = rate[:, None] * AXIS, accel[:, None] * AXIS  # world; the axis is fixed
    origin_acc = np.column_stack([-2.7 * np.sin(3 * t), -1.8 * np.cos(3 * t), -0.05 * np.sin(t)])
    arm = rotation.apply(COM)
    com_acc = origin_acc + np.cross(alpha, arm) + np.cross(omega, np.cross(omega, arm))
    back = rotation.inv()
    omega_b, alpha_b = back.apply(omega), back.apply(alpha)
    force = MASS * (back.apply(com_acc) - back.apply(np.tile(GRAVITY, (len(t), 1))))
    torque = alpha_b @ INERTIA + np.cross(omega_b, omega_b @ INERTIA)
    return np.column_stack([force, torque])


def moving(seconds: float, rate: float, noise: float = 0.05, seed: int = 0) -> tuple:
    """Return the box swung and swayed with a 10 N squeeze; tools massless (the model is quasi-static).

    :return: ``(recording, world poses (k, 7) of the object frame)``.
    """
    stamps_ns, period = stamps(seconds, rate)
    t = (stamps_ns - START_NS) * 1e-9
    truth = sensor_readings(contact_wrenches(box_wrench(t), np.full(len(t), 10.0)),
                            np.zeros((len(t), 3)), tools=False)
    readings = noisy(truth, np.random.default_rng(seed), noise, 0.0, None)
    origin, rotation = box_pose(t)
    return Recording(stamps_ns, readings, period), np.column_stack([origin, rotation.as_quat()])


def monitor(consistency: str = 'rest', **overrides):
    """Return an analysis engine on the rig with a health monitor: ``(engine, monitor)``."""
    cfg = config(**overrides)
    engine = AnalysisEngine(cfg, StaticPoses(np.concatenate([POSITIONS, ORIENTATIONS], axis=1)))
    engine.health = HealthMonitor.for_config(cfg, consistency)
    engine.health.keep_samples = True
    return engine, engine.health


def feed(engine: AnalysisEngine, rec: Recording, chunk: int = 50_000) -> tuple:
    """Give the recording to the engine as bag chunks; return ``(stamps, doubt, consistent)``."""
    n = rec.readings.shape[1]
    parts = []
    for a in range(0, len(rec.stamps_ns), chunk):
        st = rec.stamps_ns[a:a + chunk]
        stream = np.tile(np.arange(n), len(st))
        stamp = np.repeat(st, n)
        engine.push_chunk(stream, stamp + 100_000, stamp, rec.readings[a:a + chunk].reshape(-1, 6))
        parts.append(engine.health.take())
    return tuple(np.concatenate(p) for p in zip(*parts))


def seconds_of(rec: Recording, index: int) -> float:
    """Return the seconds from the recording's start to sample ``index``."""
    return (int(rec.stamps_ns[index]) - START_NS) * 1e-9
