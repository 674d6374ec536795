"""nova-cacheaware: cache-, NUMA- and pCPU-aware Nova placement and run time."""
