"""Friction cones: the check, the auto-mode internal load, and agreement with a reference.

Reference values come from hand derivations (symmetric grasps), from invariants (resultant
reproduced, load in N(G), frame and unit invariance) and from an independent solver
(Kelley cutting planes on HiGHS, ``core/friction_reference.py``).
"""
import json
from pathlib import Path
import subprocess
import sys

from hypothesis import assume, given, HealthCheck, settings
from hypothesis import strategies as st
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from ros_harness import REPO
from wrench_distribution.core import Contact, InvalidInputError, LoadDistributor
from wrench_distribution.core.friction import (
    check_forces, FrictionInfeasibleError, FrictionModel, FrictionOptions,
)
from wrench_distribution.core.friction_reference import random_grasp, reference_solve

ROOT = Path(REPO)
SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


def three_fingers(mu=0.8, radius=0.04):
    """Fingertips 120 deg apart in the z = 0 plane, normal (contact +z) pointing inwards."""
    contacts = []
    for i, name in enumerate(('thumb', 'index', 'middle')):
        angle = np.pi / 2 + 2 * np.pi * i / 3
        outward = np.array([np.cos(angle), np.sin(angle), 0.0])
        frame = Rotation.align_vectors([[0, 0, 1], [1, 0, 0]], [-outward, [0, 0, 1]])[0].inv()
        contacts.append(Contact(name, 'point', radius * outward, frame.as_quat(), friction=mu))
    return contacts


def resultant(distributor, commands):
    """Sum the contact wrenches about the centre of mass, written out independently."""
    total = np.zeros(6)
    com = np.array(distributor.object_model.com)
    for contact, wrench in zip(distributor.contacts, commands):
        rotation = Rotation.from_quat(contact.orientation).as_matrix()
        force = rotation @ wrench[:3]
        torque = rotation @ wrench[3:] if contact.type == 'rigid' else np.zeros(3)
        total += np.r_[force, torque + np.cross(np.array(contact.position) - com, force)]
    return total


@pytest.mark.parametrize('mu, margin', [(0.8, 0.1), (0.3, 0.0), (1.5, 0.5)])
def test_three_fingers_hold_a_weight_with_the_derived_squeeze(mu, margin):
    # Each fingertip carries W/3 along its tangent (z); the squeezes act in the plane, so the
    # least normal force keeping |f_t| <= (1 - M) mu f_n is W / (3 mu (1 - M)) per finger.
    weight = 2.943
    distributor = LoadDistributor(three_fingers(mu))
    model = FrictionModel(distributor, FrictionOptions('auto', margin))
    before = model.check(distributor.wrench_commands([0, 0, weight, 0, 0, 0]))
    assert before.status == ('slipping',) * 3  # a tangential force with no normal force
    result = model.apply([0, 0, weight, 0, 0, 0])
    expected = weight / (3 * mu * (1 - margin))
    np.testing.assert_allclose(result.check.normal_force, expected, rtol=1e-6)
    np.testing.assert_allclose(result.check.utilisation, 1 - margin, atol=1e-6)
    np.testing.assert_allclose(resultant(distributor, result.commands), [0, 0, weight, 0, 0, 0],
                               atol=1e-9)
    assert np.all(result.added > 0)  # a squeeze, the same on every pair by symmetry
    np.testing.assert_allclose(result.added, result.added[0], rtol=1e-5)


def test_two_antipodal_contacts_and_rigid_pair():
    # Two fingertips at +-x hold weight W along z: each carries W/2 tangentially.
    for kind in ('point', 'rigid'):
        contacts = [
            Contact('a', kind, [0.05, 0, 0], Rotation.from_euler('y', -90, degrees=True).as_quat(), friction=0.5),
            Contact('b', kind, [-0.05, 0, 0], Rotation.from_euler('y', 90, degrees=True).as_quat(), friction=0.5),
        ]
        distributor = LoadDistributor(contacts)
        model = FrictionModel(distributor, FrictionOptions('auto', 0.2))
        result = model.apply([0, 0, 10.0, 0, 0, 0])
        np.testing.assert_allclose(result.check.normal_force, 5.0 / (0.5 * 0.8), rtol=1e-6)
        np.testing.assert_allclose(resultant(distributor, result.commands), [0, 0, 10, 0, 0, 0], atol=1e-8)


