"""check-config and the nodes agree: the same generated parameter files, the same verdict.

Each file is a shipped configuration (both nodes, static or topic contacts) with up to three
mutations drawn from what users get wrong: a misspelt name, a value of another type, an
integer for a double, a list rcl refuses, a number out of range, a per-effector array of
another length, a handle with a misspelt kind or effector or a torque between point
contacts or over its limit, one effector or two alike, a zero quaternion, static contacts
that coincide, ``hold_object_weight`` without a mass, a section left out. For every node
whose section the file has, the node is started as its process starts it (the parameter
files judged by their size and the bounded loader, ``rclpy.init`` on the command line
``--ros-args --params-file FILE``, then the node, in a context of its
own: rcl parses the file, the node declares and judges its parameters and builds its
solver for static contacts) and ``wrench-distribution check-config FILE`` is run; the node
refuses the file (``run_node`` exits 2) exactly when check-config reports an error in its
section or in the file. check-config never ends in a traceback. tf contacts are left out:
tf2_ros is not installed here (the node refuses ``contact_source: tf`` for that reason
alone; on a robot it does not).
"""
import contextlib
import copy
import io
import json
import os
import random
import sys

import pytest
import rclpy
from rclpy.context import Context
from rclpy.exceptions import InvalidParameterTypeException, InvalidParameterValueException
import yaml

from inproc import finalize_garbage_nodes
from ros_harness import domain_id_for, REPO
from wrench_distribution import cli
from wrench_distribution.analyzer_node import AnalyzerNode
from wrench_distribution.config import ConfigError
from wrench_distribution.config.check import param_file_refusals
from wrench_distribution.config.index import INDEX
from wrench_distribution.distributor_node import DistributorNode

pytestmark = [pytest.mark.ros, pytest.mark.inproc, pytest.mark.slow]

FILES = int(os.environ.get('WD_AGREEMENT_FILES', '500'))
BASES = ('dual_arm.yaml', 'three_finger_hand.yaml', 'quadruped_stance.yaml', 'dual_arm_humble.yaml')
NODES = {'wrench_distributor': ('distributor', DistributorNode),
         'wrench_analyzer': ('analyzer', AnalyzerNode)}


def _base(rng: random.Random) -> dict:
    with open(os.path.join(REPO, 'config', rng.choice(BASES)), encoding='utf-8') as f:
        doc = yaml.safe_load(f)
    return {key: doc[key] for key in doc if str(key).lstrip('/').split('/')[-1] in NODES}


def _typo(name: str, rng: random.Random) -> str:
    if len(name) < 3:
        return name + name[-1]
    i = rng.randrange(1, len(name) - 1)
    return rng.choice([name[:i] + name[i + 1:], name[:i] + name[i] + name[i:],
                       name[:i - 1] + name[i] + name[i - 1] + name[i + 1:]])


def _wrong_type(value, rng: random.Random):
    if isinstance(value, bool):
        return rng.choice(['yes', 1, [True]])
    if isinstance(value, (int, float)):
        return rng.choice(['fast', [value], True, None])
    if isinstance(value, str):
        return rng.choice([3.5, [value], False])
    return rng.choice([1.0, 'list', [[1.0, 2.0]], [1, 2.5]])


def _handle(params: dict, rng: random.Random) -> list:
    names = params.get('effectors') or ['left', 'right']
    a, b = names[0], names[-1]
    return [rng.choice([f'sqeeze({a},{b})=20.0', f'squeeze({a},{_typo(b, rng)})=20.0',
                        f'twist({a},{b})=1.0', f'squeeze({a},{b})=1e12', 'squeeze=5.0',
                        f'squeeze({a},{b})=15.0', f'warp({a},{b})=1.0'])]


