"""The region benchmark's figures against the goals of issue 29.

Per scheduler worker, at 10 000 hosts x 200 VMs (or the largest
configuration of the run, named in every row).
"""

STEADY_CORES = 0.05
STEADY_MB_S = 1.0
STORM_CORES = 0.5
STORM_PERIODS = 2
HEARTBEAT_BYTES = 512
STATE_BYTES = 8 * 1024
CACHE_MIB = 200
STALE_SLACK_S = 1.0


def headline(configs):
    """The configuration the goals are judged on."""
    for c in configs:
        if (c['hosts'], c['vms']) == (10000, 200):
            return c
    return max(configs, key=lambda c: (c['hosts'], c['vms']))


def _row(goal, figure, limit, baseline=None, where='', note=''):
    met = None if figure is None else figure <= limit
    return {'goal': goal, 'limit': limit, 'figure': figure,
            'met': met, 'baseline_1.5': baseline, 'measured_on': where,
            'note': note}


def _mean(summary):
    return None if summary is None else summary['mean']


def evaluate(doc):
    """One row per goal: figure, limit, met, the 1.5 baseline."""
    if not doc['configs']:
        return _bus_rows(doc['rabbit']) if doc.get('rabbit') else []
    head = headline(doc['configs'])
    where = '%d hosts x %d VMs, in-process' % (head['hosts'], head['vms'])
    steady, storm = head['steady'], head['storm']
    rows = [
        _row('steady-state CPU, cores', _mean(steady['2.0']['cores']),
             STEADY_CORES, _mean(steady['1.5']['cores']), where,
             'endpoint + cache + JSON only; max of the windows %s'
             % steady['2.0']['cores']['max']),
        _row('steady-state bus, MB/s', _mean(steady['2.0']['mb_per_s']),
             STEADY_MB_S, _mean(steady['1.5']['mb_per_s']), where,
             'message bodies'),
        _row('resync storm, cores', _mean(storm['cores']), STORM_CORES,
             None, where, 'CPU of one period of every full state / one '
             'period'),
        _row('resync storm drained, periods',
             _mean(storm['drain_periods_at_half_core']), STORM_PERIODS,
             None, where, 'at most 0.5 core'),
    ]
    rows += _size_rows(doc)
    memory = head.get('memory')
    if memory:
        rows.append(_row('state cache, MiB', memory['2.0'][
            'after_resync_mib'], CACHE_MIB, memory['1.5']['after_resync_mib'],
            '%d hosts x %d VMs' % (head['hosts'], head['vms']),
            'after one resync; index table %s MiB, strings only the index '
            'holds %s MiB' % (memory['2.0']['index_table_mib'],
                              memory['2.0']['index_only_strings_mib'])))
    lost = next((c['lost_updates'] for c in doc['configs']
                 if c.get('lost_updates')), None)
    if lost and lost['recovery_s']:
        rows.append(_row('lost update repaired, s', lost['recovery_s'][
            'max'], doc['settings']['resync_s'], None,
            '%d lost state(s) that left a host wrong'
            % lost['hosts_wrong'], 'not recovered: %d'
            % lost['not_recovered']))
    if doc.get('rabbit'):
        rows += _bus_rows(doc['rabbit'])
    return rows


def _size_rows(doc):
    framing = None
    if doc.get('rabbit'):
        framing = doc['rabbit']['listeners']['default'][
            'framing_bytes_per_delivery']
    extra = framing or 0
    note = ('body + %s B AMQP framing' % framing if framing
            else 'message body only (no RabbitMQ run: framing unknown)')
    rows = []
    beats = [s['heartbeat']['body_bytes_max'] for c in doc['configs']
             for s in c['sizes'].values()]
    rows.append(_row('heartbeat on the wire, bytes', max(beats) + extra,
                     HEARTBEAT_BYTES, None, 'every host kind', note))
    big = [c for c in doc['configs'] if c['vms'] == 200
           and 'epyc16' in c['sizes']]
    if big:
        size = big[0]['sizes']['epyc16']
        rows.append(_row('full state, 16 domains x 200 VMs, bytes',
                         size['2.0']['body_bytes_max'] + extra, STATE_BYTES,
                         size['1.5']['body_bytes_max'] + extra,
                         'epyc16 hosts', '%s; payload alone %d B' % (
                             note, size['2.0']['payload_bytes_max'])))
    return rows


def _bus_rows(bus):
    where = ('%d hosts at a %g s period (10 000 hosts\' rate), RabbitMQ'
             % (bus['hosts'], bus['period_s']))
    lst = bus['listeners']['default']
    lat = lst['latency']
    rows = [
        _row('steady-state CPU with oslo.messaging, cores', lst['cores'],
             STEADY_CORES, None, where, 'idle listener alone %s cores; '
             'batch listener %s cores' % (lst['idle_cores'], bus[
                 'listeners']['batch']['cores'])),
        _row('steady-state CPU with oslo.messaging, heartbeats only at '
             'resync, cores', lst['no_heartbeats']['cores'], STEADY_CORES,
             None, where, 'state_heartbeat_s = state_resync_s (the host '
             'TTL must then be 2-3 x the resync interval); batch listener '
             '%s cores' % bus['listeners']['batch']['no_heartbeats'][
                 'cores']),
        _row('steady-state bus on the wire, MB/s', lst['wire_mb_per_s'],
             STEADY_MB_S, None, where, 'AMQP frames read'),
        _row('staleness p99, s (scaled period + 1 s)',
             lat['staleness_p99_s'], bus['period_s'] + STALE_SLACK_S, None,
             where, 'delivery p99 %s s (publish -> cache)'
             % lat['delivery_p99_s']),
    ]
    drain = lst['storm']['drain_s']
    rows.append(_row('resync storm drained on the bus, periods',
                     None if drain is None else round(
                         drain / bus['period_s'], 2),
                     STORM_PERIODS, None, where,
                     'the agents sent their storm states within %s s; '
                     'passes ran up to %s s late (p99) in the steady window'
                     % (bus['storm_sent_s'], bus['pass_lag_s']['p99'])))
    return rows
