"""Contact and sensor poses read from a bag: a PoseArray topic, or ``/tf`` and ``/tf_static``.

The object's orientation in ``gravity_frame`` (:mod:`wrench_distribution.engine.sensing`):
the bag's ``/tf`` or a PoseStamped topic.

They become the engine's pose sources (:mod:`wrench_distribution.engine.poses`), the same
classes the analyzer node feeds live.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from wrench_distribution.core import spatial as Q
from wrench_distribution.core.codec import frame_key, same_frame, seconds_to_ns, stamp_to_ns
from wrench_distribution.core.messages import pose_to_list, transform_to_list
from wrench_distribution.engine.poses import Edge, HeldPoses, TfTree
from .errors import BagError
from .reader import BagReader, POSE_ARRAY, TF_MESSAGE

POSE_STAMPED = 'geometry_msgs/msg/PoseStamped'


def read_pose_array(bag: BagReader, topic: str, names: Sequence[str], object_frame: str,
                    timeout_s: float) -> HeldPoses:
    """Read every PoseArray on ``topic``.

    :raises BagError: missing topic, wrong type, wrong number of poses or frame.
    """
    bag.require(topic, POSE_ARRAY, 'contact poses')
    n = len(names)
    held = HeldPoses(names, object_frame, seconds_to_ns(timeout_s),
                     description=f'PoseArray topic {topic}')
    stamps, poses = [], []
    for stamp, frame_id, pose in bag.pose_arrays(topic):
        if len(pose) != n:
            raise BagError(
                f'{topic} carries {len(pose)} poses but the configuration has {n} '
                'effectors; the poses must follow the order of the effectors parameter')
        if frame_id and not same_frame(frame_id, object_frame):
            raise BagError(
                f'{topic} is in frame {frame_id!r} but object_frame is {object_frame!r}')
        stamps.append(stamp)
        poses.append(pose)
    if not stamps:
        raise BagError(f'topic {topic} (contact poses) has no messages in {bag.path}')
    arr = np.asarray(poses, float)
    arr[..., 3:] = Q.normalize(arr[..., 3:])
    held.extend(np.asarray(stamps, np.int64), arr)
    return held


def read_tf(bag: BagReader, tf_topic: str = '/tf', static_topic: str = '/tf_static'
            ) -> dict[str, Edge]:
    """Read the transform tree from ``/tf`` and ``/tf_static``.

    :return: child frame -> :class:`Edge` (for :class:`TfTree`).
    :raises BagError: no tf in the bag, wrong type, or a frame changing parent.
    """
    topics = [t for t in (tf_topic, static_topic) if t in bag.topics]
    if not topics:
        raise BagError(
            f'contact_source is tf but bag {bag.path} has neither {tf_topic} nor {static_topic}')
    for t in topics:
        bag.require(t, TF_MESSAGE, 'transforms')
    dynamic: dict[str, tuple[str, list, list]] = {}
    static: dict[str, tuple[str, list]] = {}
    for topic, _, msg in bag.messages(topics, TF_MESSAGE):
        for tr in msg.transforms:
            child = frame_key(tr.child_frame_id)
            parent = frame_key(tr.header.frame_id)
            pose = transform_to_list(tr.transform)
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
    edges: dict[str, Edge] = {}
    for child, (parent, pose) in static.items():
        p = np.asarray([pose], float)
        p[:, 3:] = Q.normalize(p[:, 3:])
        edges[child] = Edge(parent, np.empty(0, np.int64), p)
    for child, (parent, stamps, poses) in dynamic.items():
        st = np.asarray(stamps, np.int64)
        order = np.argsort(st, kind='stable')
        p = np.asarray(poses, float)[order]
        p[:, 3:] = Q.normalize(p[:, 3:])
        edges[child] = Edge(parent, st[order], p)
    return edges


def tf_poses(edges: dict[str, Edge], targets: Sequence[str], frames: Sequence[str]) -> TfTree:
    """Poses of ``frames[i]`` in ``targets[i]`` from a bag's transform tree.

    :raises BagError: when a frame is not connected to its target.
    """
    try:
        return TfTree(edges, targets, frames)
    except ValueError as err:
        raise BagError(f'{err} in the bag') from None


def read_pose_stamped(bag: BagReader, topic: str, frame: str, timeout_s: float) -> HeldPoses:
    """Read every PoseStamped on ``topic``: the object's pose in ``frame`` (gravity_frame).

    :param bag: the open bag.
    :param topic: the topic (resolved).
    :param frame: the frame the poses must be expressed in.
    :param timeout_s: ``orientation_timeout``: older poses are not used (0: held forever).
    :return: the poses as a one-frame source.
    :raises BagError: missing topic, wrong type, no message, wrong frame.
    """
    bag.require(topic, POSE_STAMPED, 'object pose')
    held = HeldPoses(['object'], frame, seconds_to_ns(timeout_s),
                     description=f'PoseStamped topic {topic}')
    stamps, poses = [], []
    for _, _, msg in bag.messages([topic], POSE_STAMPED):
        if msg.header.frame_id and not same_frame(msg.header.frame_id, frame):
            raise BagError(f'{topic} is in frame {msg.header.frame_id!r} but gravity_frame is '
                           f'{frame!r}')
        stamps.append(stamp_to_ns(msg.header.stamp))
        poses.append([pose_to_list(msg.pose)])
    if not stamps:
        raise BagError(f'topic {topic} (object pose) has no messages in {bag.path}')
    arr = np.asarray(poses, float)
    if not np.isfinite(arr).all() or Q.unusable_quaternions(arr[..., 3:]).any():
        raise BagError(f'{topic} holds a pose with NaN, Inf or a zero quaternion')
    arr[..., 3:] = Q.normalize(arr[..., 3:])
    held.extend(np.asarray(stamps, np.int64), arr)
    return held
