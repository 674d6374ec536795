"""Lifecycle mapping and the snapshot's requests."""

import types

import libvirt
import testtools

from nova_cacheaware.agent import hypervisor as hv
from nova_cacheaware.agent import service


class LifecycleReasonTest(testtools.TestCase):

    def test_table(self):
        L = libvirt
        for event, detail, reason in [
                (L.VIR_DOMAIN_EVENT_STARTED, L.VIR_DOMAIN_EVENT_STARTED_BOOTED,
                 hv.STARTED),
                (L.VIR_DOMAIN_EVENT_STARTED,
                 L.VIR_DOMAIN_EVENT_STARTED_MIGRATED, hv.MIGRATED),
                (L.VIR_DOMAIN_EVENT_STARTED,
                 L.VIR_DOMAIN_EVENT_STARTED_RESTORED, hv.STARTED),
                (L.VIR_DOMAIN_EVENT_RESUMED,
                 L.VIR_DOMAIN_EVENT_RESUMED_UNPAUSED, hv.RESUMED),
                (L.VIR_DOMAIN_EVENT_RESUMED,
                 L.VIR_DOMAIN_EVENT_RESUMED_MIGRATED, hv.MIGRATED),
                (L.VIR_DOMAIN_EVENT_STOPPED,
                 L.VIR_DOMAIN_EVENT_STOPPED_DESTROYED, hv.STOPPED),
                (L.VIR_DOMAIN_EVENT_UNDEFINED, 0, hv.STOPPED),
                (L.VIR_DOMAIN_EVENT_DEFINED, 0, None),
                (L.VIR_DOMAIN_EVENT_SUSPENDED, 0, None)]:
            self.assertEqual(reason, hv.lifecycle_reason(event, detail),
                             (event, detail))

    def test_constructor_does_no_io(self):
        h = hv.LibvirtHypervisor('qemu+unix:///system?socket=/nonexistent')
        self.assertIsNone(h._conn)
        self.assertRaises(hv.HypervisorUnavailable, h.list_instances)


class SnapshotRequestsTest(testtools.TestCase):
    """The flavor's extra specs are parsed once per pass."""

    def test_parsed_defaulted_or_refused(self):
        snap = service.Snapshot.parsing(
            instances=[], stats={}, counters={},
            specs={'mem': {'cacheaware:workload': 'memory',
                           'cacheaware:memory_min_mb': '512',
                           'hw:cpu_policy': 'shared'},
                   'plain': {'hw:cpu_policy': 'shared'},
                   'bad': {'cacheaware:workload': 'heavy'}},
            spec_errors={})
        self.assertEqual({'mem', 'plain'}, set(snap.requests))
        self.assertEqual('memory', snap.requests['mem'].workload)
        self.assertEqual(512, snap.requests['mem'].memory_min_mb)
        self.assertFalse(snap.requests['plain'].present)
        self.assertEqual(['bad'], list(snap.request_errors))
        self.assertIn('cacheaware:workload', snap.request_errors['bad'])

    def test_unreadable_specs_count_as_the_defaults(self):
        # The spec lookup failed: the instance is treated like a flavor
        # without cacheaware: keys (auto, never moved as memory-bound).
        snap = service.Snapshot.parsing(
            instances=[types.SimpleNamespace(uuid='u')],
            specs={}, spec_errors={'u': 'nova did not answer'}, stats={},
            counters={})
        self.assertFalse(snap.requests['u'].present)
        self.assertEqual({}, snap.request_errors)
