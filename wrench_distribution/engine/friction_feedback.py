"""Friction feedback: auto mode's margin tightened from the measured utilisation (no ROS).

Auto mode keeps the *commanded* contact forces at utilisation ``<= 1 - friction_margin``;
the forces felt differ, so the measured utilisation (the analyzer's friction topic) can
exceed that target. This loop raises the margin auto mode uses::

    u_k     = max measured utilisation over the contacts in contact
    e_k     = u_k - (1 - friction_margin)
    c_k     = clip(kp * e_k + I_k, 0, friction_feedback_limit)     (:class:`.feedback.PILoop`)
    margin' = friction_margin + c_k

The added load stays auto mode's :meth:`~wrench_distribution.core.friction.FrictionModel.
required_load` at ``margin'``: basis coordinates, so in ``N(G)`` (docs/theory.md, "Friction
feedback"). ``friction_margin + friction_feedback_limit <= 1 - UTILISATION_FLOOR`` (checked
with the parameters), so the utilisation auto mode aims at never drops below
:data:`~wrench_distribution.core.friction.UTILISATION_FLOOR`.

One scalar loop on the worst contact, not one per contact: the margin promises a bound on
every contact, which the worst one decides; and the squeeze added for one cone changes the
others, so per-contact loops would fight through one shared load.
"""
from typing import Optional, Sequence

import numpy as np

from wrench_distribution.config.settings import GainSettings
from wrench_distribution.core.codec import split_labels
from wrench_distribution.core.friction import FRICTION_FIELDS, STATUSES, UTILISATION_FLOOR
from .feedback import FeedbackGains, PILoop

#: Status codes of a contact in contact: its utilisation counts.
IN_CONTACT = tuple(STATUSES.index(s) for s in ('ok', 'near_limit', 'slipping'))


def friction_gains(settings: GainSettings) -> FeedbackGains:
    """Return the friction feedback's gains.

    :param settings: the friction feedback's settings (``FrictionSettings.feedback``).
    :return: gains; the correction (a margin increase) stays in [0, friction_feedback_limit].
    """
    return FeedbackGains(list(settings.kp), list(settings.ki), settings.integral_limit,
                         settings.correction_limit, settings.timeout_ns, lowest=0.0,
                         gain_names=('friction_feedback_kp', 'friction_feedback_ki'))


class FrictionFeedback(PILoop):
    """PI loop from the measured friction utilisation to auto mode's margin (module docstring).

    :param gains: gains and limits (:func:`friction_gains`).
    :param margin: the configured ``friction_margin``.
    :param effectors: effector names, the labels a measurement must carry.
    :param enabled: whether the loop starts closed.
    """

    what = 'measured friction utilisation'
    prefix = 'friction_feedback'
    limit_name = 'friction_feedback_limit'
    #: one-sided range: a large utilisation at switch-on (bumpless seed ``I = -kp * e``) or
    #: a long stretch under target must not hold the margin at ``friction_margin`` later
    tracking = True

    def __init__(self, gains: FeedbackGains, margin: float, effectors: Sequence[str],
                 enabled: bool = False) -> None:
        super().__init__(gains, enabled)
        self.margin = float(margin)
        self.effectors = list(effectors)
        self.set_basis(self.effectors, 0, size=1)
        self._wait_ns = None  # no staleness before the first contacts (as the other loop)

    @property
    def target(self) -> float:
        """Return the utilisation the margin promises, ``1 - friction_margin``."""
        return 1.0 - self.margin

    def contacts_changed(self, now_ns: int) -> None:
        """Wait for a measurement taken in the new geometry (the correction is kept).

        :param now_ns: steady time of the change.
        """
        self.set_basis(self.effectors, now_ns, size=1)

    def measure(self, labels: Optional[Sequence[str]], values: np.ndarray, now_ns: int,
                saturated: bool = False, clock_ns: int = 0) -> Optional[str]:
        """Take one friction message and update the correction.

        :param labels: the layout's dimension labels, ``[effectors, fields]`` (None: none).
        :param values: the data, rows ``[utilisation, normal force, status code]``.
        :param now_ns: steady receive time.
        :param saturated: True when a command limit cut the added load back.
        :param clock_ns: the control clock (0: unknown, the steady time is used).
        :return: None, or why the message was refused (counted, the loop suspended).
        """
        why = self._refusal(labels, values)
        if why is not None:
            return why
        rows = np.asarray(values, float).reshape(len(self.effectors), 3)
        touching = np.isin(rows[:, 2], IN_CONTACT) & (rows[:, 0] >= 0.0)
        if not touching.any():
            return self._refuse('no contact in contact in the measured friction state '
                                '(every utilisation undefined, pulling or unloaded)',
                                'suspended_no_contact')
        worst = float(rows[touching, 0].max())
        self.update(np.array([worst]), np.array([worst - self.target]), now_ns, saturated,
                    clock_ns)
        return None

    def _refusal(self, labels, values: np.ndarray) -> Optional[str]:
        """Why a message cannot be used (labels checked, never the position alone), or None."""
        expected = f'[{";".join(self.effectors)}] x [{FRICTION_FIELDS}]'
        if not labels or len(labels) != 2:
            return self._refuse('measured friction has no two layout labels (effectors, fields); '
                                f'expected {expected}', 'rejected_labels')
        if split_labels(labels[0]) != self.effectors or labels[1] != FRICTION_FIELDS:
            return self._refuse(f'measured friction is labelled [{labels[0]}] x [{labels[1]}]; '
                                f'expected {expected}', 'rejected_labels')
        if values.shape != (3 * len(self.effectors),) or not np.all(np.isfinite(values)):
            return self._refuse('measured friction has NaN, Inf or a wrong length',
                                'rejected_values')
        return None

    def effective_margin(self, now_ns: int) -> float:
        """Return the margin auto mode uses now: ``friction_margin`` plus the correction.

        :param now_ns: steady time (staleness; the release ramp after switching off).
        :return: the margin, never above ``1 - UTILISATION_FLOOR``.
        """
        if not self.active:
            return self.margin
        correction = float(self.current(now_ns)[0])
        return min(self.margin + max(correction, 0.0), 1.0 - UTILISATION_FLOOR)

    def values(self, now_ns: int) -> dict:
        """Diagnostic key/values: state, measured utilisation, target, effective margin.

        :param now_ns: steady time.
        :return: the key/values.
        """
        measured = '-' if self.measured is None else f'{self.measured[0]:.3f}'
        return {'friction_feedback': self.status(),
                'friction_feedback.measured_max_utilisation': measured,
                'friction_feedback.target_utilisation': f'{self.target:.3f}',
                'friction_feedback.effective_margin': f'{self.effective_margin(now_ns):.4f}'}
