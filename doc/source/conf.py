# Sphinx configuration for the nova-cacheaware documentation.
project = 'nova-cacheaware'
copyright = '2026, nova-cacheaware developers'
extensions = ['sphinx.ext.autodoc', 'oslo_config.sphinxext']
exclude_patterns = ['_build']
html_theme = 'alabaster'
master_doc = 'index'
