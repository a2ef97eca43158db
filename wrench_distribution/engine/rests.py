"""Samples at rest, found as an engineer would: the poses still, the readings settled and steady.

A calibration fits a static model, so a sample it takes must carry no inertial load worth the
noise. The poses tell the motion: each contact frame's gravity direction ``u`` (and its position
in the object frame) is differentiated by a local quadratic fit over 0.05 s on each side
(Savitzky-Golay; longer for noisy poses, :data:`DERIVATIVE_HALF_WIDTHS_S`), which gives its rate
``|du/dt|`` (the tilt rate, rad/s) and ``|d2u/dt2|`` (the tilt acceleration with the centripetal
term, rad/s^2). A body of mass ``m`` whose centre of mass is ``l`` from the axis carries
``m (alpha l + omega^2 l)`` of inertial load; a sensor of force noise ``sigma`` cannot tell a load
below ``sigma``. A sample is still when that
load is at most :data:`INERTIAL_FRACTION` of the noise for every sensor:

    ``alpha <= alpha_max = eta min_i sigma_i / (m_i l_i)``, ``omega <= omega_max = sqrt(alpha_max)``

with ``eta`` = :data:`INERTIAL_FRACTION`, ``m_i`` the mass sensor ``i`` carries (its tool, the
object when held; at least what its readings swing by over the recording, divided by ``g``) and
``l_i`` its tool's distance from the object origin (at least :data:`MIN_LEVER`). A hundred samples
at that bound (half a second at 200 Hz, the shortest rest) would move a rest's mean by one
standard error; the samples admitted near a rest's ends carry far less. Poses measured with
noise differentiate with noise: the thresholds are raised to :data:`FLOOR_FACTOR` times what the
local fit makes of that noise (its scatter from the poses' third differences, which a smooth
motion leaves near zero), and the report says so.

Still samples whose gravity direction stays within ``angle_deg`` (and contacts within
``position_m``) form a run; a gap in the samples (a stalled node) ends it only where the pose
moved across it. In each run, a sample whose reading
leaves the run's median by more than :data:`STEADY_NOISE` noise is dropped, and so is every
sample at the centre of a block of :data:`SETTLE_BLOCK_S` whose mean leaves its level by more
than :data:`SETTLE_Z` of its scatter (:func:`_off_level`): at a run's ends that is its settle
time (a sensor filter's lag, a ringing arm, a grasp tightening), elsewhere a knock (a burst of a
few newtons that no single sample shows). Runs shorter than ``window_s`` are dropped. Every
sample's fate is kept with its reason (:class:`Rests`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
from scipy.ndimage import median_filter
from scipy.signal import savgol_coeffs, savgol_filter

from wrench_distribution.core import spatial as Q
from .calibration import contact_gravity

#: an admitted sample's inertial load is at most this fraction of one sample's force noise
INERTIAL_FRACTION = 0.1
#: half-widths (s) of the local quadratic fit that differentiates the poses: the shortest whose
#: noise floor stays below the thresholds (noisy poses need a longer fit)
DERIVATIVE_HALF_WIDTHS_S = (0.05, 0.1, 0.2, 0.4)
#: the smallest lever (m) of a tool about the axis the arms turn the object about
MIN_LEVER = 0.2
#: pose rates below this many times what the poses' own noise makes of them are that noise
FLOOR_FACTOR = 5.0
#: a reading farther than this many noise from its run's median is a knock
STEADY_NOISE = 8.0
#: length (s) of the blocks the settle time is measured in
SETTLE_BLOCK_S = 0.05
#: a block whose mean is this many standard errors from the level around it is off that level
SETTLE_Z = 4.0
#: the level around a block: the running median of the block means over this many blocks
LOCAL_BLOCKS = 10
G_NORM = 9.81

KEPT, MOVING, SHORT, SETTLING, UNSTEADY = 'kept', 'moving', 'short rest', 'settling', 'knocked'


@dataclass(frozen=True)
class Rests:
    """Where a recording is at rest, and why every other sample is not.

    :param labels: (k,) rest index per sample, -1 where dropped.
    :param reasons: (k,) :data:`KEPT`, :data:`MOVING`, :data:`SHORT`, :data:`SETTLING` or
        :data:`UNSTEADY` per sample.
    :param omega_max: tilt-rate threshold (rad/s); ``alpha_max`` the tilt acceleration's (rad/s^2).
    :param basis: how the thresholds were derived, in words.
    :param settle_s: the longest settle time measured at a rest's end (s).
    """

    labels: np.ndarray
    reasons: np.ndarray
    omega_max: float
    alpha_max: float
    basis: str
    settle_s: float

    def spans(self, stamps_ns: np.ndarray, origin_ns: int) -> list:
        """Return the runs of samples sharing a fate, in order: ``{from_s, to_s, samples, why, rest}``."""
        out = []
        change = np.flatnonzero((self.reasons[1:] != self.reasons[:-1]) | (self.labels[1:] != self.labels[:-1])) + 1
        for start, stop in zip(np.r_[0, change], np.r_[change, len(self.labels)]):
            if stop <= start:
                continue
            out.append({'from_s': round((int(stamps_ns[start]) - origin_ns) * 1e-9, 3),
                        'to_s': round((int(stamps_ns[stop - 1]) - origin_ns) * 1e-9, 3),
                        'samples': int(stop - start), 'why': str(self.reasons[start]),
                        'rest': int(self.labels[start])})
        return out

    def counts(self) -> dict:
        """Return the samples per fate."""
        names, counts = np.unique(self.reasons, return_counts=True)
        return {str(n): int(c) for n, c in zip(names, counts)}


def carried(sensors: Sequence, contact_poses: np.ndarray, object_mass: float = 0.0) -> tuple:
    """Return the mass each sensor carries and its tool's lever about the object origin.

    :param sensors: the sensor models (tool mass and centre of mass, pose on the contact).
    :param contact_poses: (n, 7) contact poses in the object frame.
    :param object_mass: the held object's mass (kg), 0 with the tools free.
    :return: ``(masses (n,), levers (n,))``.
    """
    masses, levers = [], []
    for sensor, pose in zip(sensors, np.asarray(contact_poses, float)):
        rotation = Q.quaternion_to_matrix(pose[3:])
        centre = pose[:3] + rotation @ (np.asarray(sensor.position) + sensor.rotation @ np.asarray(sensor.tool_com))
        masses.append(float(sensor.tool_mass) + float(object_mass))
        levers.append(max(float(np.linalg.norm(centre)), MIN_LEVER))
    return np.array(masses), np.array(levers)


def channel_noise(flat: np.ndarray) -> np.ndarray:
    """Each channel's noise: the robust scatter of first differences over root two (floored above 0)."""
    if len(flat) < 2:
        return np.ones(flat.shape[1])
    noise = 1.4826 * np.median(np.abs(np.diff(flat, axis=0)), axis=0) / np.sqrt(2)
    return np.maximum(noise, 1e-9 * max(1.0, float(np.abs(flat).max(initial=0.0))))


