"""Install the live-migration hook into libvirt's hooks directory.

The hook (:mod:`nova_cacheaware.agent.libvirt_hook`) ships inside the
package, so any installation of it (a wheel, ``pip install -e``, DevStack's
``setup_develop``) can install the hook; pbr ``data_files`` would not be
installed by an editable install and land in a prefix that differs per
installer.

Where it goes (libvirt runs ``<dir>/qemu`` first, then every executable in
``<dir>/qemu.d/`` in name order, each filtering the domain XML the previous
one printed; an empty output passes the XML on unchanged; libvirt >= 6.5,
and Nova 34 needs libvirt >= 8.0):

* ``<dir>/qemu`` when it is missing or is ours (replaced atomically);
* ``<dir>/qemu.d/nova-cacheaware`` when ``<dir>/qemu`` belongs to someone
  else (never overwritten: ours is chained after it), when ours is already
  there, or when asked for.
"""

import dataclasses
import importlib.resources
import os
import tempfile

from nova_cacheaware import exception

#: Identifies our hook in an existing file (line 2 of the hook).
MARKER = b'# nova-cacheaware libvirt qemu hook:'
MAIN_NAME = 'qemu'
DROP_IN_DIR = 'qemu.d'
DROP_IN_NAME = 'nova-cacheaware'
DEFAULT_HOOKS_DIR = '/etc/libvirt/hooks'
#: ``[agent] pin_record_dir``'s default, as the shipped hook reads it.
DEFAULT_PIN_RECORD_DIR = '/var/lib/nova-cacheaware/pins'


class HookInstallError(exception.CacheAwareError):
    """The hook could not be installed; the message says what to fix."""

    msg_fmt = 'cannot install the libvirt hook: %(reason)s'


@dataclasses.dataclass(frozen=True)
class Result:
    """What :func:`install` did.

    ``action`` is ``installed`` (new file: restart libvirtd, which looks
    for hooks only when it starts), ``updated`` or ``unchanged``;
    ``chained_after`` is the foreign main hook ours runs after, if any.
    """

    path: str
    action: str
    chained_after: str = None

    @property
    def restart_libvirtd(self):
        """True when libvirtd must be restarted to run the hook."""
        return self.action == 'installed'

    def to_dict(self):
        """The JSON form the CLI prints."""
        return {'path': self.path, 'action': self.action,
                'chained_after': self.chained_after,
                'restart_libvirtd': self.restart_libvirtd}


def hook_source(pin_record_dir=DEFAULT_PIN_RECORD_DIR):
    """The hook's bytes, reading the agent's pin records in that directory.

    The hook is standalone (libvirt runs it with a bare environment), so
    the directory is written into it.
    """
    source = importlib.resources.files('nova_cacheaware.agent').joinpath(
        'libvirt_hook.py').read_bytes()
    if not os.path.isabs(pin_record_dir):
        raise HookInstallError(reason='the pin record directory must be '
                               'an absolute path, not %r' % pin_record_dir)
    line = ("PIN_RECORD_DIR = '%s'" % DEFAULT_PIN_RECORD_DIR).encode()
    return source.replace(line, ("PIN_RECORD_DIR = %r"
                                 % pin_record_dir).encode(), 1)


def is_ours(content):
    """True when ``content`` (bytes of a hook file) is our hook."""
    return MARKER in content[:512]


def choose_target(hooks_dir, main_content, drop_in, drop_in_content=None):
    """Pure choice of the file to write: (path, foreign main hook or None).

    ``main_content`` and ``drop_in_content`` are the bytes of
    ``<hooks_dir>/qemu`` and ``<hooks_dir>/qemu.d/nova-cacheaware``, None
    where there is no such file. An earlier copy of ours in ``qemu.d`` is
    updated where it is, so that the hook never runs twice.
    """
    main = os.path.join(hooks_dir, MAIN_NAME)
    drop_in_path = os.path.join(hooks_dir, DROP_IN_DIR, DROP_IN_NAME)
    foreign = main_content is not None and not is_ours(main_content)
    ours_in_drop_in = (main_content is None and drop_in_content is not None
                       and is_ours(drop_in_content))
    if drop_in or foreign or ours_in_drop_in:
        return drop_in_path, main if foreign else None
    return main, None


def _read(path):
    if os.path.isdir(path):
        # A directory where the main hook goes is nobody's hook we may
        # replace; libvirt would not run it either.
        return b'<directory>'
    try:
        with open(path, 'rb') as f:
            return f.read()
    except FileNotFoundError:
        return None


def _write_atomically(path, content):
    directory = os.path.dirname(path)
    os.makedirs(directory, mode=0o755, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix='.nova-cacheaware.')
    try:
        with os.fdopen(fd, 'wb') as f:
            f.write(content)
        os.chmod(tmp, 0o755)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def install(hooks_dir=DEFAULT_HOOKS_DIR, drop_in=False, content=None):
    """Install the hook under ``hooks_dir``; returns a :class:`Result`.

    Raises :class:`HookInstallError` when libvirt's configuration directory
    is missing or a file cannot be written.
    """
    content = hook_source() if content is None else content
    parent = os.path.dirname(os.path.abspath(hooks_dir))
    if not os.path.isdir(parent):
        raise HookInstallError(reason='%s does not exist: is libvirt '
                               'installed on this host?' % parent)
    try:
        path, foreign = choose_target(
            hooks_dir, _read(os.path.join(hooks_dir, MAIN_NAME)), drop_in,
            _read(os.path.join(hooks_dir, DROP_IN_DIR, DROP_IN_NAME)))
        existing = _read(path)
        if existing == content and os.access(path, os.X_OK):
            return Result(path, 'unchanged', foreign)
        if existing is not None and not is_ours(existing):
            raise HookInstallError(reason='%s exists and is not '
                                   'nova-cacheaware\'s hook; remove or '
                                   'rename it' % path)
        _write_atomically(path, content)
    except OSError as e:
        raise HookInstallError(reason='%s: %s (run as root?)' % (
            e.filename or hooks_dir, e.strerror or e)) from None
    return Result(path, 'updated' if existing else 'installed', foreign)
