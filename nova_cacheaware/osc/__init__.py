"""The ``openstack cacheaware ...`` commands (a python-openstackclient
plugin): see doc/source/admin/operator-cli.rst."""
