"""The rule ``bench_relay.py`` applies to its rows, and the figures it judges (docs/benchmarks.md).

The rule (``benchmarks/relay/rule.py``) and the figures (``benchmarks/relay/figures.py``) are
checked on rows and cycles placed by hand.
"""
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..', 'benchmarks'))

from hypothesis import given, settings, strategies as st  # noqa: E402
import pytest  # noqa: E402
from relay.figures import medians_by_part, merge_rounds, phase_parts, relay_figures  # noqa: E402 (benchmarks/)
from relay.rule import choose  # noqa: E402

#: Outputs per cycle in the windows built here.
EFFECTORS = 4


def row(layout, p50=1.0, p99=1.0, lost=0, closed=True, kind='events', rate=1000.0):
    return {'kind': kind, 'rate': rate, 'is_distributor': True, 'layout': layout, 'lost': lost,
            'p50_ratio': p50, 'p99_ratio': p99, 'loop_closed': closed}


def relay(kind='single', lost=0, rate=1000.0):
    return {'kind': kind, 'rate': rate, 'is_distributor': False, 'lost': lost, 'p50_ratio': 1.0,
            'p99_ratio': 1.0}


def test_a_run_without_start_up_trials_is_judged_on_its_rows():
    rows = [relay(), row(None, 0.8, 0.9), row('processes', 1.19, 1.2)]
    assert choose(rows, [], 'single') == ['events']
    assert choose(rows + [row('processes', 1.21)], [], 'single') == []


def test_each_layout_of_the_loop_is_judged_on_its_own_rows():
    rows = [relay(), row(None), row('processes', 1.1, 1.15), row('one-process', 0.9, 1.4)]
    assert choose(rows, [], 'single') == ['events (processes)']
    rows[2]['p99_ratio'] = 1.3
    assert choose(rows, [], 'single') == []
    rows[3]['p99_ratio'] = 1.2
    assert choose(rows, [], 'single') == ['events (one-process)']
    rows[1].update(p50_ratio=1.5, lost=1)  # the distributor alone is reported, not judged
    assert choose(rows, [], 'single') == ['events (one-process)']


def test_without_a_loop_the_distributor_alone_is_judged():
    assert choose([relay(), row(None, 1.1, 1.2)], [], 'single') == ['events']
    assert choose([relay(), row(None, 1.1, 1.21)], [], 'single') == []
    assert choose([relay(), row(None, 1.25, 1.0)], [], 'single') == []


def test_the_loop_may_lose_what_the_relay_lost_at_that_rate_and_no_more():
    rows = [relay(lost=2), relay(rate=500.0), row('processes', lost=2),
            row('processes', rate=500.0)]
    assert choose(rows, [], 'single') == ['events']
    rows[2]['lost'] = 3
    assert choose(rows, [], 'single') == []
    rows[2]['lost'], rows[3]['lost'] = 0, 1  # the relay lost nothing at 500 Hz
    assert choose(rows, [], 'single') == []
    rows[0]['kind'] = 'events'  # a loss of another relay than the reference allows nothing
    rows[3]['lost'], rows[2]['lost'] = 0, 1
    assert choose(rows, [], 'single') == []


def test_a_lost_cycle_an_open_loop_or_a_start_up_miss_fails_the_rule():
    good = [relay(), row(None), row('processes')]
    assert choose(good, [], 'single') == ['events']
    assert choose(good + [row('processes', lost=1)], [], 'single') == []
    assert choose(good + [row('processes', closed=False)], [], 'single') == []
    missed = {'kind': 'events', 'durability': 'transient_local', 'missed': 1, 'unmatched': 0}
    kept = dict(missed, missed=0, durability='volatile')
    assert choose(good, [missed, dict(kept, missed=3)], 'single') == []
    assert choose(good, [dict(missed, missed=0), dict(kept, missed=3)],
                  'single') == ['events']  # transient_local trials decide


@settings(max_examples=60, deadline=None)
@given(rate=st.floats(100.0, 2000.0), t0_ns=st.integers(10**18, 2 * 10**18),
       first_tick=st.integers(0, 50_000),
       parts=st.lists(st.integers(0, 3), min_size=1, max_size=40))
def test_each_cycle_counts_in_the_part_of_the_ft_period_it_was_sent_in(
        rate, t0_ns, first_tick, parts):
    # a cycle sent in the middle of part k of tick j's period: t0 + (j + (k + 0.5) / 4) / rate;
    # its latency names its part, so each part's median is that part's number
    stamps = [t0_ns + round((first_tick + j + (k + 0.5) / 4) * 1e9 / rate)
              for j, k in enumerate(parts)]
    part = phase_parts(stamps, {'t0_ns': t0_ns, 'rate': rate}, bins=4)
    medians = medians_by_part(part, [float(k) for k in parts], bins=4)
    for k in range(4):
        if k in parts:
            assert medians[k] == k
        else:
            assert math.isnan(medians[k])


