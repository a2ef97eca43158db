"""Internal loads you can trust (docs/theory.md, sections 5 and 6).

Every expectation is an invariant or an independent computation: round trips, linearity,
the paper's N_c projection computed here with numpy, statics of a squeeze, continuity.
"""
from hypothesis import assume, given, HealthCheck, settings
from hypothesis import strategies as st
import numpy as np
import pytest

from core_cases import assert_refusal_is_legitimate, dual_arm
from wrench_distribution.core import (
    Contact, DistributionOptions, InvalidInputError, LoadDistributor, ObjectModel, UnrealisableWrenchError,
)

SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
LAYOUTS = ['general', 'collinear', 'coplanar', 'duplicate', 'near_collinear', 'near_coplanar',
           'near_coincident', 'com_outside']


@st.composite
def grasps(draw, min_contacts=2, max_contacts=8):
    """Draw a random grasp, degenerate layouts included, any types, any torque share."""
    n = draw(st.integers(min_contacts, max_contacts))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    layout = draw(st.sampled_from(LAYOUTS))
    size = draw(st.sampled_from([0.05, 0.5, 3.0]))
    positions = rng.normal(size=(n, 3)) * size
    line = np.outer(rng.normal(size=n), rng.normal(size=3)) * size + rng.normal(size=3) * size
    if layout == 'collinear':
        positions = line
    elif layout == 'near_collinear':
        positions = line + 1e-4 * size * rng.normal(size=(n, 3))
    elif layout == 'coplanar':
        positions[:, 2] = 0.0
    elif layout == 'near_coplanar':
        positions[:, 2] = 1e-3 * size * rng.normal(size=n)
    elif layout == 'duplicate':
        positions[-1] = positions[0]
    elif layout == 'near_coincident':
        positions[-1] = positions[0] + 1e-6 * size * rng.normal(size=3)
    kind = draw(st.sampled_from(['rigid', 'point', 'mixed']))
    types = [kind if kind != 'mixed' else rng.choice(['rigid', 'point']) for _ in range(n)]
    contacts = [Contact(f'c{i}', str(t), p, rng.normal(size=4)) for i, (t, p) in enumerate(zip(types, positions))]
    offset = 3.0 if layout == 'com_outside' else draw(st.sampled_from([0.0, 0.1, 1.0]))
    com = positions.mean(0) + rng.normal(size=3) * size * offset
    share = draw(st.sampled_from([0.0, 0.3, 1.0]))
    return LoadDistributor(contacts, ObjectModel(com=com), DistributionOptions(torque_share=share)), rng


def resultants(rng, length):
    """Zero, tiny, ordinary and large torques about the centre of mass."""
    force = rng.normal(size=3) * 10.0
    direction = rng.normal(size=3)
    return [np.r_[force, t * direction * length] for t in (0.0, 1e-9, 1e-3, 1.0, 1e3)]


@SETTINGS
@given(grasps())
def test_round_trip_every_element_every_resultant(problem):
    d, rng = problem
    m = len(d.basis_names)
    assume(m > 0)
    loads = list(np.eye(m) * 7.0) + [rng.normal(size=m) * 10.0]
    # compare in newtons (torques over the contacts' length): a coordinate in N*m and one in N
    # have the same accuracy once expressed in the same unit (docs/theory.md, 5.4)
    scale = np.tile(np.r_[np.ones(3), np.full(3, 1.0 / d.reference_length)], d.n)
    sizes = np.linalg.norm(d.basis_matrix * scale[:, None], axis=0)
    for wrench in resultants(rng, d.reference_length):
        try:
            d.synthesize(wrench)
        except UnrealisableWrenchError:
            assert_refusal_is_legitimate(d.contacts, d.object_model.com, wrench)
            continue
        for lam in loads:
            commands = d.synthesize(wrench, lam).wrench_contact
            back = d.analyze(commands).internal_load
            size = np.abs(lam * sizes).max() + d.gain * np.linalg.norm(wrench * scale[:6])
            np.testing.assert_array_less(np.abs(back - lam) * sizes, 1e-9 * size + 1e-300)


