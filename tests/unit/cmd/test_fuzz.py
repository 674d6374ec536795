"""Fuzz every ``nova-cacheaware`` subcommand that reads JSON.

Hypothesis mutates one place of a valid input document of each subcommand
(replace a value, drop a key, add a key) or sends hostile text (NaN, huge
numbers, deep nesting, garbage), runs the real CLI entry point
(:func:`nova_cacheaware.cmd.cli.main`) in-process and checks the contract:
exit 0 with one JSON document on stdout, or exit 2 with exactly one line on
stderr and nothing on stdout; never a traceback.

A run that takes longer than ``RUN_BUDGET_S`` fails the test (an absurd
size must be refused, not computed), except for the simulators: they take
work sizes (``slices``, ``duration_s``...) that a user may legitimately set
to hours of work, so their long runs are stopped and discarded (not
counted as a pass).
"""

import copy
import json
import signal
import subprocess
import sys

from hypothesis import given
from hypothesis import HealthCheck
from hypothesis import reject
from hypothesis import settings
from hypothesis import strategies as st

from nova_cacheaware.cmd import common
from tests.unit.cmd import base

RUN_BUDGET_S = 3

Q6600_REPORT = {
    'source': 'sysfs', 'online_cpus': [0, 1, 2, 3], 'cache_level': 2,
    'fallback': False,
    'numa_nodes': [{'id': 0, 'cpus': [0, 1, 2, 3], 'memory_mib': 4096}],
    'cache_domains': [
        {'id': 'L2-0', 'level': 2, 'cpus': [0, 1], 'size_kib': 4096,
         'numa_nodes': [0]},
        {'id': 'L2-1', 'level': 2, 'cpus': [2, 3], 'size_kib': 4096,
         'numa_nodes': [0]}],
    'smt_siblings': [[0], [1], [2], [3]],
    'packages': [{'id': 0, 'cpus': [0, 1, 2, 3]}],
    'cpus': [{'id': c, 'package': 0, 'die': 0, 'core': c, 'siblings': [c]}
             for c in range(4)],
    'caches': [{'level': 2, 'type': 'unified', 'cpus': [0, 1],
                'size_kib': 4096, 'id': None},
               {'level': 2, 'type': 'unified', 'cpus': [2, 3],
                'size_kib': 4096, 'id': None}]}

#: (argv, a valid input document) for every subcommand that reads JSON;
#: the document is given on standard input.
SEEDS = [
    (['plan', '--input', '-'],
     {'domains': [{'id': 'L2-0', 'cpus': [0, 1]},
                  {'id': 'L2-1', 'cpus': [2, 3]}],
      'max_vcpus_per_cpu': 1.0,
      'vms': [{'id': 'a', 'vcpus': 2, 'workload': 'memory',
               'current': {'0': [0], '1': [2]}, 'movable': True},
              {'id': 'c', 'vcpus': 1, 'workload': 'cpu'}]}),
    (['pcpu-est', '--input', '-'],
     {'pcpus': [0, 1, 2, 3],
      'vms': {'vm1': {'vcpus': {'0': [0, 1], '1': [2, 3]},
                      'caps': {'0': 0.5}},
              'vm2': {'vcpus': {'0': [0, 1, 2, 3]}}}}),
    (['balloon-plan', '--input', '-'],
     {'params': {'threshold': 0.99, 'alpha': 0.1, 'beta': 0.1, 'mode': 'A',
                 'interval_s': 10},
      'free_mib': 10,
      'vms': [{'id': 'a', 'memory_mib': 2357, 'hit_ratio': 1.0, 'streak': 2,
               'min_mib': 256, 'max_mib': 7071},
              {'id': 'b', 'memory_mib': 2357, 'hit_ratio': 0.5, 'streak': 0,
               'min_mib': 256, 'max_mib': 7071}]}),
    (['balloon-plan', '--policy', 'default', '--input', '-'],
     {'vms': [{'id': 'a', 'memory_mib': 2357, 'hit_ratio': 1.0,
               'cache_mib': 100, 'free_mib': 1900, 'used_mib': 300,
               'min_mib': 428, 'max_mib': 6215},
              {'id': 'b', 'memory_mib': 2357, 'hit_ratio': 0.8,
               'cache_mib': 2000, 'free_mib': 0, 'used_mib': 300,
               'min_mib': 428, 'max_mib': 6215, 'favoured': True,
               'hold_mib': 2000, 'hold_left': 3}]}),
    (['simulate', 'balloon', '--format', 'json', '--scenario', '-'],
     {'duration_s': 300, 'tick_s': 5, 'vms': 2, 'host_memory_mib': 4000,
      'params': {'alpha': 0.1}}),
    (['simulate', 'cache', '--scenario', '-'],
     {'slices': 20, 'policies': ['credit', 'agent'],
      'model': {'cpi_mem': 2.0},
      'vms': [{'id': 'a', 'vcpus': 2, 'workload': 'memory'},
              {'id': 'b', 'vcpus': 1, 'workload': 'cpu'}]}),
    (['simulate', 'cache', '--scenario', '-'],
     {'slices': 5, 'configs': ['nova-shared', 'required'],
      'cloud': {'hosts': 2, 'arrivals': 10, 'sample_every': 5,
                'slices': 5, 'mix': {'memory': 1, 'cpu': 1},
                'sizes': {'1': 1, '2': 1}}}),
    (['simulate', 'numa', '--format', 'json', '--scenario', '-'],
     {'handoff_s': 0.09}),
    (['flavor', 'numa-full', '--ram-mb', '4096', '--format', 'json',
      '--topology', '-'], Q6600_REPORT),
    (['domain-choice', '--input', '-'],
     {'capacity': {'L3-0': 8, 'L3-1': 8},
      'instances': [{'uuid': 'a', 'vcpus': 2, 'memory_bound': True,
                     'current': None, 'previous': 'L3-1'},
                    {'uuid': 'b', 'vcpus': 4, 'memory_bound': False}]}),
]