def test_check_statuses_and_pulling_is_a_status_not_a_number():
    normals = np.tile([0.0, 0.0, 1.0], (6, 1))
    forces = np.array([[0.3, 0.4, 1.0], [0.5, 0, -2.0], [0.79, 0, 1.0], [0, 0, 0], [2.0, 0, 0], [3, 4, 5]])
    mu = np.array([1.0, 1.0, 0.8, 1.0, 1.0, np.nan])
    check = check_forces(forces, normals, mu, np.array([True] * 5 + [False]), 0.1)
    assert check.status == ('ok', 'pulling', 'near_limit', 'unloaded', 'slipping', 'unconstrained')
    np.testing.assert_allclose(check.utilisation[[0, 2, 3]], [0.5, 0.79 / 0.8, 0.0])
    assert np.isnan(check.utilisation[1]) and np.isnan(check.utilisation[4])
    np.testing.assert_allclose(check.normal_force, [1, -2, 1, 0, 0, 5])
    np.testing.assert_allclose(check.tangential_force, [0.5, 0.5, 0.79, 0, 2, 5])
    assert check.worst == 'pulling'


def test_unilateral_feet_without_friction():
    # Four feet (point contacts, no mu, normal +z in the object frame) under a table top:
    # lifting the table is a pull; auto finds no internal load that avoids it.
    feet = [Contact(f'f{i}', 'point', [x, y, 0.0]) for i, (x, y) in
            enumerate([(0.3, 0.2), (-0.3, 0.2), (-0.3, -0.2), (0.3, -0.2)])]
    distributor = LoadDistributor(feet)
    model = FrictionModel(distributor, FrictionOptions('auto', 0.0))
    down = model.check(distributor.wrench_commands([0, 0, 50.0, 0, 0, 0]))
    assert down.status == ('ok',) * 4 and np.all(down.normal_force > 0)
    assert np.isnan(down.utilisation).all()
    up = model.check(distributor.wrench_commands([0, 0, -50.0, 0, 0, 0]))
    assert up.status == ('pulling',) * 4
    with pytest.raises(FrictionInfeasibleError, match='pulling'):
        model.apply([0, 0, -50.0, 0, 0, 0])
    # Torques about x and y: the paper's (linear) distribution puts 12.5 - 0.2 * 43.75
    # - 0.3 * 19.44 = -2.08 N on foot f2; the diagonal internal mode (+f0 -f1 +f2 -f3) can move
    # load onto it, so auto makes all four press and the resultant stays.
    wrench = np.array([0, 0, 50.0, 7.0, -7.0, 0])
    np.testing.assert_allclose(model.check(distributor.wrench_commands(wrench)).normal_force[2],
                               12.5 - 0.2 * 7 / 0.16 - 0.3 * 7 / 0.36, rtol=1e-9)
    assert 'pulling' in model.check(distributor.wrench_commands(wrench)).status
    result = model.apply(wrench)
    assert all(s in ('ok', 'unloaded') for s in result.check.status)
    assert np.all(result.check.normal_force >= -1e-9)
    np.testing.assert_allclose(resultant(distributor, result.commands), wrench, atol=1e-8)


def _random_case(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 5))
    kind = 'rigid' if n == 2 and rng.random() < 0.5 else 'point'
    distributor = LoadDistributor(random_grasp(rng, n, kind, radius=float(rng.uniform(0.02, 0.5))))
    stack = rng.normal(size=6 * n) + np.tile([0, 0, 0, 0, 0, 0], n)
    wrench = distributor.grasp_matrix @ stack
    model = FrictionModel(distributor, FrictionOptions('auto', float(rng.uniform(0.0, 0.3))))
    return distributor, model, wrench


def test_agrees_with_the_independent_reference_on_random_grasps():
    feasible = infeasible = 0
    for seed in range(36):
        distributor, model, wrench = _random_case(seed)
        commands = distributor.wrench_commands(wrench)
        ref = reference_solve(commands[:, :3], model.basis_contact[:, :3, :], model.normals,
                              model.mu, model.unilateral, model.options.margin, tolerance=1e-10)
        try:
            added = model.required_load(commands)
        except FrictionInfeasibleError:
            infeasible += 1
            assert not ref.feasible, f'seed {seed}: reference found a feasible load'
            continue
        feasible += 1
        assert ref.feasible, f'seed {seed}: reference proved infeasibility'
        after = model.check(commands + np.einsum('ikj,j->ik', model.basis_contact, added))
        assert after.worst == 'ok', after.status
        objective = float(np.sum(after.normal_force[model.unilateral]))
        # the reference is a lower bound; clarabel's point is feasible, hence an upper bound
        assert objective >= ref.objective - 1e-9 * abs(objective)
        assert objective - ref.objective <= 1e-6 * abs(objective), seed
    assert feasible >= 10 and infeasible >= 5  # both kinds really exercised


