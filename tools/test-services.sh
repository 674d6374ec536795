#!/usr/bin/env bash
# start|stop the local services the functional tests need, ending only what
# this script started: virtlogd + libvirtd (for qemu:///system). MariaDB and
# RabbitMQ are the machine's own and are only used, never started here.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
state="$PWD/.test-state/services-started"
mkdir -p .test-state

# True when the daemon of this pidfile runs (a live, not zombie, process
# of that name). By pidfile, not by name: the devcloud's private libvirtd
# (or a test's) must not count as the machine's qemu:///system daemon.
running() {  # name pidfile
    local pid
    [ -s "$2" ] || return 1
    read -r pid < "$2"
    [ "$(ps -o comm= -p "$pid" 2>/dev/null)" = "$1" ] || return 1
    case "$(ps -o stat= -p "$pid" 2>/dev/null)" in
        Z*|"") return 1 ;;
    esac
}

start_daemon() {  # name pidfile command...
    local name=$1 pidfile=$2; shift 2
    if running "$name" "$pidfile"; then
        return 0
    fi
    if ! command -v "$1" >/dev/null; then
        echo "test-services: $name is not installed" >&2
        return 1
    fi
    "$@" || { echo "test-services: $name failed to start" >&2; return 1; }
    for _ in $(seq 50); do
        [ -s "$pidfile" ] && break
        sleep 0.1
    done
    # pidfiles have no trailing newline: one PID per line in the state file
    local pid
    read -r pid < "$pidfile"
    echo "$pid" >> "$state"
}

case "${1:-}" in
start)
    : > "$state"
    if [ "$(id -u)" = 0 ]; then
        mkdir -p /run/libvirt
        start_daemon virtlogd /run/virtlogd.pid virtlogd -d || exit 1
        # The tests run TCG guests only. Where /dev/kvm is emulated
        # (kvm_pvm), libvirt re-probes QEMU with KVM for seconds before
        # every guest start: hide /dev/kvm from this daemon in a private
        # mount namespace (its sockets under /run/libvirt stay shared).
        # The stand-in must be inaccessible to the QEMU user: libvirt
        # re-probes whenever /dev/kvm is usable but was not at the probe.
        # (libvirt copies /dev mounts into each guest's /dev, so it has to be
        # a device node: /dev/null's, mode 000.)
        nokvm="$PWD/.test-state/nokvm"
        # Never replace the node under a running daemon: its /dev/kvm is a
        # bind mount of this file, and libvirt fails every guest start
        # ("Unable to move /dev/kvm mount") once the source is gone.
        if ! running libvirtd /run/libvirtd.pid; then
            rm -f "$nokvm"
            mknod -m 000 "$nokvm" c 1 3
        fi
        # shellcheck disable=SC2016  # $0 expands in the inner sh
        start_daemon libvirtd /run/libvirtd.pid \
            unshare -m --propagation private sh -c \
            '[ -e /dev/kvm ] && mount --bind "$0" /dev/kvm; exec libvirtd -d' \
            "$nokvm" || exit 1
        for _ in $(seq 50); do
            [ -S /run/libvirt/libvirt-sock-ro ] && break
            sleep 0.1
        done
    else
        echo "test-services: not root; qemu:///system tests need a running libvirtd" >&2
    fi
    ;;
stop)
    if [ -f "$state" ]; then
        tac "$state" | while read -r pid; do
            if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; fi
        done
        rm -f "$state"
    fi
    ;;
*)
    echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
