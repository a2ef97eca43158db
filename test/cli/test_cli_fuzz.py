"""Malformed problem and parameter files: one clear error, exit 2, bounded time and memory.

Hypothesis mutates a valid problem document (any value anywhere replaced by junk:
wrong types, ragged lists, scalars for lists, huge or non-finite numbers, deep nesting)
and the command line must answer with a result or a JSON error, never a traceback. The
hand-made hostile files (alias bomb, deep nesting, bad UTF-8, 400-digit integers,
thousands of contacts) run the real console script with a time limit and a memory figure.
"""
import contextlib
import io
import json
import subprocess
import sys
import time

from hypothesis import given, HealthCheck, settings, strategies as st
import pytest
import yaml

from ros_harness import script
from wrench_distribution import cli
from wrench_distribution import config as P

BASE = {
    'contacts': [
        {'name': 'left', 'type': 'rigid', 'position': [0.0, 0.3, 0.0],
         'orientation': [0.0, 0.0, 0.0, 1.0]},
        {'name': 'right', 'type': 'point', 'position': [0.0, -0.3, 0.0]},
        {'name': 'third', 'type': 'point', 'position': [0.2, 0.0, 0.1]},
    ],
    'object': {'com': [0.0, 0.0, 0.05], 'mass': 2.0,
               'inertia': [[0.05, 0, 0], [0, 0.02, 0], [0, 0, 0.06]]},
    'options': {'torque_share': 0.2, 'virtual_masses': 'auto'},
    'wrench': [1.0, 2.0, 20.0, 0.1, 0.0, 0.0],
    'measured': {'left': [1, 2, 3, 0, 0, 0], 'right': [0, 0, 1, 0, 0, 0],
                 'third': [0, 1, 0, 0, 0, 0]},
}

_scalars = st.one_of(
    st.none(), st.booleans(), st.text(max_size=8),
    st.integers(min_value=-10 ** 400, max_value=10 ** 400),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1e200, -1e300, 1.7e308, 1e-300, 0.0, 400 * 9]))
_junk = st.recursive(_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=7), st.dictionaries(st.text(max_size=6), inner, max_size=4)),
    max_leaves=20)


def _paths(doc, prefix=()):
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _paths(v, prefix + (i,))


def _replace(doc, path, value):
    if not path:
        return value
    import copy
    out = copy.deepcopy(doc)
    node = out
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    return out


def _run_cli(argv):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli.main(argv)
    return code, out.getvalue()


ALL_PATHS = list(_paths(BASE))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(path=st.sampled_from(ALL_PATHS), junk=_junk,
       command=st.sampled_from(['synthesize', 'analyze', 'basis']),
       as_json=st.booleans())
def test_mutated_problems_never_raise(tmp_path_factory, path, junk, command, as_json):
    doc = _replace(BASE, path, junk)
    f = tmp_path_factory.mktemp('fuzz') / 'p.txt'
    try:
        text = json.dumps(doc) if as_json else yaml.safe_dump(doc)
    except (ValueError, OverflowError):
        text = repr(doc)  # not serialisable: the parser gets garbage, which is the point
    f.write_text(text)
    code, out = _run_cli([command, '--problem', str(f)])
    result = json.loads(out)  # always one JSON document, never NaN
    assert code in (0, 2)
    if code == 2:
        assert set(result) == {'error'} and result['error'].strip()
        assert '\n' not in result['error']
    else:
        assert 'error' not in result


PARAMS = {'wrench_distributor': {'ros__parameters': {
    'effectors': ['a', 'b'], 'contact_source': 'static',
    'contact_positions': [0.0, 0.3, 0.0, 0.0, -0.3, 0.0],
    'internal_load': [2.0], 'force_limits': [100.0], 'on_limit': 'zero'}}}
PARAM_PATHS = list(_paths(PARAMS))


@settings(max_examples=200, deadline=None)
@given(path=st.sampled_from(PARAM_PATHS), junk=_junk)
def test_parameter_files_only_raise_config_errors(tmp_path_factory, path, junk):
    doc = _replace(PARAMS, path, junk)
    f = tmp_path_factory.mktemp('pfuzz') / 'params.yaml'
    try:
        f.write_text(yaml.safe_dump(doc))
    except (ValueError, OverflowError):
        f.write_text(repr(doc))
    try:
        cfg = P.load_distributor_config(str(f))
    except P.ConfigError as e:
        assert str(e).strip()
    else:  # accepted: every limit is a real, positive, finite number
        assert all(0 < x <= P.LIMIT_CEILING for x in cfg.settings.limits.force)