def _mutate(params: dict, kind: str, rng: random.Random) -> None:
    """Apply one mutation to a node's parameters (in place)."""
    spec = INDEX[kind]
    name = rng.choice(sorted(params))
    n = len(params.get('effectors') or [1, 2])
    choice = rng.randrange(12)
    if choice == 0 and len(name) > 3:
        params[_typo(name, rng)] = params.pop(name)
    elif choice == 1:
        params[name] = _wrong_type(params[name], rng)
    elif choice == 2:
        doubles = [s for s in spec if spec[s].type == 'double' and spec[s].minimum in (None, 0.0)]
        params[rng.choice(doubles)] = rng.choice([0, 1, 2])
    elif choice == 3:
        params[rng.choice(['object_com', 'gravity'])] = [0, 0.5, rng.choice([1, -9.81])]
    elif choice == 4:
        ranged = [s for s in spec if spec[s].type in ('double', 'integer') and spec[s].minimum is not None]
        pick = rng.choice(ranged)
        params[pick] = -5.0 if spec[pick].type == 'double' else -5
    elif choice == 5:
        arrays = [s for s in ('contact_types', 'contact_normals', 'friction_coefficients',
                              'torque_weights', 'tool_masses', 'sensor_signs') if s in spec]
        pick = rng.choice(arrays)
        params[pick] = {'contact_types': ['rigid'], 'contact_normals': [0.0, 0.0, 1.0],
                        'sensor_signs': [1]}.get(pick, [1.0] * (n + 1))
    elif choice == 6 and kind == 'distributor':
        params.pop('internal_load', None)
        params['internal_load_handles'] = _handle(params, rng)
    elif choice == 7:
        params['effectors'] = rng.choice([['solo'], ['a', 'a'], list(params.get('effectors', []))])
    elif choice == 8:
        params['contact_source'] = 'static'
        params['contact_positions'] = rng.choice([[0.0, 0.0, 0.0] * n, [0.1, 0.0, 0.0] * n,
                                                  [float(i) * 0.1 for i in range(3 * n)]])
        params['contact_orientations'] = ([0.0, 0.0, 0.0, 0.0] + [0.0, 0.0, 0.0, 1.0] * (n - 1)
                                          if rng.random() < 0.3 else [0.0, 0.0, 0.0, 1.0] * n)
    elif choice == 9 and kind == 'distributor':
        params.update(hold_object_weight=True, object_mass=rng.choice([0.0, 2.0]))
    elif choice == 10:
        params[name] = None
    else:
        params[name] = copy.deepcopy(params[name])  # unchanged: a valid file stays valid


def generated_file(seed: int) -> dict:
    """Return one generated parameter file (module docstring)."""
    rng = random.Random(seed)
    doc = _base(rng)
    for _ in range(rng.randrange(4)):
        key = rng.choice(sorted(doc))
        section = doc[key]['ros__parameters']
        _mutate(section, NODES[str(key).lstrip('/').split('/')[-1]][0], rng)
    if len(doc) == 2 and rng.random() < 0.1:
        del doc[rng.choice(sorted(doc))]
    return doc


def node_refusal(path: str, node: str, offset: int):
    """Start a node on a parameter file as its process does; return why it refuses it (None: it starts)."""
    return node_refusals(path, [node], offset)[node]


def node_refusals(path: str, nodes, offset: int) -> dict:
    """Start each node on a parameter file as its process does; return why each refuses it (None: it starts).

    The nodes share one context, initialised on the file as each process's would be: one
    collection of the garbage nodes a file, not one a node (a full collection of a suite
    worker's heap costs up to a second).
    """
    argv = [nodes[0], '--ros-args', '--params-file', path]
    refused = param_file_refusals(argv)
    if refused:  # refused before rclpy.init (run_node): the process exits 2
        return dict.fromkeys(nodes, '; '.join(refused))
    saved, sys.argv = sys.argv, argv  # the node reads its command line, as a process does
    ctx = Context()
    try:
        try:
            rclpy.init(args=argv, context=ctx, domain_id=domain_id_for(offset=offset))
        except RuntimeError as error:  # rcl could not parse the file: the process exits 2
            return dict.fromkeys(nodes, str(error))
        return {node: _started(node, ctx) for node in nodes}
    finally:
        sys.argv = saved
        finalize_garbage_nodes()  # a node whose constructor raised, before its context goes
        rclpy.try_shutdown(context=ctx)


def _started(node: str, ctx: Context):
    """Construct and destroy one node in ``ctx``; return why it refused its parameters (None: it started)."""
    try:
        made = NODES[node][1](context=ctx, start_parameter_services=False)
    except (ConfigError, InvalidParameterTypeException, InvalidParameterValueException) as error:
        return str(error)
    made.destroy_node()
    return None


def check_config_refuses(path: str) -> dict:
    """Run check-config in this process; return, per node section, whether it found an error."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli.main(['check-config', path])
    assert err.getvalue() == '' and 'Traceback' not in out.getvalue()
    document = json.loads(out.getvalue())
    if 'errors' not in document:  # the file itself could not be read
        return dict.fromkeys(NODES, True)
    sections = {p['section'] for p in document['errors']}
    assert (status == 2) == bool(sections), document
    return {node: bool({node, 'file'} & sections) for node in NODES}


@pytest.mark.parametrize('block', range(10))
def test_the_node_and_check_config_give_the_same_verdict(tmp_path, block):
    agreed, refused = 0, 0
    for seed in range(block * FILES // 10, (block + 1) * FILES // 10):
        doc = generated_file(seed)
        path = str(tmp_path / f'file_{seed}.yaml')
        with open(path, 'w', encoding='utf-8') as f:
            yaml.safe_dump(doc, f)
        judged = check_config_refuses(path)
        nodes = [str(key).lstrip('/').split('/')[-1] for key in doc]
        for node, refusal in node_refusals(path, nodes, offset=seed % 3).items():
            refuses = refusal is not None
            assert refuses == judged[node], (seed, node, refusal, doc)
            agreed += 1
            refused += refuses
    assert agreed and 0 < refused < agreed  # the files hold both verdicts
