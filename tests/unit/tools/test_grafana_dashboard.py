"""The Grafana dashboard and the metrics page name only what we export."""

import json
import os
import re

import testtools

from nova_cacheaware.agent import metrics as agent_metrics
from nova_cacheaware.scheduler import metrics as scheduler_metrics

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..',
                                    '..'))
DASHBOARD = os.path.join(REPO, 'deploy', 'grafana', 'nova-cacheaware.json')
DOC = os.path.join(REPO, 'doc', 'source', 'admin', 'metrics.rst')
OURS = re.compile(r'\bnova_cacheaware_[a-z0-9_]+')


def exported():
    """``(family names, sample names)`` both processes expose."""
    families, samples = set(), set()
    collectors = [agent_metrics.AgentMetrics().registry.collect(),
                  scheduler_metrics.REGISTRY.collect(),
                  scheduler_metrics.LiveStateCollector(lambda: None)
                  .collect()]
    for collected in collectors:
        for family in collected:
            families.add(family.name + ('_total' if family.type == 'counter'
                                        else ''))
            samples.update(s.name for s in family.samples)
    return families, samples


class DashboardTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        with open(DASHBOARD) as f:
            self.dashboard = json.load(f)

    def exprs(self):
        return [(panel['title'], target['expr'])
                for panel in self.dashboard['panels']
                for target in panel['targets']]

    def test_every_expression_names_only_exported_metrics(self):
        _, samples = exported()
        for title, expr in self.exprs():
            names = set(OURS.findall(expr))
            self.assertTrue(names, '%s: %s names none of ours' % (title,
                                                                  expr))
            self.assertEqual(set(), names - samples, '%s: %s' % (title,
                                                                 expr))

    def test_label_values_are_ones_we_set(self):
        allowed = {
            'share': agent_metrics.SHARES,
            'outcome': (agent_metrics.REPIN_OUTCOMES
                        + scheduler_metrics.MESSAGE_OUTCOMES),
            'kind': agent_metrics.MESSAGE_KINDS,
        }
        for title, expr in self.exprs():
            for label, value in re.findall(r'(\w+)!?="([^"]*)"', expr):
                self.assertIn(value, allowed[label], (title, expr))

    def test_the_panels_an_operator_opens_first(self):
        titles = {p['title'] for p in self.dashboard['panels']}
        for wanted in ('Agents healthy', 'All-share servers',
                       'Cache domains by state', 'Hosts refused by reason',
                       'Live state age', 'Servers in a spin storm',
                       'Balloon moves', 'Message bus and Placement errors'):
            self.assertIn(wanted, titles)
        ids = [p['id'] for p in self.dashboard['panels']]
        self.assertEqual(len(ids), len(set(ids)))

    def test_the_metrics_page_lists_every_metric(self):
        families, _ = exported()
        with open(DOC) as f:
            documented = set(OURS.findall(f.read()))
        self.assertEqual(set(), families - documented)
