"""``nova-cacheaware-agent``: the per-compute-node daemon.

``nova-cacheaware-agent [--config-file F] [--once] [--dry-run]
[--dump-state FILE]``. Without ``--once`` or ``--dump-state`` it runs until
SIGTERM/SIGINT. ``--once`` reconciles once and prints the decisions as a
table; ``--dump-state FILE`` writes the ``plan`` input document (plus an
``"agent"`` section) that ``nova-cacheaware plan --input FILE`` replays;
the section includes the agent's decisions (workload, action, domains) for
the observed state, so ``--dump-state -`` alone is a read-only view of what
the agent would do (it never pins, syncs or publishes).
"""

import json
import signal
import socket
import sys

from oslo_config import cfg
from oslo_log import log as logging

from nova_cacheaware.agent import actuator
from nova_cacheaware.agent import capability
from nova_cacheaware.agent import hypervisor
from nova_cacheaware.agent import metrics
from nova_cacheaware.agent import pin_record
from nova_cacheaware.agent import placement_host_report
from nova_cacheaware.agent import placement_report
from nova_cacheaware.agent import service
from nova_cacheaware.agent import specs
from nova_cacheaware.cachedomain import agent as repin_agent
from nova_cacheaware.cachedomain import counters
from nova_cacheaware.cachedomain import memclass
from nova_cacheaware.cachedomain import repinning
from nova_cacheaware.cachedomain import sampling
from nova_cacheaware.conf import opts as conf_opts
from nova_cacheaware import exception
from nova_cacheaware.policy import state_cadence
from nova_cacheaware import privsep
from nova_cacheaware.topology import cpulist
from nova_cacheaware.topology import domains
from nova_cacheaware.topology import source as topology_source
from nova_cacheaware import version

LOG = logging.getLogger(__name__)
EXIT_ERROR = 2

cli_opts = [
    cfg.BoolOpt('once', default=False,
                help='Reconcile once, print the decisions as a table and '
                     'exit.'),
    cfg.BoolOpt('dry-run', default=False, dest='cli_dry_run',
                help='Decide and report, never change a pin (same as '
                     '[agent] dry_run).'),
    cfg.StrOpt('dump-state', metavar='FILE', dest='dump_state',
               help='Write the observed state as a "plan" input document '
                    '(with an "agent" section) to FILE ("-": stdout) and '
                    'exit, unless --once is given too.'),
]


def make_conf(argv):
    """A parsed, private ConfigOpts (tests call :func:`main` repeatedly)."""
    conf = cfg.ConfigOpts()
    conf_opts.register_agent_opts(conf)
    logging.register_options(conf)
    # Logs go to stderr (the journal under systemd); stdout carries only
    # the --once table and --dump-state -.
    conf.set_default('use_stderr', True)
    conf.register_cli_opts(cli_opts)
    conf(argv, project='nova-cacheaware', prog='nova-cacheaware-agent',
         version=version.version_string())
    return conf


#: The host topology from ``[topology]`` (kept here for callers of old).
read_topology = topology_source.read_topology


def silent_configuration(conf):
    """Warnings for what this configuration asks for and cannot do.

    Every run-time capability acts only on instances whose flavor opts in,
    and the agent knows flavors only through ``[agent] spec_source``:
    without one, a capability (and every declared workload) silently does
    nothing. Likewise ``[agent] counters = false`` turns off the
    classification of ``auto`` instances, and ``balloon`` with
    ``[balloon] pool_mib = 0`` never shrinks an instance. One warning per
    capability, said once at start.
    """
    out = []
    if conf.agent.spec_source == 'none':
        out.append('[agent] spec_source = none: declared workloads '
                   '(cacheaware:workload) are not read, every instance is '
                   '"auto"; set spec_source = nova on a Nova compute')
        for name in conf.agent.capabilities:
            out.append('[agent] capabilities lists %s, but with spec_source '
                       '= none no flavor can opt in: it will act on no '
                       'instance' % name)
    if conf.agent.counter_trace_dir:
        out.append('[agent] counter_trace_dir is set: counters are replayed '
                   'from the traces in %s, not read from the hardware (a '
                   'test cloud without a PMU); "auto" instances are '
                   'classified by those traces' % conf.agent.counter_trace_dir)
    elif not conf.agent.counters:
        out.append('[agent] counters = false: "auto" instances are never '
                   'classified memory-bound (no CPI or LLC-miss samples); '
                   'only declared workloads are kept All-share')
    if ('balloon' in conf.agent.capabilities and 'balloon' in conf
            and conf.balloon.pool_mib == 0):
        out.append('[agent] capabilities lists balloon, but [balloon] '
                   'pool_mib = 0: no instance is ever shrunk, so no memory '
                   'moves between instances; set pool_mib to the MiB the '
                   'balancer may take')
    return out


