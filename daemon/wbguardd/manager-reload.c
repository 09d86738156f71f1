/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A reload (SIGHUP, Reload, a changed file): the new configuration replaces
 * the running one whole, or not at all (a parse error, a restart key
 * changed), and the parts take their new parameters.
 */
#include <errno.h>
#include <stdio.h>
#include <systemd/sd-journal.h>

#include "wbg-config.h"
#include "wbg-flush.h"
#include "wbg-handover.h"
#include "wbg-base.h"
#include "manager.h"
#include "timer-util.h"

/* The first restart key a reload would change, for its refusal. */
static char restart_key_changed[192];

static void note_restart_key(const struct wbg_conf_key *k, const char *running, const char *wanted)
{
	log_error("[%s] %s changed from '%s' to '%s': only a restart applies it", k->section, k->key, running, wanted);
	if (!restart_key_changed[0])
		snprintf(restart_key_changed, sizeof(restart_key_changed), "[%s] %s", k->section, k->key);
}

static int reload_refused(struct manager *m, int r)
{
	m->reload_ok = false;
	m->reload_failures++;
	if (log_to_journal())
		(void)sd_journal_send("MESSAGE=Reload of %s refused; the running configuration stays", m->config_path,
				      "MESSAGE_ID=" WBG_MESSAGE_RELOAD_REFUSED, "PRIORITY=%d", LOG_ERR,
				      "SYSLOG_IDENTIFIER=wbguardd", NULL);
	return r;
}

int manager_reload(struct manager *m)
{
	struct wbg_lifecycle_params p;
	struct wbg_web_config web = { 0 };
	struct wbg_config c;
	int r;

	config_init(&c);
	m->reload_error[0] = 0;
	r = config_load(&c, m->config_path);
	if (r < 0) {
		config_done(&c);
		log_error_errno(r, "Reload of %s failed; keeping the running configuration", m->config_path);
		return reload_refused(m, r);
	}
	/* The watched tree, the pool, the BPF maps, the endpoint... stay as
	 * started (docs/configuration.md's "restart" keys): a reload that
	 * changes one is refused, naming it, rather than reporting success
	 * and leaving it as it was. */
	restart_key_changed[0] = 0;
	r = config_keep_restart_keys(&c, &m->cfg, note_restart_key);
	if (r < 0) {
		config_done(&c);
		return log_oom();
	}
	if (restart_key_changed[0]) {
		config_done(&c);
		snprintf(m->reload_error, sizeof(m->reload_error),
			 "%s changed, which only a restart applies; reload refused, the running configuration stays",
			 restart_key_changed);
		log_error("Reload of %s refused: %s", m->config_path, m->reload_error);
		return reload_refused(m, -EBUSY);
	}
	/* the web config's file is read again, as the web config of the
	 * exporters is at each request: a rotated certificate or a new
	 * password needs no restart; a file that does not load refuses the
	 * whole reload, naming its field */
	if (c.metrics_web_config[0]) {
		char err[240];

		r = web_config_load(&web, c.metrics_web_config, err, sizeof(err));
		if (r < 0) {
			config_done(&c);
			web_config_done(&web);
			snprintf(m->reload_error, sizeof(m->reload_error),
				 "[metrics] web_config_file %s; reload refused, the running configuration stays", err);
			log_error("Reload of %s refused: %s", m->config_path, m->reload_error);
			return reload_refused(m, r);
		}
		(void)metrics_http_set_web(&m->http, &web);
		web_config_done(&web);
	}
	m->reload_ok = true;
	m->reload_success_realtime = timer_realtime_usec();
	config_done(&m->cfg);
	m->cfg = c;
	log_set_max_level(m->log_level_override >= 0 ? m->log_level_override : m->cfg.log_level);
	if (m->pool) {
		flush_pool_set_interval(m->pool, m->cfg.fs_interval_usec);
		flush_pool_set_exit_rate(m->pool, m->cfg.exit_bytes_per_sec);
	}
	p = lifecycle_host_params(&m->cfg, m->bpf);
	lifecycle_set_params(&m->lifecycle, &p);
	if (m->event) {
		struct wbg_expiry_params ep = manager_expiry_params(m);

		manager_refresh_verdict(m); /* [mitigation] mode */
		expiry_reload(&m->expiry, &ep); /* [policy] sections, [expiry] default */
	}
	log_info("Reloaded %s", m->config_path);
	return 0;
}

