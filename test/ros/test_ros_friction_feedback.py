"""The distributor's friction feedback over real DDS, with a fake analyzer friction publisher.

The test publishes ``measured/friction`` laid out as the analyzer's topic (labels written
here, not taken from the package) with every fingertip above the target utilisation 0.9.
Expected values are derived: with the weight shared by three fingertips 120 deg apart, auto
mode at margin ``m`` presses each with ``(W/3) / ((1 - m) mu)``, so a tighter margin means
larger normal forces; the resultant of the commands (by hand) stays the weight.
"""
import numpy as np
import pytest
import rclpy  # noqa: F401 (installed by the README's set-up: no skip)
from rclpy.parameter import Parameter
from std_msgs.msg import Float64MultiArray, MultiArrayDimension

from ros_harness import diag_messages, diag_values, domain_id_for, NodeProcess, TestClient
from test_ros_distributor import Rig
from test_ros_friction import FINGERS, HAND as FRICTION_HAND, QUATS
from wrench_distribution.core import quaternion_to_matrix

pytestmark = pytest.mark.ros

DOMAIN = domain_id_for(__name__)
HAND = {**FRICTION_HAND, 'friction_mode': 'auto',
        'friction_feedback': True, 'friction_feedback_kp': 0.5, 'friction_feedback_ki': 5.0,
        'friction_feedback_limit': 0.3, 'friction_feedback_timeout': 0.5}
WEIGHT = [0.0, 0.0, 2.943, 0.0, 0.0, 0.0]
FIELDS = 'utilisation;normal_force;status(ok,near_limit,slipping,pulling,unloaded,unconstrained)'


@pytest.fixture(scope='module')
def client():
    c = TestClient(DOMAIN)
    yield c
    c.close()


def measured(utilisation: float) -> Float64MultiArray:
    """Return the analyzer's friction topic: every fingertip at ``utilisation``, status ok (code 0)."""
    msg = Float64MultiArray()
    msg.layout.dim = [MultiArrayDimension(label=';'.join(FINGERS), size=3, stride=9),
                      MultiArrayDimension(label=FIELDS, size=3, stride=3)]
    msg.data = [utilisation, 2.0, 0.0] * 3
    return msg


def object_force(cmds):
    return sum(quaternion_to_matrix(q) @ np.asarray(c[:3]) for c, q in zip(cmds, QUATS))


def normals(cmds):
    """Contact z is every fingertip's normal: the third component."""
    return np.array([c[2] for c in cmds])


def drive(client, rig, pub, utilisation, cycles):
    """Publish the measurement and a desired wrench per cycle; return the last commands."""
    cmds = None
    for _ in range(cycles):
        pub.publish(measured(utilisation))
        client.spin_for(0.02)
        cmds = rig.send(WEIGHT)
        assert cmds is not None
        np.testing.assert_allclose(object_force(cmds), WEIGHT[:3], atol=1e-9)
    return cmds


def test_utilisation_above_target_raises_the_normal_forces_resultant_unchanged(client):
    pub = client.publisher(Float64MultiArray, 'measured/friction')
    with NodeProcess('distributor', HAND, DOMAIN) as proc:
        rig = Rig(client, FINGERS)
        rig.ready()
        rig.warmup()
        assert client.wait_matched(publishers=[pub]), proc.output()
        first = rig.send(WEIGHT)
        nominal = 0.981 / (0.9 * 0.5)  # (W/3) / ((1 - margin) mu)
        np.testing.assert_allclose(normals(first), nominal, rtol=1e-6)
        cmds = drive(client, rig, pub, 1.0, 40)
        assert np.all(normals(cmds) > nominal * 1.05), (normals(cmds), proc.output())
        # the margin in use, from the normal force by the same derivation: 1 - (W/3)/(mu f_n)
        margin = 1.0 - 0.981 / (0.5 * normals(cmds))
        assert 0.1 < margin.min() and margin.max() <= 0.4 + 1e-6
        # the utilisation stays at 1.0 whatever the margin (the test's plant): the margin is
        # driven to its limit, 0.1 + 0.3, and the status says so
        assert client.spin_until(lambda: diag_values(rig.diag, 'wrench_distributor: distribution')
                                 .get('friction_feedback')
                                 == 'closed loop, correction at friction_feedback_limit 0.3', 3.0)
        values = diag_values(rig.diag, 'wrench_distributor: distribution')
        assert values['friction_feedback.measured_max_utilisation'] == '1.000'
        assert values['friction_feedback.target_utilisation'] == '0.900'
        assert float(values['friction_feedback.effective_margin']) > 0.1
        # switched off at runtime: back to the nominal squeeze within the release ramp
        result = client.set_parameters('wrench_distributor',
                                       [Parameter('friction_feedback', value=False)])
        assert result[0].successful, result[0].reason
        client.spin_for(1.2)
        np.testing.assert_allclose(normals(rig.send(WEIGHT)), nominal, rtol=1e-6)
        assert 'Traceback' not in proc.output()


