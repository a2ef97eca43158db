"""The internal-load feedback follows the contacts' basis when it reads it (no ROS).

With the loop off, no prescription and no measurement, nothing reads the named basis of a new
geometry, so the engine builds it when something does: a measurement (the open loop's status,
tuning step 1), the loop switched on, the diagnostics. Whatever geometries came in between,
what the feedback then reads is in the basis of the contacts in force; the reference is the
basis of a solver built afresh at those contacts.
"""
from hypothesis import given, settings, strategies as st
import numpy as np

from wrench_distribution.config import changed_config, load_distributor_config
from wrench_distribution.engine.distribution import DistributionEngine

MS = 1_000_000
QUATS = np.tile([0.0, 0.0, 0.0, 1.0], (3, 1))
#: three point contacts whose named bases differ (a squeeze of b and c, or a balanced force of a)
GEOMETRIES = [np.array(p) for p in (
    [[0.069, 0.164, 0.066], [-0.261, 0.181, 0.089], [-0.107, 0.116, 0.073]],
    [[0.059, 0.006, 0.109], [-0.147, -0.033, -0.096], [0.12, 0.008, -0.058]],
    [[-0.156, -0.051, 0.002], [-0.055, 0.259, 0.201], [-0.542, -0.378, -0.035]],
    [[0.373, -0.194, -0.059], [0.1, -0.13, -0.048], [-0.113, -0.027, -0.234]],
)]
PARAMS = {'effectors': ['a', 'b', 'c'], 'contact_types': ['point'] * 3, 'contact_source': 'topic',
          'input_timeout': 0.0, 'feedback_kp': [0.0], 'feedback_ki': [5.0]}


def basis_of(positions: np.ndarray) -> list:
    """Return the basis names of a solver built afresh at these contacts."""
    engine = DistributionEngine(load_distributor_config(PARAMS))
    assert engine.offer_contacts(positions, QUATS, 0).refusal is None
    return list(engine.basis_names)


BASES = [basis_of(p) for p in GEOMETRIES]
sequences = st.lists(st.sampled_from(range(len(GEOMETRIES))), min_size=1, max_size=6)


def moved_through(sequence: list) -> DistributionEngine:
    """Return an engine, the loop off, taken through the geometries in turn (1 ms apart)."""
    engine = DistributionEngine(load_distributor_config(PARAMS))
    for k, index in enumerate(sequence):
        update = engine.offer_contacts(GEOMETRIES[index], QUATS, k * MS)
        assert update.rebuilt == (k == 0 or index != sequence[k - 1]) and update.refusal is None
        assert not update.rebuilt or update.basis is None or update.basis == BASES[index]  # built: the right one
    return engine


def test_the_geometries_have_different_bases():
    assert len({tuple(b) for b in BASES}) == len(BASES)


@settings(max_examples=40, deadline=None)
@given(sequences, st.sampled_from(range(len(GEOMETRIES))))
def test_a_measurement_with_the_loop_off_is_read_in_the_basis_of_the_contacts_in_force(sequence, other):
    engine = moved_through(sequence)
    now = len(sequence) * MS
    names = BASES[sequence[-1]]
    if BASES[other] != names:  # another basis is refused, naming the one expected
        refusal = engine.offer_measurement(BASES[other], np.zeros(3), now)
        assert refusal is not None and ';'.join(names) in refusal.message
        assert not refusal.report  # the loop is off: counted, not reported
    assert engine.offer_measurement(names, np.array([1.0, 2.0, 3.0]), now + MS) is None
    shown = engine.report(now + MS).per_concern['feedback']
    assert [key for key in shown if key != 'state'] == names
    assert [shown[name].split('measured ')[1].split(',')[0] for name in names] == ['1', '2', '3']


@settings(max_examples=40, deadline=None)
@given(sequences)
def test_switched_on_after_the_contacts_moved_the_loop_closes_in_their_basis(sequence):
    engine = moved_through(sequence)
    now = len(sequence) * MS
    engine.adopt(engine.plan(changed_config(engine.config, {'internal_load_feedback': True})), now)
    names = BASES[sequence[-1]]
    assert engine.internal.feedback.names == names
    for k in range(1, 4):  # a squeeze of 2 N measured where none is commanded: corrected
        assert engine.offer_measurement(names, np.array([2.0, 0.0, 0.0]), now + k * MS, now + k * MS) is None
    correction = engine.internal.feedback.current(now + 3 * MS)
    assert engine.internal.feedback.status() == 'closed loop'
    assert correction[0] < 0.0 and correction[1:].tolist() == [0.0, 0.0]


def test_the_report_names_the_basis_of_the_contacts_in_force_without_a_measurement():
    engine = moved_through([0, 1, 2])
    shown = engine.report(3 * MS).per_concern['feedback']
    assert [key for key in shown if key != 'state'] == BASES[2]
