"""oslo.policy rules of ``nova-cacheaware-api``: admin only by default.

The data says which server runs where, next to which, and how busy: what
Nova shows only to admins (``os_compute_api:os-hypervisors``,
``OS-EXT-SRV-ATTR:host``). Operators widen a rule in the policy file
(``[oslo_policy] policy_file``); ``oslopolicy-sample-generator
--namespace nova_cacheaware.api`` prints the defaults.
"""

from oslo_policy import policy

ADMIN = 'role:admin'
HOSTS_LIST = 'cacheaware_api:hosts:list'
HOSTS_SHOW = 'cacheaware_api:hosts:show'
SERVERS_SHOW = 'cacheaware_api:servers:show'

RULES = [
    policy.DocumentedRuleDefault(
        name=HOSTS_LIST, check_str=ADMIN,
        description='List the hosts with their cache domains\' states and '
                    'their agents\' health (from the live state).',
        operations=[{'path': '/v1/hosts', 'method': 'GET'}]),
    policy.DocumentedRuleDefault(
        name=HOSTS_SHOW, check_str=ADMIN,
        description='Show one host\'s domains, CPUs and servers (asks the '
                    'host\'s agent).',
        operations=[{'path': '/v1/hosts/{host}', 'method': 'GET'}]),
    policy.DocumentedRuleDefault(
        name=SERVERS_SHOW, check_str=ADMIN,
        description='Show one server\'s domain, pins, class, sizing and '
                    'balloon state (asks its host\'s agent).',
        operations=[{'path': '/v1/servers/{server_id}', 'method': 'GET'}]),
]


def list_rules():
    """The default rules (``oslo.policy.policies`` entry point)."""
    return RULES


def enforcer(conf):
    """An :class:`oslo_policy.policy.Enforcer` with the defaults."""
    enforcer = policy.Enforcer(conf)
    enforcer.register_defaults(RULES)
    return enforcer


def credentials(environ):
    """The caller's credentials from keystonemiddleware's headers."""
    roles = environ.get('HTTP_X_ROLES', '')
    return {'roles': [r.strip().lower() for r in roles.split(',')
                      if r.strip()],
            'project_id': environ.get('HTTP_X_PROJECT_ID'),
            'user_id': environ.get('HTTP_X_USER_ID')}
