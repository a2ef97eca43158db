"""A calibration file carries calibration only, every value within its physical bounds, written whole.

config/files.py (the package's one atomic writer, and its reader), config/calibration.py (what a
calibration may carry, its bounds against the sensors' ranges and the configuration), and
check-config judging a calibration on its own and against a configuration.
"""
import json
import os
import stat

from hypothesis import given, settings, strategies as st
import numpy as np
import pytest
from scipy.spatial.transform import Rotation
import yaml

from wrench_distribution import cli
from wrench_distribution.config import calibration as K
from wrench_distribution.config.files import FileRefused, read_regular_file, write_atomically
from wrench_distribution.config.schema import ConfigError
from wrench_distribution.config.validation import validate_params
from wrench_distribution.engine.calibration import fragment

ANALYZER = {'effectors': ['left', 'right'], 'contact_source': 'static',
            'contact_positions': [0.0, 0.2, 0.0, 0.0, -0.2, 0.0]}
CALIBRATION = {'tool_masses': [0.9, 0.6], 'tool_coms': [0.0, 0.0, 0.05, 0.0, 0.01, 0.03],
               'sensor_biases': [1.5, -2.0, 0.8, 0.05, -0.03, 0.02, -1.0, 0.5, 1.2, -0.04, 0.06, 0.01],
               'object_mass': 3.2, 'object_com': [0.02, -0.01, 0.05]}


def _listing(directory) -> list:
    return sorted(os.listdir(directory))


# -- the writer and the reader --------------------------------------------------------------------
def test_write_atomically_writes_whole_and_keeps_the_mode(tmp_path):
    path = tmp_path / 'calibration.yaml'
    assert write_atomically(path, 'a: 1\n') == str(path)
    assert path.read_text() == 'a: 1\n' and stat.S_IMODE(path.stat().st_mode) == 0o644
    path.chmod(0o600)
    write_atomically(path, 'a: 2\n')
    assert path.read_text() == 'a: 2\n' and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert _listing(tmp_path) == ['calibration.yaml']


def test_a_planted_link_is_refused_and_what_it_points_to_untouched(tmp_path):
    victim = tmp_path / 'victim.yaml'
    victim.write_text('mine\n')
    kept = tmp_path / 'kept'
    kept.mkdir()
    link = kept / 'calibration.yaml'
    link.symlink_to(victim)
    with pytest.raises(FileRefused, match='symbolic link.*not written through it'):
        write_atomically(link, 'planted\n')
    with pytest.raises(FileRefused, match='symbolic link.*not read through it'):
        read_regular_file(link, 1000)
    assert victim.read_text() == 'mine\n' and os.path.islink(link) and _listing(kept) == ['calibration.yaml']


def test_a_planted_temporary_name_is_never_opened(tmp_path):
    """The old writer opened ``<file>.tmp``: a link planted there wrote through it. Now a unique name."""
    victim = tmp_path / 'victim'
    victim.write_text('mine\n')
    (tmp_path / 'calibration.yaml.tmp').symlink_to(victim)
    write_atomically(tmp_path / 'calibration.yaml', 'calibrated\n')
    assert victim.read_text() == 'mine\n' and (tmp_path / 'calibration.yaml').read_text() == 'calibrated\n'


def test_nothing_is_created_outside_and_nothing_left_on_error(tmp_path, monkeypatch):
    with pytest.raises(FileRefused, match='does not exist'):
        write_atomically(tmp_path / 'absent' / 'calibration.yaml', 'x\n')
    assert _listing(tmp_path) == []
    (tmp_path / 'a_directory').mkdir()
    with pytest.raises(FileRefused, match='not a regular file'):
        write_atomically(tmp_path / 'a_directory', 'x\n')
    path = tmp_path / 'calibration.yaml'
    path.write_text('before\n')

    def broken(source, target):
        assert os.path.dirname(source) == str(tmp_path) and source != str(path) + '.tmp'
        raise OSError(28, 'No space left on device')
    monkeypatch.setattr(os, 'replace', broken)
    with pytest.raises(OSError, match='No space left'):
        write_atomically(path, 'after\n')
    assert path.read_text() == 'before\n' and _listing(tmp_path) == ['a_directory', 'calibration.yaml']


def test_the_reader_takes_regular_files_of_bounded_size(tmp_path):
    path = tmp_path / 'big.yaml'
    path.write_bytes(b'x' * 101)
    assert read_regular_file(path, 101) == b'x' * 101
    with pytest.raises(FileRefused, match='larger than 100 bytes'):
        read_regular_file(path, 100)
    fifo = tmp_path / 'fifo'
    os.mkfifo(fifo)
    with pytest.raises(FileRefused, match='not a regular file'):
        read_regular_file(fifo, 100)
    with pytest.raises(FileNotFoundError):
        read_regular_file(tmp_path / 'absent', 100)


# -- what a calibration may carry ----------------------------------------------------------------------
def _write(tmp_path, document) -> str:
    path = tmp_path / 'calibration.yaml'
    path.write_text(yaml.safe_dump(document))
    return str(path)


