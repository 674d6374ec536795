"""A fresh devcloud directory does not start over an earlier cloud's databases.

CI found the tempest stage's computes dead or never up; one way to get
there for real: a devcloud directory removed without ``down`` leaves its
MariaDB databases behind, and the next ``up`` from a fresh directory starts
nova-compute against a database that already knows the host ("No local
node identity found, but this is not our first startup on this host.
Refusing to start"). ``devcloud.sh backends`` (the first step of ``up``)
now drops what it finds under its prefix when its own directory holds no
trace of having created it, and keeps it otherwise.
"""

import os
import subprocess

import fixtures

from tests.functional import base

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, 'tools', 'devcloud.sh')
DATABASES = ('keystone', 'placement', 'nova_api', 'nova', 'nova_cell0')


def _mysql(sql):
    return subprocess.run(
        ['mysql', '-h', '127.0.0.1', '-u', 'root', '-N', '-B', '-e', sql],
        capture_output=True, text=True, timeout=60)


class StaleDatabasesTest(base.FunctionalTestCase):
    """``backends`` on a fresh directory drops the leftovers of its prefix."""

    def setUp(self):
        super().setUp()
        self.require(_mysql('SELECT 1').returncode == 0,
                     'MariaDB at 127.0.0.1 (root, no password)')
        self.require(subprocess.run(['rabbitmqctl', '-q', 'list_vhosts'],
                                    capture_output=True).returncode == 0,
                     'rabbitmqctl')
        self.dir = self.useFixture(fixtures.TempDir()).path
        # Per test process: the two tests may run at once in two workers.
        self.vhost = 'ca_ft_stale_%d' % os.getpid()
        self.prefix = self.vhost + '_'
        self.addCleanup(self._drop)
        # An earlier cloud's state: a table in its nova database.
        for db in DATABASES:
            _mysql('CREATE DATABASE IF NOT EXISTS `%s%s`' % (self.prefix, db))
        _mysql('CREATE TABLE `%snova`.services (host VARCHAR(64))'
               % self.prefix)

    def _drop(self):
        for db in DATABASES:
            _mysql('DROP DATABASE IF EXISTS `%s%s`' % (self.prefix, db))
        subprocess.run(['rabbitmqctl', '-q', 'delete_vhost', self.vhost],
                       capture_output=True)

    def _backends(self):
        env = dict(os.environ, DEVCLOUD_DIR=self.dir,
                   DEVCLOUD_DB_PREFIX=self.prefix,
                   DEVCLOUD_RABBIT_VHOST=self.vhost,
                   DEVCLOUD_DB_MIN_CONNECTIONS='0')
        proc = subprocess.run(['bash', SCRIPT, 'backends'], env=env,
                              capture_output=True, text=True, timeout=120)
        self.assertEqual(0, proc.returncode, proc.stderr)
        return proc.stderr

    def _tables(self):
        return _mysql('SHOW TABLES FROM `%snova`' % self.prefix).stdout.split()

    def test_fresh_directory_drops_the_leftovers(self):
        err = self._backends()
        self.assertIn('dropping databases %s*' % self.prefix, err)
        self.assertEqual([], self._tables())
        for db in DATABASES:
            self.assertEqual(
                self.prefix + db,
                _mysql("SHOW DATABASES LIKE '%s%s'"
                       % (self.prefix.replace('_', '\\_'),
                          db.replace('_', '\\_'))).stdout.strip())

    def test_own_databases_kept(self):
        os.makedirs(os.path.join(self.dir, 'nova'))
        open(os.path.join(self.dir, 'nova', '.db-synced'), 'w').close()
        err = self._backends()
        self.assertNotIn('dropping', err)
        self.assertEqual(['services'], self._tables())
