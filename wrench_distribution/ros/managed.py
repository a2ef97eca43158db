"""The distributor and the analyzer as managed nodes (``rclpy.lifecycle``, from Humble on).

The transitions, as ros2_control's controllers and Nav2's servers take them:

- ``configure``: the node's :meth:`ManagedNode._configure` reads and checks the parameters
  (``declare_config``: the typed configuration that check-config judges), builds the engines
  and makes the publishers (lifecycle publishers: silent until ``activate``), subscriptions,
  timers and services. A configuration error fails the transition: what it made is
  destroyed, the node stays unconfigured and alive, and the message is logged and kept in
  the ``lifecycle`` diagnostics status (ERROR) until a configure succeeds.
- ``activate``: the publishers are enabled, then the inputs (:meth:`ManagedNode.when_active`)
  act.
- ``deactivate``: the inputs stop acting, :meth:`ManagedNode._stop` publishes what a stop
  publishes (the distributor: its stop commands), then the publishers are disabled. The
  engines keep their state for a later ``activate``.
- ``cleanup``: what ``configure`` made is destroyed. The parameters stay declared with their
  values, which the next ``configure`` reads and checks again.
- ``shutdown`` (from any primary state): from ``active`` the stop first, then as ``cleanup``.
  The runner shuts every managed node down on Ctrl-C (:mod:`.runner`).
- error processing (a transition raised): as ``shutdown``, back to ``unconfigured`` with an
  ERROR status; ``finalized`` when releasing fails too.

``/diagnostics`` goes out in every state: once configured, the node's own statuses (one of
them ``<node>: lifecycle``); before, the summary and the lifecycle status alone, every second.
With ``autostart`` (the default) :meth:`ManagedNode.start` configures and activates at once
and raises a configuration error as a constructor does: a node without a manager works as
before. A parameter change is checked as before while the node is configured, and refused
while it is not (configure reads the values as they are, so a change then would skip the
runtime checks of ``docs/security.md``).
"""
import inspect
import time
from typing import Callable, List, Optional, Set

from diagnostic_msgs.msg import DiagnosticArray
from lifecycle_msgs.msg import Transition
from lifecycle_msgs.srv import ChangeState
from rclpy.client import Client
from rclpy.clock import Clock, ClockType
from rclpy.duration import Duration
from rclpy.lifecycle import LifecycleNode, LifecyclePublisher, LifecycleState, TransitionCallbackReturn
from rclpy.publisher import Publisher
from rclpy.service import Service
from rclpy.subscription import Subscription
from rclpy.timer import Timer

from wrench_distribution.config.safety import RefusedChanges
from wrench_distribution.config.schema import PARAM_INDEX
from wrench_distribution.ros.delivery import refusal
from wrench_distribution.ros.diagnostics import DiagnosticsState, ERROR, OK
from wrench_distribution.ros.parameters import (add_parameter_callbacks, CONFIG_ERRORS,
                                                declare_from_specs, requested_changes)

#: The diagnostics concern of the node's lifecycle state.
LIFECYCLE = 'lifecycle'
#: Period of the lifecycle status while the node is not configured (s, steady clock).
IDLE_DIAGNOSTICS_PERIOD = 1.0
#: Longest wait for a stop's delivery to the subscribers (s).
STOP_DELIVERY_S = 0.5
#: The primary states in which the node has a configuration.
CONFIGURED = ('inactive', 'active')
SUCCESS = TransitionCallbackReturn.SUCCESS
#: What configure makes -> the node's method that destroys it (the first match counts: a
#: lifecycle publisher is a publisher too).
_DESTROYERS = ((LifecyclePublisher, 'destroy_lifecycle_publisher'), (Publisher, 'destroy_publisher'),
               (Subscription, 'destroy_subscription'), (Timer, 'destroy_timer'),
               (Service, 'destroy_service'), (Client, 'destroy_client'))
#: The transitions each primary state has (the standard state machine's, lifecycle_msgs ids).
AVAILABLE = {'unconfigured': (Transition.TRANSITION_CONFIGURE,
                              Transition.TRANSITION_UNCONFIGURED_SHUTDOWN),
             'inactive': (Transition.TRANSITION_CLEANUP, Transition.TRANSITION_ACTIVATE,
                          Transition.TRANSITION_INACTIVE_SHUTDOWN),
             'active': (Transition.TRANSITION_DEACTIVATE, Transition.TRANSITION_ACTIVE_SHUTDOWN),
             'finalized': ()}


