"""Write the bag of a calibration on a two-arm cell, and the analyzer's parameter file for it.

What a cell records for ``wrench-distribution identify`` (docs/calibration.md): two wrist F/T
sensors (``/left/ft_sensor``, ``/right/ft_sensor``, 200 Hz) and the grasp frame's pose in
``world`` (``/object_pose``). The grasp frame rests a second in each of six orientations with the
tools free (the grippers open), moving between them along minimum-jerk paths; then the box is
held, with a squeeze, in six orientations. Each sensor reads, in its frame, its tool's weight and
the wrench its gripper applies to the box (the reaction, sign -1), plus a bias and white noise
(0.05 N, 0.003 N m); the readings along the moves leave out the tools' inertia (the rests are
what the identification takes).

Usage: ``python examples/calibration_bag.py BAG_DIRECTORY PARAMETER_FILE``.
"""
import sys

import numpy as np
from rosbags.rosbag2 import Writer
from rosbags.typesys import get_typestore, Stores
from scipy.spatial.transform import Rotation
import yaml

RATE = 200                                        # Hz
G = np.array([0.0, 0.0, -9.81])
NAMES = ('left', 'right')
#: contact frames in the grasp frame (z into the box), sensors 5 and 4 cm behind them
CONTACTS = [(np.array([0.0, 0.2, 0.0]), Rotation.from_euler('x', 90, degrees=True), np.array([0.0, 0.0, -0.05])),
            (np.array([0.0, -0.2, 0.0]), Rotation.from_euler('x', -90, degrees=True), np.array([0.0, 0.0, -0.04]))]
#: the truth the identification should find: tool mass, centre of mass (sensor frame), bias
TOOLS = [(0.9, np.array([0.01, -0.02, 0.05]), np.array([1.5, -2.0, 0.8, 0.05, -0.03, 0.02])),
         (0.6, np.array([0.0, 0.01, 0.03]), np.array([-1.0, 0.5, 1.2, -0.04, 0.06, 0.01]))]
BOX_MASS, BOX_COM, SQUEEZE = 3.2, np.array([0.02, -0.01, 0.05]), 15.0


def orientations(count: int, degrees: float) -> list:
    """Level, then tilted by ``degrees`` about horizontal axes spread around the circle."""
    axes = [np.array([np.cos(a), np.sin(a), 0.0]) for a in np.linspace(0, 2 * np.pi, count - 1, endpoint=False)]
    return [Rotation.identity()] + [Rotation.from_rotvec(np.radians(degrees) * axis) for axis in axes]


def path(rests: list) -> Rotation:
    """A second at each orientation, 0.6 s minimum-jerk moves between them."""
    parts = []
    for j, rest in enumerate(rests):
        if j:
            u = np.linspace(0.0, 1.0, int(0.6 * RATE) + 2)[1:-1]
            s = 10 * u ** 3 - 15 * u ** 4 + 6 * u ** 5
            parts.append(Rotation.from_rotvec(np.outer(s, (rest * rests[j - 1].inv()).as_rotvec())) * rests[j - 1])
        parts.append(Rotation.concatenate([rest] * RATE))
    return Rotation.concatenate(parts)


def readings(frame: Rotation, held: bool, rng: np.random.Generator) -> np.ndarray:
    """Each sensor's reading (k, 2, 6): the reaction to its tool's weight and its push on the box."""
    g_grasp = frame.inv().apply(G)                                 # gravity in the grasp frame
    weight = BOX_MASS * g_grasp
    need = -np.concatenate([weight, np.cross(BOX_COM, weight)], axis=1)   # about the grasp origin
    out = np.zeros((len(g_grasp), 2, 6))
    first = np.zeros_like(need)
    if held:                                                       # half the weight each, and a squeeze
        first[:, :3] = need[:, :3] / 2 + [0.0, -SQUEEZE, 0.0]
        first[:, 3:] = np.cross(CONTACTS[0][0], first[:, :3])
    for i, ((position, rotation, sensor), (mass, com, bias)) in enumerate(zip(CONTACTS, TOOLS)):
        push = first if i == 0 else (need - first if held else np.zeros_like(need))
        force = rotation.inv().apply(push[:, :3])                  # at the contact, contact frame
        torque = rotation.inv().apply(push[:, 3:] - np.cross(position, push[:, :3]))
        g = rotation.inv().apply(g_grasp)
        on_tool = np.concatenate([force - mass * g, torque - np.cross(sensor, force)
                                  - np.cross(com, mass * g)], axis=1)
        out[:, i] = -on_tool + bias + rng.normal(size=on_tool.shape) * ([0.05] * 3 + [0.003] * 3)
    return out


