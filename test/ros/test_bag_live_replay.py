"""Live replay of a bag into the analyzer node.

The analyzer node under ``use_sim_time``, fed by the bag player, gives the same samples as
``analyze-bag`` on the same bag and parameter file.
"""
from __future__ import annotations

import json
from pathlib import Path
import sys
import textwrap
import time

import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml

import bag_fixtures as F
from ros_harness import domain_id_for, REPO, ros_env, script
from wrench_distribution.bag.pipeline import analyze_bag, Options
from wrench_distribution.config import load_analyzer_config

pytestmark = pytest.mark.ros

ROOT = Path(REPO)
COMP = ('fx', 'fy', 'fz', 'tx', 'ty', 'tz')
SAMPLES = 120

RECORDER = textwrap.dedent('''
    """Subscribe to the analyzer outputs and dump them as JSON (stops by itself)."""
    import json, sys, time
    import rclpy
    from rclpy.node import Node
    from rclpy.qos import QoSProfile, ReliabilityPolicy, HistoryPolicy
    from geometry_msgs.msg import WrenchStamped
    from std_msgs.msg import Float64MultiArray

    out, expected, timeout = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    effectors = sys.argv[4].split(',')
    rclpy.init()
    node = Node('replay_recorder')
    qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1000,
                     reliability=ReliabilityPolicy.RELIABLE)
    data = {}

    def wrench_cb(topic):
        def cb(m):
            w = m.wrench
            data.setdefault(topic, []).append(
                [m.header.stamp.sec * 1000000000 + m.header.stamp.nanosec,
                 w.force.x, w.force.y, w.force.z, w.torque.x, w.torque.y, w.torque.z])
        return cb

    topics = ['/object_wrench'] + [f'/{e}/{p}' for e in effectors
                                   for p in ('wrench_manipulating', 'wrench_constraint')]
    for t in topics:
        node.create_subscription(WrenchStamped, t, wrench_cb(t), qos)
    node.create_subscription(
        Float64MultiArray, '/measured/internal_load',
        lambda m: data.setdefault('/measured/internal_load', []).append(
            [[d.label for d in m.layout.dim], list(m.data)]), qos)
    deadline = time.monotonic() + timeout
    ready = False
    while time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=0.05)
        if not ready and all(node.count_publishers(t) > 0 for t in topics):
            ready = True
            print('READY', flush=True)
        if len(data.get('/object_wrench', [])) >= expected and \\
                len(data.get('/measured/internal_load', [])) >= expected:
            end = time.monotonic() + 0.5  # let the last messages of other topics arrive
            while time.monotonic() < end:
                rclpy.spin_once(node, timeout_sec=0.05)
            break
    with open(out, 'w') as f:
        json.dump(data, f)
    node.destroy_node()
    rclpy.shutdown()
''')


def start_analyzer_and_recorder(children, tmp_path: Path, cfg: Path, env: dict, expected: int,
                                timeout: float) -> tuple:
    """Start the analyzer on ``cfg``, then, once it is active, the recorder of its outputs (ready when matched).

    :param expected: object wrenches (and internal loads) after which the recorder stops.
    :param timeout: seconds after which it stops anyway.
    :return: ``(analyzer, recorder, the recorder's JSON path)``.
    """
    node = children.start('analyzer', [script('analyzer'), '--ros-args', '--params-file', str(cfg)], env,
                          log=tmp_path / 'analyzer.log', cwd=ROOT)
    # the node up before its reader starts: a failure says which of the two did not come up
    assert node.wait_for_output('active: inputs and outputs live', 60), \
        f'analyzer not active after 60 s (exit status {node.poll()}):\n{node.output()[-2000:]}'
    (tmp_path / 'recorder.py').write_text(RECORDER)
    out = tmp_path / 'live.json'
    recorder = children.start('recorder', [sys.executable, str(tmp_path / 'recorder.py'), str(out), str(expected),
                                           str(timeout), ','.join(F.EFFECTORS)], env,
                              log=tmp_path / 'recorder.log', cwd=ROOT)
    assert recorder.wait_for_output('READY', 30), \
        f'recorder (exit status {recorder.poll()}):\n{recorder.output()[-2000:]}\nanalyzer:\n{node.output()[-2000:]}'
    return node, recorder, out


