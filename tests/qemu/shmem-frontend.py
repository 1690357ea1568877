#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR MIT
"""The patched QEMU's half of virtio shared memory for vhost-user-fs,
checked from the back-end's side of the socket.

A scripted vhost-user back-end (this program) serves QEMU's realize of
vhost-user-fs-pci, reports shared memory regions through GET_SHMEM_CONFIG
and then sends SHMEM_MAP / SHMEM_UNMAP on the back-end channel, good and
bad, each with NEED_REPLY: QEMU must refuse every bad one with a non-zero
reply and stay up.  What the guest would see is read back through QEMU's
monitor (the BAR from `info pci`, mapped bytes with `xp`): only mapped
ranges are read, as an unmapped page of a region is PROT_NONE in QEMU.
The firmware alone runs (no kernel): it assigns the BARs, and nothing
starts the device.

Runs: shmem on (regions, maps, refusals, layout), a back-end without
F_SHMEM (stock behaviour), shmem=off, cache-size smaller than the
back-end's window, and two bad GET_SHMEM_CONFIG replies, which must stop
QEMU with an error (not a signal).

usage: shmem-frontend.py QEMU [WORKDIR]
Prints one line per check and 'N passed, N failed'; exit 1 on a failure.
"""

import json
import os
import re
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

MiB = 1 << 20
PAGE = 4096
HDR = struct.Struct("<III")
F_VERSION_1 = 32
F_PROTOCOL_FEATURES = 30
PF_REPLY_ACK, PF_SLAVE_REQ, PF_SLAVE_SEND_FD, PF_SHMEM = 3, 5, 10, 20
VERSION, REPLY, NEED_REPLY = 0x1, 0x4, 0x8
GET_FEATURES, GET_PROTOCOL_FEATURES, GET_QUEUE_NUM = 1, 15, 17
GET_VRING_BASE, GET_CONFIG, GET_MAX_MEM_SLOTS = 11, 24, 36
SET_SLAVE_REQ_FD, GET_SHMEM_CONFIG = 21, 44
SHMEM_MAP, SHMEM_UNMAP = 9, 10
MMAP = struct.Struct("<B7xQQQQ")
MAP_RW = 1

passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
        print(f"ok - {what}", flush=True)
    else:
        failed += 1
        print(f"not ok - {what}", flush=True)


def recv_exact(sock, n, fds=None):
    buf = b""
    while len(buf) < n:
        if fds is not None and not buf:
            data, got, _, _ = socket.recv_fds(sock, n, 8)
            fds.extend(got)
        else:
            data = sock.recv(n - len(buf))
        if not data:
            raise EOFError
        buf += data
    return buf


