"""See DESIGN: nova_cacheaware/api."""
