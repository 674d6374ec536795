"""Option groups are registered per process; generator namespaces match."""

import configparser
import json
import os
import subprocess
import sys

from oslo_config import cfg
import testtools

from nova_cacheaware.cmd import agent as cmd_agent
from nova_cacheaware.conf import opts

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))))

# Imports Nova's scheduler side first (it registers Nova's own groups),
# notes every group and option, then imports our scheduler plugins and
# prints what they added. A fresh interpreter: this test process has
# registered other things on cfg.CONF.
_PROBE = '''
import json
from oslo_config import cfg
import nova.conf
from nova.scheduler import filters, weights, utils
def snapshot():
    out = {}
    for name, group in cfg.CONF._groups.items():
        out[name] = sorted(group._opts)
    out['DEFAULT'] = sorted(cfg.CONF._opts)
    return out
before = snapshot()
import nova_cacheaware.scheduler.filters
import nova_cacheaware.scheduler.weights
after = snapshot()
print(json.dumps({
    'new_groups': sorted(set(after) - set(before)),
    'new_opts': {g: sorted(set(o) - set(before[g]))
                 for g, o in after.items()
                 if g in before and set(o) != set(before[g])},
    'ours': after.get('cacheaware_scheduler', [])}))
'''


class SchedulerImportTest(testtools.TestCase):

    def test_bare_import_registers_only_the_scheduler_group(self):
        out = subprocess.run([sys.executable, '-c', _PROBE], check=True,
                             capture_output=True, text=True, cwd=ROOT)
        got = json.loads(out.stdout.strip().splitlines()[-1])
        self.assertEqual(['cacheaware_scheduler'], got['new_groups'])
        # Nothing of ours in Nova's groups ([placement], [DEFAULT]...).
        self.assertEqual({}, got['new_opts'])
        self.assertEqual(
            sorted(o.dest for _g, os_ in opts.list_scheduler_opts()
                   for o in os_), got['ours'])


def _groups(listed):
    return sorted(str(group) if isinstance(group, str) else group.name
                  for group, _opts in listed)


class NamespacesTest(testtools.TestCase):

    def _entry_points(self):
        parser = configparser.ConfigParser()
        parser.read(os.path.join(ROOT, 'setup.cfg'))
        lines = parser['entry_points']['oslo.config.opts'].strip()
        points = {}
        for line in lines.splitlines():
            name, target = (p.strip() for p in line.split('='))
            module, func = target.split(':')
            self.assertEqual('nova_cacheaware.conf.opts', module)
            points[name] = getattr(opts, func)
        return points

    def test_one_namespace_per_process_and_the_reference(self):
        points = self._entry_points()
        self.assertEqual(['cacheaware_scheduler'],
                         _groups(points['nova_cacheaware.scheduler']()))
        agent = points['nova_cacheaware.agent']()
        # The agent shares one scheduler option: the notification topic
        # both sides must agree on (the same option object).
        self.assertEqual(
            ['host_state_topic'],
            [o.dest for g, os_ in agent if _groups([(g, os_)]) == [
                'cacheaware_scheduler'] for o in os_])
        api = _groups(points['nova_cacheaware.api']())
        self.assertEqual(['cacheaware_api', 'cacheaware_scheduler',
                          'cacheaware_status'], api)
        relay = _groups(points['nova_cacheaware.state_relay']())
        self.assertEqual(['state_relay'], relay)
        self.assertEqual(set(_groups(agent)) | set(api) | set(relay),
                         set(_groups(points['nova_cacheaware']())))

    def test_generator_files_name_declared_namespaces(self):
        points = self._entry_points()
        folder = os.path.join(ROOT, 'etc', 'nova-cacheaware')
        used = set()
        for name in sorted(os.listdir(folder)):
            if not name.endswith('-config-generator.conf'):
                continue
            with open(os.path.join(folder, name)) as f:
                for line in f:
                    key, _sep, value = line.partition('=')
                    value = value.strip()
                    if (key.strip() == 'namespace'
                            and value.startswith('nova_cacheaware')):
                        used.add(value)
        self.assertEqual(set(points), used)

    def test_agent_conf_has_exactly_the_agent_groups(self):
        conf = cmd_agent.make_conf([])
        self.assertIsInstance(conf, cfg.ConfigOpts)
        self.assertEqual(set(_groups(opts.list_agent_opts())),
                         set(conf._groups))
        self.assertEqual(['host_state_topic'],
                         sorted(conf._groups['cacheaware_scheduler']._opts))
