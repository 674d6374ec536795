"""The QEMU guest agent, as the agent's capabilities use it.

A thin adapter over the hypervisor port's guest-agent calls
(:meth:`~nova_cacheaware.virt.domain.Domain.guest_vcpus`,
``set_guest_vcpus`` and, for what libvirt does not wrap, the agent protocol
through ``agent_command``: ``guest-exec``, ``guest-file-*``); the port types
their failures. Every call has a timeout; a guest whose agent does not
answer raises :class:`GuestAgentUnavailable` and callers leave the VM as it
is. Everything a guest returns is untrusted: sizes are bounded and shapes
checked here, meanings are validated by the caller's policy.
"""

import base64
import json
import logging
import time

from nova_cacheaware.topology import cpulist
from nova_cacheaware.virt import errors

LOG = logging.getLogger(__name__)

#: Most bytes of a guest-exec's stdout or stderr we accept.
MAX_OUTPUT_BYTES = 64 * 1024


GuestAgentError = errors.GuestAgentError
GuestAgentUnavailable = errors.GuestAgentUnavailable


class GuestAgent:
    """Guest-agent calls on the domains of a :class:`LibvirtHypervisor`."""

    def __init__(self, hypervisor, timeout_s=5):
        self.hypervisor = hypervisor
        self.timeout_s = int(max(1, timeout_s))

    # -- plumbing -----------------------------------------------------------

    def _on_domain(self, uuid, fn):
        """``fn(Domain)`` on ``uuid`` (guest-agent failures typed)."""
        return self.hypervisor.on_domain(uuid, fn)

    def command(self, uuid, execute, arguments=None, timeout_s=None):
        """Send one guest-agent command; return its ``return`` value."""
        msg = {'execute': execute}
        if arguments is not None:
            msg['arguments'] = arguments
        timeout = int(timeout_s or self.timeout_s)

        raw = self._on_domain(uuid, lambda dom: dom.agent_command(
            json.dumps(msg), timeout))
        try:
            reply = json.loads(raw)
        except (TypeError, ValueError):
            raise GuestAgentError(uuid=uuid,
                                  reason='%s: reply is not JSON' % execute)
        if not isinstance(reply, dict) or 'return' not in reply:
            raise GuestAgentError(uuid=uuid,
                                  reason='%s: no "return" in reply' % execute)
        return reply['return']

    # -- commands -----------------------------------------------------------

    def ping(self, uuid, timeout_s=None):
        """True when the guest agent answers ``guest-ping`` in time."""
        try:
            self.command(uuid, 'guest-ping', timeout_s=timeout_s)
            return True
        except GuestAgentError:
            return False

    def wait(self, uuid, timeout_s):
        """Wait up to ``timeout_s`` for the guest agent; True when up."""
        deadline = time.monotonic() + timeout_s
        while True:
            if self.ping(uuid, timeout_s=1):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.5)

    def vcpus(self, uuid):
        """``(all, online, offlinable)`` vCPU id sets, as the guest says."""
        info = self._on_domain(uuid, lambda dom: dom.guest_vcpus())
        if info is None:
            # libvirt-python answers None when the domain has no agent.
            raise GuestAgentUnavailable(uuid=uuid, reason='no vCPU report')
        try:
            return tuple(frozenset(cpulist.parse_cpulist(info.get(key) or ''))
                         for key in ('vcpus', 'online', 'offlinable'))
        except (AttributeError, ValueError) as e:
            raise GuestAgentError(uuid=uuid,
                                  reason='bad vCPU report: %s' % e) from None

    def set_vcpus(self, uuid, vcpus, online):
        """Online (``online=True``) or offline the given guest vCPUs."""
        vcpus = sorted(set(vcpus))
        if not vcpus:
            return

        self._on_domain(uuid, lambda dom: dom.set_guest_vcpus(
            cpulist.format_cpulist(vcpus), online))

    def exec_start(self, uuid, path, args=()):
        """Start ``path args`` in the guest without waiting; its guest pid.

        Collect it with :meth:`exec_status` (callers that run a helper on
        many guests start them all, then collect, instead of waiting on each
        guest in turn).
        """
        started = self.command(uuid, 'guest-exec', {
            'path': path, 'arg': list(args), 'capture-output': True})
        try:
            return int(started['pid'])
        except (TypeError, KeyError, ValueError):
            raise GuestAgentError(uuid=uuid, reason='guest-exec: no pid')

    def exec_status(self, uuid, pid):
        """``(exitcode, stdout, stderr)`` of a started program, or None.

        None while it still runs; once it has exited the guest agent forgets
        it, so an exited program is reported once.
        """
        status = self.command(uuid, 'guest-exec-status', {'pid': pid})
        if not isinstance(status, dict):
            raise GuestAgentError(uuid=uuid,
                                  reason='guest-exec-status: not a map')
        if not status.get('exited'):
            return None
        return (status.get('exitcode'),
                _decode(uuid, status.get('out-data')),
                _decode(uuid, status.get('err-data')))

    def exec(self, uuid, path, args=(), timeout_s=30, poll_s=0.2):
        """Run ``path args`` in the guest; ``(exitcode, stdout, stderr)``.

        Output is bounded to :data:`MAX_OUTPUT_BYTES` per stream; a program
        still running after ``timeout_s`` raises :class:`GuestAgentError`.
        """
        pid = self.exec_start(uuid, path, args)
        deadline = time.monotonic() + timeout_s
        while True:
            result = self.exec_status(uuid, pid)
            if result is not None:
                return result
            if time.monotonic() >= deadline:
                raise GuestAgentError(
                    uuid=uuid, reason='%s still running after %ss'
                    % (path, timeout_s))
            time.sleep(poll_s)

    def write_file(self, uuid, path, data):
        """Write ``data`` (str) to ``path`` in the guest, replacing it."""
        handle = self.command(uuid, 'guest-file-open',
                              {'path': path, 'mode': 'w'})
        try:
            self.command(uuid, 'guest-file-write', {
                'handle': handle,
                'buf-b64': base64.b64encode(data.encode()).decode()})
        finally:
            try:
                self.command(uuid, 'guest-file-close', {'handle': handle})
            except GuestAgentError as e:
                LOG.debug('closing %s in %s: %s', path, uuid, e)


def _decode(uuid, b64):
    if not b64:
        return ''
    if not isinstance(b64, str) or len(b64) > MAX_OUTPUT_BYTES * 4 // 3 + 4:
        raise GuestAgentError(uuid=uuid, reason='guest output too large')
    try:
        return base64.b64decode(b64).decode('utf-8', 'replace')
    except (ValueError, TypeError):
        raise GuestAgentError(uuid=uuid, reason='guest output not base64')