def read_offline(out: Path) -> tuple[list[str], np.ndarray, list[int]]:
    """Column names, values (the stamp column as float) and the int64 ns stamps."""
    table = pq.read_table(out / 'samples.parquet')
    values = np.column_stack([c.to_numpy().astype(float) for c in table.columns])
    return table.column_names, values, table.column('stamp_ns').to_pylist()


@pytest.mark.timing  # relies on the order of arrival across topics, which CPU contention can change
@pytest.mark.parametrize('poses', ['static', 'topic'])
def test_live_replay_equals_offline(tmp_path, children, poses):
    env = ros_env(domain_id_for())
    sc = F.make_scenario(SAMPLES, seed=7)
    # one F/T message lost and one in the wrong frame, so that the synchronisation rule matters
    bag = F.write_scenario_bag(tmp_path / 'bag', sc, 'sqlite3', drop=[(40, 2)],
                               poses='none' if poses == 'static' else 'topic',
                               bad_frames=[(70, 0)])
    params = F.params(poses, use_sim_time=True, input_qos='reliable', output_qos='reliable',
                      qos_depth=1000, diagnostics_period=1.0,
                      ft_frames=[f'{e}_ft' for e in F.EFFECTORS])
    cfg = tmp_path / 'params.yaml'
    cfg.write_text(yaml.safe_dump(params))

    # offline, with the very same parameter file
    analyze_bag(bag, load_analyzer_config(cfg), tmp_path / 'offline', Options(plots=False))
    header, offline, offline_stamps = read_offline(tmp_path / 'offline')
    assert len(offline_stamps) == SAMPLES - 2

    # live: analyzer (sim time) <- player (/clock + recorded topics); recorder -> JSON
    node, rec, rec_out = start_analyzer_and_recorder(children, tmp_path, cfg, env, SAMPLES - 2, 40)
    # every input the analyzer subscribes to must be matched before the first message, both
    # ways: a reliable message sent before the reader has matched the writer comes late, by
    # retransmission, after the other topics' (cross-topic order is what the rule relies on)
    inputs = [f'/{e}/ft_sensor' for e in F.EFFECTORS] + ['/clock', '/contact_poses']
    time.sleep(1.0)  # READY is the recorder's view; let the analyzer match the recorder too
    player = children.start('player', [sys.executable, '-m', 'wrench_distribution.bag.player', str(bag),
                                       '--rate', '0.2', '--wait-for', *inputs, '--wait-timeout', '20',
                                       '--start-delay', '2'], env, log=tmp_path / 'player.log', cwd=ROOT)
    assert player.wait(60) == 0, player.output()[-2000:]
    rec.wait(45)
    assert rec_out.exists(), rec.output()[-2000:]
    live = json.loads(rec_out.read_text())
    assert node.poll() is None, node.output()[-2000:]

    # the same samples, stamped with the same header stamps
    obj = np.array(live.get('/object_wrench', []))
    assert obj.shape[0] == len(offline_stamps), node.output()[-2000:]
    assert [r[0] for r in live['/object_wrench']] == offline_stamps
    res = offline[:, [header.index(f'resultant.{c}') for c in COMP]]
    np.testing.assert_allclose(obj[:, 1:], res, rtol=1e-9, atol=1e-9)
    for e in F.EFFECTORS:
        for topic, part in (('wrench_manipulating', 'manipulating'),
                            ('wrench_constraint', 'constraint')):
            got = np.array(live[f'/{e}/{topic}'])
            assert [r[0] for r in live[f'/{e}/{topic}']] == offline_stamps
            cols = [header.index(f'{e}.{part}.{c}') for c in COMP]
            np.testing.assert_allclose(got[:, 1:], offline[:, cols], rtol=1e-9, atol=1e-9,
                                       err_msg=f'{e} {part}')
    lam = live['/measured/internal_load']
    assert len(lam) == len(offline_stamps)
    labels = lam[0][0][0].split(';')  # one layout dimension: basis names joined by ';'
    lam_cols = [h for h in header if h.startswith('internal_load.')]
    assert [f'internal_load.{x}' for x in labels] == lam_cols
    np.testing.assert_allclose(np.array([x[1] for x in lam]),
                               offline[:, [header.index(c) for c in lam_cols]],
                               rtol=1e-9, atol=1e-9)
    # and both recover the prescribed squeeze
    keep = np.ones(SAMPLES, bool)
    keep[[40, 70]] = False
    np.testing.assert_allclose(np.array([x[1] for x in lam])[:, labels.index(F.SQUEEZE)],
                               sc.squeeze[keep], atol=1e-8)


