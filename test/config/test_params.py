"""The pure parameter schema: validation messages, YAML reading, config objects."""
import pytest

from wrench_distribution import config as P

BASE = {'effectors': ['left', 'right'], 'contact_source': 'static',
        'contact_positions': [0.0, 0.3, 0.0, 0.0, -0.3, 0.0]}


def test_defaults_fill_and_every_spec_is_documented():
    for kind, specs in (('distributor', P.DISTRIBUTOR_PARAMS), ('analyzer', P.ANALYZER_PARAMS)):
        v = P.validate_params(kind, BASE)
        assert set(v) == {s.name for s in specs}
        names = [s.name for s in specs]
        assert len(names) == len(set(names))
        for s in specs:
            assert s.description and s.constraint_text()
            P.check_param_value(s, s.default)  # defaults are valid values


@pytest.mark.parametrize('kind,change,needle', [
    ('distributor', {'on_timeout': 'explode'}, "'on_timeout'"),
    ('distributor', {'torque_share': 1.5}, "'torque_share'"),
    ('distributor', {'torque_share': float('nan')}, "'torque_share'"),
    ('distributor', {'contact_types': ['rigid', 'glue']}, 'rigid, point'),
    ('distributor', {'contact_types': ['rigid']}, "'contact_types'"),
    ('distributor', {'effectors': ['a']}, "'effectors'"),
    ('distributor', {'effectors': ['a', 'a']}, 'unique'),
    ('distributor', {'contact_positions': [0.0] * 5}, "'contact_positions'"),
    ('distributor', {'contact_orientations': [0.0] * 8}, 'zero'),
    ('distributor', {'internal_load_handles': ['squeeze']}, 'basis_name=number'),
    ('distributor', {'internal_load_handles': ['sqeeze(left,right)=1']}, "did you mean 'squeeze'"),
    ('distributor', {'internal_load_handles': ['squeeze(left,rihgt)=1']}, "did you mean 'right'"),
    ('distributor', {'internal_load_handles': ['twist(left,right)=1'],
                     'contact_types': ['point', 'point']}, 'point contacts apply none'),
    ('distributor', {'internal_load_handles': ['squeeze(left,right)=9e9']}, 'internal_load_limit'),
    ('distributor', {'internal_load': [1.0], 'internal_load_handles': ['x=1']}, 'at most one'),
    ('distributor', {'command_frame': 'world'}, 'contact, object'),
    ('distributor', {'command_sign': 2}, "'command_sign'"),
    ('distributor', {'no_such_param': 1}, 'unknown parameter'),
    ('analyzer', {'sensor_signs': [1, 2]}, "'sensor_signs'"),
    ('analyzer', {'tool_masses': [1.0]}, "'tool_masses'"),
    ('analyzer', {'tool_masses': [1.0, -1.0]}, "'tool_masses'"),
    ('analyzer', {'gravity': [0.0, 9.81]}, "'gravity'"),
    ('analyzer', {'sync_tolerance': -1.0}, "'sync_tolerance'"),
    ('analyzer', {'command_frame': 'contact'}, 'unknown parameter'),
])
def test_invalid_values_name_the_parameter(kind, change, needle):
    """The node's path (values, cross-checks, the configuration built) names what it refuses."""
    load = P.load_distributor_config if kind == 'distributor' else P.load_analyzer_config
    with pytest.raises(P.ConfigError) as e:
        load(dict(BASE, **change))
    assert needle in str(e.value)


def test_types_are_checked():
    spec = {s.name: s for s in P.DISTRIBUTOR_PARAMS}
    with pytest.raises(P.ConfigError, match='expected a string'):
        P.check_param_value(spec['object_frame'], 3)
    with pytest.raises(P.ConfigError, match='true or false'):
        P.check_param_value(spec['publish_markers'], 'yes')
    assert P.check_param_value(spec['torque_share'], 1) == 1.0
    assert P.check_param_value(spec['object_com'], (1, 2, 3)) == [1.0, 2.0, 3.0]


