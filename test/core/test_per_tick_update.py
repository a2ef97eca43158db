"""The per-tick update (``moved``): a new geometry and weights give what a fresh build gives.

The reference is a distributor built afresh from :class:`Contact` objects at the new poses and
weights (``WeightedDistributor(contacts, model, options, weights)``), which shares none of the
update's reuse: no subset maps, no basis selection plan, no skipped checks. Geometries are those
of the contact-weight properties (two contacts, collinear, coplanar, centre of mass outside the
hull, nearly coincident), in m, km or mm, at every torque share, with weights in ``[0, 1]``.
"""
from hypothesis import given, HealthCheck, settings
from hypothesis import strategies as st
import numpy as np
import pytest
from test_contact_weights import weighted_grasps

from wrench_distribution.core import Contact, InvalidInputError, LoadDistributor, UnrealisableWrenchError
from wrench_distribution.core.contacts import ContactLayout
from wrench_distribution.core.transitions import WeightedDistributor

SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=60)
#: Relative agreement of the update with a fresh build.
RELATIVE = 1e-9


def moved_contacts(contacts, positions, quaternions):
    """Return the contacts at other poses, as :class:`Contact` objects (the fresh build's input)."""
    return [Contact(c.name, c.type, tuple(p), tuple(q), c.friction, c.normal)
            for c, p, q in zip(contacts, positions, quaternions)]


def new_poses(contacts, rng, motion, unit):
    """Positions and quaternions moved by ``motion`` (relative to the grasp's size) from the contacts'."""
    positions = np.array([c.position for c in contacts], float)
    quaternions = np.array([c.orientation for c in contacts], float)
    size = max(float(np.ptp(positions, axis=0).max()), 1e-3 * unit)
    return positions + motion * size * rng.normal(size=positions.shape), \
        quaternions + motion * rng.normal(size=quaternions.shape)


def new_weights(weights, rng, keep_live):
    """Other weights in ``[0, 1]``: on the same contacts of positive weight, or anywhere (0 included)."""
    if keep_live:
        changed = weights.copy()
        moving = (weights > 0) & (weights < 1)
        changed[moving] = np.clip(weights[moving] + rng.uniform(-0.2, 0.2, size=int(moving.sum())), 1e-6, 1 - 1e-6)
        return changed
    changed = rng.choice([0.0, 1e-9, 0.25, 0.7, 1.0, 1.0, 1.0], size=weights.size)
    if not changed.any():
        changed[-1] = 0.5
    return changed


def commands(distributor, wrench, internal=None, object_frame=False):
    """Return the commands, or the exception's class when the wrench is refused."""
    try:
        return distributor.wrench_commands(wrench, internal, object_frame)
    except UnrealisableWrenchError:
        return UnrealisableWrenchError


def assert_same(got, expected):
    """``got`` equals ``expected`` to :data:`RELATIVE` of the largest entry (a refusal equals a refusal)."""
    if expected is UnrealisableWrenchError or got is UnrealisableWrenchError:
        assert got is expected
        return
    scale = max(float(np.abs(expected).max()), 1e-300)
    np.testing.assert_allclose(got, expected, rtol=0, atol=RELATIVE * scale)


def assert_same_distribution(updated, fresh, wrench):
    """Assert that the update answers as the fresh build: commands both ways, basis, loads, analysis."""
    assert updated.live_names == fresh.live_names
    assert updated.distributor.regime.name == fresh.distributor.regime.name
    for object_frame in (False, True):
        assert_same(commands(updated, wrench, None, object_frame), commands(fresh, wrench, None, object_frame))
    assert updated.basis_names == fresh.basis_names
    np.testing.assert_array_equal(updated.distributor.basis_matrix, fresh.distributor.basis_matrix)
    m = fresh.distributor.internal_dimension
    if not m:
        return
    lam = np.linspace(-3.0, 5.0, m)
    np.testing.assert_allclose(updated.applied_load(lam), fresh.applied_load(lam), rtol=0, atol=1e-12 * 5)
    for object_frame in (False, True):
        assert_same(commands(updated, wrench, updated.internal_wrench(lam, object_frame), object_frame),
                    commands(fresh, wrench, fresh.internal_wrench(lam, object_frame), object_frame))
    handle = {fresh.basis_names[0]: 7.0}
    if '_' not in fresh.basis_names[0]:                          # a physical handle, not balanced_*
        assert_same(updated.internal_wrench(handle), fresh.internal_wrench(handle))
    synthesis = fresh.synthesize(wrench, lam) if commands(fresh, wrench) is not UnrealisableWrenchError else None
    if synthesis is not None:
        measured = synthesis.wrench_contact
        assert_same(updated.analyze(measured).internal_load, fresh.analyze(measured).internal_load)


