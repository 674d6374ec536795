"""The project files agree with each other: one definition of each suite,
one list of distribution packages, the files OpenStack projects carry."""

import configparser
import os
import re
import shlex

import testtools

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..',
                                    '..'))
CONSTRAINTS = ('-c{env:TOX_CONSTRAINTS_FILE:'
               'https://releases.openstack.org/constraints/upper/master}')


def read(name):
    with open(os.path.join(REPO, name)) as f:
        return f.read()


def bindep_packages(profile):
    """dpkg packages of ``profile`` in bindep.txt (a minimal reader)."""
    packages = set()
    for line in read('bindep.txt').splitlines():
        line = line.split('#', 1)[0].strip()
        if not line:
            continue
        name, _, tags = line.partition('[')
        tags = tags.rstrip(']').split()
        if 'platform:dpkg' in tags and profile in tags:
            packages.add(name.strip())
    return packages


def tox():
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string(read('tox.ini'))
    return parser


class ProjectFilesTest(testtools.TestCase):

    def test_setup_installs_exactly_bindeps_test_profile(self):
        match = re.search(r'APT_PACKAGES="([^"]*)"', read('tools/setup.sh'))
        self.assertEqual(bindep_packages('test'), set(match.group(1).split()))

    def test_tox_envs_run_the_shared_suite_definitions(self):
        conf = tox()
        for env, suite in [('testenv', 'unit'), ('testenv:functional',
                                                 'functional'),
                           ('testenv:pep8', 'pep8'),
                           ('testenv:watcher', 'watcher'),
                           ('testenv:functional-nova-numa', 'nova-numa')]:
            first = conf[env]['commands'].strip().splitlines()[0]
            self.assertEqual(['bash', '{toxinidir}/tools/suite.sh', suite,
                              '{posargs}'], shlex.split(first), env)

    def test_ci_runs_the_same_suites_without_tox(self):
        run_tests = read('tools/run-tests.sh')
        self.assertIn('for suite in unit watcher functional; do', run_tests)
        self.assertIn('bash tools/suite.sh "$suite"', run_tests)
        self.assertIn('bash tools/suite.sh pep8', run_tests)
        self.assertNotIn('tox', re.sub(r'#.*', '', run_tests))
        self.assertNotIn('tox', re.sub(r'#.*', '', read('tools/setup.sh')))
        self.assertIn('\nbash tools/run-tests.sh\n', read('.ci/run'))
        self.assertIn('bash tools/run-tests.sh', read('README.rst'))

    def test_ci_runs_the_nova33_env_suites(self):
        """CI's Nova 33 stage runs what tox -e functional-nova33 runs."""
        for env in ('testenv:functional-nova33', 'testenv:functional-nova31'):
            self.assertEqual(
                [['bash', '{toxinidir}/tools/suite.sh', 'unit'],
                 ['bash', '{toxinidir}/tools/suite.sh', 'nova-release',
                  '{posargs}']],
                [shlex.split(line) for line in
                 tox()[env]['commands'].strip().splitlines()], env)
        run_tests = read('tools/run-tests.sh')
        self.assertIn('bash tools/setup.sh --nova 33 ', run_tests)
        self.assertIn('for suite in unit nova-release; do', run_tests)
        self.assertIn('PATH="$PWD/.venv-nova33/bin:$PATH" bash tools/suite.sh '
                      '"$suite"', run_tests)

    def test_release_envs_use_the_carried_constraints(self):
        """tox and setup.sh --nova N read the same series' constraints."""
        setup = read('tools/setup.sh')
        for env, series, major in (('functional-nova33', '2026.1', '33'),
                                   ('functional-nova31', '2025.1', '31')):
            var = 'TOX_CONSTRAINTS_FILE_' + series.replace('.', '_')
            path = 'requirements/upper-constraints/%s.txt' % series
            self.assertEqual(
                ['-c{env:%s:{toxinidir}/%s}' % (var, path),
                 '-r{toxinidir}/requirements/nova-%s.txt' % major],
                [line for line in
                 tox()['testenv:' + env]['deps'].strip().splitlines()
                 if 'nova-' in line or line.startswith('-c')])
            self.assertIn('(-c "${%s:-%s}")' % (var, path), setup)
            pins = read(path)
            self.assertIn('\noslo.policy===', pins)
            self.assertNotIn('\nnova===', pins)

    def test_tox_installs_under_upper_constraints(self):
        conf = tox()
        for env in ('testenv', 'testenv:docs', 'testenv:releasenotes'):
            self.assertEqual(CONSTRAINTS,
                             conf[env]['deps'].strip().splitlines()[0], env)
        self.assertIn('-r{toxinidir}/doc/requirements.txt',
                      conf['testenv:docs']['deps'])

    def test_license_is_apache_2(self):
        text = read('LICENSE')
        self.assertIn('Apache License\n', text)
        self.assertIn('Version 2.0, January 2004', text)
        self.assertIn('END OF TERMS AND CONDITIONS', text)
        self.assertIn('license = Apache-2.0', read('setup.cfg'))

    def test_files_openstack_projects_carry(self):
        for name in ('CONTRIBUTING.rst', 'HACKING.rst', 'bindep.txt',
                     'doc/requirements.txt', '.zuul.yaml'):
            self.assertTrue(os.path.isfile(os.path.join(REPO, name)), name)
