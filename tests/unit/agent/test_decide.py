"""The agent's wiring of the repinning planner (the decisions are
tested in tests/unit/policy/test_repinning.py).
"""

import importlib.util

import testtools

from nova_cacheaware.agent import decide
from nova_cacheaware.policy import cachedomain
from nova_cacheaware.policy import repinning


class DefaultPlannerTest(testtools.TestCase):

    def test_wired_to_the_policy_module_or_a_clear_error(self):
        present = importlib.util.find_spec(
            'nova_cacheaware.policy.cachedomain') is not None
        if present:
            self.assertIsInstance(decide.default_planner(),
                                  repinning.Planner)
        else:
            e = self.assertRaises(decide.PlannerUnavailable,
                                  decide.default_planner)
            self.assertIn('nova_cacheaware.policy.cachedomain', str(e))

    def test_typed_plan_for_a_typed_input(self):
        plan_input = cachedomain.input_from_dict({
            'domains': [{'id': 'L2-0', 'cpus': [0, 1]}],
            'vms': [{'id': 'm', 'vcpus': 2, 'workload': 'memory'}]})
        planner = decide.default_planner(objective='throughput')
        self.assertEqual(
            {'vms': {'m': {'pinning': {'0': [0, 1], '1': [0, 1]},
                           'domains': ['L2-0'], 'share': 'all',
                           'moved': False}},
             'domains': {'L2-0': {'state': 'clean', 'memory_vms': ['m']}},
             'unplaced': []},
            cachedomain.plan_to_dict(planner(plan_input)))

    def test_old_path_names(self):
        # Tools and tests still import the policy's names from here.
        for name in ('Decision', 'REPIN', 'KEEP', 'RESTORE', 'AUDIT',
                     'PlannerError', 'build_plan_input', 'usable_domains',
                     'decisions_from_plan', 'audit_dedicated',
                     'WORKLOAD_SPEC'):
            self.assertIs(getattr(repinning, name), getattr(decide, name))
