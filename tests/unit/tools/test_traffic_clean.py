"""The traffic benchmark's Clean figures and misses, by example."""

import testtools

from benchmarks import traffic_e2e


def _server(sid, kind, host='h1', vcpus=1):
    return {'id': sid, 'kind': kind, 'host': host, 'vcpus': vcpus}


ALIVE = [_server('a', 'mem-required'), _server('b', 'mem-preferred'),
         _server('c', 'mem-required', vcpus=2), _server('d', 'cpu-off'),
         _server('e', 'mem-preferred', host='h2')]
DOMAINS = {'a': 'h1/L2-0', 'b': 'h1/L2-0', 'c': 'h1/L2-1', 'd': 'h1/L2-1'}


class CleanTest(testtools.TestCase):

    def test_figures(self):
        # c alone among memory-bound VMs (d is cpu-bound); a and b share;
        # e has no domain. Best: 4 memory-bound VMs, 3 domains.
        self.assertEqual((1, 3), traffic_e2e.clean_figures(ALIVE, DOMAINS,
                                                           3))

    def test_misses(self):
        seen = {'a': {'first_domain': 'L2-0'},
                'e': {'first_domain': None, 'unseen': True}}
        self.assertEqual([
            {'wave': 2, 'kind': 'mem-required', 'vcpus': 1, 'host': 'h1',
             'domain': 'h1/L2-0', 'sharing': 2, 'first_domain': 'L2-0',
             'unseen': False},
            {'wave': 2, 'kind': 'mem-preferred', 'vcpus': 1, 'host': 'h1',
             'domain': 'h1/L2-0', 'sharing': 2, 'first_domain': '-',
             'unseen': False},
            {'wave': 2, 'kind': 'mem-preferred', 'vcpus': 1, 'host': 'h2',
             'domain': None, 'sharing': 0, 'first_domain': None,
             'unseen': True}],
            traffic_e2e.clean_misses(2, ALIVE, DOMAINS, seen))
