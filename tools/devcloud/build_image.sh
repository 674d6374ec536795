#!/usr/bin/env bash
# Build the guest used by the devcloud and the real-guest tests: a Debian
# cloud kernel and a busybox initramfs that runs the QEMU guest agent.
#
# Usage: build_image.sh DIR  -> DIR/vmlinuz, DIR/initrd.gz, DIR/VERSION
#
# Packages are fetched with `apt-get download` (not installed). The
# initramfs runs busybox as PID 1, loads the virtio modules (PCI, console,
# balloon, virtio-mem), starts qemu-ga on the org.qemu.guest_agent.0 port
# when the domain has one, carries nova-cacheaware's guest helpers in
# /usr/sbin (and /mods/loop.ko, not loaded: tests insmod it for a block
# device whose reads count as storage reads), prints a banner on the serial
# console, then a "cacheaware-guest:" line whenever the vCPU sizing file,
# the online vCPUs or MemTotal change, and stays up. It needs no root disk,
# so the guest boots in seconds under TCG.
# Idempotent: does nothing when DIR/VERSION says this recipe built it.
set -euo pipefail
RECIPE=7
out=$(mkdir -p "$1" && cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
guest_dir=$(cd "$here/../../deploy/guest-tools" && pwd)
if [ -s "$out/vmlinuz" ] && [ -s "$out/initrd.gz" ] \
        && [ "$(cat "$out/VERSION" 2>/dev/null)" = "$RECIPE" ]; then
    exit 0
fi
mkdir -p "$out/build"
cd "$out/build"
kernel_pkg=$(apt-cache depends linux-image-cloud-amd64 \
    | awk '/Depends: linux-image-/{print $2; exit}')
if [ -z "$kernel_pkg" ]; then
    echo "build_image: no linux-image-cloud-amd64 in apt (run apt-get update)" >&2
    exit 1
fi
for pkg in "$kernel_pkg" busybox-static qemu-guest-agent; do
    ls "$pkg"_*.deb >/dev/null 2>&1 || apt-get download "$pkg"
done
rm -rf k bb qga initrd
dpkg-deb -x "$kernel_pkg"_*.deb k
dpkg-deb -x busybox-static_*.deb bb
dpkg-deb -x qemu-guest-agent_*.deb qga
mkdir -p initrd/bin initrd/sbin initrd/usr/sbin initrd/proc initrd/sys \
    initrd/dev initrd/tmp initrd/run initrd/var/run initrd/mods initrd/lib64 \
    initrd/lib/x86_64-linux-gnu
cp bb/bin/busybox initrd/bin/

# The guest agent and the shared libraries it links (same Debian release as
# this host, so the host's copies are the guest's).
cp qga/usr/sbin/qemu-ga initrd/usr/sbin/
missing=$(ldd qga/usr/sbin/qemu-ga | awk '/not found/{print $1}')
if [ -n "$missing" ]; then
    echo "build_image: qemu-ga needs libraries this host lacks: $missing" >&2
    exit 1
fi
ldd qga/usr/sbin/qemu-ga | awk '/=> \//{print $3} /^\t\/lib64/{print $1}' \
    | while read -r lib; do
        cp -L "$lib" "initrd$lib" 2>/dev/null \
            || { mkdir -p "initrd$(dirname "$lib")"; cp -L "$lib" "initrd$lib"; }
    done

# Our guest helpers, where the host agent's guest-exec calls expect them.
for helper in "$guest_dir"/cacheaware-*; do
    cp "$helper" initrd/usr/sbin/
    chmod 755 "initrd/usr/sbin/$(basename "$helper")"
done

kdir=$(ls -d k/lib/modules/*)/kernel/drivers
MODS="virtio/virtio_ring virtio/virtio virtio/virtio_pci_modern_dev
virtio/virtio_pci_legacy_dev virtio/virtio_pci char/virtio_console
virtio/virtio_balloon virtio/virtio_mem block/loop"
for m in $MODS; do
    [ -f "$kdir/$m.ko" ] && cp "$kdir/$m.ko" initrd/mods/
done

cat > initrd/init <<'EOI'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/usr/sbin:/sbin:/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs run /run
for m in virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev \
         virtio_pci virtio_console virtio_balloon virtio_mem; do
    [ -f /mods/$m.ko ] && insmod /mods/$m.ko 2>/dev/null
done
# No udev: find the guest agent's port by its name in sysfs.
port=
i=0
while [ $i -lt 50 ] && [ -z "$port" ]; do
    for p in /sys/class/virtio-ports/*; do
        [ -f "$p/name" ] || continue
        if [ "$(cat "$p/name")" = org.qemu.guest_agent.0 ]; then
            port=/dev/$(basename "$p")
        fi
    done
    [ -n "$port" ] || { i=$((i + 1)); sleep 0.1; }
done
if [ -n "$port" ]; then
    /usr/sbin/qemu-ga -m virtio-serial -p "$port" -f /run/qemu-ga.pid -d
    ga=on
else
    ga=off
fi
echo "devcloud guest up: $(nproc) vCPU, $(grep MemTotal /proc/meminfo), guest agent $ga"
# What the host agent changes in this guest, on the console whenever it
# changes (the tempest plugin reads it through Nova's console output): the
# vCPU sizing file, the online vCPUs, MemTotal (the balloon). Shell builtins
# only, and a read with a timeout on a FIFO as the 1 s sleep: no process is
# started per round, so the loop takes next to no guest CPU.
mkfifo /run/tick
exec 3<> /run/tick
last=
while true; do
    f=
    if [ -r /run/cacheaware/pcpus ]; then
        while read -r x; do f="$f${f:+ }$x"; done < /run/cacheaware/pcpus
    fi
    read -r online < /sys/devices/system/cpu/online
    while read -r k v _; do
        [ "$k" = MemTotal: ] && { mem=$v; break; }
    done < /proc/meminfo
    now="pcpus_file=[$f] online=$online memtotal_kib=$mem"
    if [ "$now" != "$last" ]; then
        echo "cacheaware-guest: $now"
        last=$now
    fi
    read -r -t 1 _ <&3
done
EOI
chmod +x initrd/init
(cd initrd && find . | ../bb/bin/busybox cpio -o -H newc 2>/dev/null \
    | gzip -1 > ../initrd.gz)
cp k/boot/vmlinuz-* ../vmlinuz
mv initrd.gz ../initrd.gz
chmod 644 ../vmlinuz ../initrd.gz
echo "$RECIPE" > ../VERSION
cd .. && rm -rf build
