#!/usr/bin/env bash
# Build the devcloud's guest: a Debian cloud kernel and a busybox initramfs.
#
# Usage: build_image.sh DIR  -> DIR/vmlinuz, DIR/initrd.gz
#
# The packages are fetched with `apt-get download` (not installed). The
# initramfs runs busybox as PID 1, prints a banner on the serial console and
# stays up; it needs no root disk, so the guest boots in seconds under TCG.
# Idempotent: does nothing when both files exist.
set -euo pipefail
out=$1
[ -s "$out/vmlinuz" ] && [ -s "$out/initrd.gz" ] && exit 0
mkdir -p "$out/build"
cd "$out/build"
kernel_pkg=$(apt-cache depends linux-image-cloud-amd64 \
    | awk '/Depends: linux-image-/{print $2; exit}')
if [ -z "$kernel_pkg" ]; then
    echo "build_image: no linux-image-cloud-amd64 in apt (run apt-get update)" >&2
    exit 1
fi
ls "$kernel_pkg"_*.deb >/dev/null 2>&1 || apt-get download "$kernel_pkg"
ls busybox-static_*.deb >/dev/null 2>&1 || apt-get download busybox-static
rm -rf k bb initrd
dpkg-deb -x "$kernel_pkg"_*.deb k
dpkg-deb -x busybox-static_*.deb bb
mkdir -p initrd/bin initrd/proc initrd/sys initrd/dev initrd/tmp
cp bb/bin/busybox initrd/bin/
cat > initrd/init <<'EOI'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
echo "devcloud guest up: $(nproc) vCPU, $(grep MemTotal /proc/meminfo)"
while true; do sleep 3600; done
EOI
chmod +x initrd/init
(cd initrd && find . | ../bb/bin/busybox cpio -o -H newc 2>/dev/null \
    | gzip -1 > ../initrd.gz)
cp k/boot/vmlinuz-* ../vmlinuz
mv initrd.gz ../initrd.gz
chmod 644 ../vmlinuz ../initrd.gz
cd .. && rm -rf build
