"""``wrench-distribution synthesize`` prints what the distributor node would publish.

The command line's commands must equal :meth:`DistributionEngine.step` of an engine built
the node's way (validated distributor parameters, contact poses fed to its cache) for the
same configuration, and satisfy invariants derived here, not by our helpers: the commands'
resultant about the centre of mass, each contact-frame command transported by hand with
``f' = R f, t' = R t + p x (R f)``, is the desired wrench; in friction auto mode every
contact presses (``n . f > 0``) with ``|f_t| <= (1 - margin) mu n . f``.
"""
import contextlib
import io
import json
import os
import tempfile

from hypothesis import given, HealthCheck, settings
from hypothesis import strategies as st
import numpy as np
from scipy.spatial.transform import Rotation

from wrench_distribution.cli import main
from wrench_distribution.config import load_distributor_config
from wrench_distribution.engine.distribution import DistributionEngine

SETTINGS = settings(deadline=None, max_examples=40, suppress_health_check=[HealthCheck.too_slow])


def synthesize(document: dict) -> dict:
    """Run ``synthesize`` in process on a problem document; return its JSON output."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, 'problem.json')
        with open(path, 'w', encoding='utf-8') as handle:
            json.dump(document, handle)
        text = io.StringIO()
        with contextlib.redirect_stdout(text):
            code = main(['synthesize', '--problem', path])
    output = json.loads(text.getvalue())
    assert code == 0, output
    return output


def node_commands(params: dict, positions, quaternions, wrench) -> np.ndarray:
    """Commands of an engine built as the node builds it, for one desired wrench."""
    engine = DistributionEngine(load_distributor_config(params))
    update = engine.offer_contacts(np.asarray(positions, float), np.asarray(quaternions, float), 0)
    assert update.rebuilt and update.refusal is None
    outcome = engine.step(0, list(wrench), 0, 0)
    assert outcome.valid, outcome.message
    return outcome.commands


def resultant_by_hand(commands, positions, quaternions, com) -> np.ndarray:
    """Sum of contact-frame commands moved to the CoM in object axes."""
    total = np.zeros(6)
    for command, position, quaternion in zip(commands, positions, quaternions):
        rotation = Rotation.from_quat(quaternion).as_matrix()
        force = rotation @ np.asarray(command[:3])
        total[:3] += force
        total[3:] += rotation @ np.asarray(command[3:]) + np.cross(np.subtract(position, com), force)
    return total


@st.composite
def rigid_grasps(draw):
    """Two or three rigid contacts on one line (always collinear), CoM on or off the line."""
    n = draw(st.integers(2, 3))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    unit = draw(st.sampled_from([0.001, 1.0, 1000.0]))
    direction = rng.normal(size=3)
    positions = (np.outer(rng.uniform(-0.3, 0.3, n), direction) + rng.normal(size=3) * 0.1) * unit
    positions[1] = positions[0] + direction * unit * draw(st.sampled_from([1e-3, 0.2]))
    com = positions.mean(0) + rng.normal(size=3) * unit * draw(st.sampled_from([0.0, 0.05, 1.0]))
    quaternions = rng.normal(size=(n, 4))
    quaternions /= np.linalg.norm(quaternions, axis=1)[:, None]
    wrench = np.r_[rng.uniform(-20, 20, 3), rng.uniform(-5, 5, 3) * unit]
    share = draw(st.sampled_from([0.0, 0.5, 1.0]))
    squeeze = draw(st.floats(-30.0, 30.0))
    return positions, quaternions, com, wrench, share, squeeze


@given(rigid_grasps())
@SETTINGS
def test_synthesize_is_the_engine_step_and_reproduces_the_wrench(grasp):
    positions, quaternions, com, wrench, share, squeeze = grasp
    names = [f'e{i}' for i in range(len(positions))]
    handle = {'squeeze(e0,e1)': squeeze}
    output = synthesize({
        'contacts': [{'name': n, 'type': 'rigid', 'position': p.tolist(), 'orientation': q.tolist()}
                     for n, p, q in zip(names, positions, quaternions)],
        'object': {'com': com.tolist()}, 'wrench': wrench.tolist(),
        'options': {'torque_share': share, 'internal_load': handle, 'friction': {'mode': 'off'}}})
    commands = np.array([output['contacts'][n]['wrench'] for n in names])
    expected = node_commands({
        'effectors': names, 'contact_source': 'static', 'contact_types': ['rigid'] * len(names),
        'contact_positions': positions.ravel().tolist(),
        'contact_orientations': quaternions.ravel().tolist(), 'object_com': com.tolist(),
        'torque_share': share, 'internal_load_handles': [f'squeeze(e0,e1)={squeeze!r}'],
        'friction_mode': 'off', 'force_limits': [1e9], 'torque_limits': [1e9],
        'desired_force_limit': 1e9, 'desired_torque_limit': 1e9}, positions, quaternions, wrench)
    scale = 1.0 + np.abs(expected).max()
    np.testing.assert_allclose(commands, expected, rtol=0, atol=1e-9 * scale)
    np.testing.assert_allclose(resultant_by_hand(commands, positions, quaternions, com), wrench,
                               rtol=0, atol=1e-8 * scale)
    np.testing.assert_allclose(output['resultant'], wrench, rtol=0, atol=1e-8 * scale)


@st.composite
def finger_pairs(draw):
    """Two point contacts pushing at each other, in any contact frames, CoM off the line."""
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    unit = draw(st.sampled_from([0.001, 1.0, 1000.0]))
    axis = rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    half = draw(st.sampled_from([1e-3, 0.05, 0.3])) * unit
    centre = rng.normal(size=3) * 0.1 * unit
    positions = np.array([centre - half * axis, centre + half * axis])
    com = centre + rng.normal(size=3) * unit * draw(st.sampled_from([0.0, 0.05, 1.0]))
    rotations = Rotation.random(2, random_state=int(rng.integers(2 ** 31)))
    inward = np.array([axis, -axis])  # object axes: a pushes along +axis, b along -axis
    normals = np.einsum('nji,nj->ni', rotations.as_matrix(), inward)  # in the contact frames
    mu = draw(st.sampled_from([0.3, 0.8, 1.5]))
    margin = draw(st.sampled_from([0.0, 0.1, 0.5, 0.9]))
    forces = rng.uniform(-10, 10, size=(2, 3))  # a realisable wrench: forces at the points
    wrench = np.r_[forces.sum(0), np.cross(positions - com, forces).sum(0)]
    return positions, rotations.as_quat(), normals, com, mu, margin, wrench


@given(finger_pairs())
@SETTINGS
def test_synthesize_auto_friction_is_the_engine_step_inside_every_cone(pair):
    positions, quaternions, normals, com, mu, margin, wrench = pair
    names = ['a', 'b']
    output = synthesize({
        'contacts': [{'name': n, 'type': 'point', 'position': p.tolist(), 'orientation': q.tolist(),
                      'friction': mu, 'normal': k.tolist()}
                     for n, p, q, k in zip(names, positions, quaternions, normals)],
        'object': {'com': com.tolist()}, 'wrench': wrench.tolist(),
        'options': {'friction': {'mode': 'auto', 'margin': margin}}})
    commands = np.array([output['contacts'][n]['wrench'] for n in names])
    expected = node_commands({
        'effectors': names, 'contact_source': 'static', 'contact_types': ['point', 'point'],
        'contact_positions': positions.ravel().tolist(),
        'contact_orientations': quaternions.ravel().tolist(), 'object_com': com.tolist(),
        'friction_coefficients': [mu, mu], 'contact_normals': normals.ravel().tolist(),
        'friction_mode': 'auto', 'friction_margin': margin, 'force_limits': [1e9],
        'torque_limits': [1e9], 'desired_force_limit': 1e9, 'desired_torque_limit': 1e9,
        'internal_load_limit': 1e9}, positions, quaternions, wrench)
    scale = 1.0 + np.abs(expected).max()
    np.testing.assert_allclose(commands, expected, rtol=0, atol=1e-9 * scale)
    np.testing.assert_allclose(resultant_by_hand(commands, positions, quaternions, com), wrench,
                               rtol=0, atol=1e-8 * scale)
    for command, normal in zip(commands, normals):
        unit_normal = normal / np.linalg.norm(normal)
        pressing = float(unit_normal @ command[:3])
        tangential = np.linalg.norm(command[:3] - pressing * unit_normal)
        assert pressing > 0.0
        assert tangential <= (1.0 - margin) * mu * pressing + 1e-7 * scale
        assert np.all(command[3:] == 0.0)  # a point contact applies no torque


@given(rigid_grasps(), st.sampled_from([0.5, 3.0, 50.0]), st.sampled_from(['zero', 'scale']))
@SETTINGS
def test_synthesize_limits_are_the_engine_step_and_never_exceeded(grasp, force_limit, policy):
    positions, quaternions, com, wrench, share, squeeze = grasp
    names = [f'e{i}' for i in range(len(positions))]
    torque_limit = force_limit * np.abs(positions).max()
    output = synthesize({
        'contacts': [{'name': n, 'type': 'rigid', 'position': p.tolist(), 'orientation': q.tolist()}
                     for n, p, q in zip(names, positions, quaternions)],
        'object': {'com': com.tolist()}, 'wrench': wrench.tolist(),
        'limits': {'force': force_limit, 'torque': [torque_limit] * len(names), 'on_limit': policy},
        'options': {'torque_share': share, 'friction': {'mode': 'off'}}})
    commands = np.array([output['contacts'][n]['wrench'] for n in names])
    engine = DistributionEngine(load_distributor_config({
        'effectors': names, 'contact_source': 'static', 'contact_types': ['rigid'] * len(names),
        'contact_positions': positions.ravel().tolist(),
        'contact_orientations': quaternions.ravel().tolist(), 'object_com': com.tolist(),
        'torque_share': share, 'friction_mode': 'off', 'force_limits': [force_limit],
        'torque_limits': [torque_limit], 'desired_force_limit': 1e9, 'desired_torque_limit': 1e9,
        'on_limit': policy}))
    update = engine.offer_contacts(positions, quaternions, 0)
    assert update.rebuilt and update.refusal is None
    outcome = engine.step(0, list(wrench), 0, 0)
    np.testing.assert_allclose(commands, outcome.commands, rtol=0,
                               atol=1e-9 * (1.0 + np.abs(outcome.commands).max()))
    assert ('limit' in output) == (outcome.cause == 'limit')
    for command in commands:  # norms by hand, with the rounding of the JSON's 17 digits
        assert np.sqrt(np.sum(command[:3] ** 2)) <= force_limit * (1 + 1e-12)
        assert np.sqrt(np.sum(command[3:] ** 2)) <= torque_limit * (1 + 1e-12)
    resultant = resultant_by_hand(commands, positions, quaternions, com)
    if 'limit' not in output:
        np.testing.assert_allclose(resultant, wrench, rtol=0, atol=1e-8 * (1 + np.abs(wrench).max()))
    elif policy == 'zero':
        assert not commands.any()
    else:  # the whole set scaled: the resultant is the desired wrench times one s in (0, 1)
        s = float(resultant @ wrench) / float(wrench @ wrench)
        assert 0.0 < s < 1.0
        np.testing.assert_allclose(resultant, s * wrench, rtol=0, atol=1e-8 * (1 + np.abs(wrench).max()))
        np.testing.assert_allclose(output['resultant'], resultant, rtol=0,
                                   atol=1e-8 * (1 + np.abs(wrench).max()))


def test_synthesize_hold_over_a_limit_is_an_error_and_bad_limits_are_named(tmp_path):
    problem = {'contacts': [{'name': 'a', 'position': [0, 0.1, 0]}, {'name': 'b', 'position': [0, -0.1, 0]}],
               'wrench': [0, 0, 100, 0, 0, 0], 'limits': {'force': 10}}
    path = tmp_path / 'p.json'
    for limits, message in (({'force': 10}, 'on_limit=hold: no valid command yet'),
                            ({'force': [1, 2, 3]}, 'limits.force'),
                            ({'force': -1}, 'limits.force'),
                            ({'on_limit': 'clip'}, 'limits.on_limit'),
                            ({'speed': 1}, '"limits": unknown key(s) \'speed\''),
                            ({'torqe': 1}, "did you mean 'torque'")):
        path.write_text(json.dumps({**problem, 'limits': limits}))
        text = io.StringIO()
        with contextlib.redirect_stdout(text):
            code = main(['synthesize', '--problem', str(path)])
        assert code == 2 and message in json.loads(text.getvalue())['error'], text.getvalue()
