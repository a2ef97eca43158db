"""Contacts that come and go: contact weights (docs/theory.md, section 16), as properties.

References are independent of the weighted code: the resultant by hand from the contact-frame
commands (``f' = R f``, ``t' = R t + p x (R f)``), the distribution without a contact built as a
``LoadDistributor`` of the remaining contacts, the one-step change between two such sets, the
barycentric coordinates of three feet, and directions worked out in the test.
"""
from hypothesis import assume, given, HealthCheck, settings
from hypothesis import strategies as st
import numpy as np
import pytest

from wrench_distribution.core import (
    Contact, DistributionOptions, InvalidInputError, LoadDistributor, matrix_to_quaternion, ObjectModel,
    quaternion_to_matrix, UnrealisableWrenchError,
)
from wrench_distribution.core.contact_weights import MAX_TRANSITIONS
from wrench_distribution.core.transitions import carry_internal_load, WeightedDistributor

SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=60)
LAYOUTS = ('general', 'two', 'collinear', 'coplanar', 'outside_hull', 'near_coincident')
FEET = [('lf', (0.3, 0.2, 0)), ('rf', (0.3, -0.2, 0)), ('lh', (-0.3, 0.2, 0)), ('rh', (-0.3, -0.2, 0))]


@st.composite
def weighted_grasps(draw, min_contacts=2, max_contacts=6):
    """Draw a grasp in any unit with some weights: contacts, model, options, weights, a wrench, the unit."""
    layout = draw(st.sampled_from(LAYOUTS))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    n = 2 if layout == 'two' else int(rng.integers(max(min_contacts, 3), max_contacts + 1))
    positions = rng.normal(size=(n, 3)) * 0.3
    com = positions.mean(axis=0) + rng.normal(size=3) * 0.05
    if layout == 'collinear':
        positions = np.outer(rng.normal(size=n), rng.normal(size=3)) + rng.normal(size=3)
    elif layout == 'coplanar':
        positions[:, 2] = 0.0
        com[2] = 0.4
    elif layout == 'outside_hull':
        com = positions.mean(axis=0) + 2.0 * rng.normal(size=3)
    elif layout == 'near_coincident':
        positions[-1] = positions[0] + 1e-7 * rng.normal(size=3)
    kind = draw(st.sampled_from(['rigid', 'point', 'mixed']))
    types = [kind if kind != 'mixed' else ('rigid' if k % 2 == 0 else 'point') for k in range(n)]
    unit = draw(st.sampled_from([1.0, 1e-3, 1e3]))   # lengths in m, km or mm
    contacts = [Contact(f'c{k}', t, unit * p, q) for k, (t, p, q) in
                enumerate(zip(types, positions, rng.normal(size=(n, 4))))]
    options = DistributionOptions(torque_share=draw(st.sampled_from([0.0, 0.4, 1.0])))
    weights = np.ones(n)
    moving = rng.choice(n, size=int(rng.integers(1, min(3, n) + 1)), replace=False)
    weights[moving] = rng.choice([0.0, 1e-9, 0.3, 0.5, 0.999, 1.0], size=moving.size)
    if not weights.any():
        weights[0] = 0.5
    wrench = np.r_[rng.normal(size=3) * 10.0, unit * rng.normal(size=3)]
    return contacts, ObjectModel(com=unit * com), options, weights, wrench, unit


def resultant_by_hand(contacts, com, commands):
    """Sum of contact-frame wrenches moved to the object frame about the centre of mass."""
    total = np.zeros(6)
    for contact, (force, torque) in zip(contacts, commands.reshape(-1, 2, 3)):
        rotation = quaternion_to_matrix(contact.orientation)
        moved = rotation @ force
        total[:3] += moved
        total[3:] += rotation @ torque + np.cross(np.array(contact.position) - com, moved)
    return total


def size(commands, length):
    """Per-contact sizes ``|f| + |t| / l0`` summed (docs/theory.md, 16.4)."""
    commands = np.asarray(commands).reshape(-1, 6)
    return float(np.linalg.norm(commands[:, :3], axis=1).sum() + np.linalg.norm(commands[:, 3:], axis=1).sum() / length)


def without(contacts, options, index):
    """Return the independent reference: the contacts and options of the set without contact ``index``."""
    keep = [c for k, c in enumerate(contacts) if k != index]
    mask = np.arange(len(contacts)) != index
    return keep, options.restricted(mask)


def commands_or_none(contacts, model, options, weights, wrench):
    try:
        return WeightedDistributor(contacts, model, options, weights).wrench_commands(wrench)
    except UnrealisableWrenchError:
        return None