@SETTINGS
@given(seed=st.integers(0, 2 ** 31), prescribed=st.floats(-5, 5), scale=st.sampled_from([1.0, 1e-3, 1e3]))
def test_auto_keeps_the_resultant_and_reads_back_its_load(seed, prescribed, scale):
    distributor, model, wrench = _random_case(seed)
    wrench = wrench * scale
    lam = np.full(model.m, prescribed * scale)
    try:
        result = model.apply(wrench, lam)
    except FrictionInfeasibleError:
        assume(False)
    np.testing.assert_allclose(resultant(distributor, result.commands), wrench,
                               atol=1e-8 * max(1.0, np.abs(wrench).max(), np.abs(result.commands).max()))
    # the added load is internal: G maps it to zero
    added_object = distributor.internal_wrench(result.added, object_frame=True)
    assert np.abs(distributor.grasp_matrix @ added_object).max() <= 1e-9 * max(
        1.0, np.abs(added_object).max())
    np.testing.assert_allclose(result.internal_load, lam + result.added)
    assert all(s in ('ok', 'unloaded', 'unconstrained') for s in result.check.status)
    loaded = np.linalg.norm(result.commands[:, :3], axis=1) > 1e-6 * np.abs(result.commands[:, :3]).max()
    assert np.nanmax(np.r_[result.check.utilisation[loaded], 0.0]) <= 1 - model.options.margin + 1e-6
    # what is commanded is what is read back (the core's contract, in every regime)
    read = distributor.analyze(result.commands).internal_load
    np.testing.assert_allclose(read, result.internal_load, atol=1e-7 * max(1.0, np.abs(result.internal_load).max()))


@SETTINGS
@given(seed=st.integers(0, 2 ** 31), turn=st.lists(st.floats(-3, 3), min_size=3, max_size=3))
def test_normal_forces_do_not_depend_on_contact_frames_or_length_unit(seed, turn):
    distributor, model, wrench = _random_case(seed)
    try:
        base = model.apply(wrench).check.normal_force
    except FrictionInfeasibleError:
        assume(False)
    extra = Rotation.from_rotvec(turn)
    turned = [Contact(c.name, c.type, np.array(c.position) * 1000.0,
                      (Rotation.from_quat(c.orientation) * extra).as_quat(),
                      friction=c.friction, normal=extra.inv().apply(c.normal)) for c in distributor.contacts]
    other = LoadDistributor(turned)
    mm_wrench = np.r_[wrench[:3], wrench[3:] * 1000.0]
    again = FrictionModel(other, model.options).apply(mm_wrench).check.normal_force
    np.testing.assert_allclose(np.sum(again), np.sum(base), rtol=1e-6, atol=1e-9)


def test_contact_and_option_validation():
    assert Contact('a').friction is None and Contact('a').normal == (0.0, 0.0, 1.0)
    assert Contact('a', 'point', (1, 2, 3), (0, 0, 0, 1)).position == (1.0, 2.0, 3.0)
    np.testing.assert_allclose(Contact('a', normal=[0, 0, -2]).normal, [0, 0, -1])
    for bad in ({'friction': -0.1}, {'friction': 0.0}, {'friction': float('nan')},
                {'normal': [0, 0, 0]}, {'normal': [0, 1]}):
        with pytest.raises(InvalidInputError):
            Contact('a', **bad)
    for bad in ({'mode': 'sometimes'}, {'margin': 1.0}, {'margin': -0.1}, {'margin': float('inf')}):
        with pytest.raises(InvalidInputError):
            FrictionOptions(**bad)
    with pytest.raises(InvalidInputError, match='unknown key.*accepted: mode, margin'):
        FrictionOptions.from_mapping({'mode': 'auto', 'margni': 0.1})


