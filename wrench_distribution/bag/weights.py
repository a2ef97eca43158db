"""The contact weights a bag recorded, for ``analyze-bag`` to follow (docs/bags.md, "Contacts that come and go").

The distributor's ``actual_weights_topic`` (``std_msgs/Float64MultiArray`` labelled with the
effectors, as the analyzer node reads it) is read whole before the F/T messages (a message per
change: few), each message split by ``parse_internal_load_msg``, the node's parse, and kept
with its log time (:mod:`wrench_distribution.engine.weight_schedule` says why that time).
"""
from __future__ import annotations

from typing import Any, Optional

from wrench_distribution.core.messages import parse_internal_load_msg
from wrench_distribution.engine.contact_states import FollowedWeights
from wrench_distribution.engine.weight_schedule import MeasuredStates, not_followed, WeightSchedule
from .errors import BagError
from .reader import BagReader

FLOAT64_MULTI_ARRAY = 'std_msgs/msg/Float64MultiArray'


def follow_weights(bag: BagReader, engine: Any, topic: str) -> dict:
    """Make the engine's chunk path follow the weights recorded on ``topic``, when the bag has them.

    :param bag: the open bag.
    :param engine: the analysis engine (its chunk path gets the schedule).
    :param topic: the resolved ``actual_weights_topic``, or ``''`` (not followed).
    :return: what ``summary.json`` says of the weights until the analysis ends (``followed``).
    :raises BagError: when the topic carries another type.
    """
    if not topic:
        return not_followed('', 'actual_weights_topic is empty: every weight 1')
    if topic not in bag.topics:
        return not_followed(topic, 'the bag does not hold this topic: every weight 1')
    bag.require(topic, FLOAT64_MULTI_ARRAY, 'contact weights (actual_weights_topic; empty it '
                'in the configuration to read out with every weight 1)')
    times, messages = [], []
    for _, recv_ns, msg in bag.messages([topic], FLOAT64_MULTI_ARRAY):
        times.append(recv_ns)
        messages.append(parse_internal_load_msg(msg))
    if not times:
        return not_followed(topic, 'the topic holds no message that decodes: every weight 1')
    states = MeasuredStates(engine.names, engine.config.settings.loaded_force)
    engine.chunks.follow(WeightSchedule(FollowedWeights(engine, states), times, messages))
    return {'followed': True, 'topic': topic}


def weights_summary(engine: Any, before: dict) -> dict:
    """Return the summary's ``contact_weights`` at the end of the analysis.

    :param engine: the analysis engine.
    :param before: what :func:`follow_weights` returned.
    """
    schedule: Optional[WeightSchedule] = engine.chunks.schedule
    if schedule is None:
        return before
    schedule.finish()
    return schedule.summary(before['topic'])


class BasisPerContactSet:
    """The rebuild hook of a bag's engine: each set of contacts in the solve keeps one basis.

    Following weights, a contact leaving or returning changes the basis (the columns are their
    union, :mod:`.columns`); the same contacts with another basis (the geometry changed the
    selection) is refused as before: the parts are to be analysed separately. Its
    :attr:`engine` is set once the engine (built with the hook) exists.
    """

    def __init__(self) -> None:
        self.engine: Any = None
        self._bases: dict = {}

    def __call__(self, basis_names: list) -> None:
        """Check the basis of a rebuilt solver against the one its contact set had."""
        solver = self.engine.cache.distributor if self.engine is not None else None
        live = tuple(solver.live_names) if solver is not None else ()
        basis = list(basis_names)
        first = self._bases.setdefault(live, basis)
        if basis != first:
            raise BagError('the internal-load basis changed during the bag '
                           f'({first} -> {basis}); analyse the parts separately')
