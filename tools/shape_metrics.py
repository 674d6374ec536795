#!/usr/bin/env python3
"""Shape figures of the package, from its source alone (issue 18).

Reads every ``.py`` file of ``nova_cacheaware/`` with :mod:`ast` (nothing is
imported or run) and prints:

* ``package_lines``: lines of all its modules;
* ``cross_package_imports``: imports from a module of one sub-package (or
  top-level module) to a module of another, one per module pair;
  ``package_edges``: the sub-package pairs they join;
* ``libvirt_modules``: modules with an ``import libvirt`` or
  ``import libvirt_qemu`` anywhere (also inside a function);
* ``largest_modules`` and ``largest_functions``: the longest, in lines
  (a function from its ``def`` line to its last line; methods count alone,
  a nested function counts inside its parent as well);
* ``package_cycles``: strongly connected groups of the graph whose nodes
  are the package's sub-packages and top-level modules
  (``nova_cacheaware.agent``, ``nova_cacheaware.notifications``) and whose
  edges are imports between them, lazy ones (inside a function) included;
* ``module_cycles``: the same over single modules.

Usage: ``python tools/shape_metrics.py [--json] [--top N] [ROOT]``, ROOT
being the checkout (default: the one this file is in).
"""

import argparse
import ast
import json
import os
import sys

PACKAGE = 'nova_cacheaware'
LIBVIRT = ('libvirt', 'libvirt_qemu')


def modules(root):
    """``{dotted name: path}`` of every module of the package."""
    out = {}
    base = os.path.join(root, PACKAGE)
    for folder, dirs, files in os.walk(base):
        dirs.sort()
        for name in sorted(files):
            if not name.endswith('.py'):
                continue
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, root)[:-3].split(os.sep)
            if rel[-1] == '__init__':
                rel = rel[:-1]
            out['.'.join(rel)] = path
    return out


def _imports(tree, name, is_package):
    """Dotted names imported anywhere in ``tree`` (relative ones resolved)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ''
            if node.level:
                parts = name.split('.')
                if not is_package:
                    parts = parts[:-1]
                parts = parts[:len(parts) - (node.level - 1)]
                base = '.'.join(parts + ([base] if base else []))
            # ``from pkg import mod`` depends on pkg.mod, not on pkg.
            found.extend('%s.%s' % (base, a.name) for a in node.names)
    return found


def _functions(tree):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def _resolve(target, known):
    """The longest known module name that ``target`` is or lies in."""
    parts = target.split('.')
    while parts:
        candidate = '.'.join(parts)
        if candidate in known:
            return candidate
        parts.pop()
    return None


def _group(module):
    """The package-level node of a module (sub-package or top module)."""
    parts = module.split('.')
    return '.'.join(parts[:2])


def _sccs(graph):
    """Strongly connected groups with more than one node (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def measure(root, top=5):
    """The figures as a dict (see the module docstring)."""
    mods = modules(root)
    lines = {}
    funcs = []
    libvirt_users = []
    module_graph = {m: set() for m in mods}
    for name, path in mods.items():
        with open(path, encoding='utf-8') as f:
            text = f.read()
        lines[name] = len(text.splitlines())
        tree = ast.parse(text, path)
        is_package = path.endswith('__init__.py')
        imported = _imports(tree, name, is_package)
        if any(i.split('.')[0] in LIBVIRT for i in imported):
            libvirt_users.append(name)
        for target in imported:
            if not target.startswith(PACKAGE + '.'):
                continue
            dep = _resolve(target, mods)
            if dep and dep != name and dep != PACKAGE:
                module_graph[name].add(dep)
        for fn in _functions(tree):
            funcs.append((fn.end_lineno - fn.lineno + 1,
                          '%s:%s' % (name, fn.name)))
    package_graph = {}
    crossing = 0
    for src, deps in module_graph.items():
        for dep in deps:
            a, b = _group(src), _group(dep)
            if a != b:
                package_graph.setdefault(a, set()).add(b)
                crossing += 1
    largest = sorted(((n, m) for m, n in lines.items()), reverse=True)
    funcs.sort(reverse=True)
    return {
        'package_lines': sum(lines.values()),
        'modules': len(mods),
        'cross_package_imports': crossing,
        'package_edges': sum(len(d) for d in package_graph.values()),
        'libvirt_modules': sorted(libvirt_users),
        'largest_modules': [[m, n] for n, m in largest[:top]],
        'modules_over_400': sum(1 for n in lines.values() if n > 400),
        'largest_functions': [[f, n] for n, f in funcs[:top]],
        'functions_over_60': sum(1 for n, _ in funcs if n > 60),
        'package_cycles': _sccs(package_graph),
        'module_cycles': _sccs(module_graph),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('root', nargs='?', default=os.path.dirname(
        os.path.dirname(os.path.abspath(__file__))))
    parser.add_argument('--json', action='store_true')
    parser.add_argument('--top', type=int, default=5)
    args = parser.parse_args(argv)
    figures = measure(args.root, args.top)
    if args.json:
        print(json.dumps(figures, indent=1, sort_keys=True))
        return 0
    print('package lines     %d in %d modules'
          % (figures['package_lines'], figures['modules']))
    print('imports between sub-packages %d (module pairs), %d '
          '(sub-package pairs)' % (figures['cross_package_imports'],
                                   figures['package_edges']))
    print('libvirt importers %d: %s' % (len(figures['libvirt_modules']),
                                        ', '.join(figures['libvirt_modules'])))
    print('largest modules (modules > 400 lines: %d)'
          % figures['modules_over_400'])
    for m, n in figures['largest_modules']:
        print('  %5d  %s' % (n, m))
    print('largest functions (functions > 60 lines: %d)'
          % figures['functions_over_60'])
    for f, n in figures['largest_functions']:
        print('  %5d  %s' % (n, f))
    print('package cycles    %d' % len(figures['package_cycles']))
    for group in figures['package_cycles']:
        print('  ' + ' <-> '.join(group))
    print('module cycles     %d' % len(figures['module_cycles']))
    for group in figures['module_cycles']:
        print('  ' + ' <-> '.join(group))
    return 0


if __name__ == '__main__':
    sys.exit(main())
