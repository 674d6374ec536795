"""Declared schemas for the JSON documents that cross process boundaries.

A document's shape is written once, as data (:class:`Obj` of fields), and
checked by one walker that stops at the first problem with a one-line
message naming where it is: ``VM 'a': "memory_mib" must be an integer
(1.5)``. The checks repeated by hand before (a bool is not an int, finite
numbers, CPU ids within :mod:`.limits`, unknown keys) live here once.

Why not ``jsonschema``: it is not a requirement of this package (only a
transitive one of Nova's), its error messages are multi-part and would
change the one-line messages the CLI tests pin, and the scheduler parses
a host's ``vcpu_affinity`` (thousands of CPU lists) per live-state
message, which a generic validator walks far more slowly than
:class:`CpuList`'s memoised check. Cross-field rules (``min_mib <=
max_mib``) stay in the caller, after the shape is known to be right.

Leaf module: standard library and :mod:`.limits` only.
"""

import contextlib
import math
import sys

from nova_cacheaware.contracts import limits

#: A field's default when it must be present.
REQUIRED = object()


#: A field's default when an absent key is checked as ``null``: the
#: field's own message then says what the value must be.
AS_NULL = object()


class SchemaError(ValueError):
    """A document does not fit its schema: ``where`` and ``what``.

    ``line``: the whole message where a document words it its own way.
    """

    def __init__(self, where, what, line=None):
        if line is None:
            line = '%s: %s' % (where, what) if where else what
        super().__init__(line)
        self.where = where
        self.what = what


@contextlib.contextmanager
def reraise(make):
    """Raise ``make(message)`` for a :class:`SchemaError` raised inside."""
    try:
        yield
    except SchemaError as e:
        raise make(str(e)) from None


def is_number(value):
    """True for a finite int or float (not a bool)."""
    if isinstance(value, bool):
        return False
    # An int of any size is finite (math.isfinite would overflow on it).
    return isinstance(value, int) or (isinstance(value, float)
                                      and math.isfinite(value))


class Number:
    """A finite number (not a bool) in ``minimum .. maximum``.

    ``integer``: an int only. Messages name the key in quotes, as the CLI
    inputs' messages always did.
    """

    def __init__(self, minimum=0, maximum=None, integer=False):
        self.minimum = minimum
        self.maximum = maximum
        self.integer = integer

    def check(self, value, key, where):
        """``value`` if it fits, else :class:`SchemaError`."""
        if not is_number(value):
            raise SchemaError(where, '"%s" must be a finite number, not %r'
                              % (key, value))
        if self.minimum is not None and value < self.minimum:
            if self.minimum == 0:
                raise SchemaError(where, '"%s" must not be negative (%r)'
                                  % (key, value))
            raise SchemaError(where, '"%s" must be at least %r (%r)'
                              % (key, self.minimum, value))
        if self.maximum is not None and value > self.maximum:
            raise SchemaError(where, '"%s" must be between %r and %r (%r)'
                              % (key, self.minimum, self.maximum, value))
        if self.integer and not isinstance(value, int):
            raise SchemaError(where, '"%s" must be an integer (%r)'
                              % (key, value))
        return value


#: A number in 0..1.
RATIO = Number(0, 1)
#: A non-negative int.
COUNT = Number(0, integer=True)
#: A non-negative finite number.
AMOUNT = Number(0)


class Text:
    """A non-empty string."""

    def check(self, value, key, where):
        """``value`` if it is a non-empty string."""
        if not isinstance(value, str) or not value:
            raise SchemaError(where, '"%s" must be a non-empty string' % key)
        return value


class OneOf:
    """One of fixed ``choices``; ``expected`` says them in the message."""

    def __init__(self, choices, expected):
        self.choices = tuple(choices)
        self.expected = expected

    def check(self, value, key, where):
        """``value`` if it is one of the choices."""
        if value not in self.choices:
            raise SchemaError(where, 'unknown "%s" %r (expected %s)'
                              % (key, value, self.expected))
        return value


class Check:
    """A field that passes ``test(value)``; else ``message``, the whole line.

    ``message`` is %-formatted with ``where``, ``key`` and ``value``, so a
    document keeps its own wording (``domains[0] "cpus" must be ...``).
    ``convert`` turns an accepted value into the typed one.
    """

    def __init__(self, test, message, convert=None):
        self.test = test
        self.message = message
        self.convert = convert

    def check(self, value, key, where):
        """``value`` (converted) if it passes, else :class:`SchemaError`."""
        if not self.test(value):
            raise SchemaError(where, key, line=self.message % {
                'where': where, 'key': key, 'value': value})
        return value if self.convert is None else self.convert(value)


def _every(tests):
    """One test: every one of ``tests`` passes, in order."""
    def test(value):
        for one in tests:
            if not one(value):
                return False
        return True
    return test


class All:
    """Every one of ``checks`` in order (the first failing one speaks)."""

    def __init__(self, *checks, convert=None):
        self.checks = checks
        self.convert = convert
        tests = tuple(getattr(one, 'test', None) for one in checks)
        if all(tests):
            # One call that says whether every check passes (see Obj).
            self.test = _every(tests)

    def check(self, value, key, where):
        """``value`` (converted) if every check passes."""
        for one in self.checks:
            one.check(value, key, where)
        return value if self.convert is None else self.convert(value)


def is_bool(value):
    """True for ``true`` and ``false``."""
    return isinstance(value, bool)


def is_object(value):
    """True for a JSON object."""
    return isinstance(value, dict)


def is_list(value):
    """True for a JSON array."""
    return isinstance(value, list)


#: ``true`` or ``false``.
BOOL = Check(is_bool, '%(where)s: "%(key)s" must be true or false')


