"""Gravity from the object's orientation and the tare service, over DDS (separate processes).

The tilting recording of test/helpers/sensing_fixtures.py is played into the analyzer node (sim
time, object orientation from a PoseStamped topic): the node gives the same samples as
``analyze-bag`` and reads back the commanded squeeze. The ``~/tare`` service averages free
readings (biased by hand) into ``sensor_biases``, writes them into the parameter and the
diagnostics, and the node's start-up log carries the check-config findings of its file.
"""
from __future__ import annotations

import json
import sys
import time

import numpy as np
import pytest
from scipy.spatial.transform import Rotation
import yaml

import bag_fixtures as F
from ros_harness import domain_id_for, ros_env, script, stamped_wrench, TestClient
import sensing_fixtures as S
from test_bag_live_replay import read_offline, start_analyzer_and_recorder
from wrench_distribution.bag.pipeline import analyze_bag, Options
from wrench_distribution.config import load_analyzer_config
from wrench_distribution.processes import ChildProcess

pytestmark = pytest.mark.ros

COMP = ('fx', 'fy', 'fz', 'tx', 'ty', 'tz')


# relies on the order of arrival across topics (a pose 5 ms before its readings, an orientation
# timeout of 4.9 ms), which any load reorders (a pose after its readings drops a sample live,
# not offline): alone, after everything else
@pytest.mark.timing
@pytest.mark.serial
def test_tilting_replay_over_dds_equals_offline(tmp_path, children):
    """Live (PoseStamped orientation, biases) = offline, sample by sample, and = the truth."""
    rec = S.make_tilting()
    gap = range(150, 165)  # /object_pose pauses: the same samples are dropped live and offline
    bag = S.write_bag(tmp_path / 'bag', rec, pose_gap=gap)
    params = S.params(object_orientation_source='topic', orientation_timeout=0.0049,
                      sensor_biases=S.BIASES.ravel().tolist(), use_sim_time=True,
                      input_qos='reliable', output_qos='reliable', qos_depth=1000,
                      ft_frames=[f'{e}_ft' for e in F.EFFECTORS])
    cfg = tmp_path / 'params.yaml'
    cfg.write_text(yaml.safe_dump({'wrench_analyzer': {'ros__parameters': params}}))
    summary = analyze_bag(bag, load_analyzer_config(cfg), tmp_path / 'offline',
                          Options(plots=False))
    header, offline, stamps = read_offline(tmp_path / 'offline')
    dropped = [j for j in gap if (j - 149) * F.PERIOD_NS > 4_900_000]
    assert summary['dropped']['samples_without_orientation'] == len(dropped)
    assert len(stamps) == len(rec.stamps_ns) - len(dropped)

    env = ros_env(domain_id_for())
    node, recorder, rec_out = start_analyzer_and_recorder(children, tmp_path, cfg, env, len(stamps), 60)
    time.sleep(1.0)
    inputs = [f'/{e}/ft_sensor' for e in F.EFFECTORS] + ['/clock', '/object_pose']
    player = children.start('player', [sys.executable, '-m', 'wrench_distribution.bag.player', str(bag),
                                       '--rate', '0.2', '--wait-for', *inputs, '--wait-timeout', '20',
                                       '--start-delay', '2'], env, log=tmp_path / 'player.log')
    assert player.wait(90) == 0, player.output()[-2000:]
    recorder.wait(60)
    live = json.loads(rec_out.read_text())
    log = node.output()
    assert node.poll() is None, log[-2000:]

    obj = np.array(live.get('/object_wrench', []))
    assert [int(r[0]) for r in live.get('/object_wrench', [])] == stamps, log[-2000:]
    res = offline[:, [header.index(f'resultant.{c}') for c in COMP]]
    np.testing.assert_allclose(obj[:, 1:], res, rtol=1e-9, atol=1e-9)
    lam = live['/measured/internal_load']
    labels = lam[0][0][0].split(';')
    squeeze = np.array([x[1] for x in lam])[:, labels.index(F.SQUEEZE)]
    rows = np.searchsorted(rec.stamps_ns, stamps)
    exact = ~np.isin(rows, list(gap))  # in the gap: the pose held from before it (< 5 ms)
    np.testing.assert_allclose(squeeze[exact], rec.squeeze[rows][exact], atol=1e-8)
    np.testing.assert_allclose(obj[exact, 1:], rec.resultant[rows][exact], atol=1e-8)
    assert 'object orientation in gravity_frame unknown' in log  # live drops were reported