def _rates(values: np.ndarray, dt: float, half_width_s: float) -> tuple:
    """``(|dv/dt|, |d2v/dt2|, their noise floors)`` per sample, the largest over the leading axes (k, ..., 3).

    The floors are what the local fit makes of the poses' own noise: its scatter, from third
    differences (a smooth motion leaves them near zero), times the fit's gain, times
    :data:`FLOOR_FACTOR`.
    """
    k = len(values)
    half = max(2, int(round(half_width_s / dt)))
    window = min(2 * half + 1, k if k % 2 else k - 1)
    if window < 3 or k < 4:
        return np.zeros(k), np.zeros(k), 0.0, 0.0
    axes = tuple(range(1, values.ndim - 1))
    rates = [np.linalg.norm(savgol_filter(values, window, 2, deriv=d, delta=dt, axis=0), axis=-1).max(
        axis=axes, initial=0.0) for d in (1, 2)]
    scatter = 1.4826 * float(np.median(np.abs(np.diff(values, 3, axis=0)))) / np.sqrt(20.0)
    floors = [FLOOR_FACTOR * np.sqrt(3.0) * scatter * float(np.linalg.norm(savgol_coeffs(window, 2, deriv=d, delta=dt)))
              for d in (1, 2)]
    return rates[0], rates[1], floors[0], floors[1]


