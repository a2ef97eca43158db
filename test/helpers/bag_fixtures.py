"""Bags with known content for the bag tests, written with ``rosbags`` (sqlite3 and mcap).

The reference is built independently of the code under test: the manipulating
wrenches come from the core's synthesis (no internal load), a pairwise squeeze is
added by hand (equal and opposite forces along the line joining two contacts), and
the applied wrenches are moved into the sensor frames by hand (scipy rotations,
sensor offsets, sign conventions, tool weight), so the analysis has to undo all of
that to recover the resultant and the squeeze.
"""
from __future__ import annotations

from dataclasses import dataclass
import os
from pathlib import Path
import signal
import subprocess
import time
from typing import Optional, Sequence

import numpy as np
from rosbags.interfaces import (Qos, QosDurability, QosHistory, QosLiveliness, QosReliability,
                                QosTime)
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import get_typestore, Stores
from scipy.spatial.transform import Rotation
import yaml

from wrench_distribution.core import Contact, LoadDistributor, ObjectModel

TYPESTORE = get_typestore(Stores.ROS2_HUMBLE)
T = TYPESTORE.types

EFFECTORS = ['left', 'right', 'palm']
TYPES = ['rigid', 'rigid', 'point']
POSITIONS = np.array([[0.0, -0.2, 0.0], [0.05, 0.2, 0.01], [0.3, 0.0, 0.1]])
ORIENTATIONS = np.array([Rotation.from_euler('z', 45, degrees=True).as_quat(),
                         [0.0, 0.0, 1.0, 0.0],
                         Rotation.from_euler('xy', [20, -30], degrees=True).as_quat()])
COM = np.array([0.0, 0.01, 0.05])
MASS = 2.0
GRAVITY = np.array([0.0, 1.2, -9.73])  # object frame, tilted on purpose
SENSOR_POSITIONS = np.array([[0.0, 0.0, -0.04], [0.01, 0.02, -0.06], [0.0, 0.0, -0.03]])
SENSOR_ORIENTATIONS = np.array([Rotation.from_euler('x', 180, degrees=True).as_quat(),
                                Rotation.from_euler('z', 90, degrees=True).as_quat(),
                                [0.0, 0.0, 0.0, 1.0]])
SENSOR_SIGNS = [-1, 1, -1]
TOOL_MASSES = [0.5, 0.0, 0.2]
TOOL_COMS = np.array([[0.0, 0.0, 0.02], [0.0, 0.0, 0.0], [0.01, 0.0, 0.01]])
SQUEEZE = 'squeeze(left,right)'
START_NS = 1_700_000_000_000_000_000
PERIOD_NS = 2_000_000  # 500 Hz


def params(contact_source: str = 'static', **overrides) -> dict:
    """Parameter file content (``{node: {ros__parameters: ...}}``) for the scenario."""
    p = {
        'object_frame': 'object', 'effectors': list(EFFECTORS), 'contact_types': list(TYPES),
        'contact_source': contact_source,
        'contact_positions': POSITIONS.ravel().tolist(),
        'contact_orientations': ORIENTATIONS.ravel().tolist(),
        'contact_frames': [f'{e}_contact' for e in EFFECTORS],
        'contact_pose_tolerance': 0.0,
        'object_com': COM.tolist(), 'object_mass': MASS,
        'sensor_positions': SENSOR_POSITIONS.ravel().tolist(),
        'sensor_orientations': SENSOR_ORIENTATIONS.ravel().tolist(),
        'sensor_signs': list(SENSOR_SIGNS), 'tool_masses': list(TOOL_MASSES),
        'tool_coms': TOOL_COMS.ravel().tolist(), 'gravity': GRAVITY.tolist(),
        'sync_tolerance': 0.001, 'max_age': 0.0,
    }
    if contact_source != 'static':
        p.pop('contact_positions')
        p.pop('contact_orientations')
    p.update(overrides)
    return {'wrench_analyzer': {'ros__parameters': p}}


