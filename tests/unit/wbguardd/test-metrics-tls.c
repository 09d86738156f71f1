/* SPDX-License-Identifier: GPL-2.0-or-later */
/* [metrics] web_config_file on a real loop: the metrics server with TLS and
 * basic auth (a self-signed certificate from openssl, a bcrypt hash from
 * htpasswd), asked by curl: on the loopback (right credentials 200, wrong
 * 401, none 401, plain HTTP no answer, a new certificate at a reload), and
 * from another network namespace as a central Prometheus would (root and
 * ip(8): two namespaces of its own joined by a veth with link-local
 * addresses, removed by a guard process whatever ends the test). Bad web
 * configs are refused naming the file and the field. Each check that lacks
 * a tool is skipped, never passed. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <systemd/sd-event.h>

#include "wbg-base.h"
#include "heartbeat.h"
#include "metrics-http.h"
#include "web-config.h"
#include "tap.h"
#include "run-until.h"

/* inside the namespaces this test makes, nowhere else */
#define SRV_ADDR "169.254.35.1"
#define CLI_ADDR "169.254.35.2"

static char dir[64], ns_srv[32], ns_cli[32];

/* free() of this build's objects (meson links this test with
 * --wrap=free): what a watched block held when it was freed */
void __real_free(void *p);
void __wrap_free(void *p);
static const char *freed_watch;
static size_t freed_len, freed_nonzero = SIZE_MAX;
void __wrap_free(void *p)
{
	if (p && p == freed_watch) {
		freed_nonzero = 0;
		for (size_t i = 0; i < freed_len; i++)
			freed_nonzero += ((const char *)p)[i] != 0;
	}
	__real_free(p);
}

static void write_nothing(FILE *f, void *userdata)
{
	fputs("wbguard_x 1\n", f);
}

/* the daemon's heartbeat, as wbguardd starts it (the probes answer from it) */
static struct wbg_heartbeat beat;

static bool always_ready(void *userdata)
{
	return true;
}

__attribute__((format(printf, 1, 2))) static int sh(const char *fmt, ...)
{
	_cleanup_free_ char *cmd = NULL;
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&cmd, fmt, ap);
	va_end(ap);
	if (r < 0)
		return -1;
	r = system(cmd);
	return WIFEXITED(r) ? WEXITSTATUS(r) : -1;
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static bool have(const char *tool)
{
	return sh("command -v %s >/dev/null 2>&1", tool) == 0;
}

/* The HTTP status curl got (0: none, as for plain HTTP to TLS), within 5 s,
 * from netns (NULL: this one); ca, cred may be NULL. */
/* curl's source address (--interface), when set */
static const char *curl_source;

/* curl started: its pid, its output (the status) on *ret_fd */
static pid_t curl_start(const char *netns, const char *url, const char *ca, const char *cred, int *ret_fd)
{
	const char *argv[24];
	int p[2], n = 0;
	pid_t c;

	if (netns) {
		argv[n++] = "ip";
		argv[n++] = "netns";
		argv[n++] = "exec";
		argv[n++] = netns;
	}
	argv[n++] = "curl";
	argv[n++] = "-s";
	argv[n++] = "-o/dev/null";
	argv[n++] = "-w%{http_code}";
	argv[n++] = "--max-time";
	argv[n++] = "5";
	argv[n++] = "--noproxy";
	argv[n++] = "*";
	if (ca) {
		argv[n++] = "--cacert";
		argv[n++] = ca;
	}
	if (cred) {
		argv[n++] = "-u";
		argv[n++] = cred;
	}
	if (curl_source) {
		argv[n++] = "--interface";
		argv[n++] = curl_source;
	}
	argv[n++] = url;
	argv[n] = NULL;
	if (pipe(p) < 0)
		return -1;
	c = fork();
	if (c == 0) {
		dup2(p[1], 1);
		execvp(argv[0], (char **)argv);
		_exit(127);
	}
	close(p[1]);
	*ret_fd = p[0];
	return c;
}

/* Its HTTP status, the loop run until it ends. */
static int curl_wait(sd_event *e, pid_t c, int fd)
{
	char out[16] = { 0 };

	(void)run_until(e, c, 8000);
	(void)!read(fd, out, sizeof(out) - 1);
	close(fd);
	return atoi(out);
}

static int curl(sd_event *e, const char *netns, const char *url, const char *ca, const char *cred)
{
	int fd = -1;
	pid_t c = curl_start(netns, url, ca, cred, &fd);

	return c > 0 ? curl_wait(e, c, fd) : -1;
}

