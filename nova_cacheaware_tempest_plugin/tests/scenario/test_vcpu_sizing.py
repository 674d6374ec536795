"""Scenario tests: the agent's ``vcpu_sizing`` capability in a real guest.

A server whose flavor asks for ``cacheaware:vcpu_sizing=recommend`` finds
the agent's estimate in ``/run/cacheaware/pcpus``; with ``apply`` the agent
also keeps that many vCPUs online. Both are observed in the guest itself,
through Nova's console output: the test image prints a
``cacheaware-guest:`` line whenever the file, its online vCPUs or MemTotal
change (``[cacheaware] guest_image_ref``).

The flavor caps each of its two vCPUs at 35 % of a pCPU with Nova's
``quota:cpu_quota``/``quota:cpu_period``, so on a host where the server
runs alone the agent's max-min fair estimate is exactly 0.7 pCPU: one vCPU
recommended, outside the hysteresis band of two online vCPUs
(``(0.75, 2.25]``), so ``apply`` takes vCPU 1 offline.
"""

import re
import time

from tempest import config
from tempest.lib import decorators

from nova_cacheaware_tempest_plugin.tests.scenario import base

CONF = config.CONF
GUEST_LINE = re.compile(r'cacheaware-guest: pcpus_file=\[(?P<file>[^\]]*)\] '
                        r'online=(?P<online>\S+) memtotal_kib=(?P<mem>\d+)')
#: Two vCPUs, each capped at 35 % of a pCPU.
SIZING_VCPUS = 2
CPU_QUOTA = {'quota:cpu_quota': '35000', 'quota:cpu_period': '100000'}
WAIT_S = 180


def guest_reports(console):
    """The ``cacheaware-guest:`` lines of a console log, parsed, in order."""
    return [m.groupdict() for m in GUEST_LINE.finditer(console)]


class AgentCapabilityTest(base.CacheAwareScenarioTest):
    """Boots on ``[cacheaware] agent_host`` from the reporting image."""

    capability = None

    @classmethod
    def skip_checks(cls):
        super().skip_checks()
        opts = CONF.cacheaware
        if cls.capability not in opts.agent_capabilities:
            raise cls.skipException(
                'the agents do not run %s ([cacheaware] agent_capabilities '
                '= %s)' % (cls.capability, opts.agent_capabilities))
        if not opts.guest_image_ref or not opts.agent_host:
            raise cls.skipException(
                '[cacheaware] guest_image_ref and agent_host are needed: a '
                'guest that reports on its console, on a host whose agent '
                'runs %s' % cls.capability)
        if not CONF.compute_feature_enabled.console_output:
            raise cls.skipException('[compute-feature-enabled] '
                                    'console_output is False')

    def require_alone(self):
        """Skip unless no server runs on the agent host (exact estimates)."""
        servers = self.admin_servers_client.list_servers(
            detail=True, all_tenants=True,
            host=CONF.cacheaware.agent_host)['servers']
        if servers:
            raise self.skipException(
                '%d other servers run on %s: the estimate would depend on '
                'them' % (len(servers), CONF.cacheaware.agent_host))

    def boot_reporting(self, flavor):
        """A server of ``flavor`` on the agent host, from the test image."""
        return self.boot(flavor, host=CONF.cacheaware.agent_host,
                         image=CONF.cacheaware.guest_image_ref)

    def wait_for_report(self, server, wanted):
        """The guest's last report once it has every item of ``wanted``."""
        deadline = time.time() + WAIT_S
        last = None
        while time.time() < deadline:
            console = self.admin_servers_client.get_console_output(
                server['id'])['output']
            reports = guest_reports(console)
            if reports:
                last = reports[-1]
                if all(last[k] == v for k, v in wanted.items()):
                    return last
            time.sleep(3)
        self.fail('the guest of %s did not report %s within %d s; its last '
                  'report: %s' % (server['id'], wanted, WAIT_S, last))


class VCPUSizingTest(AgentCapabilityTest):
    """``cacheaware:vcpu_sizing`` recommend and apply."""

    capability = 'vcpu_sizing'

    def sizing_flavor(self, mode):
        """Two capped vCPUs with ``cacheaware:vcpu_sizing=mode``."""
        specs = dict(CPU_QUOTA, **{'cacheaware:vcpu_sizing': mode})
        return self.create_flavor(specs, vcpus=SIZING_VCPUS)

    @decorators.idempotent_id('9d3e6a51-2c4b-4f0e-8b7a-6e1d2c3b4a01')
    def test_recommend_writes_the_estimate_into_the_guest(self):
        """The guest file holds the estimate; every vCPU stays online."""
        self.require_alone()
        server = self.boot_reporting(self.sizing_flavor('recommend'))
        report = self.wait_for_report(
            server, {'file': '1 available_pcpus 0.700 mode recommend'})
        self.assertEqual('0-1', report['online'])

    @decorators.idempotent_id('9d3e6a51-2c4b-4f0e-8b7a-6e1d2c3b4a02')
    def test_apply_keeps_the_recommended_vcpus_online(self):
        """With ``apply`` the agent takes vCPU 1 offline in the guest."""
        apply_when = CONF.cacheaware.vcpu_sizing_apply_when
        if apply_when != 'always':
            raise self.skipException(
                'the agent sizes "apply" guests only in a spin storm '
                '([cacheaware] vcpu_sizing_apply_when = %s)' % apply_when)
        self.require_alone()
        server = self.boot_reporting(self.sizing_flavor('apply'))
        self.wait_for_report(
            server, {'file': '1 available_pcpus 0.700 mode apply',
                     'online': '0'})