def _hostile_files(d):
    files = {}
    bomb = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i, name in enumerate('bcdefghi'):
        prev = 'abcdefghi'[i]
        bomb.append(f'{name}: &{name} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},'
                    f'*{prev},*{prev},*{prev}]')
    bomb.append('contacts: [{name: l, position: [0, 1, 0]}, {name: r, position: [0, -1, 0]}]')
    bomb.append('wrench: *i')
    files['alias bomb'] = '\n'.join(bomb)
    files['deep nesting'] = 'wrench: ' + '[' * 5000 + ']' * 5000
    files['bad utf-8'] = b'contacts: [{name: "\xff\xfe", position: [0, 0, 0]}]\n'
    files['400-digit integer'] = ('contacts: [{name: l, position: [0, 1, 0]}, {name: r, '
                                  f'position: [0, -1, {"9" * 400}]}}]\nwrench: [0, 0, 1, 0, 0, 0]')
    files['5000-digit integer'] = f'contacts: [{{name: l, position: [0, 1, {"9" * 5000}]}}]'
    files['1e200 coordinate'] = ('contacts: [{name: l, position: [0, 1e200, 0]}, {name: r, '
                                 'position: [0, -1, 0]}]\nwrench: [0, 0, 1, 0, 0, 0]')
    files['5000 contacts'] = yaml.safe_dump({'contacts': [
        {'name': f'c{i}', 'position': [float(i), 0.0, 1.0]} for i in range(5000)],
        'wrench': [0, 0, 1, 0, 0, 0]})
    files['ragged inertia'] = ('contacts: [{name: l, position: [0, 1, 0]}, {name: r, position: '
                               '[0, -1, 0]}]\nobject: {inertia: [[1, 0], [0, 1, 0], 3]}\n'
                               'wrench: [0, 0, 1, 0, 0, 0]')
    files['scalar virtual masses'] = ('contacts: [{name: l, position: [0, 1, 0]}, {name: r, '
                                      'position: [0, -1, 0]}]\noptions: {virtual_masses: 3, '
                                      'torque_weights: 2}\nwrench: [0, 0, 1, 0, 0, 0]')
    files['2 MB file'] = '# ' + 'x' * 2_000_000
    out = {}
    for name, content in files.items():
        p = d / (name.replace(' ', '_') + '.yaml')
        p.write_bytes(content if isinstance(content, bytes) else content.encode())
        out[name] = p
    return out


#: Runs a command and writes its peak RSS (kB) to a file: started from this small process,
#: the command's own peak is measured, not the pages it shared with the test process
#: between fork and exec (which make RUSAGE_CHILDREN or os.wait4 report the test's size).
_PEAK_RSS = ('import resource, subprocess, sys\n'
             'code = subprocess.call(sys.argv[2:])\n'
             'peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n'
             'open(sys.argv[1], "w").write(str(peak))\n'
             'sys.exit(code)\n')


def run_measured(argv: list, timeout: float, tmp_path) -> tuple:
    """Run a command; return its exit code, stdout, stderr and its own peak RSS (MB)."""
    peak_file = tmp_path / 'peak_rss_kb'
    proc = subprocess.run([sys.executable, '-c', _PEAK_RSS, str(peak_file)] + argv,
                          capture_output=True, text=True, timeout=timeout)
    return proc.returncode, proc.stdout, proc.stderr, int(peak_file.read_text()) / 1024


@pytest.mark.timing  # measures each run's wall time
@pytest.mark.parametrize('command', ['synthesize', 'analyze', 'basis'])
def test_hostile_files_one_error_bounded(tmp_path, command):
    exe = script('wrench-distribution')  # the harness's one rule: colcon install, venv, PATH
    peak_mb = 0.0
    for name, path in _hostile_files(tmp_path).items():
        t0 = time.monotonic()
        argv = [exe, command, '--problem', str(path)]
        code, stdout, stderr, rss_mb = run_measured(argv, 60, tmp_path)
        elapsed = time.monotonic() - t0
        peak_mb = max(peak_mb, rss_mb)
        assert code == 2, (name, stdout, stderr)
        assert 'Traceback' not in stderr, (name, stderr)
        err = json.loads(stdout)['error']
        assert err and '\n' not in err, name
        assert elapsed < 30, (name, elapsed)  # seconds, generous for a loaded 2-core machine
    # each run stayed far below the 3 GB the 512-contact file once took
    assert 0 < peak_mb < 600, peak_mb
