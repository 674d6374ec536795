"""Operator views of hosts: the status API service and its pictures.

``nova-cacheaware-api`` is the authenticated read API behind ``openstack
cacheaware``. The host list comes from the agents' live state, heard on
the state topic as a scheduler worker hears it (:mod:`.hosts`); one
host's or one server's detail from that host's agent over RPC
(:mod:`.agents`). :mod:`.host_map` draws a host view. See
doc/source/admin/operator-cli.rst.
"""