def motion_thresholds(readings: np.ndarray, masses: np.ndarray, levers: np.ndarray) -> tuple:
    """``(omega_max, alpha_max, basis)``: the tilt rate and acceleration a sample may have.

    :param readings: (k, n, 6) raw readings (their noise and swing).
    :param masses: (n,) the mass each sensor carries (kg); the readings' swing over ``g`` at least.
    :param levers: (n,) each tool's lever about the axis (m).
    """
    k, n = readings.shape[:2]
    noise = channel_noise(readings.reshape(k, -1)).reshape(n, 6)
    sigma = np.median(noise[:, :3], axis=1)
    forces = readings[:, :, :3]
    swing = np.linalg.norm(np.percentile(forces, 99, axis=0) - np.percentile(forces, 1, axis=0), axis=1) / 2
    mass = np.maximum(np.asarray(masses, float), swing / G_NORM)
    limits = INERTIAL_FRACTION * sigma / (mass * np.asarray(levers, float))
    worst = int(np.argmin(limits))
    basis = (f'{INERTIAL_FRACTION:g} of the force noise {sigma[worst]:.3g} N over {mass[worst]:.3g} kg '
             f'at {levers[worst]:.3g} m (sensor {worst})')
    return float(np.sqrt(limits[worst])), float(limits[worst]), basis


def find_rests(recording, masses: np.ndarray, levers: np.ndarray, window_s: float = 0.5,
               angle_deg: float = 0.5, position_m: float = 0.002) -> Rests:
    """Label the samples at rest (module docstring) and say why each other sample is not.

    :param recording: a :class:`~.calibration.Recording`.
    :param masses: (n,) the mass each sensor carries (kg): :func:`carried`.
    :param levers: (n,) each tool's lever about the object origin (m): :func:`carried`.
    :param window_s: shortest rest kept (s).
    :param angle_deg: a run's gravity directions stay this close to its first sample's.
    :param position_m: and its contacts this close.
    :return: the rests.
    """
    stamps = np.asarray(recording.stamps_ns, np.int64)
    k = len(stamps)
    dt = float(np.median(np.diff(stamps))) * 1e-9 if k > 1 else 1e-3
    dt = dt if dt > 0 else 1e-3
    directions = _unit(contact_gravity(recording))
    omega_max, alpha_max, basis = motion_thresholds(recording.readings, masses, levers)
    for half_width in DERIVATIVE_HALF_WIDTHS_S:  # the shortest fit whose noise stays below the thresholds
        omega, alpha, omega_floor, alpha_floor = _rates(directions, dt, half_width)
        if alpha_floor <= alpha_max and omega_floor <= omega_max:
            break
    speed, acceleration, _, _ = _rates(recording.poses[..., :3], dt, half_width)
    if half_width > DERIVATIVE_HALF_WIDTHS_S[0]:
        basis += f'; pose rates fitted over +-{half_width:g} s (noisy poses)'
    if alpha_floor > alpha_max or omega_floor > omega_max:
        omega_max, alpha_max = max(omega_max, omega_floor), max(alpha_max, alpha_floor)
        basis += f"; raised to {FLOOR_FACTOR:g} times what the poses' own noise makes of the rates"
    lever = float(np.min(levers))
    still = ((omega <= omega_max) & (alpha <= alpha_max) & (speed <= omega_max * lever)
             & (acceleration <= alpha_max * lever))
    reasons = np.where(still, KEPT, MOVING).astype('<U12')
    labels = np.full(k, -1)
    flat = recording.readings.reshape(k, -1)
    noise = channel_noise(flat)
    settle = _label_runs(_runs(still, directions, recording.poses[..., :3], angle_deg, position_m),
                         stamps, flat, noise, window_s, labels, reasons)
    return Rests(labels, reasons, omega_max, alpha_max, basis, settle)


def _unit(vectors: np.ndarray) -> np.ndarray:
    return vectors / np.maximum(np.linalg.norm(vectors, axis=-1, keepdims=True), 1e-12)


def _runs(still: np.ndarray, directions: np.ndarray, positions: np.ndarray, angle_deg: float,
          position_m: float) -> list:
    """``(start, stop)`` of each run of still samples whose pose stays near its first sample's."""
    cos_tol = np.cos(np.radians(angle_deg))
    out = []
    edges = np.flatnonzero(np.diff(np.r_[0, still.astype(int), 0]))
    for begin, end in zip(edges[::2], edges[1::2]):
        start = begin
        while start < end:
            same = ((np.einsum('knj,nj->kn', directions[start:end], directions[start]) >= cos_tol).all(axis=1)
                    & (np.linalg.norm(positions[start:end] - positions[start], axis=-1) <= position_m).all(axis=1))
            stop = start + (int(np.argmin(same)) if not same.all() else end - start)
            out.append((start, stop))
            start = stop
    return out


