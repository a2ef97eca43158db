"""The simulator's parameters under the node schema: every value out of range is refused.

Each parameter of ``object_sim``, ``object_controller`` and ``baseline_distributor`` gets
values drawn outside what it accepts (below its minimum, non-finite, the wrong type, an
unknown choice, the wrong number of entries...); each must be refused by the same
``validate_params`` as the distributor's and analyzer's, with a message naming the
parameter and the accepted values. The shipped scenario files pass, and so do the
``object_inertia`` forms the core reads.
"""
import math
import os
import sys

from hypothesis import given, strategies as st
import numpy as np
import pytest

from ros_harness import domain_id_for, REPO, ros_env
from wrench_distribution import config as P
from wrench_distribution.config.sim import SIM_SPECS
from wrench_distribution.processes import run_to_end
from wrench_distribution.sim import scenarios

#: A valid minimal parameter set of each simulator node (two effectors).
BASE = {'object_sim': {'effectors': ['a', 'b']}, 'object_controller': {},
        'baseline_distributor': {'effectors': ['a', 'b']}}
N = 2
#: Entries per effector of the per-effector arrays (docs/simulator.md, the analyzer's names).
PER_EFFECTOR = {'contact_types': 1, 'contact_positions': 3, 'contact_orientations': 4,
                'friction_coefficients': 1, 'contact_normals': 3, 'sensor_positions': 3,
                'sensor_orientations': 4, 'sensor_signs': 1, 'tool_masses': 1, 'tool_coms': 3,
                'sensor_biases': 6, 'admittance_cog_forces': 1, 'admittance_cog_positions': 3,
                'contact_position_errors': 3, 'contact_orientation_errors': 3,
                'arm_robots': 1, 'arm_base_positions': 3, 'arm_base_orientations': 4}
#: Arrays of a fixed number of entries.
FIXED = {'object_com': 3, 'initial_position': 3, 'initial_orientation': 4, 'gravity': 3,
         'move_offset': 3, 'move_rotation': 3, 'admittance_mass': 6, 'admittance_damping_ratio': 6,
         'admittance_stiffness': 6, 'arm_move_offset': 3, 'arm_move_rotation': 3,
         'object_com_error': 3}
#: Lower bound of every number (docs/simulator.md): (bound, whether the bound itself is accepted).
#: Masses, stiffness, rates that divide and the move's duration must be > 0; the physics
#: rate at least 1 Hz; the rest (gains, damping, noise, times, counts) >= 0.
LOWER = dict(
    {name: (0.0, False) for name in ('object_mass', 'effector_mass', 'effector_inertia',
                                     'grasp_stiffness', 'publish_rate', 'contact_rate',
                                     'move_duration', 'position_bandwidth', 'arm_move_duration',
                                     'admittance_filter_coefficient', 'joint_loop_bandwidth',
                                     'dls_damping', 'dls_singular_threshold',
                                     'dls_limit_margin', 'object_mass_ratio')},
    physics_rate=(1.0, True),
    **{name: (0.0, True) for name in (
        'grasp_damping', 'grasp_rot_stiffness', 'grasp_rot_damping', 'sensor_force_noise',
        'sensor_torque_noise', 'noise_seed', 'real_time_factor', 'release_time', 'start_timeout',
        'duration', 'command_timeout', 'wait_for_subscribers', 'marker_rate', 'lockstep_timeout',
        'position_gain', 'velocity_gain', 'orientation_gain', 'angular_velocity_gain',
        'move_start', 'internal_load_rate', 'admittance_joint_damping', 'arm_move_start',
        'grasp_time')})
#: Upper bound of the numbers that have one (accepted itself).
UPPER = {'admittance_filter_coefficient': 1.0}
#: Values accepted together by object_sim (two effectors): every per-effector array filled.
VALID = {'contact_types': ['rigid', 'point'], 'contact_positions': [0.0, 0.1, 0.0, 0.0, -0.1, 0.0],
         'contact_orientations': [0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0],
         'friction_coefficients': [0.5, 0.0], 'contact_normals': [0.0, 0.0, 1.0, 0.0, 1.0, 0.0],
         'sensor_positions': [0.0, 0.0, 0.05] * 2, 'sensor_orientations': [0.0, 0.0, 0.0, 1.0] * 2,
         'sensor_signs': [1, -1], 'tool_masses': [0.3, 0.0], 'tool_coms': [0.0, 0.0, 0.02] * 2,
         'sensor_biases': [0.1] * 12, 'object_inertia': [0.02, 0.03, 0.04],
         'initial_orientation': [0.0, 0.0, 0.38268343236508984, 0.9238795325112867]}
CASES = [(kind, spec) for kind, specs in SIM_SPECS.items() for spec in specs]

