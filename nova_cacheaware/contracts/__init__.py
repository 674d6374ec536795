"""What crosses process boundaries, defined once (issue 18).

Leaf package: it imports only the standard library, os-traits and
os-resource-classes (for the Placement names) and
:mod:`nova_cacheaware.exception`, so every process (nova-api's validators,
nova-scheduler's plugins, the agent, the CLI) and every layer (``policy/``
included) may import it without a cycle.

* :mod:`.extra_specs`: the ``cacheaware:`` flavor extra-spec vocabulary
  and its one validation;
* :mod:`.placement`: resource classes, traits, provider names and uuids;
* :mod:`.cache_state`: Empty / Clean / Dirty.

See :doc:`/contributor/architecture`.
"""
