"""See DESIGN: nova_cacheaware/scheduler."""