@SETTINGS
@given(weighted_grasps())
def test_weights_all_one_are_todays_distribution(grasp):
    contacts, model, options, _, wrench, _ = grasp
    today = LoadDistributor(contacts, model, options)
    ones = np.ones(len(contacts))
    for weighted in (WeightedDistributor(contacts, model, options),
                     WeightedDistributor(contacts, model, options, ones)):
        np.testing.assert_array_equal(weighted.distributor.pseudo_inverse, today.pseudo_inverse)
        assert weighted.distributor.regime == today.regime
    np.testing.assert_array_equal(LoadDistributor(contacts, model, options, np.ones(len(contacts))).pseudo_inverse,
                                  today.pseudo_inverse)


@SETTINGS
@given(weighted_grasps(), st.sampled_from([0.0, 1e-12, 1e-6]))
def test_weight_zero_is_the_set_without_the_contact_and_its_command_is_zero(grasp, weight):
    contacts, model, options, _, wrench, unit = grasp
    n = len(contacts)
    index = n - 1
    weights = np.ones(n)
    weights[index] = weight
    reference_contacts, reference_options = without(contacts, options, index)
    reference = LoadDistributor(reference_contacts, model, reference_options)
    try:
        expected = reference.wrench_commands(wrench)
    except UnrealisableWrenchError:
        return
    got = WeightedDistributor(contacts, model, options, weights).wrench_commands(wrench)
    if weight == 0.0:
        assert np.all(got[index] == 0.0)      # the number 0, not a small one
        np.testing.assert_array_equal(got[:index], expected)
        return
    full = LoadDistributor(contacts, model, options).wrench_commands(wrench)
    length = reference.reference_length
    # the straight line between the two distributions (docs/theory.md, 16.2)
    assert size(got[:index] - expected, length) <= weight * size(full[:index] - expected, length) * (1 + 1e-6) \
        + 1e-9 * size(expected, length)
    assert size(got[index], length) <= weight * size(full[index], length) * (1 + 1e-6) + 1e-12 * size(full, length)


@SETTINGS
@given(weighted_grasps())
def test_resultant_is_exact_at_every_weight(grasp):
    contacts, model, options, weights, wrench, unit = grasp
    commands = commands_or_none(contacts, model, options, weights, wrench)
    if commands is None:
        return
    got = resultant_by_hand(contacts, np.array(model.com), commands)
    scale = np.r_[np.ones(3), np.full(3, 1.0 / unit)]
    lever = 1.0 + max(np.abs(np.array(c.position) - model.com).max() for c in contacts) / unit
    largest = np.abs(commands * np.r_[np.ones(3), np.full(3, 1 / unit)]).max()
    np.testing.assert_allclose(got * scale, wrench * scale, atol=1e-9 * lever * max(largest, 1.0))
    assert np.all(commands[weights == 0.0] == 0.0)
    point = np.array([c.type == 'point' for c in contacts])
    assert np.all(commands[point, 3:] == 0.0)


@SETTINGS
@given(st.sampled_from([1e-9, 1e-6, 1e-3, 0.5]), st.sampled_from([1e-3, 1.0, 1e3]), st.floats(0.05, 10.0),
       st.integers(0, 2 ** 32 - 1))
def test_a_resultant_that_a_subset_on_the_way_cannot_produce_is_refused_however_unlikely(
        leaving, unit, torque, seed):
    """A torque the subset of two point feet cannot produce is refused at any probability of that subset.

    Two point feet of four in transition leave, on the way, the subset of the two others, which
    cannot produce a torque about their line (docs/theory.md, 16.1 (a)): refused, naming it; a
    resultant every subset can produce is reproduced to rounding.
    """
    rng = np.random.default_rng(seed)
    contacts = [Contact(name, 'point', unit * np.array(p) + unit * 0.01 * rng.normal(size=3))
                for name, p in FEET]
    model = ObjectModel(com=(0.0, 0.0, 0.05 * unit))
    weights = np.array([1.0 - leaving, 1.0, 1.0, 1.0 - leaving])   # lf and rh in transition
    line = np.array(contacts[2].position) - np.array(contacts[1].position)   # rf -> lh, the pair left
    line /= np.linalg.norm(line)
    weighted = WeightedDistributor(contacts, model, DistributionOptions(), weights)
    about_the_line = np.r_[0.0, 0.0, 50.0, unit * torque * line]
    with pytest.raises(UnrealisableWrenchError, match='rf, lh alone cannot'):
        weighted.wrench_commands(about_the_line)
    lever = np.array(contacts[1].position) - np.array(model.com)
    force = np.array([1.0, -2.0, 50.0])
    producible = np.r_[force, np.cross(lever, force)]   # a force through rf: rf alone can produce it
    commands = weighted.wrench_commands(producible)
    got = resultant_by_hand(contacts, np.array(model.com), commands)
    np.testing.assert_allclose(got[:3], producible[:3], atol=1e-9 * 60)
    np.testing.assert_allclose(got[3:] / unit, producible[3:] / unit, atol=1e-9 * 60)


