"""Drive a node in this process through its topics: callbacks called directly, no waiting.

:class:`InProcessNode` builds a node in its own rclpy ``Context`` with parameter overrides,
replaces the ``publish`` of every publisher the node created with a recorder (the messages
are kept, by topic name, as serialised snapshots, so a node that reuses its message objects
cannot change what was recorded), delivers a message to a topic by calling the callbacks of
the node's subscriptions on that topic, and fires timers (the diagnostics timer, the
watchdog) by calling their callbacks. :meth:`InProcessNode.refuse` makes a topic's publish
raise as rclpy does when the middleware refuses a sample (Fast DDS's refusal cannot be
provoked on demand). Nothing spins and nothing is sent over DDS, so a test
runs in milliseconds.

Only public rclpy API is used, all of it present from Humble on: ``Node.publishers``,
``Node.subscriptions``, ``Node.timers``, ``Publisher.topic_name``, ``Publisher.msg_type``,
``Subscription.topic_name``, ``Subscription.callback``, ``Timer.callback``,
``Timer.timer_period_ns``, ``rclpy.serialization`` and ``rclpy.expand_topic_name``; where an
rclpy lacks ``Node.resolve_topic_name`` (Humble) or a ``topic_name`` property, the name is
expanded from the entity's ``topic`` attribute.
"""
from contextlib import contextmanager
import gc
import os
from typing import Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Set

import rclpy
from rclpy.context import Context
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.serialization import deserialize_message, serialize_message

from ros_harness import domain_id_for
from wrench_distribution.config.schema import ParamSpec
from wrench_distribution.ros.parameters import typed_parameter

#: What rclpy's publish raises on a sample the middleware refuses (:meth:`InProcessNode.refuse`).
REFUSAL = 'Failed to publish: cannot publish data, at ./src/rmw_publish.cpp:68, at ./src/rcl/publisher.c:285'


@contextmanager
def ros_context(offset: int = 0) -> Iterator[Context]:
    """Yield an initialised rclpy context of its own (loopback discovery, this run's domain).

    The node's DDS participant exists, but no message goes through it: the helper never
    spins and the recorders replace sending.

    :param offset: added to the run's base domain id (:func:`ros_harness.domain_id_for`).
    :return: the context (shut down on exit).
    """
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    os.environ.setdefault('ROS_LOCALHOST_ONLY', '1')
    ctx = Context()
    rclpy.init(context=ctx, domain_id=domain_id_for(offset=offset))
    try:
        yield ctx
    finally:
        finalize_garbage_nodes()
        rclpy.try_shutdown(context=ctx)


def finalize_garbage_nodes() -> None:
    """Collect the nodes left unreferenced (a constructor that raised) while their context lives.

    Such a half-built node is a reference cycle: the collector finalizes it whenever it runs.
    Finalized after its context was shut down, its rmw node takes the DDS participant down,
    and Fast DDS waits for its listener forever (a suite's worker spun 17 minutes in a later,
    unrelated test). Collected here, it goes as ``destroy_node`` would.
    """
    gc.collect()


def typed(spec: ParamSpec, value: object) -> Parameter:
    """Return a ``Parameter`` of the schema's declared type (integers given for doubles converted).

    :param spec: the parameter's spec.
    :param value: the Python value.
    :return: the parameter.
    :raises ValueError: when the value does not convert (e.g. a string for a double).
    """
    if spec.type == 'double':
        value = float(value)
    elif spec.type == 'double_array':
        value = [float(v) for v in value]
    return typed_parameter(spec, value)


def overrides(params: Mapping[str, object], specs: Sequence[ParamSpec] = ()) -> List[Parameter]:
    """Convert parameter values to typed ones for ``parameter_overrides``, with :func:`typed`.

    ``{'torque_share': 1}`` would otherwise arrive as an integer where a double is declared.
    rclpy passes an empty override as a byte array whatever its declared type, so an empty
    array whose default is empty too is left out (the node declares it empty). Names not in
    ``specs`` keep rclpy's inferred type.

    :param params: name -> Python value.
    :param specs: the node's parameter schema.
    :return: the ``Parameter`` list.
    """
    by_name = {s.name: s for s in specs}
    out = []
    for name, value in params.items():
        spec = by_name.get(name)
        if spec is None:
            out.append(Parameter(name, value=value))
        elif not (isinstance(value, (list, tuple)) and not value and spec.default == []):
            out.append(typed(spec, value))
    return out


def _observed(count: Callable[[], int]) -> Callable[[], int]:
    """Return a publisher's subscription count with the recorder counted (it reads every topic)."""
    return lambda: max(1, count())


