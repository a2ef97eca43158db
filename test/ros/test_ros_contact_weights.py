"""Contacts that come and go over real DDS: a trunk lifts each foot in turn, arms hand a box over.

The distributor runs in its own process; this test streams the desired wrench at 500 Hz (stamped
with the wall clock), the contact poses and the ``contact_weights`` topic, and judges every
command set it gets back against references written here: the resultant by hand (1e-6
relative), the commands of an engine that never heard of the released contacts, and the ramp's
bound (with one contact moving, each command moves by at most ``|c_with - c_without| dt / T``
per tick, docs/theory.md 16.4; bilinear for two).
"""
import time

from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import Pose, PoseArray, WrenchStamped
import numpy as np
import pytest
from rclpy.parameter import Parameter
from std_msgs.msg import Float64MultiArray, MultiArrayDimension

from legs_fixtures import (
    FEET, resultant, shifted_feet, subset_commands, trunk_params, UPRIGHT, weight_support,
)
from ros_harness import diag_messages, domain_id_for, NodeProcess, stamped_wrench, TestClient
from wrench_distribution.core.codec import stamp_to_ns
from wrench_distribution.core.messages import wrench_to_array

pytestmark = pytest.mark.ros

DOMAIN = domain_id_for(__name__)
PERIOD = 0.002        # 500 Hz
TRANSITION = 0.1      # contact_transition_time (s)
MAX_STEP = 0.1        # the longest stamp gap a ramp counts (engine/weights.py)
MAX_LAG = 0.05        # how far the commands read may lag what was sent before the stream waits (s)
MAX_PAUSE = 0.2       # the longest such wait (s): input_timeout is 0.5 s


@pytest.fixture(scope='module')
def client():
    c = TestClient(DOMAIN)
    yield c
    c.close()


class Stream:
    """The planner and the controller of one distributor: inputs out, commands and weights back."""

    def __init__(self, client: TestClient, names) -> None:
        self.c, self.names = client, list(names)
        self.pub = client.publisher(WrenchStamped, 'desired_wrench', 100)
        self.pose_pub = client.publisher(PoseArray, 'contact_poses')
        self.weights_pub = client.publisher(Float64MultiArray, 'contact_weights')
        self.cmds = {n: client.collect(WrenchStamped, f'{n}/wrench_command', qos=5000) for n in self.names}
        self.actual = client.collect(Float64MultiArray, 'contact_weights/actual', qos=100)
        self.diag = client.collect(DiagnosticArray, '/diagnostics')
        self.sent_ns = 0
        self.sent = set()  # the stamps streamed: the watchdog's commands (stamped by the node) are not

    def ready(self) -> None:
        assert self.c.wait_matched(publishers=[self.pub, self.weights_pub],
                                   topics=[f'{n}/wrench_command' for n in self.names] + ['contact_weights/actual'],
                                   timeout=30.0)

    def poses(self, positions) -> None:
        msg = PoseArray()
        msg.header.frame_id = 'object'
        for p in positions:
            pose = Pose()
            pose.position.x, pose.position.y, pose.position.z = (float(v) for v in p)
            pose.orientation.w = 1.0
            msg.poses.append(pose)
        self.pose_pub.publish(msg)

    def weights(self, names, values) -> None:
        """Publish targets labelled with the effectors they set (as a gait planner would)."""
        msg = Float64MultiArray()
        msg.layout.dim.append(MultiArrayDimension(label=';'.join(names), size=len(names), stride=len(names)))
        msg.data = [float(v) for v in values]
        self.weights_pub.publish(msg)

    def state(self, proc) -> str:
        """Return what the node said, the last actual weights and diagnostics (a failure's message)."""
        return (f'{proc.output()}\nactual weights: {[list(m.data) for m in self.actual[-3:]]}\n'
                f'diagnostics: {[(s.name, s.message) for s in self.diag[-1].status if s.message != "OK"]}'
                if self.diag else 'no diagnostics')

    def latest_weights(self):
        return None if not self.actual else np.array(self.actual[-1].data)

    def run(self, seconds: float, wrench=np.zeros(6), until=None) -> bool:
        """Stream the desired wrench at 500 Hz for ``seconds`` (or until ``until()``); collect meanwhile.

        A loaded machine can leave this process behind the node's commands: then the stream
        waits (at most :data:`MAX_PAUSE`, well inside ``input_timeout``) until the commands of
        what it sent are in, so what the test reads lags what the node did by a bounded time.
        """
        end = time.monotonic() + seconds
        due = last_sent = time.monotonic()
        while time.monotonic() < end:
            if until is not None and until():
                return True
            now = time.monotonic()
            if now >= due and (not self._behind() or now - last_sent > MAX_PAUSE):
                self.sent_ns = time.time_ns()
                self.sent.add(self.sent_ns)
                self.pub.publish(stamped_wrench(wrench, self.sent_ns, 'object'))
                due, last_sent = max(due + PERIOD, now), now
            self.c.executor.spin_once(timeout_sec=max(0.0, min(due - time.monotonic(), PERIOD)))
        return until is None or bool(until())

    def _behind(self) -> bool:
        """Tell whether the newest command read is more than :data:`MAX_LAG` older than the newest sent."""
        received = self.cmds[self.names[-1]]
        return bool(received) and self.sent_ns - stamp_to_ns(received[-1].header.stamp) > MAX_LAG * 1e9

    def commands(self, since_ns: int = 0, until_ns: int = 2 ** 63) -> list:
        """``[(stamp_ns, (n, 6) commands)]`` of every stamp streamed all effectors answered, in stamp order.

        A pause the watchdog filled (a loaded machine) is left out: its commands hold the last
        ones, and the ramp is judged from one desired wrench to the next.
        """
        rows = {}
        for k, name in enumerate(self.names):
            for m in self.cmds[name]:
                stamp = stamp_to_ns(m.header.stamp)
                if since_ns <= stamp < until_ns and stamp in self.sent:
                    rows.setdefault(stamp, [None] * len(self.names))[k] = wrench_to_array(m.wrench)
        return [(s, np.array(r)) for s, r in sorted(rows.items()) if all(x is not None for x in r)]


