"""Hypothesis strategies: small random region snapshots."""

from hypothesis import strategies as st

from nova_cacheaware.contracts import rebalance_snapshot as rs

GROUPS = (('ga', 'affinity'), ('gaa', 'anti-affinity'))


@st.composite
def hosts(draw, name, first_uuid):
    """A host of 1-3 small domains holding up to 4 servers that fit.

    Placement's ``max_unit`` on the host and its domains: often none.
    """
    capacities = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3))
    max_unit = st.one_of(st.none(), st.none(), st.integers(1, 3))
    domains = tuple(rs.Domain('d%d' % n, c, n % 2, draw(max_unit))
                    for n, c in enumerate(capacities))
    free = dict(enumerate(capacities))
    servers = []
    for n in range(draw(st.integers(0, 4))):
        vcpus = draw(st.integers(1, 2))
        want = draw(st.one_of(st.none(), st.integers(0, len(domains) - 1)))
        domain = None
        if want is not None and free[want] >= vcpus:
            free[want] -= vcpus
            domain = 'd%d' % want
        servers.append(rs.Server(
            uuid='s%02d' % (first_uuid + n), vcpus=vcpus,
            workload=draw(st.sampled_from(rs.CLASSES + ('memory',))),
            cache_clean=draw(st.sampled_from(rs.CACHE_CLEAN)),
            cache_aware=draw(st.sampled_from((True, True, True, False))),
            opt_out=draw(st.sampled_from((False, False, False, True))),
            group=draw(st.sampled_from((None, None, None, 'ga', 'gaa'))),
            domain=domain, storm=draw(st.sampled_from((False, False,
                                                       True))),
            # The flavor's workload: often ``auto`` (an ``auto`` server
            # found CPU-bound still wants Clean to the agent); None: a
            # document without it.
            declared=draw(st.sampled_from((None, 'auto', 'auto', 'memory',
                                           'cpu', 'io')))))
    pcpus = draw(st.integers(1, sum(capacities) + 2))
    return rs.Host(name, pcpus, domains, tuple(servers), draw(max_unit))


@st.composite
def snapshots(draw, max_hosts=3):
    """A region of 2..``max_hosts`` hosts, up to 2 refused requests.

    Either priority.
    """
    out = []
    for n in range(draw(st.integers(2, max_hosts))):
        out.append(draw(hosts('h%d' % n, 10 * n)))
    pending = tuple(draw(st.lists(st.integers(1, 4), max_size=2)))
    return rs.Snapshot(tuple(out), GROUPS, pending,
                       draw(st.sampled_from(rs.PRIORITIES)))