@pytest.mark.parametrize('n', [16, 32, 64])
def test_round_trip_many_contacts(n):
    rng = np.random.default_rng(n)
    contacts = [Contact(f'c{i}', 'point' if i % 3 == 0 else 'rigid', rng.normal(size=3), rng.normal(size=4))
                for i in range(n)]
    d = LoadDistributor(contacts, ObjectModel(com=rng.normal(size=3) * 0.1), DistributionOptions(torque_share=0.3))
    lam = rng.normal(size=d.internal_dimension)
    batch = d.synthesize_batch(rng.normal(size=(5, 6)), lam)
    np.testing.assert_allclose(d.analyze_batch(batch.wrench_contact).internal_load, np.tile(lam, (5, 1)),
                               atol=1e-9 * d.gain)


@SETTINGS
@given(grasps(), st.floats(-3, 3))
def test_read_out_is_linear(problem, a):
    d, rng = problem
    x, y = rng.normal(size=(2, d.n, 6))
    lx, ly, lxy = (d.analyze(v).internal_load for v in (x, y, a * x + y))
    np.testing.assert_allclose(lxy, a * lx + ly, atol=1e-9 * (1 + np.abs(lx).max() + np.abs(ly).max()))


@pytest.mark.parametrize('seed', range(5))
def test_read_out_does_not_jump_as_the_torque_vanishes(seed):
    d = dual_arm()
    rng = np.random.default_rng(seed)
    twist = d.basis_names.index('twist(left,right)')
    lam = np.zeros(6)
    lam[twist] = 0.5
    readings = []
    for scale in (1e-1, 1e-3, 1e-6, 1e-9, 0.0):
        wrench = np.r_[0.0, 0.0, 49.05, scale * rng.normal(size=3)]
        readings.append(d.analyze(d.synthesize(wrench, lam).wrench_contact).internal_load)
    np.testing.assert_allclose(readings, np.tile(lam, (5, 1)), atol=1e-12)


def test_noise_reaches_the_read_out_linearly_without_bias():
    d = dual_arm()
    rng = np.random.default_rng(0)
    lam = np.array([15.0, 0.5, -0.2, 0.1, 0.0, 0.0])
    commands = d.synthesize([0.0, 0.0, 49.05, 1e-4, 0.0, 0.0], lam).wrench_contact
    sigma = np.array([0.05, 0.05, 0.05, 0.003, 0.003, 0.003])
    noise = rng.normal(size=(4000, 2, 6)) * sigma
    readings = d.analyze_batch(commands[None] + noise).internal_load
    # the response to each unit input, measured one input at a time, predicts the scatter
    units = np.eye(12).reshape(12, 2, 6)
    response = d.analyze_batch(units).internal_load - d.analyze_batch(np.zeros((1, 2, 6))).internal_load
    predicted = np.sqrt(((response * sigma.repeat(1).reshape(1, 6).repeat(2, 0).reshape(12, 1)) ** 2).sum(0))
    std = readings.std(axis=0)
    np.testing.assert_allclose(std, predicted, rtol=0.1, atol=1e-12)
    assert np.all(np.abs(readings.mean(axis=0) - lam) <= 5 * predicted / np.sqrt(4000) + 1e-12)


@SETTINGS
@given(grasps())
def test_norm_is_mass_independent_for_a_pure_squeeze(problem):
    d, rng = problem
    assume(d.n >= 2)
    i, j = 0, 1
    e = np.array(d.contacts[j].position) - np.array(d.contacts[i].position)
    assume(np.linalg.norm(e) > 1e-3 * d.reference_length)
    e /= np.linalg.norm(e)
    applied = np.zeros((d.n, 6))
    applied[i, :3], applied[j, :3] = 20.0 * e, -20.0 * e
    measured = np.einsum('kba,kb->ka', np.array([c.rotation for c in d.contacts]), applied[:, :3])
    a = d.analyze(np.c_[measured, np.zeros((d.n, 3))])
    # a pure force f_o = 0 with t_o = 0: h_m = 0, the whole squeeze is internal
    np.testing.assert_allclose(a.internal_load_norm, 20.0, rtol=1e-9)


