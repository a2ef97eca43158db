"""Property tests of the core over random and adversarial geometries (hypothesis).

Every expectation is an invariant: the resultant is reproduced, results do not depend on
the unit of length, on a rotation of the object frame or on its origin, the internal-load
state does not depend on the admissible manipulating distribution, and round trips close.
"""
from hypothesis import assume, given, HealthCheck, settings
from hypothesis import strategies as st
import numpy as np
import pytest

from core_cases import assert_refusal_is_legitimate
from wrench_distribution.core import (
    Contact, DistributionOptions, InvalidInputError, LoadDistributor, matrix_to_quaternion, ObjectModel,
    quaternion_to_matrix, UnrealisableWrenchError, WrenchDistributionError,
)

SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def problems(draw, min_contacts=2, max_contacts=8, share=None):
    """Draw a random grasp: positions, types, frames, centre of mass, options and a wrench."""
    n = draw(st.integers(min_contacts, max_contacts))
    seed = draw(st.integers(0, 2 ** 32 - 1))
    rng = np.random.default_rng(seed)
    layout = draw(st.sampled_from(['general', 'collinear', 'coplanar', 'duplicate']))
    positions = rng.normal(size=(n, 3)) * draw(st.sampled_from([0.05, 0.5, 3.0]))
    if layout == 'collinear':
        positions = np.outer(rng.normal(size=n), rng.normal(size=3)) + rng.normal(size=3)
    elif layout == 'coplanar':
        positions[:, 2] = 0.0
    elif layout == 'duplicate':
        positions[-1] = positions[0]
    types = [draw(st.sampled_from(['rigid', 'point'])) for _ in range(n)]
    if draw(st.booleans()):
        types[0] = 'rigid'
    quaternions = rng.normal(size=(n, 4))
    contacts = [Contact(f'c{i}', t, p, q) for i, (t, p, q) in enumerate(zip(types, positions, quaternions))]
    com = positions.mean(0) + rng.normal(size=3) * draw(st.sampled_from([0.0, 0.1, 1.0]))
    torque_share = draw(st.sampled_from([0.0, 0.3, 1.0])) if share is None else share
    wrench = rng.normal(size=6) * draw(st.sampled_from([1.0, 100.0]))
    return contacts, ObjectModel(com=com), DistributionOptions(torque_share=torque_share), wrench, rng


def relative_error(a, b, size=0.0):
    """Largest difference relative to the largest magnitude involved (rounding scales with it)."""
    return np.abs(np.asarray(a) - np.asarray(b)).max() / max(np.abs(b).max(), size, 1e-300)


def lever(contacts):
    return 1.0 + max(np.abs(c.position).max() for c in contacts)


@SETTINGS
@given(problems(max_contacts=12))
def test_resultant_reproduced_whenever_realisable(problem):
    contacts, model, options, wrench, _ = problem
    d = LoadDistributor(contacts, model, options)
    g = d.grasp_matrix
    # Independent realisability test: least squares on G itself.
    h, *_ = np.linalg.lstsq(g[:, d.active_components], wrench, rcond=None)
    realisable = relative_error(g[:, d.active_components] @ h, wrench, np.abs(h).max() * lever(contacts)) < 1e-9
    try:
        s = d.synthesize(wrench)
    except UnrealisableWrenchError as error:
        assert not realisable and 'cannot be produced' in str(error)
        assert d.regime.name == 'extension' and 'rank_deficient_grasp' in d.regime.reasons
        return
    assert realisable
    size = np.abs(s.wrench_object).max() * lever(contacts)
    assert relative_error(g @ s.wrench_object.reshape(-1), wrench, size) < 1e-9
    assert np.all(np.isfinite(s.wrench_contact))
    point = np.array([c.type == 'point' for c in contacts])
    assert np.all(s.wrench_contact[point, 3:] == 0.0)
    if d.regime.name == 'paper':
        assert d.regime.reasons == ()


