"""Version of the installed package (from pbr metadata)."""

import pbr.version

version_info = pbr.version.VersionInfo('nova-cacheaware')


def version_string():
    """Return the installed version, e.g. ``0.1.0``."""
    return version_info.version_string()