def test_handles_parse():
    assert P.parse_handles(['squeeze(left,right)=20', 'twist(left,right) = -1.5']) == {
        'squeeze(left,right)': 20.0, 'twist(left,right)': -1.5}
    with pytest.raises(P.ConfigError):
        P.parse_handles(['squeeze(left,right)=nan'])


def test_yaml_sections_and_wildcards(tmp_path):
    f = tmp_path / 'p.yaml'
    f.write_text(
        '/**:\n  ros__parameters:\n    object_frame: box\n    effectors: [a, b]\n'
        '/ns/wrench_analyzer:\n  ros__parameters:\n    contact_source: static\n'
        '    contact_positions: [0.0, 0.1, 0.0, 0.0, -0.1, 0.0]\n'
        '    sensor_signs: [-1, 1]\n    tool_masses: [0.5, 0.0]\n'
        '    nested:\n      ignored: 1\n'
        'other_node:\n  ros__parameters:\n    effectors: [x, y]\n')
    flat = P.read_ros_params_yaml(str(f), 'wrench_analyzer')
    assert flat['nested.ignored'] == 1 and flat['object_frame'] == 'box'
    with pytest.raises(P.ConfigError, match='nested.ignored'):
        P.load_analyzer_config(str(f))
    cfg = P.load_analyzer_config(str(f), strict_unknown=False)
    assert cfg.effectors == ('a', 'b') and cfg.object_frame == 'box'
    assert [s.sign for s in cfg.sensors] == [-1, 1]
    assert cfg.sensors[0].tool_mass == 0.5
    assert [c.name for c in cfg.contacts] == ['a', 'b']
    assert cfg.topics.ft == ('a/ft_sensor', 'b/ft_sensor')
    assert cfg.gravity == (0.0, 0.0, -9.81) and cfg.settings.max_age_ns == 500_000_000


def test_bad_files_give_config_errors(tmp_path):
    with pytest.raises(P.ConfigError, match='cannot read'):
        P.load_analyzer_config(str(tmp_path / 'missing.yaml'))
    bad = tmp_path / 'bad.yaml'
    bad.write_text('a: [1, 2\n')
    with pytest.raises(P.ConfigError, match='not valid YAML'):
        P.load_analyzer_config(str(bad))
    other = tmp_path / 'other.yaml'
    other.write_text('someone:\n  ros__parameters:\n    x: 1\n')
    with pytest.raises(P.ConfigError, match="no section for node 'wrench_analyzer'"):
        P.load_analyzer_config(str(other))
    unsafe = tmp_path / 'unsafe.yaml'
    unsafe.write_text('!!python/object/apply:os.system ["true"]\n')
    with pytest.raises(P.ConfigError):
        P.load_analyzer_config(str(unsafe))


def test_distributor_config_object():
    cfg = P.load_distributor_config({'wrench_distributor': {'ros__parameters': dict(
        BASE, internal_load_handles=['squeeze(left,right)=20'], torque_share=0.25,
        command_topics=['/a/wrench_reference', '/b/wrench_reference'])}})
    prescription = cfg.settings.prescription
    assert prescription.kind == 'handles' and prescription.handles == (('squeeze(left,right)', 20.0),)
    assert cfg.options.torque_share == 0.25
    assert cfg.topics.commands == ('/a/wrench_reference', '/b/wrench_reference')
    assert cfg.contact_frames == ('left_contact', 'right_contact')
    flat = P.load_distributor_config(dict(BASE))  # a flat dict works too
    assert flat.settings.prescription.kind == 'none'
    assert flat.topics.commands[0] == 'left/wrench_command'


def test_rcl_type_problems():
    probs = P.ros_yaml_type_problems('analyzer', {'max_age': 1, 'gravity': [0, 0, -9.81],
                                                  'tool_masses': [], 'sensor_signs': [1, -1]})
    text = ' '.join(probs)
    assert "'max_age'" in text and "'gravity'" in text and "'tool_masses'" in text
    assert "'sensor_signs'" not in text
