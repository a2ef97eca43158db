"""Output codecs: numbers below the solver's resolution print as 0; one frame-id rule; basis axes."""
import json

from hypothesis import assume, given, strategies as st
import numpy as np
import pytest

from wrench_distribution.core import Contact, DistributionOptions, LoadDistributor, ObjectModel
from wrench_distribution.core.codec import frame_key, RESOLUTION, same_frame, zero_below_resolution
from wrench_distribution.core.problem import basis_document, to_json

finite = st.floats(min_value=-1e3, max_value=1e3, allow_nan=False)
units = st.sampled_from([1.0, 1e-3, 1e3])


def test_rounding_residue_prints_as_zero_and_real_values_survive():
    document = {'wrench': [49.05, 1e-32, -3e-17, 0.25], 'count': 3, 'name': 'left',
                'nested': {'residual': [2e-15], 'small_but_real': 1e-9}}
    out = json.loads(to_json(document))
    assert out['wrench'] == [49.05, 0.0, 0.0, 0.25]
    assert out['nested'] == {'residual': [0.0], 'small_but_real': 1e-9}
    assert out['count'] == 3 and out['name'] == 'left'


@given(values=st.lists(finite, min_size=1, max_size=12), scale=units)
def test_the_zero_pattern_does_not_depend_on_the_unit(values, scale):
    """Scaling every number (a change of unit) zeroes the same entries."""
    values = values + [1.0]
    plain = zero_below_resolution(values)
    scaled = zero_below_resolution([v * scale for v in values])
    assert [v == 0.0 for v in plain] == [v == 0.0 for v in scaled]
    largest = max(abs(v) for v in values)
    for before, after in zip(values, plain):
        if abs(before) < RESOLUTION * largest:
            assert after == 0.0
        else:  # shown to the resolution: within it of the value, and of its sign
            assert abs(after - before) <= RESOLUTION * largest and after * before > 0


@pytest.mark.parametrize('values,shown', [
    ([0.0, -19.999999999999996, 26.191666666666666], [0.0, -20.0, 26.19166666667]),
    ([15.0, 0.0, 2.79321e-33, -1.249e-15, -0.0], [15.0, 0.0, 0.0, 0.0, 0.0]),
    ([-7.4e-16, 3.5, 1e-9], [0.0, 3.5, 1e-9]),
    ([5e-324], [5e-324]),  # subnormal: its resolution underflows, it is shown as it is
    ([5e-324, 1.0], [0.0, 1.0]),
])
def test_figures_are_shown_to_the_resolution(values, shown):
    """The issue's figures (CLI, diagnostics, analyze-bag's table), written by hand."""
    assert zero_below_resolution(values) == shown
    assert all(str(x) != '-0.0' for x in zero_below_resolution(values))


@pytest.mark.parametrize('a,b,same', [('box', '/box', True), ('//box', 'box', True),
                                      ('box', 'box/', False), ('box', 'world', False),
                                      ('', '/', True)])
def test_one_frame_id_rule(a, b, same):
    assert same_frame(a, b) is same and same_frame(b, a) is same
    assert frame_key('/' + a) == frame_key(a)


def _unit(v):
    v = np.asarray(v, float)
    return v / np.linalg.norm(v)


@given(a=st.lists(finite, min_size=3, max_size=3), b=st.lists(finite, min_size=3, max_size=3),
       axis=st.lists(finite, min_size=3, max_size=3), unit=units)
def test_basis_names_the_axes_of_every_pair_element(a, b, axis, unit):
    """Each pair element's axis is e (a to b), u = axis x e or v = e x u, derived here by hand."""
    a, b, axis = np.array(a) * unit, np.array(b) * unit, np.array(axis)
    assume(np.linalg.norm(a - b) > 1e-3 * unit and np.linalg.norm(axis) > 1e-3)
    e = _unit(b - a)
    assume(np.linalg.norm(np.cross(_unit(axis), e)) > 1e-3)  # the reference axis not along e
    u = _unit(np.cross(axis, e))
    v = np.cross(e, u)
    grasp = LoadDistributor([Contact('a', 'rigid', a), Contact('b', 'rigid', b)],
                            ObjectModel(com=(a + b) / 2),
                            DistributionOptions(basis_reference_axis=tuple(axis)))
    document = basis_document(grasp)
    expected = {'e': e, 'u': u, 'v': v}
    kinds = set()
    for element in document['elements']:
        kind = element['name'].split('(')[0]
        kinds.add(kind)
        np.testing.assert_allclose(element['axis'], expected[element['axis_name']], atol=1e-9)
        assert element['applied'] == ('torque about' if kind in ('twist', 'bend_u', 'bend_v')
                                      else 'force along')
    assert kinds == {'squeeze', 'twist', 'bend_u', 'bend_v', 'shear_u', 'shear_v'}
    assert set(document['axis_definitions']) == {'e', 'u', 'v'}


def test_analyze_bag_table_shows_residue_as_zero():
    """analyze-bag's printed table: one document, the rule of the JSON output."""
    from wrench_distribution.bag.summary import format_table
    steady = {'mean': 20.0, 'std': 0.01, 'min': 19.98, 'max': 20.02}
    stats = {'squeeze(a,b)': dict(steady, unit='N'),
             'twist(a,b)': {'unit': 'N*m', 'mean': -7.4e-16, 'std': 2.1e-16, 'min': -1.1e-15,
                            'max': 3e-16}}
    summary = {'bag': 'b', 'storage': 'mcap', 'contact_poses': 'static', 'samples': 3,
               'time_span': {'start': 1.0, 'end': 2.0, 'duration': 1.0}, 'sample_period': 0.5,
               'gaps': {'count': 0, 'threshold_periods': 3}, 'max_resultant_residual': 1e-14,
               'dropped': {'unsynchronised_messages': 0, 'stale_messages': 0,
                           'samples_without_contact_pose': 0},
               'internal_load': stats,
               'internal_load_norm': steady}
    row = [line for line in format_table(summary).splitlines() if line.startswith('twist')][0]
    assert row.split()[2:] == ['0', '0', '0', '0'], row
    assert 'e-1' not in format_table(summary).split('internal load')[1]