class Backend:
    """Serves the front-end socket in a thread; the back-end channel is
    driven from the main thread once QEMU hands it over."""

    def __init__(self, path, shmem=True, sizes=None, nregions=None):
        self.shmem = shmem
        self.sizes = sizes or {}
        self.nregions = len(self.sizes) if nregions is None else nregions
        self.requests = []
        self.slave = None
        self.have_slave = threading.Event()
        self.lsock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        # a socket file left by an earlier run would make bind() fail
        if os.path.exists(path):
            os.unlink(path)
        self.lsock.bind(path)
        self.lsock.listen(1)
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def protocol_features(self):
        pf = 1 << PF_REPLY_ACK | 1 << PF_SLAVE_REQ | 1 << PF_SLAVE_SEND_FD
        return pf | (1 << PF_SHMEM if self.shmem else 0)

    def reply(self, sock, req, payload):
        sock.sendall(HDR.pack(req, VERSION | REPLY, len(payload)) + payload)

    def serve(self):
        try:
            sock, _ = self.lsock.accept()
        except OSError:
            return
        self.sock = sock
        try:
            while True:
                fds = []
                req, flags, size = HDR.unpack(recv_exact(sock, HDR.size, fds))
                payload = recv_exact(sock, size) if size else b""
                self.requests.append(req)
                if req == GET_FEATURES:
                    feat = 1 << F_VERSION_1 | 1 << F_PROTOCOL_FEATURES
                    self.reply(sock, req, struct.pack("<Q", feat))
                elif req == GET_PROTOCOL_FEATURES:
                    self.reply(sock, req,
                               struct.pack("<Q", self.protocol_features()))
                elif req == GET_QUEUE_NUM:
                    self.reply(sock, req, struct.pack("<Q", 2))
                elif req == GET_MAX_MEM_SLOTS:
                    self.reply(sock, req, struct.pack("<Q", 8))
                elif req == GET_VRING_BASE:
                    self.reply(sock, req, payload[:4] + b"\0" * 4)
                elif req == GET_CONFIG:
                    self.reply(sock, req, payload)
                elif req == GET_SHMEM_CONFIG:
                    arr = [0] * 256
                    for shmid, size in self.sizes.items():
                        arr[shmid] = size
                    self.reply(sock, req, struct.pack("<II256Q",
                                                      self.nregions, 0, *arr))
                else:
                    if req == SET_SLAVE_REQ_FD and fds:
                        self.slave = socket.socket(fileno=fds.pop(0))
                        self.have_slave.set()
                    if flags & NEED_REPLY:
                        self.reply(sock, req, struct.pack("<Q", 0))
                for fd in fds:
                    os.close(fd)
        except (EOFError, ConnectionError, OSError):
            pass

    def send(self, req, payload, fds=(), reply=True):
        """One back-end request; returns QEMU's u64 status (0: done)."""
        flags = VERSION | (NEED_REPLY if reply else 0)
        msg = HDR.pack(req, flags, len(payload)) + payload
        socket.send_fds(self.slave, [msg], list(fds))
        if not reply:
            return None
        rreq, rflags, rsize = HDR.unpack(recv_exact(self.slave, HDR.size))
        body = recv_exact(self.slave, rsize)
        if rreq != req or not rflags & REPLY or rsize != 8:
            raise RuntimeError(f"bad reply {rreq} {rflags:#x} {rsize}")
        return struct.unpack("<Q", body)[0]

    def map(self, shmid, fd_off, shm_off, length, flags, fds):
        return self.send(SHMEM_MAP,
                         MMAP.pack(shmid, fd_off, shm_off, length, flags), fds)

    def unmap(self, shmid, shm_off, length, fds=()):
        return self.send(SHMEM_UNMAP,
                         MMAP.pack(shmid, 0, shm_off, length, 0), fds)

    def close(self):
        self.lsock.close()