def similarity(rng):
    rotation = quaternion_to_matrix(rng.normal(size=4))
    return rotation, rng.normal(size=3) * 2.0


def transformed(contacts, model, options, rotation, shift, scale):
    """Describe the same physical grasp in a rotated, shifted and rescaled object frame."""
    moved = [Contact(c.name, c.type, scale * (rotation @ np.array(c.position)) + shift,
                     matrix_to_quaternion(rotation @ c.rotation)) for c in contacts]
    new_model = ObjectModel(com=scale * (rotation @ np.array(model.com)) + shift)
    new_options = DistributionOptions(
        torque_share=options.torque_share,
        basis_reference_axis=rotation @ np.array(options.basis_reference_axis))
    return moved, new_model, new_options


@SETTINGS
@given(problems(), st.sampled_from([1.0, 1000.0, 0.001]))
def test_invariant_to_units_rotation_and_origin(problem, scale):
    contacts, model, options, wrench, rng = problem
    points = np.array([c.position for c in contacts] + [model.com])
    assume(np.ptp(points, axis=0).max() > 0)  # with every point coincident no length exists
    rotation, shift = similarity(rng)
    d = LoadDistributor(contacts, model, options)
    moved = LoadDistributor(*transformed(contacts, model, options, rotation, shift, scale))
    assert moved.regime.reasons == d.regime.reasons
    assert moved.basis_names == d.basis_names
    new_wrench = np.r_[rotation @ wrench[:3], scale * (rotation @ wrench[3:])]
    try:
        s = d.synthesize(wrench)
    except UnrealisableWrenchError:
        assert_refusal_is_legitimate(contacts, model.com, wrench)
        with pytest.raises(UnrealisableWrenchError):
            moved.synthesize(new_wrench)
        return
    s2 = moved.synthesize(new_wrench)
    unit = np.r_[np.ones(3), np.full(3, scale)]
    tolerance = 1e-7 * np.abs(s.wrench_contact * unit).max()
    np.testing.assert_allclose(s2.wrench_contact, s.wrench_contact * unit, atol=tolerance)
    # the analysis of the same physical measurement
    measured = s.wrench_contact + rng.normal(size=s.wrench_contact.shape) * [1, 1, 1, 0.1, 0.1, 0.1]
    a, a2 = d.analyze(measured), moved.analyze(measured * unit)
    np.testing.assert_allclose(a2.internal_contact, a.internal_contact * unit,
                               atol=1e-7 * np.abs(measured * unit).max())
    lam_unit = np.array([scale if u == 'N*m' else 1.0 for u in d.basis_units])
    np.testing.assert_allclose(a2.internal_load, a.internal_load * lam_unit,
                               atol=1e-6 * max(1.0, np.abs(a.internal_load * lam_unit).max()))
    np.testing.assert_allclose(a2.internal_load_norm, a.internal_load_norm,
                               atol=1e-7 * max(1.0, a.internal_load_norm))


@SETTINGS
@given(problems(share=0.0))
def test_invariant_independent_of_torque_share(problem):
    contacts, model, _, wrench, rng = problem
    measured = rng.normal(size=(len(contacts), 6))
    results = [LoadDistributor(contacts, model, DistributionOptions(torque_share=s)).analyze(measured)
               for s in (0.0, 0.4, 1.0)]
    scale = np.abs(measured).max()
    for other in results[1:]:
        np.testing.assert_allclose(other.invariant_contact, results[0].invariant_contact, atol=1e-7 * scale)
        np.testing.assert_allclose(other.invariant_norm, results[0].invariant_norm, atol=1e-7 * scale)
        # the constraint wrenches differ by a manipulating-space element: same resultant
        np.testing.assert_allclose(other.resultant, results[0].resultant, atol=1e-9 * scale)


