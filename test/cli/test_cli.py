"""The ``wrench-distribution`` command line: JSON in the documented shape, exit status 2 on errors."""
import contextlib
import io
import json
from pathlib import Path
import subprocess
import sys

import numpy as np
import pytest

from ros_harness import REPO
from wrench_distribution import cli

ROOT = Path(REPO)


def run(*args, cwd=ROOT):
    result = subprocess.run([sys.executable, '-m', 'wrench_distribution.cli', *args], cwd=cwd,
                            capture_output=True, text=True, timeout=60)
    return result.returncode, result.stdout, result.stderr


def test_synthesize_dual_arm_example():
    code, out, _ = run('synthesize', '--problem', 'examples/dual_arm_problem.yaml')
    assert code == 0
    doc = json.loads(out)
    assert set(doc) >= {'contacts', 'virtual_masses', 'resultant', 'residual', 'regime', 'internal_load'}
    assert set(doc['contacts']) == {'left', 'right'}
    left = np.array(doc['contacts']['left']['wrench_object'])
    right = np.array(doc['contacts']['right']['wrench_object'])
    # independent check of the resultant about the CoM (0, 0, -0.1)
    arm_l, arm_r = np.array([0, 0.3, 0.1]), np.array([0, -0.3, 0.1])
    force = left[:3] + right[:3]
    torque = left[3:] + right[3:] + np.cross(arm_l, left[:3]) + np.cross(arm_r, right[:3])
    np.testing.assert_allclose(np.r_[force, torque], [0, 0, 49.05, 1.0, 0, 0], atol=1e-9)
    # the right contact frame is turned 180 deg about z: its command has x and y flipped
    np.testing.assert_allclose(doc['contacts']['right']['wrench'][:2], -right[:2], atol=1e-12)
    basis = doc['internal_load']['basis']
    assert doc['internal_load']['values'][basis.index('squeeze(left,right)')] == pytest.approx(20.0)
    assert doc['regime']['name'] == 'extension' and 'com_off_affine_hull' in doc['regime']['reasons']


def test_analyze_paper_example():
    code, out, _ = run('analyze', '--problem', 'examples/sphere_ix_c.yaml')
    assert code == 0
    doc = json.loads(out)
    # eq. 96, contact 1
    np.testing.assert_allclose(doc['contacts']['c1']['constraint'], [-0.048, 0.205, -0.438, 0, -0.5, -0.5],
                               atol=1.5e-3)
    np.testing.assert_allclose(doc['resultant'], [1.250, 1, 3, -0.208, 1.957, 1.846], atol=1.5e-3)
    assert doc['regime']['name'] == 'paper'
    assert doc['internal_load']['norm_unit'] == 'N'
    for part in ('manipulating', 'constraint', 'internal', 'manipulating_object', 'constraint_object',
                 'internal_object'):
        assert len(doc['contacts']['c2'][part]) == 6


@pytest.mark.parametrize('text, message', [
    ('contacts: [{name: a, position: [0, 0, .nan]}]\nwrench: [0, 0, 1, 0, 0, 0]', 'NaN or Inf'),
    ('contacts: [{name: a, position: [0, 0]}]\nwrench: [0, 0, 1, 0, 0, 0]', 'shape 3'),
    ('contacts: []\nwrench: [0, 0, 1, 0, 0, 0]', 'non-empty list'),
    ('contacts: [{name: a, position: [0, 0, 0]}]\nwrench: [0, 0, 1]', 'wrench must have shape 6'),
    ('contacts: [{name: a, position: [0, 0, 0]}]', 'needs "wrench"'),
    ('contacts: [{name: a, type: point, position: [0, 0, 0]}, {name: b, type: point, position: [1, 0, 0]}]\n'
     'wrench: [0, 0, 1, 5, 0, 0]', 'cannot be produced'),
    ('contacts: [{name: a, position: [0, 0, 0]}]\noptions: {torque_share: 2}\nwrench: [0, 0, 1, 0, 0, 0]',
     'torque_share'),
    ('contacts: [{name: a, position: [0, 0, 0]}]\noptions: {speed: 2}\nwrench: [0, 0, 1, 0, 0, 0]',
     "'speed'"),
    (': : not yaml [', 'not valid YAML'),
])
def test_bad_input_exits_2_with_a_json_error(tmp_path, text, message):
    problem = tmp_path / 'problem.yaml'
    problem.write_text(text)
    code, out, err = run('synthesize', '--problem', str(problem))
    assert code == 2, (out, err)
    assert message in json.loads(out)['error']
    assert 'Traceback' not in err


