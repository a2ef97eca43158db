"""The rule ``bench_relay.py`` applies to its rows (docs/benchmarks.md, issue 32 item 1)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..', 'benchmarks'))

import bench_relay  # noqa: E402 (the benchmark scripts are no package)


def row(layout, p50=1.0, p99=1.0, lost=0, closed=True, kind='events', rate=1000.0):
    return {'kind': kind, 'rate': rate, 'is_distributor': True, 'layout': layout, 'lost': lost,
            'p50_ratio': p50, 'p99_ratio': p99, 'loop_closed': closed}


def relay(kind='single', lost=0, rate=1000.0):
    return {'kind': kind, 'rate': rate, 'is_distributor': False, 'lost': lost, 'p50_ratio': 1.0,
            'p99_ratio': 1.0}


def test_a_run_without_start_up_trials_is_judged_on_its_rows():
    rows = [relay(), row(None, 0.8, 0.9), row('processes', 1.19, 1.2)]
    assert bench_relay.choose(rows, [], 'single') == ['events']
    assert bench_relay.choose(rows + [row('processes', 1.21)], [], 'single') == []


def test_each_layout_of_the_loop_is_judged_on_its_own_rows():
    rows = [relay(), row(None), row('processes', 1.1, 1.15), row('one-process', 0.9, 1.4)]
    assert bench_relay.choose(rows, [], 'single') == ['events (processes)']
    rows[2]['p99_ratio'] = 1.3
    assert bench_relay.choose(rows, [], 'single') == []
    rows[3]['p99_ratio'] = 1.2
    assert bench_relay.choose(rows, [], 'single') == ['events (one-process)']
    rows[1].update(p50_ratio=1.5, lost=1)  # the distributor alone is reported, not judged
    assert bench_relay.choose(rows, [], 'single') == ['events (one-process)']


def test_without_a_loop_the_distributor_alone_is_judged():
    assert bench_relay.choose([relay(), row(None, 1.1, 1.2)], [], 'single') == ['events']
    assert bench_relay.choose([relay(), row(None, 1.1, 1.21)], [], 'single') == []
    assert bench_relay.choose([relay(), row(None, 1.25, 1.0)], [], 'single') == []


def test_the_loop_may_lose_what_the_relay_lost_at_that_rate_and_no_more():
    rows = [relay(lost=2), relay(rate=500.0), row('processes', lost=2),
            row('processes', rate=500.0)]
    assert bench_relay.choose(rows, [], 'single') == ['events']
    rows[2]['lost'] = 3
    assert bench_relay.choose(rows, [], 'single') == []
    rows[2]['lost'], rows[3]['lost'] = 0, 1  # the relay lost nothing at 500 Hz
    assert bench_relay.choose(rows, [], 'single') == []
    rows[0]['kind'] = 'events'  # a loss of another relay than the reference allows nothing
    rows[3]['lost'], rows[2]['lost'] = 0, 1
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