@SETTINGS
@given(weighted_grasps(), st.integers(0, 2 ** 32 - 1), st.sampled_from([0.0, 1e-6, 1e-3, 0.3]),
       st.booleans(), st.integers(1, 4))
def test_an_update_at_new_poses_and_weights_is_a_fresh_build(grasp, seed, motion, keep_live, ticks):
    contacts, model, options, weights, wrench, unit = grasp
    rng = np.random.default_rng(seed)
    layout = ContactLayout(contacts)
    updated = WeightedDistributor(contacts, model, options, weights)
    updated.basis_names                                         # built: its selection is reused
    for _ in range(ticks):
        positions, quaternions = new_poses(contacts, rng, motion, unit)
        weights = new_weights(weights, rng, keep_live)
        updated = updated.moved(layout.arrays(positions, quaternions), weights)
        fresh = WeightedDistributor(moved_contacts(contacts, positions, quaternions), model, options, weights)
        assert_same_distribution(updated, fresh, wrench)
        assert np.all(commands(updated, wrench)[weights == 0.0] == 0.0) \
            if commands(updated, wrench) is not UnrealisableWrenchError else True


@SETTINGS
@given(weighted_grasps(), st.integers(0, 2 ** 32 - 1), st.booleans())
def test_an_update_of_the_weights_alone_is_a_fresh_build(grasp, seed, keep_live):
    contacts, model, options, weights, wrench, _ = grasp
    rng = np.random.default_rng(seed)
    previous = WeightedDistributor(contacts, model, options, weights)
    previous.basis_names
    weights = new_weights(weights, rng, keep_live)
    assert_same_distribution(previous.moved(None, weights), WeightedDistributor(contacts, model, options, weights),
                             wrench)


@SETTINGS
@given(weighted_grasps(), st.integers(0, 2 ** 32 - 1), st.sampled_from([1e-6, 1e-2]))
def test_load_distributor_moved_is_a_fresh_build(grasp, seed, motion):
    contacts, model, options, _, wrench, unit = grasp
    rng = np.random.default_rng(seed)
    weights = rng.uniform(0.05, 1.0, size=len(contacts))
    positions, quaternions = new_poses(contacts, rng, motion, unit)
    previous = LoadDistributor(contacts, model, options)
    previous.basis_names
    updated = previous.moved(ContactLayout(contacts).arrays(positions, quaternions), weights)
    fresh = LoadDistributor(moved_contacts(contacts, positions, quaternions), model, options, weights)
    np.testing.assert_allclose(updated.pseudo_inverse, fresh.pseudo_inverse, rtol=0,
                               atol=RELATIVE * np.abs(fresh.pseudo_inverse).max())
    assert updated.basis_names == fresh.basis_names
    np.testing.assert_array_equal(updated.basis_matrix, fresh.basis_matrix)
    assert updated.regime == fresh.regime
    same = previous.moved(None, None)                           # the same poses, weights 1
    np.testing.assert_array_equal(same.pseudo_inverse, previous.pseudo_inverse)


def trunk():
    """Four point feet with friction under a trunk, centre of mass 0.4 above the middle."""
    feet = [('lf', (0.3, 0.2, -0.4)), ('rf', (0.3, -0.2, -0.4)), ('lh', (-0.3, 0.2, -0.4)), ('rh', (-0.3, -0.2, -0.4))]
    return [Contact(name, 'point', p, friction=0.6) for name, p in feet]


