"""The agent's side of per-thread counter groups the privsep daemon holds.

Both the hardware counters (:mod:`~nova_cacheaware.privsep.perf`) and the
tracepoint counters (:mod:`~nova_cacheaware.privsep.tracepoint`) keep one
group per thread in the daemon and answer one read for all of them.
:class:`ThreadGroups` is what the agent holds: a handle per thread,
opened when a thread appears, closed when it ends, every handle read in
one round trip. The first answer that says the host can never count (or a
daemon that does not start) switches it off for good, logged once, so a
pass never fails for counters.
"""

import threading

from oslo_privsep import daemon as privsep_daemon

from nova_cacheaware.privsep import perf

#: What a privileged call raises when the daemon is not there.
DAEMON_DOWN = (privsep_daemon.FailedToDropPrivileges, OSError)


class ThreadGroups:
    """A handle per thread on groups the privsep daemon opens and reads.

    ``groups`` has the daemon's entrypoints ``open_group``,
    ``read_groups`` and ``close_groups`` (or an in-process equivalent).
    Subclasses give :attr:`events` (what ``open_group`` counts), the
    exceptions that mean "never here" (:attr:`cannot`), their logger
    (:attr:`log`) and what a dropped event or switching off means
    (:meth:`_dropped`, :meth:`_switched_off`).
    """

    #: ``open_group`` errors that mean this host can never count.
    cannot = (perf.NothingToCount, perf.CountingNotPermitted)
    #: The subclass's module logger (its messages keep their origin).
    log = None
    #: What is counted, for log lines.
    what = 'counters'

    def __init__(self, groups):
        self._groups = groups
        self._handles = {}       # tid -> handle
        self._probed = False
        self.unsupported = None  # the reason, once known

    def available(self):
        """Probe once on the calling thread: can the host count at all?

        The probe starts the daemon; it lets the agent skip reading vCPU
        thread ids (a QEMU monitor command) where nothing can be counted.
        """
        if self.unsupported is None and not self._probed:
            self._probed = True
            self.sample({'probe': threading.get_native_id()})
            self.close()
        return not self.unsupported

    def sample(self, threads):
        """``{key: {event: count}}``, cumulative; ``{}`` once switched off.

        ``threads``: ``{key: thread id}``. Groups of threads no longer
        listed are closed, new threads get one; a thread that ended is
        skipped.
        """
        if self.unsupported:
            return {}
        tids = set(threads.values())
        self._close([t for t in self._handles if t not in tids])
        for tid in sorted(tids - set(self._handles)):
            self._open(tid)
            if self.unsupported:
                return {}
        if not self._handles:
            return {}
        try:
            answer = self._groups.read_groups(list(self._handles.values()))
        except DAEMON_DOWN as e:
            # The groups went with the daemon; oslo.privsep starts a new
            # one on the next call, and the next pass opens them again.
            self.log.warning('%s not read this pass: %s', self.what, e)
            self._handles.clear()
            return {}
        counts = answer['counts']
        by_tid = {}
        for tid, handle in list(self._handles.items()):
            if handle in counts:
                by_tid[tid] = counts[handle]
            else:           # the thread ended, or the daemon restarted
                del self._handles[tid]
        return {key: {n: c for n, c in by_tid[tid].items()
                      if n in self.events}
                for key, tid in threads.items() if tid in by_tid}

    def _open(self, tid):
        try:
            handle, dropped = self._groups.open_group(tid, self.events)
        except self.cannot as e:
            self._off(str(e))
            return
        except DAEMON_DOWN as e:
            self._off('the privsep daemon did not start or stopped (%s): '
                      'see [nova_cacheaware_privileged]' % e)
            return
        except perf.TooManyGroups as e:
            self.log.warning('no %s for thread %s: %s', self.what, tid, e)
            return
        except (perf.ThreadNotFound, perf.OpenFailed) as e:
            self.log.debug('no %s for thread %s: %s', self.what, tid, e)
            return
        self._handles[tid] = handle
        if dropped:
            self._dropped(dropped)

    def _dropped(self, dropped):
        """Events the host cannot count (``{name: reason}``), dropped."""
        raise NotImplementedError

    def _switched_off(self, reason):
        """Log, once, that nothing is counted and what goes on without."""
        raise NotImplementedError

    def _off(self, reason):
        self.unsupported = reason
        self._switched_off(reason)
        self.close()

    def _close(self, tids):
        handles = [self._handles.pop(t) for t in tids]
        if not handles:
            return
        try:
            self._groups.close_groups(handles)
        except DAEMON_DOWN as e:
            self.log.debug('%s groups not closed: %s', self.what, e)

    def close(self):
        """Close every open group (no daemon call when none is)."""
        self._close(list(self._handles))
