"""Parameter files judged before rcl reads them (no ROS): size from stat, then the bounded loader.

The node executables (``wrench_distribution.entry``) judge the sizes before they import anything
heavy; the rest is judged before ``rclpy.init``.

rcl parses every ``--params-file`` inside ``rclpy.init``, before any node code and without a
bound; :func:`~wrench_distribution.config.check.param_file_refusals` is what the process entry
points (``run_node``) run first. A file over the bounded loader's size is refused without being
opened; a file within it is refused when the loader refuses it (aliases, nesting, huge or
infinite numbers) or when it holds more values than rcl parses in well under a second, in any
shape rcl is slow on (one long list, a section of many parameters, many sections); a pipe is
never read (rcl would then find it empty).
"""
import builtins
import glob
import os
import subprocess
import sys

import pytest
import yaml

from ros_harness import REPO
from wrench_distribution import cli
from wrench_distribution.config.check import param_file_refusals
from wrench_distribution.config.loading import MAX_PARAM_VALUES
from wrench_distribution.core import safe_load
from wrench_distribution.core.safe_load import MAX_ALIASES, MAX_DEPTH
from wrench_distribution.ros_args import MAX_PARAM_FILE_BYTES as MAX_BYTES


def argv(*paths) -> list:
    return ['distributor', '--ros-args'] + [a for p in paths for a in ('--params-file', str(p))]


def _valid(path, size: int) -> None:
    """Write a valid parameter file of exactly ``size`` bytes (a comment pads it)."""
    head = yaml.safe_dump({'/**': {'ros__parameters': {'effectors': ['left', 'right']}}})
    pad = size - len(head) - 3
    path.write_text(head + '#' + 'x' * pad + '\n\n')
    assert os.path.getsize(path) == size


def test_a_50_mb_file_is_refused_unread_naming_the_file_and_the_bound(tmp_path, monkeypatch):
    big = tmp_path / 'big.yaml'
    with open(big, 'wb') as f:
        f.truncate(50 * 1024 * 1024)  # sparse: its size is all that is needed

    def no_reading(*args, **kwargs):
        raise AssertionError(f'opened {args[0]!r}')
    monkeypatch.setattr(builtins, 'open', no_reading)
    monkeypatch.setattr(os, 'open', no_reading)
    refused = param_file_refusals(argv(big))
    assert len(refused) == 1
    assert str(big) in refused[0] and f'{50 * 1024 * 1024} bytes' in refused[0]
    assert f'over the bound of {MAX_BYTES} bytes' in refused[0]


def test_the_bound_holds_to_the_byte_and_the_loader_reads_whatever_it_lets_through(tmp_path):
    assert MAX_BYTES <= safe_load.MAX_BYTES
    at, over = tmp_path / 'at.yaml', tmp_path / 'over.yaml'
    _valid(at, MAX_BYTES)
    _valid(over, MAX_BYTES + 1)
    assert param_file_refusals(argv(at)) == []
    refused = param_file_refusals(argv(at, over))
    assert len(refused) == 1 and str(over) in refused[0] and f'{MAX_BYTES + 1} bytes' in refused[0]


@pytest.mark.parametrize('text,named', [
    ('a: &a [1, 2]\n' + ''.join(f'b{i}: *a\n' for i in range(MAX_ALIASES + 1)),
     f'more than {MAX_ALIASES} YAML aliases'),
    ('a: ' + '[' * (MAX_DEPTH + 2) + ']' * (MAX_DEPTH + 2) + '\n', f'deeper than {MAX_DEPTH}'),
    ('/**:\n  ros__parameters:\n    sensor_biases: [1.0e+300, 0.0]\n', 'sensor_biases[0]: 1e+300 is out of range'),
    ('/**:\n  ros__parameters:\n    object_mass: 1e400\n', 'object_mass: NaN or Inf'),
    ('/**:\n  ros__parameters:\n    object_mass: .nan\n', 'object_mass: NaN or Inf'),
    ('/**:\n  ros__parameters: [unclosed\n', 'is not valid YAML'),
])
def test_what_the_bounded_loader_refuses_is_refused_before_rcl(tmp_path, text, named):
    path = tmp_path / 'params.yaml'
    path.write_text(text)
    refused = param_file_refusals(argv(path))
    assert len(refused) == 1 and str(path) in refused[0] and named in refused[0], refused


