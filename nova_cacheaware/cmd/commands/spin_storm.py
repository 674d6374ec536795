"""``nova-cacheaware spin-storm``: replay the spin-storm detector.

The agent's ``vcpu_sizing`` capability steps
:func:`nova_cacheaware.vcpu_sizing.spin_storm.step` once per pass and instance;
its ``--dump-state`` keeps the inputs of the last step under
``agent.capabilities.vcpu_sizing.spin_storm``. This command replays them,
or any sequence of signals::

    {"thresholds": {...},              # optional: the defaults
     "state": {...},                   # optional: no storm yet
     "signals": [{"run_delay": [0.6, 0.5],
                  "pause_exits_per_s": null, "steal": null}, ...]}

and prints every step's decision (storm, changed, vote, state, mean run
delay and pause exits), per instance for a dump.
"""

from nova_cacheaware.cmd import common
from nova_cacheaware import exception
from nova_cacheaware.vcpu_sizing import model
from nova_cacheaware.vcpu_sizing import spin_storm

NAME = 'spin-storm'
HELP = 'Replay the agent\'s spin-storm detector (study 001).'


def configure(parser):
    """Add the options."""
    parser.add_argument('--input', required=True, metavar='FILE|-',
                        help='the agent\'s --dump-state output, or a '
                             '{"signals": [...]} document; "-" reads '
                             'standard input')


def replay(doc, thresholds=None):
    """The decisions of ``doc``'s signals, stepped from its state."""
    try:
        t = thresholds or model.thresholds_from_dict(
            doc.get('thresholds', {}))
        state = model.state_from_dict(doc.get('state', {}))
        signals = doc.get('signals')
        if not isinstance(signals, list):
            raise ValueError('"signals" must be a list')
        out = []
        for raw in signals:
            decision = spin_storm.step(state, model.signal_from_dict(
                raw), t)
            state = decision.state
            out.append(model.to_dict(decision))
        return out
    except (TypeError, ValueError, AttributeError) as e:
        raise exception.InvalidInput(reason='spin-storm input: %s' % e)


def run(args):
    """Read, replay, print the decisions."""
    doc = common.load_json_input(args.input)
    if not isinstance(doc, dict):
        raise exception.InvalidInput(reason='spin-storm input: expected '
                                            'a JSON object')
    agent = doc.get('agent')
    if isinstance(agent, dict):
        sizing = (agent.get('capabilities') or {}).get('vcpu_sizing') or {}
        dump = sizing.get('spin_storm')
        if not isinstance(dump, dict):
            raise exception.InvalidInput(
                reason='the dump has no agent.capabilities.vcpu_sizing.'
                       'spin_storm (run the agent with --once --dump-state '
                       'and the vcpu_sizing capability)')
        try:
            t = model.thresholds_from_dict(dump.get('thresholds', {}))
        except (TypeError, ValueError) as e:
            raise exception.InvalidInput(reason='spin-storm input: %s' % e)
        vms = dump.get('vms') or {}
        if not isinstance(vms, dict) or not all(
                isinstance(one, dict) for one in vms.values()):
            raise exception.InvalidInput(
                reason='spin-storm input: "vms" must be {uuid: {"state", '
                       '"signals"}}')
        common.dump_json({uuid: replay(one, t)[-1] if one.get('signals')
                          else None for uuid, one in sorted(vms.items())})
        return 0
    common.dump_json(replay(doc))
    return 0
