"""What the package must not get back (``tools/shape_metrics.py``).

Sizes are reported by that tool, not tested: a long module or function is
a reason to look, and responsibility, not length, decides a split.
"""

import ast
import importlib.util
import os
import sys

import testtools

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))))
PACKAGE = os.path.join(ROOT, 'nova_cacheaware')


def _metrics():
    spec = importlib.util.spec_from_file_location(
        'shape_metrics', os.path.join(ROOT, 'tools', 'shape_metrics.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.measure(ROOT)


class ShapeTest(testtools.TestCase):

    def test_one_libvirt_importer_and_no_cycles(self):
        figures = _metrics()
        self.assertEqual(['nova_cacheaware.virt.binding'],
                         figures['libvirt_modules'])
        self.assertEqual([], figures['package_cycles'])
        self.assertEqual([], figures['module_cycles'])

    def test_no_raw_extra_spec_keys_outside_the_contracts(self):
        found = ['%s:%d' % (rel, node.lineno)
                 for rel, tree in _package_modules()
                 if not rel.startswith('contracts.')
                 for node in ast.walk(tree)
                 if isinstance(node, ast.Constant)
                 and isinstance(node.value, str)
                 and node.value.startswith('cacheaware:')]
        self.assertEqual([], found)

    def test_the_product_never_imports_its_evaluation(self):
        found = ['%s imports %s' % (rel, name)
                 for rel, tree in _package_modules()
                 for name in _imports(tree)
                 if name.split('.')[0] == 'nova_cacheaware_evaluation']
        self.assertEqual([], found)

    def test_the_pure_modules_do_no_io(self):
        # The algorithms of every capability and the contracts: no I/O, no
        # CONF, no clock, no logging - replayable offline, the same result.
        pure = {'policy', 'contracts', 'pcpu_est', 'cachedomain',
                'rebalance'}
        pure_modules = {
            'balloon.study_balancer', 'balloon.default_balancer',
            'balloon.model', 'balloon.policy', 'balloon.guest_report',
            'numa_balance.model', 'numa_balance.policy',
            'numa_balance.flavor', 'vcpu_sizing.model',
            'vcpu_sizing.spin_storm', 'vcpu_sizing.policy'}
        # Repinning's adapters in the agent (logs, clock, counters).
        adapters = {'cachedomain.agent', 'cachedomain.counters',
                    'cachedomain.sampling'}
        allowed_package = {'exception', 'topology.cpulist'}
        io = {'os', 'subprocess', 'socket', 'threading', 'time', 'logging',
              'select', 'signal', 'urllib', 'http', 'shutil', 'tempfile'}

        def allowed(name):
            top, _, inner = name.partition('.')
            if top == 'nova_cacheaware':
                return inner.split('.')[0] in pure or any(
                    inner == m or inner.startswith(m + '.')
                    for m in pure_modules | allowed_package)
            return (top in ('os_traits', 'os_resource_classes', 'numpy',
                            'scipy')
                    or (top in sys.stdlib_module_names and top not in io))
        found = ['%s imports %s' % (rel, name)
                 for rel, tree in _package_modules()
                 if (rel.split('.')[0] in pure or rel in pure_modules)
                 and rel not in adapters
                 for name in _imports(tree) if not allowed(name)]
        self.assertEqual([], found)


def _package_modules():
    """``(dotted name inside the package, AST)`` of every module."""
    for folder, _dirs, files in os.walk(PACKAGE):
        for name in sorted(files):
            if name.endswith('.py'):
                path = os.path.join(folder, name)
                with open(path, encoding='utf-8') as f:
                    yield (os.path.relpath(path, PACKAGE)[:-3].replace(
                        os.sep, '.'), ast.parse(f.read()))


def _imports(tree):
    """Every name ``tree`` imports (``from a import b``: ``a.b``)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield from ('%s.%s' % (node.module, a.name) for a in node.names)
