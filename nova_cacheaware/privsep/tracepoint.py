"""Tracepoint counters, opened and held by the privsep daemon.

``vcpu_sizing`` counts the ``kvm:kvm_exit`` tracepoint per vCPU thread:
every exit, and the pause-loop exits through a filter on the exit reason.
Three steps need more than the agent has, so the daemon does all of them
and keeps the file descriptors, as :mod:`nova_cacheaware.privsep.perf`
does for the hardware counters:

* the tracepoint's id, read from tracefs (``events/<system>/<name>/id``
  under ``/sys/kernel/tracing``, mode 0700 and root's): the daemon is
  root, the owner, so it needs no capability for it;
* ``perf_event_open(2)`` of the tracepoint on another user's thread,
  kernel mode included (the event fires in the kernel): what the
  hardware counters need
  (:func:`~nova_cacheaware.privsep.perf_capabilities`), for the same
  two checks: ``perf_allow_kernel`` where ``perf_event_paranoid`` is
  above 1, and the ptrace-read check on QEMU's threads. Counting a
  tracepoint needs nothing of its own: the kernel asks for more only
  where its raw records are sampled (``PERF_SAMPLE_RAW``;
  ``perf_trace_event_perm`` in ``kernel/trace/trace_event_perf.c``: "No
  tracing, just counting, so no obvious leak"), which the daemon never
  asks for. So the context is the same
  (:data:`nova_cacheaware.privsep.perfmon_pctxt`), and the daemon;
* the ``PERF_EVENT_IOC_SET_FILTER`` ioctl on that descriptor.

The agent names a tracepoint (``system:name``) and, per event, an optional
filter ``field == integer``; the daemon builds the filter text itself.
Groups, handles, reads and bounds are :class:`~.perf.CounterGroups`'s: one
group per thread (at most :data:`~.perf.MAX_GROUPS`, a registry apart from
the hardware counters'), read in one round trip
(:func:`read_groups`).
"""

import errno
import fcntl
import os
import re

from nova_cacheaware import exception
from nova_cacheaware import privsep
from nova_cacheaware.privsep import perf

PERF_TYPE_TRACEPOINT = 2
#: ``_IOW('$', 6, char *)``: attach a filter to a tracepoint event.
PERF_EVENT_IOC_SET_FILTER = 0x40082406
#: Where tracefs is mounted (the second: debugfs's, on older hosts).
TRACEFS_ROOTS = ('/sys/kernel/tracing', '/sys/kernel/debug/tracing')

_TRACEPOINT = re.compile(r'\A([A-Za-z0-9_]{1,64}):([A-Za-z0-9_]{1,64})\Z')
_FIELD = re.compile(r'\A[A-Za-z_][A-Za-z0-9_]{0,63}\Z')


class NoTracepoint(exception.CacheAwareError):
    """The host has no such tracepoint, or its tracefs cannot be read."""

    msg_fmt = 'no %(name)s tracepoint: %(reason)s'


class FilterRefused(perf.PerfUnsupported):
    """The kernel refused an event's filter: the group goes without it."""


def ioctl_filter(fd, text):
    """``PERF_EVENT_IOC_SET_FILTER`` of ``text`` on perf fd ``fd``."""
    # The argument is a pointer to the string: fcntl passes a bytes
    # argument by address (an int argument is truncated to a C int, which
    # a heap address overflows).
    fcntl.ioctl(fd, PERF_EVENT_IOC_SET_FILTER, text.encode() + b'\0')


