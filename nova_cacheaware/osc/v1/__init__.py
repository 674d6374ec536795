"""``openstack cacheaware`` commands of API v1."""