def test_each_node_takes_its_calibration_values_and_nothing_else(tmp_path):
    path = _write(tmp_path, fragment(CALIBRATION))
    assert K.read_calibration(path, 'analyzer', 'wrench_analyzer') == CALIBRATION
    assert K.read_calibration(path, 'distributor', 'wrench_distributor') == {
        'object_mass': 3.2, 'object_com': [0.02, -0.01, 0.05]}
    assert K.read_calibration(tmp_path / 'absent.yaml', 'analyzer', 'wrench_analyzer') is None


@pytest.mark.parametrize('section, values, named', [
    ('/**/wrench_distributor', {'force_limits': [1e9]}, "'force_limits' is not a calibration value"),
    ('/**/wrench_distributor', {'on_limit': 'scale'}, "'on_limit' is not a calibration value"),
    ('/**/wrench_distributor', {'allow_unsafe_runtime_changes': True}, "'allow_unsafe_runtime_changes'"),
    ('/**/wrench_distributor', {'sensor_biases': [0.0] * 12}, "'sensor_biases' is not a calibration value of the "
                                                              'distributor'),
    ('/**/wrench_analyzer', {'ft_topics': ['/a', '/b']}, "'ft_topics' is not a calibration value"),
    ('/**', {'calibration_file': '/etc/passwd'}, "'calibration_file' is not a calibration value"),
])
def test_anything_but_calibration_is_refused_naming_it(tmp_path, section, values, named):
    path = _write(tmp_path, {**fragment(CALIBRATION), section: {'ros__parameters': values}})
    kind, node = ('distributor', 'wrench_distributor') if 'distributor' in section else ('analyzer', 'wrench_analyzer')
    with pytest.raises(ConfigError, match=f'calibration_file .*{named}.*calibration only') as refusal:
        K.read_calibration(path, kind, node)
    assert str(path) in str(refusal.value)


@pytest.mark.parametrize('values, named', [
    ({'sensor_biases': [1e6] + [0.0] * 11}, r"'sensor_biases': entry 0 \(1e\+06\) is out of its bounds \(<= 100000\)"),
    ({'tool_masses': [1e6, 0.5]}, r"'tool_masses': entry 0 \(1e\+06\) is out of its bounds \(<= 1000\)"),
    ({'tool_coms': [0.0, 0.0, 40.0, 0.0, 0.0, 0.0]}, r"'tool_coms': entry 2 \(40\) is out of its bounds \(<= 2\)"),
    ({'object_mass': 1e9}, r"'object_mass': 1000000000.0 is too large; accepted: between 0.0 and 10000.0"),
    ({'object_mass': -1.0}, "'object_mass'"),
])
def test_a_value_beyond_its_bounds_is_refused_at_load(tmp_path, values, named):
    path = _write(tmp_path, fragment({**CALIBRATION, **values}))
    with pytest.raises(ConfigError, match=named):
        K.read_calibration(path, 'analyzer', 'wrench_analyzer')


def test_not_yaml_or_too_large_is_refused(tmp_path):
    path = tmp_path / 'calibration.yaml'
    path.write_text('a: [1, 2\n')
    with pytest.raises(ConfigError, match='not valid YAML'):
        K.read_calibration(path, 'analyzer', 'wrench_analyzer')
    path.write_text('# ' + 'x' * K.MAX_FILE_BYTES)
    with pytest.raises(ConfigError, match='larger than'):
        K.read_calibration(path, 'analyzer', 'wrench_analyzer')
    path.write_text('[1, 2]\n')
    with pytest.raises(ConfigError, match='mapping of node sections'):
        K.read_calibration(path, 'analyzer', 'wrench_analyzer')


# -- bounds against the sensors and the configuration --------------------------------------------------
@settings(max_examples=60, deadline=None, derandomize=True)
@given(force=st.floats(1.0, 1e4), torque=st.floats(0.1, 1e3), ratio=st.floats(0.0, 2.0),
       axis=st.integers(0, 5), effector=st.integers(0, 1))
def test_a_bias_is_refused_exactly_beyond_its_sensors_range(force, torque, ratio, axis, effector):
    biases = np.zeros(12)
    biases[6 * effector + axis] = ratio * (force if axis < 3 else torque) * (-1) ** axis
    values = {**ANALYZER, 'sensor_ranges': [force] * 3 + [torque] * 3, 'sensor_biases': biases.tolist(),
              'effectors': ['left', 'right']}
    errors = K.range_errors(values)
    assert bool(errors) == (ratio > 1.0)
    if errors:
        text = str(errors[0])
        assert f"'{values['effectors'][effector]}'" in text and 'sensor_ranges' in text
        assert f'{force if axis < 3 else torque:g}' in text


