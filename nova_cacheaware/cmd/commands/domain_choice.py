"""``nova-cacheaware domain-choice``: replay the agent's choice of domains.

In the per-host provider model the agent chooses the cache domain of every
instance holding room of the host
(:func:`nova_cacheaware.cachedomain.assignment.assign_domains`). Its
``--dump-state`` writes the inputs as ``agent.domain_choice``; this command
replays them and prints the choice.
"""

from nova_cacheaware.cachedomain import assignment as domain_assignment
from nova_cacheaware.cachedomain import choice_doc as domain_choice_doc
from nova_cacheaware.cmd import common

NAME = 'domain-choice'
HELP = ('Replay the agent\'s choice of cache domains (per-host provider '
        'model).')


def configure(parser):
    """Add the options."""
    parser.add_argument('--input', required=True, metavar='FILE|-',
                        help='the agent\'s --dump-state output, or its '
                             '"agent.domain_choice" part; "-" reads '
                             'standard input')


def run(args):
    """Read, check, choose, print ``{"domains": ..., "largest_room": n}``."""
    doc = common.load_json_input(args.input)
    if isinstance(doc, dict) and isinstance(doc.get('agent'), dict):
        doc = doc['agent'].get('domain_choice')
        if doc is None:
            raise domain_choice_doc.bad(
                'the dump has no agent.domain_choice (the agent runs the '
                'per-domain provider model, or holds no host room)')
    capacity, held, base = domain_choice_doc.choice_from_dict(doc)
    chosen = domain_assignment.assign_domains(capacity, held, base)
    vcpus = {i.uuid: i.vcpus for i in held}
    room = (domain_assignment.largest_room(capacity, chosen, vcpus, base)
            if capacity else None)
    common.dump_json({'domains': dict(sorted(chosen.items())),
                      'largest_room': room})
    return 0
