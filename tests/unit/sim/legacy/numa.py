"""The NUMA simulator's scenario walker before the declared schema."""
# flake8: noqa

import dataclasses

from nova_cacheaware import exception
from nova_cacheaware.sim.numa import Scenario

def _typed(name, kind, value):
    """``value`` if it has the field's type (ints are floats too)."""
    if kind == 'str':
        ok = isinstance(value, str)
    elif kind == 'int':
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = (isinstance(value, (int, float))
              and not isinstance(value, bool))
    if not ok:
        raise exception.InvalidInput(
            reason='scenario key %s must be %s, not %r'
                   % (name, {'str': 'a string', 'int': 'an integer'}.get(
                       kind, 'a number'), value))
    return value


def scenario_from_dict(doc):
    """A :class:`Scenario` from a JSON object; unknown keys are an error."""
    if not isinstance(doc, dict):
        raise exception.InvalidInput(reason='the scenario must be a JSON '
                                            'object')
    kinds = {f.name: f.type for f in dataclasses.fields(Scenario)}
    unknown = set(doc) - set(kinds)
    if unknown:
        raise exception.InvalidInput(reason='unknown scenario keys: %s'
                                     % ', '.join(sorted(unknown)))
    scenario = Scenario(**{name: _typed(name, kinds[name], value)
                           for name, value in doc.items()})
    scenario.validate()
    return scenario
