"""ROS 2 adapters of the pure core: messages, QoS, diagnostics, parameters, tf2 (optional).

Importing this package needs rclpy and the message packages; the core does not.
"""