@SETTINGS
@given(weighted_grasps(), st.integers(0, 5), st.sampled_from([1e-3, 0.05]))
def test_commands_move_at_the_stated_rate(grasp, pick, step):
    """Lipschitz: |h(w + d e_i) - h(w)| <= L_i |d| (eq. 16.5), L_i no larger than a one-step change."""
    contacts, model, options, weights, wrench, unit = grasp
    i = pick % len(contacts)
    assume(weights[i] > 0.0)
    try:
        distributor = WeightedDistributor(contacts, model, options, weights)
        rate = distributor.weight_sensitivity(wrench)[i]
        here = distributor.wrench_commands(wrench, object_frame=True)
    except UnrealisableWrenchError:
        return
    assume(np.isfinite(rate))
    moved = weights.copy()
    moved[i] = max(weights[i] - step, 0.0)
    there = commands_or_none(contacts, model, options, moved, wrench)
    assume(there is not None)
    there = WeightedDistributor(contacts, model, options, moved).wrench_commands(wrench, object_frame=True)
    length = distributor.distributor.reference_length
    change = size(there - here, length)
    # with another contact of full weight the commands are affine in omega_i (Z = 1): the rate
    # holds over the whole step; otherwise it is the derivative (second order in the step)
    slack = 1e-6 if np.any(np.delete(weights, i) == 1.0) else 20.0 * step
    assert change <= rate * (weights[i] - moved[i]) * (1 + slack) + 1e-9 * (size(here, length) + rate)
    if np.sum(weights < 1.0) == 1 and weights[i] < 1.0:
        # one contact in transition: a straight line at exactly the rate of the one-step change
        all_in = LoadDistributor(contacts, model, options).wrench_commands(wrench, object_frame=True)
        rest, rest_options = without(contacts, options, i)
        try:
            out = LoadDistributor(rest, model, rest_options).wrench_commands(wrench, object_frame=True)
        except UnrealisableWrenchError:
            return
        step_change = size(all_in - np.insert(out, i, 0.0, axis=0), length)
        assert rate == pytest.approx(step_change, rel=1e-6, abs=1e-9 * size(all_in, length))
        assert change == pytest.approx(step_change * (weights[i] - moved[i]), rel=1e-5, abs=1e-8 * size(all_in, length))


def test_a_lifting_foot_shares_the_weight_linearly_and_the_masses_keep_the_centre():
    """Four feet at (+-1, +-1), the trunk over the three stance feet (docs/theory.md, 16.1-16.2)."""
    corners = [('lf', (1, 1, 0)), ('rf', (1, -1, 0)), ('lh', (-1, 1, 0)), ('rh', (-1, -1, 0))]
    feet = [Contact(n, 'point', p) for n, p in corners]
    model = ObjectModel(com=(-0.3, -0.3, 0.5))
    weight = np.array([0.0, 0.0, 200.0, 0.0, 0.0, 0.0])
    three = LoadDistributor(feet[1:], model).wrench_commands(weight)[:, 2]
    # barycentric coordinates of (-0.3, -0.3) in rf (1, -1), lh (-1, 1), rh (-1, -1), by hand
    np.testing.assert_allclose(three, 200.0 * np.array([0.35, 0.35, 0.3]), rtol=1e-9)
    four = LoadDistributor(feet, model).wrench_commands(weight)[:, 2]
    for omega in (0.0, 0.25, 0.5, 0.75, 1.0):
        d = WeightedDistributor(feet, model, None, [omega, 1, 1, 1])
        normal = d.wrench_commands(weight)[:, 2]
        np.testing.assert_allclose(normal, omega * four + (1 - omega) * np.r_[0.0, three], atol=1e-9)
        assert np.all(normal[1:] > 0.0) and normal[0] >= 0.0           # every foot pushes
        masses = d.distributor.virtual_masses
        assert np.all(masses > 0.0) and masses.sum() == pytest.approx(3 + omega)
        # eq. 53 on the ground plane: the masses' centroid under the centre of mass
        positions = np.array([f.position for f, live in zip(feet, d.live) if live])
        np.testing.assert_allclose((masses @ positions / masses.sum())[:2], [-0.3, -0.3], atol=1e-12)


