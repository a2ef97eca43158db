"""The demo's summaries cover the time the object was held, and commanded includes auto's load.

Synthetic recordings (no ROS, no simulator): the reference values are written in the test.
"""
from hypothesis import given, strategies as st
import numpy as np
import pytest

from wrench_distribution.sim.reports.friction import friction_summary, lost_time, worst_utilisation
from wrench_distribution.sim.reports.series import Series
from wrench_distribution.sim.reports.summary import _added_at, _resultant_summary

NAMES = ['thumb', 'index', 'middle']


def _slip(times, lost_from):
    """contact_slip rows: per fingertip [slid (m), lifted (s), lost]; ``lost_from[i]`` or None."""
    rows = [[v for i in range(3) for v in (0.0, 0.0, float(lost_from[i] is not None and t >= lost_from[i]))]
            for t in times]
    return Series(np.asarray(times, float), np.asarray(rows), ['thumb;index;middle'])


@given(st.lists(st.one_of(st.none(), st.floats(0.0, 2.0)), min_size=3, max_size=3))
def test_lost_at_the_first_fingertip_that_slid_off(lost_from):
    times = np.round(np.arange(0.0, 2.5, 0.01), 2)
    got = lost_time({'contact_slip': _slip(times, lost_from)})
    if all(x is None for x in lost_from):
        assert got is None
    else:
        first = min(x for x in lost_from if x is not None)
        assert got == times[np.searchsorted(times, first)]  # the first sample at or after it


def test_no_figure_covers_the_fall():
    """The residual RMS and the friction statistics stop where the object was lost."""
    t = np.arange(0.0, 3.0, 0.01)
    desired = Series(t, np.tile([0.0, 0.0, 10.0, 0.0, 0.0, 0.0], (len(t), 1)))
    measured = desired.v.copy()
    measured[t >= 2.0, 2] = -500.0  # the object falls at 2 s: a huge residual after it
    series = {'desired_wrench': desired, 'measured/object_wrench': Series(t, measured)}
    held = _resultant_summary(series, start=0.5, end=2.0)['resultant_residual']
    assert held['force_max_N'] == 0.0 and held['samples'] == np.count_nonzero((t >= 0.5) & (t < 2.0))
    everything = _resultant_summary(series, start=0.5)['resultant_residual']
    assert everything['force_max_N'] == 510.0
    # friction state: touching until 2 s, then nothing; statistics over the held part only
    state = np.zeros((len(t), 3, 3))
    state[:, :, 0], state[:, :, 1] = 0.5, np.where(t[:, None] < 2.0, 3.0, 0.0)
    series['measured/friction'] = Series(t, state.reshape(len(t), 9), ['thumb;index;middle'])
    summary = friction_summary(series, start=0.5, end=2.0)
    assert all(m['fraction_not_touching'] == 0.0 for m in summary['measured'].values())
    assert friction_summary(series, start=0.5, end=0.2)['measured'] == {}  # lost before: none


def test_commanded_includes_the_load_auto_mode_added():
    """The added load is held from each message to the next and reordered to the basis."""
    names = ['squeeze(thumb,index)', 'squeeze(index,middle)', 'squeeze(middle,thumb)']
    added_t = np.array([1.0, 1.1, 1.2])
    values = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])  # in label order
    labels = [names[2], names[0], names[1]]
    desired = Series(added_t, np.zeros((3, 6)))
    series = {'friction/internal_load_added': Series(added_t + 0.003, values, [';'.join(labels)]),
              'desired_wrench': desired}
    got = _added_at(series, names, np.array([0.9, 1.0, 1.05, 1.15, 1.5]))
    expected = np.array([[0, 0, 0], [2, 3, 1], [2, 3, 1], [5, 6, 4], [8, 9, 7]], float)
    np.testing.assert_array_equal(got, expected)
    assert not _added_at({}, names, np.array([1.0])).any()


def test_worst_utilisation_is_the_worst_touching_contact_per_sample():
    nan = np.nan
    # worst per sample, derived by eye: 0.5, (none), 0.9 -> mean 0.7, p95 0.5 + 0.95 * 0.4
    stats = worst_utilisation(np.array([[0.5, nan], [nan, nan], [0.7, 0.9]]))
    assert stats == {'mean': pytest.approx(0.7), 'p95': pytest.approx(0.88),
                     'max': 0.9, 'samples': 2}
    assert worst_utilisation(np.full((3, 2), nan)) is None


def test_the_added_squeeze_is_matched_to_the_desired_force_by_reception_when_unpaired():
    """Recorded late in bursts, one desired wrench without its added load: aligned on reception.

    The distributor answers each desired wrench with an added load proportional to its force
    (here 0.1 N per N); the recorder stalls twice for 0.4 s and then takes each topic's burst.
    Matched by stamp, a burst's added loads would fall up to 0.4 s after their desired wrenches.
    """
    stamps = np.arange(0.0, 2.5, 0.01)
    force = 10.0 + 5.0 * np.sin(2 * np.pi * stamps / 0.8)  # what the motion needs, N
    received = stamps + 0.002
    for stall_from, stall_to in ((0.3, 0.7), (1.4, 1.8)):  # the recorder stalls, then takes the burst
        burst = (stamps >= stall_from) & (stamps < stall_to)
        received[burst] = stall_to + 1e-5 * np.arange(burst.sum())
    desired = Series(stamps, np.column_stack([np.zeros_like(force), np.zeros_like(force), force,
                                              np.zeros((len(force), 3))]), received=received)
    answered = slice(1, None)  # the first desired wrench came before the contacts: no answer
    added = Series(received[answered] + 1e-6, np.column_stack([0.1 * force[answered]] * 3),
                   ['a;b;c'])
    summary = friction_summary({'desired_wrench': desired, 'friction/internal_load_added': added,
                                'contact_slip': _slip(stamps, [None] * 3)}, start=0.0)
    squeeze = summary['added_squeeze']
    assert not squeeze['paired_with_desired']
    assert squeeze['correlation_with_desired_force'] > 0.99
    assert squeeze['min_sum'] == pytest.approx(0.3 * force[answered].min())
