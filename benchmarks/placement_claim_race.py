"""Does Placement keep a provider within capacity under concurrent claims?

Two real Placement 16 services (``placement.wsgi.api`` in two processes,
``tools/wsgi_serve.py``) on one scratch MariaDB database; one provider with
a single unit of ``CUSTOM_CACHE_DOMAIN_MEMBOUND`` (a Clean slot). Each trial
sends two ``PUT /allocations/{consumer}`` claiming that unit, one to each
service, released by a barrier so that they overlap; a correct Placement
accepts one and refuses the other (HTTP 409). The script counts the trials
in which **both** were accepted (usage 2 on capacity 1), for each Placement
configuration given, and writes ``benchmarks/results/
placement_claim_race.json``::

    .venv/bin/python benchmarks/placement_claim_race.py [--trials 40]

Configurations: Placement's defaults; ``[placement]
allocation_conflict_retry_count = 1`` (no server-side retry); and the
services' database sessions at READ COMMITTED.
"""

import argparse
import json
import os
import sys
import threading
import uuid

import requests

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks import common  # noqa: E402
from tests import placement_fixtures  # noqa: E402

RC = 'CUSTOM_CACHE_DOMAIN_MEMBOUND'
HEADERS = {'X-Auth-Token': 'admin',
           'OpenStack-API-Version': 'placement 1.36'}
CONFIGS = {
    'defaults': ({}, ''),
    'no-server-retry': ({'allocation_conflict_retry_count': 1}, ''),
    'read-committed': ({}, '&init_command=SET%20SESSION%20TRANSACTION%20'
                           'ISOLATION%20LEVEL%20READ%20COMMITTED'),
}


class Service(placement_fixtures.PlacementService):
    """The project's Placement service fixture with extra URL options."""

    def __init__(self, url_suffix='', **kwargs):
        super().__init__(**kwargs)
        self.url_suffix = url_suffix

    @property
    def db_url(self):
        return super().db_url + self.url_suffix


def setup_provider(endpoint):
    """A provider with one unit of ``RC``; its uuid."""
    rp = str(uuid.uuid4())
    requests.put(endpoint + '/resource_classes/' + RC,
                 headers=HEADERS).raise_for_status()
    requests.post(endpoint + '/resource_providers', headers=HEADERS,
                  json={'name': 'race-' + rp, 'uuid': rp}
                  ).raise_for_status()
    requests.put(endpoint + '/resource_providers/%s/inventories' % rp,
                 headers=HEADERS,
                 json={'resource_provider_generation': 0,
                       'inventories': {RC: {'total': 1}}}
                 ).raise_for_status()
    return rp


def trial(endpoints, rp):
    """Two overlapping claims of the last unit; how many were accepted."""
    project, user = str(uuid.uuid4()), str(uuid.uuid4())
    consumers = [str(uuid.uuid4()) for _ in endpoints]
    codes = {}
    barrier = threading.Barrier(len(endpoints))

    def claim(i):
        body = {'allocations': {rp: {'resources': {RC: 1}}},
                'project_id': project, 'user_id': user,
                'consumer_generation': None}
        barrier.wait()
        codes[i] = requests.put(
            '%s/allocations/%s' % (endpoints[i], consumers[i]),
            headers=HEADERS, json=body).status_code

    threads = [threading.Thread(target=claim, args=(i,))
               for i in range(len(endpoints))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    usage = requests.get(endpoints[0] + '/resource_providers/%s/usages'
                         % rp, headers=HEADERS).json()['usages'][RC]
    for consumer in consumers:
        requests.delete(endpoints[0] + '/allocations/' + consumer,
                        headers=HEADERS)
    return sorted(codes.values()), usage


def run_config(name, trials):
    """Both services with one configuration; the trial counts."""
    opts, suffix = CONFIGS[name]
    first = Service(url_suffix=suffix, placement_opts=opts)
    first.setUp()
    try:
        second = Service(url_suffix=suffix, placement_opts=opts,
                         database=first.database)
        second.setUp()
        try:
            endpoints = [first.endpoint, second.endpoint]
            rp = setup_provider(endpoints[0])
            results = [trial(endpoints, rp) for _ in range(trials)]
        finally:
            second.cleanUp()
    finally:
        first.cleanUp()
    over = sum(1 for codes, usage in results if usage > 1)
    return {'config': name, 'trials': trials,
            'both_accepted': sum(1 for codes, _ in results
                                 if codes == [204, 204]),
            'over_capacity': over,
            'one_accepted': sum(1 for codes, _ in results
                                if codes.count(204) == 1)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--trials', type=int, default=40)
    parser.add_argument('--configs', default=','.join(CONFIGS))
    parser.add_argument('--out', default=os.path.join(
        ROOT, 'benchmarks', 'results', 'placement_claim_race.json'))
    args = parser.parse_args(argv)
    if not placement_fixtures.mariadb_available():
        print('placement_claim_race: MariaDB is not reachable',
              file=sys.stderr)
        return 2
    load = os.getloadavg()[0]
    results = [run_config(name, args.trials)
               for name in args.configs.split(',')]
    doc = {'benchmark': 'placement_claim_race',
           'command': 'benchmarks/placement_claim_race.py --trials %d'
                      % args.trials,
           'date': common.now(),
           'machine': common.machine(),
           'load_avg_at_start': round(load, 2),
           'placement': _version('openstack-placement'),
           'results': results}
    common.write_json(args.out, doc)
    for r in results:
        print(json.dumps(r))
    return 0


def _version(dist):
    from importlib import metadata
    return metadata.version(dist)


if __name__ == '__main__':
    sys.exit(main())
