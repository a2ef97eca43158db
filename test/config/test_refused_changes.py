"""Every refused parameter change named: kept per parameter, logged per distinct attempt (no ROS).

:class:`~wrench_distribution.config.safety.RefusedChanges` is driven with a clock of the test's
own: a request at a time, each with its parameters, value and reason. Properties: every
refusal is counted; each parameter keeps its newest ones; a log line per distinct attempt,
rate-limited per parameter (a flood on one never silences another), and whatever was not
logged is counted in that parameter's next line, so the lines account for every refusal.
"""
from hypothesis import given, settings, strategies as st

from wrench_distribution.config import safety
from wrench_distribution.config.safety import asked_text, RefusedChanges

SECOND = 1_000_000_000
NAMES = ['force_limits', 'torque_limits', 'on_limit', 'calibration_file', 'torque_share']


def _logged_per_name(events, lines) -> dict:
    """Refusals each logged line accounts for (itself and those it says were not logged), by parameter."""
    out: dict = {}
    for (name, _, _), line in zip(events, lines):
        if line is not None:
            skipped = int(line.split('; ')[-1].split()[0]) if 'not logged since' in line else 0
            out[name] = out.get(name, 0) + 1 + skipped
    return out


def test_each_parameter_keeps_its_newest_refusals_newest_first():
    log = RefusedChanges()
    for k in range(safety.REFUSALS_KEPT + 3):
        log.note(f'force_limits=[{1000.0 + k}]', f'refused {k}', True, ['force_limits'], k * SECOND)
    log.note("on_limit='scale'", 'never to scale', True, ['on_limit'], 100 * SECOND)
    shown = log.values()
    kept = shown['refused.force_limits']
    assert kept.startswith(f'{safety.REFUSALS_KEPT + 3} refused, newest first: ')
    entries = kept.split(': ', 1)[1].split(' | ')
    assert entries == [f'force_limits=[{1000.0 + k}]: refused {k}'
                       for k in reversed(range(3, safety.REFUSALS_KEPT + 3))]
    assert shown['refused.on_limit'] == "1 refused, newest first: on_limit='scale': never to scale"
    assert shown['last_refused_change'] == "on_limit='scale'"
    assert log.counters == {'refused_parameter_changes': safety.REFUSALS_KEPT + 4,
                            'refused_unsafe_changes': safety.REFUSALS_KEPT + 4}


def test_a_request_refused_for_two_parameters_is_kept_under_both_and_logged_once():
    log = RefusedChanges()
    line = log.note("force_limits=[900.0], on_limit='scale'", 'two rules', True,
                    ['force_limits', 'on_limit'], 0)
    assert line is not None and "force_limits=[900.0], on_limit='scale'" in line
    shown = log.values()
    assert shown['refused.force_limits'] == shown['refused.on_limit']
    assert log.counters['refused_parameter_changes'] == 1


def test_distinct_attempts_on_many_parameters_at_once_are_all_logged():
    """The limit is per parameter: forty parameters refused in the same instant, forty lines."""
    log = RefusedChanges()
    lines = [log.note(f'p{i}=1.0', f'reason {i}', False, [f'p{i}'], 0) for i in range(40)]
    assert all(line is not None and f'p{i}=1.0' in line and f'reason {i}' in line
               for i, line in enumerate(lines))


def test_a_flood_on_one_parameter_is_rate_limited_and_another_still_logged():
    log = RefusedChanges()
    flood = [log.note(f'force_limits=[{1000.0 + k}]', 'over', True, ['force_limits'], k) for k in range(50)]
    assert sum(line is not None for line in flood) == safety.LOG_BURST
    assert log.note('torque_limits=[99.0]', 'over', True, ['torque_limits'], 60) is not None
    later = log.note('force_limits=[5000.0]', 'over', True, ['force_limits'], 60 + safety.LOG_PERIOD_NS)
    assert later is not None and f'{50 - safety.LOG_BURST} more refusal(s) of this parameter not logged' in later
    assert log.values()['refused.force_limits'].startswith('51 refused')


def test_the_same_attempt_is_logged_again_only_after_the_repeat_interval():
    log = RefusedChanges()
    times = [0, SECOND, 2 * SECOND, safety.REPEAT_NS - 1, safety.REPEAT_NS + 1]
    lines = [log.note("on_limit='scale'", 'never to scale', True, ['on_limit'], t) for t in times]
    assert [line is not None for line in lines] == [True, False, False, False, True]
    assert '3 more refusal(s)' in lines[-1]
    # a distinct value in between is a distinct attempt: logged
    assert log.note("on_limit='bogus'", 'not accepted', False, ['on_limit'], safety.REPEAT_NS + 2)


def test_what_is_kept_stays_bounded_whatever_is_asked():
    log = RefusedChanges()
    huge = 'x' * 100_000
    for i in range(2000):
        log.note(asked_text([(f'name_{i}_{huge}', list(range(10_000)))]), huge, False,
                 [f'name_{i}_{huge}'], i)
    shown = log.values()
    per_entry = safety.ASKED_CHARS + 3 + safety.REASON_CHARS + 3 + 5
    assert len(shown) == 2 + safety.NAMES_KEPT
    assert all(len(k) <= len('refused.') + safety.NAME_CHARS + 3 for k in shown)
    bound = safety.NAMES_KEPT * (40 + safety.REFUSALS_KEPT * per_entry) + 2 * per_entry
    assert sum(len(v) for v in shown.values()) <= bound
    assert log.counters['refused_parameter_changes'] == 2000


def test_the_asked_text_names_each_value_and_shortens_long_arrays():
    assert asked_text([('force_limits', [1500.0])]) == 'force_limits=[1500.0]'
    assert asked_text([('a', 1.0), ('b', 'x')]) == "a=1.0, b='x'"
    text = asked_text([('sensor_biases', [float(i) for i in range(1000)])])
    assert text.startswith('sensor_biases=[0.0, 1.0,') and '(1000 values)' in text
    assert len(text) <= safety.ASKED_CHARS + 3


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(NAMES), st.integers(0, 3), st.integers(0, 3 * SECOND)),
                min_size=1, max_size=80))
def test_the_log_lines_account_for_every_refusal_and_respect_each_budget(events):
    """Per parameter: lines within the budget over any time; lines plus what they report = refusals."""
    log = RefusedChanges()
    now, timeline, lines = 0, [], []
    for name, value, step in events:
        now += step
        timeline.append(now)
        lines.append(log.note(f'{name}={value}', f'refused {value}', False, [name], now))
    end = now + safety.REPEAT_NS + safety.LOG_BURST * safety.LOG_PERIOD_NS
    closing = [(name, -1, 0) for name in NAMES]  # a fresh attempt of each, long after: logged
    lines += [log.note(f'{name}=-1', 'closing', False, [name], end) for name, _, _ in closing]
    assert all(line is not None for line in lines[-len(NAMES):])
    counted = _logged_per_name(events + closing, lines)
    for name in NAMES:
        asked = sum(e[0] == name for e in events) + 1
        assert counted[name] == asked, (name, counted, asked)
        logged_at = [t for (n, _, _), t, line in zip(events, timeline, lines) if n == name and line]
        for i, start in enumerate(logged_at):  # any window of a second: at most a burst and one more
            within = [t for t in logged_at[i:] if t - start < safety.LOG_PERIOD_NS]
            assert len(within) <= safety.LOG_BURST + 1
    assert log.counters['refused_parameter_changes'] == len(events) + len(NAMES)
