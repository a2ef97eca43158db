"""Diagnostic levels shared by the engines and the nodes (no ROS import).

The values are those of ``diagnostic_msgs/DiagnosticStatus`` (OK 0, WARN 1, ERROR 2,
STALE 3), so an engine can say how bad a condition is and a node publishes it as is.
"""
OK = 0
WARN = 1
ERROR = 2
STALE = 3
