"""nova-cacheaware-state-relay: a cell's live state for the schedulers."""
