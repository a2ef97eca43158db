"""Integration tests of the distributor node over real DDS (console script in a subprocess)."""
import math
import time

from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import Pose, PoseArray, WrenchStamped
import numpy as np
import pytest
from rclpy.parameter import Parameter
from std_msgs.msg import Float64MultiArray, MultiArrayDimension

from ros_harness import (diag_messages, diag_values, domain_id_for,
                         NodeProcess, stamped_wrench, TestClient)
from wrench_distribution.core import quaternion_to_matrix, transform_wrench
from wrench_distribution.core.codec import stamp_to_ns
from wrench_distribution.core.messages import wrench_to_array

pytestmark = pytest.mark.ros

DOMAIN = domain_id_for(__name__)
S2 = math.sqrt(0.5)
POSITIONS = [[0.0, 0.3, 0.0], [0.0, -0.3, 0.0]]
QUATS = [[S2, 0.0, 0.0, S2], [-S2, 0.0, 0.0, S2]]   # contact z axes point at the object
COM = [0.02, 0.0, 0.05]
BASE = {
    'effectors': ['left', 'right'],
    'contact_types': ['rigid', 'rigid'],
    'contact_source': 'static',
    'contact_positions': sum(POSITIONS, []),
    'contact_orientations': sum(QUATS, []),
    'object_com': COM,
    'object_frame': 'object',
    'diagnostics_period': 0.2,
    'input_timeout': 0.0,
}


@pytest.fixture(scope='module')
def client():
    c = TestClient(DOMAIN)
    yield c
    c.close()


def to_object_about_com(cmds, positions=POSITIONS, quats=QUATS, com=COM) -> np.ndarray:
    """Sum of contact-frame commands, moved to the object frame, about the CoM."""
    total = np.zeros(6)
    for w, p, q in zip(cmds, positions, quats):
        total += transform_wrench(w, quaternion_to_matrix(q), np.asarray(p))
    total[3:] -= np.cross(np.asarray(com), total[:3])
    return total


_STAMPS = [1_000_000_000]  # input stamps never repeat within the module


