"""Friction in the nodes over real DDS.

Auto mode, hold/zero when infeasible, check-mode diagnostics and markers, and the analyzer's
per-effector friction topic.
"""
import time

from geometry_msgs.msg import WrenchStamped
import numpy as np
import pytest
from std_msgs.msg import Float64MultiArray
from visualization_msgs.msg import MarkerArray

from ros_harness import (diag_messages, diag_values, domain_id_for, NodeProcess,
                         stamped_wrench, TestClient)
from test_ros_distributor import Rig
from wrench_distribution.core import quaternion_to_matrix

pytestmark = pytest.mark.ros

DOMAIN = domain_id_for(__name__)
FINGERS = ['thumb', 'index', 'middle']
# the demo's fingertips: 120 deg apart on a 4 cm ball, contact z along the inward normal
QUATS = [[0.5, -0.5, 0.5, 0.5], [-0.6830127, -0.1830127, -0.6830127, 0.1830127],
         [-0.1830127, -0.6830127, -0.1830127, 0.6830127]]
HAND = {
    'effectors': FINGERS, 'contact_types': ['point'] * 3, 'contact_source': 'static',
    'contact_positions': [0.0, 0.04, 0.0, -0.034641, -0.02, 0.0, 0.034641, -0.02, 0.0],
    'contact_orientations': sum(QUATS, []), 'object_frame': 'object',
    'friction_coefficients': [0.5, 0.5, 0.5], 'friction_margin': 0.1,
    'diagnostics_period': 0.2, 'input_timeout': 0.0, 'markers_period': 0.0,
}
FEET = {
    'effectors': ['left', 'right'], 'contact_types': ['point', 'point'],
    'contact_source': 'static', 'contact_positions': [0.1, 0.0, 0.0, -0.1, 0.0, 0.0],
    'object_frame': 'object', 'friction_coefficients': [0.6, 0.6], 'friction_mode': 'auto',
    'diagnostics_period': 0.2, 'input_timeout': 0.0,
}
WEIGHT = [0.0, 0.0, 2.943, 0.0, 0.0, 0.0]


@pytest.fixture(scope='module')
def client():
    c = TestClient(DOMAIN)
    yield c
    c.close()


def normal_forces(cmds):
    """Contact z is the normal of every fingertip: the third component."""
    return np.array([c[2] for c in cmds])


def object_force(cmds, quats=QUATS):
    return sum(quaternion_to_matrix(q) @ np.asarray(c[:3]) for c, q in zip(cmds, quats))


def test_auto_mode_adds_the_squeeze_that_holds(client):
    added = client.collect(Float64MultiArray, 'friction/internal_load_added')
    markers = client.collect(MarkerArray, '/wrench_distributor/markers', qos=10)
    with NodeProcess('distributor', dict(HAND, friction_mode='auto'), DOMAIN) as proc:
        rig = Rig(client, FINGERS)
        rig.ready()
        rig.warmup()
        cmds = rig.send(WEIGHT)
        assert cmds is not None, proc.output()
        # derived: each fingertip carries W/3 tangentially, f_n = (W/3) / (0.9 * 0.5)
        np.testing.assert_allclose(normal_forces(cmds), 0.981 / 0.45, rtol=1e-6)
        np.testing.assert_allclose(object_force(cmds), WEIGHT[:3], atol=1e-9)
        assert client.spin_until(lambda: len(added) > 0, 2.0)
        assert added[-1].layout.dim[0].label.split(';')[0].startswith('squeeze(')
        assert min(added[-1].data) > 0
        # markers coloured by utilisation: 0.9 is red-orange, not the default blue
        assert client.spin_until(lambda: len(markers) > 0, 2.0)
        arrow = next(m for m in markers[-1].markers if m.ns == 'effector_force')
        assert (arrow.color.r, arrow.color.b) == (1.0, 0.0) and arrow.color.g == pytest.approx(0.2, abs=1e-6)
        assert client.spin_until(lambda: 'friction.thumb' in diag_values(rig.diag, 'wrench_distributor'), 3.0)
        values = diag_values(rig.diag, 'wrench_distributor')
        assert values.get('friction_mode') == 'auto'
        assert 'utilisation 0.900' in values.get('friction.thumb', ''), values