def test_a_rigid_hand_over_passes_every_rate_check_and_keeps_the_resultant():
    """Two arms hand a box to a third: weights 1,1,0 to 0,1,1 at once (docs/theory.md, 16.3)."""
    arms = [Contact('a', 'rigid', (0, 0.3, 0)), Contact('b', 'rigid', (0, -0.3, 0), (0, 0, 1, 0)),
            Contact('c', 'rigid', (0.3, 0, 0.05), (0, 0, 0.7071068, 0.7071068))]
    model, options = ObjectModel(com=(0, 0, -0.1)), DistributionOptions(torque_share=0.3)
    wrench = np.array([1.0, 2.0, -50.0, 3.0, 1.0, 2.0])
    ticks = 200

    def state(x):
        weights = np.array([1 - x, 1, x])
        d = WeightedDistributor(arms, model, options, weights)
        # the rates from inside the live set (a released contact's rate is its limit from above)
        inside = WeightedDistributor(arms, model, options, np.maximum(weights, 1e-12))
        return d.wrench_commands(wrench), inside.weight_sensitivity(wrench), inside.distributor.reference_length

    previous = state(0.0)
    for tick in range(1, ticks + 1):
        current = state(tick / ticks)
        commands = current[0]
        np.testing.assert_allclose(resultant_by_hand(arms, np.array(model.com), commands), wrench, atol=1e-9)
        # the derivative along the ramp is -d/d omega_a + d/d omega_c, each linear along it: its size is
        # at most the larger of its sizes at the two ends (docs/theory.md, 16.4)
        bound = (max(previous[1][0], current[1][0]) + max(previous[1][2], current[1][2])) / ticks
        assert size(commands - previous[0], previous[2]) <= bound * (1 + 1e-6) + 1e-9
        previous = current
    assert np.all(WeightedDistributor(arms, model, options, [0, 1, 1]).wrench_commands(wrench)[0] == 0.0)


@SETTINGS
@given(weighted_grasps(min_contacts=3))
def test_internal_load_elements_ramp_with_their_contacts_and_read_back(grasp):
    contacts, model, options, weights, wrench, unit = grasp
    try:
        d = WeightedDistributor(contacts, model, options, weights)
        d.wrench_commands(wrench)
    except UnrealisableWrenchError:
        return
    basis = d.distributor.basis_matrix
    live = np.flatnonzero(d.live)
    m = basis.shape[1]
    if m == 0:
        return
    lam = np.random.default_rng(3).normal(size=m) * 5.0
    synthesis = d.synthesize(wrench, lam)
    # the scale of each element: the product of the weights of the contacts it touches, by hand
    per_contact = np.abs(basis).reshape(len(live), 6, m).max(axis=1)
    expected = np.array([np.prod([d.weights[live[k]] for k in range(len(live))
                                  if per_contact[k, j] > 1e-12 * per_contact[:, j].max()]) for j in range(m)])
    np.testing.assert_allclose(synthesis.internal_load, expected * lam, rtol=1e-12, atol=0)
    assert np.all(synthesis.wrench_contact[~d.live] == 0.0)
    read = d.analyze(synthesis.wrench_contact).internal_load
    # an ill-conditioned grasp (contacts 1e-7 apart) amplifies the rounding by its gain (docs/theory.md, 6.1)
    gain = max(d.distributor.gain, 1.0)
    np.testing.assert_allclose(read, expected * lam, atol=1e-9 * gain * max(1.0, np.abs(lam).max() / min(unit, 1.0)))


