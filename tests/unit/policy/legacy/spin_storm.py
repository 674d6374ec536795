"""The spin-storm replay's object walker before the declared schema."""
# flake8: noqa

import dataclasses


def _from_dict(cls, doc, what):
    if not isinstance(doc, dict):
        raise ValueError('%s must be an object' % what)
    unknown = set(doc) - {f.name for f in dataclasses.fields(cls)}
    if unknown:
        raise ValueError('unknown %s fields: %s'
                         % (what, ', '.join(sorted(unknown))))
    return cls(**doc)