class Rig:
    """Publishers and collectors for one distributor process."""

    def __init__(self, client: TestClient, names=('left', 'right')) -> None:
        self.c = client
        self.pub = client.publisher(WrenchStamped, 'desired_wrench')
        self.pose_pub = client.publisher(PoseArray, 'contact_poses')
        self.il_pub = client.publisher(Float64MultiArray, 'internal_load')
        self.names = names
        self.cmds = {n: client.collect(WrenchStamped, f'{n}/wrench_command') for n in names}
        self.diag = client.collect(DiagnosticArray, '/diagnostics')
        self.clear()  # nothing left over from an earlier test

    @property
    def stamp(self) -> int:
        return _STAMPS[0]

    @stamp.setter
    def stamp(self, value: int) -> None:
        _STAMPS[0] = value

    def clear(self) -> None:
        for v in self.cmds.values():
            v.clear()
        self.diag.clear()

    def ready(self) -> None:
        assert self.c.wait_matched(publishers=[self.pub, self.il_pub],
                                   topics=[f'{n}/wrench_command' for n in self.names]), \
            'distributor did not come up'

    def warmup(self, timeout: float = 30.0) -> None:
        """Publish until a command comes back (discovery has completed both ways; ends when it has)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.send([0, 0, 1, 0, 0, 0], wait=0.2) is not None:
                self.c.spin_for(0.3)  # late answers to earlier tries
                self.clear()
                return
        raise AssertionError('no command from the distributor')

    def send(self, values, frame='object', wait=4.0):
        """Publish a desired wrench; return the commands with its stamp (or None)."""
        self.stamp += 1_000_000
        s = self.stamp
        self.pub.publish(stamped_wrench(values, s, frame))

        def got() -> bool:
            return all(any(stamp_to_ns(m.header.stamp) == s for m in v) for v in self.cmds.values())
        if not self.c.spin_until(got, wait):
            return None
        return [wrench_to_array(next(m for m in self.cmds[n] if stamp_to_ns(m.header.stamp) == s).wrench)
                for n in self.names]

    def wait_diag(self, text: str, timeout: float = 5.0) -> bool:
        return self.c.spin_until(
            lambda: any(text in m for m in diag_messages(self.diag, 'wrench_distributor')),
            timeout)

    def refused(self, values, frame: str, text: str, tries: int = 10) -> bool:
        """Send a bad desired wrench until its diagnostic is in; no try may give a command.

        The input is best effort: a loaded machine may lose one.

        :return: whether the diagnostic came and no command did.
        """
        for _ in range(tries):
            if self.send(values, frame, wait=0.5) is not None:
                return False
            if self.wait_diag(text, 0.5):
                return True
        return False


def test_commands_sum_to_desired_and_bad_inputs(client):
    from visualization_msgs.msg import MarkerArray
    markers = client.collect(MarkerArray, '/wrench_distributor/markers', qos=10)
    with NodeProcess('distributor', BASE, DOMAIN) as proc:
        rig = Rig(client)
        rig.ready()
        rig.warmup()
        desired = [3.0, -2.0, 15.0, 0.4, -0.3, 0.2]
        cmds = rig.send(desired)
        assert cmds is not None, proc.output()
        np.testing.assert_allclose(to_object_about_com(cmds), desired, atol=1e-9)
        # header: stamp kept, frame is the contact frame
        m = rig.cmds['left'][-1]
        assert m.header.frame_id == 'left_contact'
        # RViz markers: arrows at the contacts and the CoM, in the object frame
        assert client.spin_until(lambda: len(markers) > 0, 2.0)
        assert {mk.ns for mk in markers[-1].markers} >= {'effector_force', 'resultant_force'}
        assert markers[-1].markers[0].header.frame_id == 'object'
        # bad inputs: no command, a diagnostics message, a counter
        for values, frame, text, key in (
                ([float('nan'), 0, 0, 0, 0, 0], 'object', 'NaN', 'rejected_nan'),
                ([1, 0, 0, 0, float('inf'), 0], 'object', 'NaN or Inf', 'rejected_nan'),
                ([1, 0, 0, 0, 0, 0], 'world', "frame 'world'", 'rejected_frame')):
            rig.clear()
            assert rig.refused(values, frame, text), diag_messages(rig.diag, 'wrench_distributor')
            assert int(diag_values(rig.diag, 'wrench_distributor').get(key, 0)) >= 1
            assert all(np.all(np.isfinite(wrench_to_array(m.wrench))) for v in rig.cmds.values() for m in v)
        # internal load of the wrong length is refused, the last good one stays
        rig.clear()
        bad = Float64MultiArray(data=[1.0, 2.0])
        rig.il_pub.publish(bad)
        assert rig.wait_diag('internal_load message rejected')
        # an internal-load handle by topic: squeeze between the two grippers
        msg = Float64MultiArray(data=[20.0])
        msg.layout.dim = [MultiArrayDimension(label='squeeze(left,right)', size=1, stride=1)]
        rig.il_pub.publish(msg)
        client.spin_for(0.3)
        cmds = rig.send(desired)
        np.testing.assert_allclose(to_object_about_com(cmds), desired, atol=1e-9)
        assert client.spin_until(lambda: int(diag_values(rig.diag, 'wrench_distributor').get(
            'commands_published', 0)) >= 2, 2.0)
    assert 'Traceback' not in proc.output()


def test_topic_contacts_missing_and_wrong_length(client):
    params = dict(BASE, contact_source='topic')
    del params['contact_positions']
    del params['contact_orientations']
    with NodeProcess('distributor', params, DOMAIN) as proc:
        rig = Rig(client)
        rig.ready()
        assert client.wait_matched(publishers=[rig.pose_pub])
        for _ in range(20):  # until discovery is complete both ways
            assert rig.send([0, 0, 10, 0, 0, 0], wait=0.2) is None
            if rig.wait_diag('no contact poses yet', timeout=0.3):
                break
        assert rig.wait_diag('no contact poses yet')
        pa = PoseArray()
        pa.header.frame_id = 'object'
        pa.poses = [Pose()]
        rig.pose_pub.publish(pa)
        assert rig.wait_diag('expected 2')
        for p, q in zip(POSITIONS, QUATS):
            pose = Pose()
            pose.position.x, pose.position.y, pose.position.z = p
            o = pose.orientation
            o.x, o.y, o.z, o.w = q
            pa.poses.append(pose)
        pa.poses = pa.poses[1:]
        rig.pose_pub.publish(pa)
        client.spin_for(0.3)
        desired = [1.0, 2.0, 3.0, 0.1, 0.2, 0.3]
        cmds = rig.send(desired)
        assert cmds is not None, proc.output()
        np.testing.assert_allclose(to_object_about_com(cmds), desired, atol=1e-9)
        # same poses again: the cached solver is reused
        rig.pose_pub.publish(pa)
        client.spin_for(0.3)
        rig.send(desired)
        assert rig.c.spin_until(
            lambda: diag_values(rig.diag, 'wrench_distributor').get('solver_builds') == '1', 2)
    assert 'Traceback' not in proc.output()


@pytest.mark.parametrize('mode', ['zero', 'stop'])
def test_watchdog(client, mode):
    params = dict(BASE, input_timeout=0.3, on_timeout=mode, watchdog_rate=20.0)
    with NodeProcess('distributor', params, DOMAIN) as proc:
        rig = Rig(client)
        rig.ready()
        rig.warmup()
        assert rig.send([0, 0, 10, 0, 0, 0]) is not None, proc.output()
        rig.clear()
        text = 'publishing zero wrenches' if mode == 'zero' else 'stopped publishing'
        assert rig.wait_diag(text, timeout=3.0), diag_messages(rig.diag, 'wrench_distributor')
        client.spin_for(0.3)
        got = rig.cmds['left']
        if mode == 'zero':
            assert len(got) >= 2
            assert all(np.all(wrench_to_array(m.wrench) == 0.0) for m in got)
        else:
            assert len(got) == 0
        # a fresh input resumes normal commands
        assert rig.send([0, 0, 10, 0, 0, 0]) is not None


def test_runtime_parameters(client):
    with NodeProcess('distributor', BASE, DOMAIN) as proc:
        rig = Rig(client)
        rig.ready()
        rig.warmup()
        desired = [0.0, 0.0, 10.0, 0.0, 0.0, 1.0]
        before = rig.send(desired)
        assert before is not None, proc.output()
        # descriptors: description, accepted values, read-only flags
        from rcl_interfaces.srv import DescribeParameters
        cli = client.node.create_client(DescribeParameters,
                                        '/wrench_distributor/describe_parameters')
        assert cli.wait_for_service(timeout_sec=5.0)
        fut = cli.call_async(DescribeParameters.Request(names=['on_timeout', 'effectors']))
        client.executor.spin_until_future_complete(fut, timeout_sec=5.0)
        on_timeout, effectors = fut.result().descriptors
        assert 'zero, stop' in on_timeout.additional_constraints and on_timeout.description
        assert effectors.read_only and not on_timeout.read_only
        client.node.destroy_client(cli)
        res = client.set_parameters('wrench_distributor',
                                    [Parameter('torque_share', value=2.0)])
        assert not res[0].successful
        assert 'torque_share' in res[0].reason
        res = client.set_parameters('wrench_distributor',
                                    [Parameter('internal_load_handles',
                                               value=['bogus(a,b)=1.0'])])
        assert not res[0].successful and 'squeeze(left,right)' in res[0].reason, res[0].reason
        res = client.set_parameters('wrench_distributor',
                                    [Parameter('effectors', value=['a', 'b'])])
        assert not res[0].successful
        res = client.set_parameters('wrench_distributor',
                                    [Parameter('internal_load_handles',
                                               value=['squeeze(left,right)=20.0'])])
        assert res[0].successful, res[0].reason
        squeezed = rig.send(desired)
        np.testing.assert_allclose(to_object_about_com(squeezed), desired, atol=1e-9)
        diff = np.asarray(squeezed) - np.asarray(before)
        # 20 N of squeeze: equal and opposite forces along the line between the contacts
        f_left = quaternion_to_matrix(QUATS[0]) @ diff[0][:3]
        f_right = quaternion_to_matrix(QUATS[1]) @ diff[1][:3]
        np.testing.assert_allclose(f_left, -f_right, atol=1e-9)
        assert abs(abs(f_left[1]) - 20.0) < 1e-6 or abs(np.linalg.norm(f_left) - 20.0) < 1e-6
        res = client.set_parameters('wrench_distributor', [Parameter('torque_share', value=0.5)])
        assert res[0].successful, res[0].reason
        shared = rig.send(desired)
        np.testing.assert_allclose(to_object_about_com(shared), desired, atol=1e-9)
    assert 'Traceback' not in proc.output()


@pytest.mark.parametrize('change,needles', [
    ({'on_timeout': 'explode'}, ["parameter 'on_timeout'", 'zero, stop']),
    ({'contact_positions': [0.0, 0.3]}, ["parameter 'contact_positions'", '3 per effector']),
    ({'torque_share': 'lots'}, ['torque_share']),
    ({'contact_source': 'tf', 'contact_frames': ['l', 'r']}, ["'contact_source'", 'tf2_ros']),
])
def test_invalid_startup_parameters_exit_with_a_message(change, needles):
    from wrench_distribution.ros.tf import tf2_available
    if change.get('contact_source') == 'tf' and tf2_available():
        pytest.skip('tf2_ros is installed here')
    with NodeProcess('distributor', dict(BASE, **change), DOMAIN) as proc:
        code = proc.wait(20)
        out = proc.output()
    assert code == 2, out
    assert all(n in out for n in needles), out
    assert 'Traceback' not in out


def test_sim_time_drives_the_watchdog(client):
    from rosgraph_msgs.msg import Clock
    params = dict(BASE, input_timeout=0.3, on_timeout='zero', use_sim_time=True)
    with NodeProcess('distributor', params, DOMAIN) as proc:
        rig = Rig(client)
        clock_pub = client.publisher(Clock, '/clock')
        sim = [100_000_000_000]

        def tick(dt_ns=0):
            sim[0] += dt_ns
            c = Clock()
            c.clock.sec, c.clock.nanosec = divmod(sim[0], 1_000_000_000)
            clock_pub.publish(c)
        rig.ready()
        assert client.wait_matched(publishers=[clock_pub])
        for _ in range(50):
            tick()
            if rig.send([0, 0, 5, 0, 0, 0], wait=0.2) is not None:
                break
        assert rig.send([0, 0, 5, 0, 0, 0]) is not None, proc.output()
        client.spin_for(0.5)  # late answers to the warm-up
        rig.clear()
        # sim time stands still (a paused bag): the watchdog runs on the steady clock,
        # so zero commands come anyway, stamped with the (frozen) sim time
        for _ in range(20):
            tick()
            client.spin_for(0.05)
        assert client.spin_until(lambda: len(rig.cmds['left']) > 0, 2.0), proc.output()
        zeros = rig.cmds['left']
        assert all(np.all(wrench_to_array(m.wrench) == 0.0) for m in zeros)
        assert all(m.header.stamp.sec == 100 for m in zeros)
        # input again: commands again; then sim time advances: zeros stamped with sim time
        assert rig.send([0, 0, 5, 0, 0, 0]) is not None
        client.spin_for(0.2)
        rig.clear()
        for _ in range(40):
            tick(25_000_000)
            client.spin_for(0.02)
        assert client.spin_until(lambda: len(rig.cmds['left']) > 0, 2.0), proc.output()
        zeros = rig.cmds['left']
        assert all(np.all(wrench_to_array(m.wrench) == 0.0) for m in zeros)
        assert all(100 <= m.header.stamp.sec <= 102 for m in zeros)


def test_unrealisable_wrench_gives_no_command(client):
    params = dict(BASE, contact_types=['point', 'point'], object_com=[0.0, 0.0, 0.0])
    with NodeProcess('distributor', params, DOMAIN) as proc:
        rig = Rig(client)
        rig.ready()
        rig.warmup()
        rig.clear()
        assert rig.send([0, 0, 0, 0, 1.0, 0], wait=0.5) is None   # torque about the contact line
        assert rig.wait_diag('no command'), diag_messages(rig.diag, 'wrench_distributor')
        assert client.spin_until(lambda: int(diag_values(rig.diag, 'wrench_distributor').get(
            'unrealisable', 0)) >= 1, 2.0), diag_values(rig.diag, 'wrench_distributor')
        assert rig.send([0, 0, 10.0, 0, 0, 0]) is not None
    assert 'Traceback' not in proc.output()