def test_a_squeeze_on_a_lifting_foot_ramps_with_it_and_others_keep_theirs():
    feet = [Contact(n, 'point', p) for n, p in FEET]
    model = ObjectModel(com=(-0.05, 0.0, 0.4))
    handles = {'squeeze(lf,rh)': 20.0, 'squeeze(rf,lh)': 10.0}
    for omega in (1.0, 0.6, 0.2, 0.0):
        d = WeightedDistributor(feet, model, None, [omega, 1, 1, 1])
        internal = d.internal_wrench(handles, object_frame=True).reshape(4, 6)
        # lf and rh: the squeeze presses them together along the line joining them, omega * 20 N
        e = np.array([-0.6, -0.4, 0.0]) / np.hypot(0.6, 0.4)        # from lf towards rh
        lf_part = internal[0, :3]
        assert lf_part @ e == pytest.approx(omega * 20.0 + 0.0, abs=1e-9)
        # rf and lh keep their 10 N, pressing towards each other
        e2 = np.array([-0.6, 0.4, 0.0]) / np.hypot(0.6, 0.4)        # from rf towards lh
        assert internal[1, :3] @ e2 == pytest.approx(10.0, abs=1e-9)
        assert internal[2, :3] @ e2 == pytest.approx(-10.0, abs=1e-9)
        assert np.allclose(internal.reshape(4, 2, 3)[:, 0].sum(axis=0), 0.0, atol=1e-12)  # no resultant
    # at weight 0 the squeeze between the remaining feet is that of the three-foot set
    three = LoadDistributor(feet[1:], model)
    np.testing.assert_allclose(d.internal_wrench(handles).reshape(4, 6)[1:],
                               three.internal_wrench(three.internal_load_from_handles({'squeeze(rf,lh)': 10.0}))
                               .reshape(3, 6), atol=1e-12)


def test_an_applied_load_is_carried_over_when_a_foot_leaves():
    feet = [Contact(n, 'point', p) for n, p in FEET]
    model = ObjectModel(com=(-0.05, 0.0, 0.4))
    before = WeightedDistributor(feet, model, None, [1e-9, 1, 1, 1])
    after = WeightedDistributor(feet, model, None, [0, 1, 1, 1])
    applied = before.applied_load({'squeeze(rf,lh)': 10.0, 'squeeze(lf,rh)': 5.0})
    carried = carry_internal_load(before, after, applied)
    kept = np.repeat([0, 1, 1, 1], 6)
    np.testing.assert_allclose(after.internal_wrench(carried), before.internal_wrench(applied) * kept, atol=1e-6)


@SETTINGS
@given(weighted_grasps(min_contacts=3), st.sampled_from([1e-3, 1.0, 1e3]), st.integers(0, 2 ** 32 - 1))
def test_weighted_distribution_is_the_same_in_any_unit_and_frame(grasp, scale, seed):
    contacts, model, options, weights, wrench, unit = grasp
    rng = np.random.default_rng(seed)
    rotation, shift = quaternion_to_matrix(rng.normal(size=4)), rng.normal(size=3)
    moved = [Contact(c.name, c.type, scale * (rotation @ np.array(c.position)) + shift,
                     matrix_to_quaternion(rotation @ c.rotation)) for c in contacts]
    moved_model = ObjectModel(com=scale * (rotation @ np.array(model.com)) + shift)
    moved_options = DistributionOptions(torque_share=options.torque_share,
                                        basis_reference_axis=rotation @ np.array(options.basis_reference_axis))
    base = commands_or_none(contacts, model, options, weights, wrench)
    other = commands_or_none(moved, moved_model, moved_options, weights,
                             np.r_[rotation @ wrench[:3], scale * (rotation @ wrench[3:])])
    assert (base is None) == (other is None)
    if base is None:
        return
    per_unit = np.r_[np.ones(3), np.full(3, scale)]
    np.testing.assert_allclose(other, base * per_unit, atol=1e-7 * np.abs(base * per_unit).max())
    a = WeightedDistributor(contacts, model, options, weights)
    b = WeightedDistributor(moved, moved_model, moved_options, weights)
    assert a.basis_names == b.basis_names
    np.testing.assert_allclose(a.element_scales, b.element_scales)


def test_weights_are_checked():
    contacts = [Contact('a', 'point', (0, 0, 0)), Contact('b', 'point', (1, 0, 0))]
    with pytest.raises(InvalidInputError, match=r'\[0, 1\]: a=1.5'):
        WeightedDistributor(contacts, None, None, [1.5, 1])
    with pytest.raises(InvalidInputError, match='NaN'):
        WeightedDistributor(contacts, None, None, [np.nan, 1])
    with pytest.raises(InvalidInputError, match='every contact has weight 0'):
        WeightedDistributor(contacts, None, None, [0, 0])
    many = [Contact(f'c{k}', 'point', (np.cos(k), np.sin(k), 0.1 * k)) for k in range(MAX_TRANSITIONS + 2)]
    with pytest.raises(InvalidInputError, match=f'at most {MAX_TRANSITIONS} contacts'):
        WeightedDistributor(many, None, None, np.full(len(many), 0.5))
    with pytest.raises(InvalidInputError, match='weight 0 is released'):
        LoadDistributor(contacts, None, None, [0, 1])
