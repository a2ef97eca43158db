"""Launch files compile and reference existing configs; configs match the nodes' schema."""
import ast
import glob
import os
import py_compile
import re
import select
import signal
import subprocess
import time

import pytest

from ros_harness import domain_id_for, REPO
from wrench_distribution import config as P

CONFIGS = sorted(glob.glob(os.path.join(REPO, 'config', '*.yaml')))
LAUNCHES = sorted(glob.glob(os.path.join(REPO, 'launch', '*.launch.py')))
NODES = {'distributor': ('wrench_distributor', P.load_distributor_config),
         'analyzer': ('wrench_analyzer', P.load_analyzer_config)}


def test_expected_files_exist():
    names = {os.path.basename(p) for p in CONFIGS}
    assert {'dual_arm.yaml', 'three_finger_hand.yaml', 'quadruped_stance.yaml'} <= names
    assert {os.path.basename(p) for p in LAUNCHES} >= {
        'distributor.launch.py', 'analyzer.launch.py', 'wrench_distribution.launch.py'}


@pytest.mark.parametrize('path', LAUNCHES, ids=os.path.basename)
def test_launch_file_compiles_and_references_real_things(path, tmp_path):
    py_compile.compile(path, cfile=str(tmp_path / 'x.pyc'), doraise=True)
    tree = ast.parse(open(path).read())
    funcs = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert 'generate_launch_description' in funcs
    strings = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
               and isinstance(n.value, str)]
    for s in strings:
        if s.endswith('.yaml') and not s.startswith('~'):  # '~/...': the user's calibration file
            assert os.path.exists(os.path.join(REPO, 'config', s)), s
    setup = open(os.path.join(REPO, 'setup.py')).read()
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
             and getattr(n.func, 'id', None) == 'Node']
    assert calls
    for call in calls:
        kw = {k.arg: k.value for k in call.keywords}
        assert kw['package'].value == 'wrench_distribution'
        exe = kw['executable'].value
        assert re.search(rf"'{exe} = wrench_distribution\.", setup), exe
        assert kw['name'].value == NODES[exe][0]


@pytest.mark.parametrize('path', CONFIGS, ids=os.path.basename)
@pytest.mark.parametrize('kind', sorted(NODES))
def test_config_matches_declared_parameters(path, kind):
    node_name, loader = NODES[kind]
    flat = P.read_ros_params_yaml(path, node_name)
    assert 'effectors' in flat  # the only required parameter
    cfg = loader(path, node_name=node_name)   # strict: unknown parameters raise
    assert len(cfg.effectors) >= 2
    assert P.ros_yaml_type_problems(kind, flat) == []
    if cfg.contacts is not None:   # static contacts: the core accepts the geometry
        from wrench_distribution.core import LoadDistributor
        dist = LoadDistributor(cfg.contacts, cfg.object_model, cfg.options)
        if kind == 'distributor' and cfg.internal_load_handles:
            dist.internal_load_from_handles(cfg.internal_load_handles)
        if kind == 'distributor' and cfg.internal_load:
            assert len(cfg.internal_load) == len(dist.basis_names)


@pytest.mark.ros
@pytest.mark.parametrize('path', CONFIGS, ids=os.path.basename)
@pytest.mark.parametrize('kind', sorted(NODES))
def test_node_starts_with_config(path, kind):
    """The real node parses the file with rcl (types, sections) and comes up."""
    from ros_harness import ros_env, script
    ready = 'distributing to' if kind == 'distributor' else 'analysing'
    proc = subprocess.Popen([script(kind), '--ros-args', '--params-file', path],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env=ros_env(domain_id_for(__name__)), start_new_session=True)
    out = ''
    try:
        end = time.monotonic() + 15
        while time.monotonic() < end and proc.poll() is None and ready not in out:
            # unbuffered reads: a buffered readline() can hold the ready line back from select()
            if select.select([proc.stdout], [], [], 0.2)[0]:
                out += os.read(proc.stdout.fileno(), 65536).decode(errors='replace')
        assert ready in out, (NODES[kind][0], out)
        assert 'unknown parameter' not in out and 'Traceback' not in out
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)
        proc.stdout.close()
