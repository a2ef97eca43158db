"""Integration tests of the analyzer node over real DDS (console script in a subprocess)."""
import math
import time

from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import WrenchStamped
import numpy as np
import pytest
from rclpy.parameter import Parameter
from std_msgs.msg import Float64MultiArray

from ros_harness import (diag_messages, domain_id_for, NodeProcess,
                         stamped_wrench, TestClient)
from wrench_distribution.config import load_analyzer_config
from wrench_distribution.core import LoadDistributor, quaternion_to_matrix
from wrench_distribution.core.codec import stamp_to_ns
from wrench_distribution.core.messages import wrench_to_array

pytestmark = pytest.mark.ros

DOMAIN = domain_id_for(__name__)
S2 = math.sqrt(0.5)
NAMES = ['left', 'right']
PARAMS = {
    'effectors': NAMES,
    'contact_source': 'static',
    'contact_positions': [0.0, 0.3, 0.0, 0.0, -0.3, 0.0],
    'contact_orientations': [S2, 0.0, 0.0, S2, -S2, 0.0, 0.0, S2],
    'object_com': [0.02, 0.0, 0.05],
    'object_frame': 'object',
    'sensor_positions': [0.0, 0.0, -0.08, 0.01, 0.0, -0.1],
    'sensor_orientations': [0.0, 0.0, S2, S2, 0.0, 0.0, 0.0, 1.0],
    'sensor_signs': [-1, 1],
    'tool_masses': [0.9, 0.5],
    'tool_coms': [0.0, 0.0, 0.04, 0.0, 0.01, 0.03],
    'gravity': [0.0, 0.0, -9.81],
    'sync_tolerance': 0.005,
    'max_age': 1.0,
    'diagnostics_period': 0.2,
}
OUT = ([f'{n}/wrench_manipulating' for n in NAMES] + [f'{n}/wrench_constraint' for n in NAMES]
       + ['object_wrench'])


def known_problem():
    """Contact wrenches of a known distribution and the sensor readings that produce them."""
    cfg = load_analyzer_config(PARAMS)
    dist = LoadDistributor(cfg.contacts, cfg.object_model, cfg.options)
    desired = np.array([2.0, -1.0, 20.0, 0.3, 0.5, -0.2])
    lam = dist.internal_load_from_handles({'squeeze(left,right)': 12.0})
    h = dist.synthesize(desired, lam).wrench_contact
    readings = []
    g = np.asarray(cfg.gravity)
    for c, s, hi in zip(cfg.contacts, cfg.sensors, h):
        g_c = quaternion_to_matrix(c.orientation).T @ g
        b = s.to_contact(np.zeros(6), g_c)
        a = np.column_stack([s.to_contact(e, g_c) - b for e in np.eye(6)])
        readings.append(np.linalg.solve(a, hi - b))
    return dist, desired, lam, h, readings


@pytest.fixture(scope='module')
def client():
    c = TestClient(DOMAIN)
    yield c
    c.close()


