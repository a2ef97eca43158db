"""A bag's measured contact states, judged over a run at once, equal the analyzer node's per-sample rules.

The reference is :class:`~wrench_distribution.engine.contact_states.ContactStates`, the class the
node runs one sample at a time (tested on its own against hand-written sequences): the same
weights and contact wrenches give the same states and the same findings at the same samples.
"""
from hypothesis import given, settings, strategies as st
import numpy as np

from wrench_distribution.engine.contact_states import ContactStates
from wrench_distribution.engine.weight_schedule import MeasuredStates

NAMES = ('a', 'b', 'c')
DIRECTIONS = np.array([[0.0, 0.0, 1.0], [0.6, 0.0, 0.8], [0.48, -0.6, 0.64]])
run = st.tuples(st.lists(st.sampled_from([0.0, 0.5, 1.0]), min_size=3, max_size=3),
                st.lists(st.lists(st.sampled_from([0.0, 0.3, 0.5, 0.7, 1.0, 1.2, 2.0, 4.0]) | st.floats(0.0, 5.0),
                                  min_size=3, max_size=3), min_size=1, max_size=8))


@settings(max_examples=150, deadline=None)
@given(runs=st.lists(run, min_size=1, max_size=6), noise=st.lists(st.floats(0.0, 0.4), min_size=3, max_size=3),
       floor=st.sampled_from([0.5, 1.0]))
def test_a_run_at_once_judges_as_the_node_sample_by_sample(runs, noise, floor):
    node, bag = ContactStates(NAMES, floor), MeasuredStates(NAMES, floor)
    by_node, first = [], 0
    for weights, sizes in runs:
        node.command(weights)
        bag.command(weights)
        wrenches = np.concatenate([DIRECTIONS[None] * np.asarray(sizes)[:, :, None], np.ones((len(sizes), 3, 3))],
                                  axis=2)
        for j, wrench in enumerate(wrenches):
            by_node += [(first + j, NAMES[i], finding) for i, finding in node.observe(wrench, np.array(noise))]
        bag.observe(np.arange(first, first + len(sizes)), wrenches, np.array(noise))
        assert bag.loaded.tolist() == node.loaded.tolist()
        first += len(sizes)
    by_bag = [(round(f['time_s'] * 1e9), f['contact'], f['finding']) for f in bag.listed]
    assert by_bag == by_node[:100] and bag.count == node.counters['contact_state_faults']
    summary = bag.summary()
    assert summary['loaded_above'] == node.limits[0].tolist() and summary['free_below'] == node.limits[1].tolist()
