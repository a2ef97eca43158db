"""The simulator's effector models: one registry entry each, and nobody else branches on the name.

The registry (``sim/scenarios/models.py``) maps each ``effector_model`` value to its builder,
its checks, its node options and its report hooks. Checked here: its names are the ones the
schema accepts; no module of the package reads the parameter but through it; each model's
checks refuse what the model cannot simulate (point contacts under arms, arms with joints
without bases or turning before the grasp); each builds physics that carries its sensors
and, where the node publishes a status, as many status columns as the entry labels; the
arms take the controller's move as their reference.
"""
import copy
from pathlib import Path
import re

import numpy as np
import pytest

from ros_harness import REPO
from wrench_distribution.config.schema import ConfigError
from wrench_distribution.config.sim import EFFECTOR_MODELS as SCHEMA_NAMES, SIM_PARAMS
from wrench_distribution.core.codec import split_labels
from wrench_distribution.sim import scenarios
from wrench_distribution.sim.scenarios.models import effector_model, EFFECTOR_MODELS

PACKAGE = Path(REPO) / 'wrench_distribution'
#: One shipped scenario per model.
SCENARIO = {'force': 'dual_arm', 'admittance': 'dual_arm_admittance', 'joints': 'dual_arm_joints'}


def _sim(name: str) -> dict:
    return copy.deepcopy(scenarios.load_sections(SCENARIO[name])['object_sim'])


def test_the_registry_holds_every_name_the_schema_accepts_and_no_other():
    spec = next(s for s in SIM_PARAMS if s.name == 'effector_model')
    assert tuple(EFFECTOR_MODELS) == tuple(SCHEMA_NAMES) == tuple(spec.accepted)
    assert set(SCENARIO) == set(EFFECTOR_MODELS)
    for name, entry in EFFECTOR_MODELS.items():
        assert entry.name == name
        assert scenarios.sim_params(_sim(name))['effector_model'] == name


def test_no_module_reads_the_model_name_but_the_registry():
    """``effector_model`` is read through :func:`effector_model` alone (its entry, not its name)."""
    reads = re.compile(r"""\[['"]effector_model['"]\]|get\(['"]effector_model['"]""")
    readers = sorted(str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob('*.py')
                     if reads.search(path.read_text(encoding='utf-8')))
    assert readers == ['sim/scenarios/models.py']
    assert not [path for path in PACKAGE.rglob('*.py') if 'ARM_EFFECTOR_MODELS' in path.read_text()]


def test_an_unknown_model_is_refused_naming_the_accepted_ones():
    with pytest.raises(ConfigError, match="'effector_model'.*force, admittance, joints"):
        effector_model({'effector_model': 'hydraulic'})
    with pytest.raises(ConfigError, match="'effector_model'"):
        scenarios.sim_params(dict(_sim('force'), effector_model='hydraulic'))
    assert effector_model({}) is EFFECTOR_MODELS['force']  # the schema's default


@pytest.mark.parametrize('name', ['admittance', 'joints'])
def test_arms_refuse_point_contacts(name):
    sim = _sim(name)
    sim['contact_types'] = ['rigid', 'point']
    with pytest.raises(ConfigError, match="'effector_model': admittance arms hold rigid grasps only"):
        scenarios.sim_params(sim)
    with pytest.raises(ConfigError, match='object_sim: parameter .effector_model'):
        scenarios.validate_sections(dict(scenarios.load_sections(SCENARIO[name]), object_sim=sim))


def test_ideal_bodies_take_point_contacts():
    sim = _sim('force')
    sim['contact_types'] = ['rigid', 'point']
    assert list(scenarios.sim_params(sim)['contact_types']) == ['rigid', 'point']


def test_arms_with_joints_need_their_bases_and_no_turn_before_the_grasp():
    sim = _sim('joints')
    with pytest.raises(ConfigError, match="'arm_base_positions': the arms with joints need"):
        scenarios.sim_params(dict(sim, arm_base_positions=[]))
    turns = [0.1, 0.2, 0.0, 0.0, 0.3, 0.4, 0.2, 0.0, 0.0, 0.0]  # out and back before the grasp
    with pytest.raises(ConfigError, match="'free_tilts': not with effector_model joints"):
        scenarios.sim_params(dict(sim, free_tilts=turns, grasp_time=1.0))
    admittance = _sim('admittance')
    checked = scenarios.sim_params(dict(admittance, free_tilts=turns, grasp_time=1.0))
    assert checked['free_tilts'] == turns  # the Cartesian arm tips turn with the fixture


@pytest.mark.parametrize('name', list(SCENARIO))
def test_each_model_builds_physics_with_its_sensors_and_status(name):
    p = scenarios.sim_params(_sim(name))
    entry = effector_model(p)
    sim = entry.build(p)
    n = len(p['effectors'])
    assert sim.sensors is not None and len(sim.sensors.models) == n
    assert sim.r.shape == (n, 3)
    if entry.status is not None:
        topic, labels = entry.status
        assert topic and np.shape(sim.status()) == (n, len(split_labels(labels)))
    assert entry.element_summary == entry.wrench_references  # the arms' runs are judged per element


@pytest.mark.parametrize('name', list(SCENARIO))
def test_the_arms_follow_the_controller_move_and_ideal_bodies_do_not(name):
    sections = copy.deepcopy(scenarios.load_sections(SCENARIO[name]))
    sections['object_controller'].update(move_start=1.25, move_duration=0.75,
                                         move_offset=[0.0, 0.0, 0.1], tilts=[])
    before = copy.deepcopy(sections['object_sim'])
    effector_model(sections['object_sim']).prepare(sections)
    sim = sections['object_sim']
    if effector_model(sim).wrench_references:
        assert (sim['arm_move_start'], sim['arm_move_duration']) == (1.25, 0.75)
        assert sim['arm_move_offset'] == [0.0, 0.0, 0.1] and sim['arm_tilts'] == []
        assert sim['arm_move_offset'] is not sections['object_controller']['move_offset']
    else:
        assert sim == before