def _nova_credentials(conf):
    """Stop with a clear error: ``spec_source = nova`` without credentials.

    Without ``[nova] auth_type`` every lookup would fail, every pass, for
    every instance: an error at start says what to set instead.
    """
    if conf.agent.spec_source != 'nova':
        return
    if conf.nova.auth_type or conf.nova.auth_section:
        return
    raise exception.InvalidInput(
        reason='[agent] spec_source = nova (the default) needs the [nova] '
               'credentials the agent reads flavors with (auth_type, '
               'auth_url, username, ...); set them, or spec_source = file '
               '(with spec_file) or none')


def build_agent(conf, planner=None, hv=None):
    """Wire an :class:`~nova_cacheaware.agent.service.Agent` from ``conf``."""
    agent_metrics = metrics.AgentMetrics()
    topology = read_topology(conf)
    domain_set = domains.cache_domains(topology, conf.topology.cache_level)
    usable = (cpulist.parse_cpulist(conf.agent.cpu_shared_set)
              if conf.agent.cpu_shared_set else topology.online_cpus())
    hv = hv or hypervisor.LibvirtHypervisor(conf.agent.libvirt_uri)
    dry_run = conf.agent.dry_run or conf.cli_dry_run
    act = actuator.Actuator(
        hv, actuator.RateLimiter(conf.agent.max_repins_per_period,
                                 conf.agent.period_s), dry_run=dry_run,
        pin_records=(pin_record.PinRecords(conf.agent.pin_record_dir)
                     if conf.agent.pin_record_dir else None))
    _nova_credentials(conf)
    spec_source = specs.NullSpecSource()
    if conf.agent.spec_source == 'nova':
        spec_source = specs.NovaSpecSource(specs.client_from_conf(conf))
    elif conf.agent.spec_source == 'file':
        if not conf.agent.spec_file:
            raise exception.InvalidInput(
                reason='[agent] spec_source = file needs spec_file')
        spec_source = specs.FileSpecSource(conf.agent.spec_file)
    counter_source = build_counter_source(conf, domain_set)
    for warning in silent_configuration(conf):
        LOG.warning(warning)
    repin = repin_agent.RepinStep(
        planner, act, counter_source,
        max_vcpus_per_cpu=conf.agent.max_vcpus_per_cpu,
        # Classifying 'auto' VMs needs counters; without, declared only.
        classifier=(sampling.ShareSampler(
            domain_set, classifier_config(conf),
            window_passes=conf.agent.sampling_passes,
            interval_s=conf.agent.sampling_interval_s)
            if conf.agent.counters or conf.agent.counter_trace_dir
            else None))
    return service.Agent(
        hv, domain_set, repin, spec_source=spec_source, usable_cpus=usable,
        capabilities=capability.load(conf.agent.capabilities, conf, hv),
        placement=build_placement_reporter(conf, hv),
        publisher=build_publisher(conf, agent_metrics),
        metrics=agent_metrics)


def classifier_config(conf):
    """The classifier's thresholds: study 000's, with ``[agent]``'s counts."""
    return memclass.ClassifierConfig(
        min_samples=conf.agent.classifier_min_samples,
        dwell=conf.agent.classifier_dwell)


def build_counter_source(conf, domain_set):
    """The counter source of ``[agent] counter_trace_dir`` / ``counters``.

    A trace directory wins (a test cloud without a PMU); then hardware
    counters when ``counters`` is on; else none.
    """
    if conf.agent.counter_trace_dir:
        return counters.TraceDirCounterSource(conf.agent.counter_trace_dir,
                                              domain_set.domains)
    if conf.agent.counters:
        return counters.PerfCounterSource()
    return counters.NoCounterSource()


def build_placement_reporter(conf, hv):
    """The Placement reporter of ``[agent] report_placement`` (or None)."""
    if not conf.agent.report_placement:
        return None
    from nova_cacheaware.placement import client as placement_client
    hostname = conf.agent.hypervisor_hostname or hv.hostname
    reporter = (placement_report.PlacementSyncReporter
                if conf.placement.provider_model == 'domain'
                else placement_host_report.HostPlacementReporter)
    return reporter(
        placement_client.PlacementClient.from_conf(conf), hostname,
        cpu_allocation_ratio=conf.agent.domain_cpu_allocation_ratio,
        membound_total=conf.agent.membound_slots,
        child_traits=conf.placement.domain_traits)


