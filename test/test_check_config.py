"""``wrench-distribution check-config``: both sections of a file compared, every disagreement listed.

Every shipped configuration passes; a copy of ``config/dual_arm.yaml`` with one
disagreement planted gives exactly that finding (exit status 1); several planted at once
give them all in one list; a bad file gives exit status 2.
"""
from __future__ import annotations

import glob
import json
import os
from pathlib import Path
import subprocess
import sys

import pytest
import yaml

from wrench_distribution.config import validate_params
from wrench_distribution.config.check import check_file, config_findings, param_files

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = sorted(glob.glob(str(ROOT / 'config' / '*.yaml')))
DIST, ANA = '/**/wrench_distributor', '/**/wrench_analyzer'


def _cli(path) -> tuple:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    run = subprocess.run([sys.executable, '-m', 'wrench_distribution.cli', 'check-config',
                          str(path)], capture_output=True, text=True, env=env, timeout=60)
    return run.returncode, json.loads(run.stdout)


@pytest.mark.parametrize('path', CONFIGS, ids=os.path.basename)
def test_every_shipped_configuration_passes(path):
    status, out = _cli(path)
    assert (status, out['ok'], out['findings']) == (0, True, [])


def _base() -> dict:
    with open(ROOT / 'config' / 'dual_arm.yaml') as f:
        return yaml.safe_load(f)


def _set(doc: dict, section: str, **values) -> dict:
    doc[section]['ros__parameters'].update(values)
    return doc


def _flip_quaternions(doc: dict) -> dict:
    q = doc[ANA]['ros__parameters']['contact_orientations']
    doc[ANA]['ros__parameters']['contact_orientations'] = [-x for x in q]
    return doc


def _swap_effectors(doc: dict) -> dict:
    """List right before left in the analyzer, every per-effector array swapped with it."""
    p = doc[ANA]['ros__parameters']
    for name, width in (('effectors', 1), ('contact_types', 1), ('contact_positions', 3),
                        ('contact_orientations', 4), ('contact_frames', 1), ('ft_topics', 1),
                        ('sensor_signs', 1), ('tool_masses', 1), ('tool_coms', 3)):
        v = p[name]
        p[name] = v[width:] + v[:width]
    return doc


def _controller(weight: float):
    def plant(doc: dict) -> dict:
        doc['/**/left_admittance_controller'] = {'ros__parameters': {
            'gravity_compensation': {'CoG': {'force': [0.0, 0.0, -weight],
                                             'pos': [0.0, 0.0, 0.04]}}}}
        return doc
    return plant


#: (name, mutation of dual_arm.yaml, expected (concern, parameter) findings)
CASES = [
    ('order', _swap_effectors, [('effectors', 'effectors')]),
    ('names', lambda d: _set(d, ANA, effectors=['left', 'other']), [('effectors', 'effectors')]),
    ('object_frame', lambda d: _set(d, ANA, object_frame='tray'), [('frames', 'object_frame')]),
    ('contact_frames', lambda d: _set(d, ANA, contact_frames=['left_ft_sensor', 'right_tool']),
     [('frames', 'contact_frames')]),
    ('contact_types', lambda d: _set(d, ANA, contact_types=['rigid', 'point']),
     [('contacts', 'contact_types')]),
    ('contact_source', lambda d: _set(d, ANA, contact_source='topic'),
     [('contacts', 'contact_source')]),
    ('poses_topic', lambda d: _set(_set(d, DIST, contact_source='topic'), ANA,
                                   contact_source='topic', contact_poses_topic='grasps'),
     [('contacts', 'contact_poses_topic')]),
    ('positions', lambda d: _set(d, ANA, contact_positions=[0.0, 0.38, 0.0, 0.0, -0.36, 0.0]),
     [('contacts', 'contact_positions')]),
    ('orientations', lambda d: _set(d, ANA, contact_orientations=[0.0, 0.0, 0.0, 1.0] * 2),
     [('contacts', 'contact_orientations')]),
    ('same_rotation', _flip_quaternions, []),  # q and -q: the same contact frame
    ('object_mass', lambda d: _set(d, ANA, object_mass=5.0), [('object', 'object_mass')]),
    ('object_com', lambda d: _set(d, DIST, object_com=[0.0, 0.0, 0.0]), [('object', 'object_com')]),
    ('torque_share', lambda d: _set(d, ANA, torque_share=0.5), [('object', 'torque_share')]),
    ('command_sign', lambda d: _set(d, DIST, command_sign=-1),
     [('signs', 'command_sign/sensor_signs')]),
    ('sensor_sign', lambda d: _set(d, ANA, sensor_signs=[-1, 1]),
     [('signs', 'command_sign/sensor_signs')]),
    ('internal_load_topic', lambda d: _set(d, ANA, internal_load_topic='internal_load'),
     [('topics', 'internal_load_topic')]),
    ('ft_on_commands', lambda d: _set(d, ANA, ft_topics=[
        '/left_admittance_controller/wrench_reference', '/right_ft_sensor_broadcaster/wrench']),
     [('topics', 'command_topics/ft_topics')]),
    ('tool_mass', _controller(0.5 * 9.81),
     [('tools', 'tool_masses (left) / left_admittance_controller.gravity_compensation')]),
    ('tool_mass_agrees', _controller(0.9 * 9.81), []),
]


