"""``wrench-distribution check-config``: both sections of a file compared, every disagreement listed.

Every shipped configuration passes; a copy of ``config/dual_arm.yaml`` with one
disagreement planted gives exactly that finding (exit status 1); several planted at once
give them all in one list; a bad file gives exit status 2.

The command runs in this process (``cli.main``, as the fuzz tests do; the console script
itself is run by the docs' and the UR5e cell's tests): a process per file cost 0.4 s of CPU.
"""
from __future__ import annotations

import contextlib
import glob
import io
import json
import os
from pathlib import Path

import pytest
import yaml

from ros_harness import REPO
from wrench_distribution import cli
from wrench_distribution.config import validate_params
from wrench_distribution.config.check import check_file, config_findings
from wrench_distribution.ros_args import param_files

ROOT = Path(REPO)
CONFIGS = sorted(glob.glob(str(ROOT / 'config' / '*.yaml')))
DIST, ANA = '/**/wrench_distributor', '/**/wrench_analyzer'


def _check_config(*args) -> tuple:
    """Run ``wrench-distribution check-config *args``: exit status, standard output."""
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        status = cli.main(['check-config'] + [str(arg) for arg in args])
    assert stderr.getvalue() == '', stderr.getvalue()
    return status, stdout.getvalue()


def _cli(path) -> tuple:
    status, stdout = _check_config(path)
    return status, json.loads(stdout)


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
    ('gravity_ignored_without_holding', lambda d: _set(d, DIST, gravity=[0.0, 0.0, -9.0]), []),
    ('gravity_when_holding', lambda d: _set(d, DIST, hold_object_weight=True,
                                            gravity=[0.0, -0.5, -9.8]),
     [('gravity', 'gravity')]),
    ('same_gravity_when_holding', lambda d: _set(d, DIST, hold_object_weight=True), []),
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
    ('{/**/wrench_distributor: {ros__parameters: {effectors: [a, b], '
     'internal_load_handles: ["sqeeze(a,b)=20.0"]}}}', "unknown kind 'sqeeze' (did you mean 'squeeze'?)"),
    ('{wrench_distributor: {ros__parameters: {effectors: [a, b], '
     'internal_load_handles: ["squeeze(a,c)=20.0"]}}}', "unknown effector 'c'"),
    ('[1, 2', 'parameter file'),
    ('/**/wrench_distributor: {ros__parameters: {effectors: [a, b], contact_types: [rigid]}}\n'
     '/**/wrench_analyzer: {ros__parameters: {effectors: [a, b]}}\n', 'contact_types'),
])
def test_a_bad_file_exits_2(tmp_path, content, why):
    path = tmp_path / 'bad.yaml'
    path.write_text(content)
    status, out = _cli(path)
    assert status == 2 and why in out['error']


def test_a_file_for_one_node_is_judged_for_that_node(tmp_path):
    """A robot without foot sensors runs the distributor alone: its file passes alone.

    ``--node`` names the nodes a file must configure: the missing section is then an error.
    """
    path = tmp_path / 'feet.yaml'
    path.write_text(yaml.safe_dump({DIST: _base()[DIST]}))
    status, out = _cli(path)
    assert (status, list(out['sections'])) == (0, ['wrench_distributor'])
    status, stdout = _check_config(path, '--node', 'wrench_distributor', '--node', 'wrench_analyzer')
    assert status == 2 and "no section for node 'wrench_analyzer'" in json.loads(stdout)['error']


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


# -- the judge: other nodes' sections, rcl's rules, misspellings, plausibility ----------------
def _controllers(force) -> dict:
    """Return a controller manager file's sections, as ros2_controllers documents them (Jazzy)."""
    return {'controller_manager': {'ros__parameters': {
                'update_rate': 500,
                'left_admittance_controller': {'type': 'admittance_controller/AdmittanceController'}}},
            'left_admittance_controller': {'ros__parameters': {
                'joints': ['shoulder_pan_joint', 'elbow_joint'],
                'ft_sensor': {'name': 'left_ft', 'frame': {'id': 'left_ft_sensor'}},
                'gravity_compensation': {'frame': {'id': 'left_ft_sensor'},
                                         'CoG': {'pos': [0.0, 0.0, 0.04], 'force': force}}}}}


