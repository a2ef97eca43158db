"""``wrench-distribution identify`` and ``check-signs`` on bags written in the test.

A two-arm cell: the grasp frame (the object frame, static contacts) turns in ``world``
through poses, published on ``/object_pose``; first the tools are free, then the object is
held with a squeeze. Readings come from :mod:`calibration_fixtures` (statics by hand, quasi
static while moving). The fragment written is loaded with the package's loader beside a
shipped configuration.
"""
import os
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation, Slerp
import yaml

import bag_fixtures as F
import calibration_fixtures as C

from wrench_distribution import cli
from wrench_distribution.config.loading import load_analyzer_config, read_ros_params_yaml

RATE_NS = 5_000_000                      # 200 Hz
REST, MOVE = 200, 60                     # samples per rest (1 s) and per move (0.3 s)
CONTACTS = np.array([[0.0, 0.2, 0.0, *Rotation.from_euler('x', 90, degrees=True).as_quat()],
                     [0.0, -0.2, 0.0, *Rotation.from_euler('x', -90, degrees=True).as_quat()]])
MASS, COM = 3.2, np.array([0.02, -0.01, 0.05])
NAMES = ['left', 'right']


def _tools(mounting=(Rotation.identity(), Rotation.identity())):
    return [C.Tool(-1, 0.9, np.array([0.01, -0.02, 0.05]), np.array([1.5, -2.0, 0.8, 0.05, -0.03, 0.02]),
                   np.array([0.0, 0.0, -0.05]), Rotation.identity(), mounting[0]),
            C.Tool(-1, 0.6, np.array([0.0, 0.01, 0.03]), np.array([-1.0, 0.5, 1.2, -0.04, 0.06, 0.01]),
                   np.array([0.0, 0.0, -0.04]), Rotation.identity(), mounting[1])]


def _path(rotations: list, still: bool = True) -> Rotation:
    """Rest in each orientation (or keep turning), slerp between them."""
    parts = []
    for j, rotation in enumerate(rotations):
        if j:
            slerp = Slerp([0.0, 1.0], Rotation.concatenate([rotations[j - 1], rotation]))
            parts.append(slerp(np.linspace(0.0, 1.0, MOVE, endpoint=False)))
        parts.append(Rotation.concatenate([rotation] * REST) if still else
                     Rotation.from_rotvec(np.outer(np.linspace(0, 0.4, REST), [0.0, 1.0, 0.0])) * rotation)
    return Rotation.concatenate(parts)


def _readings(tools, path: Rotation, held: bool, rng, squeeze=15.0) -> np.ndarray:
    g_object = path.inv().apply(C.G)
    k = len(g_object)
    world = np.zeros((k, 2, 6))
    if held:
        weight = MASS * g_object
        need = -np.concatenate([weight, np.cross(COM, weight)], axis=1)
        world[:, 0, :3] = [0.0, -squeeze, 0.0] + need[:, :3] / 2          # half the weight and a squeeze
        world[:, 0, 3:] = np.cross(CONTACTS[0, :3], world[:, 0, :3])
        world[:, 1] = need - world[:, 0]
    out = np.zeros((k, 2, 6))
    for i, tool in enumerate(tools):
        r = Rotation.from_quat(CONTACTS[i, 3:]).as_matrix()
        f_c = world[:, i, :3] @ r
        t_c = (world[:, i, 3:] - np.cross(CONTACTS[i, :3], world[:, i, :3])) @ r
        out[:, i] = C.read(tool, np.concatenate([f_c, t_c], axis=1), g_object @ r, rng)
    return out


def _write(path: Path, phases: list, storage: str = 'sqlite3') -> Path:
    """Write phases ``(rotations (Rotation of k), readings (k, 2, 6))`` one after the other."""
    bw = F.BagWriter(path, storage)
    ns = F.START_NS
    for rotations, readings in phases:
        for j in range(len(readings)):
            for i, name in enumerate(NAMES):
                bw.add(f'/{name}/ft_sensor', F.WS, ns + 100_000 * (i + 1),
                       F.wrench_msg(ns, f'{name}_ft', readings[j, i]))
            pose = F.T['geometry_msgs/msg/PoseStamped'](
                header=F._header(ns, 'world'), pose=F._pose(np.concatenate([[0.5, 0.0, 0.9], rotations[j].as_quat()])))
            bw.add('/object_pose', 'geometry_msgs/msg/PoseStamped', ns - 1_000_000, pose)
            ns += RATE_NS
    return bw.close()


