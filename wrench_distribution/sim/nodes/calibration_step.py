"""The demo's calibration: what a user does with the analyzer's calibration services (ROS client).

The scenario's tilts are the user's motions: before the grasp the open grippers turn through
``free_tilts``; after it the held object turns through the controller's ``tilts``. At each
rest, before the next tilt, the demo calls ``~/calibration/capture`` (the newest
``tare_samples`` samples become one pose; refused while the cell still moves, it is asked
again until just before the next tilt, as a user retries, and then skipped); after the free tilts
``~/calibration/identify_tools`` (the biases and tools applied at once), after the held rests
(those before the last internal-load change: the tilts after it are the hold being judged)
``~/calibration/identify_object`` and ``~/save_calibration`` (the object takes effect at the
next start of both nodes). :class:`ServiceScript` makes the calls in order, one at a time,
each at its sim time or as soon as the previous one has answered, and keeps the answers.

The grasps (:func:`grasp_procedure`, ``dual_arm_admittance`` and ``dual_arm_joints``): the
controller's ``internal_load_schedule`` holds the object still at several internal loads before
its move; the demo captures each rest, then calls ``~/calibration/identify_grasps`` (the
identified contacts applied at once in the analyzer) and ``~/save_calibration`` as the move
starts. See docs/simulator.md, section 11, and docs/calibration.md.
"""
from __future__ import annotations

from typing import Mapping

from ..scenarios.runs import calibration_motions

#: Sim time (s) before the next tilt at which a rest is first captured (its samples end there).
CAPTURE_LEAD = 0.35
#: Sim time (s) before the next tilt after which a refused capture is not asked again.
CAPTURE_DEADLINE = 0.05
#: Sim time (s) between two attempts of a refused capture.
RETRY = 0.1
#: Sim time (s) after the last free tilt at which the tools are identified.
IDENTIFY_DELAY = 0.1
#: Shortest held rest (s) the grasp identification captures: shorter ones do not settle.
MIN_REST = 1.0


def procedure(checked: Mapping) -> list:
    """Return the calls of the calibration procedure, from the scenario's motions.

    :param checked: validated sections (``object_sim``, ``object_controller``).
    :return: ``[(sim time s, service name relative to the analyzer, retry deadline s or None),
        ...]`` in time order
    :raises ValueError: when the scenario has no free tilts or no held rests before the hold
    """
    free, held = calibration_motions(checked['object_sim'], checked['object_controller'])
    if not len(free) or not len(held):
        raise ValueError('--calibrate needs the free tilts (object_sim free_tilts) and held tilts '
                         'before the last internal-load change (object_controller tilts), e.g. '
                         'the scenario dual_arm_real_cell_tilt')

    def captures(starts) -> list:
        return [(start - CAPTURE_LEAD, 'calibration/capture', start - CAPTURE_DEADLINE)
                for start in starts]
    steps = captures(free[:, 0])
    steps.append((free[-1, 0] + free[-1, 1] + IDENTIFY_DELAY, 'calibration/identify_tools', None))
    steps += captures(held[:, 0])
    steps += [(held[-1, 0], 'calibration/identify_object', None),
              (held[-1, 0], 'save_calibration', None)]
    return steps


