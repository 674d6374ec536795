"""Helpers shared by the subcommands: JSON in, JSON out."""

import json
import math
import sys

from nova_cacheaware import exception


def _reject_constant(name):
    raise ValueError('%s is not allowed in JSON input' % name)


def load_json_input(path):
    """Read a JSON document from ``path`` (``-`` is standard input).

    NaN and Infinity are refused. Raises :class:`InvalidInput` with one line
    naming the file and the problem.
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
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except ValueError as e:
        raise exception.InvalidInput(
            reason='%s: not valid JSON (%s)' % (name, e)) from None


def dump_json(doc, stream=None):
    """Write ``doc`` as indented, key-sorted JSON and a newline."""
    stream = stream or sys.stdout
    json.dump(doc, stream, indent=2, sort_keys=True, allow_nan=False)
    stream.write('\n')


def is_finite_number(value):
    """True for an int or float that is finite (not bool, NaN or inf)."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))
