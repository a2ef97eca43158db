"""Launch files compile and reference existing configs; configs match the nodes' schema."""
import ast
import glob
import os
import py_compile
import re

import pytest
import yaml

import launch_standin
from ros_harness import domain_id_for, REPO
from wrench_distribution import config as P
from wrench_distribution.cell import launch_actions, LAYOUTS

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
@pytest.mark.parametrize('layout', LAYOUTS)
def test_launch_file_compiles_and_references_real_things(path, layout, tmp_path):
    """Every node action, in either layout, runs a console script of setup.py on files that exist."""
    py_compile.compile(path, cfile=str(tmp_path / 'x.pyc'), doraise=True)
    tree = ast.parse(open(path).read())
    assert 'generate_launch_description' in {n.name for n in tree.body
                                             if isinstance(n, ast.FunctionDef)}
    setup = open(os.path.join(REPO, 'setup.py')).read()
    nodes = launch_standin.nodes_of(path, {'layout': layout})
    assert nodes
    for node in nodes:
        assert node.package == 'wrench_distribution'
        assert re.search(rf"'{node.executable} = wrench_distribution\.", setup), node.executable
        # the cell keeps both nodes' own names: a name given to the process would rename both
        assert node.name == (None if node.executable == 'cell' else NODES[node.executable][0])
        files = [p for p in node.parameters if isinstance(p, str)]
        assert files and all(os.path.isfile(f) for f in files), files


def test_each_node_runs_in_its_own_process_by_default_and_both_in_one_on_request():
    """layout:= of wrench_distribution.launch.py; one node left out runs alone in either layout."""
    path = os.path.join(REPO, 'launch', 'wrench_distribution.launch.py')
    assert [n.executable for n in launch_standin.nodes_of(path)] == ['distributor', 'analyzer']
    assert [n.executable for n in launch_standin.nodes_of(path, {'layout': 'one-process'})] == [
        'cell']
    for layout in LAYOUTS:
        for left_out, alone in (('analyzer', 'distributor'), ('distributor', 'analyzer')):
            nodes = launch_standin.nodes_of(path, {'layout': layout, left_out: 'false'})
            assert [n.executable for n in nodes] == [alone]
    with pytest.raises(RuntimeError, match='Argument "layout" provided value "one_process" is not '
                       'valid'):  # launch checks the declared choices first
        launch_standin.nodes_of(path, {'layout': 'one_process'})
    with pytest.raises(ValueError, match="layout:='one_process': accepted: one-process, processes"):
        launch_actions(launch_standin, 'one_process', '', [], {'distributor': {}, 'analyzer': {}}, {})
    with pytest.raises(ValueError, match="analyzer:='no': accepted: true, false"):
        launch_standin.nodes_of(path, {'analyzer': 'no'})


def _autostart_given(node, tmp_dir: str) -> list:
    """Return the ``autostart`` values the node's command line sets, in order (the last counts)."""
    args = node.ros_arguments(tmp_dir)
    files = [args[i + 1] for i, a in enumerate(args) if a == '--params-file']
    found = []
    for path in files:
        for section in (yaml.safe_load(open(path)) or {}).values():
            if 'autostart' in section.get('ros__parameters', {}):
                found.append(section['ros__parameters']['autostart'])
    return found


@pytest.mark.parametrize('path', LAUNCHES, ids=os.path.basename)
@pytest.mark.parametrize('layout', LAYOUTS)
def test_nodes_are_managed_and_autostart_is_a_launch_argument(path, layout, tmp_path):
    """Each node alone in its process is a LifecycleNode action; autostart:= reaches every node.

    The cell (both nodes in one process) is a plain node action: a LifecycleNode action stands
    for one node and its name would rename both; the cell's nodes take ``autostart`` as well.
    """
    for value, expected in (('true', True), ('false', False), (None, True)):
        arguments = {'layout': layout, **({'autostart': value} if value else {})}
        for node in launch_standin.nodes_of(path, arguments):
            lifecycle = isinstance(node, launch_standin.LifecycleNode)
            assert lifecycle == (node.executable != 'cell'), node.executable
            assert _autostart_given(node, str(tmp_path))[-1:] == [expected], (value, node.executable)
    with pytest.raises(RuntimeError, match='Argument "autostart" provided value "maybe" is not valid'):
        launch_standin.nodes_of(path, {'layout': layout, 'autostart': 'maybe'})


def test_the_standin_lifecycle_node_takes_launch_ros_arguments():
    """Require name and namespace (Humble to Kilted); refuse an autostart keyword (Humble, Jazzy)."""
    with pytest.raises(TypeError, match='namespace'):
        launch_standin.LifecycleNode(package='wrench_distribution', executable='analyzer',
                                     name='wrench_analyzer')
    with pytest.raises(TypeError, match='autostart'):
        launch_standin.LifecycleNode(package='wrench_distribution', executable='analyzer',
                                     name='wrench_analyzer', namespace='', autostart=True)


@pytest.mark.ros
@pytest.mark.parametrize('layout', LAYOUTS)
def test_launched_nodes_wait_for_a_manager_with_autostart_false(layout, tmp_path):
    """The command lines launch builds with autostart:=false: the nodes wait, then take the manager's transitions."""
    from ros_harness import ros_env, script, TestClient
    from wrench_distribution.processes import ChildProcess, stop_all
    path = os.path.join(REPO, 'launch', 'wrench_distribution.launch.py')
    domain = domain_id_for(__name__, offset=1)
    procs = [ChildProcess([script(node.executable)] + node.ros_arguments(str(tmp_path)),
                          ros_env(domain))
             for node in launch_standin.nodes_of(path, {'layout': layout, 'autostart': 'false'})]
    client = TestClient(domain, 'wd_launch_client')
    try:
        for name, _ in NODES.values():
            assert client.lifecycle_state(name, 30.0) == 'unconfigured', [p.output() for p in procs]
            assert client.change_state(name, 'configure') and client.change_state(name, 'activate')
            assert client.lifecycle_state(name) == 'active'
    finally:
        client.close()
        stop_all(procs)
    assert [p.close() for p in procs] == [0] * len(procs), [p.output() for p in procs]


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
        dist = LoadDistributor(list(cfg.contacts), cfg.object_model, cfg.options)
        if kind == 'distributor':
            lam = cfg.settings.prescription.resolve(dist)  # handles or coordinates fit the basis
            assert lam is None or len(lam) == len(dist.basis_names)


@pytest.mark.ros
@pytest.mark.parametrize('path', CONFIGS, ids=os.path.basename)
@pytest.mark.parametrize('kind', sorted(NODES))
def test_node_starts_with_config(path, kind):
    """The real node parses the file with rcl (types, sections) and comes up."""
    from ros_harness import start_node
    ready = 'distributing to' if kind == 'distributor' else 'analysing'
    with start_node(kind, [path], domain_id_for(__name__)) as node:
        node.wait_for_output(ready, 15.0)
        out = node.output()
    assert ready in out, (NODES[kind][0], out)
    assert 'unknown parameter' not in out and 'Traceback' not in out
