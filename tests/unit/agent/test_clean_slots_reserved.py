"""``reserved`` of the per-host model's memory-bound slots, by table.

Placement offers a ``cache_clean=required`` claim one of the host's
MEMBOUND slots; the agent reserves what no free Clean place backs. A free
Clean place is a domain with fewer memory-bound VMs than slots per domain
and room for one more vCPU.
"""

from hypothesis import given
from hypothesis import strategies as st
import testtools

from nova_cacheaware.agent import placement_host_report

reserved_of = placement_host_report.clean_slots_reserved
TWO = {'L2-0': 4, 'L2-1': 4}
FOUR = {'L3-%d' % i: 8 for i in range(4)}


class TableTest(testtools.TestCase):

    CASES = [
        # name, sizes, memory-bound VMs per domain, slots used, room,
        # reserved
        ('empty host', TWO, {}, 0, {'L2-0': 4, 'L2-1': 4}, 0),
        ('one required VM holds its slot', TWO, {'L2-0': 1}, 1,
         {'L2-0': 3, 'L2-1': 4}, 0),
        ('a preferred VM (no slot) takes a domain', TWO, {'L2-0': 1}, 0,
         {'L2-0': 3, 'L2-1': 4}, 1),
        # The traffic run's case: cpu-bound VMs fill L2-0, a required VM
        # holds L2-1; before, L2-0 counted as a free Clean place and a
        # second required VM was admitted into L2-1 (Dirty).
        ('a domain full of cpu-bound VMs is no Clean place', TWO,
         {'L2-1': 1}, 1, {'L2-0': 0, 'L2-1': 3}, 1),
        ('the same without room known (old rule)', TWO, {'L2-1': 1}, 1,
         None, 0),
        ('both domains full, nothing memory-bound', TWO, {}, 0,
         {'L2-0': 0, 'L2-1': 0}, 2),
        ('overcommitted room counts as none', TWO, {}, 0,
         {'L2-0': -2, 'L2-1': 1}, 1),
        ('never below zero: a slot held in a Dirty domain', TWO,
         {'L2-0': 2}, 2, {'L2-0': 2, 'L2-1': 4}, 0),
        ('four domains, one full, one with a preferred VM', FOUR,
         {'L3-1': 1}, 0, {'L3-0': 0, 'L3-1': 7, 'L3-2': 8, 'L3-3': 8}, 2),
    ]

    def test_table(self):
        for name, sizes, membound, used, room, want in self.CASES:
            self.assertEqual(want, reserved_of(sizes, 1, membound, used,
                                               room), name)


@st.composite
def host(draw):
    n = draw(st.integers(1, 6))
    sizes = {'D%d' % i: draw(st.integers(1, 16)) for i in range(n)}
    membound = {d: draw(st.integers(0, 3)) for d in sizes}
    room = {d: draw(st.integers(-4, sizes[d])) for d in sizes}
    used = draw(st.integers(0, n))
    return sizes, membound, room, used


class PropertyTest(testtools.TestCase):

    @given(host())
    def test_offers_exactly_the_free_clean_places_with_room(self, h):
        sizes, membound, room, used = h
        reserved = reserved_of(sizes, 1, membound, used, room)
        total = len(sizes)
        self.assertGreaterEqual(reserved, 0)
        self.assertLessEqual(reserved, max(0, total - used))
        free = sum(1 for d in sizes if membound[d] == 0 and room[d] > 0)
        # What Placement still offers is never more than the free places.
        self.assertLessEqual(total - reserved - used, free)
        if used <= total - free:
            self.assertEqual(free, total - reserved - used)

    @given(host())
    def test_room_only_ever_reserves_more(self, h):
        sizes, membound, room, used = h
        self.assertGreaterEqual(reserved_of(sizes, 1, membound, used, room),
                                reserved_of(sizes, 1, membound, used))
