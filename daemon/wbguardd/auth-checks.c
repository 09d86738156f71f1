/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdatomic.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/eventfd.h>

#include "wbg-base.h"
#include "auth-checks.h"
#include "web-config.h"

struct job {
	struct job *next;
	void *req;
	uint64_t peer;
	bool known, done;
	int result;
	char *user, *password, *hash;
	uint8_t digest[32];
};

struct auth_checks {
	sd_event_source *io;
	int efd;
	pthread_t thread;
	bool started;
	auth_done_fn done;
	void *userdata;
	/* the worker's queue and its results: under lock */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct job *queue, *results;
	unsigned n_queued;
	bool stop;
	/* the loop's alone */
	struct wbg_rate_bucket peers[AUTH_PEERS];
	struct wbg_rate strangers, known_pool;
	uint64_t known[16]; /* peers bcrypt has accepted, a ring */
	unsigned n_known;
	/* written by the owner's loop, read by the daemon's (a scrape) */
	_Atomic uint64_t run, refused_rate, refused_busy;
};

static void job_free(struct job *j)
{
	if (!j)
		return;
	if (j->password) {
		explicit_bzero(j->password, strlen(j->password));
		free(j->password);
	}
	free(j->user);
	free(j->hash);
	free(j);
}

/* An address as a key (a port does not make another peer). */
static uint64_t peer_key(const struct sockaddr *sa)
{
	const unsigned char *p = NULL;
	uint64_t h = 0xcbf29ce484222325ULL;
	size_t n = 0;

	if (sa && sa->sa_family == AF_INET)
		p = (const unsigned char *)&((const struct sockaddr_in *)sa)->sin_addr, n = 4;
	else if (sa && sa->sa_family == AF_INET6)
		p = (const unsigned char *)&((const struct sockaddr_in6 *)sa)->sin6_addr, n = 16;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return h | 1;
}

static bool is_known(const struct auth_checks *a, uint64_t key)
{
	for (unsigned i = 0; i < ELEMENTSOF(a->known) && i < a->n_known; i++)
		if (a->known[i] == key)
			return true;
	return false;
}

bool auth_checks_admit(struct auth_checks *a, const struct sockaddr *peer, uint64_t now)
{
	uint64_t key = peer_key(peer);
	struct wbg_rate *pool = is_known(a, key) ? &a->known_pool : &a->strangers;

	/* the address's own share first: one address's flood spends its own
	 * bucket, not the pool's */
	if (!rate_take_keyed(a->peers, ELEMENTSOF(a->peers), key, 0, AUTH_PEER_PER_SEC, AUTH_PEER_BURST, now) ||
	    !rate_take(pool, AUTH_POOL_PER_SEC, AUTH_POOL_BURST, now)) {
		atomic_fetch_add(&a->refused_rate, 1);
		return false;
	}
	return true;
}

static void *worker(void *userdata)
{
	struct auth_checks *a = userdata;
	uint64_t one = 1;

	pthread_mutex_lock(&a->lock);
	for (;;) {
		struct job *j;

		while (!a->queue && !a->stop)
			pthread_cond_wait(&a->cond, &a->lock);
		if (a->stop)
			break;
		j = a->queue;
		a->queue = j->next;
		pthread_mutex_unlock(&a->lock);
		j->result = web_bcrypt_matches(j->password, j->hash) && j->known;
		if (j->result)
			web_config_digest(j->user, j->hash, j->password, j->digest);
		explicit_bzero(j->password, strlen(j->password));
		pthread_mutex_lock(&a->lock);
		j->done = true;
		j->next = a->results;
		a->results = j;
		(void)!write(a->efd, &one, sizeof(one));
	}
	pthread_mutex_unlock(&a->lock);
	return NULL;
}

/* Results to the loop, in the order they came. */
static int on_results(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct auth_checks *a = userdata;
	struct job *done, *rev = NULL;
	uint64_t n;

	(void)!read(a->efd, &n, sizeof(n));
	pthread_mutex_lock(&a->lock);
	done = a->results;
	a->results = NULL;
	pthread_mutex_unlock(&a->lock);
	while (done) {
		struct job *next = done->next;

		done->next = rev;
		rev = done;
		done = next;
	}
	while (rev) {
		struct job *next = rev->next;

		a->n_queued--;
		atomic_fetch_add(&a->run, 1);
		if (rev->result > 0 && !is_known(a, rev->peer))
			a->known[a->n_known++ % ELEMENTSOF(a->known)] = rev->peer;
		a->done(rev->req, rev->result, rev->digest, a->userdata);
		job_free(rev);
		rev = next;
	}
	return 0;
}

int auth_checks_submit(struct auth_checks *a, void *req, const struct sockaddr *peer, const char *user,
		       const char *password, const char *hash, bool known)
{
	struct job *j, **tail;

	if (a->n_queued >= AUTH_QUEUE_MAX) {
		atomic_fetch_add(&a->refused_busy, 1);
		return -EBUSY;
	}
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	*j = (struct job){ .req = req, .peer = peer_key(peer), .known = known, .user = strdup(user),
			   .password = strdup(password), .hash = strdup(hash) };
	if (!j->user || !j->password || !j->hash) {
		job_free(j);
		return -ENOMEM;
	}
	pthread_mutex_lock(&a->lock);
	for (tail = &a->queue; *tail; tail = &(*tail)->next)
		;
	*tail = j;
	pthread_cond_signal(&a->cond);
	pthread_mutex_unlock(&a->lock);
	a->n_queued++;
	return 0;
}

int auth_checks_new(sd_event *e, auth_done_fn done, void *userdata, struct auth_checks **ret)
{
	struct auth_checks *a = calloc(1, sizeof(*a));
	int r;

	if (!a)
		return -ENOMEM;
	*a = (struct auth_checks){ .efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK), .done = done, .userdata = userdata };
	pthread_mutex_init(&a->lock, NULL);
	pthread_cond_init(&a->cond, NULL);
	if (a->efd < 0) {
		r = -errno;
		goto fail;
	}
	r = sd_event_add_io(e, &a->io, a->efd, EPOLLIN, on_results, a);
	if (r < 0)
		goto fail;
	r = -pthread_create(&a->thread, NULL, worker, a);
	if (r < 0)
		goto fail;
	a->started = true;
	*ret = a;
	return 0;
fail:
	auth_checks_free(a);
	return r;
}

struct auth_checks *auth_checks_free(struct auth_checks *a)
{
	struct job *left;

	if (!a)
		return NULL;
	if (a->started) {
		pthread_mutex_lock(&a->lock);
		a->stop = true;
		pthread_cond_signal(&a->cond);
		pthread_mutex_unlock(&a->lock);
		pthread_join(a->thread, NULL);
	}
	/* what ran is told as it ended; what did not, as cancelled */
	(void)on_results(NULL, a->efd, 0, a);
	for (left = a->queue; left;) {
		struct job *next = left->next;

		a->done(left->req, -ECANCELED, left->digest, a->userdata);
		job_free(left);
		left = next;
	}
	a->io = sd_event_source_disable_unref(a->io);
	if (a->efd >= 0)
		close(a->efd);
	pthread_mutex_destroy(&a->lock);
	pthread_cond_destroy(&a->cond);
	free(a);
	return NULL;
}

void auth_checks_stats(const struct auth_checks *a, struct auth_checks_stats *ret)
{
	*ret = (struct auth_checks_stats){ .run = atomic_load(&a->run), .refused_rate = atomic_load(&a->refused_rate),
					   .refused_busy = atomic_load(&a->refused_busy) };
}
