"""Small input checks shared by the core: finite arrays of a given shape."""
from typing import Sequence, Tuple

import numpy as np

from .errors import InvalidInputError

#: Largest magnitude accepted for any input number: far beyond any physical wrench or length,
#: small enough that squares and products of inputs stay finite in float64.
MAX_MAGNITUDE = 1e100
#: Arrays up to this size are checked as Python floats (faster than two reductions).
_FEW = 64


def finite_array(value, shape: Tuple[int, ...], what: str) -> np.ndarray:
    """Convert ``value`` to a float array of exactly ``shape`` with finite entries.

    :param value: anything ``numpy.asarray`` accepts.
    :param shape: the required shape; ``-1`` matches any length on that axis.
    :param what: name used in the error message.
    :return: a float64 array (``value`` itself when it already is one: do not modify it).
    :raises InvalidInputError: on a wrong shape, a non-number, NaN or Inf, or a magnitude above
        :data:`MAX_MAGNITUDE`.
    """
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise InvalidInputError(f'{what} must be numbers, got {value!r}') from None
    if array.ndim != len(shape) or any(
        want not in (-1, got) for want, got in zip(shape, array.shape)
    ):
        expected = 'x'.join('n' if s == -1 else str(s) for s in shape) or 'a scalar'
        raise InvalidInputError(
            f'{what} must have shape {expected}, got {"x".join(map(str, array.shape)) or "a scalar"}'
        )
    if array.size:
        if array.size <= _FEW and array.ndim and all(
                -MAX_MAGNITUDE <= v <= MAX_MAGNITUDE for v in array.ravel().tolist()):
            return array                    # a few numbers: plain floats (NaN fails both comparisons)
        # one pass each: NaN propagates through max and min, Inf exceeds the bound
        largest = max(float(array.max()), -float(array.min()))
        if not largest <= MAX_MAGNITUDE:
            if not np.all(np.isfinite(array)):
                raise InvalidInputError(f'{what} contains NaN or Inf')
            raise InvalidInputError(f'{what} has a value of magnitude {largest:.3g}, '
                                    f'beyond the supported {MAX_MAGNITUDE:g}')
    return array


def finite_vector(value, length: int, what: str) -> np.ndarray:
    """Finite float vector of the given length.

    :param value: sequence of numbers.
    :param length: required number of entries.
    :param what: name used in the error message.
    :return: float64 array of shape ``(length,)``.
    """
    return finite_array(value, (length,), what)


def check_names(names: Sequence[str]) -> None:
    """Reject empty, non-string or duplicated contact names.

    :param names: the contact names in order.
    :raises InvalidInputError: naming the offending entry.
    """
    seen = set()
    for name in names:
        if not isinstance(name, str) or not name or any(c in name for c in '(),'):
            raise InvalidInputError(
                f'contact names must be non-empty strings without "(", ")" or ",", got {name!r}'
            )
        if name in seen:
            raise InvalidInputError(f'contact name {name!r} appears twice')
        seen.add(name)


def did_you_mean(name: str, known: Sequence[str]) -> str:
    """Return the accepted names closest to a misspelt one, as text (difflib), or ''.

    :param name: the unknown name.
    :param known: the accepted names.
    :return: ``did you mean 'options'?``, or '' when none is close.
    """
    import difflib
    close = difflib.get_close_matches(str(name), [str(k) for k in known], n=3, cutoff=0.6)
    return ('did you mean ' + ' or '.join(f"'{c}'" for c in close) + '?') if close else ''


def check_keys(mapping, known: Sequence[str], where: str) -> None:
    """Refuse a key a mapping of a document may not hold, with the nearest accepted ones.

    :param mapping: the mapping read from a document.
    :param known: the accepted keys.
    :param where: where the mapping is (``problem file``, ``"options"``, ``contacts[1]``).
    :raises InvalidInputError: naming each unknown key, what it may have meant and every
        accepted key.
    """
    unknown = sorted(str(k) for k in mapping if str(k) not in known)
    if unknown:
        hints = [f"'{u}'" + (f' ({hint})' if (hint := did_you_mean(u, known)) else '') for u in unknown]
        raise InvalidInputError(f'{where}: unknown key(s) {", ".join(hints)}; accepted: '
                                f'{", ".join(known)}')