def _free_readings() -> np.ndarray:
    """Biased readings (n, 6) of the free object, gravity -z in the object frame (by hand)."""
    level = Rotation.identity()
    return np.stack([S.sensor_reading(np.zeros(6), level, i) for i in range(3)])


def _both_sections(params: dict) -> dict:
    """Return a file with both nodes whose command_sign disagrees with the sensors."""
    dist = {k: params[k] for k in ('object_frame', 'effectors', 'contact_types', 'contact_source',
                                   'contact_positions', 'contact_orientations',
                                   'contact_frames', 'object_com', 'object_mass')}
    dist['command_sign'] = 1  # sensor_signs are [-1, 1, -1]: 'right' disagrees
    # no shared objects: rcl refuses YAML aliases
    return json.loads(json.dumps({'wrench_distributor': {'ros__parameters': dist},
                                  'wrench_analyzer': {'ros__parameters': params}}))


def _get_parameter(client: TestClient, node: str, name: str):
    from rcl_interfaces.srv import GetParameters
    cli = client.node.create_client(GetParameters, f'/{node}/get_parameters')
    try:
        assert cli.wait_for_service(timeout_sec=10.0)
        future = cli.call_async(GetParameters.Request(names=[name]))
        client.executor.spin_until_future_complete(future, timeout_sec=10.0)
        return list(future.result().values[0].double_array_value)
    finally:
        client.node.destroy_client(cli)


def _call_tare(client: TestClient):
    from std_srvs.srv import Trigger
    cli = client.node.create_client(Trigger, '/wrench_analyzer/tare')
    try:
        assert cli.wait_for_service(timeout_sec=10.0)
        future = cli.call_async(Trigger.Request())
        client.executor.spin_until_future_complete(future, timeout_sec=10.0)
        assert future.done()
        return future.result()
    finally:
        client.node.destroy_client(cli)