class Qemu:
    """QEMU with the device; the guest's RAM a memfd unless @mem names
    another backend (shmem-fault.py: a file the host maps), @extra more
    arguments (a -kernel)."""

    def __init__(self, qemu, work, sock, devopts="", ram="256M", mem=None,
                 extra=()):
        self.qmp_path = os.path.join(work, "qmp.sock")
        self.log = open(os.path.join(work, "qemu.log"), "w+")
        mem = mem or f"memory-backend-memfd,id=mem,size={ram},share=on"
        args = [qemu, "-accel", "tcg", "-nodefaults", "-display", "none",
                "-m", ram, "-machine", "pc",
                "-object", mem,
                "-numa", "node,memdev=mem",
                "-chardev", f"socket,id=vfs,path={sock}",
                "-device", "vhost-user-fs-pci,id=fs,chardev=vfs,tag=vqf" +
                devopts,
                "-qmp", f"unix:{self.qmp_path},server=on,wait=off",
                *extra]
        self.proc = subprocess.Popen(["timeout", "-k", "5", "300"] + args,
                                     stdout=self.log, stderr=subprocess.STDOUT)
        self.qmp = None

    def connect(self):
        for _ in range(600):
            if self.proc.poll() is not None:
                return False
            try:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(self.qmp_path)
                self.qmp = s.makefile("rw")
                json.loads(self.qmp.readline())
                self.cmd("qmp_capabilities")
                return True
            except (OSError, ValueError):
                # no socket yet, or QEMU quit under us (a refused device)
                self.qmp = None
                time.sleep(0.1)
        return False

    def cmd(self, name, **args):
        self.qmp.write(json.dumps({"execute": name, "arguments": args}) + "\n")
        self.qmp.flush()
        while True:
            r = json.loads(self.qmp.readline())
            if "return" in r or "error" in r:
                return r

    def hmp(self, line):
        return self.cmd("human-monitor-command",
                        **{"command-line": line}).get("return", "")

    def bar2(self):
        """(address, size) of the virtio-fs device's BAR 2 once the
        firmware has placed it, or None if there is no BAR 2."""
        for _ in range(1200):
            info = self.hmp("info pci")
            dev = info.split("Bus")
            fs = [d for d in dev if "1af4:105a" in d or "device 1af4:105a" in d
                  or "PCI device 1af4:105a" in d]
            if not fs:
                return None
            for line in fs[0].splitlines():
                line = line.strip()
                if line.startswith("BAR2:"):
                    # BAR2: 64 bit prefetchable memory at 0x... [0x...].
                    m = re.search(r"at (0x[0-9a-f]+) \[(0x[0-9a-f]+)\]",
                                  line)
                    lo, hi = (int(m[1], 16), int(m[2], 16)) if m else (0, 0)
                    if lo not in (0, 0xffffffffffffffff) and lo < hi:
                        return lo, hi - lo + 1, line
                    break
            else:
                return None
            time.sleep(0.1)
        return None

    def read(self, addr, n):
        out = self.hmp(f"xp /{n}xb {addr:#x}")
        vals = []
        for line in out.splitlines():
            if ":" in line:
                vals += [int(v, 16) for v in line.split(":", 1)[1].split()]
        return bytes(vals)

    def alive(self):
        return self.proc.poll() is None and \
            self.cmd("query-status").get("return", {}).get("status") is not None

    def stop(self):
        if self.qmp:
            try:
                self.cmd("quit")
            except (OSError, ValueError):
                pass
        try:
            rc = self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        self.log.seek(0)
        return rc, self.log.read()


def pattern(seed, n):
    return bytes((seed * 131 + i * 7 + (i >> 12)) & 0xff for i in range(n))


