"""The liveness rule: when a host's live state is trusted (table + property).
"""

import hypothesis
from hypothesis import strategies as st
import testtools

from nova_cacheaware.policy import liveness

TTL = 60.0
# A pure function: on a loaded shared machine, drawing the inputs is what
# is slow, not the code under test.
PROPERTY = hypothesis.settings(
    deadline=None, suppress_health_check=[hypothesis.HealthCheck.too_slow])
UNHEALTHY = 'reports itself unhealthy'
STALE = 'is 61 s old'
MISSING = 'no live state from its nova-cacheaware agent'


def view(age, healthy=True, quiet_for=1.0, heard_for=600.0):
    return liveness.LiveView(ttl=TTL, age=age, healthy=healthy,
                             quiet_for=quiet_for, heard_for=heard_for)


class RuleTableTest(testtools.TestCase):

    # (situation, view, expected reason fragment or None)
    TABLE = [
        ('fresh and healthy', view(10), None),
        ('fresh, unhealthy', view(10, healthy=False), UNHEALTHY),
        ('exactly ttl old is still fresh', view(60), None),
        ('single dead agent, others heard', view(61), STALE),
        ('dead agent that reported unhealthy last', view(61, healthy=False),
         STALE),
        ('never reported, others heard long enough', view(None), MISSING),
        ('scheduler restart: nothing heard yet', view(None, quiet_for=None,
                                                      heard_for=0.0), None),
        ('scheduler restart: first agents heard 5 s ago',
         view(None, quiet_for=0.5, heard_for=5.0), None),
        ('warm-up ends at ttl/2', view(None, quiet_for=0.5, heard_for=30.0),
         None),
        ('warm-up over', view(None, quiet_for=0.5, heard_for=30.1), MISSING),
        ('RabbitMQ outage: every state stale, bus quiet > ttl/2',
         view(90, quiet_for=31.0), None),
        ('RabbitMQ outage at its start: bus quiet ttl/2',
         view(61, quiet_for=30.0), STALE),
        ('bus back, this agent not yet heard again',
         view(200, quiet_for=0.1, heard_for=3.0), None),
        ('bus back for longer than ttl/2, this agent still silent',
         view(200, quiet_for=0.1, heard_for=31.0), 'is 200 s old'),
        ('agents do not publish at all', view(None, quiet_for=None,
                                              heard_for=0.0), None),
    ]

    def test_refuse(self):
        for situation, v, expected in self.TABLE:
            got = liveness.ineligible_reason(v, liveness.REFUSE)
            if expected is None:
                self.assertIsNone(got, situation)
            else:
                self.assertIsNotNone(got, situation)
                self.assertIn(expected, got, situation)

    def test_trust_placement_only_keeps_fresh_health(self):
        for situation, v, expected in self.TABLE:
            got = liveness.ineligible_reason(v, liveness.TRUST_PLACEMENT)
            if v.age is not None and v.age <= TTL and not v.healthy:
                self.assertIn(UNHEALTHY, got, situation)
            else:
                self.assertIsNone(got, situation)

    def test_bad_arguments(self):
        e = self.assertRaises(ValueError, liveness.ineligible_reason,
                              view(1), 'maybe')
        self.assertIn("one of refuse, trust_placement, not 'maybe'", str(e))
        self.assertRaises(ValueError, liveness.ineligible_reason,
                          liveness.LiveView(0, 1, True, 1, 1))

    @PROPERTY
    @hypothesis.given(
        period=st.floats(1, 60), ttl_factor=st.floats(2, 10),
        since_outage=st.floats(0, 1000), offset=st.floats(0, 1))
    def test_a_bus_outage_never_blames_a_host(self, period, ttl_factor,
                                              since_outage, offset):
        # Agents publish every `period`; the bus stops; `now` is any time
        # later. A host whose last state predates the outage by up to one
        # period is never refused, whatever moment we look.
        ttl = period * ttl_factor
        last_any = 0.0
        host_last = last_any - offset * period
        now = last_any + since_outage
        v = liveness.LiveView(ttl=ttl, age=now - host_last, healthy=True,
                              quiet_for=now - last_any, heard_for=10 * ttl)
        self.assertIsNone(liveness.ineligible_reason(v))

    @PROPERTY
    @hypothesis.given(period=st.floats(1, 60), ttl_factor=st.floats(2, 10),
                      dead_for=st.floats(0, 1000), quiet=st.floats(0, 1))
    def test_a_dead_agent_is_refused_after_ttl(self, period, ttl_factor,
                                               dead_for, quiet):
        # Other agents publish every `period`, so the bus is never quiet
        # for more than one period.
        ttl = period * ttl_factor
        v = liveness.LiveView(ttl=ttl, age=dead_for, healthy=True,
                              quiet_for=quiet * period, heard_for=10 * ttl)
        got = liveness.ineligible_reason(v)
        self.assertEqual(dead_for > ttl, got is not None)
