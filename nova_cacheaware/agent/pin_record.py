"""The last pins the agent applied, on disk, for the libvirt hook.

The agent's pins are live-only: a guest Nova starts again (hard reboot,
stop and start, host reboot with ``resume_guests_state_on_host_boot``) comes
up with Nova's XML, every vCPU on Nova's whole CPU set - overlapping other
guests' cache domains - until the agent's next pass. While the agent is
down that is until someone restarts it. So the agent writes, per instance,
the CPU set of each vCPU it pinned (one small JSON file per instance,
``<uuid>.json`` in ``[agent] pin_record_dir``), and the libvirt hook
(:mod:`nova_cacheaware.agent.libvirt_hook`, ``started`` operation) applies
that record to the new QEMU process's vCPU threads before the guest runs,
inside the CPU set Nova's XML allows. When the agent is back it reconciles
as after any start.

The file format is shared with the hook, which uses the standard library
only::

    {"version": 1, "uuid": "<instance uuid>",
     "vcpus": {"0": "4-7", "1": "4-7"}}

Writing a record never fails a pass: an error is logged at WARNING and the
guest is then only unprotected across a restart while the agent is down,
as it was without the record.
"""

import json
import logging
import os
import tempfile

from nova_cacheaware.topology import cpulist

LOG = logging.getLogger(__name__)

VERSION = 1
SUFFIX = '.json'


def to_document(uuid, pins):
    """The record of ``uuid``: ``pins`` is ``{vcpu: CPU ids}``."""
    return {'version': VERSION, 'uuid': uuid,
            'vcpus': {str(vcpu): cpulist.format_cpulist(cpus)
                      for vcpu, cpus in sorted(pins.items())}}


class PinRecords(object):
    """The records of this host's instances in one directory."""

    def __init__(self, directory):
        self.directory = directory
        #: uuid -> the pins last written (no rewrite when unchanged).
        self._written = {}

    def path(self, uuid):
        """The record file of ``uuid``."""
        return os.path.join(self.directory, uuid + SUFFIX)

    def write(self, uuid, pins):
        """Record ``{vcpu: CPU ids}`` for ``uuid``; empty removes it.

        Atomic (a temporary file renamed over the old one): the hook never
        reads half a record.
        """
        pins = {int(v): tuple(sorted(c)) for v, c in pins.items() if c}
        if self._written.get(uuid) == pins:
            return
        if not pins:
            # Remembered as written: an instance on Nova's CPUs is not
            # unlinked again at every pass.
            self.remove(uuid)
            self._written[uuid] = pins
            return
        try:
            os.makedirs(self.directory, mode=0o755, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix='.' + uuid,
                                       dir=self.directory)
            try:
                with os.fdopen(fd, 'w') as f:
                    json.dump(to_document(uuid, pins), f, sort_keys=True)
                os.chmod(tmp, 0o644)
                os.replace(tmp, self.path(uuid))
            except BaseException:
                os.unlink(tmp)
                raise
        except OSError as e:
            LOG.warning('cannot record the pins of %s in %s (%s): a restart '
                        'of the guest while the agent is down starts it on '
                        "Nova's CPUs", uuid, self.directory, e)
            self._written.pop(uuid, None)
            return
        self._written[uuid] = pins

    def remove(self, uuid):
        """Forget ``uuid``'s record (the instance is gone or unpinned)."""
        self._written.pop(uuid, None)
        try:
            os.unlink(self.path(uuid))
        except FileNotFoundError:
            pass
        except OSError as e:
            LOG.warning('cannot remove the pin record %s: %s',
                        self.path(uuid), e)

    def prune(self, present):
        """Remove the records of instances not in ``present`` (uuids)."""
        for uuid in set(self._written) - set(present):
            del self._written[uuid]
        try:
            names = os.listdir(self.directory)
        except FileNotFoundError:
            return
        except OSError as e:
            LOG.warning('cannot list the pin records in %s: %s',
                        self.directory, e)
            return
        for name in names:
            if name.endswith(SUFFIX) and not name.startswith('.'):
                uuid = name[:-len(SUFFIX)]
                if uuid not in present:
                    self.remove(uuid)