@pytest.mark.parametrize('com_y', [-0.29, -0.1, 0.0, 0.2, 0.29, 0.6])
def test_twenty_newton_squeeze_reads_twenty_wherever_the_com(com_y):
    d = dual_arm(com=(0.0, com_y, 0.0))
    s = d.synthesize([0.0, 0.0, 49.05, 0.0, 0.0, 0.0], {'squeeze(left,right)': 20.0})
    np.testing.assert_allclose(d.analyze(s.wrench_contact).internal_load_norm, 20.0, rtol=1e-9)


@SETTINGS
@given(grasps(max_contacts=6))
def test_invariant_equals_paper_projection_when_inside_the_set(problem):
    d, rng = problem
    wrench = np.r_[rng.normal(size=3), rng.normal(size=3) * d.reference_length]
    try:
        particular = LoadDistributor(d.contacts, d.object_model).synthesize(wrench).wrench_object
    except UnrealisableWrenchError:
        assert_refusal_is_legitimate(d.contacts, d.object_model.com, wrench)
        return
    k = d.manipulating_directions(wrench)
    # a small admissible move inside the ball plus a load W-orthogonal to N_m: the paper's
    # eq. 74-78 projection, computed here with numpy, must give the same state
    lam = rng.normal(size=d.internal_dimension) if d.internal_dimension else np.zeros(0)
    load = (d.basis_matrix @ lam) if lam.size else np.zeros(6 * d.n)
    sigma = rng.normal(size=k.shape[1]) * 0.01 / max(1, k.shape[1])
    applied = particular.reshape(-1) + k @ sigma + load
    inv = d.invariant_batch(applied.reshape(1, d.n, 6))[0][0].reshape(-1)
    # the invariant differs from h - h_m,p by an element of span K (N_m) ...
    diff = applied - particular.reshape(-1) - inv
    tolerance = 1e-9 * d.gain * (1 + np.abs(applied).max())
    if k.shape[1]:
        coefficients, *_ = np.linalg.lstsq(k, diff, rcond=None)
        np.testing.assert_allclose(k @ coefficients, diff, atol=100 * tolerance)
    else:
        np.testing.assert_allclose(diff, 0.0, atol=tolerance)


@pytest.mark.parametrize('seed', range(4))
def test_invariant_is_continuous_as_the_torque_vanishes(seed):
    d = dual_arm()
    rng = np.random.default_rng(seed)
    lam = rng.normal(size=6)
    states = []
    for scale in (1e-2, 1e-4, 1e-6, 1e-8, 0.0):
        wrench = np.r_[0.0, 0.0, 49.05, scale * rng.normal(size=3)]
        states.append(d.synthesize(wrench, lam).invariant_object)
    for scale, state in zip((1e-2, 1e-4, 1e-6, 1e-8), states):
        assert np.abs(state - states[-1]).max() <= 100 * scale + 1e-9


def test_invariant_of_configured_manipulating_wrenches_is_zero():
    for share in (0.0, 0.5, 1.0):
        d = dual_arm(com=(0.0, 0.1, 0.0), torque_share=share)
        for wrench in ([0, 0, 49.05, 0, 0, 0], [1, -2, 49.05, 0.3, 0.2, -0.4]):
            assert d.synthesize(wrench).invariant_norm < 1e-9


