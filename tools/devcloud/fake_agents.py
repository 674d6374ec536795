"""The real nova-cacheaware agent on each of the devcloud's fake computes.

The fake computes run Nova's fake driver: no guest runs, so no agent has
anything to pin. To measure what the agent does (per-host provider model:
it chooses each instance's domain and keeps ``max_unit``/``reserved`` of
``<cn>:cacheaware`` current), this process runs, for every fake compute
named on the command line, the agent's own code:

* :class:`~nova_cacheaware.agent.service.Agent` with the real planner
  (:class:`~nova_cacheaware.cachedomain.repinning.Planner`), actuator and
  :meth:`Agent.run` loop (a pass at start, on libvirt lifecycle events,
  every ``--period``);
* the real Placement reporter (``HostPlacementReporter``, or
  ``PlacementSyncReporter`` with ``--provider-model domain``) through the
  devcloud's Keystone session, with the agent's default CPU allocation
  ratio: Nova's (the compute node's ``VCPU``), which the scheduler uses
  too (``DEVCLOUD_CPU_ALLOCATION_RATIO`` sets it);
* the real ``cacheaware.host.state`` publisher on the devcloud's RabbitMQ,
  as the compute's service host, so the scheduler gets live state;
* the real describe RPC server (:mod:`nova_cacheaware.agent.rpc`) on the
  same bus, so ``openstack cacheaware host show`` answers for these hosts;
* as hypervisor, libvirt's ``test:///`` driver: one private test
  connection per host (``test:///<node xml>``), in which Nova's instances
  of that host are mirrored (:class:`NovaMirror`): a test domain with the
  instance's uuid, vCPUs and Nova's metadata is defined and started when
  Nova has the server ACTIVE there, and destroyed and undefined when it is
  gone. Flavor extra specs come from the same listing (a
  ``StaticSpecSource``).

One deviation from the real hypervisor adapter, forced by the test driver:
it reports a canned map of **8** host CPUs (``virConnectGetCPUMap``), and
libvirt-python sizes every pin map by it, so pins beyond CPU 7 are cut off
both ways. :class:`WideTestHypervisor` therefore answers ``host_cpus`` from
the host's topology and keeps the live pins itself; listing, Nova's XML,
the agent's metadata and lifecycle events stay libvirt's.

Hosts whose name ends in ``-plain`` (not opted in) get no agent.

Every second the agents' choices are written to ``--state`` (JSON)::

    {"hosts": {host: {"domains": N, "passes": N, "instances": {uuid: {
        "domain": "L3-1" or null,     # where the agent pins it now
        "holds_host_room": true,      # its allocation holds host room
        "first_domain": ...,          # its first decision with room
                                      # (null: no domain had room)
        "unplaced_passes": N}}}}}     # passes it held room but got none

Run by ``tools/devcloud.sh up`` when ``DEVCLOUD_FAKE_AGENTS=1``, with the
devcloud venv's Python::

    fake_agents.py [--period S] [--state FILE] HOST...
"""

import argparse
import json
import logging
import os
import re
import signal
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import cloud as cloudlib  # noqa: E402

from keystoneauth1 import adapter  # noqa: E402
import libvirt  # noqa: E402
from oslo_config import cfg  # noqa: E402

from nova_cacheaware.agent import actuator  # noqa: E402
from nova_cacheaware.agent import describe  # noqa: E402
from nova_cacheaware.agent import hypervisor  # noqa: E402
from nova_cacheaware.agent import notify  # noqa: E402
from nova_cacheaware.agent import placement_host_report  # noqa: E402
from nova_cacheaware.agent import placement_report  # noqa: E402
from nova_cacheaware.agent import reporting  # noqa: E402
from nova_cacheaware.agent import rpc as agent_rpc  # noqa: E402
from nova_cacheaware.agent import service  # noqa: E402
from nova_cacheaware.agent import specs  # noqa: E402
from nova_cacheaware.cachedomain import agent as repin_agent  # noqa: E402
from nova_cacheaware.cachedomain import repinning  # noqa: E402
from nova_cacheaware.conf import reporting as reporting_conf  # noqa: E402
from nova_cacheaware import exception  # noqa: E402
from nova_cacheaware.placement import client as pclient  # noqa: E402

