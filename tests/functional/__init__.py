"""Functional tests: real Nova, Placement, libvirt and RabbitMQ.

Nova's concurrency mode is chosen here, before any test module is imported
(:mod:`tests.nova_concurrency`). Choosing it later, in the Nova test
package, came after other modules had imported eventlet (through
oslo.messaging's default service backend) and oslo.db: Nova then chose
eventlet, but oslo.db's per-thread transaction state had already been
built on the unpatched ``threading.local``, so the green threads of an
in-process compute shared one transaction ("Can't upgrade a READER
transaction to a WRITER mid-transaction" in the resource tracker, a lost
build at exact fit).
"""

from tests import nova_concurrency

nova_concurrency.apply()
