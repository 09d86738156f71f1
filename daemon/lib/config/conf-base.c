/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A configuration's end (freed) and its string arrays: what the parser
 * (conf.c) and the key table (conf-keys.c, which holds the defaults) both
 * use, below both. */
#include <stdlib.h>

#include "conf.h"

void config_strv_clear(char **v, unsigned *n)
{
	for (unsigned i = 0; i < *n; i++)
		free(v[i]);
	*n = 0;
}

static void free_policies(struct wbg_config *c)
{
	for (unsigned i = 0; i < c->n_policies; i++)
		free(c->policies[i].match);
	c->n_policies = 0;
}

void config_done(struct wbg_config *c)
{
	config_strv_clear(c->roots, &c->n_roots);
	config_strv_clear(c->runtime_dirs, &c->n_runtime_dirs);
	free_policies(c);
}

const char *const *config_runtime_dirs(const struct wbg_config *c, unsigned *ret_n)
{
	*ret_n = c->n_runtime_dirs;
	return (const char *const *)c->runtime_dirs;
}

