"""Publishing when the middleware may refuse a sample.

rclpy raises its ``RCLError`` (a ``RuntimeError``) when the middleware refuses a sample: Fast DDS
gives up on a reliable writer whose history stays full past its blocking time, as when a
subscriber's process is stopped and started again (ros2/rclcpp#827). Raised out of a callback or
a loop, it ends the process. :func:`refusal` turns it into a message while the context is ok;
the managed nodes report it in their diagnostics (:meth:`.managed.ManagedNode.deliver`), the
nodes without diagnostics (the simulator's, the bag player) count and log it
(:class:`RefusedSamples`).
"""
from typing import Dict, Optional


def refusal(publisher, message, context) -> Optional[str]:
    """Publish ``message``; say why the middleware refused it, or None when it took it.

    :param publisher: an rclpy publisher.
    :param message: the message or its serialized bytes.
    :param context: the publisher's node's context.
    :return: ``'<topic>: the middleware refused the sample (<rclpy's reason>)'``, or None.
    :raises RuntimeError: the refusal, once ``context`` is shut down (the process is ending).
    """
    try:
        publisher.publish(message)
        return None
    except RuntimeError as error:  # rclpy's RCLError
        if not context.ok():
            raise
        return f'{publisher.topic_name}: the middleware refused the sample ({str(error).split(",")[0]})'


class RefusedSamples:
    """Publishes for a node without diagnostics: a refused sample is counted per topic and logged.

    :param node: the node (its context and logger).
    """

    def __init__(self, node) -> None:
        self._node = node
        #: Refused samples per topic.
        self.counts: Dict[str, int] = {}

    def publish(self, publisher, message) -> bool:
        """Publish ``message`` (:func:`refusal`); a refusal is logged as an ERROR (throttled).

        :param publisher: one of the node's publishers.
        :param message: the message or its serialized bytes.
        :return: whether the middleware took the sample.
        """
        text = refusal(publisher, message, self._node.context)
        if text is None:
            return True
        topic = publisher.topic_name
        self.counts[topic] = self.counts.get(topic, 0) + 1
        self._node.get_logger().error(f'{text}; {self.counts[topic]} refused on {topic} so far',
                                      throttle_duration_sec=2.0)
        return False

    @property
    def total(self) -> int:
        """Return the number of samples refused on every topic."""
        return sum(self.counts.values())

    def summary(self) -> str:
        """Return ``'<total> samples refused by the middleware: <topic> (<count>), ...'``."""
        return f'{self.total} samples refused by the middleware: ' + ', '.join(
            f'{topic} ({count})' for topic, count in sorted(self.counts.items()))