LOG = logging.getLogger('fake_agents')

NOVA_NS = 'http://openstack.org/xmlns/libvirt/nova/1.1'
#: Nova's metadata, trimmed to what the agent reads (tests/fixtures).
DOMAIN_XML = (
    "<domain type='test'><name>{name}</name><uuid>{uuid}</uuid>"
    '<metadata><nova:instance xmlns:nova="' + NOVA_NS + '">'
    '<nova:package version="34.0.0"/><nova:name>{server}</nova:name>'
    '<nova:flavor name="{flavor}"><nova:memory>{ram}</nova:memory>'
    '<nova:vcpus>{vcpus}</nova:vcpus></nova:flavor></nova:instance>'
    "</metadata><memory unit='MiB'>{ram}</memory>"
    "<vcpu placement='static'>{vcpus}</vcpu>"
    '<os><type>hvm</type></os></domain>')
NODE_XML = ('<node><cpu><mhz>2000</mhz><model>x86_64</model>'
            '<active>{n}</active><nodes>1</nodes><sockets>1</sockets>'
            '<cores>{n}</cores><threads>1</threads></cpu>'
            '<memory>{kib}</memory></node>')


class WideTestHypervisor(hypervisor.LibvirtHypervisor):
    """``LibvirtHypervisor`` on a test:/// connection of any CPU count.

    The test driver's CPU map is canned at 8 CPUs and libvirt-python cuts
    every pin map to it, so the host's CPUs come from its topology and the
    live pins are kept here (validated as libvirt would: a running domain,
    CPUs of the host). Everything else is the real adapter.
    """

    def __init__(self, uri, cpus):
        super().__init__(uri)
        self._cpus = tuple(sorted(cpus))
        self._pins = {}  # uuid -> {vcpu: cpus}
        self.started = threading.Event()

    def host_cpus(self):
        """The topology's online CPUs (the test driver's map is canned)."""
        return self._cpus

    def _instance(self, dom, *args):
        found = super()._instance(dom, *args)
        if found is None:
            return None
        pins = self._pins.get(found.uuid, {})
        live = {v: pins.get(v, cpus) for v, cpus in found.nova.allowed.items()}
        moved = any(live[v] != found.nova.allowed[v] for v in live)
        return hypervisor.Instance(nova=found.nova, live=live,
                                   ours=found.ours if moved else frozenset())

    def pin_vcpu(self, uuid, vcpu, cpus):
        """Record the pin (live only, like ``VIR_DOMAIN_AFFECT_LIVE``)."""
        if not cpus or not set(cpus) <= set(self._cpus):
            raise exception.InvalidInput(
                reason='refusing to pin vCPU %d of %s to %s'
                       % (vcpu, uuid, cpus))
        if not self.on_domain(uuid, lambda dom: dom.is_active()):
            raise hypervisor.DomainGone(uuid=uuid, reason='not running')
        self._pins.setdefault(uuid, {})[vcpu] = tuple(sorted(cpus))

    def start(self, on_event):
        """The real subscription; then tell the mirror it may define."""
        super().start(on_event)
        self.started.set()

    def forget(self, uuid):
        """Drop the pins of an undefined domain."""
        self._pins.pop(uuid, None)