class ManagedNode(LifecycleNode):
    """One of the package's nodes as a managed node (module docstring).

    A subclass implements :meth:`_configure` (its configuration in ``self._config``),
    ``_check_parameters`` and ``_apply_parameters`` (:func:`.parameters.add_parameter_callbacks`),
    where it has any :meth:`_stop` and :meth:`_resume`, and calls :meth:`start` at the end of
    its constructor.

    :param node_name: node name.
    :param kind: ``'distributor'`` or ``'analyzer'`` (its parameter schema).
    :param summary: the summary status's name after the node's (``distribution``).
    :param kwargs: passed to ``rclpy.lifecycle.LifecycleNode``.
    """

    def __init__(self, node_name: str, kind: str, summary: str, **kwargs) -> None:
        super().__init__(node_name, **kwargs)
        self._kind = kind
        self._config = None
        self._given: Set[str] = set()  # the names given, kept across configures
        self._owned: Optional[list] = None  # what the current configuration made
        self._configuring = self._active = self._autostarting = False
        self._state = 'unconfigured'
        self._status = (OK, 'unconfigured: waiting for configure')
        self._failure: Optional[Exception] = None
        self._diag: Optional[DiagnosticsState] = None  # the configured node's (its _configure)
        self._listeners: List[Callable[[], None]] = []
        specs = PARAM_INDEX[kind]
        self.autostart = bool(declare_from_specs(self, [specs['autostart']], self._given)[0]['autostart'])
        self._diag_pub = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        self._idle = DiagnosticsState(f'{self.get_name()}: {summary}', self.get_name(), (LIFECYCLE,))
        self.create_timer(IDLE_DIAGNOSTICS_PERIOD, self._publish_idle_diagnostics,
                          clock=Clock(clock_type=ClockType.STEADY_TIME))
        self._refused = RefusedChanges()  # every refused parameter change, named (diagnostics)
        add_parameter_callbacks(self, specs, self._check_request, self._apply_request, self._refused)
        self._refuse_unavailable_transitions()

    def _refuse_unavailable_transitions(self) -> None:
        """Answer ``success: false`` to a transition requested by id that the state lacks.

        rclpy's ``~/change_state`` does so from Kilted on; the rclpy of Humble and Jazzy (up to
        7.1.x) raises out of the executor instead: no answer, a ``[FATAL]`` log. A request by
        label is rclpy's to answer (it looks the label up in the current state's transitions).
        """
        for service in self.services:
            if service.srv_type is ChangeState:
                answer = service.callback

                def checked(request, response, answer=answer):
                    wanted = request.transition
                    if wanted.label or wanted.id in AVAILABLE[self._state]:
                        return answer(request, response)
                    self.get_logger().warning(f'transition {wanted.id} refused: {self._state} '
                                              'has no such transition')
                    response.success = False
                    return response
                service.callback = checked

    # -- what a subclass provides ----------------------------------------------------------
    def _configure(self) -> None:
        """Read and check the parameters, build the engines, make the node's entities."""
        raise NotImplementedError

    def _stop(self) -> str:
        """Publish what a stop publishes (deactivate, shutdown); return what it was ('' : none)."""
        return ''

    def _resume(self) -> None:
        """Prepare the inputs to act again (activate)."""

    # -- the node's side ---------------------------------------------------------------------
    def start(self) -> None:
        """Configure and activate now when ``autostart`` is true (a constructor's last call).

        :raises ConfigError: (or rclpy's parameter exceptions) what failed the configure, as a
            node constructor raises it; the node is then unconfigured.
        """
        if not self.autostart:
            self.get_logger().info('unconfigured: waiting for configure (autostart: false)')
            return
        self._autostarting = True  # the caller reports a configuration error
        try:
            self.trigger_configure()
        finally:
            self._autostarting = False
        if self._state != 'inactive':
            raise self._failure or RuntimeError(f'configure left {self.get_name()} {self._state}')
        self.trigger_activate()
        if self._state != 'active':
            raise self._failure or RuntimeError(f'activate left {self.get_name()} {self._state}')

    def shut_down(self) -> None:
        """Take the node to ``finalized`` (the process ends): from ``active``, the stop first."""
        if self._state != 'finalized':
            self.trigger_shutdown()

    @property
    def lifecycle_state(self) -> str:
        """Return the primary state: ``unconfigured``, ``inactive``, ``active`` or ``finalized``."""
        return self._state

    @property
    def lifecycle_status(self) -> tuple:
        """Return ``(level, message)`` of the ``lifecycle`` diagnostics status."""
        return self._status

    @property
    def is_active(self) -> bool:
        """Tell whether the inputs act (``active``)."""
        return self._active

    def when_active(self, callback: Callable) -> Callable:
        """Return ``callback`` made to act only while the node is active (an input's callback).

        The gate takes the arguments ``callback`` takes: rclpy hands a timer's callback its
        ``TimerInfo`` (Jazzy on) only when that callback has a parameter.

        :param callback: a subscription's or a timer's callback.
        :return: the gated callback.
        """
        if not inspect.signature(callback).parameters:
            def gated_call() -> None:
                if self._active:
                    callback()
            return gated_call

        def gated(*args) -> None:
            if self._active:
                callback(*args)
        return gated

    def _await_delivery(self, publishers) -> None:
        """Wait until every reliable subscriber has what was just published (a stop).

        Right after a stop the publishers close or go; :data:`STOP_DELIVERY_S` in all at most.

        :param publishers: the publishers of the stop.
        """
        deadline = time.monotonic() + STOP_DELIVERY_S
        for pub in publishers:
            pub.wait_for_all_acked(Duration(seconds=max(0.0, deadline - time.monotonic())))

    def add_state_listener(self, listener: Callable[[], None]) -> None:
        """Call ``listener()`` after each transition that reached a primary state."""
        self._listeners.append(listener)

    def _lifecycle_diagnostics(self, conditions: dict, per_concern: dict) -> None:
        """Add the lifecycle status to a configured node's diagnostics (concern :data:`LIFECYCLE`)."""
        conditions[LIFECYCLE] = [self._status]
        per_concern[LIFECYCLE] = {'state': self._state, 'autostart': str(self.autostart).lower()}

    # -- transitions -------------------------------------------------------------------------
    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Read and check the parameters and build everything; a configuration error fails it."""
        self._owned, self._configuring, self._failure = [], True, None
        try:
            self._configure()
        except CONFIG_ERRORS as e:
            self._configuring = False
            self._failure = e
            self._release()
            self._enter('unconfigured', ERROR, f'configure failed: {e}')
            return TransitionCallbackReturn.FAILURE
        except Exception as e:  # noqa: BLE001 - any other failure goes to error processing
            return self._error('configure', e)
        finally:
            self._configuring = False
        return self._enter('inactive', OK, 'configured; no output until activate')

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Enable the publishers, then let the inputs act."""
        def activate() -> str:
            LifecycleNode.on_activate(self, state)  # the lifecycle publishers
            self._resume()
            self._active = True
            return 'inputs and outputs live'
        return self._attempt('activate', activate, 'active')

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Stop the inputs, publish the stop, disable the publishers; the state is kept."""
        def deactivate() -> str:
            self._active = False
            stop = self._stop()
            LifecycleNode.on_deactivate(self, state)
            return f'deactivated{f", stop published ({stop})" if stop else ""}; no output until activate'
        return self._attempt('deactivate', deactivate, 'inactive')

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Destroy what configure made (the parameters stay)."""
        def cleanup() -> str:
            self._release()
            return 'cleaned up; waiting for configure'
        return self._attempt('cleanup', cleanup, 'unconfigured')

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        """From ``active`` the stop, then release everything."""
        def shutdown() -> str:
            self._wind_down()
            return 'shut down'
        return self._attempt('shutdown', shutdown, 'finalized')

    def _attempt(self, transition: str, action: Callable[[], str],
                 state: str) -> TransitionCallbackReturn:
        """Run a transition's action; reach ``state`` with its text, or report what it raised."""
        try:
            text = action()
        except Exception as e:  # noqa: BLE001 - any failure goes to error processing
            return self._error(transition, e)
        return self._enter(state, OK, text)

    def on_error(self, state: LifecycleState) -> TransitionCallbackReturn:
        """After a transition raised: the stop if active, release, back to ``unconfigured``."""
        why = f'{type(self._failure).__name__}: {self._failure}'
        try:
            self._wind_down()
        except Exception as e:  # noqa: BLE001 - nothing left to fall back on
            self._enter('finalized', ERROR, f'error processing ({why}) failed: {e}')
            return TransitionCallbackReturn.FAILURE
        self._enter('unconfigured', ERROR, f'error processing after {why}; released, waiting '
                    'for configure')
        return SUCCESS

    def _error(self, transition: str, error: Exception) -> TransitionCallbackReturn:
        """Report a transition that raised; rclpy then runs :meth:`on_error`."""
        self._failure = error
        self.get_logger().error(f'{transition} raised {type(error).__name__}: {error}')
        return TransitionCallbackReturn.ERROR

    def _enter(self, state: str, level: int, text: str) -> TransitionCallbackReturn:
        """Record the state reached and its status, say it, tell the listeners."""
        self._state, self._status = state, (level, f'{state}: {text}')
        if level == ERROR:
            if not self._autostarting:
                self.get_logger().error(self._status[1])
        else:
            self.get_logger().info(self._status[1])
        self._publish_idle_diagnostics()
        for listener in self._listeners:
            listener()
        return SUCCESS

    def _wind_down(self) -> None:
        """Publish the stop when active, then release everything the configuration made."""
        if self._active:
            self._active = False
            self._stop()
        self._release()

    def _release(self) -> None:
        """Destroy what the configuration made; the parameters and the names given stay."""
        if self._config is not None:
            self._given |= self._config.given
        owned, self._owned, self._config = self._owned or [], None, None
        for entity in reversed(owned):
            self._destroy(entity)

    def _destroy(self, entity) -> None:
        destroy = next(name for kind, name in _DESTROYERS if isinstance(entity, kind))
        getattr(self, destroy)(entity)

    # -- what configure makes is the configuration's -------------------------------------
    def _own(self, entity):
        owned = getattr(self, '_owned', None)  # None also while rclpy's Node is being built
        if owned is not None:
            owned.append(entity)
        return entity

    def create_publisher(self, *args, **kwargs):  # noqa: D102 (rclpy's, recorded)
        return self._own(super().create_publisher(*args, **kwargs))

    def create_lifecycle_publisher(self, *args, **kwargs):  # noqa: D102
        return self._own(super().create_lifecycle_publisher(*args, **kwargs))

    def create_subscription(self, *args, **kwargs):  # noqa: D102
        return self._own(super().create_subscription(*args, **kwargs))

    def create_timer(self, *args, **kwargs):  # noqa: D102
        return self._own(super().create_timer(*args, **kwargs))

    def create_service(self, *args, **kwargs):  # noqa: D102
        return self._own(super().create_service(*args, **kwargs))

    def create_client(self, *args, **kwargs):  # noqa: D102
        return self._own(super().create_client(*args, **kwargs))

    # -- parameters and the lifecycle's own diagnostics ---------------------------------
    def _check_request(self, params) -> tuple:
        """Check a parameter request as the node's state allows (module docstring)."""
        if self._configuring:  # configure's own declarations
            return None, None
        if self._state in CONFIGURED:
            return self._check_parameters(params)
        if requested_changes(params, PARAM_INDEX[self._kind]):
            return (f'{self.get_name()} is {self._state}: its parameters are read and checked '
                    'by configure, and change at runtime once it is configured'), None
        return None, None

    def _apply_request(self, plan) -> None:
        if plan is not None:
            self._apply_parameters(plan)

    def deliver(self, publisher, message) -> bool:
        """Publish; a sample the middleware refuses is reported, not raised out of the callback.

        Raised out of a callback, the refusal (:mod:`.delivery`) would end the node, and every
        effector's commands with it. Here it is an ERROR under ``outputs`` that names the topic
        (counter ``refused_publishes``), and the callback's other publishers still publish. After
        the context is shut down the error is raised as before (the runner ends the node).

        :param publisher: one of the node's publishers.
        :param message: the message or its serialized bytes.
        :return: whether the middleware took the sample.
        """
        text = refusal(publisher, message, self.context)
        if text is None:
            return True
        if self._diag is not None:
            self._diag.problem('refused_publishes', text, ERROR, 'outputs')
        else:
            self.get_logger().error(text, throttle_duration_sec=2.0)
        return False

    def _publish_idle_diagnostics(self) -> None:
        """Publish the summary and the lifecycle status while the node has no configuration."""
        if self._state in CONFIGURED:
            return  # the node's own diagnostics carry the lifecycle status
        conditions, per = {}, {}
        self._lifecycle_diagnostics(conditions, per)
        self.deliver(self._diag_pub, self._idle.build(self.get_clock().now().to_msg(), conditions,
                                                      {'lifecycle_state': self._state}, per))
