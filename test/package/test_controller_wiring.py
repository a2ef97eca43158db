"""The shipped configurations produce the frame ids and reference points their comments promise.

Each ``config/*.yaml`` for a robot says, in ``# wiring: <topic> <controller>
frame_id=<frame> point=<contact|sensor>`` lines, what every command topic carries. The
distributor is run on the file itself (the real rcl parameter parser reads it), fed a
desired wrench (and the analyzer section's contact poses when they come from a topic),
and the ``header.frame_id`` of a command on every topic is compared with the promise.
``point=sensor`` (ros2_controllers admittance_controller adds the command to the raw F/T
reading, about the sensor origin) also requires the analyzer's sensors to sit at the
distributor's contacts.
"""
import glob
import os
import re

from geometry_msgs.msg import Pose, PoseArray, WrenchStamped
import numpy as np
import pytest
import yaml

from ros_harness import domain_id_for, REPO, stamped_wrench, start_node, TestClient

pytestmark = pytest.mark.ros

CONFIGS = sorted(p for p in glob.glob(os.path.join(REPO, 'config', '*.yaml'))
                 if not os.path.basename(p).startswith('demo_'))
WIRING = re.compile(r'^#\s*wiring:\s+(\S+)\s+(\S+)\s+frame_id=(\S+)\s+point=(contact|sensor)\s*$')
CONTROLLERS = {'admittance_controller': 'wrench_reference',
               'cartesian_force_controller': 'target_wrench'}


def _promises(path: str) -> dict:
    """Parse the ``# wiring:`` lines of a configuration.

    :return: topic -> (controller, frame_id, point).
    """
    out = {}
    with open(path) as f:
        for line in f:
            m = WIRING.match(line.strip())
            if m:
                out[m.group(1)] = m.group(2, 3, 4)
    return out


def _sections(path: str):
    with open(path) as f:
        doc = yaml.safe_load(f)
    return (doc['/**/wrench_distributor']['ros__parameters'],
            doc['/**/wrench_analyzer']['ros__parameters'])


@pytest.mark.parametrize('path', CONFIGS, ids=os.path.basename)
def test_every_command_topic_has_a_wiring_promise(path):
    """Every command topic is promised a frame, on the topic name its controller reads."""
    dist, ana = _sections(path)
    promises = _promises(path)
    assert set(promises) == set(dist['command_topics'])
    for topic, (controller, frame, point) in promises.items():
        assert controller in CONTROLLERS, controller
        assert topic.endswith('/' + CONTROLLERS[controller]), (topic, controller)
        if point == 'sensor':  # the commands are about the F/T sensor origin
            assert dist['contact_positions'] == ana['contact_positions']
            assert dist['contact_orientations'] == ana['contact_orientations']
            assert not any(ana.get('sensor_positions', []))
            assert ana.get('sensor_orientations', []) in ([], [0.0, 0.0, 0.0, 1.0] * len(
                dist['effectors']))


def _contact_poses(ana: dict, frame: str) -> PoseArray:
    n = len(ana['effectors'])
    pos = np.reshape(ana['contact_positions'], (n, 3))
    quat = (np.reshape(ana['contact_orientations'], (n, 4)) if ana.get('contact_orientations')
            else np.tile([0.0, 0.0, 0.0, 1.0], (n, 1)))
    msg = PoseArray()
    msg.header.frame_id = frame
    for p, q in zip(pos, quat):
        pose = Pose()
        pose.position.x, pose.position.y, pose.position.z = (float(v) for v in p)
        o = pose.orientation
        o.x, o.y, o.z, o.w = (float(v) for v in q)
        msg.poses.append(pose)
    return msg


@pytest.mark.parametrize('path', CONFIGS, ids=os.path.basename)
def test_commands_carry_the_promised_frame_ids(path, tmp_path):
    """Run the distributor on the shipped file; each topic's frame_id is the promised one."""
    dist, ana = _sections(path)
    promises = _promises(path)
    domain = domain_id_for(__name__)
    with start_node('distributor', [path], domain) as node, TestClient(domain, 'wd_wiring_client') as client:
        got = {t: client.collect(WrenchStamped, t) for t in promises}
        pubs = [client.publisher(WrenchStamped, dist.get('desired_wrench_topic', 'desired_wrench'))]
        if dist['contact_source'] == 'topic':
            pubs.append(client.publisher(PoseArray, dist['contact_poses_topic']))
        assert client.wait_matched(publishers=pubs, topics=list(promises), timeout=20.0), node.output()
        weight = 9.81 * float(dist.get('object_mass', 1.0))
        for _ in range(60):
            if all(got.values()):
                break
            now = client.node.get_clock().now()
            if len(pubs) > 1:
                poses = _contact_poses(ana, dist['object_frame'])
                poses.header.stamp = now.to_msg()
                pubs[1].publish(poses)
            pubs[0].publish(stamped_wrench([0.0, 0.0, weight, 0.0, 0.0, 0.0], now.nanoseconds,
                                           dist['object_frame']))
            client.spin_for(0.1)
        missing = [t for t, box in got.items() if not box]
        assert not missing, f'no command on {missing}:\n' + node.output()
        for topic, (_, frame, _) in promises.items():
            assert {m.header.frame_id for m in got[topic]} == {frame}, topic
