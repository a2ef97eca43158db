"""User-facing errors of the bag tools."""
from __future__ import annotations


class BagError(Exception):
    """A problem with the bag or the configuration that the user can fix.

    The message is one readable line; the command prints it as ``error: ...`` and
    exits with status 2.
    """
