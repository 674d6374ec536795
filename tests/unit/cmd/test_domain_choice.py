"""``nova-cacheaware domain-choice``: replay of the agent's domain choice."""

import json

from tests.unit.cmd import base

DOC = {'capacity': {'L3-0': 8, 'L3-1': 8, 'L3-2': 4},
       'instances': [
           {'uuid': 'kept', 'vcpus': 4, 'memory_bound': True,
            'current': None, 'previous': 'L3-1'},
           {'uuid': 'pinned', 'vcpus': 2, 'memory_bound': False,
            'current': 'L3-2', 'previous': None},
           {'uuid': 'new', 'vcpus': 2, 'memory_bound': True}]}


class DomainChoiceCommandTest(base.CLITestCase):

    def test_choice_and_largest_room(self):
        doc = self.cli_json(['domain-choice', '--input', '-'],
                            stdin=json.dumps(DOC))
        # 'new' is memory-bound: L3-1 holds 'kept'; of the two domains
        # without one, L3-2 (2 of 4 vCPUs left beside the cpu-bound
        # 'pinned') fits it exactly and L3-0 stays whole: 8 vCPUs of room.
        self.assertEqual({'domains': {'kept': 'L3-1', 'new': 'L3-2',
                                      'pinned': 'L3-2'},
                          'largest_room': 8}, doc)

    def test_reads_the_agents_dump(self):
        dump = {'domains': [], 'vms': [], 'agent': {'domain_choice': DOC}}
        self.assertEqual(
            'L3-2', self.cli_json(['domain-choice', '--input', '-'],
                                  stdin=json.dumps(dump))['domains']['new'])

    def test_dump_without_choice(self):
        self.assertOneLineError(
            ['domain-choice', '--input', '-'], 'has no agent.domain_choice',
            stdin=json.dumps({'agent': {}}))

    def test_bad_inputs(self):
        for bad, fragment in (
                ({'capacity': []}, '"capacity" must be an object'),
                ({'capacity': {'a': -1}}, 'capacity of a must be'),
                ({'capacity': {'a': 1}, 'instances': [{'uuid': 'x'}]},
                 'vcpus of x must be'),
                ({'capacity': {'a': 1}, 'instances': [
                    {'uuid': 'x', 'vcpus': 1}, {'uuid': 'x', 'vcpus': 1}]},
                 'listed twice'),
                ({'capacity': {'a': 1}, 'instances': [
                    {'uuid': 'x', 'vcpus': 1, 'memory_bound': 'yes'}]},
                 'true or false'),
                ({'capacity': {'a': 1}, 'base': {'a': [1]}},
                 'base of a must be')):
            self.assertOneLineError(['domain-choice', '--input', '-'],
                                    fragment, stdin=json.dumps(bad))
