"""Which fingers a hand holding a ball against gravity may release (no ROS).

The demo's regrasp (``config/demo_hand_regrasp.yaml``) cups the ball in a palm under it; the
plain three-finger hand (``config/demo_three_finger_hand.yaml``) holds it by three point
fingertips alone. The references are derived here: two point contacts produce no torque about
the line between them, so they hold a weight only when its line meets theirs; a fingertip at
latitude ``phi`` on a sphere pushes up at most ``f_n (mu cos phi - sin phi)``.
"""
from hypothesis import given, settings, strategies as st
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from wrench_distribution.core import Contact, ObjectModel
from wrench_distribution.core.release import check_transition
from wrench_distribution.sim.reports.series import Series
from wrench_distribution.sim.reports.transitions import _refused
from wrench_distribution.sim.scenarios.sections import load_sections, validate_sections

GRAVITY = 9.81


def _hand(name: str, friction=None) -> tuple:
    """Return the scenario's contacts (its friction, or ``friction``), its object, and the weight to carry."""
    sim = validate_sections(load_sections(name))['object_sim']
    n = len(sim['effectors'])
    positions = np.reshape(sim['contact_positions'], (n, 3))
    quaternions = np.reshape(sim['contact_orientations'], (n, 4))
    mu = sim['friction_coefficients'] if friction is None else [friction] * n
    contacts = [Contact(e, t, tuple(p), tuple(q), friction=m) for e, t, p, q, m in
                zip(sim['effectors'], sim['contact_types'], positions, quaternions, mu)]
    mass, com = sim['object_mass'], np.asarray(sim['object_com'], float)
    # what the contacts must apply: the weight's opposite, through the centre of mass
    return contacts, ObjectModel(com=tuple(com), mass=mass), np.r_[0.0, 0.0, mass * GRAVITY, 0.0, 0.0, 0.0]


def _without(contacts, name: str) -> np.ndarray:
    return np.array([0.0 if c.name == name else 1.0 for c in contacts])


def _moment_about_line(first, second, com, force) -> float:
    """Moment (N m) of a force through ``com`` about the line through two points."""
    axis = np.subtract(second, first) / np.linalg.norm(np.subtract(second, first))
    return float(axis @ np.cross(np.subtract(com, first), force))


@pytest.mark.parametrize('friction', [None, 1.0])
def test_three_point_fingertips_alone_can_release_none(friction):
    """Two fingertips cannot hold the off-centre ball: refused as unrealisable, whatever the friction."""
    contacts, body, load = _hand('three_finger_hand', friction)
    for finger in contacts:
        kept = [c for c in contacts if c.name != finger.name]
        moment = _moment_about_line(kept[0].position, kept[1].position, body.com, load[:3])
        assert abs(moment) > 1e-4  # the weight's line misses theirs by more than a tenth of a mm
        verdict = check_transition(contacts, body, None, None, _without(contacts, finger.name), load)
        assert not verdict.allowed and verdict.reason == 'unrealisable', verdict
        assert finger.name not in verdict.contacts and 'torque about that line' in verdict.message


angles = st.floats(-np.pi, np.pi)


@settings(max_examples=25, deadline=None)
@given(azimuths=st.lists(angles, min_size=3, max_size=3), latitudes=st.lists(st.floats(-1.2, 1.2), min_size=3,
       max_size=3), mu=st.floats(0.2, 2.0), com=st.lists(st.floats(-0.01, 0.01), min_size=3, max_size=3))
def test_no_placement_or_friction_lets_two_point_fingertips_carry_a_weight_off_their_line(azimuths, latitudes,
                                                                                          mu, com):
    """Any three fingertips on a 4 cm ball, any friction: two that miss the weight's line cannot carry it alone."""
    points = 0.04 * np.column_stack([np.cos(latitudes) * np.cos(azimuths), np.cos(latitudes) * np.sin(azimuths),
                                     np.sin(latitudes)])
    weight = np.array([0.0, 0.0, 0.3 * GRAVITY])
    apart = np.linalg.norm(points[1] - points[2])
    if apart < 1e-3 or abs(_moment_about_line(points[1], points[2], com, weight)) < 1e-5:
        return  # two fingertips on one spot, or on the weight's line: no claim
    frames = [Rotation.align_vectors([-p], [[0.0, 0.0, 1.0]])[0].as_quat() for p in points]  # z inward
    contacts = [Contact(name, 'point', tuple(p), tuple(q), friction=mu)
                for name, p, q in zip(('thumb', 'index', 'middle'), points, frames)]
    verdict = check_transition(contacts, ObjectModel(com=tuple(com), mass=0.3), None, None, [0.0, 1.0, 1.0],
                               np.r_[weight, 0.0, 0.0, 0.0])
    assert not verdict.allowed and verdict.reason == 'unrealisable', verdict


def test_the_cupped_hand_releases_any_finger_but_not_its_palm():
    """Palm and two fingertips span every wrench; three fingertips above latitude atan(mu) cannot push up."""
    contacts, body, load = _hand('hand_regrasp')
    palm, fingers = contacts[0], contacts[1:]
    for finger in fingers:
        kept = [c for c in contacts if c.name != finger.name]
        assert _grasp_rank(kept) == 6  # three points not on one line
        verdict = check_transition(contacts, body, None, None, _without(contacts, finger.name), load)
        assert verdict.allowed, verdict.message
    for finger in fingers:  # the inward normal's vertical part is -sin(latitude): pushing down
        normal = Rotation.from_quat(finger.orientation).apply([0.0, 0.0, 1.0])
        assert np.allclose(normal, -np.asarray(finger.position) / np.linalg.norm(finger.position), atol=1e-6)
        latitude = np.arcsin(-normal[2])
        # the largest upward force inside the cone, per newton pushed: negative, so none carries the ball
        assert finger.friction * np.cos(latitude) - np.sin(latitude) < -0.1
    verdict = check_transition(contacts, body, None, None, _without(contacts, palm.name), load)
    assert not verdict.allowed and verdict.reason == 'friction', verdict
    assert 'without palm' in verdict.message


def _grasp_rank(contacts) -> int:
    """Rank of the 6 x 3k map from point forces to the resultant about the origin."""
    columns = [np.vstack([np.eye(3), np.cross(np.eye(3), c.position).T]) for c in contacts]
    return int(np.linalg.matrix_rank(np.hstack(columns), tol=1e-9))


def test_an_entry_the_actual_weights_never_follow_is_marked_refused():
    """The report reads a refused entry from the distributor's actual weights (references by hand)."""
    labels = ['palm;thumb']
    stayed = Series(t=np.array([5.9, 6.0, 6.2, 6.4]), v=np.ones((4, 2)), labels=labels)
    assert _refused(stayed, {'palm': [1.0, 0.0]}, 6.0, 6.4)
    moved = Series(t=stayed.t, v=np.array([[1.0, 1.0], [1.0, 1.0], [1.0, 0.6], [1.0, 0.0]]), labels=labels)
    assert not _refused(moved, {'thumb': [1.0, 0.0]}, 6.0, 6.4)
    assert _refused(moved, {'palm': [1.0, 0.0]}, 6.0, 6.4)
    assert not _refused(None, {'palm': [1.0, 0.0]}, 6.0, 6.4)  # not recorded: counted as accepted
    assert not _refused(stayed, {}, 6.0, 6.4)