class InProcessAnalyzer:
    """The analyzer node in this process, fed a bag message by message through its callbacks.

    tf2_ros (and tf2_msgs) cannot be installed here, so the tf replay cannot go over DDS: the
    node runs on the tf2 stand-in (test/helpers/tf2_standin.py), whose buffer gets the bag's
    transforms as a ``TransformListener`` would, in bag order with the F/T messages and the
    ``/clock`` of the receive times. Publications are recorded by topic (the recorder counts
    as a subscriber of each: the node publishes only what someone reads).
    """

    def __init__(self, params: dict) -> None:
        import rclpy
        from rclpy.parameter import Parameter

        import tf2_standin
        from wrench_distribution.analyzer_node import AnalyzerNode
        from wrench_distribution.ros import tf as wd_tf
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=domain_id_for(__name__, 1))
        tf2_standin.Buffer.instances.clear()
        wd_tf.use_tf2_implementation(tf2_standin)
        self.node = AnalyzerNode(context=self.context, parameter_overrides=[
            Parameter(k, value=v) for k, v in params.items()])
        self.buffer = tf2_standin.Buffer.instances[-1]
        self.callbacks = {s.topic_name: s.callback for s in self.node.subscriptions}
        self.published: dict = {}
        for pub in self.node.publishers:
            pub.publish = self._recorder(pub.topic_name, pub.msg_type)
            pub.get_subscription_count = lambda: 1  # the recorder reads every topic

    def _recorder(self, topic: str, msg_type):
        def publish(msg) -> None:
            import copy
            from rclpy.serialization import deserialize_message
            # a raw publish (the wrenches) is kept as rclpy's deserialiser reads it
            kept = (deserialize_message(msg, msg_type) if isinstance(msg, bytes)
                    else copy.deepcopy(msg))
            self.published.setdefault(topic, []).append(kept)
        return publish

    def play(self, bag_path: Path) -> None:
        """Deliver every message of the bag in bag order, each after its ``/clock``."""
        from rosgraph_msgs.msg import Clock

        import tf2_standin
        from wrench_distribution.bag.reader import BagReader, TF_MESSAGE
        from wrench_distribution.core.codec import ns_to_stamp, stamp_to_ns
        with BagReader(bag_path) as bag:
            for topic, recv, raw in bag.raw_messages(list(bag.topics)):
                self.callbacks['/clock'](Clock(clock=ns_to_stamp(recv, type(Clock().clock))))
                if topic in ('/tf', '/tf_static'):
                    for tr in bag.deserialize(raw, TF_MESSAGE).transforms:
                        t, r = tr.transform.translation, tr.transform.rotation
                        msg = tf2_standin.transform(tr.header.frame_id, tr.child_frame_id,
                                                    stamp_to_ns(tr.header.stamp),
                                                    (t.x, t.y, t.z), (r.x, r.y, r.z, r.w))
                        if topic == '/tf':
                            self.buffer.set_transform(msg, 'bag')
                        else:
                            self.buffer.set_transform_static(msg, 'bag')
                elif topic in self.callbacks:
                    self.callbacks[topic](bytes(raw))  # the F/T subscriptions are raw

    def close(self) -> None:
        import rclpy

        from wrench_distribution.ros import tf as wd_tf
        self.node.destroy_node()
        rclpy.shutdown(context=self.context)
        wd_tf.use_tf2_implementation(None)