def is_integral(value):
    """True for a number (already known finite) with no fraction."""
    return value == int(value)


def is_sim_number(value):
    """A finite number that a float can hold (the simulators use floats).

    An int beyond a float's range made the old walkers crash in
    ``math.isfinite``; it is refused instead.
    """
    return is_number(value) and (isinstance(value, float)
                                 or -sys.float_info.max <= value
                                 <= sys.float_info.max)


#: The simulators' scenarios word "a finite number" and "a whole number"
#: so (a whole float such as ``2.0`` is accepted and converted).
SIM_NUMBER = Check(is_sim_number,
                   '%(where)s: "%(key)s" must be a number, not %(value)r')
SIM_WHOLE = Check(is_integral,
                  '%(where)s: "%(key)s" must be an integer (%(value)r)')


def sim_number(kind, test, words):
    """A simulator's number: finite, whole if ``kind`` is int, ``test``.

    ``words`` says what ``test`` wants (``'>= 1'``); the value is returned
    as ``kind``.
    """
    checks = [SIM_NUMBER] + ([SIM_WHOLE] if kind is int else [])
    checks.append(Check(test, '%%(where)s: "%%(key)s" must be %s '
                        '(%%(value)r)' % words.replace('%', '%%')))
    return All(*checks, convert=kind)


def vcpu_index(key, where):
    """A vCPU index written as a JSON object key: canonical decimal only.

    ``"01"``, ``"+1"``, ``" 1"`` would make two keys name one vCPU.
    """
    if not (isinstance(key, str) and key.isascii() and key.isdigit()
            and str(int(key)) == key and int(key) < limits.MAX_VCPUS):
        raise SchemaError(where, 'vCPU index %r is not an integer 0..%d'
                          % (key, limits.MAX_VCPUS - 1))
    return int(key)


def obj(value, where):
    """``value`` itself, which must be a JSON object."""
    if not isinstance(value, dict):
        raise SchemaError(where, 'must be a JSON object')
    return value


def only_keys(doc, allowed, where, message=None):
    """Refuse keys of ``doc`` outside ``allowed``, naming them.

    ``message``: a document's own line, formatted with ``where``, ``key``
    (the first unknown key) and ``keys`` (all of them, sorted, joined).
    """
    unknown = sorted(set(doc) - set(allowed))
    if unknown and message is not None:
        raise SchemaError(where, 'unknown key', line=message % {
            'where': where, 'key': unknown[0], 'keys': ', '.join(unknown)})
    if unknown:
        raise SchemaError(where, 'unknown key(s) %s (allowed: %s)' % (
            ', '.join(repr(k) for k in unknown), ', '.join(sorted(allowed))))


_ABSENT = object()


class Obj:
    """A JSON object of declared fields, as :func:`fields` takes them.

    :func:`fields`' walk prepared once, for documents checked often (a
    host's state per agent message): a field with a ``test`` (Check, All
    of them) costs one call when it passes; its ``check`` runs only to
    word a refusal. ``message``: the whole line for a non-object,
    formatted as Check's. ``make``: a record type called with the
    checked values; without it they come back as a dict.
    """

    def __init__(self, schema, message=None, make=None):
        self.schema = dict(schema)
        self.message = message
        self.make = make
        self._plan = tuple(
            (key, getattr(field, 'test', None),
             getattr(field, 'convert', None), field, default)
            for key, (field, default) in self.schema.items())

    def check(self, value, key, where):
        """The checked values (made into ``make``), or :class:`SchemaError`."""
        if not isinstance(value, dict):
            line = self.message and self.message % {
                'where': where, 'key': key, 'value': value}
            raise SchemaError(where, 'must be a JSON object', line or None)
        out = {}
        for name, test, convert, field, default in self._plan:
            item = value.get(name, _ABSENT)
            if item is _ABSENT:
                if default is REQUIRED:
                    raise SchemaError(where, 'missing "%s"' % name)
                if default is not AS_NULL:
                    out[name] = default
                    continue
                item = None
            if test is not None and test(item):
                out[name] = item if convert is None else convert(item)
            else:
                out[name] = field.check(item, name, where)
        return out if self.make is None else self.make(**out)


class ListOf:
    """A JSON array of ``item`` values, as a tuple (the first bad one speaks).

    ``message``: the whole line for a non-array, formatted as Check's.
    """

    def __init__(self, item, message):
        self.item = item
        self.message = message

    def check(self, value, key, where):
        """The tuple of checked items, or :class:`SchemaError`."""
        if not isinstance(value, list):
            raise SchemaError(where, key, line=self.message % {
                'where': where, 'key': key, 'value': value})
        item = self.item
        test = getattr(item, 'test', None)
        if (test is not None and getattr(item, 'convert', None) is None
                and all(map(test, value))):
            return tuple(value)
        return tuple([item.check(one, key, where) for one in value])


def fields(doc, schema, where):
    """Check ``doc`` (a JSON object) against ``schema``; return the values.

    :param schema: ``{key: (field, default)}``, ``default`` being
        :data:`REQUIRED`, :data:`AS_NULL` (an absent key is checked as
        ``None``) or the value taken when the key is absent (not checked).
        Keys of ``doc`` the schema does not name are ignored. Fields are
        checked in the schema's order. (:class:`Obj` is the same walk,
        prepared once for a document checked often.)
    :returns: ``{key: checked value}`` in the schema's order.
    """
    obj(doc, where)
    out = {}
    for key, (field, default) in schema.items():
        if key in doc:
            out[key] = field.check(doc[key], key, where)
        elif default is REQUIRED:
            raise SchemaError(where, 'missing "%s"' % key)
        elif default is AS_NULL:
            out[key] = field.check(None, key, where)
        else:
            out[key] = default
    return out
