"""nova-cacheaware: cache-, NUMA- and pCPU-aware Nova placement, run time."""
