"""The read-out's health label (core/doubt.py): its documented form, round trips, refusals."""
from hypothesis import given, strategies as st
import pytest

from wrench_distribution.core.doubt import (Doubt, doubt_label, is_health_label, parse_doubt_label,
                                            TRUSTED, TRUSTED_LABEL)

NAME = st.from_regex(r'[a-z][a-z0-9_]{0,12}', fullmatch=True)
CHECKS = st.lists(st.sampled_from(['frozen', 'out_of_range', 'spike', 'drift']), min_size=1,
                  max_size=4, unique=True).map('+'.join)


@st.composite
def doubts(draw):
    sensors = draw(st.lists(st.tuples(NAME, CHECKS), max_size=4, unique_by=lambda s: s[0]))
    consistent = draw(st.booleans()) if sensors else False
    age = draw(st.floats(0.0, 1e5, allow_nan=False))
    elements = tuple(sorted(draw(st.sets(st.integers(0, 40), max_size=12))))
    return Doubt(tuple(sensors), consistent, age, elements)


@given(doubts())
def test_every_doubt_round_trips_through_its_label(doubt):
    label = doubt_label(doubt)
    assert is_health_label(label) and label.startswith('health=doubt;')
    back = parse_doubt_label(label)
    assert back.sensors == doubt.sensors and back.consistent == doubt.consistent
    assert back.elements == doubt.elements
    assert back.onset_age_s == pytest.approx(doubt.onset_age_s, abs=1e-6)
    assert not back.trusted


def test_the_documented_form():
    doubt = Doubt((('left', 'frozen'),), True, 0.038, (0, 1, 2))
    assert doubt_label(doubt) == ('health=doubt;sensors=left:frozen;set=consistent;'
                                  'onset_age_s=0.038000;elements=0,1,2')
    assert doubt.describe() == 'left (frozen)'
    both = Doubt((('b', 'out_of_range+spike'),), False, 1.0, ())
    assert both.describe() == 'b (out_of_range, spike), set inconsistent'
    assert doubt_label(None) == doubt_label(TRUSTED) == TRUSTED_LABEL == 'health=ok'
    assert parse_doubt_label('health=ok') is TRUSTED
    assert not is_health_label('squeeze(a,b);twist(a,b)')


@pytest.mark.parametrize('label', [
    '', 'health=', 'health=doubt', 'health=doubt;sensors=a:frozen',
    'health=doubt;sensors=a:frozen;set=consistent;onset_age_s=1;elements=0;extra=1',
    'health=doubt;sensors=a:frozen;set=consistent;onset_age_s=inf;elements=0',
    'health=doubt;sensors=a:frozen;set=consistent;onset_age_s=x;elements=0',
    'health=doubt;sensors=a:frozen;set=consistent;onset_age_s=1;elements=-1',
    'health=doubt;sensors=a:frozen;set=consistent;onset_age_s=1;elements=1.5',
    'health=doubt;sensors=a:b:c;set=consistent;onset_age_s=1;elements=0',
    'health=doubt;sensors=;set=consistent;onset_age_s=1;elements=0'])
def test_malformed_labels_are_refused_with_a_message(label):
    with pytest.raises(ValueError, match='health label'):
        parse_doubt_label(label)
