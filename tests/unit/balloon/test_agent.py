"""Pure parts of the balloon capability's adapters."""

import testtools

from nova_cacheaware.agent import guest_agent
from nova_cacheaware.balloon import guest_report
from nova_cacheaware.balloon import view as balloon_view

NOVA = ('<metadata><nova:instance xmlns:nova="http://openstack.org/xmlns/'
        'libvirt/nova/1.1"><nova:flavor name="f"><nova:memory>%d'
        '</nova:memory></nova:flavor></nova:instance></metadata>')


class FakeAgent:
    def __init__(self, result):
        self.result = result
        self.started = []

    def exec_start(self, uuid, path, args):
        self.started.append((uuid, path, args))
        return 7

    def exec_status(self, uuid, pid):
        return self.result


class TestAdapters(testtools.TestCase):

    def test_flavor_ram_from_memory_and_nova_metadata(self):
        self.assertEqual(512, balloon_view._flavor_mib(
            "<domain><memory unit='KiB'>524288</memory></domain>"))
        self.assertEqual(2048, balloon_view._flavor_mib(
            "<domain><memory unit='GiB'>2</memory></domain>"))
        # Nova's flavor RAM wins when the domain says more.
        self.assertEqual(300, balloon_view._flavor_mib(
            "<domain>%s<memory unit='MiB'>320</memory></domain>"
            % (NOVA % 300)))

    def test_one_json_line_only(self):
        self.assertEqual({'v': 1}, balloon_view.parse_line('{"v": 1}\n'))
        for bad in ('', '{"v": 1}\n{"v": 1}\n', 'nope'):
            self.assertRaises(guest_report.InvalidGuestReport,
                              balloon_view.parse_line, bad)

    def test_helper_runs_with_the_sample_and_reports_failures(self):
        ga = FakeAgent((0, '{"v": 1}\n', ''))
        helper = balloon_view.GuestHelper(ga, '/usr/sbin/x', 3)
        self.assertEqual(7, helper.start('u'))
        self.assertEqual([('u', '/usr/sbin/x', ['3'])], ga.started)
        self.assertEqual('{"v": 1}\n', helper.collect('u', 7))
        self.assertIsNone(balloon_view.GuestHelper(
            FakeAgent(None), 'x', 1).collect('u', 7))
        failing = balloon_view.GuestHelper(
            FakeAgent((2, '', 'usage')), 'x', 1)
        self.assertRaises(guest_agent.GuestAgentError, failing.collect,
                          'u', 7)