def grasp_procedure(checked: Mapping) -> list:
    """Return the calls that identify the grasps at the held rests before the controller's move.

    A rest is the time from one schedule entry (or the fixture's release) to the next entry or
    the move's start, at least :data:`MIN_REST` long; each is captured at its end
    (:data:`CAPTURE_LEAD`, retried until :data:`CAPTURE_DEADLINE`).

    :param checked: validated sections (``object_sim``, ``object_controller``, ``wrench_analyzer``).
    :return: as :func:`procedure`
    :raises ValueError: when the analyzer's contacts are not static, or fewer than two
        different internal loads are held before the move
    """
    from ...config.handles import parse_schedule
    source = checked['wrench_analyzer']['contact_source']
    if source != 'static':
        raise ValueError(f"grasp identification corrects static contacts; the analyzer's contact_source "
                         f"is '{source}'")
    controller = checked['object_controller']
    start = controller['move_start']
    entries = [(when, handles) for when, handles in parse_schedule(controller['internal_load_schedule'])
               if when < start]
    ends = [when for when, _ in entries[1:]] + [start]
    release = checked['object_sim']['release_time']
    held = [(end, handles) for (when, handles), end in zip(entries, ends) if end - max(when, release) >= MIN_REST]
    if len(held) < 2 or len({tuple(sorted(h.items())) for _, h in held}) < 2:
        raise ValueError(f'grasp identification needs two or more different internal loads held still for '
                         f'{MIN_REST:g} s or more before the move (object_controller internal_load_schedule entries '
                         'before move_start), e.g. the scenario dual_arm_admittance at its own duration')
    rests = [end for end, _ in held]
    steps = [(end - CAPTURE_LEAD, 'calibration/capture', end - CAPTURE_DEADLINE) for end in rests]
    return steps + [(start, 'calibration/identify_grasps', None), (start, 'save_calibration', None)]


class ServiceScript:
    """Call the analyzer's ``std_srvs/Trigger`` services at their sim times, one at a time.

    :param node: the demo's node (sim time), whose executor is spun.
    :param steps: from :func:`procedure`.
    :param analyzer: the analyzer's node name.
    """

    def __init__(self, node, steps: list, analyzer: str = 'wrench_analyzer') -> None:
        from std_srvs.srv import Trigger
        self.request = Trigger.Request
        self.clients = {name: node.create_client(Trigger, f'/{analyzer}/{name}')
                        for name in sorted({name for _, name, _ in steps})}
        #: The calls still to make: ``service``, ``at_s`` (planned, or the retry's time),
        #: ``deadline_s`` (a refused call is asked again until then; None: never), ``attempts``.
        self.pending = [{'service': name, 'at_s': at, 'deadline_s': deadline, 'attempts': 0}
                        for at, name, deadline in steps]
        self.future = None
        #: The calls made, as :attr:`pending` plus ``called_at_s`` (the last attempt),
        #: ``answered_at_s``, ``success`` and ``message`` (the last answer).
        self.answers: list = []

    @property
    def finished(self) -> bool:
        """Whether every call has been answered."""
        return not self.pending and self.future is None

    def poll(self, sim_time: float) -> None:
        """Advance by what the executor has delivered; call once per spin.

        :param sim_time: the simulator's time now (s).
        """
        if self.future is not None and self.future.done():
            response, record = self.future.result(), self.answers[-1]
            record.update(answered_at_s=sim_time, success=bool(response.success),
                          message=response.message)
            self.future = None
            deadline = record['deadline_s']
            if not response.success and deadline is not None and sim_time + RETRY <= deadline:
                record['at_s'] = sim_time + RETRY  # refused while moving: ask again
                self.pending.insert(0, self.answers.pop())
        if self.future is None and self.pending and sim_time >= self.pending[0]['at_s']:
            record = self.pending[0]
            if self.clients[record['service']].service_is_ready():
                self.pending.pop(0)
                record.update(called_at_s=sim_time, attempts=record['attempts'] + 1,
                              success=False, message='no answer')
                self.answers.append(record)
                self.future = self.clients[record['service']].call_async(self.request())

    def summary(self) -> dict:
        """Return the record of the calls.

        ``success`` when every call was made and every identification and save succeeded: a rest
        whose capture was refused until its deadline (the cell never settled) is skipped, as a
        user skips it; the identification after it says whether the rests left determine it.
        """
        done = all(a['success'] for a in self.answers if a['service'] != 'calibration/capture') and self.finished
        skipped = sum(1 for a in self.answers if a['service'] == 'calibration/capture' and not a['success'])
        return {'success': done, 'calls': self.answers, 'not_called': list(self.pending), 'rests_skipped': skipped}