def test_the_ft_clock_adds_the_phase_medians_and_rounds_merge_them_part_by_part():
    t0 = 1_700_000_000_000_000_000
    stamps = [t0 + 1000 * j * 1000 + offset for j, offset in enumerate([100_000, 900_000] * 3)]
    src = {'stamps': stamps, 'elapsed': 0.006}
    sink = {'counts': {str(s): EFFECTORS for s in stamps},
            'last': {str(s): s + (200_000 if i % 2 == 0 else 500_000)
                     for i, s in enumerate(stamps)}}
    plain = relay_figures([(src, sink, None)], 'loop', 1000.0, EFFECTORS)
    assert 'p50_by_phase_ms' not in plain
    row = relay_figures([(src, sink, {'t0_ns': t0, 'rate': 1000.0})], 'loop', 1000.0, EFFECTORS)
    assert row['p50_by_phase_ms'][0] == pytest.approx(0.2)
    assert row['p50_by_phase_ms'][3] == pytest.approx(0.5)
    assert all(math.isnan(v) for v in row['p50_by_phase_ms'][1:3])
    other = dict(row, p50_by_phase_ms=[0.4, 0.3, float('nan'), 0.7])
    third = dict(row, p50_by_phase_ms=[0.3, float('nan'), float('nan'), 0.6])
    merged = merge_rounds((dict(row, p50_ratio=1.0, p99_ratio=1.0),
                           dict(other, p50_ratio=1.0, p99_ratio=1.0),
                           dict(third, p50_ratio=1.0, p99_ratio=1.0)))
    assert merged['p50_by_phase_ms'][0] == 0.3 and merged['p50_by_phase_ms'][3] == 0.6
    assert merged['p50_by_phase_ms'][1] == 0.3 and math.isnan(merged['p50_by_phase_ms'][2])


def test_windows_pool_their_cycles_each_phase_on_its_own_clock():
    """Two windows of one run: one row, losses counted in order, phases from each F/T clock."""
    def window(t0, first, latencies_us, lost_at, clock_offset_us):
        stamps = [t0 + first + 1_000_000 * j for j in range(len(latencies_us))]
        sink = {'counts': {str(s): EFFECTORS for j, s in enumerate(stamps)
                           if j not in lost_at},
                'last': {str(s): s + 1000 * lat for s, lat in zip(stamps, latencies_us)}}
        # the F/T ticks fall clock_offset_us before each stamp: every cycle in that quarter
        return ({'stamps': stamps, 'elapsed': 0.004}, sink,
                {'t0_ns': t0 + first - 1000 * clock_offset_us, 'rate': 1000.0})
    t0 = 1_700_000_000_000_000_000
    first = window(t0, 0, [100, 200, 300, 400], {3}, 100)  # quarter 0
    second = window(t0, 10_000_000_000, [500, 600, 700, 800], {0}, 600)  # quarter 2
    row = relay_figures([first, second], 'loop', 1000.0, EFFECTORS)
    assert row['sent'] == 8 and row['lost'] == 2
    assert (row['lost_first_index'], row['lost_last_index']) == (3, 4)
    assert row['held_hz'] == pytest.approx(6 / 0.008)
    assert row['p50_ms'] == pytest.approx(0.45)  # the median of 0.1 .. 0.3 and 0.6 .. 0.8
    assert row['p50_by_phase_ms'][0] == pytest.approx(0.2)
    assert row['p50_by_phase_ms'][2] == pytest.approx(0.7)
    assert math.isnan(row['p50_by_phase_ms'][1]) and math.isnan(row['p50_by_phase_ms'][3])
    without_clock = relay_figures([first, second[:2] + (None,)], 'loop', 1000.0, EFFECTORS)
    assert 'p50_by_phase_ms' not in without_clock  # a phase table only when every window has one


def test_a_cycle_counts_only_when_every_effector_got_its_output():
    """Three outputs of an input: a cycle held with three effectors, lost with four."""
    stamps = [1_700_000_000_000_000_000 + 1_000_000 * j for j in range(4)]
    src = {'stamps': stamps, 'elapsed': 0.004}
    sink = {'counts': {str(s): 3 for s in stamps}, 'last': {str(s): s + 500_000 for s in stamps}}
    three = relay_figures([(src, sink, None)], 'loop', 1000.0, 3)
    four = relay_figures([(src, sink, None)], 'loop', 1000.0, 4)
    assert (three['lost'], four['lost']) == (0, 4)
    assert three['p50_ms'] == pytest.approx(0.5) and math.isnan(four['p50_ms'])
