"""The rule ``bench_relay.py`` applies to its rows (docs/benchmarks.md, issue 32 item 1)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..', 'benchmarks'))

import bench_relay  # noqa: E402 (the benchmark scripts are no package)


def row(layout, p50=1.0, p99=1.0, lost=0, closed=True, kind='events'):
    return {'kind': kind, 'is_distributor': True, 'layout': layout, 'lost': lost,
            'p50_ratio': p50, 'p99_ratio': p99, 'loop_closed': closed}


def relay(kind='single'):
    return {'kind': kind, 'is_distributor': False, 'lost': 0, 'p50_ratio': 1.0,
            'p99_ratio': 1.0}


def test_a_run_without_start_up_trials_is_judged_on_its_rows():
    rows = [relay(), row(None, 0.8, 0.9), row('processes', 1.19, 1.2)]
    assert bench_relay.choose(rows, [], 'single') == ['events']
    assert bench_relay.choose(rows + [row('processes', 1.21)], [], 'single') == []


def test_each_layout_of_the_loop_is_judged_on_its_own_rows_with_the_distributor_alone():
    rows = [relay(), row(None), row('processes', 1.1, 1.15), row('one-process', 0.9, 1.4)]
    assert bench_relay.choose(rows, [], 'single') == ['events (processes)']
    rows[2]['p99_ratio'] = 1.3
    assert bench_relay.choose(rows, [], 'single') == []
    rows[1]['p50_ratio'] = 1.5  # the distributor alone counts for every layout
    rows[2]['p99_ratio'] = rows[3]['p99_ratio'] = 1.0
    assert bench_relay.choose(rows, [], 'single') == []


def test_a_lost_cycle_an_open_loop_or_a_start_up_miss_fails_the_rule():
    good = [relay(), row(None), row('processes')]
    assert bench_relay.choose(good, [], 'single') == ['events']
    assert bench_relay.choose(good + [row('processes', lost=1)], [], 'single') == []
    assert bench_relay.choose(good + [row('processes', closed=False)], [], 'single') == []
    missed = {'kind': 'events', 'durability': 'transient_local', 'missed': 1, 'unmatched': 0}
    kept = dict(missed, missed=0, durability='volatile')
    assert bench_relay.choose(good, [missed, dict(kept, missed=3)], 'single') == []
    assert bench_relay.choose(good, [dict(missed, missed=0), dict(kept, missed=3)],
                              'single') == ['events']  # transient_local trials decide
