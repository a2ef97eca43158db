"""The analyzer node's contact weights: the subscription its read-out follows, the contact states.

A thin adapter of :mod:`wrench_distribution.engine.contact_states`: the labelled weights the
distributor publishes (``actual_weights_topic``) are followed by the analysis engine's solver,
each analysed sample updates the contacts' measured states with the force noise the sensor
health checks learned, and the diagnostics show both (``contacts`` concern); docs/legs_and_hands.md.
"""
from typing import Optional

import numpy as np
from std_msgs.msg import Float64MultiArray

from wrench_distribution.core.messages import parse_internal_load_msg
from wrench_distribution.engine.contact_states import ContactStates, FollowedWeights
from wrench_distribution.engine.status import WARN
from .qos import reliable_qos


class FollowedWeightsInput:
    """The weights the analyzer follows and the contacts' measured states (module docstring).

    :param node: the analyzer node (subscriptions and logger).
    :param config: its configuration (``topics.weights``, ``settings.loaded_force``).
    :param engine: its analysis engine.
    """

    def __init__(self, node, config, engine) -> None:
        self._engine = engine
        self._logger = node.get_logger()
        self.states = ContactStates(config.effectors, config.settings.loaded_force)
        self.follow = FollowedWeights(engine, self.states)
        self._noise_key = None  # the learner and its estimates when the thresholds were set
        if config.topics.weights:  # followed in every lifecycle state: the weights are state
            node.create_subscription(Float64MultiArray, config.topics.weights, self._on_weights,
                                     reliable_qos(10))

    def _on_weights(self, msg: Float64MultiArray) -> None:
        labels, values = parse_internal_load_msg(msg)
        if np.array_equal(np.asarray(values, float), self.follow.weights) \
                and list(labels or []) == self.follow.names:
            return  # the distributor repeats its weights with each diagnostics message
        why = self.follow.offer(labels, values)
        if why is not None:
            self._logger.warning(why)

    def observe(self, contact: np.ndarray) -> None:
        """Update the measured states with an analysed sample's (n, 6) contact wrenches; log new findings."""
        for i, finding in self.states.observe(contact, self._noise()):
            self._logger.warning(self.states.message(i, finding))

    def _noise(self) -> Optional[np.ndarray]:
        """Return the force noise per contact (the largest force axis; NaN before it is learned).

        :return: the noise, or None when it has not changed since the last call (or no health
            checks run).
        """
        health = self._engine.health
        if health is None:
            return None
        learner = health.checks.learner
        key = (id(learner), learner.estimates)  # a new monitor (a calibration) starts anew
        if key == self._noise_key:
            return None
        self._noise_key = key
        return np.asarray(learner.noise, float)[:, :3].max(axis=1)

    def diagnose(self, conditions: dict, values: dict) -> None:
        """Add the contacts concern's conditions and the key/values of the weights and states."""
        conditions['contacts'] += self.states.conditions()
        if self.follow.refused is not None:
            conditions['contacts'].append((WARN, self.follow.refused))
        values.update(self.follow.values())
        values.update(self.states.values())
        values['contact_state_faults'] = str(self.states.counters['contact_state_faults'])