/* A self-signed certificate (its own CA) for the loopback and SRV_ADDR */
static int make_cert(const char *name)
{
	return sh("cd %s && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 "
		  "-subj /CN=wbguard-test -addext subjectAltName=IP:127.0.0.1,IP:" SRV_ADDR " -keyout %s.key "
		  "-out %s.crt >/dev/null 2>&1", dir, name, name);
}

/* dir/name holding text */
static void put(const char *name, const char *text)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	(void)write_file_atomic(path, text, false, 0600);
}

static int load(struct wbg_web_config *w, const char *name, char *err, size_t len)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	err[0] = 0;
	return web_config_load(w, path, err, len);
}

/* A bad file is refused, its error naming the file and the field. */
static void refused(const char *name, const char *text, const char *field)
{
	struct wbg_web_config w;
	char err[256];
	int r;

	put(name, text);
	r = load(&w, name, err, sizeof(err));
	web_config_done(&w);
	CHECK(r < 0 && strstr(err, name) && strstr(err, field), "%s refused naming %s: %s", name, field, err);
}

static void bad_configs(const char *hash)
{
	_cleanup_free_ char *users = NULL;

	if (asprintf(&users, "basic_auth_users:\n  prom: %s\n", hash) < 0)
		return;
	refused("nokey.yml", "tls_server_config:\n  cert_file: a.crt\n", "tls_server_config.key_file");
	refused("notls.yml", users, "tls_server_config");
	refused("mismatch.yml", "tls_server_config:\n  cert_file: a.crt\n  key_file: b.key\n",
		"tls_server_config.key_file");
	refused("nofile.yml", "tls_server_config:\n  cert_file: none.crt\n  key_file: a.key\n",
		"tls_server_config.cert_file");
	refused("hash.yml", "tls_server_config:\n  cert_file: a.crt\n  key_file: a.key\nbasic_auth_users:\n"
			    "  prom: secret\n", "basic_auth_users.prom");
	refused("clientca.yml", "tls_server_config:\n  cert_file: a.crt\n  key_file: a.key\n  client_ca_file: a.crt\n",
		"tls_server_config.client_ca_file");
	refused("syntax.yml", "tls_server_config:\n  cert_file: [a.crt\n", "(YAML)");
	{
		/* the same hash at cost 14: every stranger's guess 2 s of CPU */
		_cleanup_free_ char *costly = NULL, *h = strdup(hash);

		if (h && strlen(h) > 7) {
			memcpy(h + 4, "14", 2);
			if (asprintf(&costly, "tls_server_config:\n  cert_file: a.crt\n  key_file: a.key\n"
					      "basic_auth_users:\n  prom: %s\n", h) >= 0)
				refused("cost.yml", costly, "basic_auth_users.prom");
		}
	}
}

/* The guard: removes the namespaces and the folder once this process is
 * gone, however it ended (a failed check, a timeout's SIGTERM, SIGKILL);
 * fd is its pipe. */
static pid_t guard(int *ret_fd)
{
	int p[2];
	pid_t c;
	char b;

	if (pipe(p) < 0)
		return -1;
	c = fork();
	if (c == 0) {
		close(p[1]);
		setsid(); /* a signal to the test's group leaves it */
		while (read(p[0], &b, 1) > 0)
			;
		(void)sh("ip netns del %s 2>/dev/null; ip netns del %s 2>/dev/null; rm -rf %s", ns_srv, ns_cli, dir);
		_exit(0);
	}
	close(p[0]);
	*ret_fd = p[1];
	return c;
}

/* Two namespaces joined by a veth, the server's end SRV_ADDR. */
static int make_netns(void)
{
	int pid = getpid() % 100000;

	return sh("set -e; ip netns add %1$s; ip netns add %2$s; "
		  "ip link add wbs%3$d netns %1$s type veth peer name wbc%3$d netns %2$s; "
		  "ip -n %1$s addr add " SRV_ADDR "/30 dev wbs%3$d; ip -n %2$s addr add " CLI_ADDR "/30 dev wbc%3$d; "
		  "ip -n %1$s link set wbs%3$d up; ip -n %2$s link set wbc%3$d up; "
		  "ip -n %1$s link set lo up; ip -n %2$s link set lo up",
		  ns_srv, ns_cli, pid);
}

/* A server listening inside ns_srv: its socket made there, the loop here. */
static int start_in_netns(struct wbg_metrics_http *m, sd_event *e, const char *listen, struct wbg_web_config *w)
{
	char path[96];
	_cleanup_close_ int self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC), ns = -1;
	int r;

	snprintf(path, sizeof(path), "/run/netns/%s", ns_srv);
	ns = open(path, O_RDONLY | O_CLOEXEC);
	if (self < 0 || ns < 0 || setns(ns, CLONE_NEWNET) < 0)
		return -errno;
	r = metrics_http_start(m, e, listen, "", w, write_nothing, &beat, NULL);
	if (setns(self, CLONE_NEWNET) < 0)
		return -errno;
	return r;
}