def _params(signs=(-1, -1), **overrides) -> dict:
    return {'effectors': NAMES, 'contact_source': 'static',
            'contact_positions': CONTACTS[:, :3].ravel().tolist(),
            'contact_orientations': CONTACTS[:, 3:].ravel().tolist(),
            'sensor_positions': [0.0, 0.0, -0.05, 0.0, 0.0, -0.04], 'sensor_signs': list(signs),
            'tool_masses': [0.8, 0.8], 'tool_coms': [0.0, 0.0, 0.04] * 2,
            'gravity': [0.0, 0.0, -9.81], 'gravity_frame': 'world',
            'object_orientation_source': 'topic', 'object_pose_topic': 'object_pose',
            'sync_tolerance': 0.002, 'max_age': 0.0, 'max_future': 0.0, **overrides}


def _config(tmp_path: Path, signs=(-1, -1), **overrides) -> Path:
    path = tmp_path / 'cell.yaml'
    path.write_text(yaml.safe_dump({'wrench_analyzer': {'ros__parameters': _params(signs, **overrides)}}))
    return path


@pytest.fixture(scope='module')
def cell_bag(tmp_path_factory):
    rng = np.random.default_rng(7)
    tools = _tools()
    free = _path(C.tilts(6))
    held = _path(C.tilts(6, 25.0))
    directory = tmp_path_factory.mktemp('identify')
    return _write(directory / 'cell', [(free, _readings(tools, free, False, rng)),
                                       (held, _readings(tools, held, True, rng))]), len(free)


def _run(argv, capsys) -> tuple:
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert 'Traceback' not in out + err
    return code, out, err


def test_identify_finds_the_poses_and_writes_a_fragment_the_loader_takes(cell_bag, tmp_path, capsys):
    bag, free = cell_bag
    split = free * RATE_NS * 1e-9
    out = tmp_path / 'calibration.yaml'
    code, text, err = _run(['identify', bag, '--config', _config(tmp_path), '--out', out,
                            '--free', f'0:{split - 0.01}', '--held', f'{split}:1000'], capsys)
    assert code == 0, err
    assert 'tool mass' in text and 'held object' in text and text.count('samples  gravity') == 12
    assert '&' not in out.read_text()                                          # rcl refuses aliases
    shipped = read_ros_params_yaml('config/dual_arm.yaml', 'wrench_analyzer')
    merged = {**shipped, **read_ros_params_yaml(out, 'wrench_analyzer')}     # --params-file order
    config = load_analyzer_config(merged)
    tools = _tools()
    for i, tool in enumerate(tools):
        assert abs(config.sensors[i].tool_mass - tool.mass) < 0.005
        assert np.linalg.norm(np.array(config.sensors[i].tool_com) - tool.com) < 0.002
    biases = np.array(config.settings.sensor_biases).reshape(2, 6)
    assert np.all(np.abs(biases - [t.bias for t in tools]) < [0.02] * 3 + [0.002] * 3)
    assert abs(config.object_model.mass - MASS) < 0.005 * MASS
    assert np.linalg.norm(np.array(config.object_model.com) - COM) < 0.002
    distributor = read_ros_params_yaml(out, 'wrench_distributor')
    assert tuple(distributor['object_com']) == config.object_model.com


def test_mounting_rotations_written_as_sensor_orientations(tmp_path, capsys):
    """Sensors turned 1.5 and 2.5 deg on their flanges: found within 0.2 deg, written, loaded."""
    turned = (Rotation.from_rotvec(np.radians([1.0, -1.0, 0.5])), Rotation.from_rotvec(np.radians([0.0, 2.0, -1.5])))
    free = _path(C.tilts(6))
    bag = _write(tmp_path / 'turned', [(free, _readings(_tools(turned), free, False, np.random.default_rng(3)))])
    out = tmp_path / 'calibration.yaml'
    code, text, err = _run(['identify', bag, '--config', _config(tmp_path), '--out', out, '--mounting'], capsys)
    assert code == 0 and 'mounting' in text, err
    config = load_analyzer_config({**read_ros_params_yaml(_config(tmp_path), 'wrench_analyzer'),
                                   **read_ros_params_yaml(out, 'wrench_analyzer')})
    for sensor, rotation in zip(config.sensors, turned):
        error = Rotation.from_quat(sensor.orientation).inv() * rotation
        assert np.degrees(error.magnitude()) < 0.2