def build_publisher(conf, agent_metrics=None):
    """The notification publisher of ``[agent] notifications`` (or None).

    Creating the transport makes no connection: a broker that is down
    delays nothing here.
    """
    if not conf.agent.notifications:
        return None
    # Imported here: oslo.messaging and kombu add tens of MiB of RSS, paid
    # only by agents that publish.
    from nova_cacheaware.agent import notify
    transport = notify.notification_transport(conf)
    return notify.NotificationStatePublisher(
        transport, conf.agent.host or socket.gethostname(),
        conf.cacheaware_scheduler.host_state_topic,
        version=conf.agent.state_payload_version,
        cadence=state_cadence.Cadence(
            heartbeat_s=conf.agent.state_heartbeat_s,
            resync_s=conf.agent.state_resync_s),
        metrics=agent_metrics)


def run_daemon(conf, agent):
    """Run the agent with its metrics exporter and describe RPC server."""
    exporter = metrics.serve(conf.agent.metrics_listen, agent.metrics)
    describe_rpc = _describe_rpc(conf, agent)
    try:
        agent.run(conf.agent.period_s)
    finally:
        if exporter is not None:
            exporter.stop()
        if describe_rpc is not None:
            describe_rpc.stop()
            describe_rpc.wait()


def _describe_rpc(conf, agent):
    """The started describe RPC server, or None when off."""
    if not (conf.cacheaware_status.agent_rpc and conf.agent.notifications):
        return None
    # Imported here for the same reason as the publisher's transport.
    from nova_cacheaware.agent import rpc
    return rpc.serve(conf, agent, conf.agent.host or socket.gethostname())


def _loops(agent, doc):
    """Add the run-time loops' state to a ``--dump-state`` document."""
    classifier = agent.repin.classifier
    if classifier is not None and hasattr(classifier, 'to_dict'):
        doc['agent']['classifier'] = classifier.to_dict()
    return doc


def _dump_with_decisions(agent):
    # Observe once and decide on that same snapshot; no actuation.
    snapshot = agent.observe()
    doc = _loops(agent, agent.dump_state(snapshot))
    try:
        decisions = agent.decide(snapshot)[2]
    except repinning.PlannerError as e:
        doc['agent']['decisions_error'] = str(e)
    else:
        doc['agent']['decisions'] = repin_agent.decisions_document(
            decisions)
    return doc


def _write_state(path, doc):
    text = json.dumps(doc, indent=2, sort_keys=True) + '\n'
    if path == '-':
        sys.stdout.write(text)
    else:
        with open(path, 'w') as f:
            f.write(text)


def main(argv=None, planner=None, hv=None):
    """Entry point; ``planner``/``hv`` are injected by tests only."""
    argv = sys.argv[1:] if argv is None else argv
    conf = make_conf(argv)
    logging.setup(conf, 'nova-cacheaware-agent')
    privsep.init(conf)
    try:
        if planner is None:
            planner = repinning.Planner(objective=conf.agent.plan_objective)
        agent = build_agent(conf, planner=planner, hv=hv)
        if conf.dump_state and not conf.once:
            _write_state(conf.dump_state, _dump_with_decisions(agent))
            return 0
        if conf.once:
            one = agent.reconcile()
            if conf.dump_state:
                doc = _loops(agent, agent.dump_state(one.snapshot,
                                                     one.capabilities))
                doc['agent']['decisions'] = (
                    repin_agent.decisions_document(one.decisions))
                _write_state(conf.dump_state, doc)
            print(repin_agent.format_decisions(one.decisions, one.result))
            for cap in agent.capabilities:
                report = one.capabilities.get(cap.name)
                if report is None:
                    continue
                if isinstance(report, capability.Failed):
                    print('%s: error: %s' % (cap.name, report.reason))
                    continue
                for line in cap.format_report(report):
                    print(line)
            for problem in one.problems:
                print('problem: %s' % problem)
            return 1 if one.result.failed else 0
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: agent.stop())
        LOG.info('nova-cacheaware-agent %s starting on %s (period %.0fs%s)',
                 version.version_string(), conf.agent.libvirt_uri,
                 conf.agent.period_s,
                 ', dry run' if conf.agent.dry_run or conf.cli_dry_run
                 else '')
        run_daemon(conf, agent)
        return 0
    except exception.CacheAwareError as e:
        sys.stderr.write('nova-cacheaware-agent: error: %s\n' % e)
        return EXIT_ERROR


if __name__ == '__main__':
    sys.exit(main())