finite = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e6, max_value=1e6)
non_finite = st.sampled_from([math.nan, math.inf, -math.inf])
not_a_number = st.one_of(st.text(max_size=3), st.none(), st.lists(finite, max_size=2))


def _wrong_count(width: int, allowed) -> st.SearchStrategy:
    """Draw lists of finite numbers whose length is not in ``allowed`` (multiples of ``width``)."""
    return st.integers(1, 4 * width + 1).filter(lambda k: k not in allowed).flatmap(
        lambda k: st.lists(st.floats(0.1, 1.0), min_size=k, max_size=k))


def _numbers_out_of_range(spec) -> st.SearchStrategy:
    """Draw numbers below the lower bound of :data:`LOWER`, non-finite ones, other types."""
    bound, inclusive = LOWER[spec.name]
    if spec.type == 'integer':
        return st.one_of(not_a_number, st.floats(0.1, 0.9), st.integers(max_value=int(bound) - 1))
    options = [not_a_number, non_finite,
               st.floats(min_value=-1e12, max_value=bound, exclude_max=inclusive)]
    if spec.name in UPPER:
        options.append(st.floats(min_value=UPPER[spec.name], max_value=1e12, exclude_min=True))
    return st.one_of(options)


def _array_out_of_range(spec) -> st.SearchStrategy:
    name = spec.name
    options = [st.one_of(st.text(max_size=3), st.integers())]  # not a list
    if spec.type == 'double_array':
        options.append(st.lists(non_finite, min_size=1, max_size=3))
    if name in PER_EFFECTOR:
        width = PER_EFFECTOR[name]
        options.append(_wrong_count(width, (0, N * width)))
    elif name in FIXED:
        options.append(_wrong_count(FIXED[name], (FIXED[name],)))
        if name == 'initial_orientation':
            options.append(st.just([0.0, 0.0, 0.0, 0.0]))
    elif name == 'object_inertia':
        options.append(_wrong_count(1, (3, 6, 9)))
        options.append(st.just([]))
        options.append(st.lists(st.floats(-10.0, 0.0), min_size=3, max_size=3))  # not pos. def.
    elif name == 'effectors':
        options.append(st.lists(st.text(min_size=1, max_size=3), max_size=1))
        options.append(st.text(min_size=1, max_size=3).map(lambda e: [e, e]))
    elif name in ('tilts', 'arm_tilts', 'free_tilts'):
        options.append(_wrong_count(5, (0, 5, 10, 15, 20)))
        options.append(st.sampled_from([[2.0, 1.0, 0.1, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0],  # out of order
                                        [2.0, 0.0, 0.1, 0.0, 0.0],  # no duration
                                        [0.0, 0.5, 0.1, 0.0, 0.0]]))  # before the move / not back level
    elif name == 'contact_shifts':
        options.append(_wrong_count(5, (0, 5, 10, 15, 20)))
        options.append(st.sampled_from([[2.0, 1.0, 0.1, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0],  # out of order
                                        [2.0, 0.0, 0.1, 0.0, 0.0]]))  # no duration
    elif name == 'contact_weights_schedule':
        options.append(st.sampled_from([['a=0'], ['0: a'], ['0: a=1.5'], ['0: a=-0.1'], ['0: a=nan'],
                                        ['x: a=1'], ['0: a=0, a=1'], ['1: a=0', '0: a=1']]))
    elif name == 'arm_joint_guesses':
        pass  # its count depends on the robots (checked when the arms are built)
    elif name == 'internal_load_schedule':
        options.append(st.sampled_from([['squeeze(a,b)=1'], ['0: squeeze(a,b)'],
                                        ['0: squeeze(a,b)=nan'], ['x: s(a,b)=1']]))
    elif name == 'sensor_faults':  # the effectors of these tests are named a, b
        options.append(st.sampled_from([['c freeze 1 1'], ['a melt 1 1'], ['a freeze 1'],
                                        ['a drift 1 1 fx'], ['a clip 1 1 fx 0'],
                                        ['a spike -1 1 tz 1'], ['a freeze 1 nan']]))
    else:
        raise AssertionError(f'no out-of-range values known for {name}: add them here')
    extra = {'contact_types': st.just(['rigid', 'glue']), 'sensor_signs': st.just([1, 2]),
             'tool_masses': st.just([0.5, -0.1]), 'friction_coefficients': st.just([0.5, -1.0]),
             'contact_normals': st.just([0.0, 0.0, 1.0, 0.0, 0.0, 0.0]),
             'contact_orientations': st.just([0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0]),
             'sensor_orientations': st.just([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]),
             'admittance_mass': st.just([1.0] * 5 + [0.0]),
             'admittance_stiffness': st.just([-1.0] + [0.0] * 5),
             'admittance_damping_ratio': st.just([1.0] * 5 + [-0.5]),
             'admittance_cog_forces': st.just([1.0, -1.0]),
             'arm_robots': st.just(['panda', 'kuka']),
             'arm_base_orientations': st.just([0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0])}
    if name in extra:
        options.append(extra[name])
    return st.one_of(options)


