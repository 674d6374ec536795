"""libvirt-python and libvirt_qemu, imported on first use.

The one module of the package that imports the binding. Lazily, so that
pure modules and unit tests never need it installed.
"""


def libvirt():
    """The ``libvirt`` module."""
    import libvirt
    return libvirt


def libvirt_qemu():
    """The ``libvirt_qemu`` module (QEMU monitor and guest-agent calls)."""
    import libvirt_qemu
    return libvirt_qemu


def silence_stderr():
    """Stop libvirt printing every error on stderr; we log what matters."""
    libvirt().registerErrorHandler(lambda ctx, err: None, None)


def is_test_driver(conn):
    """True for libvirt's test:/// driver, whose quirks we work around."""
    return conn.getType() == 'TEST'


def live_flag(conn):
    """The flag that means "the running domain" on ``conn``.

    libvirt's test:/// driver rejects ``VIR_DOMAIN_AFFECT_LIVE`` for pinning
    and metadata ("unsupported flags (0x1)") but takes 0 (AFFECT_CURRENT),
    which on a running domain means live.
    """
    return 0 if is_test_driver(conn) else libvirt().VIR_DOMAIN_AFFECT_LIVE