#: Hostile texts every subcommand gets as they are.
HOSTILE_TEXTS = [
    '[' * 50000 + ']' * 50000,
    '{"a": ' * 3000 + '1' + '}' * 3000,
    '[' * 65 + ']' * 65,
    'NaN', '-Infinity', '1e308', '-1e400', '1' * 5000, '',
    '{"max_vcpus_per_cpu": 1e308}', '{"interval_s": 1.7e308}',
    '\ufeff{}', '\x00', '{"a": 1,}', '[1, 2', 'null', '"text"',
]

_NUMBERS = st.one_of(
    st.integers(-2 ** 53, 2 ** 53),
    st.sampled_from([0, 1, -1, 2 ** 31, 2 ** 53, -2 ** 53, 10 ** 15,
                     0.5, 1e-300, 9e15, -9e15, 1.7e15, 4095, 4096, 4097,
                     8191, 8192, 65536, 10 ** 9])
    | st.floats(-2 ** 53, 2 ** 53, allow_nan=False, allow_infinity=False))
_SCALARS = st.none() | st.booleans() | _NUMBERS | st.text(max_size=8)
_JSON = st.recursive(
    _SCALARS,
    lambda children: (st.lists(children, max_size=4)
                      | st.dictionaries(st.text(max_size=8), children,
                                        max_size=4)),
    max_leaves=8)


def _places(doc, path=()):
    """Every (path, value) in ``doc``, the root included."""
    yield path, doc
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from _places(value, path + (key,))
    elif isinstance(doc, list):
        for index, value in enumerate(doc):
            yield from _places(value, path + (index,))


@st.composite
def mutated(draw, doc):
    """``doc`` with one place replaced, dropped or given a new key."""
    doc = copy.deepcopy(doc)
    places = list(_places(doc))
    path, value = draw(st.sampled_from(places))
    if not path:
        return draw(_JSON)
    parent = doc
    for step in path[:-1]:
        parent = parent[step]
    action = draw(st.sampled_from(['replace', 'drop', 'add']))
    if action == 'replace':
        parent[path[-1]] = draw(_JSON)
    elif action == 'drop':
        del parent[path[-1]]
    elif isinstance(value, dict):
        value[draw(st.text(max_size=8))] = draw(_JSON)
    elif isinstance(value, list):
        value.append(draw(_JSON))
    else:
        parent[path[-1]] = [value, draw(_JSON)]
    return doc


class _OverBudget(Exception):
    pass


def _alarm(signum, frame):
    raise _OverBudget()


class FuzzCLITest(base.CLITestCase):
    """The contract, for every subcommand reading JSON, on any input."""

    def check_contract(self, argv, text):
        """Run the CLI on ``text``; exit 0 + JSON or exit 2 + one line."""
        previous = signal.signal(signal.SIGALRM, _alarm)
        # Repeating: an alarm that lands in a callback Python ignores
        # exceptions from (a gc callback) is raised again shortly after.
        signal.setitimer(signal.ITIMER_REAL, RUN_BUDGET_S, 0.2)
        try:
            code, out, err = self.cli(argv, stdin=text)
            over = '_OverBudget' in err
        except _OverBudget:
            over = True
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
        if over:
            if argv[0] != 'simulate':
                self.fail('%s ran past %d s on %s'
                          % (' '.join(argv), RUN_BUDGET_S, text[:300]))
            reject()
        self.assertNotIn('Traceback', err)
        if code == 0:
            json.loads(out)
            return code
        self.assertEqual(2, code, err)
        self.assertEqual('', out)
        self.assertEqual(1, len(err.splitlines()), err)
        self.assertTrue(err.startswith('nova-cacheaware '), err)
        return code

    def test_seeds_are_valid(self):
        for argv, doc in SEEDS:
            self.assertEqual(0, self.check_contract(argv, json.dumps(doc)),
                             argv)

    def test_hostile_texts(self):
        for argv, _ in SEEDS:
            for text in HOSTILE_TEXTS:
                self.assertEqual(2, self.check_contract(argv, text),
                                 (argv, text[:40]))

    @settings(max_examples=400, deadline=None,
              suppress_health_check=[HealthCheck.too_slow,
                                     HealthCheck.filter_too_much])
    @given(st.data())
    def test_mutated_documents(self, data):
        argv, doc = data.draw(st.sampled_from(SEEDS))
        self.check_contract(argv, json.dumps(data.draw(mutated(doc))))

    @settings(max_examples=100, deadline=None)
    @given(st.sampled_from(SEEDS), _JSON)
    def test_any_json_document(self, seed, doc):
        self.check_contract(seed[0], json.dumps(doc))

    def test_depth_limit_is_exact(self):
        ok = '[' * common.MAX_JSON_DEPTH + ']' * common.MAX_JSON_DEPTH
        deep = '[' + ok + ']'
        self.assertEqual(common.MAX_JSON_DEPTH,
                         common.nesting_depth(common.parse_json(ok)))
        err = self.assertOneLineError(['plan', '--input', '-'],
                                      'nested more than 64 levels', deep)
        self.assertEqual(
            'nova-cacheaware plan: error: invalid input: standard input: '
            'JSON nested more than 64 levels deep\n', err)