def check_ramp(run: list, span: np.ndarray, size: float, moving: int) -> None:
    """Every consecutive pair of one phase moves no command further than the ramp allows."""
    for (s0, c0), (s1, c1) in zip(run, run[1:]):
        dt = min(s1 - s0, MAX_STEP * 1e9) * 1e-9
        allowed = span * min(dt / TRANSITION, 1.0) * (1 + 1e-9) + 1e-9 * size
        assert np.all(np.abs(c1 - c0) <= allowed), (moving, s1, np.abs(c1 - c0), allowed)


def test_a_trunk_lifts_each_foot_in_turn_and_puts_it_back_at_500_hz(client):
    params = trunk_params(contact_transition_time=TRANSITION, diagnostics_period=0.2, object_frame='object',
                          input_timeout=0.5, contact_timeout=0.0)
    size = np.linalg.norm(weight_support())
    with NodeProcess('distributor', params, DOMAIN) as proc:
        stream = Stream(client, FEET)
        stream.ready()
        stream.poses(shifted_feet(0))
        assert stream.run(15.0, until=lambda: len(stream.commands()) > 5), proc.output()
        for foot in range(4):
            positions = shifted_feet(foot)
            stream.poses(positions)
            stream.run(0.2)
            start = time.time_ns()
            stream.weights([FEET[foot]], [0.0])
            assert stream.run(10.0, until=lambda: stream.latest_weights() is not None
                              and stream.latest_weights()[foot] == 0.0), stream.state(proc)
            stream.run(0.3)
            stream.weights([FEET[foot]], [1.0])
            assert stream.run(10.0, until=lambda: np.all(stream.latest_weights() == 1.0)), stream.state(proc)
            stream.run(0.1)
            run = stream.commands(start, time.time_ns())
            with_foot = subset_commands(params, positions, UPRIGHT, np.ones(4, bool))
            without = subset_commands(params, positions, UPRIGHT, np.arange(4) != foot)
            assert len(run) > 10, (foot, len(run))  # the node drops what it cannot keep up with
            for _, commands in run:
                assert np.linalg.norm(resultant(commands, positions, params['object_com'])
                                      - weight_support()) <= 1e-6 * size
                assert np.count_nonzero(commands[:, 2] > 1.0) >= 3  # nothing zeroes all feet
            check_ramp(run, np.abs(with_foot - without), size, foot)
            released = [c for _, c in run if not c[foot].any()]
            assert len(released) >= 5, foot  # exactly zero while released
            for commands in released:
                np.testing.assert_allclose(commands, without, rtol=1e-9, atol=1e-9 * size)
            np.testing.assert_allclose(run[-1][1], with_foot, rtol=1e-9, atol=1e-9 * size)
        # lean toward lf: the three others cannot hold the trunk pushing only, lf stays
        stream.poses(shifted_feet(0, share=-0.2))
        stream.run(0.2)
        before = stream.commands()[-1][1]
        mark = time.time_ns()
        stream.weights(['lf'], [0.0])
        stream.run(0.5)
        # the diagnostics say why (the stream paused: the watchdog holds the same commands)
        assert client.spin_until(lambda: any('refused' in m and 'pushing only' in m for m in diag_messages(
            stream.diag, 'wrench_distributor')), 3.0), stream.state(proc)
        # the runtime parameter is refused the same way, with the reason
        result = client.set_parameters('wrench_distributor', [
            Parameter('contact_weights', Parameter.Type.DOUBLE_ARRAY, [0.0, 1.0, 1.0, 1.0])])[0]
        assert not result.successful and "parameter 'contact_weights'" in result.reason
        assert 'pushing only' in result.reason, result.reason
        stream.run(0.2)
        np.testing.assert_array_equal(stream.latest_weights(), 1.0)
        after = stream.commands(mark)
        assert len(after) > 20
        for _, commands in after:
            np.testing.assert_allclose(commands, before, rtol=1e-9, atol=1e-9 * size)
        assert proc.poll() is None, proc.output()


