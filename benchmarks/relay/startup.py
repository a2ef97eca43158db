"""The relay benchmark's start-up trials: whether a freshly started subscriber misses the first messages."""
import os
import tempfile
import time

from wrench_distribution.processes import Children, loopback_environment

from .fanout import FanOut, STARTUP_MESSAGES
from .runs import read_json, start_role


def startup_trial(kind: str, delay: float, domain: int, durability: str) -> dict:
    """Start the probe on ``kind``, the talker right after; count what the probe received.

    :param kind: executor kind of the probe.
    :param delay: seconds between the probe's subscription and its first spin.
    :param domain: ROS domain id.
    :param durability: QoS durability of both ends (see :func:`.roles._startup_qos`).
    :return: ``received`` (count), ``first`` (lowest index received or None), ``matched``.
    """
    env = loopback_environment(domain)
    fan = FanOut()
    with tempfile.TemporaryDirectory(prefix='wd_startup_') as tmp:
        probe_out = os.path.join(tmp, 'probe.json')
        talker_out = os.path.join(tmp, 'talker.json')
        with Children() as procs:
            start_role(procs, tmp, env, fan, 'probe', '--out', probe_out, '--relay-executor', kind,
                       '--probe-delay', str(delay), '--durability', durability)
            talker = start_role(procs, tmp, env, fan, 'talker', '--out', talker_out, '--durability', durability)
            talker.wait(40)
            talker.stop()
            time.sleep(0.3)
        try:
            got = read_json(probe_out)['received']
            matched = read_json(talker_out)['matched']
        except (OSError, ValueError, KeyError):
            return {'received': 0, 'first': None, 'matched': False}
    return {'received': len(set(got)), 'first': min(got) if got else None, 'matched': matched}


def startup_figures(kind: str, trials: int, domain: int, durability: str) -> dict:
    """Run ``trials`` start-up trials, the probe's three start-ups in turn.

    The three: spin right after subscribing; spin 0.25 s after subscribing; subscribe
    0.25 s after the spin started (see :func:`.roles.role_probe`).

    A trial *misses* when the probe did not receive every message the talker sent after
    seeing its subscription (reliable, keep-last deeper than the burst: nothing may be lost).

    :param kind: executor kind.
    :param trials: number of trials.
    :param domain: ROS domain id.
    :return: dict of results.
    """
    res = [startup_trial(kind, (0.0, 0.25, -0.25)[k % 3], domain, durability)
           for k in range(trials)]
    ok = [r for r in res if r['matched']]
    return {'target': f'start-up ({kind}, {durability})', 'kind': kind, 'durability': durability,
            'trials': len(res),
            'unmatched': len(res) - len(ok),
            'missed': sum(r['received'] < STARTUP_MESSAGES for r in ok),
            'missed_first': sum(r['first'] != 0 for r in ok),
            'none': sum(r['received'] == 0 for r in ok),
            'received': [r['received'] for r in res]}
