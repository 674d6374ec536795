"""The agent's privileged calls, behind oslo.privsep.

``nova-cacheaware-agent`` runs as an unprivileged user in the ``libvirt``
group. The calls that need more (``perf_event_open(2)`` on QEMU's vCPU
threads: :mod:`nova_cacheaware.privsep.perf`) run in a privsep daemon
that keeps only the capabilities below; it is started on the first call,
as Nova's are: ``sudo privsep-helper`` unless ``[nova_cacheaware_privileged]
helper_command`` says otherwise, or, for an agent that still runs as root,
the helper with the agent's own interpreter (no sudo needed).

* ``CAP_PERFMON`` (Linux 5.9 and newer): count with
  ``perf_event_paranoid`` above 1, kernel mode included, and count the
  threads of another user (QEMU's) - perfmon-capable callers pass the
  ptrace-read check since Linux 5.9 (kernel commit 45fd22da97c6);
* Linux 5.8 (``CAP_PERFMON`` without that): ``CAP_PERFMON`` and
  ``CAP_SYS_PTRACE``;
* before Linux 5.8, ``CAP_SYS_ADMIN`` for the first and
  ``CAP_SYS_PTRACE`` for the second.

The tracepoint counters (:mod:`nova_cacheaware.privsep.tracepoint`) need
the same, in the same daemon. The agent holds both kinds the same way:
:class:`~nova_cacheaware.privsep.thread_groups.ThreadGroups`, a handle per
vCPU thread on the daemon's groups.
"""

import os
import sys

from oslo_config import cfg
from oslo_privsep import capabilities as caps
from oslo_privsep import priv_context

#: The configuration section of the daemon's options (oslo.privsep's own).
CFG_SECTION = 'nova_cacheaware_privileged'

_CAP_LAST_CAP = '/proc/sys/kernel/cap_last_cap'
# Older oslo.privsep releases do not name it.
CAP_PERFMON = getattr(caps, 'CAP_PERFMON', 38)
# CAP_CHECKPOINT_RESTORE, new in Linux 5.9: a kernel that knows it lets
# CAP_PERFMON pass perf's ptrace-read check too.
_CAP_LINUX_5_9 = 40


def perf_capabilities(cap_last_cap=_CAP_LAST_CAP):
    """The capabilities counting another user's threads needs here.

    ``CAP_PERFMON`` from Linux 5.9 (``cap_last_cap`` >= 40);
    ``CAP_PERFMON`` and ``CAP_SYS_PTRACE`` where the kernel knows
    ``CAP_PERFMON`` (38) but not yet 40 (Linux 5.8); before,
    ``CAP_SYS_ADMIN`` and ``CAP_SYS_PTRACE``. A daemon asked to keep a
    capability the kernel does not know would fail to start.
    """
    try:
        with open(cap_last_cap) as f:
            last = int(f.read())
    except (OSError, ValueError):
        last = _CAP_LINUX_5_9
    if last >= _CAP_LINUX_5_9:
        return [CAP_PERFMON]
    if last >= CAP_PERFMON:
        return [CAP_PERFMON, caps.CAP_SYS_PTRACE]
    return [caps.CAP_SYS_ADMIN, caps.CAP_SYS_PTRACE]


class _Context(priv_context.PrivContext):
    """oslo.privsep's context; a root agent starts the helper without sudo."""

    def helper_command(self, sockpath):
        """oslo.privsep's command, with ``python -m`` for sudo as root."""
        cmd = super().helper_command(sockpath)
        if (os.geteuid() == 0 and not self.conf.helper_command
                and cmd[:2] == ['sudo', 'privsep-helper']):
            cmd[:2] = [sys.executable, '-m', 'oslo_privsep.daemon']
        return cmd


#: The context of the perf counters (:mod:`nova_cacheaware.privsep.perf`).
perfmon_pctxt = _Context(
    'nova_cacheaware',
    cfg_section=CFG_SECTION,
    pypath=__name__ + '.perfmon_pctxt',
    capabilities=perf_capabilities(),
)


def init(conf):
    """Read ``[nova_cacheaware_privileged]`` from ``conf``'s files.

    oslo.privsep reads its section from the global ``cfg.CONF``; the agent
    parses a private ``ConfigOpts``. Parsing the global one with the
    agent's ``--config-file`` and ``--config-dir`` makes the section of the
    agent's file count, and the default helper command passes the same
    files to ``privsep-helper``. Call it once, after the agent's
    configuration is parsed and before the first privileged call.
    """
    cfg.CONF(args=[], project='nova-cacheaware',
             default_config_files=list(conf.config_file or ()),
             default_config_dirs=list(conf.config_dir or ()))
