"""Start nova-compute with ``compute_driver = topofake.TopologyFakeDriver``.

Nova loads drivers from the ``nova.virt`` package only, so this registers
:mod:`topofake` there after Nova's own early setup, then runs the real
``nova-compute`` entry point with the remaining arguments.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from nova.cmd import compute  # noqa: E402  (nova's early setup first)

import topofake  # noqa: E402

sys.modules['nova.virt.topofake'] = topofake
sys.argv[0] = 'nova-compute'
sys.exit(compute.main())
