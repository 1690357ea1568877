// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vqf_dirent.c - READDIR / READDIRPLUS reply records (see vqf_dirent.h).
 */
#include "vqf_dirent.h"

int vqf_dirent_next(const u8 *buf, u32 len, bool plus, u32 *pos,
		    struct vqf_dirent *out)
{
	const u32 hdr = plus ? FUSE_NAME_OFFSET_DIRENTPLUS : FUSE_NAME_OFFSET;
	struct fuse_dirent d;
	const u8 *p;
	u32 left, rec;

	if (*pos >= len)
		return 0;
	p = buf + *pos;
	left = len - *pos;
	if (left < hdr)
		return -ENODATA;
	/* One copy of the header: namelen is read once. */
	memcpy(&d, p + hdr - FUSE_NAME_OFFSET, FUSE_NAME_OFFSET);
	if (!d.namelen)
		return -EBADMSG;
	if (d.namelen > VQF_FUSE_NAME_MAX)
		return -ENAMETOOLONG;
	rec = (u32)FUSE_DIRENT_ALIGN(hdr + d.namelen);
	if (rec > left)
		return -EOVERFLOW;
	if (plus)
		memcpy(&out->entry, p, sizeof(out->entry));
	else
		memset(&out->entry, 0, sizeof(out->entry));
	out->name = (const char *)p + hdr;
	out->namelen = d.namelen;
	out->type = d.type;
	out->ino = d.ino;
	out->off = d.off;
	*pos += rec;
	if (memchr(out->name, '/', d.namelen))
		return -EBADE;
	if (memchr(out->name, 0, d.namelen))
		return -EILSEQ;
	return 1;
}
