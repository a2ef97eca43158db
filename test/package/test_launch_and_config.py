"""Launch files compile and reference existing configs; configs match the nodes' schema."""
import ast
import glob
import os
import py_compile
import re

import pytest

import launch_standin
from ros_harness import domain_id_for, REPO
from wrench_distribution import config as P
from wrench_distribution.cell import LAYOUTS

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
    with pytest.raises(ValueError, match="layout:='one_process': accepted: one-process, processes"):
        launch_standin.nodes_of(path, {'layout': 'one_process'})
    with pytest.raises(ValueError, match="analyzer:='no': accepted: true, false"):
        launch_standin.nodes_of(path, {'analyzer': 'no'})


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