@pytest.mark.parametrize('name,mutate,expected', CASES, ids=[c[0] for c in CASES])
def test_each_disagreement_is_found(tmp_path, name, mutate, expected):
    path = tmp_path / 'cfg.yaml'
    path.write_text(yaml.safe_dump(mutate(_base())))
    status, out = _cli(path)
    got = [(f['concern'], f['parameter']) for f in out['findings']]
    assert got == expected
    assert status == (1 if expected else 0)
    assert out['ok'] is (not expected)


def test_every_disagreement_in_one_list():
    doc = _set(_base(), ANA, object_frame='tray', contact_types=['point', 'point'], object_mass=1.0,
               internal_load_topic='internal_load')
    doc = _set(doc, DIST, command_sign=-1)
    got = {(f.concern, f.parameter) for f in check_file(doc)}
    assert got == {('frames', 'object_frame'), ('contacts', 'contact_types'),
                   ('object', 'object_mass'), ('topics', 'internal_load_topic'),
                   ('signs', 'command_sign/sensor_signs')}


def test_simulator_commands_need_command_sign_one():
    """With object_sim consuming the commands, the sign rule is the simulator's (+1)."""
    with open(ROOT / 'config' / 'demo_dual_arm.yaml') as f:
        doc = yaml.safe_load(f)
    assert check_file(doc) == []
    doc['wrench_distributor']['ros__parameters']['command_sign'] = -1
    assert [(f.concern, f.parameter) for f in check_file(doc)] == [
        ('signs', 'command_sign/sensor_signs')]


@pytest.mark.parametrize('content,why', [
    ('{/**/wrench_distributor: {ros__parameters: {effectors: [a, b]}}}', 'wrench_analyzer'),
    ('[1, 2', 'parameter file'),
    ('/**/wrench_distributor: {ros__parameters: {effectors: [a, b], contact_types: [rigid]}}\n'
     '/**/wrench_analyzer: {ros__parameters: {effectors: [a, b]}}\n', 'contact_types'),
])
def test_a_bad_file_exits_2(tmp_path, content, why):
    path = tmp_path / 'bad.yaml'
    path.write_text(content)
    status, out = _cli(path)
    assert status == 2 and why in out['error']


def test_a_missing_file_exits_2(tmp_path):
    status, out = _cli(tmp_path / 'none.yaml')
    assert status == 2 and 'error' in out


def test_findings_take_validated_sections():
    base = _base()
    dist = validate_params('distributor', base[DIST]['ros__parameters'])
    ana = validate_params('analyzer', base[ANA]['ros__parameters'])
    assert config_findings(dist, ana) == []
    assert [f.concern for f in config_findings(dist, dict(ana, sensor_signs=[1, 1]))] == ['signs']


def test_param_files_of_a_ros_command_line():
    argv = ['analyzer', '--params-file', 'not_ros.yaml', '--ros-args', '-r', '__ns:=/a',
            '--params-file', 'one.yaml', '-p', 'x:=1', '--params-file', 'two.yaml', '--', 'x']
    assert param_files(argv) == ['one.yaml', 'two.yaml']


def test_nodes_warn_only_for_files_with_both_sections(tmp_path):
    both = tmp_path / 'both.yaml'
    both.write_text(yaml.safe_dump(_set(_base(), DIST, command_sign=-1)))
    one = tmp_path / 'one.yaml'
    one.write_text(yaml.safe_dump({ANA: _base()[ANA]}))
    warnings: list = []
    from wrench_distribution.config.check import warn_findings
    argv = ['analyzer', '--ros-args', '--params-file', str(one), '--params-file', str(both)]
    assert warn_findings(warnings.append, argv) == 1
    assert warnings[0].startswith(f'{both}: signs: command_sign/sensor_signs')
