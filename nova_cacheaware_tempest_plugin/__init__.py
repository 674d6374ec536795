"""Tempest plugin for nova-cacheaware: scenario tests against any cloud."""
