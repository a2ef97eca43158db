"""Contact poses at a sample's stamp: static configuration, a PoseArray stream, or a tf tree.

Every source answers :meth:`PoseSource.at` for an array of sample stamps with the poses
``(k, n, 7)`` ``[x, y, z, qx, qy, qz, qw]`` and a validity mask (a sample without a known
pose is dropped and counted), :meth:`PoseSource.waiting` (whether data that would make a
stamp valid may still arrive: live tf only) and :meth:`PoseSource.why` (why a stamp has no
pose). The live nodes feed the same classes as the bag readers, so both get the same answer.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from wrench_distribution.core import spatial as Q
from wrench_distribution.core.codec import frame_key, same_frame
from .cache import check_poses


class PoseSource:
    """What the analysis engine asks of a pose source (the defaults suit complete data)."""

    description = ''

    def at(self, stamps_ns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Poses (k, n, 7) and validity (k,) at the sample stamps."""
        raise NotImplementedError

    def waiting(self, stamp_ns: int) -> bool:
        """Whether data that makes ``stamp_ns`` valid may still arrive (live tf)."""
        return False

    def why(self, stamp_ns: int) -> str:
        """Why there is no pose at ``stamp_ns`` (user-readable)."""
        return f'no contact pose at {stamp_ns * 1e-9:.6f} s from the {self.description}'

    def set_timeout(self, timeout_ns: int) -> None:
        """Change ``contact_timeout`` (ns; 0 disables); sources without an age limit ignore it."""
        return None