@pytest.mark.parametrize('behaviour', ['hold', 'zero'])
def test_infeasible_does_the_configured_behaviour(client, behaviour):
    with NodeProcess('distributor', dict(FEET, on_friction_infeasible=behaviour), DOMAIN) as proc:
        rig = Rig(client, ['left', 'right'])
        rig.ready()
        rig.warmup()
        good = rig.send([0.5, 0, 10.0, 0, 0, 0])
        assert good is not None, proc.output()
        assert np.all(normal_forces(good) > 0)
        # two feet under the object cannot pull it down: never a command that pulls
        bad = rig.send([0, 0, -10.0, 0, 0, 0])
        assert bad is not None, proc.output()
        if behaviour == 'hold':
            np.testing.assert_allclose(bad, good, atol=1e-12)
        else:
            np.testing.assert_allclose(bad, 0.0, atol=0.0)
        assert rig.wait_diag('friction: no internal load keeps every contact'), diag_messages(
            rig.diag, 'wrench_distributor')
        levels = [s.level for a in rig.diag for s in a.status if 'wrench_distributor' in s.name
                  and 'friction' in s.message]
        assert levels and all((lv[0] if isinstance(lv, bytes) else lv) == 2 for lv in levels)


def test_check_mode_warns_near_the_limit_and_errors_outside(client):
    # a prescribed squeeze of 1.2 N per pair gives each fingertip 2 * 1.2 * cos(30 deg)
    # = 2.078 N of normal force: utilisation 0.981 / (0.5 * 2.078) = 0.944, in the WARN band
    # (0.9, 1]; 20 % more weight makes it 1.133: slipping (ERROR).
    handles = ['squeeze(thumb,index)=1.2', 'squeeze(thumb,middle)=1.2', 'squeeze(index,middle)=1.2']
    with NodeProcess('distributor', dict(HAND, internal_load_handles=handles), DOMAIN) as proc:
        rig = Rig(client, FINGERS)
        rig.ready()
        rig.warmup()
        cmds = rig.send(WEIGHT)
        assert cmds is not None, proc.output()
        normal = 2 * 1.2 * np.cos(np.radians(30))
        np.testing.assert_allclose(normal_forces(cmds), normal, rtol=1e-6)
        utilisation = 0.981 / (0.5 * normal)
        assert 0.9 < utilisation < 1.0
        for _ in range(3):
            rig.send(WEIGHT)
        assert rig.wait_diag('thumb near_limit'), diag_messages(rig.diag, 'wrench_distributor')
        assert f'utilisation {utilisation:.3f}' in diag_values(rig.diag, 'wrench_distributor')['friction.thumb']
        rig.clear()
        heavier = [0, 0, 2.943 * 1.2, 0, 0, 0]
        cmds = rig.send(heavier)  # check mode still publishes, and says so loudly
        assert cmds is not None
        for _ in range(3):
            rig.send(heavier)
        assert rig.wait_diag('thumb slipping'), diag_messages(rig.diag, 'wrench_distributor')


def test_analyzer_publishes_per_effector_friction(client):
    params = dict(HAND, sync_tolerance=0.005, max_age=1.0)
    for key in ('input_timeout', 'markers_period'):
        params.pop(key)
    with NodeProcess('analyzer', params, DOMAIN) as proc:
        pubs = [client.publisher(WrenchStamped, f'{n}/ft_sensor') for n in FINGERS]
        out = client.collect(Float64MultiArray, 'measured/friction')
        assert client.wait_matched(publishers=pubs, topics=['measured/friction']), proc.output()
        # thumb: 0.3 N tangential on 1 N normal (utilisation 0.6); index pulls; middle slips
        readings = [[0.3, 0, 1.0, 0, 0, 0], [0, 0, -0.5, 0, 0, 0], [0.4, 0.3, 0.9, 0, 0, 0]]
        stamp = 0
        for _ in range(50):
            stamp = time.time_ns()
            for p, r in zip(pubs, readings):
                p.publish(stamped_wrench(r, stamp, 'sensor'))
            if client.spin_until(lambda: len(out) > 0, 0.2):
                break
        assert out, proc.output()
        rows = np.array(out[-1].data).reshape(3, 3)
        assert out[-1].layout.dim[0].label == 'thumb;index;middle'
        np.testing.assert_allclose(rows[0], [0.6, 1.0, 0.0], atol=1e-9)       # ok
        np.testing.assert_allclose(rows[1], [-1.0, -0.5, 3.0], atol=1e-9)     # pulling
        np.testing.assert_allclose(rows[2], [0.5 / 0.45, 0.9, 2.0], atol=1e-9)  # slipping
        assert all(np.isfinite(m.data).all() for m in out)