@SETTINGS
@given(st.integers(5, 9), st.integers(0, 2 ** 32 - 1))
def test_invariant_independent_of_virtual_masses_for_a_pure_force(n, seed):
    # With t_o = 0 the manipulating forces m_i f_o / m_o are linear in the masses, so any
    # admissible masses (eqs. 51, 53) give the same invariant internal-load wrench.
    rng = np.random.default_rng(seed)
    positions = rng.normal(size=(n, 3))
    base = np.ones(n)
    spread = positions - positions.mean(0)
    null = np.linalg.svd(np.vstack([np.ones(n), spread.T]))[2][4:]
    other = base + 0.3 * (null.T @ rng.normal(size=null.shape[0]))
    assume(other.min() > 0.05)
    contacts = [Contact(f'c{i}', 'point', p) for i, p in enumerate(positions)]
    model = ObjectModel(com=positions.mean(0))
    f_o = rng.normal(size=3)
    forces = np.tile(f_o / n, (n, 1)) + rng.normal(size=(n, 3))
    forces -= (forces.sum(0) - f_o) / n
    # zero the moment about the CoM with the least-norm correction (independent numpy lstsq)
    arms = positions - positions.mean(0)
    g = np.vstack([np.hstack([np.eye(3)] * n),
                   np.hstack([np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]]) for a in arms])])
    moment = np.cross(arms, forces).sum(0)
    correction = np.linalg.lstsq(g, np.r_[np.zeros(3), -moment], rcond=None)[0].reshape(n, 3)
    measured = np.c_[forces + correction, np.zeros((n, 3))]
    results = []
    for masses in (base, other):
        d = LoadDistributor(contacts, model, DistributionOptions(virtual_masses=list(masses)))
        assert d.regime.name == 'paper'
        results.append(d.analyze(measured))
    np.testing.assert_allclose(results[0].resultant[3:], 0.0, atol=1e-12)
    np.testing.assert_allclose(results[1].invariant_contact, results[0].invariant_contact, atol=1e-9)
    # and the linear read-outs differ exactly by the difference of the two h_m
    np.testing.assert_allclose(results[1].internal_object - results[0].internal_object,
                               results[0].manipulating_object - results[1].manipulating_object, atol=1e-9)


@SETTINGS
@given(problems(max_contacts=6))
def test_synthesize_then_analyze_returns_lambda_c(problem):
    contacts, model, options, wrench, rng = problem
    d = LoadDistributor(contacts, model, options)
    m = len(d.basis_names)
    assume(m > 0)
    try:
        d.synthesize(wrench)
    except UnrealisableWrenchError:
        assert_refusal_is_legitimate(contacts, model.com, wrench)
        return
    lam = rng.normal(size=m) * 10.0
    back = d.analyze(d.synthesize(wrench, lam).wrench_contact).internal_load
    np.testing.assert_allclose(back, lam, atol=1e-9 * max(1.0, np.abs(lam).max()) * d.gain)


def test_squeeze_round_trip_while_turning_dual_arm():
    from core_cases import dual_arm
    d = dual_arm()
    for wrench in ([0, 0, 49.05, 0, 0, 0], [3, -2, 49.05, 1.5, -0.7, 2.0]):
        s = d.synthesize(wrench, {'squeeze(left,right)': 20.0})
        a = d.analyze(s.wrench_contact)
        np.testing.assert_allclose(a.internal_load[d.basis_names.index('squeeze(left,right)')], 20.0,
                                   atol=1e-9)
        # 20 N each way along the line: the left effector pushes towards the right one
        np.testing.assert_allclose(s.internal_object[0, :3], [0, -20, 0], atol=1e-12)