def test_two_arms_hand_a_box_over_to_the_next_pair(client):
    """Weights 1, 1, 0 to 0, 1, 1 in one message: both move at once, the resultant stays exact."""
    positions = np.array([[0.2, 0.0, 0.0], [0.0, 0.2, 0.0], [-0.2, 0.0, 0.0]])
    quaternions = np.tile([0.0, 0.0, 0.0, 1.0], (3, 1))
    com = [0.01, 0.02, 0.0]
    params = {'effectors': ['a', 'b', 'c'], 'contact_source': 'static', 'contact_types': ['rigid'] * 3,
              'contact_positions': positions.reshape(-1).tolist(),
              'contact_orientations': quaternions.reshape(-1).tolist(),
              'object_com': com, 'object_frame': 'object', 'command_frame': 'object',
              'contact_weights': [1.0, 1.0, 0.0], 'force_limits': [1e4], 'torque_limits': [1e3],
              'desired_force_limit': 1e3, 'desired_torque_limit': 1e3, 'internal_load_limit': 1e3,
              'contact_transition_time': TRANSITION, 'input_timeout': 0.5, 'diagnostics_period': 0.2}
    wrench = np.array([1.0, -2.0, 30.0, 0.3, -0.2, 0.1])
    corners = {mask: subset_commands(params, positions, quaternions, mask, wrench)
               for mask in ((1, 1, 1), (1, 1, 0), (0, 1, 1))}
    alone = np.zeros((3, 6))  # b alone: the wrench moved to its point, by hand
    alone[1, :3] = wrench[:3]
    alone[1, 3:] = wrench[3:] - np.cross(positions[1] - com, wrench[:3])
    corners[(0, 1, 0)] = alone
    slope_a = np.maximum(np.abs(corners[(1, 1, 1)] - corners[(0, 1, 1)]), np.abs(corners[(1, 1, 0)] - alone))
    slope_c = np.maximum(np.abs(corners[(1, 1, 1)] - corners[(1, 1, 0)]), np.abs(corners[(0, 1, 1)] - alone))
    with NodeProcess('distributor', params, DOMAIN) as proc:
        stream = Stream(client, ['a', 'b', 'c'])
        stream.ready()
        assert stream.run(15.0, wrench, until=lambda: len(stream.commands()) > 5), proc.output()
        start = time.time_ns()
        # a command of before the handover in the window: on a loaded machine the stream may pause
        # longer than the ramp (it waits for the node), and the first wrench after it then ends it
        assert stream.run(5.0, wrench, until=lambda: len(stream.commands(start)) > 2), stream.state(proc)
        stream.weights(['a', 'c'], [0.0, 1.0])
        assert stream.run(5.0, wrench, until=lambda: stream.latest_weights() is not None
                          and list(stream.latest_weights()) == [0.0, 1.0, 1.0]), stream.state(proc)
        stream.run(0.1, wrench)
        run = stream.commands(start, time.time_ns())
        assert len(run) > 10, (len(stream.commands()), {n: len(v) for n, v in stream.cmds.items()}, stream.state(proc))
        for (s0, c0), (s1, c1) in zip(run, run[1:]):
            step = min(s1 - s0, MAX_STEP * 1e9) * 1e-9 / TRANSITION
            assert np.all(np.abs(c1 - c0) <= (slope_a + slope_c) * min(step, 1.0) + 1e-9)
        for _, commands in run:
            np.testing.assert_allclose(resultant(commands, positions, com), wrench, atol=1e-6 * 31)
        np.testing.assert_allclose(run[0][1], corners[(1, 1, 0)], rtol=1e-9, atol=1e-9)
        assert not run[0][1][2].any()  # c exactly zero before
        np.testing.assert_allclose(run[-1][1], corners[(0, 1, 1)], rtol=1e-9, atol=1e-9)
        assert not run[-1][1][0].any()  # a exactly zero after
        assert proc.poll() is None, proc.output()