class StaticPoses(PoseSource):
    """Poses from the ``contact_positions`` / ``contact_orientations`` parameters."""

    def __init__(self, poses: np.ndarray) -> None:
        self.description = 'static configuration'
        self._use(np.asarray(poses, float))

    def _use(self, poses: np.ndarray) -> None:
        """Hold these poses, and the one-sample answer of the live path built from them."""
        self.poses = poses
        self._one = (np.broadcast_to(self.poses, (1,) + self.poses.shape), np.ones(1, bool))
        self._one[1].flags.writeable = False

    def replace(self, poses: np.ndarray, description: str) -> None:
        """Use other poses from now on (identified grasps: engine state, not a parameter write).

        :param poses: (n, 7), the same shape as before, finite.
        :param description: where they come from (the reason a sample has no pose names it).
        :raises ValueError: for another shape or a NaN.
        """
        poses = np.asarray(poses, float)
        if poses.shape != self.poses.shape or not np.isfinite(poses).all():
            raise ValueError(f'expected finite contact poses of shape {self.poses.shape}, got {poses.shape}')
        self._use(np.concatenate([poses[:, :3], Q.normalize(poses[:, 3:])], axis=1))
        self.description = description

    def at(self, stamps_ns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Poses (k, n, 7) and validity (k,) at the sample stamps (read-only arrays)."""
        k = len(stamps_ns)
        if k == 1:  # the live path: one sample at a time
            return self._one
        return np.broadcast_to(self.poses, (k,) + self.poses.shape), np.ones(k, bool)


class HeldPoses(PoseSource):
    """Poses from a PoseArray topic, each held until the next one (by header stamp).

    :param names: effector names (the order of the poses).
    :param object_frame: the frame the poses must be expressed in.
    :param timeout_ns: a pose older than this (header stamps) is stale; 0 disables.
    :param keep: poses kept when fed live (older ones are forgotten).
    :param missing_ok: accept a pose holding a NaN as *no pose* (the distributor's: a released
        contact's; the solver refuses it for a contact of positive weight).
    """

    def __init__(self, names: Sequence[str], object_frame: str, timeout_ns: int = 0,
                 description: str = 'contact poses topic', keep: int = 256, missing_ok: bool = False) -> None:
        self.names = list(names)
        self.missing_ok = missing_ok
        self.object_frame = object_frame
        self.timeout = int(timeout_ns)
        self.description = description
        self.keep = keep
        self.stamps = np.empty(0, np.int64)
        self.poses = np.empty((0, len(self.names), 7))

    def set_timeout(self, timeout_ns: int) -> None:
        """Change ``contact_timeout`` (ns; 0 disables)."""
        self.timeout = int(timeout_ns)

    def check(self, frame: str, positions, quaternions) -> np.ndarray:
        """Check one PoseArray and return it as (n, 7) with unit quaternions.

        :param frame: its header frame id.
        :param positions: (n, 3).
        :param quaternions: (n, 4).
        :raises ValueError: wrong frame, wrong count, NaN or Inf, out of range, zero quaternion.
        """
        if frame and not same_frame(frame, self.object_frame):
            raise ValueError(f"contact_poses frame '{frame}' is not the object frame "
                             f"'{self.object_frame}'")
        pos, quat = check_poses(positions, quaternions, self.names, self.missing_ok)
        known = ~np.isnan(quat[:, 0])  # a missing pose is NaN whole (check_poses)
        if known.all():
            return np.concatenate([pos, Q.normalize(quat)], axis=1)
        quat = quat.copy()
        quat[known] = Q.normalize(quat[known])
        return np.concatenate([pos, quat], axis=1)

    def extend(self, stamps_ns: np.ndarray, poses: np.ndarray) -> None:
        """Add poses (m, n, 7) with their header stamps (any order).

        :param stamps_ns: (m,) int64.
        :param poses: (m, n, 7), already checked.
        """
        stamps = np.concatenate([self.stamps, np.asarray(stamps_ns, np.int64)])
        poses = np.concatenate([self.poses, np.asarray(poses, float)])
        order = np.argsort(stamps, kind='stable')
        self.stamps, self.poses = stamps[order], poses[order]

    def add(self, stamp_ns: int, pose: np.ndarray) -> None:
        """Add one checked pose set (live), forgetting the oldest beyond ``keep``."""
        self.extend(np.array([stamp_ns], np.int64), pose[None])
        if len(self.stamps) > self.keep:
            self.stamps, self.poses = self.stamps[-self.keep:], self.poses[-self.keep:]

    def at(self, stamps_ns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Latest pose with a stamp not after each sample stamp."""
        stamps_ns = np.asarray(stamps_ns, np.int64)
        if not len(self.stamps):
            return np.zeros((len(stamps_ns),) + self.poses.shape[1:]), np.zeros(len(stamps_ns), bool)
        idx = np.searchsorted(self.stamps, stamps_ns, side='right') - 1
        valid = idx >= 0
        safe = np.maximum(idx, 0)
        if self.timeout > 0:
            valid &= (stamps_ns - self.stamps[safe]) <= self.timeout
        return self.poses[safe], valid

    def why(self, stamp_ns: int) -> str:
        """Why there is no pose at ``stamp_ns``."""
        if not len(self.stamps) or stamp_ns < self.stamps[0]:
            return f'no contact poses yet (contact_source=topic, {self.description})'
        return f'contact poses are stale (older than contact_timeout={self.timeout * 1e-9:g} s)'


@dataclass
class Edge:
    """One frame's transforms in its parent: static (no stamps) or stamped (interpolated)."""

    parent: str
    stamps: np.ndarray  # (m,) int64, sorted; empty for static edges
    poses: np.ndarray   # (m, 7) pose of the child in the parent

    def at(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Pose at each stamp: linear in position, slerp in orientation; no extrapolation."""
        if self.stamps.size == 0:  # static
            return np.tile(self.poses[0], (len(t), 1)), np.ones(len(t), bool)
        st = self.stamps
        i = np.clip(np.searchsorted(st, t, side='right') - 1, 0, len(st) - 1)
        j = np.minimum(i + 1, len(st) - 1)
        valid = (t >= st[0]) & (t <= st[-1])
        t0, t1 = st[i], st[j]
        span = np.where(t1 > t0, t1 - t0, 1)
        s = np.clip(np.where(t1 > t0, (t - t0) / span, 0.0), 0.0, 1.0)
        p0, p1 = self.poses[i], self.poses[j]
        pos = p0[:, :3] + s[:, None] * (p1[:, :3] - p0[:, :3])
        return np.concatenate([pos, Q.slerp(p0[:, 3:], p1[:, 3:], s)], axis=-1), valid


class TfTree(PoseSource):
    """Poses of ``frames[i]`` in ``targets[i]`` from a tree of transforms (a bag's /tf).

    Stamped transforms are interpolated at the sample stamps (linear in position, slerp
    in orientation), as tf2 does; no extrapolation: a sample outside the recorded range
    of a transform has no pose.

    :param edges: child frame -> :class:`Edge`.
    :param targets: frame each pose is expressed in (the object frame, or a contact frame
        for sensor frames).
    :param frames: the frames looked up, one per effector.
    :raises ValueError: when a frame is not connected to its target.
    """

    def __init__(self, edges: dict[str, Edge], targets: Sequence[str], frames: Sequence[str],
                 description: str = '/tf and /tf_static') -> None:
        self.edges = edges
        self.targets = [frame_key(f) for f in targets]
        self.frames = [frame_key(f) for f in frames]
        self.description = description
        self.paths = [self._path(f, t) for f, t in zip(self.frames, self.targets)]

    def _ancestors(self, frame: str) -> list[str]:
        chain = [frame]
        while chain[-1] in self.edges and len(chain) < 1000:
            chain.append(self.edges[chain[-1]].parent)
        return chain

    def _path(self, frame: str, target: str) -> tuple[list[str], list[str]]:
        up_c = self._ancestors(frame)
        up_o = self._ancestors(target)
        common = next((f for f in up_c if f in up_o), None)
        if common is None:
            known = sorted(set(self.edges) | {e.parent for e in self.edges.values()})
            raise ValueError(f'no tf path from {target} to {frame}; frames in '
                             f'{self.description}: {", ".join(known) or "none"}')
        return up_c[:up_c.index(common)], up_o[:up_o.index(common)]

    def _in_common(self, chain: list[str], t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Pose of chain[0] in the common ancestor."""
        pose = Q.identity((len(t),))
        valid = np.ones(len(t), bool)
        for frame in reversed(chain):
            p, v = self.edges[frame].at(t)
            pose = Q.compose(pose, p)
            valid &= v
        return pose, valid

    def at(self, stamps_ns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Poses (k, n, 7) of the frames in their targets."""
        t = np.asarray(stamps_ns, np.int64)
        out = np.empty((len(t), len(self.frames), 7))
        valid = np.ones(len(t), bool)
        for c, (up_c, up_o) in enumerate(self.paths):
            p_c, v_c = self._in_common(up_c, t)
            p_o, v_o = self._in_common(up_o, t)
            out[:, c] = Q.compose(Q.invert(p_o), p_c)
            valid &= v_c & v_o
        return out, valid

    def why(self, stamp_ns: int) -> str:
        """Why there is no pose at ``stamp_ns``."""
        pairs = ', '.join(f'{f} in {t}' for f, t in zip(self.frames, self.targets))
        return f'no transform {pairs} at {stamp_ns * 1e-9:.6f} s in {self.description}'


def sensor_models_at(sensors: Sequence, poses: Optional[np.ndarray]) -> list:
    """Sensor models with their poses replaced by looked-up ones.

    :param sensors: core ``SensorModel`` per effector.
    :param poses: (n, 7) sensor poses in their contact frames, or None to keep the models.
    :return: the sensor models.
    """
    if poses is None:
        return list(sensors)
    from dataclasses import replace
    return [replace(s, position=tuple(p[:3]), orientation=tuple(p[3:]))
            for s, p in zip(sensors, poses)]
