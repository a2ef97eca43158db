"""Internal-load feedback and unsubscribed outputs of the distributor node over real DDS.

The loop is closed through a plant that is not our model (``foreign_plants.py``): the test
node reads the commands, rotates them from the contact frames into the object frame by hand,
and the plant delivers them one command late (a FIFO: 10 ms or more at this loop's pace) through
per-axis gains with coupling between axes and arms, with biases of 2-5 N and 0.1-0.3 N*m,
the object settling in equilibrium through the arms' compliance. The true internal load is
computed from the true contact wrenches by hand and published, labelled with the basis, on
``measured/internal_load`` (a perfect sensor). Every assertion on the loop is on that truth;
the resultant of the commands (by hand) stays the desired wrench.
"""
import math

from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import WrenchStamped
import numpy as np
import pytest
from rclpy.parameter import Parameter
from scipy.spatial.transform import Rotation
from std_msgs.msg import Float64MultiArray, MultiArrayDimension

from foreign_plants import coupled_arms, settled_correction
from ros_harness import (diag_messages, diag_values, domain_id_for,
                         NodeProcess, stamped_wrench, TestClient)
from wrench_distribution.core.codec import stamp_to_ns
from wrench_distribution.core.messages import wrench_to_array
from wrench_distribution.ros.diagnostics import level_of, WARN

pytestmark = pytest.mark.ros

DOMAIN = domain_id_for(__name__)
S2 = math.sqrt(0.5)
POSITIONS = [[0.0, 0.3, 0.0], [0.0, -0.3, 0.0]]
QUATS = [[S2, 0.0, 0.0, S2], [-S2, 0.0, 0.0, S2]]
COM = [0.0, 0.0, 0.0]  # the midpoint of the contacts (the plant's truth needs it)
BASE = {'effectors': ['left', 'right'], 'contact_source': 'static',
        'contact_positions': sum(POSITIONS, []), 'contact_orientations': sum(QUATS, []),
        'object_com': COM, 'diagnostics_period': 0.2, 'input_timeout': 0.0,
        'internal_load_handles': ['squeeze(left,right)=20'],
        'feedback_kp': [0.3], 'feedback_ki': [5.0], 'feedback_timeout': 0.5}
WRENCH = [1.0, -2.0, 15.0, 0.0, 0.0, 0.0]  # holds the object: a force through its CoM
NAMES = [f'{element}(left,right)' for element in
         ('squeeze', 'twist', 'bend_u', 'bend_v', 'shear_u', 'shear_v')]
TARGET = np.array([20.0, 0.0, 0.0, 0.0, 0.0, 0.0])  # squeeze(left,right)=20


@pytest.fixture(scope='module')
def client():
    c = TestClient(DOMAIN)
    yield c
    c.close()


def arms():
    """Return the plant: two coupled, biased arms, one command late."""
    return coupled_arms(np.array(POSITIONS), np.array(WRENCH[:3]), 28, 0.05, 1)


def in_object_axes(commands) -> np.ndarray:
    """Rotate contact-frame commands (2, 6) into the object frame (by hand)."""
    rot = Rotation.from_quat(QUATS)
    commands = np.asarray(commands)
    return np.hstack([rot.apply(commands[:, :3]), rot.apply(commands[:, 3:])])


def resultant(commands) -> np.ndarray:
    """Resultant about the CoM, object frame, of contact-frame commands (by hand)."""
    rot = Rotation.from_quat(QUATS)
    f = rot.apply(np.asarray(commands)[:, :3])
    t = rot.apply(np.asarray(commands)[:, 3:])
    lever = np.asarray(POSITIONS) - np.asarray(COM)
    return np.concatenate([f.sum(0), t.sum(0) + np.cross(lever, f).sum(0)])


def measurement(names, values) -> Float64MultiArray:
    msg = Float64MultiArray()
    msg.layout.dim = [MultiArrayDimension(label=';'.join(names), size=len(values),
                                          stride=len(values))]
    msg.data = [float(v) for v in values]
    return msg


class Loop:
    """The test side: desired wrench out, commands in, measured internal load out."""

    def __init__(self, client: TestClient) -> None:
        self.c = client
        self.pub = client.publisher(WrenchStamped, 'desired_wrench')
        self.meas = client.publisher(Float64MultiArray, 'measured/internal_load')
        self.cmds = {n: client.collect(WrenchStamped, f'{n}/wrench_command')
                     for n in ('left', 'right')}
        self.diag = client.collect(DiagnosticArray, '/diagnostics')
        self.stamp = 1_000_000_000
        for box in list(self.cmds.values()) + [self.diag]:
            box.clear()

    def send(self, wait: float = 2.0):
        """Publish the desired wrench; return the commands with its stamp (or None)."""
        self.stamp += 10_000_000
        s = self.stamp
        self.pub.publish(stamped_wrench(WRENCH, s, 'object'))

        def got():
            return all(any(stamp_to_ns(m.header.stamp) == s for m in v)
                       for v in self.cmds.values())
        if not self.c.spin_until(got, wait):
            return None
        return np.array([wrench_to_array(next(m for m in self.cmds[n]
                                              if stamp_to_ns(m.header.stamp) == s).wrench)
                         for n in ('left', 'right')])

    def start(self) -> None:
        assert self.c.wait_matched(publishers=[self.pub, self.meas],
                                   topics=['left/wrench_command']), 'distributor not up'
        for _ in range(40):
            if self.send(0.25) is not None:
                return
        raise AssertionError('no command from the distributor')

    def feedback_status(self) -> dict:
        return diag_values(self.diag, 'wrench_distributor: feedback')

    def counters(self) -> dict:
        return diag_values(self.diag, 'wrench_distributor: distribution')