class InProcessNode:
    """A node driven through its topic interface without spinning.

    :param factory: the node class (or any callable taking rclpy ``Node`` keyword arguments).
    :param context: an initialised context (:func:`ros_context`).
    :param params: parameter overrides, name -> value.
    :param specs: the node's parameter schema, to type ``params``.
    :param send: also send what the node publishes (default: only record it).
    :raises: whatever the node's constructor raises (e.g. ``ConfigError``).
    """

    def __init__(self, factory: Callable[..., Node], context: Context,
                 params: Optional[Mapping[str, object]] = None, specs: Sequence[ParamSpec] = (),
                 send: bool = False) -> None:
        self.specs = list(specs)
        self.node = factory(context=context, parameter_overrides=overrides(params or {}, specs),
                            start_parameter_services=False)
        self._records: Dict[str, list] = {}
        self._refused: Set[str] = set()  # topics whose publish raises (:meth:`refuse`)
        for pub in self.node.publishers:
            self._records[self.topic_of(pub)] = []
            pub.publish = self._recorder(pub, send)
            pub.get_subscription_count = _observed(pub.get_subscription_count)

    def topic_of(self, entity) -> str:
        """Return the resolved topic name of one of the node's publishers or subscriptions.

        :param entity: an rclpy ``Publisher`` or ``Subscription``.
        :return: its ``topic_name`` (resolved from ``topic`` where an rclpy lacks the property).
        """
        name = getattr(entity, 'topic_name', None)
        return name if name is not None else self.resolve(entity.topic)

    def _recorder(self, pub, send: bool) -> Callable:
        topic = self.topic_of(pub)
        record = self._records[topic]
        publish = pub.publish
        msg_type = pub.msg_type

        def recorded(msg) -> None:
            if topic in self._refused:  # rclpy's RCLError is a RuntimeError
                raise RuntimeError(REFUSAL)
            if isinstance(msg, bytes):  # a raw publish: recorded as rclpy's deserializer reads it
                record.append(deserialize_message(msg, msg_type))
            elif not isinstance(msg, msg_type):  # what rclpy's publish would refuse
                raise TypeError(f'{topic}: expected {msg_type} or bytes, got {type(msg)}')
            else:
                record.append(deserialize_message(serialize_message(msg), msg_type))
            if send:
                publish(msg)
        return recorded

    def refuse(self, topic: str, refused: bool = True) -> None:
        """Make the publish on a topic raise as rclpy's does on a sample the middleware refuses.

        :param topic: topic name (resolved with :meth:`resolve`).
        :param refused: False: publish again.
        """
        name = self.resolve(topic)
        self.published(name)  # the node publishes there (KeyError otherwise)
        if refused:
            self._refused.add(name)
        else:
            self._refused.discard(name)

    def resolve(self, topic: str) -> str:
        """Return the fully qualified name of a topic as this node sees it.

        :param topic: relative, absolute or private (``~/x``) name.
        :return: e.g. ``/left/wrench_command``.
        """
        if hasattr(self.node, 'resolve_topic_name'):  # rclpy >= Iron
            return self.node.resolve_topic_name(topic)
        from rclpy.expand_topic_name import expand_topic_name
        return expand_topic_name(topic, self.node.get_name(), self.node.get_namespace())

    def deliver(self, topic: str, msg) -> int:
        """Hand a message to every subscription of the node on a topic, as the executor would.

        :param topic: topic name (resolved with :meth:`resolve`).
        :param msg: the message, or its serialized bytes (a raw subscription takes them as
            they are; one that is not raw gets them deserialized).
        :return: the number of callbacks called.
        :raises KeyError: when the node has no subscription on the topic (names the ones it has).
        """
        name = self.resolve(topic)
        subs = [s for s in self.node.subscriptions if self.topic_of(s) == name]
        if not subs:
            raise KeyError(f'{name}: the node subscribes to '
                           f'{sorted(self.topic_of(s) for s in self.node.subscriptions)}')
        for sub in subs:  # what rclpy hands a raw subscription: the CDR bytes
            if sub.raw:
                sub.callback(msg if isinstance(msg, bytes) else serialize_message(msg))
            else:
                sub.callback(deserialize_message(msg, sub.msg_type) if isinstance(msg, bytes)
                             else msg)
        return len(subs)

    def published(self, topic: str) -> list:
        """Return the messages the node published on a topic, oldest first.

        :param topic: topic name (resolved with :meth:`resolve`).
        :return: the recorded messages (the live list; :meth:`clear` empties it).
        :raises KeyError: when the node has no publisher on the topic.
        """
        name = self.resolve(topic)
        if name not in self._records:
            raise KeyError(f'{name}: the node publishes on {sorted(self._records)}')
        return self._records[name]

    def last(self, topic: str):
        """Return the latest message on a topic, or None.

        :param topic: topic name.
        :return: the message or None.
        """
        got = self.published(topic)
        return got[-1] if got else None

    def clear(self) -> None:
        """Forget every recorded message."""
        for record in self._records.values():
            record.clear()

    def fire_timers(self, period_s: Optional[float] = None) -> int:
        """Call the callbacks of the node's timers, as if each had come due once.

        :param period_s: only the timers of this period (None: every timer).
        :return: the number of callbacks called.
        """
        n = 0
        for timer in list(self.node.timers):
            if period_s is None or abs(timer.timer_period_ns - period_s * 1e9) < 1.0:
                timer.callback()
                n += 1
        return n

    def set_parameters(self, **values) -> list:
        """Set parameters as a ``ros2 param set`` would (the node's callbacks run).

        :param values: name -> value (typed with :func:`typed` where the value converts, else
            as rclpy infers it, so a wrongly typed value reaches the node as such).
        :return: one ``SetParametersResult`` per parameter.
        """
        by_name = {s.name: s for s in self.specs}
        params = []
        for name, value in values.items():
            try:
                params.append(typed(by_name[name], value))
            except (KeyError, TypeError, ValueError):
                params.append(Parameter(name, value=value))
        return self.node.set_parameters(params)

    def close(self) -> None:
        """Destroy the node."""
        self.node.destroy_node()

    def __enter__(self) -> 'InProcessNode':
        return self

    def __exit__(self, *exc) -> None:
        self.close()