def run_shmem(qemu, work):
    """Regions on: layout, maps, every refusal, QEMU still up."""
    cache, table = 8 * MiB, 64 * 1024
    sock = os.path.join(work, "a.sock")
    be = Backend(sock, sizes={0: cache, 1: table})
    q = Qemu(qemu, work, sock)
    check(q.connect(), "shmem: QEMU starts with the back-end's regions")
    check(GET_SHMEM_CONFIG in be.requests, "shmem: QEMU asked GET_SHMEM_CONFIG")
    check(be.have_slave.wait(60), "shmem: back-end channel handed over")

    data = os.path.join(work, "data")
    with open(data, "wb") as f:
        f.write(pattern(1, 4 * MiB))
    rw = os.open(data, os.O_RDWR)
    ro = os.open(data, os.O_RDONLY)
    vt = os.memfd_create("vqf-version-table")
    os.ftruncate(vt, table)
    os.pwrite(vt, pattern(2, table), 0)

    check(be.map(0, 0, 0, 64 * 1024, MAP_RW, [rw]) == 0,
          "map: cache 64 KiB at 0, writable")
    check(be.map(0, 1 * MiB, cache - 64 * 1024, 64 * 1024, 0, [ro]) == 0,
          "map: cache last 64 KiB, read-only fd, read-only map")
    check(be.map(1, 0, 0, table, 0, [vt]) == 0,
          "map: version table (shmid 1), read-only")
    refusals = [
        ("unknown shmid 2", lambda: be.map(2, 0, 0, PAGE, 0, [ro])),
        ("shmid 255", lambda: be.map(255, 0, 0, PAGE, 0, [ro])),
        ("offset at the end", lambda: be.map(0, 0, cache, PAGE, 0, [ro])),
        ("range across the end",
         lambda: be.map(0, 0, cache - PAGE, 2 * PAGE, 0, [ro])),
        ("shm_offset + len overflows",
         lambda: be.map(0, 0, (1 << 64) - PAGE, 2 * PAGE, 0, [ro])),
        ("len past every region", lambda: be.map(0, 0, 0, 1 << 63, 0, [ro])),
        ("table past its size", lambda: be.map(1, 0, 0, table + PAGE, 0, [vt])),
        ("unaligned shm_offset", lambda: be.map(0, 0, 100, PAGE, 0, [ro])),
        ("unaligned len", lambda: be.map(0, 0, 0, 100, 0, [ro])),
        ("unaligned fd_offset", lambda: be.map(0, 100, 0, PAGE, 0, [ro])),
        ("zero len", lambda: be.map(0, 0, 0, 0, 0, [ro])),
        ("fd_offset past off_t", lambda: be.map(0, 1 << 63, 0, PAGE, 0, [ro])),
        ("fd_offset + len past off_t",
         lambda: be.map(0, (1 << 63) - PAGE, 0, 2 * PAGE, 0, [ro])),
        ("no fd", lambda: be.map(0, 0, 0, PAGE, 0, [])),
        ("two fds", lambda: be.map(0, 0, 0, PAGE, 0, [ro, rw])),
        ("unknown flag bit 1", lambda: be.map(0, 0, 0, PAGE, 2, [ro])),
        ("flags bit 63", lambda: be.map(0, 0, 0, PAGE, 1 << 63, [ro])),
        ("writable map of a read-only fd",
         lambda: be.map(0, 0, 2 * MiB, PAGE, MAP_RW, [ro])),
        ("short payload",
         lambda: be.send(SHMEM_MAP, MMAP.pack(0, 0, 0, PAGE, 0)[:32], [ro])),
        ("long payload",
         lambda: be.send(SHMEM_MAP, MMAP.pack(0, 0, 0, PAGE, 0) + b"\0" * 8,
                         [ro])),
        ("unmap with an fd", lambda: be.unmap(0, 0, PAGE, [ro])),
        ("unmap unknown shmid", lambda: be.unmap(3, 0, PAGE)),
        ("unmap past the end", lambda: be.unmap(0, cache, PAGE)),
        ("unmap unaligned", lambda: be.unmap(0, 10, PAGE)),
        ("unmap zero len", lambda: be.unmap(0, 0, 0)),
        ("unknown back-end request 11", lambda: be.send(11, b"\0" * 8)),
    ]
    for what, fn in refusals:
        check(fn() != 0, f"refused: {what}")
    check(q.alive(), "QEMU runs after every refusal")
    # A request without NEED_REPLY gets no answer but is still checked.
    be.send(SHMEM_MAP, MMAP.pack(9, 0, 0, PAGE, 0), [ro], reply=False)
    check(be.map(0, 0, 4 * MiB, PAGE, 0, [ro]) == 0,
          "map after a silent refusal: the channel is in step")

    bar = q.bar2()
    check(bar is not None, "BAR 2 placed by the firmware")
    if bar:
        addr, size, line = bar
        check(size == 16 * MiB, f"BAR 2 size {size:#x} = pow2(8 MiB + 2 MiB)")
        check("64 bit" in line and "prefetchable" in line,
              f"BAR 2 is 64-bit prefetchable ({line})")
        p = pattern(1, 4 * MiB)
        check(q.read(addr, 32) == p[:32], "guest reads mapped cache bytes")
        check(q.read(addr + 60 * 1024, 32) == p[60 * 1024:60 * 1024 + 32],
              "guest reads the end of the first mapping")
        check(q.read(addr + cache - 64 * 1024, 32) == p[MiB:MiB + 32],
              "guest reads fd_offset 1 MiB at the window's end")
        check(q.read(addr + 4 * MiB, 16) == p[:16],
              "the map after the refusals is in place")
        check(q.read(addr + cache, 32) == pattern(2, table)[:32],
              "version table at BAR offset 8 MiB (2 MiB aligned)")
        # A store through the host file shows at once in the guest's view.
        os.pwrite(rw, b"VQFUSE-SHMEM", 128)
        check(q.read(addr + 128, 12) == b"VQFUSE-SHMEM",
              "host write visible through the window")
        check(be.unmap(0, 0, 64 * 1024) == 0, "unmap the first mapping")
        check(be.unmap(0, 0, 64 * 1024) == 0, "unmap an unmapped range")
        check(be.map(0, 0, 0, 64 * 1024, 0, [ro]) == 0, "map it again")
        check(be.map(0, 2 * MiB, 0, 64 * 1024, 0, [ro]) == 0,
              "a map replaces the pages in place")
        check(q.read(addr, 16) == pattern(1, 4 * MiB)[2 * MiB:2 * MiB + 16],
              "guest reads the replacing file range")
    check(q.alive(), "QEMU runs at the end")
    rc, log = q.stop()
    check(rc == 0, f"QEMU quits cleanly (status {rc})")
    for fd in (rw, ro, vt):
        os.close(fd)
    be.close()


