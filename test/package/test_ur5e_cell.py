"""The two-UR5e cell of ``config/ur5e_cell/`` and ``launch/ur5e_cell.launch.py``, as shipped.

- The controller manager files against the controllers' declared parameters, written here
  from their definitions (names, types, sizes, bounds, required ones);
- the nodes' file through ``wrench-distribution check-config`` and the nodes' strict loaders;
- the wiring between the three files and the launch file (topics, frames, tool weight);
- the launch file run (through ``test/helpers/launch_standin.py``) and its two nodes started as
  separate processes with exactly the command lines launch_ros would build, against a tf
  tree published on /tf and /tf_static (world -> base -> shoulder -> wrist_3 -> flange ->
  F/T sensor per arm, the box moving in world and the shoulder joints turning) and F/T
  streams made by hand from the commands: the commands come out on the controllers' topics
  in the sensor frames, their resultant is the desired wrench, and the analyzer reads the
  prescribed squeeze back.
"""
import glob
import json
import math
import os
import subprocess
import sys
import time

from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import WrenchStamped
import numpy as np
import pytest
from scipy.spatial.transform import Rotation
from std_msgs.msg import Float64MultiArray
import yaml

import launch_standin
from ros_harness import diag_values, domain_id_for, REPO, ros_env, script, stamped_wrench, TestClient
import tf2_standin
from wrench_distribution import config as P
from wrench_distribution.cell import LAYOUTS, NODE_NAMES
from wrench_distribution.core.codec import stamp_to_ns
from wrench_distribution.core.messages import wrench_to_array
from wrench_distribution.processes import Children

CELL = os.path.join(REPO, 'config', 'ur5e_cell')
NODES_FILE = os.path.join(CELL, 'wrench_distribution.yaml')
LAUNCH = os.path.join(REPO, 'launch', 'ur5e_cell.launch.py')
SIDES = ('left', 'right')


# -- the controllers' declared parameters ------------------------------------------------------
def _string(v) -> bool:
    return isinstance(v, str)


def _double(v) -> bool:
    return isinstance(v, float)  # rcl types `1` as an integer: a declared double refuses it


