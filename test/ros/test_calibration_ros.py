"""The analyzer's calibration services over DDS, and the saved calibration loaded by a restarted node.

The analyzer runs as its console script; a test node publishes the grasp frame's pose in
``world`` (``/object_pose``) and readings derived by hand (:mod:`calibration_fixtures`), tools
free in four orientations, then the object held in three; the test captures each pose,
identifies, saves to ``calibration_file``, restarts the analyzer (which loads the calibration
values of its ``calibration_file`` at start-up) and reads the values back. ``~/check_signs``-style
verdicts are in the offline tests (test_identify_cli.py).
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation
import yaml

import calibration_fixtures as C
from ros_harness import domain_id_for, stamped_wrench, start_node, taken_in, TestClient
import test_identify_cli as two_arms

pytestmark = pytest.mark.ros


def _call(client, name):
    from std_srvs.srv import Trigger
    cli = client.node.create_client(Trigger, f'/wrench_analyzer/{name}')
    try:
        assert cli.wait_for_service(timeout_sec=15.0)
        future = cli.call_async(Trigger.Request())
        client.executor.spin_until_future_complete(future, timeout_sec=20.0)
        assert future.done()
        return future.result()
    finally:
        client.node.destroy_client(cli)


def _parameters(client, names):
    from rcl_interfaces.srv import GetParameters
    cli = client.node.create_client(GetParameters, '/wrench_analyzer/get_parameters')
    try:
        assert cli.wait_for_service(timeout_sec=15.0)
        # a request sent as the service is discovered may go unanswered (its server has not
        # matched the client's response reader yet): asked again, as reading is idempotent
        for _ in range(3):
            future = cli.call_async(GetParameters.Request(names=names))
            client.executor.spin_until_future_complete(future, timeout_sec=5.0)
            if future.done() and future.result() is not None:
                break
        assert future.done() and future.result() is not None, f'no answer to get_parameters {names}'
        values = future.result().values
        return [list(v.double_array_value) if v.type == 8 else v.double_value for v in values]
    finally:
        client.node.destroy_client(cli)


class _Cell:
    """Publishes the grasp frame's pose and both readings, sample by sample, in real time."""

    def __init__(self, client):
        from geometry_msgs.msg import PoseStamped, WrenchStamped
        self.client = client
        self.pose = client.publisher(PoseStamped, '/object_pose')
        self.ft = [client.publisher(WrenchStamped, f'/{n}/ft_sensor') for n in two_arms.NAMES]
        self.PoseStamped = PoseStamped
        self.rng = np.random.default_rng(11)

    def hold(self, rotation: Rotation, held: bool, samples: int, turning: float = 0.0) -> None:
        path = Rotation.from_rotvec(np.outer(np.linspace(0.0, turning, samples), [1.0, 0.0, 0.0])) * rotation
        readings = two_arms._readings(two_arms._tools(), path, held, self.rng)
        for j in range(samples):
            q = path[j].as_quat()
            now = self.client.node.get_clock().now().nanoseconds
            msg = self.PoseStamped()
            msg.header.frame_id = 'world'
            msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(now, 1_000_000_000)
            msg.pose.orientation.x, msg.pose.orientation.y, msg.pose.orientation.z, msg.pose.orientation.w = q
            self.pose.publish(msg)
            for i, pub in enumerate(self.ft):
                pub.publish(stamped_wrench(readings[j, i], now, f'{two_arms.NAMES[i]}_ft'))
            self.client.spin_for(0.004)
        self.last_stamp = now


def test_capture_identify_save_and_restart(tmp_path):
    from geometry_msgs.msg import WrenchStamped
    saved = tmp_path / 'calibration.yaml'
    config = two_arms._config(tmp_path, tare_samples=100, calibration_file=str(saved),
                              orientation_timeout=0.5, max_future=0.0, sync_tolerance=0.001)
    with start_node('analyzer', [config], domain_id_for(__name__), log=tmp_path / 'first.log') as node, \
            TestClient(domain_id_for(__name__), 'wd_calibration_client') as client:
        cell = _Cell(client)
        outputs = client.collect(WrenchStamped, '/object_wrench')
        assert client.wait_matched(publishers=cell.ft + [cell.pose], timeout=20.0), node.output()

        def capture():  # once the analyzer has taken in the last reading published
            assert client.spin_until(lambda: taken_in(outputs, cell.last_stamp), 10.0)
            return _call(client, 'calibration/capture')
        early = _call(client, 'calibration/capture')
        assert not early.success and 'tare_samples=100' in early.message
        cell.hold(Rotation.identity(), False, 220, turning=0.5)
        moving = capture()
        assert not moving.success and 'not at rest' in moving.message, moving.message
        for j, rotation in enumerate(C.tilts(4)):
            cell.hold(rotation, False, 220)
            response = capture()
            assert response.success, response.message
            assert f'{j + 1} poses' in response.message
            assert ('tools: determined' in response.message) == (j >= 2), response.message
        response = _call(client, 'calibration/identify_tools')
        assert response.success and response.message.startswith('applied'), response.message
        biases = np.reshape(_parameters(client, ['sensor_biases'])[0], (2, 6))
        truth = np.array([t.bias for t in two_arms._tools()])
        assert np.all(np.abs(biases - truth) < [0.05] * 3 + [0.005] * 3), biases - truth
        one = _call(client, 'calibration/identify_object')
        assert not one.success and 'no pose captured' in one.message
        cell.hold(Rotation.identity(), True, 220)
        assert capture().success
        refused = _call(client, 'calibration/identify_object')
        assert not refused.success and 'share one gravity direction' in refused.message
        for rotation in C.tilts(3, 25.0)[1:]:
            cell.hold(rotation, True, 220)
            assert capture().success
        response = _call(client, 'calibration/identify_object')
        assert response.success, response.message
        cell.hold(Rotation.identity(), True, 220)
        assert client.spin_until(lambda: taken_in(outputs, cell.last_stamp), 10.0)
        signs = _call(client, 'check_signs')
        assert signs.success and signs.message.count('configured -1, measured -1') == 2, signs.message
        response = _call(client, 'save_calibration')
        assert response.success and str(saved) in response.message, response.message
    document = yaml.safe_load(saved.read_text())
    section = document['/**/wrench_analyzer']['ros__parameters']
    assert abs(section['object_mass'] - two_arms.MASS) < 0.02 * two_arms.MASS
    assert np.linalg.norm(np.array(section['object_com']) - two_arms.COM) < 0.005
    assert document['/**/wrench_distributor']['ros__parameters']['object_com'] == section['object_com']
    with start_node('analyzer', [config], domain_id_for(__name__), log=tmp_path / 'second.log') as node, \
            TestClient(domain_id_for(__name__), 'wd_calibration_client2') as client:
        masses, mass, biases = _parameters(client, ['tool_masses', 'object_mass', 'sensor_biases'])
        assert np.allclose(masses, [t.mass for t in two_arms._tools()], atol=0.01)
        assert mass == section['object_mass'] and biases == section['sensor_biases']