def test_stale_measurement_suspends_in_diagnostics_and_holds_the_margin(client):
    pub = client.publisher(Float64MultiArray, 'measured/friction')
    with NodeProcess('distributor', HAND, DOMAIN) as proc:
        rig = Rig(client, FINGERS)
        rig.ready()
        rig.warmup()
        assert client.wait_matched(publishers=[pub]), proc.output()
        grown = normals(drive(client, rig, pub, 1.0, 20))
        client.spin_for(0.8)  # nothing measured for > friction_feedback_timeout 0.5 s

        def suspended():
            return any('friction feedback suspended: measured friction utilisation stale' in m
                       for m in diag_messages(rig.diag, 'wrench_distributor: friction'))
        assert client.spin_until(suspended, 3.0), diag_messages(rig.diag, 'wrench_distributor')
        assert client.spin_until(lambda: int(diag_values(
            rig.diag, 'wrench_distributor: distribution').get(
                'friction_feedback_suspended_stale', '0')) >= 1, 3.0)
        held = normals(rig.send(WEIGHT))
        np.testing.assert_allclose(held, grown, rtol=1e-6)  # the margin is held, not reset
        assert 'Traceback' not in proc.output()


def test_feedback_without_auto_mode_is_refused_naming_the_parameter(client):
    with NodeProcess('distributor', dict(HAND, friction_mode='check'), DOMAIN) as proc:
        assert proc.wait(20.0) == 2
        assert "parameter 'friction_feedback'" in proc.output()
        assert 'friction_mode auto' in proc.output()


def test_switching_it_on_without_auto_mode_is_refused_at_runtime(client):
    params = dict(HAND, friction_mode='check', friction_feedback=False)
    with NodeProcess('distributor', params, DOMAIN) as proc:
        rig = Rig(client, FINGERS)
        rig.ready()
        result = client.set_parameters('wrench_distributor',
                                       [Parameter('friction_feedback', value=True)])
        assert not result[0].successful
        assert "parameter 'friction_feedback'" in result[0].reason, result[0].reason
        assert 'friction_mode auto' in result[0].reason
        assert 'Traceback' not in proc.output()


def doubted(utilisation: float) -> Float64MultiArray:
    """Return :func:`measured` with the analyzer's health dimension: the thumb's sensor frozen.

    The label is written here from docs/health.md's format (``health=doubt;sensors=...``); the
    doubt begins with this message (``onset_age_s=0``) and reaches the thumb's row.
    """
    msg = measured(utilisation)
    msg.layout.dim.append(MultiArrayDimension(
        label=f'health=doubt;sensors={FINGERS[0]}:frozen;set=consistent;onset_age_s=0;elements=0',
        size=1, stride=1))
    return msg


def test_a_doubted_measurement_holds_the_margin_and_a_trusted_one_closes_the_loop_again(client):
    pub = client.publisher(Float64MultiArray, 'measured/friction')
    with NodeProcess('distributor', HAND, DOMAIN) as proc:
        rig = Rig(client, FINGERS)
        rig.ready()
        rig.warmup()
        assert client.wait_matched(publishers=[pub]), proc.output()
        # a few cycles: the loop raises them, short of friction_feedback_limit (else holding
        # could not be told from saturating)
        grown = normals(drive(client, rig, pub, 1.0, 3))
        assert np.all(grown > 0.981 / (0.9 * 0.5) * 1.01), grown
        doubting = _Doubting(pub)
        held = [normals(drive(client, rig, doubting, 1.0, 1)) for _ in range(15)]
        # utilisation still above the target, but from a doubted sensor: nothing integrated,
        # the margin held where the last trusted measurement left it
        for value in held:
            np.testing.assert_allclose(value, grown, rtol=1e-9)

        def status() -> str:
            return diag_values(rig.diag, 'wrench_distributor: distribution').get('friction_feedback', '')
        assert client.spin_until(lambda: status().startswith(
            'suspended: sensors in doubt: thumb (frozen): correction held at its value at the onset'), 3.0), \
            status()
        assert client.spin_until(lambda: int(diag_values(
            rig.diag, 'wrench_distributor: distribution').get('friction_feedback_suspended_sensor', '0')) >= 1, 3.0)
        drive(client, rig, pub, 1.0, 5)  # trusted again: the loop closes
        assert client.spin_until(lambda: status().startswith('closed loop'), 3.0), status()
        assert 'Traceback' not in proc.output()


class _Doubting:
    """A publisher whose friction messages carry the thumb's doubt (for :func:`drive`)."""

    def __init__(self, pub) -> None:
        self.pub = pub

    def publish(self, msg: Float64MultiArray) -> None:
        doubt = doubted(msg.data[0])
        doubt.data = msg.data
        self.pub.publish(doubt)
