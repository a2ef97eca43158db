"""The analyzer's diagnostics and runtime parameters, read off its analysis engine (no ROS).

:func:`report` gives the node, in one call, every condition and value the engine knows of
(contacts, orientation, the F/T streams' ages, the solver's regime, friction); the node adds
its own (its inputs, the clock, the tare and calibration services). :func:`plan` checks a
parameter change without applying it, :func:`adopt` applies it.
"""
from typing import Optional

from wrench_distribution.config import load_analyzer_config
from wrench_distribution.config.settings import FrictionSettings
from .friction import FrictionStage
from .outcome import Report
from .sensing import TareWindow
from .status import ERROR, regime_word, STALE, WARN

#: The analyzer's diagnostic concerns, one status each, in order.
CONCERNS = ('input', 'contacts', 'sensing', 'solver', 'clock', 'friction')


def friction_stage(settings: Optional[FrictionSettings]) -> Optional[FrictionStage]:
    """Return the analyzer's friction stage (check mode), or None without settings."""
    return None if settings is None else FrictionStage(settings, 'check')


def _streams(engine, now_ns: int, cond: dict, values: dict) -> None:
    """Report the F/T streams: which sent nothing yet, each one's age, the stale ones."""
    missing = [n for n, s in zip(engine.names, engine.last_stamp_ns) if s is None]
    if missing:
        cond['input'].append((WARN, 'no F/T data yet from: ' + ', '.join(missing)))
    max_age_ns = engine.sync.max_age_ns
    stale = []
    for name, s in zip(engine.names, engine.last_stamp_ns):
        if s is None:
            continue
        values[f'age_s.{name}'] = f'{(now_ns - s) * 1e-9:.4f}'
        if max_age_ns > 0 and now_ns - s > max_age_ns:
            stale.append(name)
    if stale:
        cond['input'].append((STALE, 'stale F/T stream(s): ' + ', '.join(stale)
                              + f' (older than max_age={max_age_ns * 1e-9:g} s)'))


def report(engine, now_ns: int) -> Report:
    """Everything the analyzer's diagnostics show of its engine.

    :param engine: the analysis engine.
    :param now_ns: node clock now (the streams' ages).
    :return: values, per-concern values (``sensing``), conditions over :data:`CONCERNS`.
    """
    cond: dict = {c: [] for c in CONCERNS}
    values: dict = {}
    if engine.contact_problem is not None:
        cond['contacts'].append((ERROR, engine.contact_problem))
    if engine.orientation_problem is not None:
        cond['sensing'].append((ERROR, engine.orientation_problem))
    _streams(engine, now_ns, cond, values)
    if engine.last_out_ns is not None:
        values['last_output_stamp_s'] = f'{engine.last_out_ns * 1e-9:.6f}'
    dist = engine.cache.distributor
    if dist is not None:
        values['regime'] = dist.regime.name
        values['regime_reasons'] = ', '.join(dist.regime.reasons)
        values['regime_message'] = regime_word(dist.regime)
        values['basis'] = ';'.join(dist.basis_names)
    friction = engine.friction
    if friction is not None:
        found = friction.condition() if friction.active else None
        if found is not None:
            cond['friction'].append(found)
        values.update(friction.values())
    sensing = engine.sensing.values(engine.names)
    sensing['samples_without_orientation'] = str(engine.no_orientation)
    return Report(values, {'sensing': sensing}, cond, {})


def plan(engine, new: dict, touched: set) -> tuple:
    """Check a parameter change without applying it.

    :param engine: the analysis engine.
    :param new: the full parameter set after the change.
    :param touched: the names changed.
    :return: what :func:`adopt` needs.
    :raises ValueError: when the change does not fit (the message names the cause).
    """
    typed = load_analyzer_config(new)
    dist = None
    if 'torque_share' in touched and engine.cache.distributor is not None:
        dist = engine.cache.try_options(typed.options)
    return typed, ('torque_share' in touched), dist


def adopt(engine, plan: tuple) -> bool:
    """Apply a checked parameter change.

    :param engine: the analysis engine.
    :param plan: the result of :func:`plan`.
    :return: whether the tare window was resized (a calibration's capture follows it).
    """
    typed, options_changed, dist = plan
    if options_changed:
        engine.adopt_options(typed.options, dist)
    engine.config.params = typed.params
    engine.config.settings = s = typed.settings
    engine.set_limits(typed.sync_tolerance, typed.max_age, s.max_future_ns * 1e-9,
                      typed.contact_timeout)
    engine.set_biases(s.sensor_biases)
    window = engine.tare_window
    if window is not None and window.size == s.tare_samples:
        return False
    engine.record_tare(TareWindow(s.tare_samples))
    return True
