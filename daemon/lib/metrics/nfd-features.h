/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * node-feature-discovery's local feature file: the node labels nfd-worker
 * publishes from /etc/kubernetes/node-feature-discovery/features.d/ (one
 * "name=value" a line, "#" comments, "# +expiry-time=RFC3339" directives,
 * dot files skipped, 64 KiB at most). wbguardd's say whether the kernel has
 * the dying-wb fallback and whether wbguardd guards the node:
 *
 *   feature.node.kubernetes.io/wbguard-dying-wb-fallback=active|missing|unknown
 *   feature.node.kubernetes.io/wbguard-guarded=true|false
 *
 * In feature.node.kubernetes.io, which nfd-master always allows (a denyLabelNs
 * cannot take it away, an older nfd-master needs no -extra-label-ns). The
 * file expires (NFD then drops its labels) unless renewed, so that a
 * wbguardd that died without its exit leaves no "guarded=true" behind for
 * long. Decided and formatted here; written off the loop (textfile.h).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#define NFD_LABEL_PREFIX "feature.node.kubernetes.io/wbguard-"
/* How far ahead the file's expiry-time is set; it is renewed once less than
 * half of it is left, so it never runs out while wbguardd runs and a dead
 * one's labels go within this long (and nfd-worker's next pass). */
#define NFD_FEATURES_EXPIRY_USEC (10ULL * 60 * 1000 * 1000)

struct wbg_nfd_labels {
	const char *dying_wb_fallback; /* wbg_verdict_to_string(): "active", "missing", "unknown" */
	bool guarded;                  /* wbguardd runs and mitigates */
};

/* What was last handed to the writer, compared instead of re-reading the
 * file: zeroed, nothing yet. */
struct wbg_nfd_features {
	bool submitted;
	bool guarded;
	char dying_wb_fallback[16];
	uint64_t expiry_usec; /* CLOCK_REALTIME */
};

/* Kubernetes' label rules, as nfd-master applies them before it labels a
 * node: a name is PREFIX/NAME, PREFIX a DNS subdomain of at most 253
 * characters, NAME at most 63 of [A-Za-z0-9._-] beginning and ending
 * alphanumeric (NFD wants the prefix: unprefixed names are deprecated); a
 * value is empty or as NAME. */
bool nfd_label_name_valid(const char *name);
bool nfd_label_value_valid(const char *value);

/* The file's text for l, expiring at expiry_usec (CLOCK_REALTIME);
 * -EINVAL when a value breaks the rules above. */
int nfd_features_format(const struct wbg_nfd_labels *l, uint64_t expiry_usec, char **ret);

/* 1 and the text to write in *ret_text when l differs from what s last
 * took, or the expiry needs renewing (less than half left, or further
 * ahead than a whole span: the clock went back); 0 and NULL when nothing
 * is due. s then holds l. */
int nfd_features_update(struct wbg_nfd_features *s, const struct wbg_nfd_labels *l, uint64_t now_usec,
			char **ret_text);

/* Replaces path with text atomically through a dot file in its directory
 * (nfd-worker reads every other file there, and would read a half-written
 * one): -ENOENT when the directory is missing, -EINVAL for a path whose
 * file name is a dot file (NFD would never read it). */
int nfd_features_write(const char *path, const char *text);
