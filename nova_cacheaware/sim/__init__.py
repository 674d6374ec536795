"""See DESIGN: nova_cacheaware/sim."""
