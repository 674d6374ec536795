"""See DESIGN: nova_cacheaware/placement."""