def write(bag: str, parameters: str) -> None:
    """Write the bag (sqlite3) and the analyzer's parameter file (the tools guessed, no bias)."""
    store = get_typestore(Stores.ROS2_HUMBLE)
    t = store.types
    rng = np.random.default_rng(7)
    phases = [(path(orientations(6, 35.0)), False), (path(orientations(6, 25.0)), True)]
    ns = 1_700_000_000 * 10 ** 9
    with Writer(bag, version=8) as writer:
        topics = {name: writer.add_connection(f'/{name}/ft_sensor', 'geometry_msgs/msg/WrenchStamped', typestore=store)
                  for name in NAMES}
        poses = writer.add_connection('/object_pose', 'geometry_msgs/msg/PoseStamped', typestore=store)
        for frame, held in phases:
            values = readings(frame, held, rng)
            for j, q in enumerate(frame.as_quat()):
                header = t['std_msgs/msg/Header'](stamp=t['builtin_interfaces/msg/Time'](
                    sec=ns // 10 ** 9, nanosec=ns % 10 ** 9), frame_id='world')
                pose = t['geometry_msgs/msg/Pose'](position=t['geometry_msgs/msg/Point'](x=0.5, y=0.0, z=0.9),
                                                   orientation=t['geometry_msgs/msg/Quaternion'](*q))
                writer.write(poses, ns - 10 ** 6, store.serialize_cdr(
                    t['geometry_msgs/msg/PoseStamped'](header=header, pose=pose), 'geometry_msgs/msg/PoseStamped'))
                for i, name in enumerate(NAMES):
                    v = [t['geometry_msgs/msg/Vector3'](*values[j, i, k:k + 3]) for k in (0, 3)]
                    message = t['geometry_msgs/msg/WrenchStamped'](
                        header=t['std_msgs/msg/Header'](stamp=header.stamp, frame_id=f'{name}_ft'),
                        wrench=t['geometry_msgs/msg/Wrench'](force=v[0], torque=v[1]))
                    writer.write(topics[name], ns + 10 ** 5 * (i + 1),
                                 store.serialize_cdr(message, 'geometry_msgs/msg/WrenchStamped'))
                ns += 10 ** 9 // RATE
    cell = {'effectors': list(NAMES), 'contact_source': 'static',
            'contact_positions': [float(x) for p, _, _ in CONTACTS for x in p],
            'contact_orientations': [float(x) for _, r, _ in CONTACTS for x in r.as_quat()],
            'sensor_positions': [float(x) for _, _, s in CONTACTS for x in s], 'sensor_signs': [-1, -1],
            'tool_masses': [0.8, 0.8], 'tool_coms': [0.0, 0.0, 0.04] * 2, 'gravity': [0.0, 0.0, -9.81],
            'gravity_frame': 'world', 'object_orientation_source': 'topic', 'object_pose_topic': 'object_pose',
            'sync_tolerance': 0.002, 'max_age': 0.0, 'max_future': 0.0}
    with open(parameters, 'w', encoding='utf-8') as stream:
        yaml.safe_dump({'wrench_analyzer': {'ros__parameters': cell}}, stream)


if __name__ == '__main__':
    if len(sys.argv) != 3:
        sys.exit(__doc__.split('Usage: ')[1].strip())
    write(sys.argv[1], sys.argv[2])