def _integer(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _bool(v) -> bool:
    return isinstance(v, bool)


def _array(check, size=None, low=-math.inf, high=math.inf):
    def ok(v) -> bool:
        return (isinstance(v, list) and all(map(check, v)) and (size is None or len(v) == size)
                and all(low <= x <= high for x in v if not isinstance(x, (str, bool))))
    return ok


_STRINGS = _array(_string)
# ros-controls/ros2_controllers @ 94e74de35f9d04f313aca8f29df66c3a76004aa7,
# admittance_controller/src/admittance_controller_parameters.yaml (generate_parameter_library):
# name -> (validator, required: declared without default_value)
ADMITTANCE = {
    'joints': (_STRINGS, True), 'command_joints': (_STRINGS, False),
    'command_interfaces': (_STRINGS, True), 'state_interfaces': (_STRINGS, True),
    'chainable_command_interfaces': (_STRINGS, False),
    'kinematics.plugin_name': (_string, True), 'kinematics.plugin_package': (_string, True),
    'kinematics.base': (_string, True), 'kinematics.tip': (_string, True),
    'kinematics.alpha': (_double, False),
    'ft_sensor.name': (_string, True), 'ft_sensor.frame.id': (_string, True),
    'ft_sensor.filter_coefficient': (_double, False),
    'control.frame.id': (_string, True), 'fixed_world_frame.frame.id': (_string, True),
    'gravity_compensation.frame.id': (_string, True),
    'gravity_compensation.CoG.pos': (_array(_double, 3), True),
    'gravity_compensation.CoG.force': (_double, False),  # one double: mass * 9.81
    'admittance.selected_axes': (_array(_bool, 6), True),
    'admittance.mass': (_array(_double, 6, 0.0001, 1e6), True),
    'admittance.damping_ratio': (_array(_double, 6), True),
    'admittance.stiffness': (_array(_double, 6, 0.0, 1e8), True),
    'admittance.joint_damping': (lambda v: _double(v) and v >= 0.0, False),
    'enable_parameter_update_without_reactivation': (_bool, False),
}
# same commit, force_torque_sensor_broadcaster/src/force_torque_sensor_broadcaster_parameters.yaml
# (frame_id: not_empty; sensor_filter_chain, a map, is not used here)
BROADCASTER = {'frame_id': (lambda v: _string(v) and v != '', True),
               'sensor_name': (_string, False)}
BROADCASTER.update({f'{kind}.{group}.{axis}': (check, False)
                    for kind, check in (('interface_names', _string), ('offset', _double),
                                        ('multiplier', _double))
                    for group in ('force', 'torque') for axis in 'xyz'})
# fzi-forschungszentrum-informatik/cartesian_controllers @ f53f798029ea5e05993e8a5d1736c713379af0e2
# (branch ros2): cartesian_controller_base/src/cartesian_controller_base.cpp (auto_declare),
# cartesian_force_controller/src/cartesian_force_controller.cpp, SpatialPDController.cpp and
# PDController.cpp (pd_gains.<axis>.p/.d, doubles). Required: on_init/on_configure refuse
# empty links and joints.
FZI_FORCE = {
    'ik_solver': (_string, False), 'robot_description': (_string, False),
    'robot_base_link': (lambda v: _string(v) and v != '', True),
    'end_effector_link': (lambda v: _string(v) and v != '', True),
    'ft_sensor_ref_link': (lambda v: _string(v) and v != '', True),
    'hand_frame_control': (_bool, False),
    'joints': (lambda v: _STRINGS(v) and len(v) > 0, True),
    'command_interfaces': (lambda v: _STRINGS(v) and set(v) <= {'position', 'velocity'}, True),
    'solver.error_scale': (_double, False), 'solver.iterations': (_integer, False),
    'solver.publish_state_feedback': (_bool, False),
}
FZI_FORCE.update({f'pd_gains.{axis}.{gain}': (_double, False)
                  for axis in ('trans_x', 'trans_y', 'trans_z', 'rot_x', 'rot_y', 'rot_z')
                  for gain in 'pd'})
#: plugin name (the controllers' plugin XML files) -> declared parameters
PLUGINS = {'admittance_controller/AdmittanceController': ADMITTANCE,
           'force_torque_sensor_broadcaster/ForceTorqueSensorBroadcaster': BROADCASTER,
           'cartesian_force_controller/CartesianForceController': FZI_FORCE}
CONTROLLER_FILES = {'controllers_jazzy.yaml': 'admittance', 'controllers_humble.yaml': 'fzi'}


def _flatten(tree: dict, prefix: str = '') -> dict:
    """Nested YAML maps -> dotted parameter names, as rcl reads a parameter file."""
    out = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            out.update(_flatten(value, f'{prefix}{key}.'))
        else:
            out[f'{prefix}{key}'] = value
    return out


def _controllers(path: str) -> dict:
    """Read a controller manager file: controller name -> (plugin type, flat parameters)."""
    with open(path) as f:
        doc = yaml.safe_load(f)
    manager = doc.pop('controller_manager')['ros__parameters']
    assert _integer(manager.pop('update_rate'))
    assert set(manager) == set(doc), 'every controller section listed in controller_manager'
    return {name: (manager[name]['type'], _flatten(doc[name]['ros__parameters']))
            for name in doc}


def _nodes_sections() -> tuple:
    with open(NODES_FILE) as f:
        doc = yaml.safe_load(f)
    return (doc['/**/wrench_distributor']['ros__parameters'],
            doc['/**/wrench_analyzer']['ros__parameters'])


@pytest.mark.parametrize('name', sorted(CONTROLLER_FILES))
def test_controller_files_match_the_controllers_declared_parameters(name):
    """Every key is declared by its controller, with the declared type; none required is missing."""
    controllers = _controllers(os.path.join(CELL, name))
    assert len(controllers) == 4
    for controller, (plugin, params) in controllers.items():
        declared = PLUGINS[plugin]
        unknown = sorted(set(params) - set(declared))
        assert not unknown, f'{name}: {controller}: not declared by {plugin}: {unknown}'
        for key, value in params.items():
            assert declared[key][0](value), f'{name}: {controller}.{key} = {value!r}'
        missing = sorted(k for k, (_, required) in declared.items()
                         if required and k not in params)
        assert not missing, f'{name}: {controller}: required by {plugin}: {missing}'


def test_the_key_checks_can_fail():
    """The validators refuse what the controllers refuse (an int for a double, a wrong size)."""
    assert not ADMITTANCE['gravity_compensation.CoG.force'][0](9)
    assert not ADMITTANCE['gravity_compensation.CoG.force'][0]([0.0, 0.0, -8.8])
    assert not ADMITTANCE['admittance.mass'][0]([1.0] * 5)
    assert not ADMITTANCE['admittance.mass'][0]([0.0] * 6)
    assert not ADMITTANCE['admittance.selected_axes'][0]([1, 1, 1, 1, 1, 1])
    assert not FZI_FORCE['solver.iterations'][0](1.0)
    assert _flatten({'a': {'b': {'p': 1.0}}}) == {'a.b.p': 1.0}


def _nodes_files() -> list:
    """Shipped nodes' files in the cells' folders (config/*.yaml: test_check_config.py)."""
    out = []
    for path in sorted(glob.glob(os.path.join(REPO, 'config', '*', '*.yaml'))):
        with open(path) as f:
            if '/**/wrench_distributor' in (yaml.safe_load(f) or {}):
                out.append(path)
    return out


def test_the_cell_ships_one_nodes_file():
    assert _nodes_files() == [NODES_FILE]
    with open(NODES_FILE) as f:
        doc = yaml.safe_load(f)
    assert {doc[f'/**/{n}']['ros__parameters']['contact_source']
            for n in ('wrench_distributor', 'wrench_analyzer')} == {'tf'}


@pytest.mark.parametrize('path', _nodes_files(), ids=lambda p: os.path.relpath(p, REPO))
def test_nodes_files_pass_check_config_and_the_strict_loaders(path):
    out = subprocess.run([script('wrench-distribution'), 'check-config', path],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert json.loads(out.stdout)['ok'] is True
    for kind, node, loader in (('distributor', 'wrench_distributor', P.load_distributor_config),
                               ('analyzer', 'wrench_analyzer', P.load_analyzer_config)):
        flat = P.read_ros_params_yaml(path, node)
        assert P.ros_yaml_type_problems(kind, flat) == []
        loader(path, node_name=node)  # strict: an unknown parameter raises


def _by_frame(controllers: dict, plugin: str, frame_key: str) -> dict:
    return {params[frame_key]: (name, params) for name, (p, params) in controllers.items()
            if p == plugin}


def _per_node(arguments: dict) -> dict:
    """Split the launch file's actions into what each node is given, in either layout.

    In one process (the ``cell`` executable) a remapping ``<node name>:from`` and a parameter
    file section ``/**/<node name>`` reach that node only; the rest reaches both.

    :return: executable (``distributor``, ``analyzer``) -> ``(remappings dict, parameters)``,
        a node-scoped file given as the dict of its values.
    """
    nodes = launch_standin.nodes_of(LAUNCH, arguments)
    if [n.executable for n in nodes] != ['cell']:
        assert [n.executable for n in nodes] == ['distributor', 'analyzer']
        return {n.executable: (dict(n.remappings), n.parameters) for n in nodes}
    (cell,) = nodes
    out = {}
    for exe, name in NODE_NAMES.items():
        remaps = {source.split(':', 1)[1]: target for source, target in cell.remappings
                  if source.split(':', 1)[0] == name}
        params = []
        for entry in cell.parameters:
            scoped = (yaml.safe_load(open(entry)) if isinstance(entry, str)
                      and os.path.basename(entry).startswith(tuple(NODE_NAMES.values())) else None)
            if scoped is None:
                params.append(entry)
            elif f'/**/{name}' in scoped:
                params.append(scoped[f'/**/{name}']['ros__parameters'])
        out[exe] = (remaps, params)
    assert len(cell.remappings) == sum(len(r) for r, _ in out.values())  # every one scoped
    return out


@pytest.mark.parametrize('layout', LAYOUTS)
@pytest.mark.parametrize('name', sorted(CONTROLLER_FILES))
def test_launch_remaps_each_arm_onto_the_controller_of_its_sensor_frame(name, layout):
    """The launch file's remappings, the controllers' frames and the nodes' frames agree.

    The command of effector i goes to the controller whose sensor frame is contact_frames[i]
    (admittance_controller: ``ft_sensor.frame.id``; FZI: ``end_effector_link`` =
    ``ft_sensor_ref_link``), and the analyzer reads the broadcaster publishing in that frame.
    """
    dist, ana = _nodes_sections()
    controllers = _controllers(os.path.join(CELL, name))
    kind = CONTROLLER_FILES[name]
    nodes = _per_node({'controllers': kind, 'layout': layout})
    (commands, _), (sensors, _) = nodes['distributor'], nodes['analyzer']
    broadcasters = _by_frame(controllers, 'force_torque_sensor_broadcaster/'
                             'ForceTorqueSensorBroadcaster', 'frame_id')
    if kind == 'admittance':
        arms = _by_frame(controllers, 'admittance_controller/AdmittanceController',
                         'ft_sensor.frame.id')
        topic = 'wrench_reference'
    else:
        arms = _by_frame(controllers, 'cartesian_force_controller/CartesianForceController',
                         'end_effector_link')
        topic = 'target_wrench'
    assert dist['contact_frames'] == ana['contact_frames']
    for i, effector in enumerate(dist['effectors']):
        frame = dist['contact_frames'][i]
        controller, params = arms[frame]
        assert commands[f'{effector}/wrench_command'] == f'/{controller}/{topic}'
        assert sensors[f'{effector}/ft_sensor'] == f'/{broadcasters[frame][0]}/wrench'
        if kind == 'admittance':  # the controller's tool model is the analyzer's
            assert params['gravity_compensation.frame.id'] == frame
            assert params['gravity_compensation.CoG.force'] == pytest.approx(
                ana['tool_masses'][i] * 9.81)
            assert params['gravity_compensation.CoG.pos'] == ana['tool_coms'][3 * i:3 * i + 3]
        else:
            assert params['ft_sensor_ref_link'] == frame and params['hand_frame_control']
    for _, parameters in nodes.values():
        assert parameters[0] == os.path.join(REPO, 'config', 'ur5e_cell', 'wrench_distribution.yaml')
    with pytest.raises(ValueError, match='accepted: admittance, fzi'):
        launch_standin.nodes_of(LAUNCH, {'controllers': 'admitance'})


@pytest.mark.parametrize('layout', LAYOUTS)
def test_launch_gives_both_nodes_the_calibration_file_never_as_a_parameter_file(tmp_path, layout):
    """calibration:=FILE: both nodes' calibration_file (each loads its calibration values from it).

    Never a --params-file: rcl would load every key it holds (a limit, a switch) before a node
    could refuse them. The same whether the file exists (a calibrated cell) or not (a first start).
    """
    for name, text in (('none.yaml', None), ('calibration.yaml', '/**/wrench_analyzer:\n  ros__parameters:\n'
                                                                 '    tool_masses: [0.9, 0.9]\n')):
        path = tmp_path / name
        if text:
            path.write_text(text)
        nodes = _per_node({'controllers': 'admittance', 'calibration': str(path), 'layout': layout})
        for exe, (_, parameters) in nodes.items():
            files = [p for p in parameters if isinstance(p, str)]
            assert files == [os.path.join(REPO, 'config', 'ur5e_cell', 'wrench_distribution.yaml')], exe
            assert {'calibration_file': str(path)} in parameters, exe


# -- the cell over DDS --------------------------------------------------------------------------
def _matrix(p, q) -> np.ndarray:
    m = np.eye(4)
    m[:3, :3], m[:3, 3] = Rotation.from_quat(q).as_matrix(), p
    return m


def _pose(m: np.ndarray) -> tuple:
    return m[:3, 3], Rotation.from_matrix(m[:3, :3]).as_quat()


S2 = math.sqrt(0.5)
#: sensor frame in the box (the grasps): z into the box, 8 cm behind the grasp points
GRASPS = {'left': _matrix((0.0, 0.38, 0.0), (S2, 0.0, 0.0, S2)),
          'right': _matrix((0.0, -0.38, 0.0), (-S2, 0.0, 0.0, S2))}
BASES = {'left': _matrix((0.0, 0.75, 0.0), (0, 0, 0, 1)),
         'right': _matrix((0.0, -0.75, 0.0), (0, 0, 0, 1))}
# ur_description: wrist_3_link -> flange rpy (0, -pi/2, -pi/2); the sensor on the flange with
# its z axis out of it (flange -> tool0's rotation, rpy (pi/2, 0, pi/2)), 3.75 cm out
WRIST3_FLANGE = _matrix((0, 0, 0), Rotation.from_euler('xyz', [0, -np.pi / 2, -np.pi / 2]).as_quat())
FLANGE_SENSOR = _matrix((0.0375, 0, 0), Rotation.from_euler('xyz', [np.pi / 2, 0, np.pi / 2]).as_quat())
SHOULDER_HEIGHT = 0.1625


#: the box's orientation in world: tilted, held still while the arms carry it about
BOX_TILT = Rotation.from_euler('xy', [0.2, -0.1])


def _box_in_world(t: float) -> np.ndarray:
    """Pose the box in world: carried about by the two arms, tilted."""
    return _matrix((0.6 + 0.05 * math.sin(t), 0.02 * math.sin(0.7 * t), 0.4 + 0.03 * math.sin(t)),
                   BOX_TILT.as_quat())


def _tf_tree(t: float, stamp_ns: int) -> tuple:
    """Build the static and the dynamic transforms at time ``t``.

    The shoulder joint turns; the rest of the arm (upper arm to wrist 3, one edge here) puts
    the sensor at its grasp on the moving box.
    """
    static, dynamic = [], [tf2_standin.transform('world', 'box', stamp_ns, *_pose(_box_in_world(t)))]
    for side in SIDES:
        static += [tf2_standin.transform('world', f'{side}_base_link', 0, *_pose(BASES[side])),
                   tf2_standin.transform(f'{side}_wrist_3_link', f'{side}_flange', 0,
                                         *_pose(WRIST3_FLANGE)),
                   tf2_standin.transform(f'{side}_flange', f'{side}_ft_frame', 0,
                                         *_pose(FLANGE_SENSOR))]
        shoulder = _matrix((0, 0, SHOULDER_HEIGHT),
                           Rotation.from_euler('z', 0.3 * math.sin(t)).as_quat())
        wrist3 = (np.linalg.inv(BASES[side] @ shoulder) @ _box_in_world(t) @ GRASPS[side]
                  @ np.linalg.inv(WRIST3_FLANGE @ FLANGE_SENSOR))
        dynamic += [tf2_standin.transform(f'{side}_base_link', f'{side}_shoulder_link', stamp_ns,
                                          *_pose(shoulder)),
                    tf2_standin.transform(f'{side}_shoulder_link', f'{side}_wrist_3_link',
                                          stamp_ns, *_pose(wrist3))]
    return static, dynamic


def _transport(w: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Move a wrench about frame A's origin in A's axes to B's origin and axes (A in B: m)."""
    r, p = m[:3, :3], m[:3, 3]
    f = r @ w[:3]
    return np.concatenate([f, r @ w[3:] + np.cross(p, f)])


def _reading(command: np.ndarray, side: str, t: float, tool_mass: float, tool_com) -> list:
    """Make the F/T reading for an effector applying ``command`` (sensor = contact).

    Sign -1 (the sensor reports the wrench acting on it) plus the gripper's weight, gravity
    turned into the sensor frame through the box's orientation in world.
    """
    r_world_sensor = (_box_in_world(t) @ GRASPS[side])[:3, :3]
    weight = tool_mass * (r_world_sensor.T @ np.array([0.0, 0.0, -9.81]))
    return list(-command + np.concatenate([weight, np.cross(tool_com, weight)]))


def _launch_processes(tmp_path, domain: int, layout: str, nodes: Children) -> None:
    """Start the launch file's nodes as launch_ros would, each on the tf2 stand-in."""
    for node in launch_standin.nodes_of(LAUNCH, {'controllers': 'admittance', 'layout': layout}):
        cmd = ([sys.executable, os.path.join(REPO, 'test', 'helpers', 'standin_node.py'), node.executable]
               + node.ros_arguments(str(tmp_path)))
        nodes.start(node.executable, cmd, ros_env(domain), log=tmp_path / f'{node.executable}.log')


@pytest.mark.ros
@pytest.mark.parametrize('layout', LAYOUTS)
def test_launch_starts_both_nodes_against_a_tf_tree_and_ft_streams(tmp_path, layout):
    """Commands on the controllers' topics in the sensor frames; the box held; the squeeze read back.

    The desired wrench is zero: with ``hold_object_weight`` the commands' resultant, moved by
    hand through the grasps, is the box's weight compensation ``-m R^T g`` (``R`` the box's
    tilt in world), and the analyzer reads that resultant and the 15 N squeeze back.
    """
    domain = domain_id_for(__name__)
    dist, ana = _nodes_sections()
    client = TestClient(domain, 'wd_cell_client')
    nodes = Children()
    try:
        _launch_processes(tmp_path, domain, layout, nodes)
        static_tf = tf2_standin.StaticTransformBroadcaster(client.node)
        tf = tf2_standin.TransformBroadcaster(client.node)
        desired_pub = client.publisher(WrenchStamped, 'desired_wrench')
        ft_pubs = {s: client.publisher(WrenchStamped, f'/{s}_ft_sensor_broadcaster/wrench')
                   for s in SIDES}
        commands = {s: client.collect(WrenchStamped, f'/{s}_admittance_controller/wrench_reference')
                    for s in SIDES}
        measured = client.collect(Float64MultiArray, 'measured/internal_load')
        obj = client.collect(WrenchStamped, 'object_wrench')
        diags = client.collect(DiagnosticArray, '/diagnostics')
        assert client.wait_matched(publishers=[desired_pub, *ft_pubs.values()],
                                   topics=['object_wrench'], timeout=20.0)
        static, _ = _tf_tree(0.0, 0)
        static_tf.sendTransform(static)
        desired = np.zeros(6)
        held = np.concatenate([-dist['object_mass'] * BOX_TILT.as_matrix().T @ [0.0, 0.0, -9.81],
                               np.zeros(3)])
        t0 = time.monotonic()
        end = t0 + 20.0  # ends at 20 read-outs (about 2 s unloaded)
        while time.monotonic() < end and len(measured) < 20:
            t = time.monotonic() - t0
            stamp = client.node.get_clock().now().nanoseconds
            tf.sendTransform(_tf_tree(t, stamp)[1])
            desired_pub.publish(stamped_wrench(desired, stamp, 'box'))
            client.spin_for(0.02)
            if all(commands.values()):  # the effectors apply the latest commands
                for k, side in enumerate(SIDES):
                    cmd = wrench_to_array(commands[side][-1].wrench)
                    ft_pubs[side].publish(stamped_wrench(
                        _reading(cmd, side, t, ana['tool_masses'][k], ana['tool_coms'][3 * k:3 * k + 3]),
                        stamp, f'{side}_ft_frame'))
            client.spin_for(0.02)
        logs = ''.join(log.read_text() for log in sorted(tmp_path.glob('*.log')))
        assert all(commands.values()), logs
        for side in SIDES:
            assert {m.header.frame_id for m in commands[side]} == {f'{side}_ft_frame'}
        # the commands' resultant, moved by hand through the grasps, about the CoM
        com = np.array(dist['object_com'])
        total = sum(_transport(wrench_to_array(commands[s][-1].wrench), GRASPS[s]) for s in SIDES)
        total[3:] -= np.cross(com, total[:3])
        np.testing.assert_allclose(total, desired + held, atol=1e-6)
        up = BOX_TILT.inv().apply([0.0, 0.0, 1.0])  # world z in the box frame
        assert total[:3] @ up == pytest.approx(4.0 * 9.81)  # the weight, held up
        assert len(measured) >= 5, logs
        names = measured[-1].layout.dim[0].label.split(';')
        squeeze = measured[-1].data[names.index('squeeze(left,right)')]
        assert squeeze == pytest.approx(15.0, abs=1e-3)
        np.testing.assert_allclose(wrench_to_array(obj[-1].wrench), desired + held, atol=1e-3)
        assert stamp_to_ns(obj[-1].header.stamp) > 0
        assert 'Traceback' not in logs
        client.spin_until(lambda: 'held_weight_force' in diag_values(diags, 'wrench_distributor'), 3.0)
        values = diag_values(diags, 'wrench_distributor')
        assert values['hold_object_weight'].startswith('on: 4 kg at object_com'), values
        np.testing.assert_allclose([float(x) for x in values['held_weight_force'].split(',')],
                                   held[:3], rtol=1e-5)
    finally:
        nodes.stop()
        client.close()
