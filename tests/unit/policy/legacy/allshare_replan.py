"""The ``previous`` section's walker before the declared schema."""
# flake8: noqa

from nova_cacheaware import exception
from nova_cacheaware.policy import cachedomain

def previous_from_dict(doc):
    """The ``previous`` section of a ``plan`` input: ``(input, unplaced)``.

    None when ``doc`` has no ``previous``. The section is what the agent's
    ``--dump-state`` writes after an incremental replan: ``{"input": <plan
    input>, "unplaced": [ids]}``. Raises
    :class:`~nova_cacheaware.exception.InvalidInput` naming the problem.
    """
    section = doc.get('previous') if isinstance(doc, dict) else None
    if section is None:
        return None
    if not isinstance(section, dict) or set(section) - {'input', 'unplaced'}:
        raise exception.InvalidInput(
            reason='"previous" must be an object with "input" and '
                   '"unplaced" only')
    unplaced = section.get('unplaced', [])
    if (not isinstance(unplaced, list)
            or not all(isinstance(v, str) for v in unplaced)):
        raise exception.InvalidInput(
            reason='"previous.unplaced" must be a list of VM ids')
    inner = section.get('input')
    if not isinstance(inner, dict) or 'previous' in inner:
        raise exception.InvalidInput(
            reason='"previous.input" must be a plan input without '
                   '"previous"')
    return cachedomain.input_from_dict(inner), frozenset(unplaced)