@SETTINGS
@given(problems(max_contacts=6), st.floats(1e-9, 1e-6))
def test_small_input_changes_give_small_output_changes(problem, epsilon):
    contacts, model, options, wrench, rng = problem
    d = LoadDistributor(contacts, model, options)
    moved = [Contact(c.name, c.type, np.array(c.position) + epsilon * rng.normal(size=3), c.orientation)
             for c in contacts]
    d2 = LoadDistributor(moved, model, options)
    try:
        s = d.synthesize(wrench)
    except UnrealisableWrenchError:
        assert_refusal_is_legitimate(contacts, model.com, wrench)
        with pytest.raises(UnrealisableWrenchError):  # a tiny move does not make it realisable
            d2.synthesize(wrench)
        return
    s2 = d2.synthesize(wrench)
    size = np.abs(s.wrench_contact).max() + np.abs(wrench).max()
    points = np.array([c.position for c in contacts])
    spread = np.ptp(points, axis=0).max()
    assume(spread > 1e-3)  # coincident contacts: no length to be continuous against
    lever = 1.0 + np.linalg.norm(points.mean(0) - model.com) / spread
    # No jump: the change is of order epsilon / spread, times the lever ratio of the grasp
    # (a generous constant: the degenerate-geometry transitions are steep but continuous).
    bound = 1e4 * epsilon / spread * lever * size + 1e-9 * size
    assert np.abs(s2.wrench_contact - s.wrench_contact).max() <= bound


@pytest.mark.parametrize('scale', [1e-12, 1.0, 1e12])
def test_torque_going_to_zero_stays_bounded(scale):
    from core_cases import dual_arm
    d = dual_arm()
    rng = np.random.default_rng(3)
    measured = rng.normal(size=(2, 6)) * 5
    base = d.analyze(measured)
    # shift the measurement by a manipulating wrench with a tiny torque
    s = d.synthesize([1.0, 0.0, 40.0, scale * 1e-9, scale * 2e-9, 0.0])
    a = d.analyze(measured + s.wrench_contact)
    assert np.all(np.isfinite(a.internal_load)) and np.isfinite(a.internal_load_norm)
    # bounded jump: never more than the constraint wrench itself
    assert a.internal_load_norm <= 10 * (np.abs(measured).max() + 50)
    assert np.abs(a.internal_load).max() < 1e3 + 10 * np.abs(base.internal_load).max()


@pytest.mark.parametrize('bad', [np.nan, np.inf, -np.inf])
def test_non_finite_inputs_are_rejected(bad):
    from core_cases import dual_arm
    d = dual_arm()
    with pytest.raises(InvalidInputError, match='NaN or Inf'):
        d.synthesize([0, 0, bad, 0, 0, 0])
    with pytest.raises(InvalidInputError, match='NaN or Inf'):
        d.analyze([[0, 0, bad, 0, 0, 0], [0] * 6])
    with pytest.raises(InvalidInputError, match='NaN or Inf'):
        Contact('a', 'rigid', (0, bad, 0))
    with pytest.raises(InvalidInputError):
        d.synthesize([0] * 6, [bad] * len(d.basis_names))


@pytest.mark.parametrize('call, message', [
    (lambda: Contact('a', 'soft', (0, 0, 0)), 'type must be one of rigid, point'),
    (lambda: Contact('a', 'rigid', (0, 0)), 'shape 3'),
    (lambda: Contact('a', 'rigid', (0, 0, 0), (0, 0, 0, 0)), 'quaternion'),
    (lambda: LoadDistributor([]), 'at least one contact'),
    (lambda: LoadDistributor([Contact('a'), Contact('a')]), 'appears twice'),
    (lambda: DistributionOptions(torque_share=1.5), r'torque_share must be a number in \[0, 1\]'),
    (lambda: DistributionOptions(virtual_masses='heavy'), 'virtual_masses must be one of'),
    (lambda: DistributionOptions(virtual_masses=[1, -1]), 'positive'),
    (lambda: ObjectModel(mass=-1), 'mass must be positive'),
    (lambda: ObjectModel(inertia=[[1, 0, 0], [0, -1, 0], [0, 0, 1]]), 'positive definite'),
    (lambda: LoadDistributor([Contact('a'), Contact('b', position=(1, 0, 0))],
                             options=DistributionOptions(virtual_masses='full')), 'mass and inertia'),
])
def test_every_rejection_is_typed_with_a_message(call, message):
    with pytest.raises(WrenchDistributionError, match=message):
        call()


