"""Runtime parameter changes of the distribution engine: checked first, then applied (no ROS).

:func:`plan` runs in the node's on-set callback: it raises on a change that does not fit
(the reason names the parameter) or would make the node less safe, and changes nothing;
:func:`adopt` runs in the post-set callback and applies what :func:`plan` checked.
"""
from wrench_distribution.config import build_core_objects
from wrench_distribution.config.safety import check_runtime_change
from wrench_distribution.config.settings import distribution_settings
from .internal_load import gains_from, prescription_from


def plan(engine, new: dict, touched: set, prescription_changed: bool) -> dict:
    """Check a parameter change without applying it.

    :param engine: the distribution engine.
    :param new: the full validated parameter set after the change.
    :param touched: the names changed.
    :param prescription_changed: whether the internal-load parameters changed.
    :return: what :func:`adopt` needs.
    :raises ValueError: when the change does not fit (message names the cause);
        :class:`~wrench_distribution.config.safety.UnsafeChangeError` when it would make
        the node less safe (a higher limit, a relaxed guard).
    """
    check_runtime_change(engine.cfg, new, touched)
    settings = distribution_settings(new)
    prescription = prescription_from(settings.prescription) if prescription_changed \
        else engine.internal.prescription
    options = None
    dist = engine.cache.distributor
    if 'torque_share' in touched:
        _, _, options = build_core_objects(new)
        if dist is not None:
            dist = engine.cache.try_options(options)
    lam = engine.internal.resolve(prescription, dist, settings.limits) \
        if dist is not None else None
    gains = gains_from(settings.feedback)
    if dist is not None:
        gains.per_element(len(dist.basis_names))  # raises naming the parameter
    return {'new': new, 'settings': settings, 'prescription': prescription, 'gains': gains,
            'options': options, 'dist': dist, 'lam': lam, 'il': prescription_changed}


def adopt(engine, plan: dict, mono_ns: int) -> None:
    """Apply a checked parameter change.

    :param engine: the distribution engine.
    :param plan: the result of :func:`plan`.
    :param mono_ns: steady time (bumpless switching of the feedback).
    """
    settings = plan['settings']
    if plan['options'] is not None:
        engine.cache.adopt_options(plan['options'], plan['dist'])
        if plan['dist'] is not None:
            engine.feedback.set_basis(plan['dist'].basis_names, mono_ns)
            engine.friction.feedback.contacts_changed(mono_ns)
    engine.limit.configure(settings.limits)
    prescription = plan['prescription']
    source = ('parameter' if prescription.kind != 'none' else 'none') if plan['il'] else None
    engine.internal.adopt(prescription, source, plan['dist'], plan['lam'])
    engine.feedback.set_gains(plan['gains'])
    engine.feedback.set_enabled(settings.feedback.enabled, mono_ns)
    engine.friction.set_feedback(settings.friction, mono_ns)
    engine.guard.configure(settings.input)
    engine.config.params = plan['new']
    engine.config.settings = engine.settings = settings
    engine.output.configure(settings.output)
