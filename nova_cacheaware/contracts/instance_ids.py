"""A host's instance uuids, held as one sorted run of 16-byte values.

The scheduler keeps every host's live state: at the design's region
(10 000 hosts, 200 instances each) a frozenset of uuid strings costs about
25 KiB a host, 250 MiB a scheduler worker. :class:`InstanceIds` holds the
same set in 16 bytes an instance (what payload 2.0 carries,
:mod:`.state_wire`) and answers ``uuid in ids`` by binary search. Pure.
"""

import bisect
import uuid as uuid_mod

_WIDTH = 16


def _text(key):
    # str(uuid.UUID(bytes=key)) builds an object and formats it field by
    # field; a scheduler turns thousands of these back into strings a
    # second at region scale.
    h = key.hex()
    return '%s-%s-%s-%s-%s' % (h[:8], h[8:12], h[12:16], h[16:20], h[20:])


class _Keys:
    # The sorted 16-byte values as a sequence, for bisect.
    __slots__ = ('raw',)

    def __init__(self, raw):
        self.raw = raw

    def __len__(self):
        return len(self.raw) // _WIDTH

    def __getitem__(self, index):
        return self.raw[index * _WIDTH:(index + 1) * _WIDTH]

    def __iter__(self):
        raw = self.raw
        return (raw[i:i + _WIDTH] for i in range(0, len(raw), _WIDTH))


class InstanceIds:
    """An immutable set of instance uuids (strings in, strings out).

    Compares equal to any set of the same uuid strings.
    """

    __slots__ = ('raw',)

    def __init__(self, raw=b''):
        """``raw``: 16-byte uuids, any order, duplicates allowed."""
        if len(raw) % _WIDTH:
            raise ValueError('instance ids must be whole 16-byte uuids')
        chunks = sorted({raw[i:i + _WIDTH]
                         for i in range(0, len(raw), _WIDTH)})
        self.raw = b''.join(chunks)

    @classmethod
    def of(cls, uuids):
        """The set of ``uuids`` (strings); ``ValueError`` for a non-uuid."""
        return cls(b''.join(uuid_mod.UUID(u).bytes for u in uuids))

    def __contains__(self, uuid):
        try:
            key = uuid_mod.UUID(uuid).bytes
        except (ValueError, TypeError, AttributeError):
            return False
        keys = _Keys(self.raw)
        i = bisect.bisect_left(keys, key)
        return i < len(keys) and keys[i] == key

    def __len__(self):
        return len(self.raw) // _WIDTH

    def __iter__(self):
        return map(_text, _Keys(self.raw))

    def uuid_at(self, index):
        """The ``index``-th uuid in sorted order (``IndexError`` past it)."""
        if not 0 <= index < len(self):
            raise IndexError(index)
        return _text(_Keys(self.raw)[index])

    def new_since(self, older):
        """The uuids here that ``older`` (an :class:`InstanceIds`) lacks."""
        raw = self.raw
        if older and older.raw == raw:
            # A resync or a change elsewhere in the state: most arrivals.
            return []
        mine = [raw[i:i + _WIDTH] for i in range(0, len(raw), _WIDTH)]
        if not older:
            return [_text(key) for key in mine]
        old = older.raw
        before = {old[i:i + _WIDTH] for i in range(0, len(old), _WIDTH)}
        return [_text(key) for key in mine if key not in before]

    def __eq__(self, other):
        if isinstance(other, InstanceIds):
            return self.raw == other.raw
        try:
            return len(other) == len(self) and set(other) == set(self)
        except TypeError:
            return NotImplemented

    def __hash__(self):
        return hash(self.raw)

    def __repr__(self):
        return 'InstanceIds(%d)' % len(self)