def test_wrong_lengths_and_unknown_handles():
    from core_cases import dual_arm
    d = dual_arm()
    with pytest.raises(InvalidInputError, match='shape 6'):
        d.synthesize([1, 2, 3])
    with pytest.raises(InvalidInputError, match='shape 2x6'):
        d.analyze(np.zeros((3, 6)))
    with pytest.raises(InvalidInputError, match='unknown internal-load handle'):
        d.internal_load_from_handles({'squeeze(left,middle)': 1.0})
    with pytest.raises(InvalidInputError, match='6 values'):
        d.synthesize([0] * 6, [1.0, 2.0])


def test_huge_and_zero_wrenches():
    from core_cases import quadruped
    d = quadruped()
    zero = d.synthesize(np.zeros(6))
    assert np.all(zero.wrench_contact == 0)
    huge = np.array([1e12, -3e12, 5e12, 1e11, 2e11, -1e11])
    s = d.synthesize(huge)
    assert relative_error(s.resultant, huge) < 1e-9
    assert d.analyze(np.zeros((4, 6))).internal_load_norm == 0.0


@pytest.mark.parametrize('n', [2, 3, 4, 16, 64])
def test_many_contacts(n):
    rng = np.random.default_rng(n)
    contacts = [Contact(f'c{i}', 'point' if i % 2 else 'rigid', rng.normal(size=3)) for i in range(n)]
    d = LoadDistributor(contacts, ObjectModel(com=rng.normal(size=3) * 0.1))
    wrench = rng.normal(size=6)
    s = d.synthesize(wrench, rng.normal(size=len(d.basis_names)))
    size = np.abs(s.wrench_object).max() * lever(contacts)
    assert relative_error(s.resultant, wrench, size) < 1e-9
    assert len(d.basis_names) == int(d.active_components.sum()) - 6
    a = d.analyze(s.wrench_contact)
    assert relative_error(a.resultant, wrench, size) < 1e-9


def test_quadruped_weighting_is_continuous_in_ground_unevenness():
    from core_cases import quadruped
    flat = quadruped().synthesize([0, 0, 100, 0, 0, 0]).wrench_object[:, 2]
    # statics: the centre of mass 5 cm ahead of the middle of feet 60 cm apart
    np.testing.assert_allclose(flat, [29.1667, 29.1667, 20.8333, 20.8333], atol=1e-4)
    previous = flat
    for lift in (1e-9, 1e-6, 1e-4, 1e-3):
        now = quadruped(lift=lift).synthesize([0, 0, 100, 0, 0, 0]).wrench_object[:, 2]
        assert np.abs(now - flat).max() < 2e3 * lift + 1e-6
        previous = now
    assert previous is not None


@SETTINGS
@given(problems(max_contacts=6), st.booleans())
def test_fast_path_equals_synthesize(problem, object_frame):
    contacts, model, options, wrench, rng = problem
    d = LoadDistributor(contacts, model, options)
    lam = rng.normal(size=len(d.basis_names))
    try:
        full = d.synthesize(wrench, lam)
    except UnrealisableWrenchError:
        assert_refusal_is_legitimate(contacts, model.com, wrench)
        with pytest.raises(UnrealisableWrenchError):
            d.wrench_commands(wrench)
        return
    fast = d.wrench_commands(wrench, d.internal_wrench(lam, object_frame), object_frame)
    expected = full.wrench_object if object_frame else full.wrench_contact
    np.testing.assert_allclose(fast, expected, atol=1e-12 * (1 + np.abs(expected).max()))
    with pytest.raises(InvalidInputError):
        d.wrench_commands([0, 0, np.nan, 0, 0, 0])
