"""Host topology: immutable value types, pure queries and two readers.

``model`` holds the types, ``domains`` the cache-domain rules, ``sysfs`` and
``libvirt_caps`` the two sources (Linux sysfs, libvirt host capabilities).
"""
