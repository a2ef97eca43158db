"""Problem files take ``contact_weights`` (docs/legs_and_hands.md, docs/command_line.md).

References: the same problem without the released contact (what weight 0 must equal), the
problem without ``contact_weights`` (weights 1), and the resultant transported by hand.
"""
import contextlib
import io
import json
import os
import tempfile

import numpy as np
import pytest

from test_cli_engine import resultant_by_hand, synthesize
from wrench_distribution.cli import main

THREE_ARMS = {
    'contacts': [
        {'name': 'a', 'type': 'rigid', 'position': [0.2, 0.0, 0.0], 'orientation': [0, 0, 0, 1]},
        {'name': 'b', 'type': 'rigid', 'position': [0.0, 0.25, 0.05], 'orientation': [0, 0.6, 0, 0.8]},
        {'name': 'c', 'type': 'rigid', 'position': [-0.2, 0.0, 0.0], 'orientation': [0.6, 0, 0, 0.8]},
    ],
    'object': {'com': [0.01, 0.02, 0.0]},
    'wrench': [1.0, -2.0, 30.0, 0.3, -0.2, 0.1],
}


def without(document: dict, name: str) -> dict:
    """Return the problem with one contact removed (and no weights)."""
    out = {k: v for k, v in document.items() if k != 'contact_weights'}
    out['contacts'] = [c for c in document['contacts'] if c['name'] != name]
    return out


def commands_of(output: dict) -> np.ndarray:
    return np.array([c['wrench'] for c in output['contacts'].values()])


def run(document: dict, command: str) -> tuple:
    """Run a subcommand in process; return its exit status and JSON output."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, 'problem.json')
        with open(path, 'w', encoding='utf-8') as handle:
            json.dump(document, handle)
        text = io.StringIO()
        with contextlib.redirect_stdout(text):
            code = main([command, '--problem', path])
    return code, json.loads(text.getvalue())


@pytest.mark.parametrize('released', ['a', 'b', 'c'])
def test_a_released_contact_gets_exactly_zero_and_the_others_the_split_without_it(released):
    weights = {released: 0.0}
    output = synthesize(dict(THREE_ARMS, contact_weights=weights))
    commands = commands_of(output)
    index = ['a', 'b', 'c'].index(released)
    np.testing.assert_array_equal(commands[index], 0.0)
    assert output['released'] == [released] and output['contact_weights'][released] == 0.0
    reference = commands_of(synthesize(without(THREE_ARMS, released)))
    np.testing.assert_allclose(np.delete(commands, index, axis=0), reference, rtol=1e-9, atol=1e-9)
    contacts = THREE_ARMS['contacts']
    total = resultant_by_hand(commands, [c['position'] for c in contacts], [c['orientation'] for c in contacts],
                              THREE_ARMS['object']['com'])
    np.testing.assert_allclose(total, THREE_ARMS['wrench'], atol=1e-9)
    listed = synthesize(dict(THREE_ARMS, contact_weights=[0.0 if n == released else 1.0 for n in 'abc']))
    np.testing.assert_array_equal(commands_of(listed), commands)  # a list means the same


def test_weights_one_equal_no_weights_and_a_partial_weight_lies_between():
    plain = commands_of(synthesize(THREE_ARMS))
    np.testing.assert_allclose(commands_of(synthesize(dict(THREE_ARMS, contact_weights=[1, 1, 1]))), plain,
                               rtol=1e-12, atol=1e-12)
    released = synthesize(dict(THREE_ARMS, contact_weights={'a': 0.0}))
    half = synthesize(dict(THREE_ARMS, contact_weights={'a': 0.5}))
    # one contact moving: affine in its weight (docs/theory.md 16.4)
    np.testing.assert_allclose(commands_of(half), 0.5 * (plain + commands_of(released)), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize('weights, text', [
    ({'x': 0.0}, 'unknown contacts x'),
    ([1.0, 1.0], '3 values'),
    ([1.0, 1.5, 1.0], 'in [0, 1]'),
    ([0.0, 0.0, 0.0], 'every weight is 0'),
    ('all', 'must be a list'),
])
def test_bad_weights_are_refused_with_a_message(weights, text):
    code, output = run(dict(THREE_ARMS, contact_weights=weights), 'synthesize')
    assert code != 0 and text in output['error'], output


def test_analyze_reads_out_on_the_contacts_of_positive_weight():
    measured = {'a': [0.0, 0.0, 10.0, 0.0, 0.1, 0.0], 'b': [1.0, 0.0, 12.0, 0.0, 0.0, 0.2],
                'c': [0.0, -1.0, 9.0, 0.1, 0.0, 0.0]}
    document = dict(THREE_ARMS, measured=measured, contact_weights={'c': 0.0})
    code, output = run(document, 'analyze')
    assert code == 0, output
    reference_doc = without(document, 'c')
    reference_doc['measured'] = {k: v for k, v in measured.items() if k != 'c'}
    code, reference = run(reference_doc, 'analyze')
    assert code == 0, reference
    assert output['released'] == ['c']
    np.testing.assert_allclose(output['resultant'], reference['resultant'], rtol=1e-9, atol=1e-9)
