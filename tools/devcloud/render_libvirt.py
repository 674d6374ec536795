"""The devcloud's libvirt computes and their agents: configuration text.

Used by ``render.py``. Up to two libvirt computes, each with its own
private libvirtd (``libvirt_ns.sh``) and ``nova-cacheaware-agent``:

* ``devcloud-libvirt`` (always): the agent in the per-host provider model
  (its default) at the automatic cache level: one L3 domain on the
  project's machines, so it never pins a guest of this machine;
* ``devcloud-libvirt2`` (``DEVCLOUD_LIBVIRT_COMPUTES=2``): the agent in the
  per-domain provider model at ``cache_level = 2`` (one domain per core's
  L2 on the project's machines), so a cache-aware guest there holds one
  domain provider in Placement and the agent pins its vCPUs into that
  domain: the source of the tempest live-migration scenario.

Both computes have the same ``instances_path``, each its own directory
mounted there in its own mount namespace (``libvirt_ns.sh``), as two
machines with local disks: Nova requires one instances_path on every
compute (the destination's domain gets the source's disk paths). They
migrate to each other with block migration (libvirt refuses a migration
of local disks without copying them, "Migration without shared storage is
unsafe"): ``[libvirt] live_migration_uri`` is the *other* daemon's unix
socket (``%.0s`` takes Nova's destination address and prints nothing of
it), and ``live_migration_inbound_addr = 127.0.0.1`` makes Nova pass
``tcp://127.0.0.1`` as QEMU's migration URI, so the memory and NBD disk
streams go over loopback (libvirt refuses ``migration_address`` or a host
name on loopback in its own configuration). Tunnelled migration is no way
round: libvirt does not copy disks in a tunnelled migration with QEMU's
-blockdev.
"""


def ksa(group, v, extra=''):
    """A keystoneauth section for the ``nova`` service user."""
    return """
[{group}]
auth_type = password
auth_url = {keystone}
username = nova
password = {service_password}
user_domain_name = Default
project_name = service
project_domain_name = Default
region_name = RegionOne
{extra}""".format(group=group, extra=extra, **v)


#: ``[balloon] pool_mib`` of the devcloud's agents (the tempest ballooning
#: scenario reads it back from agent.conf).
BALLOON_POOL_MIB = 96


def agent_conf(v, host='devcloud-libvirt', second=False):
    """``nova-cacheaware-agent``'s config for one libvirt compute.

    Same libvirtd and the same ``cpu_shared_set`` as that nova-compute;
    specs from the Nova API with the ``nova`` service user. The
    ``[placement]`` and ``[oslo_messaging_notifications]`` sections are for
    the agent's Placement sync and host-state notifications. ``second``:
    the per-domain, L2 agent of ``devcloud-libvirt2``.
    """
    v = dict(v, balloon_pool_mib=BALLOON_POOL_MIB)
    text = """\
[DEFAULT]
debug = {debug}
transport_url = {transport}
[agent]
libvirt_uri = {libvirt_uri}
# A few seconds, so the demo sees pins soon after a server is ACTIVE (the
# agent also wakes on every libvirt lifecycle event).
period_s = {agent_period}
cpu_shared_set = {cpu_shared_set}
spec_source = nova
# No hardware PMU in a TCG devcloud; reading vCPU thread ids would also
# taint every guest with "custom-monitor".
counters = False
# Instead, the counts of an instance come from {dc}/counter-traces/
# <uuid>.json when a test writes one (tempest's Watcher scenario: a
# memory-bound trace for its "auto" server); the classification after
# the counts is the agent's own. Instances without a file get none.
counter_trace_dir = {dc}/counter-traces
# Short sampling windows (the default is 5 passes, 10 minutes apart), so
# that a trace with cycles in both share modes is sampled in seconds, and
# fewer samples per vote and votes in a row (8 and 3 by default): a
# one-vCPU "auto" server is classified after 9 passes (about 30 s), not 25.
sampling_passes = 2
sampling_interval_s = 30
classifier_min_samples = 4
classifier_dwell = 2
# Report to Placement (domain providers, MEMBOUND reserved, allocations)
# and send cacheaware.host.state for the scheduler, as the libvirt
# compute's service host.
report_placement = True
notifications = True
host = {host}
# Read by the libvirt hook (install-hook --pin-record-dir) when a guest
# starts while this agent is down.
pin_record_dir = {dc}/pins/{host}
# vCPU sizing for flavors that ask (cacheaware:vcpu_sizing); the tempest
# plugin checks it through the guest console. No kvm_exit tracepoint (TCG).
# apply_when = always: vcpu_sizing=apply sizes at every pass, not only in a
# spin storm (the default), so the tempest scenario sees it without one.
# Hit-ratio ballooning for flavors that ask (cacheaware:memory_policy):
# a small pool the tempest scenario's idle guests fill exactly, and short
# rounds so that it sees the balloons move within seconds.
capabilities = vcpu_sizing, balloon
[vcpu_sizing]
kvm_exit_tracepoint = False
apply_when = always
[balloon]
pool_mib = {balloon_pool_mib}
interval_s = 3
sample_s = 1
[topology]
libvirt_uri = {libvirt_uri}
{level}""".format(host=host, level='cache_level = 2\n' if second else '',
                  **v) + ksa('nova', v, 'interface = public\n') + ksa(
        'placement', v, 'valid_interfaces = public\n' + (
            'provider_model = domain\n' if second else '')) + """
[oslo_messaging_notifications]
driver = messagingv2
transport_url = {transport}
""".format(**v)
    return text


