"""See DESIGN: nova_cacheaware/agent."""
