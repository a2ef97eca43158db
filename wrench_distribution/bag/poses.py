"""Contact-pose sources for offline analysis: static config, a PoseArray topic, or tf.

Every source answers :meth:`at` for an array of sample stamps with the contact poses
``(k, n, 7)`` ``[x, y, z, qx, qy, qz, qw]`` in the object frame and a validity mask
(a sample without a known contact pose is dropped and counted).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from wrench_distribution.core import spatial as Q
from wrench_distribution.core.codec import stamp_to_ns
from .errors import BagError
from .reader import BagReader, POSE_ARRAY, TF_MESSAGE


class StaticPoses:
    """Poses from the ``contact_positions`` / ``contact_orientations`` parameters."""

    def __init__(self, poses: np.ndarray) -> None:
        self.poses = np.asarray(poses, float)
        self.description = 'static configuration'

    def at(self, stamps_ns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Poses (k, n, 7) and validity (k,) at the sample stamps."""
        k = len(stamps_ns)
        return np.broadcast_to(self.poses, (k,) + self.poses.shape), np.ones(k, bool)


class HeldPoses:
    """Poses from a PoseArray topic, each held until the next one (by header stamp).

    :param stamps_ns: header stamps (m,) of the PoseArray messages.
    :param poses: (m, n, 7).
    :param timeout_ns: a pose older than this is stale (0 disables).
    """

    def __init__(self, stamps_ns: np.ndarray, poses: np.ndarray, timeout_ns: int = 0,
                 description: str = '') -> None:
        order = np.argsort(stamps_ns, kind='stable')
        self.stamps = np.asarray(stamps_ns, np.int64)[order]
        self.poses = np.asarray(poses, float)[order]
        self.timeout = int(timeout_ns)
        self.description = description

    def at(self, stamps_ns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Latest pose with a stamp not after each sample stamp."""
        idx = np.searchsorted(self.stamps, stamps_ns, side='right') - 1
        valid = idx >= 0
        safe = np.maximum(idx, 0)
        if self.timeout > 0:
            valid &= (stamps_ns - self.stamps[safe]) <= self.timeout
        return self.poses[safe], valid


@dataclass
class _Edge:
    parent: str
    stamps: np.ndarray  # (m,) int64, sorted; empty for static edges
    poses: np.ndarray   # (m, 7) pose of the child in the parent

    def at(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self.stamps.size == 0:  # static
            return np.broadcast_to(self.poses[0], (len(t), 7)), np.ones(len(t), bool)
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


class TfPoses:
    """Contact poses looked up in the bag's ``/tf`` and ``/tf_static``.

    Dynamic transforms are interpolated at the sample stamps (linear in position,
    slerp in orientation), as tf2 does; no extrapolation: a sample outside the
    recorded range of a transform has no pose.
    """

    def __init__(self, edges: dict[str, _Edge], object_frame: str,
                 contact_frames: Sequence[str]) -> None:
        self.edges = edges
        self.object_frame = object_frame
        self.contact_frames = list(contact_frames)
        self.description = '/tf and /tf_static'
        for frame in self.contact_frames:
            self._path(frame)  # fail early when a frame is not connected

    def _ancestors(self, frame: str) -> list[str]:
        chain = [frame]
        while chain[-1] in self.edges and len(chain) < 1000:
            chain.append(self.edges[chain[-1]].parent)
        return chain

    def _path(self, frame: str) -> tuple[list[str], list[str]]:
        up_c = self._ancestors(frame)
        up_o = self._ancestors(self.object_frame)
        common = next((f for f in up_c if f in up_o), None)
        if common is None:
            known = sorted(set(self.edges) | {e.parent for e in self.edges.values()})
            raise BagError(
                f'no tf path from {self.object_frame} to {frame} in the bag; '
                f'frames in /tf and /tf_static: {", ".join(known) or "none"}')
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
        """Poses (k, n, 7) of the contact frames in the object frame."""
        t = np.asarray(stamps_ns, np.int64)
        out = np.empty((len(t), len(self.contact_frames), 7))
        valid = np.ones(len(t), bool)
        for c, frame in enumerate(self.contact_frames):
            up_c, up_o = self._path(frame)
            p_c, v_c = self._in_common(up_c, t)
            p_o, v_o = self._in_common(up_o, t)
            out[:, c] = Q.compose(Q.invert(p_o), p_c)
            valid &= v_c & v_o
        return out, valid


def _pose7(p) -> list[float]:
    return [p.position.x, p.position.y, p.position.z,
            p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w]


def read_pose_array(bag: BagReader, topic: str, n: int, object_frame: str,
                    timeout_s: float) -> HeldPoses:
    """Read every PoseArray on ``topic``.

    :raises BagError: missing topic, wrong type, wrong number of poses or frame.
    """
    bag.require(topic, POSE_ARRAY, 'contact poses')
    stamps, poses = [], []
    for _, _, raw in bag.raw_messages([topic]):
        msg = bag.deserialize(raw, POSE_ARRAY)
        if len(msg.poses) != n:
            raise BagError(
                f'{topic} carries {len(msg.poses)} poses but the configuration has {n} '
                'effectors; the poses must follow the order of the effectors parameter')
        frame = msg.header.frame_id.lstrip('/')
        if frame and frame != object_frame.lstrip('/'):
            raise BagError(
                f'{topic} is in frame {msg.header.frame_id!r} but object_frame is '
                f'{object_frame!r}')
        stamps.append(stamp_to_ns(msg.header.stamp))
        poses.append([_pose7(p) for p in msg.poses])
    if not stamps:
        raise BagError(f'topic {topic} (contact poses) has no messages in {bag.path}')
    arr = np.asarray(poses, float)
    arr[..., 3:] = Q.normalize(arr[..., 3:])
    return HeldPoses(np.asarray(stamps, np.int64), arr, int(round(timeout_s * 1e9)),
                     description=f'PoseArray topic {topic}')


def read_tf(bag: BagReader, object_frame: str, contact_frames: Sequence[str],
            tf_topic: str = '/tf', static_topic: str = '/tf_static') -> TfPoses:
    """Read the transform tree from ``/tf`` and ``/tf_static``.

    :raises BagError: no tf in the bag, wrong type, or frames not connected.
    """
    topics = [t for t in (tf_topic, static_topic) if t in bag.topics]
    if not topics:
        raise BagError(
            f'contact_source is tf but bag {bag.path} has neither {tf_topic} nor {static_topic}')
    for t in topics:
        bag.require(t, TF_MESSAGE, 'transforms')
    dynamic: dict[str, tuple[str, list, list]] = {}
    static: dict[str, tuple[str, list]] = {}
    for topic, _, raw in bag.raw_messages(topics):
        msg = bag.deserialize(raw, TF_MESSAGE)
        for tr in msg.transforms:
            child = tr.child_frame_id.lstrip('/')
            parent = tr.header.frame_id.lstrip('/')
            tf = tr.transform
            pose = [tf.translation.x, tf.translation.y, tf.translation.z,
                    tf.rotation.x, tf.rotation.y, tf.rotation.z, tf.rotation.w]
            if topic == static_topic:
                static[child] = (parent, pose)
            else:
                stamp = stamp_to_ns(tr.header.stamp)
                entry = dynamic.setdefault(child, (parent, [], []))
                if entry[0] != parent:
                    raise BagError(
                        f'frame {child} changes parent in {tf_topic} ({entry[0]} -> {parent})')
                entry[1].append(stamp)
                entry[2].append(pose)
    edges: dict[str, _Edge] = {}
    for child, (parent, pose) in static.items():
        p = np.asarray([pose], float)
        p[:, 3:] = Q.normalize(p[:, 3:])
        edges[child] = _Edge(parent, np.empty(0, np.int64), p)
    for child, (parent, stamps, poses) in dynamic.items():
        st = np.asarray(stamps, np.int64)
        order = np.argsort(st, kind='stable')
        p = np.asarray(poses, float)[order]
        p[:, 3:] = Q.normalize(p[:, 3:])
        edges[child] = _Edge(parent, st[order], p)
    return TfPoses(edges, object_frame.lstrip('/'), [f.lstrip('/') for f in contact_frames])
