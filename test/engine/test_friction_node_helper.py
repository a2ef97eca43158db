"""The friction stage (engine/friction.py) and the friction topic (ros/friction.py) without DDS."""
import numpy as np
import pytest

from wrench_distribution.config import load_distributor_config
from wrench_distribution.core.contacts import ContactArrays
from wrench_distribution.engine.cache import DistributorCache
from wrench_distribution.engine.friction import FrictionStage, utilisation_color
from wrench_distribution.engine.solver import WeightedSolver
from wrench_distribution.ros.friction import friction_message

QUATS = [[0.5, -0.5, 0.5, 0.5], [-0.6830127, -0.1830127, -0.6830127, 0.1830127],
         [-0.1830127, -0.6830127, -0.1830127, 0.6830127]]
PARAMS = {
    'effectors': ['thumb', 'index', 'middle'], 'contact_types': ['point'] * 3,
    'contact_source': 'static',
    'contact_positions': [0.0, 0.04, 0.0, -0.034641, -0.02, 0.0, 0.034641, -0.02, 0.0],
    'contact_orientations': sum(QUATS, []), 'friction_coefficients': [0.5, 0.0, 0.5],
    'contact_normals': [0, 0, 2.0, 0, 0, 1, 0, 0, 1],
}


def stage_and_solver(mode, **extra):
    config = load_distributor_config(dict(PARAMS, friction_mode=mode, **extra))
    stage = FrictionStage(config.settings.friction, mode)
    cache = DistributorCache(config.effectors, config.contact_types, config.object_model,
                             config.options, contact_extras=stage.extras)
    cache.update(np.array(PARAMS['contact_positions']).reshape(3, 3), np.array(QUATS))
    assert [c.friction for c in cache.distributor.contacts] == [0.5, None, 0.5]
    np.testing.assert_allclose(cache.distributor.contacts[0].normal, [0, 0, 1])
    return stage, cache.distributor


def test_object_frame_commands_get_the_same_load_as_contact_frame_ones():
    stage, dist = stage_and_solver('auto')
    wrench = np.array([0.1, -0.2, 2.943, 0.0, 0.001, 0.0])
    contact = stage.apply(dist, dist.wrench_commands(wrench), False)
    added = stage.added.copy()
    obj = stage.apply(dist, dist.wrench_commands(wrench, object_frame=True), True)
    stage.check_sent(dist, obj, True)
    np.testing.assert_allclose(stage.added, added, atol=1e-9)
    rotations = [c.rotation for c in dist.contacts]
    for r, c, o in zip(rotations, contact, obj):
        np.testing.assert_allclose(r @ c[:3], o[:3], atol=1e-9)
    assert stage.condition() is None or stage.condition()[0] < 2
    # the index fingertip has no coefficient: unilateral only, no utilisation
    assert stage.check.status[1] in ('ok', 'unloaded') and np.isnan(stage.check.utilisation[1])


@pytest.mark.parametrize('behaviour', ['hold', 'zero'])
def test_infeasible_falls_back_and_reports_an_error(behaviour):
    # two feet under the object (normals +z): they can lift it, never pull it down
    config = load_distributor_config({
        'effectors': ['left', 'right'], 'contact_types': ['point', 'point'],
        'contact_source': 'static', 'contact_positions': [0.1, 0, 0, -0.1, 0, 0],
        'friction_coefficients': [0.6, 0.6], 'friction_mode': 'auto',
        'on_friction_infeasible': behaviour})
    stage = FrictionStage(config.settings.friction, 'auto')
    dist = WeightedSolver(ContactArrays.of(config.contacts), config.object_model, config.options, None)
    up = np.array([0.5, 0.0, 10.0, 0, 0, 0])
    good = stage.apply(dist.friction_view, dist.wrench_commands(up), False)
    stage.check_sent(dist.friction_view, good, False)
    assert good is not None and np.all(good[:, 2] > 0)
    down = np.array([0.0, 0.0, -10.0, 0, 0, 0])
    assert stage.apply(dist.friction_view, dist.wrench_commands(down), False) is None
    fallback = stage.fallback()
    if behaviour == 'hold':
        np.testing.assert_array_equal(fallback, good)
    else:
        np.testing.assert_array_equal(fallback, np.zeros((2, 6)))
    level, message = stage.condition()
    assert level == 2 and 'no internal load' in message and behaviour[:3] in message


def test_colours_and_message_never_nan():
    assert utilisation_color('ok', 0.0) == (0.0, 1.0, 0.0)
    assert utilisation_color('near_limit', 0.95)[0] == 1.0
    assert utilisation_color('pulling', float('nan')) == (1.0, 0.0, 1.0)
    assert utilisation_color('slipping', float('nan')) == (1.0, 0.0, 0.0)
    stage, dist = stage_and_solver('check')
    commands = np.zeros((3, 6))
    commands[0, 2] = -1.0  # thumb pulls
    commands[2, :3] = [0.3, 0.0, 1.0]
    check = stage.model(dist).check(commands)
    msg = friction_message(check, ['thumb', 'index', 'middle'])
    data = np.array(msg.data).reshape(3, 3)
    assert np.isfinite(data).all()
    np.testing.assert_allclose(data[:, 0], [-1.0, -1.0, 0.6])
    np.testing.assert_allclose(data[:, 2], [3, 4, 0])