def run_plant(loop: Loop, plant, steps: int) -> list:
    """Close the loop for a number of command cycles; return the plant's true loads."""
    history = []
    for _ in range(steps):
        commands = loop.send()
        assert commands is not None
        np.testing.assert_allclose(resultant(commands), WRENCH, atol=1e-9)
        truth = plant.truth(plant.deliver(in_object_axes(commands)))
        history.append(truth)
        loop.meas.publish(measurement(NAMES, truth))
        loop.c.spin_for(0.01)
    return history


def closed_loop_status(loop: Loop, plant, rounds: int = 40) -> dict:
    """Keep the loop running until a diagnostics array shows it closed; return that status.

    The measurement must keep flowing while the test waits: once it stops, the loop is
    suspended after ``feedback_timeout`` and a later array no longer says 'closed loop'.
    """
    for _ in range(rounds):
        loop.diag.clear()
        run_plant(loop, plant, 3)
        if loop.c.spin_until(lambda: bool(loop.feedback_status()), 0.3):
            status = loop.feedback_status()
            if status.get('state') == 'closed loop':
                return status
    raise AssertionError(f'the feedback status never read closed loop: {loop.feedback_status()}')


def figures(shown: str) -> list:
    """Return the numbers of a feedback status value ``commanded x, measured y, correction z``."""
    return [float(part.split()[-1]) for part in shown.split(', ')]


def test_loop_closed_through_a_foreign_plant_brings_its_truth_to_the_target(client):
    plant = arms()
    with NodeProcess('distributor', BASE, DOMAIN) as proc:
        loop = Loop(client)
        loop.start()
        open_loop = run_plant(loop, plant, 10)
        assert np.abs(open_loop[-1] - TARGET).max() > 1.0  # gains and biases: far off
        result = client.set_parameters('wrench_distributor',
                                       [Parameter('internal_load_feedback', value=True)])
        assert result[0].successful, result[0].reason
        history = run_plant(loop, plant, 150)
        np.testing.assert_allclose(history[0], open_loop[-1], atol=0.5)  # bumpless
        np.testing.assert_allclose(history[-1], TARGET, atol=0.05, err_msg=proc.output())
        status = closed_loop_status(loop, plant)
        commanded, measured, correction = figures(status['squeeze(left,right)'])
        settled = settled_correction(plant, TARGET)[0]
        assert measured == pytest.approx(20.0, abs=0.05)
        assert correction == pytest.approx(settled, abs=0.05)
        assert commanded == pytest.approx(20.0 + settled, abs=0.05)
        assert 'Traceback' not in proc.output()


@pytest.mark.parametrize('fault', ['absent', 'stale', 'other_basis', 'unlabelled'])
def test_measurement_faults_suspend_the_loop_and_leave_the_commands_open_loop(client, fault):
    plant = arms()
    params = dict(BASE, internal_load_feedback=True)
    with NodeProcess('distributor', params, DOMAIN) as proc:
        loop = Loop(client)
        loop.start()
        first = loop.send()
        names = NAMES
        if fault == 'stale':  # a few good measurements, then none
            run_plant(loop, plant, 5)
        elif fault in ('other_basis', 'unlabelled'):
            labels = list(reversed(names)) if fault == 'other_basis' else []
            for _ in range(10):
                loop.meas.publish(measurement(labels, np.full(len(names), -50.0)))
                assert loop.send() is not None
        expect = {'absent': 'no measured internal load', 'stale': 'stale',
                  'other_basis': 'another basis', 'unlabelled': 'no basis labels'}[fault]
        key = {'absent': 'feedback_suspended_stale', 'stale': 'feedback_suspended_stale',
               'other_basis': 'feedback_rejected_basis',
               'unlabelled': 'feedback_rejected_basis'}[fault]
        assert client.spin_until(lambda: any(
            expect in m for m in diag_messages(loop.diag, 'wrench_distributor: feedback')), 4.0), \
            diag_messages(loop.diag, 'wrench_distributor: feedback')
        assert client.spin_until(lambda: int(loop.counters().get(key, '0')) >= 1, 3.0)
        assert any(level_of(s) == WARN for a in loop.diag for s in a.status
                   if s.name == 'wrench_distributor: feedback')
        commands = loop.send()
        np.testing.assert_allclose(resultant(commands), WRENCH, atol=1e-9)
        if fault != 'stale':  # nothing usable ever came: still the open-loop commands
            np.testing.assert_allclose(commands, first, atol=1e-12)
        assert 'Traceback' not in proc.output()


def test_command_topic_without_subscriber_is_warned_and_counted(client):
    diag = client.collect(DiagnosticArray, '/diagnostics')
    client.collect(WrenchStamped, 'left/wrench_command')  # subscribed before the node starts
    params = dict(BASE, command_topics=['left/wrench_command', 'nobody/listens'],
                  no_subscriber_grace=1.5)
    with NodeProcess('distributor', params, DOMAIN) as proc:
        diag.clear()

        def outputs():
            return diag_messages(diag[-1:], 'wrench_distributor: outputs')

        def counted():
            return int(diag_values(diag, 'wrench_distributor: distribution').get(
                'no_subscriber', '0'))
        assert client.spin_until(lambda: any('nobody/listens' in m and 'no subscriber' in m
                                             for m in outputs()), 10.0), proc.output()
        assert not any('left/wrench_command' in m for m in outputs())
        assert any(level_of(s) == WARN for s in diag[-1].status
                   if s.name == 'wrench_distributor: outputs')
        before = counted()
        assert before >= 1
        client.spin_for(1.0)
        assert counted() == before  # one episode, counted once
        client.collect(WrenchStamped, 'nobody/listens')  # a subscriber appears: the WARN ends
        assert client.spin_until(lambda: diag and not any(
            'no subscriber' in m for m in outputs()), 5.0)
        assert counted() == before
