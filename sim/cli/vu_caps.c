// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vu_caps.c - the daemon's capabilities, dropped as virtiofsd drops them
 * (libcap-ng): effective and permitted keep chown, dac_override, fowner,
 * fsetid, setgid, setuid, mknod and setfcap (what serving files of any
 * owner needs); the bounding set keeps the same; --modcaps=+cap:-cap
 * adds or removes names.  Nothing is done where nothing is held (an
 * unprivileged start without a user namespace).
 */
#define _GNU_SOURCE
#include "vqf_cli.h"
#include "vqf_vu.h"

#include <cap-ng.h>
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *const vu_keep[] = {
	"chown", "dac_override", "fowner", "fsetid", "setgid", "setuid",
	"mknod", "setfcap", NULL
};

/* One "+name" or "-name" of @list (length @len): its number, or -1. */
static int cap_of(const char *s, size_t len)
{
	char buf[32];
	size_t i;

	if (len >= sizeof(buf))
		return -1;
	for (i = 0; i < len; i++)
		buf[i] = (char)tolower((unsigned char)s[i]);
	buf[len] = 0;
	return capng_name_to_capability(strncmp(buf, "cap_", 4) ? buf :
					buf + 4);
}

/* Calls @fn for each item of @list; stops at the first non-zero. */
static int modcaps_walk(const char *list, int (*fn)(bool add, int cap,
						    const char *item,
						    size_t len))
{
	const char *p = list, *e;
	int ret;

	/* every item, the one after a trailing ':' too, is +cap or -cap */
	for (;;) {
		e = strchr(p, ':');
		if (!e)
			e = p + strlen(p);
		if (e - p < 2 || (*p != '+' && *p != '-'))
			return fn(false, -1, p, (size_t)(e - p));
		ret = fn(*p == '+', cap_of(p + 1, (size_t)(e - p - 1)), p,
			 (size_t)(e - p));
		if (ret || !*e)
			return ret;
		p = e + 1;
	}
}

static int check_one(bool add, int cap, const char *item, size_t len)
{
	(void)add;
	if (cap >= 0)
		return 0;
	return vqf_cli_bad_usage("--modcaps: '%.*s' is not +name or -name of "
				 "a capability (e.g. +sys_admin:-chown)",
				 (int)len, item);
}

int vqf_vu_check_modcaps(const char *list)
{
	if (!*list)
		return vqf_cli_bad_usage("--modcaps: empty list");
	return modcaps_walk(list, check_one);
}

static int apply_one(bool add, int cap, const char *item, size_t len)
{
	(void)item;
	(void)len;
	return capng_update(add ? CAPNG_ADD : CAPNG_DROP,
			    CAPNG_EFFECTIVE | CAPNG_PERMITTED |
			    CAPNG_BOUNDING_SET, (unsigned int)cap) ? -EINVAL :
			    0;
}

int vqf_vu_caps(const struct vqf_vu_opts *o, struct vqf_vu_conf *c)
{
	char *text;
	int i;

	capng_get_caps_process();
	if (capng_have_capabilities(CAPNG_SELECT_CAPS) == CAPNG_NONE) {
		snprintf(c->caps, sizeof(c->caps), "none held");
		return 0;
	}
	capng_clear(CAPNG_SELECT_BOTH);
	for (i = 0; vu_keep[i]; i++)
		capng_update(CAPNG_ADD, CAPNG_EFFECTIVE | CAPNG_PERMITTED |
			     CAPNG_BOUNDING_SET,
			     (unsigned int)capng_name_to_capability(
				     vu_keep[i]));
	if (o->modcaps && modcaps_walk(o->modcaps, apply_one))
		return -EINVAL;
	if (capng_apply(CAPNG_SELECT_BOTH))
		return -EPERM;
	/* the start line names what the kernel holds now, not the request */
	if (capng_get_caps_process())
		return -EPERM;
	text = capng_print_caps_text(CAPNG_PRINT_BUFFER, CAPNG_EFFECTIVE);
	snprintf(c->caps, sizeof(c->caps), "%s",
		 text && *text ? text : "none");
	free(text);
	return 0;
}
