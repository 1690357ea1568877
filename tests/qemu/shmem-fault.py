#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR MIT
"""The patched QEMU survives faults in a virtio shared memory region
(qemu/0007): a guest CPU's load or store on a window page whose file
shrank under the mapping (SIGBUS past the end of a MAP_SHARED file), on a
page no file backs (never mapped, or unmapped again: SIGSEGV on the
PROT_NONE reservation), or a store to a page mapped read-only.

The scripted vhost-user back-end of shmem-frontend.py serves the device;
the guest is shmem-fault-guest.S, a multiboot image that makes the loads
and stores the host asks for through a mailbox in guest RAM (the RAM is
a file the host maps).  So the accesses are the guest's own, made by the
vCPU thread under TCG, as a guest kernel's would be.  After each, QEMU
must still run, the guest still turn its loop, and the device's
`shmem-faults` counter (qom-get) count exactly the pages replaced.

What the guest must see (docs/dax.md, "Truncation"): zeros past the new
end of the file, its own stores on such a page (kept in QEMU's private
page, never in the file), the file's bytes inside the new end, the file's
bytes again once the back-end maps the range again.

usage: shmem-fault.py QEMU WORKDIR [CC]
Prints one line per check and 'N passed, N failed'; exit 1 on a failure.
"""

import importlib
import mmap
import os
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
fe = importlib.import_module("shmem-frontend")

MiB, PAGE, MAP_RW = fe.MiB, fe.PAGE, fe.MAP_RW
check, pattern = fe.check, fe.pattern
RAM = 128 * MiB
MBOX = 0x300000
LOAD, STORE = 1, 2
# A guest that does not answer while QEMU runs is a hang, not a timing
# figure: this only bounds how long the test waits for it.
HANG = 120


def build_guest(cc, work):
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "shmem-fault-guest.S")
    elf = os.path.join(work, "shmem-fault-guest.elf")
    subprocess.run([cc, "-m32", "-nostdlib", "-static", "-no-pie",
                    "-Wl,-N", "-Wl,-Ttext=0x100000", "-Wl,--build-id=none",
                    "-Wl,--no-warn-rwx-segments", "-o", elf, src], check=True)
    return elf


class Guest:
    """The mailbox of shmem-fault-guest.S in the guest's RAM file."""

    def __init__(self, q, ram_path):
        self.q = q
        self.fd = os.open(ram_path, os.O_RDWR)
        self.m = mmap.mmap(self.fd, RAM)
        self.seq = 0

    def u32(self, off):
        return struct.unpack_from("<I", self.m, MBOX + off)[0]

    def beat(self):
        return self.u32(24)

    def running(self):
        """The guest's loop turns (its counter moves)."""
        b = self.beat()
        end = time.monotonic() + HANG
        while time.monotonic() < end and self.q.proc.poll() is None:
            if self.beat() != b:
                return True
            time.sleep(0.01)
        return False

    def access(self, op, addr, value=0):
        """One load or store by the guest's CPU: the load's value, 0 for a
        store, None if the guest never finished it (QEMU died)."""
        self.seq += 1
        struct.pack_into("<III", self.m, MBOX + 4, op, addr, value)
        struct.pack_into("<I", self.m, MBOX, self.seq)
        end = time.monotonic() + HANG
        while time.monotonic() < end and self.q.proc.poll() is None:
            if self.u32(16) == self.seq:
                return self.u32(20) if op == LOAD else 0
            time.sleep(0.002)
        return None

    def load(self, addr):
        return self.access(LOAD, addr)

    def store(self, addr, value):
        return self.access(STORE, addr, value) == 0

    def close(self):
        self.m.close()
        os.close(self.fd)


def faults(q):
    if q.proc.poll() is not None:
        return None
    r = q.cmd("qom-get", path="/machine/peripheral/fs/virtio-backend",
              property="shmem-faults")
    return r.get("return")


def u32(data, off):
    return struct.unpack_from("<I", data, off)[0]


