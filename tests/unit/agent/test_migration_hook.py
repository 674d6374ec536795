"""The libvirt qemu hook that drops our live pins from incoming migrations.

The transformation is tested on XML documents, and the script end to end as
libvirt runs it: ``qemu <name> migrate begin -`` with the XML on stdin.
"""

import io
import os
import subprocess
import sys
from xml.etree import ElementTree

import testtools

from nova_cacheaware.agent import domain_xml
from nova_cacheaware.agent import libvirt_hook
from tests.fixtures import nova_domains

HOOK = libvirt_hook.__file__


def load_hook():
    """The hook as a module (it is one: the package ships it)."""
    return libvirt_hook


def with_agent_metadata(xml, pins_element):
    """Add the agent's metadata element as libvirt stores it."""
    element = pins_element.replace(
        '<pins>', '<cacheaware:pins xmlns:cacheaware="%s">'
        % domain_xml.AGENT_NS).replace('</pins>', '</cacheaware:pins>')
    element = element.replace('<vcpu ', '<cacheaware:vcpu ')
    return xml.replace('</metadata>', element + '</metadata>')


def pins_of(xml):
    root = ElementTree.fromstring(xml)
    return {int(p.get('vcpu')): p.get('cpuset')
            for p in root.findall('cputune/vcpupin')}


class StripAgentPinsTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.hook = load_hook()

    def test_floating_guest_loses_our_pins_keeps_novas_cpuset(self):
        live = nova_domains.domain_xml('instance-1', 2, cpuset='0-15',
                                       pins={0: '4-7', 1: '4-7'})
        live = with_agent_metadata(live, domain_xml.agent_pins_metadata(
            {0: (), 1: ()}, False, {0, 1}))
        out = self.hook.strip_agent_pins(live)
        root = ElementTree.fromstring(out)
        self.assertIsNone(root.find('cputune'))
        self.assertEqual('0-15', root.find('vcpu').get('cpuset'))
        self.assertNotIn(domain_xml.AGENT_NS, out)
        # Exactly Nova's definition again (same infoset: the nova: prefix
        # is kept, its declaration may move to the root).
        self.assertIn('<nova:instance>', out)
        self.assertEqual(
            ElementTree.canonicalize(nova_domains.domain_xml(
                'instance-1', 2, cpuset='0-15',
                uuid=root.findtext('uuid'))),
            ElementTree.canonicalize(out))

    def test_only_recorded_vcpus_lose_their_pin(self):
        live = nova_domains.domain_xml('i', 3, cpuset='0-7',
                                       pins={0: '4', 1: '4', 2: '5'})
        live = with_agent_metadata(live, domain_xml.agent_pins_metadata(
            {}, False, {0, 2}))
        self.assertEqual({1: '4'}, pins_of(self.hook.strip_agent_pins(live)))

    def test_numa_pinned_guest_keeps_novas_pins(self):
        # Nova wrote per-vCPU pins (hw:numa_nodes) and rewrites them for the
        # destination itself: leave them.
        nova = {0: (0, 1, 2, 3), 1: (0, 1, 2, 3)}
        live = nova_domains.domain_xml('i', 2, pins={0: '2-3', 1: '2-3'})
        live = with_agent_metadata(live, domain_xml.agent_pins_metadata(
            nova, True, {0, 1}))
        out = self.hook.strip_agent_pins(live)
        self.assertEqual({0: '2-3', 1: '2-3'}, pins_of(out))
        self.assertNotIn(domain_xml.AGENT_NS, out)

    def test_untouched_forms_are_left_alone(self):
        for xml in (
                nova_domains.domain_xml('floating', 2, cpuset='0-7'),
                nova_domains.domain_xml('numa', 2, pins={0: '0-3',
                                                         1: '4-7'}),
                nova_domains.domain_xml('dedicated', 2, pins={0: '2',
                                                              1: '3'}),
                nova_domains.domain_xml('not-nova', 1, nova=False)):
            self.assertIsNone(self.hook.strip_agent_pins(xml))

    def test_main_ignores_other_operations(self):
        for op in ('prepare', 'start', 'started', 'stopped', 'release',
                   'restore', 'reconnect', 'attach'):
            out = io.StringIO()
            rc = self.hook.main(['qemu', 'vm', op, 'begin', '-'],
                                io.StringIO('not read'), out, io.StringIO())
            self.assertEqual((0, ''), (rc, out.getvalue()), op)


class HookScriptTest(testtools.TestCase):
    """The script as libvirt runs it.

    A separate process that imports nothing of the project.
    """

    def run_hook(self, args, stdin):
        env = {'PATH': os.environ.get('PATH', '/usr/bin:/bin')}
        return subprocess.run([sys.executable, '-I', '-S', HOOK] + args,
                              input=stdin, capture_output=True, text=True,
                              env=env, timeout=30, cwd='/')

    def test_migrate_rewrites(self):
        live = nova_domains.domain_xml('instance-9', 1, cpuset='0-3',
                                       pins={0: '3'})
        live = with_agent_metadata(live, '<pins><vcpu id="0" nova_cpuset=""/>'
                                         '</pins>')
        p = self.run_hook(['instance-9', 'migrate', 'begin', '-'], live)
        self.assertEqual((0, ''), (p.returncode, p.stderr))
        self.assertEqual({}, pins_of(p.stdout))

    def test_nothing_to_do_prints_nothing(self):
        xml = nova_domains.domain_xml('instance-9', 1, cpuset='0-3')
        p = self.run_hook(['instance-9', 'migrate', 'begin', '-'], xml)
        self.assertEqual((0, '', ''), (p.returncode, p.stdout, p.stderr))

    def test_fails_open_on_garbage(self):
        p = self.run_hook(['vm', 'migrate', 'begin', '-'], '<domain')
        self.assertEqual((0, ''), (p.returncode, p.stdout))
        self.assertIn('nova-cacheaware hook: left vm unchanged', p.stderr)

    def test_is_executable(self):
        self.assertTrue(os.access(HOOK, os.X_OK))