def test_analysis_returns_the_parts_and_rejects_bad_samples(client):
    dist, desired, lam, h, readings = known_problem()
    expected = dist.analyze(h)
    with NodeProcess('analyzer', PARAMS, DOMAIN) as proc:
        pubs = [client.publisher(WrenchStamped, f'{n}/ft_sensor') for n in NAMES]
        got = {t: client.collect(WrenchStamped, t) for t in OUT}
        il = client.collect(Float64MultiArray, 'measured/internal_load')
        diag = client.collect(DiagnosticArray, '/diagnostics')
        assert client.wait_matched(publishers=pubs, topics=OUT), proc.output()

        def sample(stamps, values=readings):
            for p, r, s in zip(pubs, values, stamps):
                p.publish(stamped_wrench(r, s, 'sensor'))

        def out_for(stamp, wait):
            wait = max(wait, 1.0)
            return client.spin_until(
                lambda: all(any(stamp_to_ns(m.header.stamp) == stamp for m in v) for v in got.values()), wait)

        stamp = time.time_ns()
        for _ in range(50):  # until discovery completed both ways
            stamp = time.time_ns()
            sample([stamp, stamp])
            if out_for(stamp, 0.2):
                break
        assert out_for(stamp, 10.0), proc.output()
        pick = {t: wrench_to_array(next(m for m in v if stamp_to_ns(m.header.stamp) == stamp).wrench)
                for t, v in got.items()}
        np.testing.assert_allclose(pick['object_wrench'], desired, atol=1e-8)
        for i, n in enumerate(NAMES):
            np.testing.assert_allclose(pick[f'{n}/wrench_manipulating'],
                                       expected.manipulating_contact[i], atol=1e-8)
            np.testing.assert_allclose(pick[f'{n}/wrench_constraint'],
                                       expected.constraint_contact[i], atol=1e-8)
        assert client.spin_until(lambda: len(il) > 0, 10.0)
        np.testing.assert_allclose(il[-1].data, lam, atol=1e-8)
        assert il[-1].layout.dim[0].label == ';'.join(dist.basis_names)
        assert got['left/wrench_manipulating'][-1].header.frame_id == 'left_contact'

        def wait_diag(text, timeout=10.0):  # bounded by what a loaded machine needs, ended when in
            return client.spin_until(lambda: any(
                text in m for m in diag_messages(diag, 'wrench_analyzer')), timeout)

        bad_stamps = set()

        def refused(text, make_stamps, values=readings):
            """Send a bad sample until its diagnostic is in.

            The inputs are best effort: a loaded machine may lose one.
            """
            for _ in range(20):  # at most 20 x 0.5 s
                stamps = make_stamps()
                bad_stamps.update(stamps)
                sample(stamps, values)
                if wait_diag(text, 0.5):
                    return True
            return False

        for v in got.values():
            v.clear()
        # NaN in one reading: no output for that stamp, a diagnostic
        bad = [readings[0].copy(), readings[1]]
        bad[0][2] = float('nan')
        assert refused("'left' contains NaN", lambda: [time.time_ns()] * 2, bad), (
            diag_messages(diag, 'wrench_analyzer')[-12:], proc.output())

        # skewed stamps (50 ms apart > 5 ms tolerance)
        def skewed():
            now = time.time_ns()
            return [now, now + 50_000_000]

        assert refused('out of sync', skewed), (
            diag_messages(diag, 'wrench_analyzer')[-12:], proc.output())
        # a stale sample (stamps 5 s old > max_age 1 s)
        assert refused('F/T sample is stale', lambda: [time.time_ns() - 5_000_000_000] * 2), (
            diag_messages(diag, 'wrench_analyzer')[-12:], proc.output())
        client.spin_for(0.2)
        assert not any(stamp_to_ns(m.header.stamp) in bad_stamps for v in got.values() for m in v)
        assert all(np.all(np.isfinite(wrench_to_array(m.wrench))) for v in got.values() for m in v)
        # the streams stop: diagnostics name the stale streams
        diag.clear()
        assert wait_diag('stale F/T stream(s): left, right'), (diag_messages(diag, 'wrench_analyzer')[-12:],
                                                               proc.output())
        # runtime parameters: refused with a reason, or applied
        res = client.set_parameters('wrench_analyzer', [Parameter('sync_tolerance', value=-1.0)])
        assert not res[0].successful and 'sync_tolerance' in res[0].reason
        res = client.set_parameters('wrench_analyzer', [Parameter('sync_tolerance', value=0.1)])
        assert res[0].successful, res[0].reason
        s4 = time.time_ns()
        sample([s4, s4 + 50_000_000])   # now within tolerance
        assert out_for(s4 + 50_000_000, 10.0), proc.output()
    assert 'Traceback' not in proc.output()


def test_missing_stream_is_reported(client):
    with NodeProcess('analyzer', PARAMS, DOMAIN) as proc:
        diag = client.collect(DiagnosticArray, '/diagnostics')
        diag.clear()
        pub = client.publisher(WrenchStamped, 'left/ft_sensor')
        assert client.wait_matched(publishers=[pub])
        ok = client.spin_until(lambda: (pub.publish(stamped_wrench([0.0] * 6, time.time_ns())) or any(
            'no F/T data yet from: right' in m for m in diag_messages(diag, 'wrench_analyzer'))),
            5.0)
        assert ok, proc.output()


def test_invalid_startup_parameters_exit_with_a_message():
    with NodeProcess('analyzer', dict(PARAMS, sensor_signs=[1, 0]), DOMAIN) as proc:
        code = proc.wait(20)
        out = proc.output()
    assert code == 2, out
    assert "parameter 'sensor_signs'" in out and '+1 or -1' in out
    assert 'Traceback' not in out
