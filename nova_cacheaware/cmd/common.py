"""Helpers shared by the subcommands: JSON in, JSON out.

Every document a subcommand reads goes through :func:`load_json_input`,
which refuses what no input of ours can legitimately hold, before any
subcommand looks at it: NaN and Infinity, numbers whose magnitude is beyond
:data:`MAX_JSON_NUMBER` (``1e308`` would overflow the first multiplication),
and nesting deeper than :data:`MAX_JSON_DEPTH` (the parser would otherwise
end in a ``RecursionError``). Each subcommand's own validation then checks
the meaning of every field.
"""

import json
import math
import sys

from nova_cacheaware import exception

#: The largest magnitude a number in a JSON input may have: 2**53, up to
#: which every integer is exact as a float too. MiB, CPU ids, seconds and
#: ratios of a real host are all far below it.
MAX_JSON_NUMBER = 2 ** 53
#: The deepest nesting of arrays and objects a JSON input may have. Our
#: documents are at most about 6 levels deep (an agent dump included).
MAX_JSON_DEPTH = 64


class _Refused(ValueError):
    """A JSON value the loader refuses (raised from the parser hooks)."""


def _reject_constant(name):
    raise _Refused('%s is not allowed in JSON input' % name)


def _bounded(text, value):
    if not (math.isfinite(value) and abs(value) <= MAX_JSON_NUMBER):
        raise _Refused('number %s is out of range (magnitude above %d)'
                       % (text[:20] + ('...' if len(text) > 20 else ''),
                          MAX_JSON_NUMBER))
    return value


def _parse_float(text):
    return _bounded(text, float(text))


def _parse_int(text):
    # Python limits int() to 4300 digits; anything that long is refused
    # by the magnitude check anyway, so test the length first.
    if len(text.lstrip('-')) > 17:
        return _bounded(text, math.inf)
    return _bounded(text, int(text))


def nesting_depth(doc):
    """How deeply arrays and objects nest in ``doc`` (a scalar is 0).

    Iterative, so no document can exhaust the interpreter's stack here.
    """
    deepest = 0
    stack = [(doc, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children)
    return deepest


def parse_json(text, name='input'):
    """Parse ``text`` as a bounded JSON document (see the module docstring).

    Raises :class:`InvalidInput` with one line naming ``name`` and the
    problem.
    """
    try:
        doc = json.loads(text, parse_constant=_reject_constant,
                         parse_float=_parse_float, parse_int=_parse_int)
    except _Refused as e:
        raise exception.InvalidInput(reason='%s: %s' % (name, e)) from None
    except RecursionError:
        raise exception.InvalidInput(
            reason='%s: JSON nested more than %d levels deep'
                   % (name, MAX_JSON_DEPTH)) from None
    except ValueError as e:
        raise exception.InvalidInput(
            reason='%s: not valid JSON (%s)' % (name, e)) from None
    if nesting_depth(doc) > MAX_JSON_DEPTH:
        raise exception.InvalidInput(
            reason='%s: JSON nested more than %d levels deep'
                   % (name, MAX_JSON_DEPTH))
    return doc


def load_json_input(path):
    """Read a bounded JSON document from ``path`` (``-``: standard input).

    Raises :class:`InvalidInput` with one line naming the file and the
    problem (see :func:`parse_json` for what is refused).
    """
    name = 'standard input' if path == '-' else path
    try:
        if path == '-':
            text = sys.stdin.read()
        else:
            with open(path) as f:
                text = f.read()
    except OSError as e:
        raise exception.InvalidInput(
            reason='%s: %s' % (name, e.strerror or e)) from None
    except UnicodeDecodeError:
        raise exception.InvalidInput(
            reason='%s: not UTF-8 text' % name) from None
    return parse_json(text, name)


class ResultOutOfRange(exception.CacheAwareError):
    """A result holds a number JSON cannot carry (an input too large)."""

    msg_fmt = ('the result holds a non-finite number; an input value is '
               'too large (%(reason)s)')


def dump_json(doc, stream=None):
    """Write ``doc`` as indented, key-sorted JSON and a newline.

    The document is rendered whole before anything is written, so a
    failure never leaves partial JSON behind.
    """
    stream = stream or sys.stdout
    try:
        text = json.dumps(doc, indent=2, sort_keys=True, allow_nan=False)
    except ValueError as e:
        raise ResultOutOfRange(reason=str(e)) from None
    stream.write(text + '\n')


def is_finite_number(value):
    """True for an int or float that is finite (not bool, NaN or inf)."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))
