"""Gravity as the object turns, and sensor tare: the engine's sensing corrections (no ROS).

Gravity: ``gravity`` is given in ``gravity_frame`` (empty: the object frame, a constant).
Otherwise the object's orientation in that frame, at each sample's stamp, comes from a
:class:`~wrench_distribution.engine.poses.PoseSource` of one frame (the object frame looked
up in ``gravity_frame``: live tf, the bag's /tf, or a pose topic), and gravity in the object
frame is ``g_o = R^T g`` with ``R`` the object's orientation in ``gravity_frame``. A sample
whose stamp has no orientation is never analysed with another one: it waits (live tf) or
is dropped and counted (cause ``no_orientation``).

Tare: each sensor's reading is ``m = b + m_true`` with a constant bias ``b`` (6 numbers, in
the sensor frame); the engine subtracts ``sensor_biases``. The contact wrench is then
``h = A (m - b) + B g_o`` (:meth:`AnalysisEngine._sensor_affine`: ``A`` moves a signed
reading to the contact, ``B g_o`` is the tools' weight there). Over a window of samples
in which the contact wrenches ``h`` are known (the object free: ``h = 0``; or held at rest
without internal load), :func:`tare_biases` solves ``A b = A m + B g_o - h`` per sample and
averages, which is the least-squares bias of the window.
"""
from __future__ import annotations

from collections import deque
from typing import Optional

import numpy as np

from wrench_distribution.core import spatial as Q
from wrench_distribution.core.codec import format_numbers, ns_to_seconds
from .poses import HeldPoses, PoseSource

_ONE = np.ones(1, bool)
_ONE.flags.writeable = False
#: what the object is doing while a tare window is recorded
TARE_STATES = ('free', 'held')


class GravityModel:
    """Gravity in the object frame at each sample stamp.

    :param gravity: gravity vector (3,) in ``gravity_frame`` (m/s^2).
    :param orientation: pose source of the object frame in ``gravity_frame`` (one frame),
        or None when gravity is given in the object frame (constant).
    """

    def __init__(self, gravity, orientation: Optional[PoseSource] = None) -> None:
        self.gravity = np.asarray(gravity, float)
        self.orientation = orientation

    @property
    def constant(self) -> bool:
        """Whether gravity is constant in the object frame (no orientation source)."""
        return self.orientation is None

    def at(self, stamps_ns: np.ndarray) -> tuple[Optional[np.ndarray], np.ndarray]:
        """Gravity in the object frame (k, 3), or None when constant, and validity (k,)."""
        if self.orientation is None:
            return None, (_ONE if len(stamps_ns) == 1 else np.ones(len(stamps_ns), bool))
        poses, valid = self.orientation.at(stamps_ns)
        quats = poses[:, 0, 3:]
        safe = np.where(valid[:, None], quats, [0.0, 0.0, 0.0, 1.0])
        return Q.rotate_inverse(safe, self.gravity), valid

    def waiting(self, stamp_ns: int) -> bool:
        """Whether an orientation covering ``stamp_ns`` may still arrive (live tf)."""
        return self.orientation is not None and self.orientation.waiting(stamp_ns)

    def why(self, stamp_ns: int) -> str:
        """Why there is no orientation at ``stamp_ns`` (user-readable)."""
        source = self.orientation
        if source is None:
            return ''
        why = source.why(stamp_ns)
        if isinstance(source, HeldPoses):
            why = (f'no object pose yet from the {source.description}'
                   if not len(source.stamps) or stamp_ns < source.stamps[0] else
                   f'the newest object pose from the {source.description} is older than '
                   f'orientation_timeout={source.timeout * 1e-9:g} s')
        return f'object orientation in gravity_frame unknown at {stamp_ns * 1e-9:.6f} s ({why})'


class LiveHeldPoses(HeldPoses):
    """A pose topic fed live: a sample waits until a pose stamped at or after it has come.

    Offline, every pose of the bag is known before the analysis; live, a pose can arrive
    after the readings it serves (no order across topics). Waiting for the first pose
    stamped at or after the sample (bounded by the engine's wait) makes the live choice of
    the pose the offline one.
    """

    def waiting(self, stamp_ns: int) -> bool:
        """Whether no pose stamped at or after ``stamp_ns`` has come yet."""
        return not len(self.stamps) or int(self.stamps[-1]) < stamp_ns