def _wrench_rows(msgs: list) -> tuple[list[int], np.ndarray]:
    """Header stamps (int ns) and wrenches (k, 6) of recorded ``WrenchStamped`` messages."""
    from wrench_distribution.core.codec import stamp_to_ns
    return ([stamp_to_ns(m.header.stamp) for m in msgs],
            np.array([[m.wrench.force.x, m.wrench.force.y, m.wrench.force.z, m.wrench.torque.x,
                       m.wrench.torque.y, m.wrench.torque.z] for m in msgs]))


@pytest.mark.parametrize('sensors', ['configured', 'tf'])
def test_tf_replay_equals_offline(tmp_path, sensors):
    """Moving contacts from /tf (and sensor frames from tf): live equals offline, sample by sample.

    The contacts move between the transforms, so live and offline must both interpolate at
    each sample's stamp; with ``sensor_frames`` the sensor poses come from /tf_static only
    (the parameters have none), and the result must equal the analysis with the configured
    sensor poses, which are the same poses.
    """
    sc = F.make_scenario(SAMPLES, moving=True, seed=3)
    bag = F.write_scenario_bag(tmp_path / 'bag', sc, 'mcap', poses='tf', drop=[(40, 2)],
                               sensor_frames=True)
    ros = F.params('tf', use_sim_time=True, contact_timeout=0.05)['wrench_analyzer']['ros__parameters']
    if sensors == 'tf':
        for name in ('sensor_positions', 'sensor_orientations'):
            ros.pop(name)
        ros['sensor_frames'] = [f'{e}_ft' for e in F.EFFECTORS]
    analyze_bag(bag, load_analyzer_config({'wrench_analyzer': {'ros__parameters': ros}}),
                tmp_path / 'offline', Options(plots=False))
    header, offline, stamps = read_offline(tmp_path / 'offline')
    assert len(stamps) >= SAMPLES - 3  # every sample inside the recorded transforms
    live = InProcessAnalyzer(ros)
    try:
        live.play(bag)
        out = live.published
    finally:
        live.close()
    obj_stamps, obj = _wrench_rows(out['/object_wrench'])
    assert obj_stamps == stamps
    np.testing.assert_allclose(obj, offline[:, [header.index(f'resultant.{c}') for c in COMP]],
                               rtol=1e-9, atol=1e-9)
    for e in F.EFFECTORS:
        for topic, part in (('wrench_manipulating', 'manipulating'), ('wrench_constraint', 'constraint')):
            got_stamps, got = _wrench_rows(out[f'/{e}/{topic}'])
            assert got_stamps == stamps
            np.testing.assert_allclose(got, offline[:, [header.index(f'{e}.{part}.{c}') for c in COMP]],
                                       rtol=1e-9, atol=1e-9, err_msg=f'{e} {part}')
    lam = np.array([m.data for m in out['/measured/internal_load']])
    cols = [h for h in header if h.startswith('internal_load.')]
    np.testing.assert_allclose(lam, offline[:, [header.index(c) for c in cols]], rtol=1e-9, atol=1e-9)
    if sensors == 'tf':  # the sensor poses from tf are the configured ones
        ref = F.params('tf')['wrench_analyzer']['ros__parameters']
        analyze_bag(bag, load_analyzer_config({'wrench_analyzer': {'ros__parameters': ref}}),
                    tmp_path / 'reference', Options(plots=False))
        ref_header, reference, ref_stamps = read_offline(tmp_path / 'reference')
        assert ref_stamps == stamps and ref_header == header
        np.testing.assert_allclose(offline, reference, rtol=1e-9, atol=1e-9)