def run_cli(tmp_path, document):
    path = tmp_path / 'problem.json'
    command = document.pop('_command', 'synthesize')
    path.write_text(json.dumps(document))
    result = subprocess.run([sys.executable, '-m', 'wrench_distribution.cli', command,
                             '--problem', str(path)], cwd=ROOT, capture_output=True, text=True, timeout=60)
    return result.returncode, json.loads(result.stdout)


def test_cli_example_reports_the_added_squeeze():
    result = subprocess.run([sys.executable, '-m', 'wrench_distribution.cli', 'synthesize', '--problem',
                             'examples/three_finger_friction.yaml'], cwd=ROOT, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    doc = json.loads(result.stdout)
    for name in ('thumb', 'index', 'middle'):
        entry = doc['contacts'][name]['friction']
        assert entry['status'] == 'ok'
        assert entry['normal_force'] == pytest.approx(0.981 / (0.8 * 0.9), rel=1e-6)
        assert entry['utilisation'] == pytest.approx(0.9, abs=1e-6)
    added = doc['friction']['internal_load_added']
    assert set(added) == set(doc['internal_load']['basis'])
    assert np.allclose(list(added.values()), doc['internal_load']['values'])
    np.testing.assert_allclose(doc['resultant'], [0, 0, 2.943, 0, 0, 0], atol=1e-9)


def test_cli_check_infeasible_and_analysis(tmp_path):
    contacts = [{'name': 'a', 'type': 'point', 'position': [0, 0, -0.1], 'friction': 0.5},
                {'name': 'b', 'type': 'point', 'position': [0, 0, 0.1], 'friction': 0.5,
                 'normal': [0, 0, -1]}]
    # check mode: b would have to pull to push the object down with zero squeeze
    code, doc = run_cli(tmp_path, {'contacts': contacts, 'wrench': [0, 0, 4, 0, 0, 0],
                                   'options': {'friction': {'mode': 'check'}}})
    assert code == 0
    assert doc['contacts']['a']['friction']['status'] == 'ok'
    assert doc['contacts']['b']['friction'] == {'normal_force': -2.0, 'tangential_force': 0.0,
                                                'utilisation': None, 'status': 'pulling', 'mu': 0.5}
    assert 'internal_load_added' not in doc['friction']
    # auto: a squeeze fixes it (b presses on nothing, a carries 4 N)
    code, doc = run_cli(tmp_path, {'contacts': contacts, 'wrench': [0, 0, 4, 0, 0, 0],
                                   'options': {'friction': {'mode': 'auto', 'margin': 0.0}}})
    assert code == 0 and doc['friction']['worst'] == 'ok'
    assert doc['contacts']['a']['friction']['normal_force'] == pytest.approx(4.0, abs=1e-7)
    assert doc['contacts']['b']['friction']['normal_force'] == pytest.approx(0.0, abs=1e-7)
    # auto, infeasible: two feet under the object cannot pull it down
    feet = [{'name': 'a', 'type': 'point', 'position': [0.1, 0, 0], 'friction': 0.5},
            {'name': 'b', 'type': 'point', 'position': [-0.1, 0, 0], 'friction': 0.5}]
    code, doc = run_cli(tmp_path, {'contacts': feet, 'wrench': [0, 0, -4, 0, 0, 0],
                                   'options': {'friction': {'mode': 'auto'}}})
    assert code == 2 and 'friction cone' in doc['error']
    # analysis: the measured wrenches are checked too
    code, doc = run_cli(tmp_path, {'_command': 'analyze', 'contacts': contacts,
                                   'measured': {'a': [0.3, 0.4, 2.0, 0, 0, 0], 'b': [0, 0, 1.0, 0, 0, 0]}})
    assert code == 0
    assert doc['contacts']['a']['friction']['utilisation'] == pytest.approx(0.5)
    assert doc['contacts']['b']['friction']['status'] == 'pulling'
    # off: no friction report at all
    code, doc = run_cli(tmp_path, {'contacts': contacts, 'wrench': [0, 0, 4, 0, 0, 0],
                                   'options': {'friction': {'mode': 'off'}}})
    assert code == 0 and 'friction' not in doc and 'friction' not in doc['contacts']['a']
    code, doc = run_cli(tmp_path, {'contacts': contacts, 'wrench': [0, 0, 4, 0, 0, 0],
                                   'options': {'friction': {'mode': 'always'}}})
    assert code == 2 and 'friction mode' in doc['error']