static void remote(sd_event *e, const char *hash, int port)
{
	struct wbg_metrics_http m;
	struct wbg_web_config w;
	char err[256], url[96], ca[96];
	int r;

	if (geteuid() != 0 || !have("ip")) {
		SKIP("from another network namespace: needs root and ip(8)");
		return;
	}
	r = make_netns();
	CHECK(r == 0, "namespaces %s and %s, a veth " SRV_ADDR " - " CLI_ADDR " between them", ns_srv, ns_cli);
	snprintf(url, sizeof(url), "https://" SRV_ADDR ":%d/metrics", port);
	snprintf(ca, sizeof(ca), "%s/a.crt", dir);
	r = r == 0 ? load(&w, "web.yml", err, sizeof(err)) : -1;
	if (r == 0) {
		char listen[64];

		snprintf(listen, sizeof(listen), SRV_ADDR ":%d", port);
		r = start_in_netns(&m, e, listen, &w);
		CHECK(r == 0, "serving TLS in %s on %s", ns_srv, listen);
		web_config_done(&w);
		r = curl(e, ns_cli, url, ca, "prom:secret");
		CHECK(r == 200, "from %s with the CA and credentials: %d", ns_cli, r);
		r = curl(e, ns_cli, url, ca, NULL);
		CHECK(r == 401, "from %s without credentials: %d", ns_cli, r);
		r = curl(e, ns_cli, url, ca, "prom:wrong");
		CHECK(r == 401, "from %s with a wrong password: %d", ns_cli, r);
		metrics_http_stop(&m);
	}
}

static char *bcrypt_hash_of(const char *user, const char *password, int cost)
{
	char line[256] = { 0 }, cmd[160];
	FILE *p;
	char *colon;

	snprintf(cmd, sizeof(cmd), "htpasswd -nbB -C %d %s %s", cost, user, password);
	p = popen(cmd, "re");
	if (!p)
		return NULL;
	if (!fgets(line, sizeof(line), p))
		line[0] = 0;
	pclose(p);
	line[strcspn(line, "\n")] = 0;
	colon = strchr(line, ':');
	return colon && colon[1] ? strdup(colon + 1) : NULL;
}

static char *bcrypt_hash(void)
{
	return bcrypt_hash_of("prom", "secret", 5);
}

/* The loop run until what waits on a bcrypt is cond, at most max_ms */
static bool run_while(sd_event *e, const struct wbg_metrics_http *m, bool waiting, int max_ms)
{
	for (int t = 0; t < max_ms && (m->waiting != NULL) != waiting; t += 5)
		(void)sd_event_run(e, 5 * 1000);
	return (m->waiting != NULL) == waiting;
}

/* bcrypt off the loop, and who may have one: a server of users prom (cost
 * 5), slow (cost 12) and late (cost 5, never used before). */