def _values_text(shape: str, count: int) -> str:
    """Return a parameter file of exactly ``count`` values in one of the shapes rcl parses slowly."""
    if shape == 'one list':
        return 'other:\n  ros__parameters:\n    values: [' + ', '.join(['0.5'] * count) + ']\n'
    if shape == 'many parameters':
        return 'other:\n  ros__parameters:\n' + ''.join(f'    p{i}: {i}\n' for i in range(count))
    return ''.join(f'node{i}:\n  ros__parameters:\n    a: [1, 2]\n' for i in range(count // 2)) + \
        ('last:\n  ros__parameters:\n    b: 1\n' if count % 2 else '')


@pytest.mark.parametrize('shape', ['one list', 'many parameters', 'many sections'])
@pytest.mark.parametrize('extra', [0, 1])
def test_the_count_of_values_is_bounded_to_the_value_by_node_and_check_config_alike(tmp_path, capsys, shape, extra):
    path = tmp_path / 'params.yaml'
    path.write_text(_values_text(shape, MAX_PARAM_VALUES + extra))
    assert os.path.getsize(path) < MAX_BYTES  # the size alone would let it through
    refused = param_file_refusals(argv(path))
    code = cli.main(['check-config', str(path)])
    printed = capsys.readouterr().out
    if not extra:
        assert refused == [] and f'more than {MAX_PARAM_VALUES} values' not in printed
        return
    assert len(refused) == 1 and str(path) in refused[0] and f'more than {MAX_PARAM_VALUES} values' in refused[0]
    assert code == 2 and f'more than {MAX_PARAM_VALUES} values' in printed, printed


def test_a_missing_file_or_a_pipe_is_refused_and_a_pipe_never_read(tmp_path):
    pipe = tmp_path / 'pipe.yaml'
    os.mkfifo(pipe)  # opening it to read would block this test: it must not be opened
    refused = param_file_refusals(argv(tmp_path / 'missing.yaml', pipe))
    assert len(refused) == 2
    assert 'missing.yaml' in refused[0] and 'cannot be read' in refused[0]
    assert str(pipe) in refused[1] and 'not a regular file' in refused[1]


def test_only_the_ros_arguments_are_files_of_rcl(tmp_path):
    big = tmp_path / 'big.yaml'
    with open(big, 'wb') as f:
        f.truncate(MAX_BYTES + 1)
    assert param_file_refusals(['distributor', '--params-file', str(big)]) == []  # not rcl's
    assert param_file_refusals(['distributor', '--ros-args', '-p', 'a:=1', '--', '--params-file', str(big)]) == []
    assert len(param_file_refusals(['distributor', '--ros-args', '--params-file', str(big), '--'])) == 1


def test_every_shipped_parameter_file_is_accepted():
    files = sorted(glob.glob(os.path.join(REPO, 'config', '**', '*.yaml'), recursive=True))
    assert len(files) >= 10
    assert param_file_refusals(argv(*files)) == []


@pytest.mark.parametrize('text,accepted', [
    ('[' * MAX_DEPTH + ']' * MAX_DEPTH, True),
    ('[' * (MAX_DEPTH + 1) + ']' * (MAX_DEPTH + 1), False),
    ('[' * (MAX_DEPTH - 1) + '1' + ']' * (MAX_DEPTH - 1), True),  # a value is a level of its own
    ('[' * MAX_DEPTH + '1' + ']' * MAX_DEPTH, False),
    ('a: ' + '{b: ' * (MAX_DEPTH - 2) + '1' + '}' * (MAX_DEPTH - 2), True),
    ('a: ' + '{b: ' * (MAX_DEPTH - 1) + '1' + '}' * (MAX_DEPTH - 1), False),
    ('x: &x [1]\n' + ''.join(f'b{i}: *x\n' for i in range(MAX_ALIASES)), True),
    ('x: &x [1]\n' + ''.join(f'b{i}: *x\n' for i in range(MAX_ALIASES + 1)), False),
    ('a: [' + ', '.join('*x' for _ in range(MAX_ALIASES + 1)) + ']\nx: &x 1\n', False),  # undefined first
])
def test_the_loader_holds_its_nesting_and_alias_limits_exactly(tmp_path, text, accepted):
    """The same limits whichever YAML parser runs (libyaml's when PyYAML has it)."""
    from wrench_distribution.core.errors import InvalidInputError
    from wrench_distribution.core.safe_load import load_text
    try:
        load_text(text, 'document')
    except InvalidInputError as error:
        assert not accepted, error
    else:
        assert accepted


HEAVY = ('numpy', 'scipy', 'yaml', 'rclpy', 'wrench_distribution.core', 'wrench_distribution.config')


@pytest.mark.parametrize('script', ['distributor', 'analyzer', 'cell', 'object_sim', 'object_controller',
                                    'baseline_distributor'])
def test_an_executable_refuses_a_file_too_large_before_it_imports_anything_heavy(tmp_path, script):
    """The console script's function in a fresh interpreter: the node's line, exit 2, nothing heavy imported."""
    big = tmp_path / 'big.yaml'
    with open(big, 'wb') as f:
        f.truncate(50 * 1024 * 1024)
    code = ('import sys\n'
            f'sys.argv = ["{script}", "--ros-args", "--params-file", {str(big)!r}]\n'
            'from wrench_distribution import entry\n'
            f'status = entry.{script}()\n'
            f'heavy = sorted(m for m in sys.modules if any(m == h or m.startswith(h + ".") for h in {HEAVY!r}))\n'
            'print(status, heavy)\n')
    done = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == '2 []', done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].endswith(param_file_refusals(argv(big))[0]), done.stderr
    assert 'invalid configuration: ' in lines[0]