def run_stock(qemu, work, what, backend_kw, devopts=""):
    """No region: no GET_SHMEM_CONFIG unless F_SHMEM, no BAR 2, every map
    refused; the device is as in stock QEMU."""
    sock = os.path.join(work, "s.sock")
    be = Backend(sock, **backend_kw)
    q = Qemu(qemu, work, sock, devopts)
    check(q.connect(), f"{what}: QEMU starts")
    asked = GET_SHMEM_CONFIG in be.requests
    check(asked == (backend_kw.get("shmem", True) and "shmem=off" not in devopts),
          f"{what}: GET_SHMEM_CONFIG sent only with F_SHMEM and shmem=on")
    check(be.have_slave.wait(60), f"{what}: back-end channel handed over")
    fd = os.memfd_create("x")
    os.ftruncate(fd, MiB)
    check(be.map(0, 0, 0, PAGE, 0, [fd]) != 0, f"{what}: SHMEM_MAP refused")
    os.close(fd)
    check(q.bar2() is None, f"{what}: no BAR 2")
    check(q.alive(), f"{what}: QEMU runs")
    rc, _ = q.stop()
    check(rc == 0, f"{what}: QEMU quits cleanly")
    be.close()


def run_cache_size(qemu, work):
    sock = os.path.join(work, "c.sock")
    be = Backend(sock, sizes={0: 8 * MiB})
    q = Qemu(qemu, work, sock, ",cache-size=4M")
    check(q.connect(), "cache-size=4M: QEMU starts")
    check(be.have_slave.wait(60), "cache-size=4M: back-end channel")
    fd = os.memfd_create("x")
    os.ftruncate(fd, 8 * MiB)
    check(be.map(0, 0, 4 * MiB - PAGE, PAGE, 0, [fd]) == 0,
          "cache-size=4M: last page of the smaller window maps")
    check(be.map(0, 0, 4 * MiB, PAGE, 0, [fd]) != 0,
          "cache-size=4M: the back-end's larger window is refused past 4 MiB")
    bar = q.bar2()
    check(bar is not None and bar[1] == 4 * MiB,
          "cache-size=4M: BAR 2 is 4 MiB")
    os.close(fd)
    rc, _ = q.stop()
    check(rc == 0, "cache-size=4M: QEMU quits cleanly")
    be.close()


def run_bad_config(qemu, work, what, sizes, nregions, why):
    sock = os.path.join(work, "b.sock")
    be = Backend(sock, sizes=sizes, nregions=nregions)
    q = Qemu(qemu, work, sock)
    started = q.connect()
    rc, log = q.stop()
    check(not started and rc == 1,
          f"{what}: QEMU refuses the device and exits 1 (got {rc})")
    check(why in log, f"{what}: QEMU says why ({why})")
    be.close()


def main():
    qemu = sys.argv[1]
    work = sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp(
        prefix="vqf-shmem-")
    os.makedirs(work, exist_ok=True)
    run_shmem(qemu, work)
    run_stock(qemu, work, "no F_SHMEM", {"shmem": False})
    run_stock(qemu, work, "shmem=off", {"sizes": {0: 8 * MiB}}, ",shmem=off")
    run_stock(qemu, work, "no region", {"sizes": {}})
    run_cache_size(qemu, work)
    run_bad_config(qemu, work, "count disagrees with sizes", {0: 8 * MiB}, 2,
                   "2 regions announced, 1 sized")
    run_bad_config(qemu, work, "size not page-aligned", {0: 5000}, 1,
                   "not a non-zero multiple of the page size")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