def test_check_signs_names_the_wrong_sign(cell_bag, tmp_path, capsys):
    bag, free = cell_bag
    held = f'{free * RATE_NS * 1e-9}:1000'
    code, text, _ = _run(['check-signs', bag, '--config', _config(tmp_path), '--held', held], capsys)
    assert code == 0 and text.count(' ok') == 2
    code, text, _ = _run(['check-signs', bag, '--config', _config(tmp_path, (-1, 1)), '--held', held,
                          '--json'], capsys)
    rows = yaml.safe_load(text)
    assert code == 1
    assert [r['measured'] for r in rows] == [-1, -1] and [r['configured'] for r in rows] == [-1, 1]
    assert rows[1]['fix'] == 'set sensor_signs[1] to -1 (right)' and rows[0]['fix'] == 'ok'
    tools = _tools()
    known = _config(tmp_path, tool_masses=[t.mass for t in tools],
                    tool_coms=np.concatenate([t.com for t in tools]).tolist(),
                    sensor_biases=np.concatenate([t.bias for t in tools]).tolist())
    code, text, _ = _run(['check-signs', bag, '--config', known, '--held', f'0:{free * RATE_NS * 1e-9 - 0.01}',
                          '--json'], capsys)
    assert code == 1 and all(r['measured'] is None and 'undetermined' in r['fix'] for r in yaml.safe_load(text))


def _hostile(tmp_path, name, phases, storage='sqlite3'):
    return _write(tmp_path / name, phases, storage)


def test_hostile_bags_are_refused_with_a_message(tmp_path, capsys):
    rng = np.random.default_rng(1)
    tools = _tools()
    config = _config(tmp_path)
    one = _path(C.tilts(1))
    turning = Rotation.from_rotvec(np.outer(np.linspace(0, 1.5, 600), [1.0, 0.5, 0.0]))
    nan = _readings(tools, _path(C.tilts(4)), False, rng)
    nan[:, 0, 2] = np.nan
    cases = {
        'one_orientation': ([(one, _readings(tools, one, False, rng))], 'share one gravity direction'),
        'no_static_segment': ([(turning, _readings(tools, turning, False, rng))], 'no static segment'),
        'nan': ([(_path(C.tilts(4)), nan)], 'no synchronised sample'),
    }
    for name, (phases, expected) in cases.items():
        code, _, err = _run(['identify', _hostile(tmp_path, name, phases), '--config', config,
                             '--out', tmp_path / f'{name}.yaml'], capsys)
        assert code == 2 and expected in err and err.startswith('error: '), (name, err)
        assert not (tmp_path / f'{name}.yaml').exists()
    good = _path(C.tilts(4))
    bag = _hostile(tmp_path, 'truncated', [(good, _readings(tools, good, False, rng))], 'mcap')
    data = next(bag.glob('*.mcap'))
    data.write_bytes(data.read_bytes()[: data.stat().st_size // 2])
    code, _, err = _run(['identify', bag, '--config', config, '--out', tmp_path / 't.yaml'], capsys)
    clear = ('incomplete', 'corrupt', 'has no messages')
    assert code == 2 and err.startswith('error: ') and any(w in err for w in clear), err
    code, _, err = _run(['identify', tmp_path / 'absent', '--config', config, '--out', tmp_path / 'a.yaml'], capsys)
    assert code == 2 and 'bag not found' in err


def write_example(bag: str, config: str) -> None:
    """Write the docs' example (docs/calibration.md): the cell's bag and parameter file.

    Tools free in 6 orientations from 0 to 7.5 s, the object held in 6 orientations after.
    """
    rng = np.random.default_rng(7)
    tools = _tools()
    free, held = _path(C.tilts(6)), _path(C.tilts(6, 25.0))
    _write(Path(bag), [(free, _readings(tools, free, False, rng)), (held, _readings(tools, held, True, rng))])
    Path(config).write_text(yaml.safe_dump({'wrench_analyzer': {'ros__parameters': _params()}}))


def test_out_is_written_whole_only_where_asked_and_never_beyond_the_bounds(cell_bag, tmp_path, capsys):
    """--out: never through a planted link, no directory created, a tool beyond the sensor's range refused."""
    bag, free = cell_bag
    window = ['--free', f'0:{free * RATE_NS * 1e-9 - 0.01}']
    victim = tmp_path / 'victim.yaml'
    victim.write_text('mine\n')
    link = tmp_path / 'calibration.yaml'
    link.symlink_to(victim)
    code, _, err = _run(['identify', bag, '--config', _config(tmp_path), '--out', link, *window], capsys)
    assert code == 2 and 'symbolic link' in err and 'nothing written' in err, err
    assert victim.read_text() == 'mine\n' and os.path.islink(link)
    code, _, err = _run(['identify', bag, '--config', _config(tmp_path), '--out', tmp_path / 'no' / 'c.yaml',
                         *window], capsys)
    assert code == 2 and 'does not exist' in err and not (tmp_path / 'no').exists(), err
    small = _config(tmp_path, sensor_ranges=[8.5] * 3 + [1.0] * 3)  # 0.8 kg configured, 0.9 kg identified
    code, _, err = _run(['identify', bag, '--config', small, '--out', tmp_path / 'out.yaml', *window], capsys)
    assert code == 2 and "identify refused: parameter 'tool_masses': the tool of 'left' weighs 8.8" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ['calibration.yaml', 'cell.yaml', 'victim.yaml']