@SETTINGS
@given(grasps())
def test_physical_loads_have_coordinates_of_their_size(problem):
    d, rng = problem
    m = d.internal_dimension
    assume(m > 0)
    assert d.basis_condition < 25.0
    # any physical internal load: a random self-equilibrated set, normalised to 20 N
    load = d.basis_matrix @ rng.normal(size=m)
    scale = np.tile(np.r_[np.ones(3), np.full(3, 1.0 / d.reference_length)], d.n)
    size = np.linalg.norm(load * scale)
    lam = np.linalg.lstsq(d.basis_matrix * scale[:, None], load * scale, rcond=None)[0]
    element_sizes = np.linalg.norm(d.basis_matrix * scale[:, None], axis=0)
    assert np.abs(lam * element_sizes).max() <= 25.0 * size


@SETTINGS
@given(grasps(max_contacts=6), st.floats(1e-12, 1e-9))
def test_basis_holds_still_where_its_names_stay(problem, epsilon):
    d, rng = problem
    moved = [Contact(c.name, c.type, np.array(c.position) + epsilon * d.reference_length * rng.normal(size=3),
                     c.orientation) for c in d.contacts]
    d2 = LoadDistributor(moved, d.object_model, d.options)
    if d2.basis_names != d.basis_names:
        return  # a change of names is a change of basis, reported by the names themselves
    points = np.array([c.position for c in d.contacts])
    gaps = [np.linalg.norm(p - q) for k, p in enumerate(points) for q in points[k + 1:]]
    assume(min(gaps) > 1e-6 * d.reference_length)  # coincident pairs: docs/theory.md, section 6
    change = np.abs(d2.basis_matrix - d.basis_matrix).max() / max(1.0, np.abs(d.basis_matrix).max())
    # continuous: a pair's direction turns by the move over the pair's distance; a best-fit
    # plane of nearly collinear feet (warps) turns faster, still in proportion to the move
    assert change < 1e-6 + 1e5 * epsilon * d.reference_length / min(gaps)


def test_basis_is_built_when_first_needed():
    d = dual_arm()
    d.synthesize([0, 0, 49.05, 0, 0, 0])
    d.wrench_commands(np.array([0, 0, 49.05, 0, 0, 0.0]))
    assert not d.basis_ready
    d.synthesize([0, 0, 49.05, 0, 0, 0], {'squeeze(left,right)': 1.0})
    assert d.basis_ready


@pytest.mark.parametrize('offset', [1e-3, 1e-4, 1e-5, 1e-6, 1e-8])
def test_nearly_collinear_point_contacts_never_drop_a_torque(offset):
    contacts = [Contact('a', 'point', (0, 0, 0)), Contact('b', 'point', (0.5, offset, 0)),
                Contact('c', 'point', (1.0, 0, offset))]
    d = LoadDistributor(contacts, ObjectModel(com=(0.5, 0, 0)))
    wrench = np.array([0, 0, 10.0, 1.0, 0, 0])  # a roll torque about the near-line
    try:
        s = d.synthesize(wrench)
    except UnrealisableWrenchError as error:
        assert 'cannot be produced' in str(error)
        assert_refusal_is_legitimate(contacts, (0.5, 0, 0), wrench)
        return
    g = np.hstack([np.vstack([np.eye(3), np.array([[0, -p[2], p[1]], [p[2], 0, -p[0]], [-p[1], p[0], 0]])])
                   for p in (np.array(c.position) - (0.5, 0, 0) for c in contacts)])
    np.testing.assert_allclose(g @ s.wrench_object[:, :3].reshape(-1), wrench,
                               atol=1e-12 * np.abs(s.wrench_object).max())
    assert 'ill_conditioned_grasp' in d.regime.reasons and 'command gain' in d.regime.message


def test_micrometre_triangle_far_from_the_com_is_exact_or_refused():
    contacts = [Contact(f'p{i}', 'point', np.array([0.3, 0, 0]) + 1e-6 * np.array(v))
                for i, v in enumerate([(0, 0, 0), (1, 0, 0), (0, 1, 0)])]
    d = LoadDistributor(contacts, ObjectModel())
    for wrench in ([0, 0, 10, 0, 0, 0], [1, 2, 3, 0.1, -0.2, 0.3]):
        try:
            s = d.synthesize(wrench)
        except UnrealisableWrenchError:
            assert_refusal_is_legitimate(contacts, (0.0, 0.0, 0.0), wrench)
            continue
        assert np.abs(s.resultant - wrench).max() <= 1e-6 * np.abs(wrench).max()