def write_params(path: Path, contact_source: str = 'static', **overrides) -> Path:
    """Write the parameter YAML file and return its path."""
    Path(path).write_text(yaml.safe_dump(params(contact_source, **overrides)))
    return Path(path)


@dataclass
class Scenario:
    """Known truth of a recording of k samples."""

    stamps_ns: np.ndarray     # (k,)
    resultant: np.ndarray     # (k, 6) object frame, about the CoM
    squeeze: np.ndarray       # (k,) N, pushing left and right towards each other
    applied: np.ndarray       # (k, n, 6) applied wrench, contact frame about the contact
    readings: np.ndarray      # (k, n, 6) what the sensors report
    poses: np.ndarray         # (k, n, 7) contact poses in the object frame


def contact_motion(t_s: np.ndarray) -> np.ndarray:
    """Poses (k, n, 7) of contacts that move linearly and turn at constant rate."""
    k = len(t_s)
    out = np.empty((k, 3, 7))
    for i in range(3):
        axis = np.eye(3)[i]
        rot = Rotation.from_rotvec(np.outer(0.3 * t_s, axis)) * Rotation.from_quat(ORIENTATIONS[i])
        out[:, i, :3] = POSITIONS[i] + np.outer(t_s, [0.02, -0.01, 0.005 * (i + 1)])
        out[:, i, 3:] = rot.as_quat()
    return out


def to_sensor(applied: np.ndarray, contact_quat: np.ndarray, i: int) -> np.ndarray:
    """Sensor reading that corresponds to an applied contact wrench (by hand)."""
    rs = Rotation.from_quat(SENSOR_ORIENTATIONS[i]).as_matrix()
    p = SENSOR_POSITIONS[i]
    f, t = applied[..., :3], applied[..., 3:]
    f_s = f @ rs                      # R^T f, row vectors
    t_s = (t - np.cross(p, f)) @ rs   # R^T (t - p x f)
    g_contact = Rotation.from_quat(contact_quat).inv().apply(GRAVITY)
    g_s = g_contact @ rs
    weight = TOOL_MASSES[i] * g_s
    tool = np.concatenate([np.broadcast_to(weight, f_s.shape),
                           np.broadcast_to(np.cross(TOOL_COMS[i], weight), t_s.shape)], axis=-1)
    return SENSOR_SIGNS[i] * (np.concatenate([f_s, t_s], axis=-1) - tool)


def make_scenario(k: int = 200, moving: bool = False, seed: int = 0,
                  start_ns: int = START_NS, period_ns: int = PERIOD_NS) -> Scenario:
    """Return a recording with a varying resultant and a prescribed squeeze."""
    rng = np.random.default_rng(seed)
    stamps = start_ns + period_ns * np.arange(k, dtype=np.int64)
    t = (stamps - start_ns) * 1e-9
    resultant = np.column_stack([
        5 * np.sin(3 * t), 2 + np.cos(2 * t), 19.6 + 3 * np.sin(t),
        0.4 * np.sin(5 * t), 0.2 * np.cos(t), 0.1 * np.sin(7 * t)]) + 0.01 * rng.normal(size=(k, 6))
    squeeze = 20.0 + 5.0 * np.sin(4 * t)
    poses = contact_motion(t) if moving else np.broadcast_to(
        np.concatenate([POSITIONS, ORIENTATIONS], axis=1), (k, 3, 7)).copy()
    applied_object = np.empty((k, 3, 6))
    groups = [np.arange(k)] if not moving else [np.array([j]) for j in range(k)]
    for rows in groups:
        pose = poses[rows[0]]
        contacts = [Contact(e, ty, tuple(p[:3]), tuple(p[3:]))
                    for e, ty, p in zip(EFFECTORS, TYPES, pose)]
        dist = LoadDistributor(contacts, ObjectModel(com=tuple(COM), mass=MASS))
        applied_object[rows] = dist.synthesize_batch(resultant[rows]).wrench_object
    # the squeeze, by hand: left pushes towards right and right towards left
    u = poses[:, 1, :3] - poses[:, 0, :3]
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    applied_object[:, 0, :3] += squeeze[:, None] * u
    applied_object[:, 1, :3] -= squeeze[:, None] * u
    applied = np.empty_like(applied_object)
    readings = np.empty_like(applied_object)
    for j in range(k):
        for i in range(3):
            r = Rotation.from_quat(poses[j, i, 3:]).inv()
            applied[j, i] = np.concatenate([r.apply(applied_object[j, i, :3]),
                                            r.apply(applied_object[j, i, 3:])])
            readings[j, i] = to_sensor(applied[j, i], poses[j, i, 3:], i)
    return Scenario(stamps, resultant, squeeze, applied, readings, poses)