class RecordingAgent(service.Agent):
    """The real agent; after each pass it records where instances went."""

    def __init__(self, *args, **kwargs):
        self.record = {}   # uuid -> dict (see the module docstring)
        self.passes = 0
        self.lock = threading.Lock()
        super().__init__(*args, **kwargs)

    def reconcile(self):
        """One real pass, then what it decided per instance."""
        one = super().reconcile()
        uuids = [i.uuid for i in one.snapshot.instances]
        # Cached by the reporter: no Placement request for known ones.
        held = self.placement.held_domains(uuids)
        record = {}
        for uuid in uuids:
            before = self.record.get(uuid)
            domain = self.last_held.get(uuid)
            room = (held.get(uuid) == reporting.ANY_DOMAIN
                    or (self.placement.per_domain and uuid in held))
            entry = dict(before or {'unplaced_passes': 0})
            entry.update(domain=domain, holds_host_room=room)
            if room and 'first_domain' not in entry:
                # The decision of the first pass that saw its room.
                entry['first_domain'] = domain
            if room and domain is None:
                entry['unplaced_passes'] += 1
            record[uuid] = entry
        with self.lock:
            self.record = record
            self.passes += 1
        return one

    def snapshot(self):
        """A copy of the record (any thread)."""
        with self.lock:
            return {'passes': self.passes,
                    'domains': len(self.domain_set.domains),
                    'instances': {u: dict(e) for u, e in self.record.items()}}


def domain_set_of(host):
    """The host's cache domains and online CPUs, from its topology file."""
    from nova_cacheaware.topology import domains
    from nova_cacheaware.topology import report
    name = re.sub(r'-[0-9]+$', '', host.replace('devcloud-', '', 1))
    with open(os.path.join(cloudlib.TOPOLOGIES, name + '.json')) as f:
        doc = json.load(f)
    topology = report.from_report(doc)
    return domains.cache_domains(topology), tuple(doc['online_cpus'])


def build_agent(host, workdir, placement, transport, topic, period,
                provider_model, spec_map):
    """One host's agent, wired as ``nova-cacheaware-agent`` wires it."""
    domain_set, cpus = domain_set_of(host)
    node = os.path.join(workdir, host + '.xml')
    with open(node, 'w') as f:
        f.write(NODE_XML.format(n=len(cpus), kib=64 * 1024 * 1024))
    hv = WideTestHypervisor('test://' + node, cpus)
    reporter = (placement_report.PlacementSyncReporter
                if provider_model == 'domain'
                else placement_host_report.HostPlacementReporter)
    act = actuator.Actuator(hv, actuator.RateLimiter(64, period))
    return RecordingAgent(
        hv, domain_set, repin_agent.RepinStep(repinning.Planner(), act),
        spec_source=specs.StaticSpecSource(spec_map), usable_cpus=cpus,
        placement=reporter(placement, host),
        publisher=notify.NotificationStatePublisher(transport, host, topic))


class NovaMirror(object):
    """Keeps each host's test domains equal to Nova's ACTIVE servers."""

    def __init__(self, cloud, agents, spec_map):
        self.cloud = cloud
        self.agents = agents       # host -> RecordingAgent
        self.spec_map = spec_map   # uuid -> extra specs (shared, read live)

    def poll(self):
        """One listing of Nova; define, start or remove domains."""
        servers = self.cloud.nova('GET', '/servers/detail?all_tenants=1')[
            'servers']
        want = {host: {} for host in self.agents}
        for s in servers:
            host = s.get('OS-EXT-SRV-ATTR:host')
            if host in want and s['status'] == 'ACTIVE':
                want[host][s['id']] = s
        for host, agent in self.agents.items():
            self._sync_host(agent.hypervisor, want[host])

    def _sync_host(self, hv, servers):
        conn = hv.connection()
        have = {d.UUIDString(): d for d in conn.listAllDomains(0)}
        for uuid, dom in have.items():
            if uuid not in servers:
                if dom.isActive():
                    dom.destroy()
                dom.undefine()
                hv.forget(uuid)
                self.spec_map.pop(uuid, None)
        for uuid, s in servers.items():
            if uuid in have:
                continue
            flavor = s['flavor']
            self.spec_map[uuid] = {str(k): str(v) for k, v in (
                flavor.get('extra_specs') or {}).items()}
            conn.defineXML(DOMAIN_XML.format(
                # Nova's own domain name (instance-%08x of its id): the
                # agent places new instances in that order.
                name=_xml_text(s.get('OS-EXT-SRV-ATTR:instance_name')
                               or 'server-%s' % uuid),
                uuid=uuid,
                server=_xml_text(s['name']),
                flavor=_xml_text(flavor['original_name']),
                ram=flavor['ram'], vcpus=flavor['vcpus'])).create()