TOOLS = ('tools', 'tool_masses (left) / left_admittance_controller.gravity_compensation')
FRAME = ('frames', 'left_admittance_controller.ft_sensor.frame.id')
COG = ('tools', 'tool_coms (left) / left_admittance_controller.gravity_compensation.CoG.pos')


@pytest.mark.parametrize('force,change,findings', [
    (0.9 * 9.81, {}, []), (4.9, {}, [TOOLS]),
    (0.9 * 9.81, {'ft_sensor': {'name': 'left_ft', 'frame': {'id': 'left_tool0'}}}, [FRAME]),
    (0.9 * 9.81, {'gravity_compensation': {'frame': {'id': 'left_ft_sensor'},
                                           'CoG': {'pos': [0.0, 0.0, 0.14], 'force': 8.829}}},
     [COG])])
def test_controller_sections_are_read_and_listed_as_ignored(tmp_path, force, change, findings):
    """docs/real_cell.md's table: the controller's frame ids and tool against the nodes'.

    ``CoG.force`` is one double (N) on Jazzy: compared with tool_masses, never a crash; a
    ``ft_sensor.frame.id`` other than the contact frame (the controller drops the commands),
    a ``CoG.pos`` 10 cm off ``tool_coms``: one finding each.
    """
    controllers = _controllers(force)
    controllers['left_admittance_controller']['ros__parameters'].update(change)
    path = tmp_path / 'cell.yaml'
    path.write_text(yaml.safe_dump(dict(_base(), **controllers)))
    status, out = _cli(path)
    assert out['ignored'] == ['controller_manager', 'left_admittance_controller']
    assert sorted(out['sections']) == ['wrench_analyzer', 'wrench_distributor']
    assert [(f['concern'], f['parameter']) for f in out['findings']] == findings
    assert (status, out['errors']) == (1 if findings else 0, [])


def _judged(tmp_path, text: str, *args) -> tuple:
    path = tmp_path / 'cfg.yaml'
    path.write_text(text)
    return _check_config(path, *args)


def _text(doc: dict) -> str:
    return yaml.safe_dump(doc, default_flow_style=None)


#: (name, change to dual_arm.yaml's text, severity, section, parameter, words of the message
#: and fix): the behaviour table of docs/command_line.md
JUDGED = [
    ('mixed list', ('contact_positions: [0.0, 0.38, 0.0,', 'contact_positions: [0, 0.38, 0.0,'),
     'error', 'file', '/**/wrench_distributor.ros__parameters.contact_positions',
     ['Sequence should be of same type', '[0.0, 0.38, 0.0,']),
    ('integer for a double', ('object_mass: 4.0', 'object_mass: 4'), 'warning', 'wrench_distributor',
     'object_mass', ['reads it as 4.0', 'write 4.0']),
    ('misspelling', ('tool_masses:', 'tool_mass:'), 'error', 'wrench_analyzer', 'tool_mass',
     ['refuses to start', "did you mean 'tool_masses'"]),
    ('millimetres', ('contact_positions: [0.0, 0.38, 0.0,   0.0, -0.38, 0.0]',
                     'contact_positions: [0.0, 380.0, 0.0,   0.0, -380.0, 0.0]'),
     'warning', 'wrench_distributor', 'contact_positions',
     ['did you mean metres? [0.0, 380.0, 0.0] -> [0.0, 0.38, 0.0]']),
    ('non-unit quaternion', ('contact_orientations: [0.7071068, 0.0, 0.0, 0.7071068,',
                             'contact_orientations: [1.0, 0.0, 0.0, 1.0,'),
     'warning', 'wrench_distributor', 'contact_orientations', ['norm 1.41421', 'normalises it', '90 deg']),
    ('tool weight in newtons', ('tool_masses: [0.9, 0.9]', 'tool_masses: [88.3, 0.9]'),
     'warning', 'wrench_analyzer', 'tool_masses', ['a weight in newtons', '9 kg']),
    ('centre of mass far out', ('object_com: [0.0, 0.0, 0.05]', 'object_com: [0.0, 0.0, 4.0]'),
     'warning', 'wrench_distributor', 'object_com', ['from the contacts']),
    ('wrong type', ('on_timeout: zero', 'on_timeout: 0'), 'error', 'wrench_distributor', 'on_timeout',
     ['expected a string', 'one of: zero, stop']),
    ('wrong length', ('tool_coms: [0.0, 0.0, 0.04,   0.0, 0.0, 0.04]', 'tool_coms: [0.0, 0.0, 0.04]'),
     'error', 'wrench_analyzer', 'tool_coms', ['has 3 entries, expected 6']),
]


