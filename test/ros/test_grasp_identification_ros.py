"""``~/calibration/identify_grasps`` over DDS: captured rests, the contacts corrected live, saved, reloaded.

The analyzer runs as its console script with static contacts 2-3 mm and 1-2 degrees away from
the test's true ones; a test node publishes readings derived by hand (statics of
:mod:`calibration_fixtures`, contact wrenches moved by hand with ``f' = R f``,
``t' = R t + p x (R f)``) while the object rests at several internal loads; the test captures
each rest, identifies the grasps, checks the answer, the diagnostics and the analyzer's read-out
against the true internal load, saves, and restarts the analyzer with the saved file. A node
whose contacts come from a topic refuses, saying why.
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation
import yaml

import calibration_fixtures as C
from ros_harness import domain_id_for, stamped_wrench, start_node, taken_in, TestClient
import test_calibration_ros as services

pytestmark = pytest.mark.ros

NAMES = ['left', 'right']
CONFIGURED = np.array([[0.0, 0.2, 0.0, *Rotation.from_euler('x', 90, degrees=True).as_quat()],
                       [0.0, -0.2, 0.0, *Rotation.from_euler('x', -90, degrees=True).as_quat()]])
POSITION_ERRORS = np.array([[0.002, -0.003, 0.001], [-0.001, 0.002, 0.002]])
ORIENTATION_ERRORS = np.array([[0.02, -0.03, 0.01], [-0.015, 0.02, 0.03]])  # rad, object frame
MASS, COM = 2.0, np.array([0.02, 0.05, 0.0])
#: Internal loads of the rests, contact 0's share in object axes about the origin (contact 1 the
#: opposite): squeeze along y stepped, a bend about x, a shear along z with the couple balanced.
RESTS = [np.array([0.0, -15.0, 0.0, 0.0, 0.0, 0.0]), np.array([0.0, -30.0, 0.0, 0.0, 0.0, 0.0]),
         np.array([0.0, -20.0, 0.0, 0.6, 0.0, 0.0]), np.array([0.0, -20.0, 3.0, 0.0, 0.0, 0.0])]


def true_contacts():
    rotations = [Rotation.from_rotvec(e) * Rotation.from_quat(q[3:]) for e, q in zip(ORIENTATION_ERRORS, CONFIGURED)]
    return CONFIGURED[:, :3] + POSITION_ERRORS, rotations


def tools():
    """Return the sensors: known tools, no bias (a bias would stay in the read-out checked below)."""
    return [C.Tool(-1, 0.3, np.array([0.0, 0.0, 0.04]), np.zeros(6), np.zeros(3), Rotation.identity(),
                   Rotation.identity()) for _ in NAMES]


def contact_wrenches(internal: np.ndarray) -> list:
    """Return the true contact-frame wrenches holding the object (level) with ``internal`` at contact 0.

    Object axes about the origin: each contact carries half the weight's need, plus or minus
    ``internal``; moved to each true contact by hand: ``f_c = R^T f``, ``t_c = R^T (t - p x f)``.
    """
    weight = MASS * C.G
    need = -np.concatenate([weight, np.cross(COM, weight)])
    positions, rotations = true_contacts()
    out = []
    for sign, p, r in zip((1.0, -1.0), positions, rotations):
        w = need / 2 + sign * internal
        out.append(np.concatenate([r.inv().apply(w[:3]), r.inv().apply(w[3:] - np.cross(p, w[:3]))]))
    return out


def analyzer_params(**overrides) -> dict:
    return {'effectors': NAMES, 'contact_source': 'static',
            'contact_positions': CONFIGURED[:, :3].ravel().tolist(),
            'contact_orientations': CONFIGURED[:, 3:].ravel().tolist(),
            'sensor_signs': [-1, -1], 'tool_masses': [0.3, 0.3], 'tool_coms': [0.0, 0.0, 0.04] * 2,
            'object_mass': MASS, 'object_com': COM.tolist(), 'gravity': C.G.tolist(),
            'tare_samples': 100, 'sync_tolerance': 0.002, 'max_age': 0.0, 'max_future': 0.0,
            'diagnostics_period': 0.2, **overrides}


def write(tmp_path, name, params) -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump({'wrench_analyzer': {'ros__parameters': params}}))
    return path


class Rests:
    """Publishes both sensors' readings at rest, sample by sample, in real time."""

    def __init__(self, client):
        from geometry_msgs.msg import WrenchStamped
        self.client = client
        self.ft = [client.publisher(WrenchStamped, f'/{n}/ft_sensor') for n in NAMES]
        self.rng = np.random.default_rng(3)
        _, self.rotations = true_contacts()

    def hold(self, internal: np.ndarray, samples: int) -> None:
        wrenches = contact_wrenches(internal)
        readings = [C.read(tool, np.tile(w, (samples, 1)), np.tile(r.inv().apply(C.G), (samples, 1)), self.rng)
                    for tool, w, r in zip(tools(), wrenches, self.rotations)]
        for j in range(samples):
            now = self.client.node.get_clock().now().nanoseconds
            for i, pub in enumerate(self.ft):
                pub.publish(stamped_wrench(readings[i][j], now, f'{NAMES[i]}_ft'))
            self.client.spin_for(0.004)
        self.last_stamp = now