def _xml_text(text):
    return (text.replace('&', '&amp;').replace('<', '&lt;')
            .replace('>', '&gt;'))


def write_state(path, agents):
    doc = {'time': time.time(),
           'hosts': {h: a.snapshot() for h, a in sorted(agents.items())}}
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path) or '.')
    with os.fdopen(fd, 'w') as f:
        json.dump(doc, f)
    os.replace(tmp, path)


#: ``[agent] state_request_spread_s`` of the emulated agents.
STATE_REQUEST_SPREAD_S = 5.0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('hosts', nargs='+',
                        help='fake compute service hosts (devcloud-...)')
    parser.add_argument('--period', type=float, default=3.0,
                        help="each agent's period (s)")
    parser.add_argument('--poll', type=float, default=1.0,
                        help='seconds between two listings of Nova')
    parser.add_argument('--provider-model', choices=('host', 'domain'),
                        default='host')
    parser.add_argument('--state', default=os.path.join(
        os.environ.get('DEVCLOUD_DIR', '.'), 'run', 'fake-agents.json'))
    parser.add_argument('--workdir', default=None,
                        help='where the node XML files go (default: next '
                             'to --state)')
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr,
        format='%(asctime)s %(levelname)s %(threadName)s %(name)s: '
               '%(message)s')
    hosts = [h for h in args.hosts if not re.search(r'-plain(-[0-9]+)?$', h)]
    workdir = args.workdir or os.path.join(os.path.dirname(
        os.path.abspath(args.state)), 'fake-agents')
    os.makedirs(workdir, exist_ok=True)

    cloud = cloudlib.Cloud()
    placement = pclient.PlacementClient(adapter.Adapter(
        cloud.session, service_type='placement', interface='public'))
    conf = cfg.ConfigOpts()
    reporting_conf.register_opts(conf)
    conf([])
    transport = notify.notification_transport(
        conf, url=os.environ['DEVCLOUD_TRANSPORT_URL'])
    topic = conf.cacheaware_scheduler.host_state_topic
    spec_map = {}
    agents = {h: build_agent(h, workdir, placement, transport, topic,
                             args.period, args.provider_model, spec_map)
              for h in hosts}
    rpc_transport = agent_rpc.transport(
        conf, url=os.environ['DEVCLOUD_TRANSPORT_URL'])
    servers = [agent_rpc.start_server(
        rpc_transport, 'cacheaware-agent', host, [
            agent_rpc.DescribeEndpoint(
                agent, host, describe.PER_HOST
                if args.provider_model == 'host' else describe.PER_DOMAIN,
                stale_s=3 * args.period),
            # 22 hosts: their answers to a starting scheduler need no
            # spreading beyond a pass or two.
            agent_rpc.StateRequestEndpoint(agent, STATE_REQUEST_SPREAD_S)])
        for host, agent in agents.items()]
    threads = []
    for host, agent in agents.items():
        t = threading.Thread(target=agent.run, args=(args.period,),
                             name=host, daemon=True)
        t.start()
        threads.append(t)
    for agent in agents.values():
        agent.hypervisor.started.wait(60)
    LOG.info('%d agents running (%s model, period %.1fs): %s',
             len(agents), args.provider_model, args.period, ' '.join(hosts))

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    mirror = NovaMirror(cloud, agents, spec_map)
    while not stop.is_set():
        try:
            mirror.poll()
        except (RuntimeError, libvirt.libvirtError, OSError) as e:
            LOG.warning('mirroring Nova failed: %s', e)
        write_state(args.state, agents)
        stop.wait(args.poll)
    for agent in agents.values():
        agent.stop()
    for t in threads:
        t.join(30)
    for server in servers:
        server.stop()
        server.wait()
    rpc_transport.cleanup()
    transport.cleanup()
    return 0


if __name__ == '__main__':
    sys.exit(main())
