"""The demo's tare: what a user does before the grasp, ``ros2 service call .../tare`` (ROS client).

While the grippers are open (before the simulator's ``grasp_time``) the F/T sensors carry
their tools alone: the analyzer's ``~/tare`` (``std_srvs/Trigger``, ``tare_state: free``)
then measures the biases. :class:`TareStep` calls it once the free phase has lasted long
enough, retries while the analyzer has too few samples, checks that the answer came before
the grasp (so that every averaged sample was free), and reads back the analyzer's
``sensor_biases`` (``rcl_interfaces/srv/GetParameters``). See docs/simulator.md, "Real cell".
"""
from __future__ import annotations

from typing import Optional

#: Sim time (s) before the grasp at which the demo asks for the tare.
TARE_LEAD = 0.45
#: Sim time (s) between two attempts while the analyzer refuses (too few samples).
RETRY = 0.05


class TareStep:
    """Call ``/<analyzer>/tare`` in the free phase, then read its ``sensor_biases``.

    :param node: the demo's node (sim time), whose executor is spun.
    :param grasp_time: the simulator's ``grasp_time`` (s).
    :param analyzer: the analyzer's node name.
    """

    def __init__(self, node, grasp_time: float, analyzer: str = 'wrench_analyzer') -> None:
        from rcl_interfaces.srv import GetParameters
        from std_srvs.srv import Trigger
        self.node = node
        self.grasp_time = float(grasp_time)
        self.at = max(0.0, self.grasp_time - TARE_LEAD)
        self.trigger = node.create_client(Trigger, f'/{analyzer}/tare')
        self.get = node.create_client(GetParameters, f'/{analyzer}/get_parameters')
        self._request_types = (Trigger.Request, GetParameters.Request)
        self.future = None
        self.state = 'waiting'
        #: What happened: ``success`` (the biases written and read back), ``message`` (the
        #: service's), ``answered_at_s``, ``attempts``, ``biases`` (6 per effector).
        self.result: dict = {'success': False, 'attempts': 0, 'message': 'not called'}

    @property
    def finished(self) -> bool:
        """Whether the tare is over (done or failed)."""
        return self.state in ('done', 'failed')

    def poll(self, sim_time: float) -> None:
        """Advance the tare by what the executor has delivered; call once per spin.

        :param sim_time: the simulator's time now (s).
        """
        if self.state == 'waiting' and sim_time >= self.grasp_time:
            self._fail(f'no tare before the grasp ({self.result["message"]})')
        elif self.state == 'waiting' and sim_time >= self.at and self.trigger.service_is_ready():
            self.result['attempts'] += 1
            self.future = self.trigger.call_async(self._request_types[0]())
            self.state = 'calling'
        elif self.state == 'calling' and self.future.done():
            self._answered(self.future.result(), sim_time)
        elif self.state == 'reading' and self.future.done():
            values = self.future.result().values
            if not values or not len(values[0].double_array_value):
                self._fail('the tare answered, but sensor_biases could not be read back')
                return
            self.result.update(success=True, biases=list(values[0].double_array_value))
            self.state = 'done'

    def _answered(self, response, sim_time: float) -> None:
        """Handle the service's answer: read the biases back, retry, or fail."""
        self.result['message'] = response.message
        self.result['answered_at_s'] = sim_time
        if sim_time >= self.grasp_time:
            self._fail(f'the tare answered at sim time {sim_time:.3f} s, after the grasp '
                       f'({self.grasp_time:g} s): its window may hold held samples')
        elif response.success:
            request = self._request_types[1]()
            request.names = ['sensor_biases']
            self.future = self.get.call_async(request)
            self.state = 'reading'
        else:  # too few samples yet: try again a little later
            self.at = sim_time + RETRY
            self.state = 'waiting'

    def _fail(self, why: str) -> None:
        self.result.update(success=False, message=why)
        self.state = 'failed'

    def summary(self) -> Optional[dict]:
        """Return the tare's record for the run's summary."""
        return dict(self.result, requested_at_s=self.at, grasp_time_s=self.grasp_time)
