"""The smallest Nova API the agent's spec source can read: GET /servers/ID.

Serves ``GET <prefix>/servers/<uuid>`` from a JSON file ``{uuid: server
body}`` (the file is re-read when it changes, so a benchmark can add an
arriving instance), 404 otherwise; prints ``serving <port>`` and serves
until killed. Used by ``agent_steady_state.py`` so that the agent's real
:class:`~nova_cacheaware.agent.specs.NovaSpecSource` (python-novaclient
over a keystoneauth session, HTTP on loopback) does the lookups, without a
whole Nova (Keystone, databases, conductor, a compute owning the
instances). It runs in its own process: its CPU is not the agent's.

Usage: python benchmarks/nova_servers_stub.py SERVERS.json
"""

import http.server
import json
import os
import sys


def server_body(uuid, name, flavor_name, vcpus, ram_mb, extra_specs):
    """A server as Nova 34 returns it at microversion 2.47 (trimmed)."""
    return {
        'id': uuid, 'name': name, 'status': 'ACTIVE',
        'tenant_id': 'b0c3d1e0f6f94c4c9d1b0e1f2a3b4c5d',
        'user_id': '1f2e3d4c5b6a47989a8b7c6d5e4f3a2b',
        'metadata': {}, 'hostId': 'a' * 56,
        'image': {'id': 'c0ffee00-0000-4000-8000-000000000001'},
        'flavor': {'original_name': flavor_name, 'vcpus': vcpus,
                   'ram': ram_mb, 'disk': 1, 'ephemeral': 0, 'swap': 0,
                   'extra_specs': dict(extra_specs)},
        'created': '2026-11-24T00:00:00Z', 'updated': '2026-11-24T00:00:00Z',
        'addresses': {'private': [{'version': 4, 'addr': '10.0.0.3',
                                   'OS-EXT-IPS:type': 'fixed'}]},
        'accessIPv4': '', 'accessIPv6': '', 'links': [],
        'OS-DCF:diskConfig': 'MANUAL', 'progress': 0,
        'OS-EXT-AZ:availability_zone': 'nova', 'config_drive': '',
        'key_name': None, 'OS-SRV-USG:launched_at': '2026-11-24T00:00:01Z',
        'OS-SRV-USG:terminated_at': None, 'security_groups': [
            {'name': 'default'}],
        'OS-EXT-STS:task_state': None, 'OS-EXT-STS:vm_state': 'active',
        'OS-EXT-STS:power_state': 1, 'os-extended-volumes:volumes_attached':
        [], 'locked': False, 'description': None, 'tags': []}


class _Servers:
    def __init__(self, path):
        self.path = path
        self.mtime = None
        self.doc = {}

    def get(self, uuid):
        mtime = os.stat(self.path).st_mtime_ns
        if mtime != self.mtime:
            with open(self.path) as f:
                self.doc = json.load(f)
            self.mtime = mtime
        return self.doc.get(uuid)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    servers = _Servers(argv[0])

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = 'HTTP/1.1'

        def do_GET(self):
            parts = self.path.rstrip('/').split('/')
            body = (servers.get(parts[-1])
                    if len(parts) >= 2 and parts[-2] == 'servers' else None)
            status = 200 if body is not None else 404
            data = json.dumps({'server': body} if body is not None else
                              {'itemNotFound': {'code': 404, 'message':
                                                'not found'}}).encode()
            self.send_response(status)
            self.send_header('Content-Type', 'application/json')
            self.send_header('Content-Length', str(len(data)))
            self.send_header('OpenStack-API-Version', 'compute 2.47')
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    httpd = http.server.HTTPServer(('127.0.0.1', 0), Handler)
    print('serving %d' % httpd.server_address[1], flush=True)
    httpd.serve_forever()


if __name__ == '__main__':
    sys.exit(main())
