"""Diagnostic levels shared by the engines and the nodes (no ROS import).

The values are those of ``diagnostic_msgs/DiagnosticStatus`` (OK 0, WARN 1, ERROR 2,
STALE 3), so an engine can say how bad a condition is and a node publishes it as is.
"""
OK = 0
WARN = 1
ERROR = 2
STALE = 3


def regime_word(regime) -> str:
    """Say in words what a solver regime means, for the ``regime_message`` diagnostics value.

    ``extension`` is no fault: the paper's closed form does not apply to this grasp (two
    contacts are always collinear, a centre of mass off their line, ...), and the package's
    documented continuation of it does (docs/theory.md, section 4.3).

    :param regime: the core ``Regime`` (``name``, ``reasons``, ``message``).
    :return: one line.
    """
    if regime.name == 'paper':
        return "paper: the paper's closed form applies (eqs. 64, 81)"
    return ("extension (not a fault: the paper's formulas do not apply to this grasp, so their "
            'documented continuation does, docs/theory.md section 4.3): ' + regime.message)
