/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A flush job: one target (a filesystem or a block device), what to do
 * with it, who waits for it, and how two requests for one target become
 * one job. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flush-pool.h"

struct flush_job *flush_job_new(dev_t dev, enum flush_kind kind, const char *fstype, const char *mount)
{
	struct flush_job *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	j->dev = dev;
	j->kind = kind;
	snprintf(j->fstype, sizeof(j->fstype), "%s", fstype ? fstype : "");
	snprintf(j->mount, sizeof(j->mount), "%s", mount ? mount : "");
	return j;
}

static int id_append(uint64_t **v, size_t *n, uint64_t id)
{
	uint64_t *w = realloc(*v, (*n + 1) * sizeof(*w));

	if (!w)
		return -ENOMEM;
	w[(*n)++] = id;
	*v = w;
	return 0;
}

int flush_job_add_waiter(struct flush_job *j, uint64_t id)
{
	return id_append(&j->waiters, &j->n_waiters, id);
}

int flush_job_add_pod(struct flush_job *j, uint64_t cgroup_id)
{
	return id_append(&j->pods, &j->n_pods, cgroup_id);
}

int flush_job_add_inodes(struct flush_job *j, const struct wbg_inode_key *v, size_t n)
{
	if (j->n_inodes + n > j->cap_inodes) {
		size_t cap = (j->n_inodes + n) * 2;
		struct wbg_inode_key *a = realloc(j->inodes, cap * sizeof(*a));

		if (!a)
			return -ENOMEM;
		j->inodes = a;
		j->cap_inodes = cap;
	}
	memcpy(j->inodes + j->n_inodes, v, n * sizeof(*v));
	j->n_inodes += n;
	return 0;
}

void flush_job_free(struct flush_job *j)
{
	if (!j)
		return;
	free(j->inodes);
	free(j->waiters);
	free(j->pods);
	free(j);
}

static void drop_inodes(struct flush_job *j)
{
	j->use_inodes = false;
	free(j->inodes);
	j->inodes = NULL;
	j->n_inodes = j->cap_inodes = 0;
}

int flush_job_merge(struct flush_job *into, const struct flush_job *j, bool *ret_capped)
{
	bool capped = false;
	int r;

	if (into->n_waiters + j->n_waiters > FLUSH_JOB_WAITERS_MAX)
		return -EBUSY;
	for (size_t i = 0; i < j->n_waiters; i++) {
		r = flush_job_add_waiter(into, j->waiters[i]);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < j->n_pods; i++) {
		r = flush_job_add_pod(into, j->pods[i]);
		if (r < 0)
			return r;
	}
	/* written and waited for covers started; started for the writer
	 * covers started for the pod */
	if (into->purpose != FLUSH_FOR_HANDOVER && j->purpose != FLUSH_FOR_HANDOVER && j->purpose > into->purpose)
		into->purpose = j->purpose;
	if (j->purpose == FLUSH_FOR_HANDOVER && into->purpose != FLUSH_FOR_HANDOVER) {
		/* the handover's flush covers the pod's (or the evidence's) inodes too */
		into->purpose = FLUSH_FOR_HANDOVER;
		if (into->use_inodes && !j->use_inodes)
			drop_inodes(into);
	}
	if (into->use_inodes && j->use_inodes && into->n_inodes + j->n_inodes > FLUSH_JOB_INODES_MAX) {
		/* bounded: the whole filesystem covers them all */
		capped = true;
		drop_inodes(into);
	} else if (into->use_inodes && j->use_inodes) {
		r = flush_job_add_inodes(into, j->inodes, j->n_inodes);
		if (r < 0)
			return r;
	} else if (into->use_inodes || j->use_inodes) {
		/* one of them needs the whole filesystem: that covers both */
		drop_inodes(into);
	}
	if (j->passes > into->passes)
		into->passes = j->passes;
	*ret_capped = capped;
	return 0;
}