def out_of_range(spec) -> st.SearchStrategy:
    """Draw values that ``spec`` does not accept (for every type of the schema).

    :param spec: a simulator parameter spec.
    :return: a strategy of refused values.
    """
    if spec.type == 'bool':
        return st.one_of(st.integers(), st.text(max_size=3), st.none())
    if spec.type == 'string':
        if spec.accepted is not None:
            return st.text(max_size=5).filter(lambda s: s not in spec.accepted)
        assert 'frame' in spec.name, f'no out-of-range values known for {spec.name}'
        return st.one_of(st.just(''), st.integers(), st.none())
    if spec.type in ('double', 'integer'):
        return _numbers_out_of_range(spec)
    return _array_out_of_range(spec)


@pytest.mark.parametrize('kind,spec', CASES, ids=[f'{k}.{s.name}' for k, s in CASES])
@given(data=st.data())
def test_each_sim_parameter_refuses_values_out_of_range(kind, spec, data):
    bad = data.draw(out_of_range(spec), label=spec.name)
    with pytest.raises(P.ConfigError) as e:
        P.validate_params(kind, dict(BASE[kind], **{spec.name: bad}))
    message = str(e.value)
    assert f"'{spec.name}'" in message and 'accepted' in message, message


@pytest.mark.parametrize('kind', sorted(SIM_SPECS))
@given(data=st.data())
def test_numbers_within_their_range_are_accepted(kind, data):
    numbers = [s for s in SIM_SPECS[kind] if s.type in ('double', 'integer')]
    assert {s.name for s in numbers} <= set(LOWER), 'classify every number in LOWER'
    values = {}
    for spec in numbers:
        bound, inclusive = LOWER[spec.name]
        if spec.type == 'integer':
            values[spec.name] = data.draw(st.integers(int(bound), 10 ** 6), label=spec.name)
        else:
            values[spec.name] = data.draw(st.floats(bound, UPPER.get(spec.name, 1e6),
                                                    exclude_min=not inclusive), label=spec.name)
    if kind == 'object_sim':
        values.update(VALID)
    validated = P.validate_params(kind, dict(BASE[kind], **values))
    assert {k: validated[k] for k in values} == values


@pytest.mark.parametrize('kind,spec', CASES, ids=[f'{k}.{s.name}' for k, s in CASES])
def test_each_sim_parameter_is_declared_and_its_default_accepted(kind, spec):
    assert spec.description and spec.constraint_text()
    assert spec.type in ('string', 'double', 'integer', 'bool', 'string_array', 'double_array',
                         'integer_array')
    values = P.validate_params(kind, BASE[kind])
    if spec.name not in BASE[kind]:
        assert values[spec.name] == P.check_param_value(spec, spec.default)
    assert set(values) == {s.name for s in SIM_SPECS[kind]}


@pytest.mark.parametrize('name', scenarios.SCENARIOS)
def test_shipped_scenarios_pass_every_schema(name):
    sections = scenarios.load_sections(name)
    validated = scenarios.validate_sections(sections)
    assert set(validated) == set(scenarios.NODES)
    for node, params in sections.items():  # every value the file sets survives validation
        for key, value in params.items():
            if key not in P.BUILTIN_PARAMS:
                assert validated[node][key] == value, (node, key)
    assert scenarios.sim_params(sections['object_sim']) == validated['object_sim']


def test_sim_params_and_the_demo_refuse_a_bad_value_by_name():
    sections = scenarios.load_sections('dual_arm')
    with pytest.raises(P.ConfigError, match="'physics_rate'.*accepted: >= 1.0"):
        scenarios.sim_params(dict(sections['object_sim'], physics_rate=0.0))
    with pytest.raises(P.ConfigError, match='unknown parameter'):
        scenarios.sim_params(dict(sections['object_sim'], no_such_param=1.0))
    sections['object_controller']['move_duration'] = -1.0
    with pytest.raises(P.ConfigError, match="object_controller: parameter 'move_duration'"):
        scenarios.validate_sections(sections)


def test_sim_tables_in_docs_match_the_schema():
    with open(os.path.join(REPO, 'docs', 'simulator.md'), encoding='utf-8') as f:
        doc = f.read()
    for name, table in P.simulator_tables().items():
        assert table in doc, (f'docs/simulator.md table "{name}" is out of date: run '
                              'python -m wrench_distribution.config.readme and paste it')


