"""Nova tells the claim ledger which host it consumed for which instance.

After a successful claim in Placement, Nova's scheduler calls
``HostState.consume_from_request(spec_obj)`` on the chosen host - for
every instance of a multi-create, with ``spec_obj.instance_uuid`` set to
that instance - before it filters and weighs for the next one. Nova offers
plugins no other hook after a claim, so :func:`install` wraps that method
once per process: the wrapper calls Nova's own method, then reports the
host and request to ``on_consumed``.

Without it the ledger (:mod:`.claims`) has to guess claims from a host's
``num_instances`` growing between two visits, which under concurrency
both misses claims (two instances consumed between visits count as one)
and attributes them to the wrong instance (the last request handed the
host out, not the one Nova claimed). With it every claim is recorded
once, for the right instance, at the moment Nova makes it.

The wrapper never fails a request: an error in ``on_consumed`` is logged
at DEBUG and the ledger goes on as before. Nova's method is looked up when
:func:`install` runs; a Nova without it leaves the hook off (and says so).
"""

import functools

from oslo_log import log as logging

from nova.scheduler import host_manager

LOG = logging.getLogger(__name__)

_MARK = '_cacheaware_consume_hook'


def install(on_consumed):
    """Wrap ``HostState.consume_from_request`` to call ``on_consumed``.

    ``on_consumed(host_state, spec_obj)`` runs after Nova's method
    returned. Idempotent per process (a second call keeps the first
    ``on_consumed``); returns True when this call installed the hook.
    """
    cls = host_manager.HostState
    original = getattr(cls, 'consume_from_request', None)
    if original is None:
        LOG.warning('nova.scheduler.host_manager.HostState has no '
                    'consume_from_request: cache-domain claims are guessed '
                    'from host instance counts')
        return False
    if getattr(original, _MARK, False):
        return False

    @functools.wraps(original)
    def consume_from_request(self, spec_obj):
        result = original(self, spec_obj)
        try:
            on_consumed(self, spec_obj)
        except Exception as e:   # never fail a scheduling request
            LOG.debug('cannot record the claim on %s: %s',
                      getattr(self, 'host', '?'), e)
        return result

    setattr(consume_from_request, _MARK, True)
    setattr(consume_from_request, '_cacheaware_original', original)
    cls.consume_from_request = consume_from_request
    return True


def uninstall():
    """Put Nova's own method back (tests)."""
    cls = host_manager.HostState
    current = cls.consume_from_request
    if getattr(current, _MARK, False):
        cls.consume_from_request = current._cacheaware_original