class TracepointGroups(perf.CounterGroups):
    """Counter groups of tracepoint events, by handle; thread-safe.

    ``events`` of :meth:`open_group` map names to ``(tracepoint,
    filter)``: ``tracepoint`` is ``"system:name"``, ``filter`` None or
    ``(field, integer)``, counted where ``field == integer``. An event
    whose filter the kernel refuses is left out of the group and named in
    the answer, as an event the host cannot count; a tracepoint the host
    does not have raises :class:`NoTracepoint`.
    """

    def __init__(self, roots=TRACEFS_ROOTS, opener=perf.perf_event_open,
                 reader=perf.read_group, set_filter=ioctl_filter,
                 max_groups=perf.MAX_GROUPS):
        super().__init__(opener=opener, reader=reader, max_groups=max_groups)
        self.roots = tuple(roots)
        self._set_filter = set_filter
        self._ids = {}

    def tracepoint_id(self, name):
        """The id of tracepoint ``"system:name"``, from tracefs (cached)."""
        known = self._ids.get(name)
        if known is not None:
            return known
        system, event = _TRACEPOINT.match(name).groups()
        failures = []
        for root in self.roots:
            path = os.path.join(root, 'events', system, event, 'id')
            try:
                with open(path) as f:
                    self._ids[name] = int(f.read().strip())
                return self._ids[name]
            except FileNotFoundError:
                continue
            except (OSError, ValueError) as e:
                failures.append('%s: %s' % (path, getattr(e, 'strerror',
                                                          None) or e))
        raise NoTracepoint(name=name, reason='; '.join(failures) or (
            'no events/%s/%s under %s (tracefs not mounted, or what '
            'defines the tracepoint not loaded)'
            % (system, event, ' or '.join(self.roots))))

    def _checked(self, tid, events):
        """Checked ``(tid, [(name, (id, filter text))])``, ids resolved."""
        if isinstance(tid, bool) or not isinstance(tid, int) or tid <= 0:
            raise exception.InvalidInput(reason='thread id %r is not a '
                                         'positive integer' % (tid,))
        if not isinstance(events, dict) or not (
                0 < len(events) <= perf.MAX_EVENTS):
            raise exception.InvalidInput(reason='events must be a mapping '
                                         'of 1 to %d events'
                                         % perf.MAX_EVENTS)
        checked = [(name, _checked_event(name, spec))
                   for name, spec in events.items()]
        return tid, [(name, (self.tracepoint_id(tracepoint), text))
                     for name, (tracepoint, text) in checked]

    def _open_event(self, spec, tid, group_fd):
        """Open one tracepoint event; a refused filter drops just it."""
        tracepoint_id, text = spec
        attr = perf.make_attr(PERF_TYPE_TRACEPOINT, tracepoint_id,
                              perf.PERF_FORMAT_GROUP if group_fd < 0 else 0)
        fd = self._open(attr, tid, group_fd=group_fd)
        if text is not None:
            # Counted before the filter is set: a few events at most, in
            # the first read, which callers take as their baseline.
            try:
                self._set_filter(fd, text)
            except OSError as e:
                os.close(fd)
                raise FilterRefused(e.errno or errno.EINVAL,
                                    'the kernel refused the filter %r: %s'
                                    % (text, e.strerror or e))
        return fd


def _checked_event(name, spec):
    if not isinstance(name, str) or not 0 < len(name) <= 64:
        raise exception.InvalidInput(reason='event name %r' % (name,))
    try:
        tracepoint, filter_ = spec
    except (TypeError, ValueError):
        raise exception.InvalidInput(reason='event %s is not (tracepoint, '
                                     'filter)' % name)
    if not isinstance(tracepoint, str) or not _TRACEPOINT.match(tracepoint):
        raise exception.InvalidInput(reason='event %s: %r is not a '
                                     'tracepoint "system:name"'
                                     % (name, tracepoint))
    if filter_ is None:
        return tracepoint, None
    try:
        field, value = filter_
    except (TypeError, ValueError):
        raise exception.InvalidInput(reason='event %s: filter %r is not '
                                     '(field, integer)' % (name, filter_))
    if not isinstance(field, str) or not _FIELD.match(field) \
            or isinstance(value, bool) or not isinstance(value, int) \
            or not -2 ** 63 <= value < 2 ** 64:
        raise exception.InvalidInput(reason='event %s: filter %r is not '
                                     '(field, integer)' % (name, filter_))
    return tracepoint, '%s == %d' % (field, value)


#: The daemon's tracepoint groups.
_REGISTRY = TracepointGroups()
_limit_raised = False


@privsep.perfmon_pctxt.entrypoint
def open_group(tid, events):
    """:meth:`TracepointGroups.open_group` in the privsep daemon."""
    global _limit_raised
    if not _limit_raised:
        # Room for this registry's fds and the hardware counters'.
        perf._raise_nofile_limit(2 * perf.MAX_GROUPS * perf.MAX_EVENTS + 64)
        _limit_raised = True
    return _REGISTRY.open_group(tid, events)


@privsep.perfmon_pctxt.entrypoint
def read_groups(handles):
    """:meth:`TracepointGroups.read_groups` in the privsep daemon."""
    return _REGISTRY.read_groups(handles)


@privsep.perfmon_pctxt.entrypoint
def close_groups(handles):
    """:meth:`TracepointGroups.close_groups` in the privsep daemon."""
    return _REGISTRY.close_groups(handles)