# -- object_inertia: the forms the core reads ----------------------------------------------
@st.composite
def inertia_tensors(draw) -> np.ndarray:
    """Draw symmetric positive definite 3x3 tensors: R diag(m) R^T with positive moments."""
    moments = draw(st.lists(st.floats(1e-3, 10.0), min_size=3, max_size=3))
    angles = draw(st.lists(st.floats(-math.pi, math.pi), min_size=3, max_size=3))
    from scipy.spatial.transform import Rotation
    rot = Rotation.from_euler('xyz', angles).as_matrix()
    tensor = rot @ np.diag(moments) @ rot.T
    return (tensor + tensor.T) / 2.0


@given(tensor=inertia_tensors(), diagonal=st.booleans())
def test_object_inertia_accepts_every_form_of_the_core(tensor, diagonal):
    if diagonal:
        tensor = np.diag(np.diag(tensor))
    forms = [tensor.reshape(-1).tolist(),
             [tensor[0, 0], tensor[1, 1], tensor[2, 2], tensor[0, 1], tensor[0, 2], tensor[1, 2]]]
    if diagonal:
        forms.append(np.diag(tensor).tolist())  # principal moments
    base = {'effectors': ['a', 'b'], 'contact_source': 'static',
            'contact_positions': [0.0, 0.1, 0.0, 0.0, -0.1, 0.0]}
    for form in forms:
        cfg = P.load_distributor_config(dict(base, object_inertia=form))
        np.testing.assert_allclose(cfg.object_model.inertia_matrix, tensor, rtol=1e-12,
                                   atol=1e-15)
        P.validate_params('object_sim', {'effectors': ['a', 'b'], 'object_inertia': form})
        P.validate_params('object_controller', {'object_inertia': form})


@pytest.mark.parametrize('value', [[1.0, 2.0], [1.0] * 4, [1.0, -2.0, 3.0], [0.0, 1.0, 1.0],
                                   [1.0, 1.0, 1.0, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0]])
def test_object_inertia_refuses_what_the_core_refuses(value):
    for kind, base in (('distributor', {'effectors': ['a', 'b']}),
                       ('analyzer', {'effectors': ['a', 'b']}),
                       ('object_sim', {'effectors': ['a', 'b']})):
        with pytest.raises(P.ConfigError, match="'object_inertia'.*accepted: 3, 6 or 9"):
            P.validate_params(kind, dict(base, object_inertia=value))


@pytest.mark.ros
@pytest.mark.parametrize('module,args,needle', [
    ('object_sim_node', ['effectors:=[a, b]', 'physics_rate:=0.5'], "'physics_rate'"),
    ('object_sim_node', ['effectors:=[a, b]', 'object_inertia:=[1.0, -1.0, 1.0]'],
     "'object_inertia'"),
    ('object_controller_node', ['move_duration:=0.0'], "'move_duration'"),
    ('baseline_distributor_node', ['effectors:=[a, b]', 'object_com:=[0.0, 0.0]'],
     "'object_com'"),
])
def test_sim_nodes_refuse_a_bad_value_at_start(module, args, needle):
    """The simulator's ROS nodes stop with status 2 and the schema's message."""
    cmd = [sys.executable, '-m', f'wrench_distribution.sim.nodes.{module}', '--ros-args']
    for a in args:
        cmd += ['-p', a]
    done = run_to_end(cmd, ros_env(domain_id_for()), 60.0)
    assert done.returncode == 2, done.output
    assert 'invalid configuration' in done.output and needle in done.output, done.output
    assert 'accepted' in done.output and 'Traceback' not in done.output, done.output


_HANDLE_NAMES = st.sampled_from(['squeeze(left,right)', 'twist(left,right)', 'bend_u(a,b)',
                                 'shear_v(f1,f2)', 'squeeze(f1,f3)'])
_SCHEDULES = st.lists(st.tuples(st.floats(-1e6, 1e6, allow_nan=False),
                                st.dictionaries(_HANDLE_NAMES, st.floats(-1e9, 1e9, allow_nan=False),
                                                max_size=4)),
                      max_size=6).map(lambda entries: sorted(entries, key=lambda entry: entry[0]))


@given(_SCHEDULES)
def test_schedule_entries_written_read_back_exactly(schedule):
    """``format_schedule`` is the exact inverse of ``parse_schedule``.

    Every time and value bit for bit, every handle name, an entry without handles kept (it
    prescribes no internal load).
    """
    from wrench_distribution.config.handles import format_schedule, parse_schedule
    entries = format_schedule(schedule)
    assert len(entries) == len(schedule)
    assert parse_schedule(entries) == [(float(when), dict(handles)) for when, handles in schedule]
    assert format_schedule(parse_schedule(entries)) == entries