#: Nova 34 fetches an AMI guest's kernel and ramdisk for a live migration's
#: destination with ``fetch_to_raw``, whose deep inspection takes a Linux
#: bzImage for an MBR disk and rejects it ("Safety checks failed: mbr"); the
#: boot path (``fetch_raw_image``) does not inspect them. The devcloud's
#: images are its own (build_image.sh), so its libvirt computes skip it.
WORKAROUND = """[workarounds]
disable_deep_image_inspection = True
"""


def compute_conf(v, c, libvirt_computes, conf_path):
    """The ``compute-<name>.conf`` lines of libvirt compute ``c``.

    ``libvirt_computes``: every libvirt compute of the devcloud (``c``
    migrates to the other one, if any).
    """
    helper = ('{venv}/bin/privsep-helper --config-file '
              '{dc}/etc/nova/nova.conf --config-file {conf}'
              ).format(conf=conf_path, **v)
    others = [o for o in libvirt_computes if o['name'] != c['name']]
    migration = ''
    if others:
        other_uri = others[0].get('libvirt_uri', v['libvirt_uri'])
        # Nova formats the URI with the destination's address: "%.0s"
        # takes it and prints nothing (the socket says which daemon).
        migration = ('live_migration_uri = %s%%.0s\n'
                     'live_migration_inbound_addr = 127.0.0.1\n'
                     % other_uri.replace('%', '%%')) + WORKAROUND
    return """\
[DEFAULT]
compute_driver = libvirt.LibvirtDriver
instances_path = {dc}/nova/libvirt-instances
[compute]
cpu_shared_set = {cpu_shared_set}
[libvirt]
virt_type = qemu
cpu_mode = none
connection_uri = {uri}
{migration}[nova_sys_admin]
helper_command = {helper}
[vif_plug_ovs_privileged]
helper_command = {helper}
[vif_plug_linux_bridge_privileged]
helper_command = {helper}
""".format(helper=helper, migration=migration,
           uri=c.get('libvirt_uri', v['libvirt_uri']), **v)


def agent_files(v, libvirt_computes):
    """``{file name: text}`` of the agents' configs (etc/nova-cacheaware).

    ``agent.conf`` for the first libvirt compute (the one tempest's
    capability tests use), ``agent-<host>.conf`` for the second.
    """
    files = {}
    for n, c in enumerate(libvirt_computes):
        cv = dict(v, libvirt_uri=c.get('libvirt_uri', v['libvirt_uri']))
        name = 'agent.conf' if n == 0 else 'agent-%s.conf' % c['name']
        files[name] = agent_conf(cv, host=c['name'], second=n > 0)
    return files
