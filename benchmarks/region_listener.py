"""The scheduler side of the RabbitMQ run, in its own process.

``python -m benchmarks.region_listener --url URL --exchange X --topic T
--pool P --mode default|batch`` starts a host-state listener on a real
:class:`~nova_cacheaware.scheduler.state_cache.HostStateCache` and answers
one command per stdin line with one JSON line on stdout:

* ``probe``: its CPU seconds (``getrusage``), AMQP bytes and frames read,
  deliveries and states stored so far;
* ``stop``: stops the listener and returns ``[host, generation, monotonic
  time]`` of every state stored (when the cache first showed it).

``default`` is the project's listener
(:func:`~nova_cacheaware.notifications.start_host_state_listener`);
``batch`` is ``oslo_messaging.get_batch_notification_listener`` with the
same endpoint called per message (the benchmark's, to show its cost: the
project does not use it). AMQP bytes are counted in py-amqp's frame
reader (a few microseconds per frame, inside the measured CPU).
"""

import argparse
import json
import resource
import sys
import time

import amqp.transport
from oslo_config import cfg
import oslo_messaging

from nova_cacheaware.agent import notify
from nova_cacheaware import notifications
from nova_cacheaware.scheduler import state_cache

BATCH_SIZE = 64
BATCH_TIMEOUT_S = 0.2
_WIRE = {'bytes': 0, 'frames': 0, 'deliveries': 0}


def _count_frames():
    """Count the bytes of every AMQP frame this process reads."""
    read = amqp.transport._AbstractTransport.read_frame

    def counted(self, *args, **kwargs):
        frame = read(self, *args, **kwargs)
        _WIRE['bytes'] += 8 + len(frame[2])
        _WIRE['frames'] += 1
        # Method frames are basic.deliver for all but a handful.
        _WIRE['deliveries'] += frame[0] == 1
        return frame

    amqp.transport._AbstractTransport.read_frame = counted


class BatchEndpoint:
    """The project's endpoint, called for each message of a batch."""

    filter_rule = notifications.HostStateEndpoint.filter_rule

    def __init__(self, cache):
        self.inner = notifications.HostStateEndpoint(cache)

    def info(self, messages):
        """Hand every message of the batch to the real endpoint."""
        for m in messages:
            self.inner.info(m['ctxt'], m['publisher_id'], m['event_type'],
                            m['payload'], m['metadata'])


def transport(url, exchange):
    """A notification transport on ``exchange`` (this run's own)."""
    conf = cfg.ConfigOpts()
    conf([], project='region-bench')
    # Registers the transport options, so the exchange can be overridden.
    oslo_messaging.get_notification_transport(conf, url=url).cleanup()
    conf.set_override('control_exchange', exchange)
    return notify.notification_transport(conf, url=url)


def start(args, cache):
    """The listener of ``args.mode`` on ``cache``, started."""
    bus = transport(args.url, args.exchange)
    if args.mode == 'default':
        return notifications.start_host_state_listener(
            bus, cache, args.topic, args.pool)
    listener = oslo_messaging.get_batch_notification_listener(
        bus, [oslo_messaging.Target(topic=args.topic)],
        [BatchEndpoint(cache)], executor='threading', pool=args.pool,
        batch_size=BATCH_SIZE, batch_timeout=BATCH_TIMEOUT_S)
    listener.start()
    return listener


def _cpu_s():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main(argv=None):
    """Listen until told to stop (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in ('url', 'exchange', 'topic', 'pool'):
        parser.add_argument('--' + name, required=True)
    parser.add_argument('--mode', choices=('default', 'batch'),
                        default='default')
    parser.add_argument('--ttl', type=float, default=18.0)
    args = parser.parse_args(argv)
    _count_frames()
    cache = state_cache.HostStateCache(args.ttl)
    stored = []
    cache.on_stored = lambda s: stored.append(
        (s.host, s.generation, time.monotonic()))
    listener = start(args, cache)
    print(json.dumps({'ready': True}), flush=True)
    for line in sys.stdin:
        command = line.strip()
        if command == 'probe':
            print(json.dumps(dict(_WIRE, cpu_s=_cpu_s(), stored=len(stored),
                                  at=time.monotonic())), flush=True)
        elif command == 'stop':
            break
    listener.stop()
    listener.wait()
    print(json.dumps({'stored': stored}), flush=True)


if __name__ == '__main__':
    main()