def _label_runs(runs: list, stamps: np.ndarray, flat: np.ndarray, noise: np.ndarray, window_s: float,
                labels: np.ndarray, reasons: np.ndarray) -> float:
    """Label the runs long enough, knocks and settling ends dropped; return the longest settle time."""
    dt = float(np.median(np.diff(stamps))) * 1e-9 if len(stamps) > 1 else 1e-3
    block = max(3, int(round(SETTLE_BLOCK_S / max(dt, 1e-6))))
    label, settle = 0, 0.0
    for start, stop in runs:
        if (stamps[stop - 1] - stamps[start]) * 1e-9 < window_s:
            reasons[start:stop] = SHORT
            continue
        index = np.arange(start, stop)
        off, head, tail = _off_level(flat[start:stop], noise, block)
        off[:head], off[len(off) - tail:] = True, True
        reasons[index[off]] = UNSTEADY
        reasons[index[:head]] = SETTLING
        reasons[index[len(off) - tail:]] = SETTLING
        kept = ~off
        if not kept.any() or (stamps[index[kept][-1]] - stamps[index[kept][0]]) * 1e-9 < window_s:
            reasons[index[kept]] = SHORT
            continue
        labels[index[kept]] = label
        label += 1
        settle = max(settle, max(head, tail) * dt)
    return float(settle)


def _off_level(run: np.ndarray, noise: np.ndarray, block: int) -> tuple:
    """Flag the samples of a run away from its level: ``(flags, settling at the head, at the tail)``.

    Flagged: alone beyond :data:`STEADY_NOISE` noise, or at the centre of ``block`` samples
    (shortened at the run's ends) whose mean is beyond :data:`SETTLE_Z` of its scatter from the
    level around it (a running median of :data:`LOCAL_BLOCKS` blocks: a knock). Settling: the
    samples at each end whose block mean is beyond it from the run's own level. The scatter of the
    block means is measured (robustly) as well as predicted from the samples' noise, the larger
    taken: a held object under an active controller wanders slowly, and that wander is the rest's
    own, not a knock.
    """
    level = np.median(run, axis=0)
    off = (np.abs(run - level) > STEADY_NOISE * noise).any(axis=1)
    sums = np.cumsum(np.vstack([np.zeros((1, run.shape[1])), run - level]), axis=0)
    index = np.arange(len(run))
    low = np.maximum(index - block // 2, 0)
    high = np.minimum(index + block - block // 2, len(run))
    count = (high - low)[:, None]
    away = (sums[high] - sums[low]) / count                       # block means about the run's level
    local = away - median_filter(away, size=(LOCAL_BLOCKS * block + 1, 1), mode='nearest') \
        if len(run) >= 2 * LOCAL_BLOCKS * block else away
    knocked = _beyond(local, noise, count, block)
    unsettled = _beyond(away, noise, count, block) | off | knocked
    head = int(np.argmin(unsettled)) if not unsettled.all() else len(run)
    tail = int(np.argmin(unsettled[::-1])) if not unsettled.all() else 0
    return off | knocked, head, tail


def _beyond(deviation: np.ndarray, noise: np.ndarray, count: np.ndarray, block: int) -> np.ndarray:
    """Block means beyond :data:`SETTLE_Z` of their scatter: the noise's, or the middle half's measured."""
    middle = deviation[len(deviation) // 4: 3 * len(deviation) // 4]
    wander = 1.4826 * np.median(np.abs(middle - np.median(middle, axis=0)), axis=0) * np.sqrt(block / count)
    return (np.abs(deviation) > SETTLE_Z * np.maximum(noise / np.sqrt(count), wander)).any(axis=1)


def static_segments(recording, masses: Optional[np.ndarray] = None, levers: Optional[np.ndarray] = None,
                    window_s: float = 0.5) -> np.ndarray:
    """Rest labels of :func:`find_rests` (-1 where not at rest); tools of 1 kg at :data:`MIN_LEVER` by default."""
    n = recording.readings.shape[1]
    masses = np.ones(n) if masses is None else masses
    levers = np.full(n, MIN_LEVER) if levers is None else levers
    return find_rests(recording, masses, levers, window_s).labels