static void off_the_loop(sd_event *e, int port)
{
	_cleanup_free_ char *slow = bcrypt_hash_of("slow", "right", 12), *late = bcrypt_hash_of("late", "right", 5),
			    *prom = bcrypt_hash(), *yml = NULL;
	struct wbg_metrics_http m;
	struct wbg_web_config w;
	char listen[64], url[96], ca[96], err[256];
	pid_t c[4];
	int fd[4], r;

	if (!slow || !late || !prom ||
	    asprintf(&yml, "tls_server_config:\n  cert_file: a.crt\n  key_file: a.key\nbasic_auth_users:\n"
			   "  prom: %s\n  slow: %s\n  late: %s\n", prom, slow, late) < 0)
		return;
	put("web-auth.yml", yml);
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
	snprintf(url, sizeof(url), "https://127.0.0.1:%d/metrics", port);
	snprintf(ca, sizeof(ca), "%s/a.crt", dir);
	r = load(&w, "web-auth.yml", err, sizeof(err));
	CHECK(r == 0 && metrics_http_start(&m, e, listen, "", &w, write_nothing, &beat, NULL) == 0,
	      "users at cost 5 and 12, serving on %s (%s)", listen, err);
	web_config_done(&w);
	/* four wrong guesses for slow (0.3 s or more of bcrypt each, one
	 * after the other: a peer's burst), from 127.0.0.3 (an address has 4
	 * connections) */
	curl_source = "127.0.0.3";
	for (int i = 0; i < 4; i++)
		c[i] = curl_start(NULL, url, ca, "slow:wrong", &fd[i]);
	curl_source = NULL;
	CHECK(run_while(e, &m, true, 5000), "four guesses at cost 12: their bcrypts run, the requests wait");
	snprintf(url, sizeof(url), "https://127.0.0.1:%d/readyz", port);
	r = curl(e, NULL, url, ca, NULL);
	CHECK(r == 200 && m.waiting != NULL, "meanwhile the loop answers /readyz (%d), the guesses still waiting", r);
	r = 0;
	for (int i = 0; i < 4; i++)
		r += curl_wait(e, c[i], fd[i]) == 401;
	CHECK(r == 4 && m.waiting == NULL, "then each guess is answered 401 (%d)", r);
	/* a stranger guessing from 127.0.0.2 as fast as it can: its address
	 * and the strangers' pool run dry, not the pool of peers that have
	 * succeeded, nor another address's share */
	snprintf(url, sizeof(url), "https://127.0.0.1:%d/metrics", port);
	r = curl(e, NULL, url, ca, "prom:secret");
	CHECK(r == 200, "the scraper's first success from 127.0.0.1: %d", r);
	curl_source = "127.0.0.2";
	r = 0;
	for (int i = 0; i < 10; i++)
		r += curl(e, NULL, url, ca, "prom:guess") == 429;
	curl_source = NULL;
	CHECK(r >= 4, "a stranger's 10 guesses from 127.0.0.2: %d answered 429", r);
	r = curl(e, NULL, url, ca, "late:right");
	CHECK(r == 200, "meanwhile credentials never checked before, from the scraper's address: 200 at once (%d)", r);
	metrics_http_stop(&m);
}

