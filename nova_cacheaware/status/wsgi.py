"""The WSGI application of ``nova-cacheaware-api`` (routes and errors).

``GET /v1/hosts``: every host of the live state (:mod:`.hosts`), from
memory. ``GET /v1/hosts/{host}``: that host's agent's view
(:mod:`.agents`). ``GET /v1/servers/{uuid}[?host=HOST]``: the server's
entry from its host's agent; without ``host`` the host is the one whose
newest live state lists the server. Errors are JSON ``{"error":
{"code", "title", "message"}}``; an agent that does not answer is a 503.
Every route is checked against :mod:`.policy` with keystonemiddleware's
identity headers.
"""

import json
import re
import uuid as uuid_mod

from oslo_log import log as logging
from oslo_policy import policy as oslo_policy
import webob
import webob.dec

from nova_cacheaware.status import agents
from nova_cacheaware.status import policy

LOG = logging.getLogger(__name__)

ROUTES = (
    (re.compile(r'^/v1/hosts/?$'), 'list_hosts', policy.HOSTS_LIST),
    (re.compile(r'^/v1/hosts/(?P<host>[^/]+)/?$'), 'show_host',
     policy.HOSTS_SHOW),
    (re.compile(r'^/v1/servers/(?P<uuid>[^/]+)/?$'), 'show_server',
     policy.SERVERS_SHOW),
)
VERSIONS = {'versions': [{'id': 'v1', 'status': 'CURRENT'}]}


class HTTPError(Exception):
    """An error answer: HTTP ``code`` with a message for the operator."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message


class StatusApp:
    """Routes requests to the cache and the agents; checks the policy."""

    def __init__(self, cache, agent_client, enforcer):
        self.cache = cache
        self.agents = agent_client
        self.enforcer = enforcer

    @webob.dec.wsgify
    def __call__(self, req):
        """Answer one request (JSON)."""
        try:
            if req.method != 'GET':
                raise HTTPError(405, 'only GET is served')
            if req.path_info.rstrip('/') in ('', '/v1'):
                return _json(200, VERSIONS)
            for pattern, handler, rule in ROUTES:
                match = pattern.match(req.path_info)
                if match:
                    self._authorize(rule, req.environ)
                    return _json(200, getattr(self, handler)(
                        req, **match.groupdict()))
            raise HTTPError(404, 'no such resource: %s' % req.path_info)
        except HTTPError as e:
            return _error(e.code, e.message)

    def _authorize(self, rule, environ):
        creds = policy.credentials(environ)
        try:
            self.enforcer.authorize(rule, {}, creds, do_raise=True)
        except oslo_policy.PolicyNotAuthorized:
            raise HTTPError(403, 'policy does not allow %s (admin only by '
                                 'default)' % rule) from None

    def list_hosts(self, req):
        """``{"hosts": [row, ...]}`` of the live state."""
        return {'hosts': self.cache.rows()}

    def show_host(self, req, host):
        """The host view document of ``host``'s agent."""
        if not self.cache.knows(host):
            raise HTTPError(404, 'no live state from host %s: no agent '
                                 'publishes under that name' % host)
        return self._ask(self.agents.describe_host, host)

    def show_server(self, req, uuid):
        """The server's entry (and ``host``) from its host's agent."""
        try:
            uuid = str(uuid_mod.UUID(uuid))
        except ValueError:
            raise HTTPError(400, '%s is not a server uuid' % uuid) from None
        host = req.GET.get('host') or self.cache.host_of(uuid)
        if host is None:
            raise HTTPError(404, 'server %s is on no host of the live state '
                                 '(pass ?host=HOST if its agent is down)'
                            % uuid)
        answer = self._ask(self.agents.describe_server, host, uuid)
        if answer is None:
            raise HTTPError(404, 'the agent of host %s does not know server '
                                 '%s' % (host, uuid))
        return answer

    def _ask(self, method, *args):
        try:
            return method(*args)
        except agents.AgentUnavailable as e:
            LOG.warning('%s', e)
            raise HTTPError(503, str(e)) from None


_TITLES = {400: 'Bad Request', 403: 'Forbidden', 404: 'Not Found',
           405: 'Method Not Allowed', 503: 'Service Unavailable'}


def _json(code, doc):
    return webob.Response(status=code, content_type='application/json',
                          charset='utf-8', body=json.dumps(doc).encode())


def _error(code, message):
    return _json(code, {'error': {'code': code, 'title': _TITLES.get(code),
                                  'message': message}})
