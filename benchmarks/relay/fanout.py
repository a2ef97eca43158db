"""What every process of the relay benchmark agrees on: topics, contacts, QoS, parameter files.

The fan-out (one input, one output per effector) is chosen on the command line
(``--effectors``) and handed to each role process the same way, so that the orchestrator
and its children always name the same topics.
"""
from dataclasses import dataclass
import json
from typing import List

#: Default fan-out: one ``WrenchStamped`` in, four out.
DEFAULT_EFFECTORS = 4
IN_TOPIC = 'desired_wrench'
#: Longest wait (s) for the target's outputs and, with feedback, a closed loop before warm-up.
READY_WAIT_S = 20.0
#: Earliest opening of the measured window (s after the source started): DDS can hold the
#: outputs bound for the sink for a few hundred milliseconds about 4 s after the processes
#: start, for the bare relay as for the distributor, whatever the executor or the transport
#: (docs/benchmarks.md); no window opens before that is over.
EARLIEST_WINDOW_S = 6.0
#: The contacts' corners: a 0.6 m x 0.4 m rectangle; the first ``effectors`` are used.
CORNERS = [0.3, 0.2, 0.0, 0.3, -0.2, 0.0, -0.3, 0.2, 0.0, -0.3, -0.2, 0.0]
COM = [0.0, 0.0, 0.05]
#: Parts of the F/T period by which the whole loop's median is also given (``medians_by_part``).
PHASE_BINS = 4
STARTUP_TOPIC = 'startup_probe'
#: ``contact_transition_time`` of ``--moving-contacts`` (s): the ramp between the source's
#: weights 1 and 0.3 takes 0.525 s, longer than its toggle (0.5 s), so a weight moves every tick
MOVING_TRANSITION_S = 0.75
#: Messages the start-up talker sends once it sees the probe's subscription.
STARTUP_MESSAGES = 50


@dataclass(frozen=True)
class FanOut:
    """The effectors of one run: their names, output topics and contact positions.

    :param effectors: how many (2 to 4).
    """

    effectors: int = DEFAULT_EFFECTORS

    @property
    def names(self) -> List[str]:
        """Effector names ``e0, e1, ...``."""
        return [f'e{i}' for i in range(self.effectors)]

    @property
    def out_topics(self) -> List[str]:
        """One command topic per effector."""
        return [f'{n}/wrench_command' for n in self.names]

    @property
    def positions(self) -> List[float]:
        """Contact positions, flat: the first corners of the rectangle."""
        return CORNERS[:3 * self.effectors]

    @property
    def ft_names(self) -> List[str]:
        """Return the analyzer's F/T streams (``--analyzer-rate``): the first two effectors."""
        return self.names[:2]


def qos(kind: str):
    """Return the package's QoS profile ``kind`` (``reliable``, ``sensor_data``) of depth 10."""
    from wrench_distribution.ros.qos import qos_from_name
    return qos_from_name(kind, 10)


def analyzer_params() -> dict:
    """Return the analyzer's parameters: the first two contacts, static, default outputs.

    Its ``measured/internal_load`` is the distributor's default ``feedback_topic``; with
    ``--effectors 2`` both name the same basis, so the distributor takes the measurements.
    """
    two = FanOut(2)
    return {'effectors': two.names, 'contact_source': 'static',
            'contact_positions': two.positions, 'object_com': COM}


def distributor_params(fan: FanOut, feedback: bool = False, moving: bool = False) -> dict:
    """Return the distributor's parameters of the relay benchmark (static contacts).

    :param fan: the run's effectors.
    :param feedback: run with ``internal_load_feedback`` on.
    :param moving: contacts from the topic instead (``--moving-contacts``: new poses every tick,
        a weight ramp of ``MOVING_TRANSITION_S``).
    """
    if moving:
        return {'effectors': fan.names, 'contact_types': ['rigid'] * fan.effectors,
                'contact_source': 'topic', 'object_com': COM, 'input_timeout': 0.0,
                'contact_transition_time': MOVING_TRANSITION_S}
    return {'effectors': fan.names, 'contact_types': ['rigid'] * fan.effectors,
            'contact_source': 'static', 'contact_positions': fan.positions,
            'object_com': COM, 'input_timeout': 0.0,
            'internal_load_handles': ['squeeze(e0,e1)=10.0'],
            'internal_load_feedback': feedback, 'feedback_timeout': 1.0}


def write_params(path: str, sections: dict) -> None:
    """Write a ROS parameter file.

    :param path: file to write.
    :param sections: node name (or ``/**``) -> parameters.
    """
    import yaml
    data = {name: {'ros__parameters': params} for name, params in sections.items()}
    with open(path, 'w') as f:  # through JSON: no shared list, so no YAML alias (rcl refuses them)
        yaml.safe_dump(json.loads(json.dumps(data)), f)
