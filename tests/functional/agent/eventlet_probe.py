"""Run the agent's daemon loop in an eventlet-monkey-patched process.

Run as ``python -m tests.functional.agent.eventlet_probe`` by
test_eventlet.py: Nova's processes (and its functional tests) monkey-patch,
and libvirt's event loop blocks in C, so it must not become a green thread.
Prints one JSON line: passes made, events handled, the new domain's pins,
how often a green ticker ran, and which threads exist.
"""

import eventlet
eventlet.monkey_patch()

import json  # noqa: E402
import sys  # noqa: E402
import uuid as uuid_mod  # noqa: E402

from nova_cacheaware.agent import actuator  # noqa: E402
from nova_cacheaware.agent import hypervisor  # noqa: E402
from nova_cacheaware.agent import service  # noqa: E402
from nova_cacheaware.agent import specs  # noqa: E402
from nova_cacheaware.agent import threads  # noqa: E402
from nova_cacheaware.cachedomain import agent as repin_agent  # noqa: E402
from nova_cacheaware.cachedomain import repinning  # noqa: E402
from tests.fixtures import nova_domains  # noqa: E402
from tests.functional.agent import base  # noqa: E402

FOUR = base.domain_set((0, 1), (2, 3), (4, 5), (6, 7))


class CountingAgent(service.Agent):
    """Counts passes and keeps the events it handled."""

    passes = 0
    handled = []

    def reconcile(self):
        CountingAgent.passes += 1
        return super().reconcile()

    def handle_events(self, events):
        CountingAgent.handled.extend(events)
        super().handle_events(events)


def wait_until(predicate, seconds):
    for _ in range(int(seconds * 100)):
        if predicate():
            return True
        eventlet.sleep(0.01)
    return predicate()


def main():
    mine = set()
    spec = {}
    hv = hypervisor.LibvirtHypervisor('test:///default',
                                      domain_filter=mine.__contains__)
    act = actuator.Actuator(hv, actuator.RateLimiter(None, 60.0))
    agent = CountingAgent(hv, FOUR,
                          repin_agent.RepinStep(repinning.Planner(), act),
                          spec_source=specs.StaticSpecSource(spec))
    ticks = [0]

    def ticker():
        while True:
            ticks[0] += 1
            eventlet.sleep(0.01)

    eventlet.spawn(ticker)
    # A period far longer than the test: only an event can cause pass 2.
    loop = eventlet.spawn(agent.run, 3600.0)
    started = wait_until(lambda: CountingAgent.passes == 1, 20)
    # Half a second of green sleep while libvirt's loop sits in poll():
    # a green event thread would have blocked the hub (no tick at all).
    ticks_before = ticks[0]
    eventlet.sleep(0.5)
    ticks_idle = ticks[0] - ticks_before
    uuid = str(uuid_mod.uuid4())
    spec[uuid] = {'cacheaware:workload': 'memory'}
    mine.add(uuid)
    dom = hv.connection().defineXML(nova_domains.domain_xml(
        'nca-%s' % uuid[:8], 2, cpuset='0-7', uuid=uuid, kind='test'))
    dom.create()
    woke = wait_until(lambda: CountingAgent.passes >= 2, 20)
    pins = {v: [i for i, on in enumerate(m) if on]
            for v, m in enumerate(dom.vcpuPinInfo(0))}
    agent.stop()
    loop.wait()
    dom.destroy()
    dom.undefine()
    names = sorted(t.name for t in threads.real_threading().enumerate())
    print(json.dumps({
        'started': started, 'woke': woke, 'passes': CountingAgent.passes,
        'events': [[u == uuid, r] for u, r in CountingAgent.handled],
        'pins': pins, 'ticks_idle': ticks_idle,
        'os_threads': names}))
    return 0


if __name__ == '__main__':
    sys.exit(main())
