"""Each object's state is its class's: no module writes another class's attributes.

Read from the package's own source, as :mod:`test_layers` reads the imports. A class's state
is what its methods set on ``self`` (``self.last_out_ns = ...``). Such an attribute may be
written (``x.a = ...``, ``x.a += ...``, ``x.a[i] = ...``) only as ``self.a`` one level deep, or
on an object the same function has just made. Writing it through a parameter
(``engine.last_out_ns = ...``), through another object's attribute (``self.engine.future[i] +=
1``) or through a name bound to someone else's object changes that object's state from the
outside: it becomes a method of the owner, or a value the owner returns. Messages and records
(ROS messages, dataclass fields) are data, filled by whoever builds them; a ROS service's
``response`` is handed to the callback to fill.
"""
import ast
from pathlib import Path

import pytest

from ros_harness import REPO

PACKAGE = Path(REPO) / 'wrench_distribution'
FILES = sorted(PACKAGE.rglob('*.py'))
#: Parameters a callback is given to fill (rclpy service callbacks).
FILLED_PARAMETERS = {'response'}
#: Writes of a field that shares its name with some class's state, and why they are data.
NOT_STATE = {
    ('sim/nodes/object_sim_node.py', 'msg.data'): 'std_msgs messages the node refills per tick',
    ('sim/physics/chain_arms.py', 'model.gravity'): "a Pinocchio model's gravity, set as it is built",
    ('engine/sync.py', 'self.counters.received'): "the synchroniser's own counters record",
    ('engine/sync.py', 'self.counters.received[i]'): "the synchroniser's own counters record",
}


def _root_and_depth(target: ast.expr) -> tuple:
    """``(root name or None, attributes crossed)`` of an assignment target (None: no attribute)."""
    depth = 0
    node = target
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        depth += isinstance(node, ast.Attribute)
        node = node.value
    root = node.id if isinstance(node, ast.Name) else None
    return root, depth


def _targets(node: ast.AST) -> list:
    if isinstance(node, ast.Assign):
        out = []
        for target in node.targets:
            out += list(target.elts) if isinstance(target, (ast.Tuple, ast.List)) else [target]
        return out
    if isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        return [node.target]
    return []


def _made_here(function: ast.AST) -> set:
    """Names the function binds to a call's result (a fresh object it may fill)."""
    made = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            made.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return made


def _written_name(target: ast.expr) -> str:
    """Return the attribute an assignment target writes (``a.b.c`` -> c, ``a.b[i]`` -> b)."""
    node = target
    while not isinstance(node, ast.Attribute):
        node = node.value
    return node.attr


def state_names(trees) -> set:
    """Every attribute a class of the package sets on ``self`` in its methods (its state)."""
    names = set()
    for tree in trees:
        for node in ast.walk(tree):
            for target in _targets(node):
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                        and target.value.id == 'self':
                    names.add(target.attr)
    return names


def _writes_elsewhere(function: ast.AST, state: set) -> list:
    """Return the assignments of one function that write another object's state."""
    made = _made_here(function)
    out = []
    for node in ast.walk(function):
        for target in _targets(node):
            root, depth = _root_and_depth(target)
            if depth == 0 or _written_name(target) not in state:
                continue  # a name, an item of a local container, or a message's field
            if root in ('self', 'cls') and depth == 1:
                continue
            if (root in made and root not in ('self', 'cls')) or root in FILLED_PARAMETERS:
                continue
            out.append((target.lineno, ast.unparse(target)))
    return out


TREES = {path: ast.parse(path.read_text(encoding='utf-8')) for path in FILES}
STATE = state_names(TREES.values())


@pytest.mark.parametrize('path', FILES, ids=[str(p.relative_to(PACKAGE)) for p in FILES])
def test_no_module_writes_another_class_attributes(path):
    where = str(path.relative_to(PACKAGE))
    found = set()
    for node in ast.walk(TREES[path]):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.update(_writes_elsewhere(node, STATE))
    wrong = sorted(f'line {line}: {text}' for line, text in found if (where, text) not in NOT_STATE)
    assert not wrong, f"{where} writes other objects' state: {wrong}"
    listed = {text for (file, text) in NOT_STATE if file == where}
    assert listed <= {text for _, text in found}, f'{where}: NOT_STATE lists writes no longer there'


def test_the_rule_catches_a_write_through_a_parameter_and_through_a_part():
    """The rule itself: what it must refuse, and what it lets through."""
    source = """
def helper(engine):
    engine.last_out_ns = 3
class Engine:
    def step(self, msg):
        self.count += 1
        self.parts[2] = 1
        self.live.pending = []
        fresh = Message()
        fresh.pending = [1.0]
        other = self.live
        other.pending = []
        msg.header.stamp = 0
class Live:
    def __init__(self):
        self.pending = []
        self.last_out_ns = None
"""
    tree = ast.parse(source)
    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]
    found = [w for f in functions for w in _writes_elsewhere(f, state_names([tree]))]
    assert found == [(3, 'engine.last_out_ns'), (8, 'self.live.pending'), (12, 'other.pending')]
