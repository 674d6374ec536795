"""The ``[cacheaware]`` group of tempest.conf."""

from oslo_config import cfg

cacheaware_group = cfg.OptGroup(
    name='cacheaware',
    title='nova-cacheaware options',
    help='Options of the nova-cacheaware tempest plugin.')

CacheAwareGroup = [
    cfg.StrOpt('image_ref',
               help='Image to boot the test servers from. Empty: '
                    '[compute] image_ref.'),
    cfg.IntOpt('flavor_vcpus', default=2, min=1,
               help='vCPUs of the cache-aware test flavors. Every cache '
                    'domain under test must hold this many vCPUs.'),
    cfg.IntOpt('flavor_ram_mb', default=256, min=64,
               help='RAM of the test flavors, in MiB.'),
    cfg.IntOpt('flavor_disk_gb', default=1, min=0,
               help='Root disk of the test flavors, in GiB.'),
    cfg.BoolOpt('api_validators', default=True,
                help='Whether the cloud runs the nova-cacheaware flavor '
                     'extra-spec validators in nova-api (the '
                     'nova.api.extra_spec_validators entry point). False '
                     'skips the "bad specs are refused" tests with that '
                     'reason.'),
    cfg.StrOpt('domain_trait', default='CUSTOM_CACHEAWARE_DOMAIN',
               help='Trait that marks cache domain resource providers.'),
    cfg.StrOpt('domain_resource_class', default='CUSTOM_CACHE_DOMAIN_VCPU',
               help='Resource class of a cache domain\'s vCPUs.'),
    cfg.StrOpt('domain_membound_class',
               default='CUSTOM_CACHE_DOMAIN_MEMBOUND',
               help='Resource class of a cache domain\'s memory-bound VM '
                    'slots.'),
    cfg.DictOpt('numa_shapes', default={},
                help='Full-NUMA tests: the NUMA shape of every compute host '
                     'FullNUMAFilter may consider, as host:CPUs per node '
                     'joined by "+" (devcloud-fake-zen:8+8,devcloud-libvirt:'
                     '2), counting the CPUs guests may use on each node '
                     'with memory ([compute] cpu_shared_set), as '
                     '"nova-cacheaware flavor numa-full" does on that host. '
                     'Empty: the full-NUMA tests skip.'),
    cfg.StrOpt('guest_image_ref',
               help='Agent capability tests: an image whose guest runs the '
                    'QEMU guest agent (hw_qemu_guest_agent=yes) and prints '
                    'a "cacheaware-guest:" line on its console whenever '
                    'the vCPU sizing file, its online vCPUs or MemTotal '
                    'change, as the devcloud guest does '
                    '(tools/devcloud/build_image.sh). Empty: those tests '
                    'skip.'),
    cfg.ListOpt('agent_capabilities', default=[],
                help='The capabilities ([agent] capabilities) the agents on '
                     'agent_host run; a test of a capability not listed '
                     'skips.'),
    cfg.StrOpt('vcpu_sizing_apply_when', default='storm',
               choices=['storm', 'always'],
               help='The agents\' [vcpu_sizing] apply_when on agent_host. '
                    'With the default "storm" the agent sizes an "apply" '
                    'guest down only during a spin storm, which a scenario '
                    'cannot provoke reliably: the apply test skips.'),
    cfg.IntOpt('balloon_pool_mib', default=0, min=0,
               help='The agents\' [balloon] pool_mib on agent_host: the '
                    'MiB the ballooning test expects idle guests there to '
                    'give, in all. 0 (the agent\'s default) takes nothing '
                    'from any guest: the ballooning test skips.'),
    cfg.StrOpt('agent_host',
               help='Compute host (libvirt) whose agent runs '
                    'agent_capabilities; the capability tests boot there. '
                    'Empty: the scheduler chooses.'),
    cfg.ListOpt('live_migration_hosts', default=[],
                help='Live-migration test: two libvirt compute hosts, the '
                     'source first, that live-migrate to each other, with '
                     'an agent on each. The source\'s agent must run the '
                     'per-domain provider model ([placement] provider_model '
                     '= domain) on a host of two or more domains, so that a '
                     'cache-aware server there holds one domain provider '
                     'and is pinned into it (the devcloud: '
                     'devcloud-libvirt2,devcloud-libvirt). Empty: the test '
                     'skips.'),
    cfg.DictOpt('libvirt_uris', default={},
                help='Live-migration test, optional: a libvirt URI per '
                     'compute host in live_migration_hosts that tempest '
                     'may open read-only, to check the agent\'s live pins '
                     'and its pin record in the domain XML before and '
                     'after the migration (the devcloud sets its private '
                     'daemons\' sockets). Empty: those checks are left out '
                     'and only public APIs are used.'),
    cfg.StrOpt('repin_host',
               help='Repinning test: a libvirt compute host whose agent '
                    'runs the per-domain provider model ([placement] '
                    'provider_model = domain) with two to four cache '
                    'domains and its default [agent] max_vcpus_per_cpu = '
                    '1 (the devcloud: devcloud-libvirt2). Empty: the test '
                    'skips.'),
    cfg.StrOpt('openstack_cli',
               help='Operator CLI test: the openstack command with the '
                    'nova-cacheaware plugin installed (the devcloud: its '
                    'venv\'s). Empty: the test skips.'),
    cfg.ListOpt('status_hosts', default=[],
                help='Operator CLI test: compute hosts whose agents publish '
                     'their state and answer describe RPC to '
                     'nova-cacheaware-api (registered in the catalog as '
                     'cache-aware); the test boots on the first. Empty: '
                     'the test skips.'),
    cfg.BoolOpt('watcher', default=False,
                help='Watcher scenarios: OpenStack Watcher runs in the cloud '
                     '(the infra-optim service of the catalog) with '
                     'nova-cacheaware\'s goal cache_isolation and strategy '
                     'cache_rebalance loaded in its decision engine. False: '
                     'the Watcher scenarios skip.'),
    cfg.ListOpt('watcher_hosts', default=[],
                help='Watcher scenarios: two libvirt compute hosts with '
                     'agents that live-migrate to each other, the source '
                     'first. The source\'s agent must report exactly one '
                     'cache domain with two or more CPUs (two one-vCPU '
                     'memory-bound servers then share it: Dirty), the '
                     'destination\'s an Empty domain (the devcloud: '
                     'devcloud-libvirt,devcloud-libvirt2). Audits are scoped '
                     'to these two hosts. Empty: the scenarios skip.'),
    cfg.StrOpt('counter_trace_dir',
               help='Watcher scenario: the agents\' [agent] '
                    'counter_trace_dir on watcher_hosts, a directory '
                    'tempest can write (same machine, as in the devcloud). '
                    'The scenario writes a memory-bound counter trace '
                    'there for its "auto" server, which the agent '
                    'classifies with its own classifier. Empty: the '
                    'Dirty-host scenario skips.'),
    cfg.IntOpt('watcher_timeout', default=300, min=30,
               help='Watcher scenarios: seconds to wait for each step (the '
                    'agent\'s classification, an audit, the action plan).'),
    cfg.BoolOpt('networks_none', default=True,
                help='Create test servers with "networks": "none" '
                     '(compute API 2.37+): for clouds without Neutron '
                     'networks, such as the devcloud.'),
]