def run_faults(qemu, work, cc):
    window = 8 * MiB
    sock = os.path.join(work, "f.sock")
    ram = os.path.join(work, "ram")
    if os.path.exists(ram):
        os.unlink(ram)
    elf = build_guest(cc, work)
    be = fe.Backend(sock, sizes={0: window})
    q = fe.Qemu(qemu, work, sock, ram="128M",
                mem=f"memory-backend-file,id=mem,size=128M,share=on,"
                    f"mem-path={ram}",
                extra=["-kernel", elf])
    try:
        check(q.connect(), "QEMU starts with the window and the guest")
        check(be.have_slave.wait(60), "back-end channel handed over")
        g = Guest(q, ram)
        check(g.running(), "the guest runs its loop")
        bar = q.bar2()
        check(bar is not None and bar[0] + bar[1] <= 1 << 32,
              "BAR 2 below 4 GiB, where the 32-bit guest reaches it")
        if bar is None:
            q.stop()
            return
        w = bar[0]
        check(faults(q) == 0, "shmem-faults 0 before any fault")

        # A 1 MiB file mapped writable at window offset 0, read by the guest.
        data = os.path.join(work, "data")
        p1 = pattern(1, MiB)
        with open(data, "wb") as f:
            f.write(p1)
        rw = os.open(data, os.O_RDWR)
        check(be.map(0, 0, 0, MiB, MAP_RW, [rw]) == 0,
              "map 1 MiB of the file writable at window offset 0")
        check(g.load(w + 4096) == u32(p1, 4096),
              "guest loads the file's bytes")
        check(g.load(w + 512 * 1024) == u32(p1, 512 * 1024),
              "guest loads at 512 KiB, inside the file")

        # The host shrinks the file under the mapping.
        eof = 256 * 1024 + 100
        os.ftruncate(rw, eof)
        check(g.load(w + 4096) == u32(p1, 4096),
              "after the shrink: data inside the new end unchanged")
        check(g.load(w + 256 * 1024 + 96) == u32(p1[:eof] + b"\0" * 4,
                                                   256 * 1024 + 96),
              "the page holding the new end: its bytes, then zeros")
        check(faults(q) == 0, "no fault inside the page holding the end")
        v = g.load(w + 512 * 1024)
        check(v == 0, f"guest load past the new end reads 0 (got {v})")
        check(q.proc.poll() is None, "QEMU survives the SIGBUS past the end"
              f" (exit status {q.proc.poll()})")
        check(faults(q) == 1, "shmem-faults counts it (1)")
        check(g.store(w + 512 * 1024 + 8, 0xdeadbeef),
              "guest store on that page returns")
        check(g.load(w + 512 * 1024 + 8) == 0xdeadbeef,
              "the guest reads its store back (QEMU's private page)")
        check(g.load(w + 512 * 1024 + 4) == 0, "the rest of the page is 0")
        check(faults(q) == 1, "the replaced page faults no more (still 1)")
        check(g.store(w + 768 * 1024, 0x12345678),
              "guest store past the end, first touch of its page, returns")
        check(faults(q) == 2, "shmem-faults 2")
        check(os.fstat(rw).st_size == eof,
              "the file's size is still the host's (stores went nowhere)")

        # The file grows again: a touched page stays detached until the
        # back-end maps the range again, an untouched one shows the file.
        p3 = pattern(3, MiB)
        os.pwrite(rw, p3[eof:], eof)
        cur = p1[:eof] + p3[eof:]
        check(g.load(w + 512 * 1024 + 8) == 0xdeadbeef,
              "file grown again: the replaced page still the private one")
        check(g.load(w + 900 * 1024) == u32(p3, 900 * 1024),
              "an untouched page past the old end shows the grown file")
        check(be.map(0, 0, 0, MiB, MAP_RW, [rw]) == 0,
              "the back-end maps the range again")
        check(g.load(w + 512 * 1024 + 8) == u32(p3, 512 * 1024 + 8),
              "after the new map the guest sees the file's bytes")
        check(faults(q) == 2, "no new fault after the new map")
        check(os.pread(rw, 4, 512 * 1024 + 8) == p3[512 * 1024 + 8:][:4],
              "the host file never got the guest's store")

        # A hole: window pages never mapped.
        hole = w + 4 * MiB
        v = g.load(hole)
        check(v == 0, f"guest load in a never-mapped page reads 0 (got {v})")
        check(q.proc.poll() is None, "QEMU survives the SIGSEGV in the hole"
              f" (exit status {q.proc.poll()})")
        check(faults(q) == 3, "shmem-faults 3")
        check(g.store(hole + 16, 0xcafef00d) and
              g.load(hole + 16) == 0xcafef00d,
              "a store in the hole reads back")
        check(g.store(hole + 2 * PAGE, 7) and faults(q) == 4,
              "a store on another hole page: shmem-faults 4")
        # A map over the replaced page replaces it; an unmap makes it a hole.
        check(be.map(0, 0, 4 * MiB, PAGE, 0, [rw]) == 0,
              "map a file page over the replaced hole page")
        check(g.load(hole + 16) == u32(cur, 16),
              "the guest sees the file's page")
        check(be.unmap(0, 4 * MiB, PAGE) == 0, "unmap it again (SHMEM_UNMAP)")
        check(g.load(hole + 16) == 0 and faults(q) == 5,
              "the unmapped page is a hole again: 0, shmem-faults 5")

        # A store to a page mapped read-only: the page's bytes stay, the
        # store goes to a private copy.
        ro = os.open(data, os.O_RDONLY)
        check(be.map(0, 0, 2 * MiB, PAGE, 0, [ro]) == 0,
              "map a file page read-only at 2 MiB")
        check(g.load(w + 2 * MiB + 32) == u32(cur, 32), "guest loads it")
        check(g.store(w + 2 * MiB + 32, 0x55aa55aa),
              "guest store on the read-only page returns")
        check(faults(q) == 6, "shmem-faults 6")
        check(g.load(w + 2 * MiB + 32) == 0x55aa55aa and
              g.load(w + 2 * MiB + 36) == u32(cur, 36),
              "the guest reads its store and the page's other bytes")
        check(os.pread(ro, 4, 32) == cur[32:36], "the host file is unchanged")

        # QEMU's own access through the monitor (main loop thread) to a hole.
        check(q.read(w + 6 * MiB, 16) == b"\0" * 16 and faults(q) == 7,
              "monitor xp on a hole reads zeros, shmem-faults 7")

        check(g.running(), "the guest still runs its loop")
        check(q.alive(), "QEMU runs at the end")
        rc, log = q.stop()
        check(rc == 0, f"QEMU quits cleanly (status {rc})")
        check("replaced by private pages" in log,
              "QEMU's log reports the replaced pages")
        g.close()
        os.close(rw)
        os.close(ro)
        be.close()
        os.unlink(ram)
    finally:
        # a failure that left QEMU running must not leave it behind
        if q.proc.poll() is None:
            q.proc.kill()
            q.proc.wait()


def main():
    qemu = sys.argv[1]
    work = sys.argv[2]
    cc = sys.argv[3] if len(sys.argv) > 3 else "cc"
    os.makedirs(work, exist_ok=True)
    try:
        run_faults(qemu, work, cc)
    except (OSError, ValueError) as e:
        # QEMU died under the test (its monitor went away)
        check(False, f"the test ran to its end ({e!r})")
    print(f"{fe.passed} passed, {fe.failed} failed")
    return 1 if fe.failed else 0


if __name__ == "__main__":
    sys.exit(main())
