"""Create the devcloud's projects, users and service catalog in Keystone.

Run after ``keystone-manage bootstrap`` (which made the ``admin`` user,
project and role and the identity endpoint). Idempotent: looks everything up
by name first. Reads ``DEVCLOUD_*`` variables like ``render.py``.

Creates: project ``service`` with users ``nova``, ``placement``,
``glance``, ``cacheaware`` and, with ``DEVCLOUD_WATCHER=1``, ``watcher``
(roles ``admin`` and ``service``), project ``demo`` with user ``demo``
(``member``, ``reader``) for non-admin tests, and the compute, placement,
image, cache-aware (nova-cacheaware-api) and, with Watcher, infra-optim
services with one public/internal/admin endpoint each.
"""

import os

from keystoneauth1.identity import v3
from keystoneauth1 import session as ks_session
from keystoneclient.v3 import client as ks_client


def _one(manager, name, **create):
    found = [x for x in manager.list() if x.name == name]
    return found[0] if found else manager.create(name=name, **create)


def main():
    """Make the catalog and accounts match; print what was there/created."""
    env = os.environ
    keystone = 'http://127.0.0.1:%s/v3' % env['DEVCLOUD_KEYSTONE_PORT']
    auth = v3.Password(auth_url=keystone, username='admin',
                       password=env['DEVCLOUD_ADMIN_PASSWORD'],
                       project_name='admin', user_domain_id='default',
                       project_domain_id='default')
    ks = ks_client.Client(session=ks_session.Session(auth=auth),
                          interface='public')
    roles = {r.name: r for r in ks.roles.list()}
    for name in ('admin', 'member', 'reader', 'service', 'manager'):
        if name not in roles:
            roles[name] = ks.roles.create(name=name)
    projects = {name: _one(ks.projects, name, domain='default')
                for name in ('service', 'demo')}
    accounts = (('nova', 'service', env['DEVCLOUD_SERVICE_PASSWORD'],
                 ('admin', 'service')),
                ('placement', 'service', env['DEVCLOUD_SERVICE_PASSWORD'],
                 ('admin', 'service')),
                ('glance', 'service', env['DEVCLOUD_SERVICE_PASSWORD'],
                 ('admin', 'service')),
                ('cacheaware', 'service', env['DEVCLOUD_SERVICE_PASSWORD'],
                 ('admin', 'service')),
                ('demo', 'demo', env['DEVCLOUD_ADMIN_PASSWORD'],
                 ('member', 'reader')))
    watcher = env.get('DEVCLOUD_WATCHER', '0') == '1'
    if watcher:
        # Admin: Nova's live migration and nova-cacheaware-api's host
        # views (hosts:show) are admin-only.
        accounts += (('watcher', 'service', env['DEVCLOUD_SERVICE_PASSWORD'],
                      ('admin', 'service')),)
    for user_name, project, password, role_names in accounts:
        user = _one(ks.users, user_name, domain='default', password=password)
        # Keep the password in step with secrets.env on every up.
        ks.users.update(user, password=password)
        for role in role_names:
            ks.roles.grant(roles[role], user=user, project=projects[project])
    urls = {
        ('compute', 'nova'):
            'http://127.0.0.1:%s/v2.1' % env['DEVCLOUD_NOVA_PORT'],
        ('placement', 'placement'):
            'http://127.0.0.1:%s' % env['DEVCLOUD_PLACEMENT_PORT'],
        ('image', 'glance'):
            'http://127.0.0.1:%s' % env['DEVCLOUD_IMAGE_PORT'],
        ('cache-aware', 'nova-cacheaware'):
            'http://127.0.0.1:%s' % env['DEVCLOUD_CACHEAWARE_API_PORT'],
    }
    if watcher:
        urls[('infra-optim', 'watcher')] = (
            'http://127.0.0.1:%s' % env['DEVCLOUD_WATCHER_PORT'])
    for (stype, sname), url in urls.items():
        found = [s for s in ks.services.list() if s.type == stype]
        service = found[0] if found else ks.services.create(
            name=sname, type=stype)
        have = {e.interface: e for e in ks.endpoints.list(service=service)}
        for interface in ('public', 'internal', 'admin'):
            if interface not in have:
                ks.endpoints.create(service=service, url=url,
                                    interface=interface, region='RegionOne')
            elif have[interface].url != url:
                ks.endpoints.update(have[interface], url=url)
    print('keystone: projects service/demo, users %s, endpoints %s'
          % ('/'.join(a[0] for a in accounts),
             ', '.join(s for s, _ in urls)))


if __name__ == '__main__':
    main()
