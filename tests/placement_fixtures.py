"""Real Placement for tests and benchmarks: in-process or a WSGI service.

* :class:`InProcessPlacement`: Placement's own ``PlacementFixture`` (the
  real WSGI app on in-memory SQLite behind wsgi-intercept) -- fast.
* :class:`PlacementService`: the real ``placement.wsgi.api`` application
  served by ``tools/wsgi_serve.py`` in a child process, on a scratch
  MariaDB database (``placement-manage db sync``), on a free loopback port.
  Ends only the process and drops only the database it created.

Both use ``[api] auth_strategy = noauth2``: the token ``admin`` has the
admin role.
"""

import os
import subprocess
import sys
import uuid

import fixtures
from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint

from nova_cacheaware.placement import client as placement_client

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: ``[placement]`` options this project recommends (doc/source/admin/
#: placement.rst): no server-side retry of a conflicting allocation write,
#: which Placement 16 does inside the same transaction and which can then
#: accept claims beyond capacity (evaluation/placement-claim-race.rst).
RECOMMENDED_OPTS = {'allocation_conflict_retry_count': 1}

MARIADB_URL = os.environ.get('NOVA_CACHEAWARE_MARIADB',
                             'mysql+pymysql://root@127.0.0.1:3306')


#: What noauth2 Placement is told the agent's user has (as nova-compute's).
SERVICE_ROLES = 'admin,member,reader,service'


def client_for_endpoint(endpoint, token='admin'):
    """A :class:`PlacementClient` for a noauth2 Placement at ``endpoint``."""
    session = ks_session.Session(
        auth=token_endpoint.Token(endpoint, token))
    # The roles of nova-compute's user (and the agent's): POST /reshaper
    # needs "service" under Placement's default policy.
    return placement_client.PlacementClient(
        ks_adapter.Adapter(session, service_type='placement',
                           additional_headers={'X-Roles': SERVICE_ROLES}))


class InProcessPlacement(fixtures.Fixture):
    """Placement's functional fixture; ``client`` talks to it."""

    def _setUp(self):
        from placement.tests.functional.fixtures import placement
        real = self.useFixture(placement.PlacementFixture())
        self.endpoint = real.endpoint
        self.client = client_for_endpoint(self.endpoint)


def mariadb_available():
    """True when the MariaDB of the test machine answers."""
    try:
        _connect().close()
        return True
    except Exception:
        return False


def _connect():
    import pymysql
    rest = MARIADB_URL.split('://', 1)[1]
    creds, hostport = rest.rsplit('@', 1)
    user, _, password = creds.partition(':')
    host, _, port = hostport.partition(':')
    return pymysql.connect(host=host, port=int(port or 3306), user=user,
                           password=password, connect_timeout=5,
                           autocommit=True)


class PlacementService(fixtures.Fixture):
    """Placement 16 as a real WSGI service on MariaDB, on loopback."""

    def __init__(self, debug=False, database=None, placement_opts=None):
        """Describe the service; nothing starts before ``setUp``.

        ``database``: serve an existing database (no sync, no drop);
        ``placement_opts``: ``[placement]`` options of the service (None:
        :data:`RECOMMENDED_OPTS`; ``{}``: Placement's defaults).
        """
        super().__init__()
        self.debug = debug
        self.database = database
        self.placement_opts = (RECOMMENDED_OPTS if placement_opts is None
                               else placement_opts)

    def _setUp(self):
        owns_database = self.database is None
        if owns_database:
            self.database = 'cacheaware_placement_%s' % uuid.uuid4().hex[:10]
            conn = _connect()
            try:
                with conn.cursor() as cur:
                    cur.execute('CREATE DATABASE %s CHARACTER SET utf8'
                                % self.database)
            finally:
                conn.close()
            self.addCleanup(self._drop_database)
        self.confdir = self.useFixture(fixtures.TempDir()).path
        conf = os.path.join(self.confdir, 'placement.conf')
        with open(conf, 'w') as f:
            f.write('[DEFAULT]\ndebug = %s\nlog_file = %s\n'
                    '[api]\nauth_strategy = noauth2\n'
                    '[placement_database]\nconnection = %s\n'
                    '[placement]\n%s'
                    % (self.debug, os.path.join(self.confdir, 'api.log'),
                       self.db_url,
                       ''.join('%s = %s\n' % kv
                               for kv in self.placement_opts.items())))
        if owns_database:
            subprocess.run(
                [sys.executable, '-c',
                 'import sys; from placement.cmd.manage import main; '
                 'sys.exit(main())', '--config-file', conf, 'db', 'sync'],
                check=True, capture_output=True, timeout=120)
        self.addCleanup(self._stop)
        self._serve('0')
        self.endpoint = self._line.split()[-1]
        self.client = client_for_endpoint(self.endpoint)
        # The first request loads the app (policy, traits sync): do it now
        # so that tests and benchmarks do not time it.
        self.client.get('/')

    def _serve(self, port):
        env = dict(os.environ, OS_PLACEMENT_CONFIG_DIR=self.confdir)
        self.process = subprocess.Popen(
            [sys.executable, os.path.join(REPO_ROOT, 'tools', 'wsgi_serve.py'),
             'placement.wsgi.api', port],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True)
        self._line = self.process.stdout.readline()
        if not self._line.startswith('serving '):
            raise RuntimeError('placement service did not start: %r'
                               % self._line)

    def stop_service(self):
        """Stop the WSGI process, keep the database: a real outage."""
        self._stop()

    def start_service(self):
        """Serve the same database again on the same endpoint."""
        self._serve(self.endpoint.rsplit(':', 1)[1])
        self.client.get('/')

    @property
    def db_url(self):
        """SQLAlchemy URL of the service's database."""
        return '%s/%s?charset=utf8' % (MARIADB_URL, self.database)

    def connect_db(self):
        """A PyMySQL connection to the service's database (autocommit)."""
        conn = _connect()
        conn.select_db(self.database)
        return conn

    def _stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process.stdout.close()

    def _drop_database(self):
        conn = _connect()
        try:
            with conn.cursor() as cur:
                cur.execute('DROP DATABASE IF EXISTS %s' % self.database)
        finally:
            conn.close()