# -- messages -----------------------------------------------------------------------
def _time(ns: int):
    return T['builtin_interfaces/msg/Time'](
        sec=int(ns // 1_000_000_000), nanosec=int(ns % 1_000_000_000))


def _header(ns: int, frame: str):
    return T['std_msgs/msg/Header'](stamp=_time(ns), frame_id=frame)


def wrench_msg(ns: int, frame: str, w: Sequence[float]):
    """Return a ``geometry_msgs/msg/WrenchStamped``."""
    V = T['geometry_msgs/msg/Vector3']
    return T['geometry_msgs/msg/WrenchStamped'](
        header=_header(ns, frame),
        wrench=T['geometry_msgs/msg/Wrench'](
            force=V(x=float(w[0]), y=float(w[1]), z=float(w[2])),
            torque=V(x=float(w[3]), y=float(w[4]), z=float(w[5]))))


def _pose(p):
    return T['geometry_msgs/msg/Pose'](
        position=T['geometry_msgs/msg/Point'](x=float(p[0]), y=float(p[1]), z=float(p[2])),
        orientation=T['geometry_msgs/msg/Quaternion'](x=float(p[3]), y=float(p[4]),
                                                      z=float(p[5]), w=float(p[6])))


def pose_array_msg(ns: int, frame: str, poses: np.ndarray):
    """Return a ``geometry_msgs/msg/PoseArray``."""
    return T['geometry_msgs/msg/PoseArray'](header=_header(ns, frame),
                                            poses=[_pose(p) for p in poses])


def tf_msg(ns: int, items: Sequence[tuple[str, str, np.ndarray]]):
    """Return a ``tf2_msgs/msg/TFMessage`` of ``(parent, child, pose7)``."""
    V = T['geometry_msgs/msg/Vector3']
    trs = []
    for parent, child, p in items:
        trs.append(T['geometry_msgs/msg/TransformStamped'](
            header=_header(ns, parent), child_frame_id=child,
            transform=T['geometry_msgs/msg/Transform'](
                translation=V(x=float(p[0]), y=float(p[1]), z=float(p[2])),
                rotation=T['geometry_msgs/msg/Quaternion'](x=float(p[3]), y=float(p[4]),
                                                           z=float(p[5]), w=float(p[6])))))
    return T['tf2_msgs/msg/TFMessage'](transforms=trs)


def qos(depth: int) -> Qos:
    """Return a QoS profile (reliable, volatile) of history depth ``depth``."""
    infinite = QosTime(sec=9223372036, nsec=854775807)
    return Qos(history=QosHistory.KEEP_LAST, depth=depth, reliability=QosReliability.RELIABLE,
               durability=QosDurability.VOLATILE, deadline=infinite, lifespan=infinite,
               liveliness=QosLiveliness.AUTOMATIC, liveliness_lease_duration=infinite,
               avoid_ros_namespace_conventions=False)


class BagWriter:
    """Thin wrapper: ``add(topic, type, receive_ns, msg)``, messages sorted on close.

    A topic's messages added with ``publisher`` k > 0 go on a connection of their own, with
    another QoS (depth 10 + k): what rosbags (and rosbag2) record for a second publisher.
    ``shared_qos`` gives a topic's one connection several QoS profiles (rosbag2's record of a
    topic that had several publishers when the recorder subscribed).
    """

    def __init__(self, path: Path, storage: str = 'sqlite3', version: int = 8,
                 shared_qos: Optional[dict] = None) -> None:
        plugin = StoragePlugin.MCAP if storage == 'mcap' else StoragePlugin.SQLITE3
        self.writer = Writer(Path(path), version=version, storage_plugin=plugin)
        self.messages: list[tuple[int, int, str, str, object, int]] = []
        self.path = Path(path)
        self.shared_qos = shared_qos or {}

    def add(self, topic: str, msgtype: str, recv_ns: int, msg: object, publisher: int = 0) -> None:
        self.messages.append((int(recv_ns), len(self.messages), topic, msgtype, msg, publisher))

    def close(self) -> Path:
        conns = {}
        with self.writer as w:
            for recv, _, topic, msgtype, msg, publisher in sorted(self.messages,
                                                                  key=lambda m: m[:2]):
                if (topic, publisher) not in conns:
                    profiles = ([qos(10 + publisher)] if publisher
                                else self.shared_qos.get(topic, ()))
                    conns[(topic, publisher)] = w.add_connection(
                        topic, msgtype, typestore=TYPESTORE, offered_qos_profiles=profiles)
                w.write(conns[(topic, publisher)], recv, TYPESTORE.serialize_cdr(msg, msgtype))
        return self.path


WS = 'geometry_msgs/msg/WrenchStamped'
PA = 'geometry_msgs/msg/PoseArray'
TF = 'tf2_msgs/msg/TFMessage'


def write_scenario_bag(path: Path, sc: Scenario, storage: str = 'sqlite3', *,
                       poses: str = 'none', drop: Sequence[tuple[int, int]] = (),
                       topics: Optional[Sequence[str]] = None,
                       pose_period: int = 10, sensor_frames: bool = False,
                       bad_frames: Sequence[tuple[int, int]] = ()) -> Path:
    """Write the scenario's F/T streams (and contact poses) into a bag.

    Receive times lag the header stamps by a different delay per effector (so a
    result stamped with receive times would be wrong).

    :param poses: ``'none'``, ``'topic'`` (PoseArray ``/contact_poses`` every
        ``pose_period`` samples, first one at the first stamp) or ``'tf'`` (contacts as
        dynamic children of ``object`` in ``/tf`` every ``pose_period`` samples, plus a
        static ``world -> object`` in ``/tf_static``).
    :param sensor_frames: with ``'tf'``, also the sensor frames ``<effector>_ft`` as static
        children of the contact frames (the sensor poses of the scenario).
    :param drop: ``(sample, effector)`` messages left out of the bag.
    :param bad_frames: ``(sample, effector)`` messages written in frame ``wrong`` instead of
        ``<effector>_ft``.
    """
    bw = BagWriter(path, storage)
    topics = list(topics or [f'/{e}/ft_sensor' for e in EFFECTORS])
    dropped = set(drop)
    for j, ns in enumerate(sc.stamps_ns):
        for i, e in enumerate(EFFECTORS):
            if (j, i) in dropped:
                continue
            frame = 'wrong' if (j, i) in set(bad_frames) else f'{e}_ft'
            bw.add(topics[i], WS, int(ns) + 300_000 * (i + 1),
                   wrench_msg(int(ns), frame, sc.readings[j, i]))
    k = len(sc.stamps_ns)
    if poses == 'topic':
        for j in range(0, k, pose_period):
            ns = int(sc.stamps_ns[j])
            bw.add('/contact_poses', PA, ns - 100_000, pose_array_msg(ns, 'object', sc.poses[j]))
    elif poses == 'tf':
        static = [('world', 'object', np.array([1.0, 2.0, 0.5, 0, 0, 0.6, 0.8]))]
        if sensor_frames:
            static += [(f'{e}_contact', f'{e}_ft',
                        np.concatenate([SENSOR_POSITIONS[i], SENSOR_ORIENTATIONS[i]]))
                       for i, e in enumerate(EFFECTORS)]
        bw.add('/tf_static', TF, int(sc.stamps_ns[0]) - 1_000_000,
               tf_msg(int(sc.stamps_ns[0]), static))
        last = k - 1
        marks = list(range(0, k, pose_period))
        if marks[-1] != last:
            marks.append(last)
        for j in marks:
            ns = int(sc.stamps_ns[j])
            bw.add('/tf', TF, ns - 50_000, tf_msg(ns, [
                ('object', f'{e}_contact', sc.poses[j, i]) for i, e in enumerate(EFFECTORS)]))
    return bw.close()


# -- commands stopped at any point --------------------------------------------------------------
class Command:
    """``wrench-distribution ARGS`` in a session of its own (a process group), stopped whole.

    Its output goes to files (no pipe to fill); :meth:`finish` waits a bounded time, then kills
    every process of the group, so nothing it started outlives the test.

    :param argv: the arguments.
    :param where: a directory for the output files.
    :param env: the environment (default: this one).
    """

    def __init__(self, argv: Sequence, where: Path, env: Optional[dict] = None) -> None:
        from ros_harness import REPO, script
        where.mkdir(parents=True, exist_ok=True)
        self.stdout_path, self.stderr_path = where / 'stdout.txt', where / 'stderr.txt'
        with open(self.stdout_path, 'w') as out, open(self.stderr_path, 'w') as err:
            self.proc = subprocess.Popen([script('wrench-distribution'), *map(str, argv)],
                                         stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                         cwd=REPO, env=env, start_new_session=True)
        self.started_at = time.monotonic()
        #: live processes of the group that had not ended within the settling time
        self.left_behind: list = []

    def running_package(self, timeout: float = 60.0) -> float:
        """Wait (bounded) until the process runs the package's code; return the seconds it took.

        The sign is numpy mapped, which the entry point imports with Ctrl-C handled. Python's
        own start-up, before any code of the program runs, is out of reach of every Python
        program: a Ctrl-C there prints the interpreter's traceback.
        """
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                if 'numpy' in Path(f'/proc/{self.proc.pid}/maps').read_text():
                    break
            except OSError:
                break
            time.sleep(0.01)
        return time.monotonic() - self.started_at

    def signal(self, sig: int, group: bool = False) -> None:
        """Send ``sig`` to the process, or with ``group`` to its whole group (a terminal's Ctrl-C)."""
        try:
            os.killpg(self.proc.pid, sig) if group else self.proc.send_signal(sig)
        except ProcessLookupError:
            pass

    def finish(self, timeout: float = 120.0, settle: float = 15.0) -> tuple[int, str, str]:
        """Wait for the exit (at most ``timeout``), then kill what is left of the group.

        What the command started has ``settle`` seconds after its exit to end by itself
        (:attr:`left_behind` lists what had not); then the whole group is killed.

        :return: ``(exit status, stdout, stderr)``; the status is -9 if it had to be killed.
        """
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            pass
        deadline = time.monotonic() + settle
        while self.group_alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        self.left_behind = self.group_alive()
        self.signal(signal.SIGKILL, group=True)
        self.proc.wait(30)
        return (self.proc.returncode, self.stdout_path.read_text(), self.stderr_path.read_text())

    def group_alive(self) -> list:
        """Return the live processes (not zombies) in the command's group, itself included."""
        alive = []
        for entry in Path('/proc').iterdir():
            if not entry.name.isdigit():
                continue
            try:
                fields = (entry / 'stat').read_text().rsplit(')', 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == self.proc.pid and fields[0] != 'Z':
                alive.append(int(entry.name))
        return alive


def output_files(directory: Path) -> dict:
    """Return relative path -> bytes of every file below ``directory`` ({} if it is absent)."""
    if not directory.exists():
        return {}
    return {p.relative_to(directory).as_posix(): p.read_bytes()
            for p in sorted(directory.rglob('*')) if p.is_file()}


def hidden_leftovers(directory: Path) -> list:
    """Return what runs hide below ``directory`` (``.<name>.partial-...``, ``.old-``)."""
    return sorted(str(p) for p in Path(directory).rglob('.*')
                  if '.partial-' in p.name or '.old-' in p.name)