class TareWindow:
    """Samples recorded for a tare: the last ``size`` ones, or those in a stamp range.

    :param size: samples kept (live: the newest ones); 0 for no limit (a range).
    :param start_ns: first stamp of the range (None: no range).
    :param stop_ns: last stamp of the range (None: no range).
    """

    def __init__(self, size: int = 0, start_ns: Optional[int] = None,
                 stop_ns: Optional[int] = None) -> None:
        self.size = int(size)
        self.start_ns = start_ns
        self.stop_ns = stop_ns
        self.rows: deque = deque(maxlen=self.size or None)

    def add(self, stamps_ns: np.ndarray, readings: np.ndarray, gain: np.ndarray,
            weight: np.ndarray, gravity: np.ndarray, contact_weights: Optional[np.ndarray] = None) -> None:
        """Record samples (k,): raw readings, ``A``, ``B`` and ``g_o`` (``A m + B g_o`` later).

        :param stamps_ns: (k,) sample stamps.
        :param readings: (k, n, 6) raw readings.
        :param gain: (n, 6, 6) ``A`` of these samples.
        :param weight: (n, 6, 3) ``B`` of these samples.
        :param gravity: (k, 3) or (3,) gravity in the object frame.
        :param contact_weights: (n,) the contact weights the samples were read out with (None: all 1).
        """
        if len(stamps_ns) == 1 and self.start_ns is None and self.stop_ns is None:
            self.rows.append((int(stamps_ns[0]), readings[0], gain, weight,  # a live sample
                              gravity if np.ndim(gravity) == 1 else gravity[0], contact_weights))
            return
        stamps_ns = np.asarray(stamps_ns, np.int64)
        gravity = np.broadcast_to(gravity, (len(stamps_ns), 3))
        keep = np.ones(len(stamps_ns), bool)
        if self.start_ns is not None:
            keep &= stamps_ns >= self.start_ns
        if self.stop_ns is not None:
            keep &= stamps_ns <= self.stop_ns
        for j in np.flatnonzero(keep).tolist():
            self.rows.append((int(stamps_ns[j]), readings[j], gain, weight, gravity[j], contact_weights))

    def clear(self) -> None:
        """Forget the recorded samples."""
        self.rows.clear()

    def arrays(self) -> tuple:
        """``(stamps (k,), gains (k, n, 6, 6), unbiased (k, n, 6), gravity (k, 3))``.

        ``unbiased`` is ``A m + B g_o``, the contact wrenches before the bias is subtracted.
        """
        if not self.rows:
            raise ValueError('no sample recorded for the tare')
        stamps, readings, gains, weights, gravity, _ = zip(*self.rows)
        gains, gravity = np.stack(gains), np.stack(gravity)
        unbiased = (np.einsum('knij,knj->kni', gains, np.stack(readings))
                    + np.einsum('knij,kj->kni', np.stack(weights), gravity))
        return np.asarray(stamps, np.int64), gains, unbiased, gravity

    def contact_weights(self, n: int) -> np.ndarray:
        """Return the (n,) contact weights every recorded sample was read out with.

        :param n: number of contacts (the weights of rows recorded without any: all 1).
        :raises ValueError: when they changed within the window (a held tare distributes the
            object's weight over one set of contacts), naming the sample where they did.
        """
        first = None
        for stamp, *_, weights in self.rows:
            weights = np.ones(n) if weights is None else weights
            if first is None:
                first = weights
            elif not np.array_equal(weights, first):
                raise ValueError(f'the contact weights changed within the tare window (at the sample stamped '
                                 f'{ns_to_seconds(stamp):.6f} s, from {format_numbers(first)} to '
                                 f'{format_numbers(weights)}): tare where the same contacts carry throughout')
        return np.ones(n) if first is None else first


def tare_biases(gains: np.ndarray, unbiased: np.ndarray,
                expected: Optional[np.ndarray] = None) -> tuple[np.ndarray, np.ndarray]:
    """Sensor biases that make the contact wrenches of a window equal the expected ones.

    With ``h = A (m - b) + B g_o``: ``A b = (A m + B g_o) - h`` for every sample, so
    ``b = mean_k A_k^-1 (u_k - h_k)``.

    :param gains: (k, n, 6, 6) ``A`` per sample (or (n, 6, 6) for all).
    :param unbiased: (k, n, 6) ``u = A m + B g_o``, the contact wrenches without bias.
    :param expected: (k, n, 6) or (n, 6) known contact wrenches ``h``; None: zero (free).
    :return: ``(biases (n, 6), spread (n, 6))``: the mean and the standard deviation over
        the window, sensor frame (N, N m).
    :raises ValueError: on an empty window or a non-finite result.
    """
    unbiased = np.asarray(unbiased, float)
    if unbiased.ndim != 3 or not len(unbiased):
        raise ValueError('no sample recorded for the tare')
    residual = unbiased if expected is None else unbiased - np.asarray(expected, float)
    gains = np.broadcast_to(np.asarray(gains, float), residual.shape + (6,))
    per_sample = np.linalg.solve(gains, residual[..., None])[..., 0]
    if not np.isfinite(per_sample).all():
        raise ValueError('the tare window holds NaN or Inf')
    return per_sample.mean(axis=0), per_sample.std(axis=0)


def parse_biases(values, n: int) -> np.ndarray:
    """Return the ``sensor_biases`` parameter as (n, 6); empty: zeros.

    :param values: the parameter value (6 n numbers, or empty).
    :param n: number of effectors.
    :return: (n, 6) biases.
    """
    values = list(values or [])
    return np.asarray(values, float).reshape(n, 6) if values else np.zeros((n, 6))
