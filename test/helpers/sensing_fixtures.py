"""A recording of a tilting object held by three effectors, with tools and biased sensors.

The truth is built by hand, independently of the code under test: the applied contact
wrenches come from :func:`bag_fixtures.make_scenario` (the core's synthesis of a resultant,
plus a squeeze added by hand); the object turns in ``world`` at a constant rate about a
fixed axis (so tf's interpolation between two transforms is exact); gravity in each sensor
frame is rotated by hand (``g_o = R_w^T g``, then into the contact and the sensor frames);
the tool weight is subtracted and the bias added by hand. The first ``FREE`` samples have the
object free (nothing applied: the sensors read their tools and their biases), for a tare.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
from scipy.spatial.transform import Rotation

import bag_fixtures as F

G_WORLD = np.array([0.0, 0.0, -9.81])
TOOL_MASSES = [0.9, 0.6, 0.4]
TOOL_COMS = np.array([[0.0, 0.0, 0.04], [0.01, 0.0, 0.03], [0.0, -0.01, 0.02]])
BIASES = np.array([[1.5, -2.0, 0.8, 0.05, -0.03, 0.02],
                   [-2.0, 0.5, 1.2, -0.04, 0.06, 0.01],
                   [0.3, 0.9, -1.1, 0.02, 0.01, -0.05]])
FREE = 60          # samples with the object free, first
HELD = 150         # samples with the object held, after
AXIS = np.array([1.0, 1.0, 0.3]) / np.linalg.norm([1.0, 1.0, 0.3])
RATE = 1.3         # rad/s: about 32 degrees over the recording
START_TILT = Rotation.from_euler('y', 8, degrees=True)
OBJECT_POSITION = np.array([0.5, -0.2, 0.9])


@dataclass
class Tilting:
    """Known truth of the recording (all samples, free ones first)."""

    stamps_ns: np.ndarray     # (k,)
    held: np.ndarray          # (k,) bool
    resultant: np.ndarray     # (k, 6), zero while free
    squeeze: np.ndarray       # (k,), zero while free
    readings: np.ndarray      # (k, n, 6) biased sensor readings
    object_quat: np.ndarray   # (k, 4) object orientation in world


def object_rotation(t_s: np.ndarray) -> Rotation:
    """Orientation of the object in ``world``: a constant-rate turn about a fixed axis."""
    return Rotation.from_rotvec(np.outer(RATE * t_s, AXIS)) * START_TILT


def sensor_reading(applied: np.ndarray, object_rot: Rotation, i: int) -> np.ndarray:
    """Return what sensor ``i`` reads (bias included) when its effector applies ``applied``.

    By hand: gravity into the object frame (``R_w^T g``), the contact frame (``R_c^T``) and
    the sensor frame (``R_s^T``); the applied wrench moved to the sensor origin
    (``f_s = R_s^T f``, ``t_s = R_s^T (t - p x f)``); the tool's weight ``m g_s`` at its centre
    of mass taken off (the sensor holds the tool as well as pushing); the sign; the bias.
    """
    rs = Rotation.from_quat(F.SENSOR_ORIENTATIONS[i]).as_matrix()
    p = F.SENSOR_POSITIONS[i]
    g_object = object_rot.inv().apply(G_WORLD)
    g_contact = Rotation.from_quat(F.ORIENTATIONS[i]).inv().apply(g_object)
    g_sensor = g_contact @ rs
    f, t = applied[..., :3], applied[..., 3:]
    f_s = f @ rs
    t_s = (t - np.cross(p, f)) @ rs
    weight = TOOL_MASSES[i] * g_sensor
    tool = np.concatenate([weight, np.cross(TOOL_COMS[i], weight)], axis=-1)
    return F.SENSOR_SIGNS[i] * (np.concatenate([f_s, t_s], axis=-1) - tool) + BIASES[i]


def make_tilting(seed: int = 5) -> Tilting:
    """Return the recording: ``FREE`` free samples, then ``HELD`` held ones."""
    k = FREE + HELD
    stamps = F.START_NS + F.PERIOD_NS * np.arange(k, dtype=np.int64)
    held_sc = F.make_scenario(HELD, seed=seed, start_ns=int(stamps[FREE]))
    applied = np.zeros((k, 3, 6))
    applied[FREE:] = held_sc.applied
    rot = object_rotation((stamps - F.START_NS) * 1e-9)
    readings = np.stack([sensor_reading(applied[:, i], rot, i) for i in range(3)], axis=1)
    resultant = np.zeros((k, 6))
    resultant[FREE:] = held_sc.resultant
    squeeze = np.zeros(k)
    squeeze[FREE:] = held_sc.squeeze
    held = np.arange(k) >= FREE
    return Tilting(stamps, held, resultant, squeeze, readings, rot.as_quat())


def params(**overrides) -> dict:
    """Analyzer parameters: static contacts, the tools, gravity in ``world``."""
    p = F.params('static', tool_masses=list(TOOL_MASSES), tool_coms=TOOL_COMS.ravel().tolist(),
                 gravity=G_WORLD.tolist(), gravity_frame='world',
                 object_orientation_source='tf')['wrench_analyzer']['ros__parameters']
    p.update(overrides)
    return p


def _pose_stamped(ns: int, frame: str, pose7: np.ndarray):
    T = F.T
    return T['geometry_msgs/msg/PoseStamped'](header=F._header(ns, frame), pose=F._pose(pose7))


def write_bag(path: Path, rec: Tilting, *, tf_until: int = -1, tf_period: int = 10,
              pose_gap: Sequence[int] = (), storage: str = 'sqlite3') -> Path:
    """Write the F/T streams, ``world -> object`` in /tf and the object pose on /object_pose.

    :param tf_until: last sample with a transform (-1: the last sample).
    :param tf_period: samples between two transforms.
    :param pose_gap: samples without an /object_pose message.
    """
    bw = F.BagWriter(path, storage)
    k = len(rec.stamps_ns)
    last = k - 1 if tf_until < 0 else tf_until
    marks = sorted(set(range(0, last + 1, tf_period)) | {last})
    gap = set(pose_gap)
    for j, ns in enumerate(rec.stamps_ns.tolist()):
        for i, e in enumerate(F.EFFECTORS):
            bw.add(f'/{e}/ft_sensor', F.WS, ns + 300_000 * (i + 1),
                   F.wrench_msg(ns, f'{e}_ft', rec.readings[j, i]))
        pose = np.concatenate([OBJECT_POSITION, rec.object_quat[j]])
        if j in marks:
            bw.add('/tf', F.TF, ns - 50_000, F.tf_msg(ns, [('world', 'object', pose)]))
        if j not in gap:
            # 1 ms ahead of the sample (after the previous sample's readings): live, the pose
            # is in before the readings it serves
            bw.add('/object_pose', 'geometry_msgs/msg/PoseStamped', ns - 1_000_000,
                   _pose_stamped(ns, 'world', pose))
    return bw.close()