int main(void)
{
	struct wbg_metrics_http m;
	struct wbg_web_config w;
	_cleanup_free_ char *hash = NULL, *web = NULL;
	sd_event *e = NULL;
	char err[256], listen[64], url[96], ca[96], uid[16];
	int port = 20000 + (getpid() + 7) % 20000, gfd = -1, r;
	pid_t g;

	log_set_max_level(-1);
	{
		/* the private key is wiped before its memory goes back */
		struct wbg_web_config k = { .key_pem = strdup("-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIE\n") };

		freed_watch = k.key_pem;
		freed_len = k.key_pem ? strlen(k.key_pem) : 0;
		web_config_done(&k);
		CHECK(freed_len > 0 && freed_nonzero == 0, "the TLS key zeroed before it is freed (%zu of %zu bytes not)",
		      freed_nonzero, freed_len);
		freed_watch = NULL;
	}
	/* named before the guard starts: it removes these */
	snprintf(ns_srv, sizeof(ns_srv), "wbgtls-s%d", getpid() % 100000);
	snprintf(ns_cli, sizeof(ns_cli), "wbgtls-c%d", getpid() % 100000);
	snprintf(dir, sizeof(dir), "/tmp/wbg-tls-XXXXXX");
	hash = have("openssl") && have("htpasswd") && have("curl") ? bcrypt_hash() : NULL;
	if (!hash || !mkdtemp(dir) || (g = guard(&gfd)) < 0 || make_cert("a") != 0 || make_cert("b") != 0) {
		SKIP("needs openssl, htpasswd (apache2-utils) and curl");
		return tap_done();
	}
	if (asprintf(&web, "tls_server_config:\n  cert_file: a.crt\n  key_file: a.key\nbasic_auth_users:\n  prom: %s\n",
		     hash) < 0)
		return 1;
	put("web.yml", web);
	r = load(&w, "web.yml", err, sizeof(err));
	CHECK(r == 0 && w.n_users == 1, "web.yml loads, relative paths from its folder (%s)", err);
	bad_configs(hash);

	snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
	snprintf(url, sizeof(url), "https://127.0.0.1:%d/metrics", port);
	snprintf(ca, sizeof(ca), "%s/a.crt", dir);
	CHECK(sd_event_new(&e) >= 0 && heartbeat_start(&beat, e, always_ready, NULL) == 0 &&
		      metrics_http_start(&m, e, listen, "", &w, write_nothing, &beat, NULL) == 0,
	      "serving TLS on %s", listen);
	web_config_done(&w);
	r = curl(e, NULL, url, ca, "prom:secret");
	CHECK(r == 200, "right credentials: %d", r);
	r = curl(e, NULL, url, ca, "prom:wrong");
	CHECK(r == 401, "wrong password: %d", r);
	r = curl(e, NULL, url, ca, "nobody:secret");
	CHECK(r == 401, "unknown user: %d", r);
	r = curl(e, NULL, url, ca, NULL);
	CHECK(r == 401, "no credentials, allow_users empty: %d", r);
	snprintf(url, sizeof(url), "https://127.0.0.1:%d/readyz", port);
	r = curl(e, NULL, url, ca, NULL);
	CHECK(r == 200, "/readyz without credentials: %d", r);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", port);
	r = curl(e, NULL, url, NULL, "prom:secret");
	CHECK(r == 0, "plain HTTP gets no answer: %d", r);
	CHECK(atomic_load(&m.access.unauthorized) == 3, "401s counted (%" PRIu64 ")", atomic_load(&m.access.unauthorized));
	/* a stranger guessing: a few bcrypts a second, then 429; the
	 * scraper's cached success still gets in */
	snprintf(url, sizeof(url), "https://127.0.0.1:%d/metrics", port);
	r = 0;
	for (int i = 0; i < 10; i++)
		r += curl(e, NULL, url, ca, "prom:guess") == 429;
	CHECK(r >= 1, "10 guesses in a row: %d answered 429", r);
	r = curl(e, NULL, url, ca, "prom:secret");
	CHECK(r == 200, "meanwhile the right credentials: %d", r);
	/* a reload (the same file): the scraper's success is kept, so a
	 * stranger guessing meanwhile does not keep it out */
	r = load(&w, "web.yml", err, sizeof(err));
	CHECK(r == 0 && metrics_http_set_web(&m, &w) == 0, "a reload of web.yml");
	for (int i = 0; i < 6; i++)
		(void)curl(e, NULL, url, ca, "prom:guess");
	r = curl(e, NULL, url, ca, "prom:secret");
	CHECK(r == 200, "after the reload, while a stranger guesses: the right credentials at the first try: %d", r);
	/* a local user of allow_users needs no credentials; one who sends
	 * them is judged by them */
	snprintf(uid, sizeof(uid), "%u", (unsigned)getuid());
	metrics_http_allow(&m, uid);
	r = curl(e, NULL, url, ca, NULL);
	CHECK(r == 200, "no credentials from uid %s, in allow_users: %d", uid, r);
	sleep(3); /* the bucket refilled */
	r = curl(e, NULL, url, ca, "prom:wrong");
	CHECK(r == 401, "a wrong password from uid %s, in allow_users: %d", uid, r);

	off_the_loop(e, port + 2);

	/* a reload whose new certificate libmicrohttpd refuses (here its
	 * priority string) after the old server was quiesced: the old one
	 * serves again on the same socket, and no descriptor is left over */
	{
		int before = count_fds();

		put("web-b.yml", "tls_server_config:\n  cert_file: b.crt\n  key_file: b.key\nbasic_auth_users:\n");
		r = load(&w, "web-b.yml", err, sizeof(err));
		w.priorities = "NO-SUCH-PRIORITY";
		CHECK(r == 0 && metrics_http_set_web(&m, &w) < 0, "a new certificate that does not serve: the reload fails");
		r = curl(e, NULL, url, ca, NULL);
		CHECK(r == 200, "... and a.crt still serves on the same port: %d", r);
		/* the server's thread closes the finished connection on its own time */
		for (int i = 0; i < 100 && count_fds() != before; i++)
			usleep(10 * 1000);
		CHECK(count_fds() == before, "... with no descriptor left over (%d, %d before)", count_fds(), before);
	}

	/* a reload with a new certificate: the same socket, the new one served */
	put("web-b.yml", "tls_server_config:\n  cert_file: b.crt\n  key_file: b.key\nbasic_auth_users:\n");
	r = load(&w, "web-b.yml", err, sizeof(err));
	CHECK(r == 0 && metrics_http_set_web(&m, &w) == 0, "a reload takes b.crt (%s)", err);
	snprintf(url, sizeof(url), "https://127.0.0.1:%d/metrics", port);
	snprintf(ca, sizeof(ca), "%s/b.crt", dir);
	r = curl(e, NULL, url, ca, NULL);
	CHECK(r == 200, "b.crt served; no basic_auth_users: allow_users alone lets uid %s in: %d", uid, r);
	snprintf(ca, sizeof(ca), "%s/a.crt", dir);
	r = curl(e, NULL, url, ca, NULL);
	CHECK(r == 0, "a.crt no longer: %d", r);
	metrics_http_stop(&m);

	remote(e, hash, port + 1);
	sd_event_unref(e);
	close(gfd); /* the guard cleans up now */
	waitpid(g, NULL, 0);
	r = sh("ip netns list 2>/dev/null | grep -q 'wbgtls-[sc]%d' || test -e %s", getpid() % 100000, dir);
	CHECK(r == 1, "the namespaces and %s are gone", dir);
	return tap_done();
}