def test_two_rigid_grasps_micrometres_apart_produce_any_wrench():
    d = LoadDistributor([Contact('l', 'rigid', (0, 0, 0)), Contact('r', 'rigid', (1e-6, 0, 0))],
                        ObjectModel(com=(0, 0, -0.3)))
    assert 'rank_deficient_grasp' not in d.regime.reasons
    s = d.synthesize([1, 2, 3, 4, 5, 6])
    np.testing.assert_allclose(s.resultant, [1, 2, 3, 4, 5, 6], atol=1e-9)


def test_close_contacts_are_reported_ill_conditioned_with_the_figure():
    near = LoadDistributor([Contact(f'p{i}', 'point', p) for i, p in
                            enumerate([(0, 0, 0), (1e-3, 0, 0), (0, 1e-3, 0)])], ObjectModel(com=(0, 0, -0.1)))
    s = near.synthesize([39.0, 0, 0, 0, 0, 0])
    assert np.abs(s.wrench_object).max() > 370.0
    assert 'ill_conditioned_grasp' in near.regime.reasons
    assert f'{near.gain:.4g}' in near.regime.message and near.gain > 5
    assert 'ill_conditioned_grasp' not in dual_arm().regime.reasons


def test_switch_between_eq_59_and_eq_64_is_continuous():
    rng = np.random.default_rng(4)
    base = rng.normal(size=(12, 3))
    inertia = np.diag([0.4, 0.5, 0.6])
    previous = None
    # slide one contact so that eq. 59's smallest mass crosses the floor
    for t in np.linspace(0.0, 3.0, 301):
        positions = base.copy()
        positions[0] *= 1.0 + t
        d = LoadDistributor([Contact(f'c{i}', 'point', p) for i, p in enumerate(positions)],
                            ObjectModel(com=(0, 0, 0), mass=2.0, inertia=inertia))
        commands = d.synthesize([1, 2, 30, 0.5, 0.1, 0.2]).wrench_object
        if previous is not None:
            assert np.abs(commands - previous).max() < 0.5
        previous = commands


@pytest.mark.parametrize('value', [1e154, 1e200, 1e300])
def test_overflowing_inputs_are_clear_errors(value):
    d = dual_arm()
    with pytest.raises(InvalidInputError, match='magnitude'):
        d.synthesize([value, 0, 0, 0, 0, 0])
    with pytest.raises(InvalidInputError, match='magnitude'):
        d.analyze(np.full((2, 6), value))
    with pytest.raises(InvalidInputError, match='magnitude'):
        d.synthesize([0, 0, 1, 0, 0, 0], [value, 0, 0, 0, 0, 0])
    with pytest.raises(InvalidInputError, match='magnitude'):
        Contact('c', 'rigid', (value, 0, 0))


@pytest.mark.parametrize('field,value', [('wrench', [1e154, 0, 0, 0, 0, 0]), ('wrench', [0, 0, 0, 0, 0, 1e300]),
                                         ('position', [1e200, 0, 0])])
def test_command_line_overflow_is_one_clear_error(tmp_path, field, value):
    import json
    import subprocess
    import sys
    document = {'contacts': [{'name': 'a', 'position': [0, 0.3, 0]}, {'name': 'b', 'position': [0, -0.3, 0]}],
                'wrench': [0, 0, 1, 0, 0, 0]}
    if field == 'wrench':
        document['wrench'] = value
    else:
        document['contacts'][0]['position'] = value
    path = tmp_path / 'problem.json'
    path.write_text(json.dumps(document))
    proc = subprocess.run([sys.executable, '-m', 'wrench_distribution.cli', 'synthesize', '--problem', str(path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert 'Traceback' not in proc.stderr
    assert 'magnitude' in json.loads(proc.stdout)['error']
