#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# treecmp.py [--owners] [--sparse] A B - compares two trees the way a tar
# round trip must keep them: the same names and types, modes, sizes and
# bytes, symlink targets, mtimes (nanoseconds; symlinks included), link
# counts and which names are hard links of each other, user.* xattrs and,
# with --sparse, that files sparse in A are sparse in B.  With --owners,
# uid and gid too.  Prints every difference; exit 1 if there is one.
import os
import stat
import sys


def walk(top):
    out = {".": os.lstat(top)}
    for dirpath, dirnames, filenames in os.walk(top):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            out[os.path.relpath(p, top)] = os.lstat(p)
    return out


def xattrs(path):
    try:
        names = os.listxattr(path, follow_symlinks=False)
    except OSError:
        return {}
    return {n: os.getxattr(path, n, follow_symlinks=False)
            for n in sorted(names) if n.startswith("user.")}


def digest(path):
    with open(path, "rb") as f:
        return f.read()


def links(tree):
    groups = {}
    for rel, st in tree.items():
        if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
            groups.setdefault(st.st_ino, set()).add(rel)
    return sorted(sorted(g) for g in groups.values())


def main():
    args = sys.argv[1:]
    owners = "--owners" in args
    sparse = "--sparse" in args
    args = [a for a in args if not a.startswith("--")]
    a, b = args
    ta, tb = walk(a), walk(b)
    diffs = []
    for rel in sorted(set(ta) | set(tb)):
        if rel not in tb:
            diffs.append(f"{rel}: missing in {b}")
            continue
        if rel not in ta:
            diffs.append(f"{rel}: extra in {b}")
            continue
        sa, sb = ta[rel], tb[rel]
        pa, pb = os.path.join(a, rel), os.path.join(b, rel)
        if stat.S_IFMT(sa.st_mode) != stat.S_IFMT(sb.st_mode):
            diffs.append(f"{rel}: type {sa.st_mode:o} != {sb.st_mode:o}")
            continue
        if not stat.S_ISLNK(sa.st_mode) and \
                stat.S_IMODE(sa.st_mode) != stat.S_IMODE(sb.st_mode):
            diffs.append(f"{rel}: mode {stat.S_IMODE(sa.st_mode):o} != "
                         f"{stat.S_IMODE(sb.st_mode):o}")
        if owners and (sa.st_uid, sa.st_gid) != (sb.st_uid, sb.st_gid):
            diffs.append(f"{rel}: owner {sa.st_uid}:{sa.st_gid} != "
                         f"{sb.st_uid}:{sb.st_gid}")
        if sa.st_mtime_ns != sb.st_mtime_ns:
            diffs.append(f"{rel}: mtime {sa.st_mtime_ns} != "
                         f"{sb.st_mtime_ns}")
        if stat.S_ISLNK(sa.st_mode):
            if os.readlink(pa) != os.readlink(pb):
                diffs.append(f"{rel}: target {os.readlink(pa)!r} != "
                             f"{os.readlink(pb)!r}")
        elif stat.S_ISREG(sa.st_mode):
            if sa.st_size != sb.st_size:
                diffs.append(f"{rel}: size {sa.st_size} != {sb.st_size}")
            elif digest(pa) != digest(pb):
                diffs.append(f"{rel}: contents differ")
            if sa.st_nlink != sb.st_nlink:
                diffs.append(f"{rel}: nlink {sa.st_nlink} != "
                             f"{sb.st_nlink}")
            if sparse and sa.st_blocks * 512 < sa.st_size // 2 and \
                    sb.st_blocks * 512 >= sb.st_size:
                diffs.append(f"{rel}: not sparse in {b} "
                             f"({sb.st_blocks} blocks)")
        xa, xb = xattrs(pa), xattrs(pb)
        if xa != xb:
            diffs.append(f"{rel}: xattrs {xa} != {xb}")
    if links(ta) != links(tb):
        diffs.append(f"hard links {links(ta)} != {links(tb)}")
    for d in diffs:
        print(f"treecmp {a} {b}: {d}")
    return 1 if diffs else 0


sys.exit(main())
