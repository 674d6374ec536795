# Sphinx configuration for the nova-cacheaware release notes.
project = 'nova-cacheaware Release Notes'
copyright = '2026, nova-cacheaware developers'
extensions = ['reno.sphinxext']
master_doc = 'index'
html_theme = 'alabaster'
