"""The house's layers (docs/contributing.md, "Architecture"): each room imports only the rooms below it.

Read from the package's own source (every import, at module level or inside a function):
a room of :data:`MAY_IMPORT` imports the package's rooms it lists and no other, so there is
no import circle between rooms and no import from a lower layer up to a higher one; and the
rooms of :data:`ROS_FREE` import no ROS package (rclpy, message packages), so the core, the
engines, the bag tools and the simulator's physics run without a ROS install.
"""
import ast
from pathlib import Path

import pytest

from ros_harness import REPO

PACKAGE = Path(REPO) / 'wrench_distribution'

#: Room -> the rooms it may import (rooms: the package's subpackages, the simulator's rooms,
#: the top-level modules).
MAY_IMPORT = {
    'core': set(),
    'config': {'core', 'ros_args'},
    'engine': {'core', 'config'},
    'ros': {'core', 'config', 'engine', 'ros_args'},
    'bag': {'core', 'config', 'engine'},
    'distributor_node': {'core', 'config', 'engine', 'ros'},
    'analyzer_node': {'core', 'config', 'engine', 'ros'},
    'cli': {'core', 'config', 'engine', 'bag'},
    'cell': {'ros', 'distributor_node', 'analyzer_node'},
    # child processes on the loopback (start, stop, output) for the demo, the benchmarks and
    # the tests: below everything it serves, so it imports nothing of the package
    'processes': set(),
    # a command line's parameter files judged from stat, before anything heavy is imported
    'ros_args': set(),
    # the console scripts: the parameter files' sizes first, then the node
    'entry': {'ros_args', 'distributor_node', 'analyzer_node', 'cell', 'sim.nodes'},
    'sim': set(),
    'sim.control': {'core', 'config'},
    'sim.physics': {'core', 'config', 'sim.control'},
    'sim.scenarios': {'core', 'config', 'sim.control', 'sim.physics'},
    'sim.reports': {'core', 'config', 'bag', 'sim.control', 'sim.scenarios'},
    'sim.nodes': {'core', 'config', 'ros', 'bag', 'sim.control', 'sim.physics', 'sim.scenarios'},
    'sim.demo': {'core', 'config', 'ros', 'processes', 'sim.nodes', 'sim.reports', 'sim.scenarios'},
    '': set(),  # the package's __init__
}

#: Rooms that import no ROS package; bag/player.py (a small player) is the bag tools' exception.
ROS_FREE = ('core', 'config', 'engine', 'bag', 'processes', 'ros_args', 'sim.control', 'sim.physics',
            'sim.scenarios', 'sim.reports')
ROS_PACKAGES = ('rclpy', 'rosgraph_msgs', 'builtin_interfaces', 'geometry_msgs', 'std_msgs',
                'std_srvs', 'sensor_msgs', 'diagnostic_msgs', 'visualization_msgs',
                'rcl_interfaces', 'lifecycle_msgs', 'tf2_ros', 'tf2_msgs', 'launch', 'launch_ros')
ROS_EXCEPTIONS = {'bag/player.py'}
#: File -> the rooms it may import beyond its room's: the player publishes as the nodes do.
ROOM_EXCEPTIONS = {'bag/player.py': {'ros'}}


def _module(path: Path) -> list:
    parts = list(path.relative_to(PACKAGE).with_suffix('').parts)
    return parts[:-1] if parts[-1] == '__init__' else parts


def _room(parts: list) -> str:
    if parts[:1] == ['sim'] and len(parts) > 1:
        return '.'.join(parts[:2])
    return parts[0] if parts else ''


def _imports(path: Path) -> tuple:
    """Return the package modules (as part lists) and the outside packages a file imports."""
    parts = _module(path)
    package = parts if path.name == '__init__.py' else parts[:-1]
    inside, outside = [], []
    for node in ast.walk(ast.parse(path.read_text(encoding='utf-8'))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                names = ['.'.join(['wrench_distribution'] + base + ([node.module] if node.module else []))]
            else:
                names = [node.module]
        else:
            continue
        for name in names:
            if name.split('.')[0] == 'wrench_distribution':
                inside.append(name.split('.')[1:])
            else:
                outside.append(name.split('.')[0])
    return inside, outside


FILES = sorted(PACKAGE.rglob('*.py'))


@pytest.mark.parametrize('path', FILES, ids=[str(p.relative_to(PACKAGE)) for p in FILES])
def test_each_room_imports_only_the_rooms_below_it(path):
    room = _room(_module(path))
    assert room in MAY_IMPORT, f'{room}: a new room; give it its place in MAY_IMPORT and the docs'
    inside, outside = _imports(path)
    relative = str(path.relative_to(PACKAGE))
    wrong = sorted({_room(m) for m in inside} - MAY_IMPORT[room] - ROOM_EXCEPTIONS.get(relative, set()) - {room})
    assert not wrong, f'{path.relative_to(PACKAGE)} ({room}) imports {wrong}'
    if room in ROS_FREE and relative not in ROS_EXCEPTIONS:
        ros = sorted(set(outside) & set(ROS_PACKAGES))
        assert not ros, f'{path.relative_to(PACKAGE)} ({room}) imports ROS: {ros}'


def test_the_table_has_no_circle():
    """The allowed imports themselves run one way: a room never reaches back to itself."""
    def reach(room: str, seen: set) -> set:
        for below in MAY_IMPORT[room] - seen:
            seen.add(below)
            reach(below, seen)
        return seen
    for room in MAY_IMPORT:
        assert room not in reach(room, set()), room