class IssueInputsTest(base.CLITestCase):
    """The inputs of issue 15, item 7: exit 2, one line, nothing else."""

    def test_deep_nesting_to_plan(self):
        self.assertOneLineError(['plan', '--input', '-'],
                                'nested more than 64 levels deep',
                                '[' * 50000 + ']' * 50000)

    def test_huge_ratio_to_plan(self):
        doc = dict(SEEDS[0][1], max_vcpus_per_cpu=1e308)
        self.assertOneLineError(
            ['plan', '--input', '-'],
            'number 1e+308 is out of range (magnitude above '
            '9007199254740992)', json.dumps(doc))

    def test_huge_interval_to_balloon_plan(self):
        doc = copy.deepcopy(SEEDS[2][1])
        doc['params']['interval_s'] = 1.7e308
        self.assertOneLineError(['balloon-plan', '--input', '-'],
                                'number 1.7e+308 is out of range',
                                json.dumps(doc))

    def test_absurd_sizes_are_refused_not_computed(self):
        # A billion vCPUs would make plan build a billion pinnings.
        doc = copy.deepcopy(SEEDS[0][1])
        doc['vms'][1]['vcpus'] = 10 ** 9
        self.assertOneLineError(['plan', '--input', '-'],
                                "VM 'c': \"vcpus\" must be an integer "
                                '1..4096', json.dumps(doc))
        doc['vms'][1]['vcpus'] = 4096
        self.assertEqual(4096, len(self.cli_json(
            ['plan', '--input', '-'], json.dumps(doc))['vms']['c'][
                'pinning']))
        doc = copy.deepcopy(SEEDS[0][1])
        doc['domains'][1]['cpus'] = [2, 8192]
        self.assertOneLineError(['plan', '--input', '-'],
                                'must hold CPU ids (integers 0..8191)',
                                json.dumps(doc))
        doc = copy.deepcopy(SEEDS[1][1])
        doc['vms']['vm2']['vcpus'] = {'4096': [0]}
        self.assertOneLineError(['pcpu-est', '--input', '-'],
                                "vCPU index '4096' is not an integer "
                                '0..4095', json.dumps(doc))

    def test_largest_accepted_interval_gives_json(self):
        doc = copy.deepcopy(SEEDS[2][1])
        doc['params']['interval_s'] = 2 ** 53
        out = self.cli_json(['balloon-plan', '--input', '-'],
                            json.dumps(doc))
        # a: third round over the threshold (fast); b: a receiver.
        self.assertEqual((0.5 * 2 ** 53, 2 ** 53),
                         (out['vms']['a']['interval_s'],
                          out['vms']['b']['interval_s']))


class ProcessTest(base.CLITestCase):
    """The same contract through real processes (pipes, exit status)."""

    def _run(self, argv, text):
        return subprocess.run(
            [sys.executable, '-m', 'nova_cacheaware.cmd.cli'] + argv,
            input=text, capture_output=True, text=True, timeout=120)

    def test_issue_inputs(self):
        for argv, text in (
                (['plan', '--input', '-'], '[' * 50000 + ']' * 50000),
                (['balloon-plan', '--input', '-'],
                 json.dumps(SEEDS[2][1]).replace('"interval_s": 10',
                                                 '"interval_s": 1.7e308'))):
            proc = self._run(argv, text)
            self.assertEqual((2, ''), (proc.returncode, proc.stdout))
            self.assertEqual(1, len(proc.stderr.splitlines()), proc.stderr)
            self.assertNotIn('Traceback', proc.stderr)

    def test_valid_seed(self):
        proc = self._run(SEEDS[1][0], json.dumps(SEEDS[1][1]))
        self.assertEqual((0, ''), (proc.returncode, proc.stderr))
        json.loads(proc.stdout)
