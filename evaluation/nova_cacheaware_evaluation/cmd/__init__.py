"""The ``nova-cacheaware`` subcommands this distribution adds."""