@pytest.mark.parametrize('unit', [1.0, 1e-3, 1e3])
def test_a_walking_trunk_keeps_its_elements_tick_after_tick_by_reselection(unit):
    """Small motions keep the greedy choice, made again from the plan (its object is passed on)."""
    contacts = [Contact(c.name, c.type, unit * np.array(c.position), c.orientation, c.friction) for c in trunk()]
    layout, quaternions = ContactLayout(contacts), np.tile([0.0, 0.0, 0.0, 1.0], (4, 1))
    start = np.array([c.position for c in contacts])
    updated = WeightedDistributor(contacts, None, None, np.array([0.5, 1, 1, 1]))
    names, plan = updated.basis_names, updated.distributor.basis_plan
    assert plan is not None and len(names) == 6                 # 4 x 3 forces less 6
    for tick in range(1, 200):
        positions = start + unit * 1e-3 * tick * np.array([[1.0, 0.2, 0.1], [0.5, 0, 0], [0, 0, 0], [0.2, -0.1, 0]])
        weights = np.array([0.5 - tick / 400, 1, 1, 1])
        updated = updated.moved(layout.arrays(positions, quaternions), weights)
        assert updated.basis_names == names
        assert updated.distributor.basis_plan is plan          # made again, not searched afresh
    fresh = WeightedDistributor(moved_contacts(contacts, positions, quaternions), None, None, weights)
    assert fresh.basis_names == names
    np.testing.assert_array_equal(updated.distributor.basis_matrix, fresh.distributor.basis_matrix)


def test_a_selection_near_its_threshold_is_made_afresh_and_handles_do_not_see_it():
    """Where the greedy choice changes, the update follows the fresh one; a handle's wrench does not jump."""
    contacts = trunk()
    layout, quaternions = ContactLayout(contacts), np.tile([0.0, 0.0, 0.0, 1.0], (4, 1))
    start = np.array([c.position for c in contacts])
    updated = WeightedDistributor(contacts)
    updated.basis_names
    handle, previous_wrench, seen = {'squeeze(lf,rh)': 10.0}, None, set()
    # lf swings across the line rf-lh to behind lh and rh: the elements chosen change on the way
    for tick in range(0, 161):
        positions = start.copy()
        positions[0] = start[0] + np.array([-0.6, -0.2, 0.0]) * tick / 100
        updated = updated.moved(layout.arrays(positions, quaternions))
        fresh = WeightedDistributor(moved_contacts(contacts, positions, quaternions))
        assert updated.basis_names == fresh.basis_names
        seen.add(tuple(updated.basis_names))
        wrench = updated.internal_wrench(handle, object_frame=True)
        np.testing.assert_allclose(wrench, fresh.internal_wrench(handle, object_frame=True), rtol=0, atol=1e-9)
        if previous_wrench is not None:
            assert np.abs(wrench - previous_wrench).max() < 0.5      # 10 N, moving 6 mm a tick
        previous_wrench = wrench
    assert len(seen) > 1


def test_moved_takes_the_same_contacts_only():
    contacts = trunk()
    distributor = WeightedDistributor(contacts)
    other = ContactLayout([Contact('x' + c.name, c.type, c.position) for c in contacts])
    arrays = other.arrays(np.zeros((4, 3)) + np.arange(4)[:, None], np.tile([0.0, 0.0, 0.0, 1.0], (4, 1)))
    with pytest.raises(InvalidInputError, match='same contacts'):
        distributor.moved(arrays)
    with pytest.raises(InvalidInputError, match='same contacts'):
        distributor.distributor.moved(arrays)
    with pytest.raises(InvalidInputError, match='weight 0'):
        distributor.moved(None, np.zeros(4))
    with pytest.raises(InvalidInputError, match=r'\[0, 1\]'):
        distributor.moved(None, np.array([1.0, 1.0, 1.0, 1.5]))
