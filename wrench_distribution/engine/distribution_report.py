"""What the distributor's diagnostics show of its engine: values and conditions per concern (no ROS).

Read off the engine's parts (:class:`~.distribution.DistributionEngine`) on the diagnostics
timer, never on the desired wrench's path.
"""
from wrench_distribution.core.codec import format_numbers
from .status import ERROR, regime_word, WARN

#: The distributor's diagnostic concerns, one status each, in order.
CONCERNS = ('input', 'contacts', 'internal load', 'solver', 'limits', 'clock', 'friction',
            'feedback', 'outputs')


def values(engine, mono_ns: int) -> tuple:
    """Key/values of the summary status and per concern.

    :param engine: the distribution engine.
    :param mono_ns: steady time (input age).
    :return: ``(values, per-concern values)``.
    """
    internal, settings = engine.internal, engine.settings
    out = engine.guard.values(mono_ns)
    out.update({'internal_load_prescription': internal.prescription.describe(),
                'internal_load_source': internal.source, 'on_limit': engine.limits.policy})
    dist = engine.cache.distributor
    if dist is not None:
        out['regime'] = dist.regime.name
        out['regime_reasons'] = ', '.join(dist.regime.reasons)
        out['regime_message'] = regime_word(dist.regime)
        out['basis'] = ';'.join(dist.basis_names)
        out['virtual_masses'] = format_numbers(dist.virtual_masses)
        if internal.lam is not None:
            out['internal_load'] = format_numbers(internal.lam)
    per = {'limits': engine.limit.values(settings.opt_in, settings.defaults_in_force),
           'internal load': {'source': internal.source,
                             'prescription': internal.prescription.describe()},
           'feedback': internal.feedback_values(engine.commanded())}
    out.update(engine.friction.values(mono_ns))
    out.update(engine.weight.values())
    return out, per


def conditions(engine, mono_ns: int) -> dict:
    """Return the engine's persistent conditions per concern (the node adds its own).

    :param engine: the distribution engine.
    :param mono_ns: steady time (the feedback's staleness is checked here too, so a
        missing measurement shows without any desired wrench).
    :return: ``{concern: [(level, message)]}`` over :data:`CONCERNS`.
    """
    cond: dict = {c: [] for c in CONCERNS}
    if engine.lam_error:
        cond['internal load'].append((ERROR, engine.lam_error))
    cond['input'].extend(engine.guard.conditions())
    settings = engine.settings
    cond['limits'].extend(engine.limit.conditions(settings.opt_in, settings.defaults_in_force))
    friction = engine.friction
    found = friction.condition() if friction.active else None
    if found is not None:
        cond['friction'].append(found)
    found = friction.feedback_condition(mono_ns)
    if found is not None:
        cond['friction'].append(found)
    feedback = engine.feedback
    feedback.current(mono_ns)
    if feedback.enabled and feedback.status() != 'closed loop':
        cond['feedback'].append((WARN, f'internal-load feedback {feedback.status()}'))
    return cond
