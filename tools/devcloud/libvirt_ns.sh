#!/usr/bin/env bash
# Start the devcloud's own virtlogd + libvirtd inside a private mount
# namespace (run as: unshare -m --propagation private libvirt_ns.sh DIR), or
# also in a private UTS namespace with its own host name (unshare -m -u ...
# libvirt_ns.sh DIR HOSTNAME), as devcloud.sh starts every libvirt
# compute's daemon: the name becomes Nova's compute node name.
#
# Why: other tests on this machine define and destroy domains on the shared
# qemu:///system daemon, and nova-compute refuses to start next to domains it
# does not know. Bind-mounting private directories over libvirt's fixed state
# and config paths gives this daemon its own domains, logs and sockets; its
# client socket lives in DIR/sock, reachable from outside the namespace as
# qemu+unix:///system?socket=DIR/sock/libvirt-sock. The daemons write their
# PIDs to DIR/libvirtd.pid and DIR/virtlogd.pid.
#
# Live migration between two such daemons on one machine: each has its own
# host UUID (libvirt refuses a migration to a host with the source's UUID),
# its own host name (it is the name of Nova's compute node and Placement's
# provider, which must differ), and DIR/hooks, where
# devcloud.sh installs nova-cacheaware's qemu hook, is libvirt's hooks
# directory. Nova gives every compute the same instances_path (the
# destination's disks get the source's paths): INSTANCES, if set, is
# bind-mounted over the shared path INSTANCES_PATH in this namespace, and
# the compute's nova-compute runs in it too (nsenter), so each compute's
# disks are its own at the same path, as on two machines.
set -euo pipefail
dir=$1
name=${2:-}
for d in run etc-qemu lib-qemu log-qemu cache-qemu sock hooks; do mkdir -p "$dir/$d"; done
if [ -n "$name" ]; then
    hostname "$name"
fi
[ -s "$dir/host-uuid" ] || cat /proc/sys/kernel/random/uuid > "$dir/host-uuid"
mount --make-rprivate /
# On a machine where libvirtd never ran, the package leaves some of these
# paths uncreated (/run/libvirt is made by libvirtd itself): a bind mount
# needs its mount point.
mkdir -p /run/libvirt /etc/libvirt/qemu /etc/libvirt/hooks \
    /var/lib/libvirt/qemu /var/log/libvirt/qemu
mount --bind "$dir/run" /run/libvirt
mount --bind "$dir/etc-qemu" /etc/libvirt/qemu
mount --bind "$dir/lib-qemu" /var/lib/libvirt/qemu
mount --bind "$dir/log-qemu" /var/log/libvirt/qemu
mount --bind "$dir/hooks" /etc/libvirt/hooks
if [ -n "${INSTANCES:-}" ]; then
    mkdir -p "$INSTANCES" "$INSTANCES_PATH"
    mount --bind "$INSTANCES" "$INSTANCES_PATH"
fi
# Hide /dev/kvm from this daemon: the devcloud runs TCG guests only, and on
# machines where KVM is emulated (kvm_pvm) libvirt re-probes QEMU with KVM
# for seconds before every guest start. The stand-in is /dev/null's device
# node with mode 000: libvirt copies /dev mounts into each guest's /dev (so
# it must be a device), and re-probes whenever /dev/kvm is usable by the
# QEMU user (so it must not be).
if [ -e /dev/kvm ]; then
    rm -f "$dir/nokvm"
    mknod -m 000 "$dir/nokvm" c 1 3
    mount --bind "$dir/nokvm" /dev/kvm
fi
if [ -d /var/cache/libvirt/qemu ]; then
    mount --bind "$dir/cache-qemu" /var/cache/libvirt/qemu
fi
cat > "$dir/libvirtd.conf" <<EOC
unix_sock_dir = "$dir/sock"
unix_sock_group = "root"
unix_sock_ro_perms = "0700"
unix_sock_rw_perms = "0700"
auth_unix_ro = "none"
auth_unix_rw = "none"
log_outputs = "3:stderr"
host_uuid = "$(cat "$dir/host-uuid")"
EOC
virtlogd -d -p "$dir/virtlogd.pid"
libvirtd -d --config "$dir/libvirtd.conf" -p "$dir/libvirtd.pid"