def relative_pose(positions, rotations) -> tuple:
    first = rotations[0].inv()
    return first.apply(positions[1] - positions[0]), (first * rotations[1])


def squeeze_of(loads: list) -> float:
    """Return the mean squeeze of the newest 50 internal-load messages (by the layout's label)."""
    labels = loads[-1].layout.dim[0].label.split(';')
    return float(np.mean([m.data[labels.index('squeeze(left,right)')] for m in loads[-50:]]))


# timing: each capture takes the analyzer's newest 100 samples once it has taken in the last of the
# 150 published (its object wrench keeps their stamp); an analyzer lagging behind under CPU
# contention can still refuse a capture: alone, after everything else
@pytest.mark.timing
@pytest.mark.serial
def test_identify_grasps_corrects_the_contacts_live_and_saves_them(tmp_path):
    from diagnostic_msgs.msg import DiagnosticArray
    from geometry_msgs.msg import WrenchStamped
    from std_msgs.msg import Float64MultiArray
    saved = tmp_path / 'calibration.yaml'
    config = write(tmp_path, 'cell.yaml', analyzer_params(calibration_file=str(saved)))
    with start_node('analyzer', [config], domain_id_for(__name__), log=tmp_path / 'first.log') as node, \
            TestClient(domain_id_for(__name__), 'wd_grasps_client') as client:
        rests = Rests(client)
        loads = client.collect(Float64MultiArray, '/measured/internal_load')
        diagnostics = client.collect(DiagnosticArray, '/diagnostics')
        outputs = client.collect(WrenchStamped, '/object_wrench')

        def capture():
            assert client.spin_until(lambda: taken_in(outputs, rests.last_stamp), 10.0)
            return services._call(client, 'calibration/capture')
        assert client.wait_matched(publishers=rests.ft, timeout=20.0), node.output()
        none = services._call(client, 'calibration/identify_grasps')
        assert not none.success and 'no rest captured' in none.message, none.message
        rests.hold(RESTS[0], 150)
        assert capture().success
        one = services._call(client, 'calibration/identify_grasps')
        assert not one.success and '1 rest captured' in one.message and 'step the squeeze' in one.message
        for k, internal in enumerate(RESTS):
            loads.clear()
            rests.hold(internal, 150)
            response = capture()
            assert response.success, response.message
            if k == 1:
                before = squeeze_of(loads)
        response = services._call(client, 'calibration/identify_grasps')
        assert response.success and response.message.startswith('applied'), response.message
        assert 'rank 6 of 12' in response.message and 'common rigid motion' in response.message, response.message
        # the read-out with the corrected contacts: the second rest's 30 N along y, seen along the
        # line joining the true contacts
        loads.clear()
        rests.hold(RESTS[1], 150)
        assert client.spin_until(lambda: len(loads) > 50, 10.0)
        positions, _ = true_contacts()
        line = (positions[1] - positions[0]) / np.linalg.norm(positions[1] - positions[0])
        truth = 30.0 * float(line @ [0.0, -1.0, 0.0])
        assert abs(squeeze_of(loads) - truth) < 0.03, (squeeze_of(loads), truth)
        assert abs(before - truth) > 0.1, (before, truth)  # the configured contacts read it wrong
        assert client.spin_until(lambda: any(
            v.key == 'contacts' and v.value.startswith('identified') for a in diagnostics for s in a.status
            for v in s.values), 5.0), 'no identified contacts in the diagnostics'
        response = services._call(client, 'save_calibration')
        assert response.success and 'contact_positions' in response.message, response.message
    document = yaml.safe_load(saved.read_text())
    section = document['/**/wrench_analyzer']['ros__parameters']
    assert document['/**/wrench_distributor']['ros__parameters']['contact_positions'] == section['contact_positions']
    found_p = np.reshape(section['contact_positions'], (2, 3))
    found_r = [Rotation.from_quat(q) for q in np.reshape(section['contact_orientations'], (2, 4))]
    true_position, true_rotation = relative_pose(*true_contacts())
    position, rotation = relative_pose(found_p, found_r)
    assert np.linalg.norm(position - true_position) < 3e-4  # m: 12 mm off as configured
    assert np.degrees((true_rotation.inv() * rotation).magnitude()) < 0.1  # deg: 3.7 deg as configured
    with start_node('analyzer', [config], domain_id_for(__name__), log=tmp_path / 'second.log') as node, \
            TestClient(domain_id_for(__name__), 'wd_grasps_client2') as client:
        positions, = services._parameters(client, ['contact_positions'])
        assert np.allclose(positions, section['contact_positions'])


def test_contacts_from_a_topic_are_refused_saying_why(tmp_path):
    config = write(tmp_path, 'topic.yaml', analyzer_params(contact_source='topic'))
    with start_node('analyzer', [config], domain_id_for(__name__), log=tmp_path / 'topic.log'), \
            TestClient(domain_id_for(__name__), 'wd_grasps_topic') as client:
        response = services._call(client, 'calibration/identify_grasps')
        assert not response.success
        assert "contact_source is 'topic'" in response.message and 'static' in response.message, response.message
