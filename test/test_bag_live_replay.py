"""Live replay of a bag into the analyzer node.

The analyzer node under ``use_sim_time``, fed by the bag player, gives the same samples as
``analyze-bag`` on the same bag and parameter file.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml

import bag_fixtures as F
from ros_harness import domain_id_for, script
from wrench_distribution.bag.pipeline import analyze_bag, Options
from wrench_distribution.params import load_analyzer_config

pytestmark = pytest.mark.ros

ROOT = Path(__file__).resolve().parents[1]
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


def ros_env() -> dict:
    env = dict(os.environ)
    env['ROS_DOMAIN_ID'] = str(domain_id_for())
    env['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    env['ROS_LOCALHOST_ONLY'] = '1'
    env.setdefault('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp')
    env['PYTHONUNBUFFERED'] = '1'
    return env


class Processes:
    """Subprocesses of one test; all of them are stopped in teardown."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen] = []

    def start(self, args: list[str], log: Path, env: dict) -> subprocess.Popen:
        proc = subprocess.Popen(args, stdout=open(log, 'w'), stderr=subprocess.STDOUT,
                                env=env, cwd=ROOT, start_new_session=True)
        self.procs.append(proc)
        return proc

    def stop_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGINT)
        for proc in self.procs:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)


@pytest.fixture
def procs():
    p = Processes()
    yield p
    p.stop_all()


def wait_for_line(path: Path, text: str, timeout: float, proc: subprocess.Popen) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and text in path.read_text():
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.05)
    return False


def read_offline(out: Path) -> tuple[list[str], np.ndarray, list[int]]:
    """Column names, values (the stamp column as float) and the int64 ns stamps."""
    table = pq.read_table(out / 'samples.parquet')
    values = np.column_stack([c.to_numpy().astype(float) for c in table.columns])
    return table.column_names, values, table.column('stamp_ns').to_pylist()


@pytest.mark.parametrize('poses', ['static', 'topic'])
def test_live_replay_equals_offline(tmp_path, procs, poses):
    analyzer = script('analyzer')  # wherever it is installed (venv, colcon, PATH)
    env = ros_env()
    sc = F.make_scenario(SAMPLES, seed=7)
    # one F/T message lost, so that the synchronisation rule matters
    bag = F.write_scenario_bag(tmp_path / 'bag', sc, 'sqlite3', drop=[(40, 2)],
                               poses='none' if poses == 'static' else 'topic')
    params = F.params(poses, use_sim_time=True, input_qos='reliable', output_qos='reliable',
                      qos_depth=1000, diagnostics_period=1.0)
    cfg = tmp_path / 'params.yaml'
    cfg.write_text(yaml.safe_dump(params))

    # offline, with the very same parameter file
    analyze_bag(bag, load_analyzer_config(cfg), tmp_path / 'offline', Options(plots=False))
    header, offline, offline_stamps = read_offline(tmp_path / 'offline')
    assert len(offline_stamps) == SAMPLES - 1

    # live: analyzer (sim time) <- player (/clock + recorded topics); recorder -> JSON
    node = procs.start([analyzer, '--ros-args', '--params-file', str(cfg)],
                       tmp_path / 'analyzer.log', env)
    rec_script = tmp_path / 'recorder.py'
    rec_script.write_text(RECORDER)
    rec_out = tmp_path / 'live.json'
    rec = procs.start([sys.executable, str(rec_script), str(rec_out), str(SAMPLES - 1), '40',
                       ','.join(F.EFFECTORS)], tmp_path / 'recorder.log', env)
    assert wait_for_line(tmp_path / 'recorder.log', 'READY', 30, rec), \
        (tmp_path / 'analyzer.log').read_text()[-2000:]
    # every input the analyzer subscribes to must be matched before the first message
    inputs = [f'/{e}/ft_sensor' for e in F.EFFECTORS] + ['/clock', '/contact_poses']
    time.sleep(1.0)  # READY is the recorder's view; let the analyzer match the recorder too
    player = procs.start([sys.executable, '-m', 'wrench_distribution.bag.player', str(bag),
                          '--rate', '0.2', '--wait-for', *inputs,
                          '--wait-timeout', '20'], tmp_path / 'player.log', env)
    assert player.wait(timeout=60) == 0, (tmp_path / 'player.log').read_text()[-2000:]
    rec.wait(timeout=45)
    assert rec_out.exists(), (tmp_path / 'recorder.log').read_text()[-2000:]
    live = json.loads(rec_out.read_text())
    assert node.poll() is None, (tmp_path / 'analyzer.log').read_text()[-2000:]

    # the same samples, stamped with the same header stamps
    obj = np.array(live.get('/object_wrench', []))
    assert obj.shape[0] == len(offline_stamps), (tmp_path / 'analyzer.log').read_text()[-2000:]
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
    keep[40] = False
    np.testing.assert_allclose(np.array([x[1] for x in lam])[:, labels.index(F.SQUEEZE)],
                               sc.squeeze[keep], atol=1e-8)