def test_tare_service_writes_the_biases_back(tmp_path):
    """~/tare on free readings: sensor_biases = the hand-added biases; the read-out is zero."""
    from diagnostic_msgs.msg import DiagnosticArray
    from geometry_msgs.msg import WrenchStamped
    domain = domain_id_for(__name__)
    params = F.params('static', tool_masses=list(S.TOOL_MASSES),
                      tool_coms=S.TOOL_COMS.ravel().tolist(), gravity=S.G_WORLD.tolist(),
                      tare_samples=20, diagnostics_period=0.2)['wrench_analyzer']['ros__parameters']
    cfg = tmp_path / 'both.yaml'
    cfg.write_text(yaml.safe_dump(_both_sections(params)))
    node = ChildProcess([script('analyzer'), '--ros-args', '--params-file', str(cfg)], ros_env(domain))
    client = TestClient(domain, 'wd_tare_client')
    try:
        pubs = [client.publisher(WrenchStamped, f'/{e}/ft_sensor') for e in F.EFFECTORS]
        diag = client.collect(DiagnosticArray, '/diagnostics')
        objects = client.collect(WrenchStamped, '/object_wrench')
        assert client.wait_matched(publishers=pubs, topics=['/object_wrench'], timeout=20.0), node.output()
        readings = _free_readings()

        def publish(count: int) -> None:
            for _ in range(count):
                now = client.node.get_clock().now().nanoseconds
                for i, pub in enumerate(pubs):
                    pub.publish(stamped_wrench(readings[i], now, f'{F.EFFECTORS[i]}_ft'))
                client.spin_for(0.02)

        publish(5)
        early = _call_tare(client)
        assert not early.success and 'tare_samples=20' in early.message
        # sent until analysed: readings published before the node's readers matched are lost
        assert client.spin_until(lambda: publish(1) or len(objects) >= 25, 30.0), node.output()
        response = _call_tare(client)
        assert response.success, response.message
        biases = np.reshape(_get_parameter(client, 'wrench_analyzer', 'sensor_biases'), (3, 6))
        np.testing.assert_allclose(biases, S.BIASES, atol=1e-9)
        before = len(objects)
        assert client.spin_until(lambda: publish(1) or len(objects) >= before + 8, 30.0), node.output()
        after = np.array([[m.wrench.force.x, m.wrench.force.y, m.wrench.force.z,
                           m.wrench.torque.x, m.wrench.torque.y, m.wrench.torque.z]
                          for m in objects[before + 2:]])
        assert np.abs(after).max() < 1e-9  # the free object reads nothing once tared
        client.spin_for(0.5)
        values = {kv.key: kv.value for a in diag for s in a.status for kv in s.values
                  if s.name.endswith('sensing')}
        row = [float(x) for x in values['sensor_biases.left'].split(',')]
        np.testing.assert_allclose(row, S.BIASES[0], rtol=1e-5, atol=1e-6)
        assert values['tare'].startswith('free, 20 samples')
    finally:
        client.close()
        node.close()
    text = node.output()
    assert 'signs: command_sign/sensor_signs' in text and 'check-config' in text, text[-2000:]
    assert 'right' in text.split('signs: command_sign/sensor_signs')[1].splitlines()[0]


def test_orientation_from_tf_live_equals_offline(tmp_path):
    """The analyzer node on tf (stand-in buffer fed the bag's /tf) = analyze-bag on /tf."""
    from test_bag_live_replay import _wrench_rows, InProcessAnalyzer
    rec = S.make_tilting()
    bag = S.write_bag(tmp_path / 'bag', rec, tf_period=7)
    params = S.params(sensor_biases=S.BIASES.ravel().tolist(), use_sim_time=True)
    analyze_bag(bag, load_analyzer_config({'wrench_analyzer': {'ros__parameters': params}}),
                tmp_path / 'offline', Options(plots=False))
    header, offline, stamps = read_offline(tmp_path / 'offline')
    assert len(stamps) == len(rec.stamps_ns)
    live = InProcessAnalyzer(params)
    try:
        live.play(bag)
        out = live.published
    finally:
        live.close()
    got_stamps, got = _wrench_rows(out['/object_wrench'])
    assert got_stamps == stamps
    np.testing.assert_allclose(got, offline[:, [header.index(f'resultant.{c}') for c in COMP]],
                               rtol=1e-9, atol=1e-9)
    rows = np.searchsorted(rec.stamps_ns, stamps)
    np.testing.assert_allclose(got, rec.resultant[rows], atol=1e-8)


def test_distributor_logs_the_check_config_findings_at_start_up(tmp_path):
    """The distributor, given a file with both sections, warns of the same disagreement."""
    domain = domain_id_for(__name__, 1)
    params = F.params('static')['wrench_analyzer']['ros__parameters']
    cfg = tmp_path / 'both.yaml'
    cfg.write_text(yaml.safe_dump(_both_sections(params)))
    with ChildProcess([script('distributor'), '--ros-args', '--params-file', str(cfg)], ros_env(domain)) as node:
        assert node.wait_for_output('check-config', 30.0), node.output()
    text = node.output()
    assert 'signs: command_sign/sensor_signs' in text, text[-2000:]
    assert 'right' in text.split('signs: command_sign/sensor_signs')[1].splitlines()[0]
