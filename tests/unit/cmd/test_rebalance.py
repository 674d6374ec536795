"""``nova-cacheaware rebalance``: replay of the rebalance decision."""

import json

from nova_cacheaware.contracts import rebalance_snapshot as rs
from tests.unit.cmd import base
from tests.unit.rebalance import fixtures as f

SCORE = {'clean': 2, 'all_share': 4, 'room': 0, 'relieved': 0}


class RebalanceCommandTest(base.CLITestCase):

    def test_plan(self):
        doc = self.cli_json(['rebalance', '--input', '-', '--budget', '3'],
                            stdin=json.dumps(rs.snapshot_to_dict(f.DIRTY)))
        self.assertEqual(
            {'before': {'clean': 0, 'all_share': 4, 'room': 0,
                        'relieved': 0},
             'after': SCORE,
             'moves': [{'server': 'm1', 'source': 'a', 'destination': 'b',
                        'domain': 'L2-1', 'numa_node': 0, 'vcpus': 1,
                        'score': SCORE, 'reason': 'clean'}]}, doc)

    def test_default_budget_is_one_move(self):
        # Two Dirty Q6600s and an Empty Zen host: two helpful moves.
        snap = f.two_dirty_q6600s_and_an_empty_zen()
        stdin = json.dumps(rs.snapshot_to_dict(snap))
        for argv, count in (([], 1), (['--budget', '2'], 2),
                            (['--budget', '0'], 0)):
            doc = self.cli_json(['rebalance', '--input', '-'] + argv,
                                stdin=stdin)
            self.assertEqual(count, len(doc['moves']), argv)

    def test_priority_is_the_snapshots(self):
        # DIRTY with a refused 1-vCPU request: b's Empty L2-1 is its room,
        # or the place that makes m1 and m2 Clean.
        for priority, moved, after in (
                ('required', [], {'clean': 0, 'all_share': 4, 'room': 1,
                                  'relieved': 0}),
                ('clean', ['m1'], {'clean': 2, 'all_share': 4, 'room': 0,
                                   'relieved': 0})):
            snap = f.snapshot(*f.DIRTY.hosts, pending=(1,),
                              priority=priority)
            doc = self.cli_json(['rebalance', '--input', '-', '--budget',
                                 '3'],
                                stdin=json.dumps(rs.snapshot_to_dict(snap)))
            self.assertEqual((moved, after), (
                [m['server'] for m in doc['moves']], doc['after']),
                priority)

    def test_nothing_to_improve(self):
        doc = self.cli_json(['rebalance', '--input', '-', '--budget', '5'],
                            stdin=json.dumps(rs.snapshot_to_dict(f.SETTLED)))
        self.assertEqual([], doc['moves'])
        self.assertEqual(doc['before'], doc['after'])

    def test_bad_inputs(self):
        for argv, stdin, fragment in (
                ([], '{"hosts": 3}', '"hosts" must be a list'),
                ([], 'not json', 'nova-cacheaware rebalance: error:'),
                (['--budget', '-1'], '{}', '--budget must be in 0..65536'),
                ([], json.dumps({'hosts': [{'name': 'a', 'pcpus': 1,
                                            'servers': [{'uuid': 'x'}]}]}),
                 'host a server: missing "vcpus"')):
            self.assertOneLineError(['rebalance', '--input', '-'] + argv,
                                    fragment, stdin=stdin)