def test_tools_and_the_object_within_what_the_sensors_carry():
    assert K.range_errors({**ANALYZER, 'tool_masses': [0.9, 0.6], 'tool_coms': [0.0, 0.0, 0.05] * 2,
                           'object_mass': 3.2, 'object_com': [0.02, -0.01, 0.05]}) == []
    heavy = K.range_errors({**ANALYZER, 'sensor_ranges': [50.0] * 3 + [10.0] * 3, 'tool_masses': [6.0, 0.5]})
    assert len(heavy) == 1 and "tool of 'left' weighs 58.86 N" in str(heavy[0])
    far = K.range_errors({**ANALYZER, 'sensor_ranges': [50.0] * 3 + [10.0] * 3, 'tool_masses': [1.0, 0.5],
                          'tool_coms': [0.0, 0.0, 2.0, 0.0, 0.0, 0.0]})
    assert 'moment of 19.62 N m' in str(far[0])
    assert "'object_mass': 300 kg weighs 2943 N" in str(K.range_errors({**ANALYZER, 'object_mass': 300.0})[0])
    assert "'object_com'" in str(K.range_errors({**ANALYZER, 'object_mass': 3.0, 'object_com': [0.0, 0.0, 60.0]})[0])


@pytest.mark.parametrize('degrees, refused', [(5.0, False), (9.9, False), (10.1, True), (30.0, True)])
def test_a_mounting_rotation_is_bounded_against_the_configured_orientation(degrees, refused):
    configured = [0.0, 0.0, 0.0, 1.0, *Rotation.from_euler('z', 90, degrees=True).as_quat()]
    turned = Rotation.from_rotvec(np.radians(degrees) * np.array([0.6, 0.0, 0.8]))
    calibrated = [0.0, 0.0, 0.0, 1.0, *(Rotation.from_quat(configured[4:]) * turned).as_quat()]
    values = {**ANALYZER, 'sensor_orientations': configured}
    if refused:
        with pytest.raises(ConfigError, match=f"turns 'right' by {degrees:.3g} deg.*beyond a mounting rotation"):
            K.merged(values, {'sensor_orientations': calibrated}, 'analyzer')
    else:
        assert K.merged(values, {'sensor_orientations': calibrated}, 'analyzer')['sensor_orientations'] == calibrated


def test_a_grasp_correction_is_bounded_against_the_configured_contacts():
    moved = [0.0, 0.2, 0.0, 0.0, -0.2 + 0.049, 0.0]
    assert K.merged(ANALYZER, {'contact_positions': moved}, 'analyzer')['contact_positions'] == moved
    with pytest.raises(ConfigError, match="moves 'right' by 0.06 m.*beyond a grasp correction"):
        K.merged(ANALYZER, {'contact_positions': [0.0, 0.2, 0.0, 0.0, -0.14, 0.0]}, 'analyzer')


def test_checked_refuses_before_a_write():
    configured = validate_params('analyzer', ANALYZER)
    assert K.checked(CALIBRATION, configured)['tool_masses'] == [0.9, 0.6]
    with pytest.raises(ConfigError, match='not calibration values: force_limits'):
        K.checked({**CALIBRATION, 'force_limits': [1e9]}, configured)
    with pytest.raises(ConfigError, match="force bias of 'left' .* exceeds its sensor's range 1000 N"):
        K.checked({**CALIBRATION, 'sensor_biases': [2000.0] + [0.0] * 11}, configured)


# -- check-config -----------------------------------------------------------------------------------------
def _check(argv, capsys) -> tuple:
    code = cli.main(['check-config', *map(str, argv)])
    return code, json.loads(capsys.readouterr().out)


def test_check_config_judges_a_calibration_alone_and_against_a_configuration(tmp_path, capsys):
    good = _write(tmp_path, fragment(CALIBRATION))
    code, document = _check([good], capsys)
    assert code == 0 and document['ok'] and set(document['sections']) == {'wrench_analyzer', 'wrench_distributor'}
    hostile = tmp_path / 'hostile.yaml'
    hostile.write_text(yaml.safe_dump({**fragment({**CALIBRATION, 'sensor_biases': [1e6] + [0.0] * 11}),
                                       '/**/wrench_distributor': {'ros__parameters': {
                                           'object_mass': 3.2, 'force_limits': [1e9], 'on_limit': 'scale',
                                           'allow_unsafe_runtime_changes': True}}}))
    code, document = _check([hostile], capsys)
    named = {(e['section'], e['parameter']) for e in document['errors']}
    assert code == 2 and {('/**/wrench_distributor', 'force_limits'), ('/**/wrench_distributor', 'on_limit'),
                          ('/**/wrench_distributor', 'allow_unsafe_runtime_changes'),
                          ('wrench_analyzer', 'sensor_biases')} <= named, document['errors']
    config = tmp_path / 'cell.yaml'
    analyzer = {**ANALYZER, 'sensor_ranges': [50.0] * 3 + [5.0] * 3, 'sensor_signs': [-1, -1]}
    config.write_text(yaml.safe_dump({'wrench_analyzer': {'ros__parameters': analyzer},
                                      'wrench_distributor': {'ros__parameters': ANALYZER}}))
    code, document = _check([config, '--calibration', good], capsys)
    assert code == 0, document
    strong = _write(tmp_path, fragment({**CALIBRATION, 'sensor_biases': [60.0] + [0.0] * 11}))
    code, document = _check([config, '--calibration', strong], capsys)
    assert code == 2 and "exceeds its sensor's range 50 N" in document['error']
