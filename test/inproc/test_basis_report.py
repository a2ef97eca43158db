"""A change of the internal-load basis is reported (in-process, no DDS)."""
from wrench_distribution.ros.diagnostics import DiagnosticsState, WARN


class Logger:
    """Collect log lines."""

    def __init__(self) -> None:
        self.lines = []

    def warning(self, text: str) -> None:
        """Record a warning."""
        self.lines.append(('warning', text))

    def error(self, text: str) -> None:
        """Record an error."""
        self.lines.append(('error', text))


def test_a_change_of_basis_names_is_a_counted_warning_of_the_contacts():
    logger = Logger()
    diag = DiagnosticsState('test', 'test', ('input', 'contacts', 'solver'), logger)
    diag.basis(['squeeze(a,b)', 'squeeze(a,c)'])
    diag.basis(['squeeze(a,b)', 'squeeze(a,c)'])  # same names: nothing to say
    assert diag.counters.get('basis_changes') is None and logger.lines == []
    diag.basis(['squeeze(a,b)', 'balanced_fx(c)'])
    assert diag.counters['basis_changes'] == 1
    assert logger.lines == [('warning', 'internal-load basis changed with the contacts: '
                                        'squeeze(a,b);squeeze(a,c) -> squeeze(a,b);balanced_fx(c)')]
    status = diag.build(None, {}, {}).status
    contacts = next(s for s in status if s.name.endswith('contacts'))
    assert contacts.level == bytes([WARN]) or contacts.level == WARN
    assert 'basis changed' in contacts.message
