"""``[nova_cacheaware_privileged]``: the agent's privsep daemon.

oslo.privsep's own options (``priv_context.OPTS``) in the section of the
agent's context (:data:`nova_cacheaware.privsep.CFG_SECTION`); the daemon
holds the perf and tracepoint counters of the vCPU threads
(doc/source/admin/agent.rst, "Privileges").
"""

import copy

from oslo_config import cfg
from oslo_privsep import priv_context

from nova_cacheaware.conf import groups

privileged_group = cfg.OptGroup(
    'nova_cacheaware_privileged',
    title='The agent\'s privsep daemon (oslo.privsep)',
    help='The agent runs unprivileged; a privsep daemon started on its '
         'first counter read opens and holds the perf counters of the '
         'vCPU threads (hardware counters and vcpu_sizing\'s kvm:kvm_exit '
         'tracepoint). These are oslo.privsep\'s options for that '
         'daemon. The default capabilities: CAP_PERFMON; Linux 5.8, '
         'CAP_PERFMON and CAP_SYS_PTRACE; before, CAP_SYS_ADMIN and '
         'CAP_SYS_PTRACE.')


def _opts():
    opts = copy.deepcopy(priv_context.OPTS)
    for opt in opts:
        if opt.dest == 'capabilities':
            opt.sample_default = 'CAP_PERFMON'
    return opts


privileged_opts = _opts()


def register_opts(conf):
    """Register ``[nova_cacheaware_privileged]`` on ``conf``."""
    groups.register(conf, privileged_group, copy.deepcopy(privileged_opts))


def list_opts():
    """Options for oslo-config-generator."""
    return {privileged_group: privileged_opts}