def test_analyze_names_missing_and_unknown_contacts(tmp_path):
    problem = tmp_path / 'p.json'
    problem.write_text(json.dumps({
        'contacts': [{'name': 'a', 'position': [0, 0.1, 0]}, {'name': 'b', 'position': [0, -0.1, 0]}],
        'measured': {'a': [0, 0, 1, 0, 0, 0], 'c': [0, 0, 1, 0, 0, 0]},
    }))
    code, out, _ = run('analyze', '--problem', str(problem))
    assert code == 2
    error = json.loads(out)['error']
    assert "unknown: 'c'" in error and 'missing: b' in error


def test_missing_file():
    code, out, _ = run('analyze', '--problem', '/nonexistent/problem.yaml')
    assert code == 2 and 'cannot read problem file' in json.loads(out)['error']


def test_basis_subcommand_lists_names():
    code, out, _ = run('basis', '--problem', 'examples/dual_arm_problem.yaml')
    assert code == 0
    doc = json.loads(out)
    assert doc['basis'][0] == 'squeeze(left,right)' and doc['units'][0] == 'N'
    assert len(doc['basis']) == 6


def _problem_levels() -> dict:
    """Each mapping of a full problem document, by its path, with its accepted keys."""
    return {'': ('contacts', 'object', 'options', 'wrench', 'measured', 'limits'),
            'object': ('com', 'mass', 'inertia'),
            'options': ('torque_share', 'virtual_masses', 'torque_weights', 'internal_load',
                        'basis_reference_axis', 'friction'),
            'options.friction': ('mode', 'margin'),
            'limits': ('force', 'torque', 'desired_force', 'desired_torque', 'internal_load',
                       'on_limit'),
            'contacts.0': ('name', 'type', 'position', 'orientation', 'friction', 'normal')}


def _misspelt(key: str, how: int) -> str:
    """Return a typo of a key: a letter dropped, two swapped, or one doubled."""
    i = 1 + how % (len(key) - 2) if len(key) > 3 else 1
    return (key[:i] + key[i + 1:], key[:i] + key[i + 1] + key[i] + key[i + 2:],
            key[:i] + key[i] + key[i:])[how % 3]


@pytest.mark.parametrize('level', sorted(_problem_levels()))
@pytest.mark.parametrize('how', range(3))
def test_a_misspelt_key_at_any_level_of_a_problem_file_is_named_with_the_meant_one(tmp_path, level,
                                                                                   how):
    """``optons:`` for ``options:`` must not drop the squeeze silently: exit 2, did you mean."""
    import yaml
    document = {'contacts': [{'name': 'left', 'position': [0, 0.3, 0]},
                             {'name': 'right', 'position': [0, -0.3, 0]}],
                'object': {'com': [0, 0, 0]},
                'options': {'internal_load': {'squeeze(left,right)': 20.0},
                            'friction': {'mode': 'check'}},
                'limits': {'force': 500.0}, 'wrench': [0, 0, 10, 0, 0, 0]}
    accepted = _problem_levels()[level]
    checked = []
    for key in accepted:
        mapping = document
        for part in filter(None, level.split('.')):
            mapping = mapping[int(part)] if part.isdigit() else mapping[part]
        if key not in mapping:
            continue
        typo = _misspelt(key, how)
        if typo in accepted:
            continue
        mapping[typo] = mapping.pop(key)
        path = tmp_path / f'{level or "top"}_{key}.yaml'
        path.write_text(yaml.safe_dump(document))
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.main(['synthesize', '--problem', str(path)])  # in process: 70 files
        mapping[key] = mapping.pop(typo)
        error = json.loads(out.getvalue())['error']
        checked.append(typo)
        assert code == 2 and err.getvalue() == '' and f"'{typo}' (did you mean '{key}'" in error, error
    assert checked  # every level of the document holds keys to misspell