@pytest.mark.parametrize('name,change,severity,section,parameter,words', JUDGED, ids=[c[0] for c in JUDGED])
def test_each_rule_is_judged_with_its_fix(tmp_path, name, change, severity, section, parameter, words):
    text = (ROOT / 'config' / 'dual_arm.yaml').read_text()
    assert change[0] in text
    status, stdout = _judged(tmp_path, text.replace(change[0], change[1]))
    out = json.loads(stdout)
    problems = [p for p in out[severity + 's'] if (p['section'], p['parameter']) == (section, parameter)]
    assert problems, out
    said = problems[0]['message'] + ' ' + problems[0]['fix']
    assert all(w in said for w in words), said
    assert status == (2 if severity == 'error' else 0)
    assert out['ok'] is (severity == 'warning')


def test_every_section_error_in_one_run(tmp_path):
    """Errors of both sections, of each kind, and a mixed list elsewhere: all in one report."""
    doc = _set(_base(), DIST, object_mas=4.0, on_limit='drop', force_limits=[-1.0])
    doc = _set(doc, ANA, tool_mass=[0.9, 0.9], sensor_signs=[2, -1], gravity=[0.0, 0.0])
    doc.update(_controllers([0, 0.0, -8.8]))
    status, stdout = _judged(tmp_path, _text(doc))
    got = {(p['section'], p['parameter']) for p in json.loads(stdout)['errors']}
    assert {(DIST.split('/')[-1], 'object_mas'), ('wrench_distributor', 'on_limit'),
            ('wrench_distributor', 'force_limits'), ('wrench_analyzer', 'tool_mass'),
            ('wrench_analyzer', 'gravity'), ('wrench_analyzer', 'sensor_signs'),
            ('file', 'left_admittance_controller.ros__parameters.gravity_compensation.CoG.force')} <= got
    assert status == 2


def test_allow_unknown_parameters_makes_a_misspelling_a_warning(tmp_path):
    doc = _set(_base(), ANA, tool_mass=[0.9, 0.9], allow_unknown_parameters=True)
    status, stdout = _judged(tmp_path, _text(doc))
    warning = json.loads(stdout)['warnings'][0]
    meant = "did you mean 'tool_masses' or 'tool_coms' or 'virtual_masses'?"
    assert (status, warning['parameter'], warning['fix']) == (0, 'tool_mass', meant)


def test_text_output_names_each_problem_on_a_line(tmp_path):
    text = (ROOT / 'config' / 'dual_arm.yaml').read_text().replace('tool_masses:', 'tool_mass:')
    status, stdout = _judged(tmp_path, text, '--format', 'text')
    lines = stdout.splitlines()
    assert status == 2 and lines[0].endswith('judged wrench_distributor, wrench_analyzer')
    assert ('error: wrench_analyzer: tool_mass: not a parameter of the analyzer: the node refuses to '
            "start Fix: did you mean 'tool_masses'") in stdout
    assert lines[-1] == '1 error(s), 0 warning(s), 0 finding(s)'
