"""``nova-cacheaware pcpu-est``: exact available-pCPU estimate per VM."""

from nova_cacheaware.cmd import common
from nova_cacheaware.pcpu_est import estimate as pcpu_est

NAME = 'pcpu-est'
HELP = ('Estimate the pCPUs each VM really gets (max-min fair share under '
        'affinity and caps) and the vCPU/thread count to use.')


def configure(parser):
    """Add the pcpu-est options."""
    parser.add_argument('--input', metavar='FILE|-', required=True,
                        help='JSON document: {"pcpus": [...] (optional), '
                             '"vms": {name: {"vcpus": {index: [pCPU...]}, '
                             '"caps": {index: 0..1} (optional)}}}; '
                             '"-" reads standard input')


def run(args):
    """Read the request, compute the estimate, print the JSON result."""
    doc = common.load_json_input(args.input)
    request = pcpu_est.EstimateRequest.from_dict(doc)
    common.dump_json(pcpu_est.estimate(request).to_dict())
    return 0
