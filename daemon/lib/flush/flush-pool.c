/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/sysmacros.h>

#include "flush-pool.h"
#include "wbg-base.h"

struct slot {
	dev_t dev;
	enum flush_kind kind;
	struct flush_job *running, *waiting;
	bool waiting_queued; /* the waiting job is on the run queue */
	/* waiting jobs after a full one (FLUSH_JOB_WAITERS_MAX waiters: a
	 * restart's thousands of pending records on one filesystem), each the
	 * next waiting in turn; at most FLUSH_SLOT_OVERFLOW_MAX */
	struct flush_job *overflow_head, *overflow_tail;
	unsigned n_overflow;
	uint64_t last_start; /* the budget: the next may start interval after */
	uint64_t exit_ready; /* the exit budget: the next EXIT job may start then */
	bool handles_refused; /* a job's handles were refused here: its own-file jobs are budgeted */
	struct flush_target_stats st;
};

struct flush_pool {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t *threads;
	unsigned n_threads, busy;
	unsigned workers;   /* threads asked for */
	unsigned alive;     /* threads not exited (a stuck one counts until it returns) */
	unsigned stuck;     /* of those, inside a job past its timeout */
	uint64_t stuck_total, refused_busy, inodes_capped;
	uint64_t overflows; /* jobs queued behind a full waiting one */
	uint64_t interval, budget_waits, budget_wait_usec, jobs_started, handle_fallbacks;
	uint64_t inodes_skipped;
	uint64_t exit_rate; /* bytes a second per device for EXIT jobs; 0: no cap */
	bool handles_refused; /* the start's probe said no: every job's fallback is a syncfs */
	void (*run)(struct flush_job *j, void *userdata);
	void *run_userdata;
	struct flush_job *run_head, *run_tail;
	struct flush_job *done_head, *done_tail;
	struct slot *slots;
	size_t n_slots;
	int efd;
	bool stop;
	char *sysfs_dev_block;
};

static uint64_t now_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Sectors written to a block device so far, from sysfs; 0 when the target
 * has no block device of its own (btrfs subvolumes, overlay, ...). */
static uint64_t device_bytes(const struct flush_pool *p, dev_t dev)
{
	_cleanup_free_ char *text = NULL;
	char path[128];
	unsigned long long f[8];

	snprintf(path, sizeof(path), "%s/%u:%u/stat", p->sysfs_dev_block, major(dev), minor(dev));
	if (read_small_file_at(AT_FDCWD, path, 4096, &text) < 0)
		return 0;
	if (sscanf(text, "%llu %llu %llu %llu %llu %llu %llu", &f[0], &f[1], &f[2], &f[3], &f[4], &f[5], &f[6]) != 7)
		return 0;
	return (uint64_t)f[6] * 512;
}

static int job_syncfs(struct flush_job *j, int fd, unsigned passes)
{
	j->stats.syncfs_calls += passes;
	return flush_syncfs(fd, passes);
}

static void run_job(struct flush_pool *p, struct flush_job *j)
{
	uint64_t before = device_bytes(p, j->dev);

	j->started_usec = now_usec();
	if (j->kind == FLUSH_BDEV)
		j->result = flush_bdev(j->mount, j->dev); /* the node, for a block device */
	else {
		_cleanup_close_ int fd = open(j->mount, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		if (fd < 0)
			j->result = -errno;
		else if (j->purpose == FLUSH_FOR_EXPIRY) {
			/* Start writeback of the pod's inodes and return, as the
			 * kernel's expiry does; syncfs only if handles are refused. */
			j->result = j->use_inodes ? flush_inodes(fd, j->fstype, j->inodes, j->n_inodes, FLUSH_INODE_START,
								 &j->stats)
						  : -EOPNOTSUPP;
			if (j->result < 0) {
				j->handles_refused = j->use_inodes;
				j->fell_back = true;
				j->result = job_syncfs(j, fd, 1);
			}
		} else if (j->purpose == FLUSH_FOR_EVIDENCE || j->purpose == FLUSH_FOR_EXIT) {
			/* The removed cgroup's own inodes, nobody else's, no
			 * journal commit. Evidence: their writeback started, as
			 * the kernel's own foreign flush would have queued it
			 * (the writer waits for the pages, not for us). Exit:
			 * written and waited for as the cgroup empties. Either
			 * way the inodes stay on its wb's dirty list until a
			 * writeback pass visits them (tests/README.md, the exit
			 * recipe); the cleanup follows once the wb drains.
			 * Without a set, or with handles refused: syncfs. */
			j->result = j->use_inodes ? flush_inodes(fd, j->fstype, j->inodes, j->n_inodes,
								 j->purpose == FLUSH_FOR_EXIT ? FLUSH_INODE_WRITE_WAIT
											    : FLUSH_INODE_START,
								 &j->stats)
						  : -EOPNOTSUPP;
			if (j->result < 0) {
				j->handles_refused = j->use_inodes;
				j->fell_back = true;
				j->result = job_syncfs(j, fd, j->passes);
			}
		} else if (j->use_inodes) {
			j->result = flush_inodes(fd, j->fstype, j->inodes, j->n_inodes, FLUSH_INODE_FSYNC, &j->stats);
			if (j->result < 0) {
				/* handles refused: the whole filesystem instead */
				j->handles_refused = true;
				j->fell_back = true;
				j->result = job_syncfs(j, fd, j->passes);
			} else
				/* fsync writes the pages but leaves the inodes
				 * I_DIRTY_PAGES/I_DIRTY_SYNC on the dying wb's b_dirty
				 * until the flusher visits them (seen on ext4 and xfs),
				 * and the kernel's offline cleanup skips a wb with
				 * dirty IO: one syncfs pass visits them. */
				j->result = job_syncfs(j, fd, 1);
		} else
			j->result = job_syncfs(j, fd, j->passes);
	}
	j->finished_usec = now_usec();
	j->device_bytes = device_bytes(p, j->dev) - before;
}

static struct slot *slot_for(struct flush_pool *p, dev_t dev, enum flush_kind kind, bool create)
{
	for (size_t i = 0; i < p->n_slots; i++)
		if (p->slots[i].dev == dev && p->slots[i].kind == kind)
			return &p->slots[i];
	if (!create)
		return NULL;
	{
		struct slot *s = realloc(p->slots, (p->n_slots + 1) * sizeof(*s));

		if (!s)
			return NULL;
		p->slots = s;
		s[p->n_slots] = (struct slot){ .dev = dev, .kind = kind };
		return &s[p->n_slots++];
	}
}

static void enqueue_run(struct flush_pool *p, struct flush_job *j)
{
	LIST_APPEND(&p->run_head, &p->run_tail, j, next);
	pthread_cond_signal(&p->cond);
}

/* With p->lock held: takes the first job on the run queue whose target's
 * interval (the budget) is over. Else NULL, and *ret_due is when the first
 * held one may start (0: none is queued). */
static struct flush_job *take_ready(struct flush_pool *p, uint64_t now, uint64_t *ret_due)
{
	uint64_t due = 0;

	for (struct flush_job **pp = &p->run_head, *prev = NULL; *pp; prev = *pp, pp = &(*pp)->next) {
		struct flush_job *j = *pp;
		struct slot *s = slot_for(p, j->dev, j->kind, false);
		/* the budget is for whole-filesystem flushes: writing one
		 * removed cgroup's own files (evidence, expiry) costs no
		 * neighbour anything and is not held; but where handles are
		 * refused such a job becomes a syncfs, and is held like one */
		bool own_files = j->use_inodes && j->purpose != FLUSH_FOR_HANDOVER && !p->handles_refused &&
				 !(s && s->handles_refused);
		uint64_t ready = s && s->last_start && p->interval && !own_files ? s->last_start + p->interval : 0;

		if (own_files && j->purpose == FLUSH_FOR_EXIT && s)
			ready = s->exit_ready; /* bytes, not calls */

		if (ready > now) {
			if (!j->held_usec)
				j->held_usec = now;
			if (!due || ready < due)
				due = ready;
			continue;
		}
		*pp = j->next;
		if (p->run_tail == j)
			p->run_tail = prev;
		j->next = NULL;
		return j;
	}
	*ret_due = due;
	return NULL;
}

static void *worker(void *userdata)
{
	struct flush_pool *p = userdata;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		struct flush_job *j;
		struct slot *s;

		for (j = NULL; !p->stop && !j;) {
			uint64_t due = 0;

			j = take_ready(p, now_usec(), &due);
			if (j)
				break;
			if (due) {
				struct timespec ts = { .tv_sec = due / 1000000, .tv_nsec = due % 1000000 * 1000 };

				pthread_cond_timedwait(&p->cond, &p->lock, &ts);
			} else
				pthread_cond_wait(&p->cond, &p->lock);
		}
		if (p->stop)
			break;
		s = slot_for(p, j->dev, j->kind, false);
		if (s) {
			/* the next full one's turn (queued once this one ends) */
			s->waiting = s->overflow_head;
			if (s->overflow_head) {
				s->overflow_head = s->overflow_head->next;
				if (!s->overflow_head)
					s->overflow_tail = NULL;
				s->waiting->next = NULL;
				s->n_overflow--;
			}
			s->waiting_queued = false;
			s->running = j;
			s->last_start = now_usec();
			s->st.jobs++;
		}
		if (j->held_usec) {
			p->budget_wait_usec += now_usec() - j->held_usec;
			p->budget_waits++;
			if (s)
				s->st.budget_waits++;
		}
		p->jobs_started++;
		p->busy++;
		pthread_mutex_unlock(&p->lock);

		if (p->run)
			p->run(j, p->run_userdata);
		else
			run_job(p, j);

		pthread_mutex_lock(&p->lock);
		p->busy--;
		s = slot_for(p, j->dev, j->kind, false);
		p->inodes_skipped += j->stats.inodes_skipped;
		if (j->handles_refused) {
			p->handle_fallbacks++;
			if (s)
				s->handles_refused = true; /* its next own-file jobs wait for the budget */
		}
		if (s) {
			s->running = NULL;
			s->st.device_bytes += j->device_bytes;
			if (j->purpose == FLUSH_FOR_EXIT) {
				s->st.exit_jobs++;
				s->st.exit_bytes += j->device_bytes;
				s->exit_ready = p->exit_rate ? now_usec() + j->device_bytes * 1000000 / p->exit_rate : 0;
			}
			s->st.syncfs_calls += j->stats.syncfs_calls;
			if (s->waiting && !s->waiting_queued) {
				s->waiting_queued = true;
				enqueue_run(p, s->waiting);
			}
		}
		LIST_APPEND(&p->done_head, &p->done_tail, j, next);
		(void)eventfd_write(p->efd, 1);
		if (j->stuck) {
			/* back from a hang: one thread too many now */
			p->stuck--;
			if (p->alive - p->stuck > p->workers)
				break;
		}
	}
	p->alive--;
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* With p->lock held. */
static int add_thread(struct flush_pool *p)
{
	pthread_t *t = realloc(p->threads, (p->n_threads + 1) * sizeof(*t));
	int r;

	if (!t)
		return -ENOMEM;
	p->threads = t;
	r = -pthread_create(&p->threads[p->n_threads], NULL, worker, p);
	if (r < 0)
		return r;
	p->n_threads++;
	p->alive++;
	return 0;
}

unsigned flush_pool_reap_stuck(struct flush_pool *p, uint64_t timeout_usec)
{
	uint64_t now = now_usec();
	unsigned n = 0;

	pthread_mutex_lock(&p->lock);
	for (size_t i = 0; i < p->n_slots; i++) {
		struct flush_job *j = p->slots[i].running;

		if (!j || j->stuck || now - j->started_usec < timeout_usec)
			continue;
		j->stuck = true;
		p->stuck++;
		p->stuck_total++;
		n++;
		/* its thread is the kernel's until the I/O returns: another
		 * takes its place, so other filesystems keep flushing */
		if (p->stuck <= FLUSH_STUCK_MAX && add_thread(p) < 0)
			break;
	}
	pthread_mutex_unlock(&p->lock);
	return n;
}

void flush_pool_set_runner(struct flush_pool *p, void (*run)(struct flush_job *j, void *userdata), void *userdata)
{
	pthread_mutex_lock(&p->lock);
	p->run = run;
	p->run_userdata = userdata;
	pthread_mutex_unlock(&p->lock);
}

void flush_pool_set_interval(struct flush_pool *p, uint64_t usec)
{
	pthread_mutex_lock(&p->lock);
	p->interval = usec;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

void flush_pool_set_exit_rate(struct flush_pool *p, uint64_t bytes_per_sec)
{
	pthread_mutex_lock(&p->lock);
	p->exit_rate = bytes_per_sec;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

void flush_pool_set_handles(struct flush_pool *p, bool available)
{
	pthread_mutex_lock(&p->lock);
	p->handles_refused = !available;
	pthread_mutex_unlock(&p->lock);
}

int flush_pool_foreach_target(struct flush_pool *p,
			      int (*cb)(dev_t dev, enum flush_kind kind, const struct flush_target_stats *st, void *userdata),
			      void *userdata)
{
	int r = 0;

	pthread_mutex_lock(&p->lock);
	for (size_t i = 0; i < p->n_slots && r >= 0; i++)
		r = cb(p->slots[i].dev, p->slots[i].kind, &p->slots[i].st, userdata);
	pthread_mutex_unlock(&p->lock);
	return r;
}

void flush_pool_stats(struct flush_pool *p, struct flush_pool_stats *ret)
{
	pthread_mutex_lock(&p->lock);
	*ret = (struct flush_pool_stats){ .busy = p->busy,
					  .stuck = p->stuck,
					  .stuck_total = p->stuck_total,
					  .refused_busy = p->refused_busy,
					  .overflows = p->overflows,
					  .inodes_capped = p->inodes_capped,
					  .budget_waits = p->budget_waits,
					  .budget_wait_usec = p->budget_wait_usec,
					  .jobs_started = p->jobs_started,
					  .handle_fallbacks = p->handle_fallbacks,
					  .inodes_skipped = p->inodes_skipped,
					  .handles_available = !p->handles_refused };
	pthread_mutex_unlock(&p->lock);
}

int flush_pool_new(unsigned threads, const char *sysfs_dev_block, struct flush_pool **ret)
{
	struct flush_pool *p = calloc(1, sizeof(*p));
	int r;

	if (!p)
		return -ENOMEM;
	pthread_condattr_t ca;

	pthread_mutex_init(&p->lock, NULL);
	/* timed waits (the budget) on the monotonic clock now_usec() reads */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->cond, &ca);
	pthread_condattr_destroy(&ca);
	p->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	p->sysfs_dev_block = strdup(sysfs_dev_block);
	p->threads = calloc(threads, sizeof(pthread_t));
	p->workers = threads;
	if (p->efd < 0 || !p->sysfs_dev_block || !p->threads) {
		r = p->efd < 0 ? -errno : -ENOMEM;
		flush_pool_free(p);
		return r;
	}
	for (unsigned i = 0; i < threads; i++) {
		pthread_mutex_lock(&p->lock);
		r = -pthread_create(&p->threads[i], NULL, worker, p);
		if (r >= 0) {
			p->n_threads++;
			p->alive++;
		}
		pthread_mutex_unlock(&p->lock);
		if (r < 0) {
			flush_pool_free(p);
			return r;
		}
	}
	*ret = p;
	return 0;
}

void flush_pool_free(struct flush_pool *p)
{
	struct flush_job *j;

	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	/* A worker stuck in syncfs on a frozen filesystem would block exit
	 * forever: give each a second, and if one is still inside the kernel,
	 * leave the pool allocated (the process is exiting anyway) rather than
	 * free memory the worker will touch when it returns. */
	for (unsigned i = 0; i < p->n_threads; i++) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		if (pthread_timedjoin_np(p->threads[i], NULL, &ts) != 0)
			return;
	}
	while ((j = p->run_head)) {
		p->run_head = j->next;
		flush_job_free(j);
	}
	while ((j = flush_pool_take_done(p)))
		flush_job_free(j);
	for (size_t i = 0; i < p->n_slots; i++) {
		if (p->slots[i].waiting && !p->slots[i].waiting_queued)
			flush_job_free(p->slots[i].waiting);
		for (struct flush_job *o = p->slots[i].overflow_head, *next; o; o = next) {
			next = o->next;
			flush_job_free(o);
		}
	}
	if (p->efd >= 0)
		close(p->efd);
	free(p->slots);
	free(p->threads);
	free(p->sysfs_dev_block);
	free(p);
}

int flush_pool_fd(const struct flush_pool *p)
{
	return p->efd;
}

/* With p->lock held. */
static int merge(struct flush_pool *p, struct flush_job *into, struct flush_job *j)
{
	bool capped = false;
	int r = flush_job_merge(into, j, &capped);

	if (capped)
		p->inodes_capped++;
	return r;
}

int flush_pool_submit(struct flush_pool *p, struct flush_job *j)
{
	struct slot *s;
	int r = 0;

	j->queued_usec = now_usec();
	pthread_mutex_lock(&p->lock);
	s = slot_for(p, j->dev, j->kind, true);
	if (!s)
		r = -ENOMEM;
	else if (s->waiting) {
		r = merge(p, s->overflow_tail ? s->overflow_tail : s->waiting, j);
		if (r == 0)
			flush_job_free(j);
		else if (r == -EBUSY && s->n_overflow < FLUSH_SLOT_OVERFLOW_MAX) {
			/* full: the next waiting job, not a refusal */
			p->overflows++;
			j->next = NULL;
			if (s->overflow_tail)
				s->overflow_tail->next = j;
			else
				s->overflow_head = j;
			s->overflow_tail = j;
			s->n_overflow++;
			r = 0;
		} else if (r == -EBUSY)
			p->refused_busy++;
	} else {
		s->waiting = j;
		if (!s->running) {
			s->waiting_queued = true;
			enqueue_run(p, j);
		}
	}
	pthread_mutex_unlock(&p->lock);
	return r;
}

struct flush_job *flush_pool_take_done(struct flush_pool *p)
{
	struct flush_job *j;
	eventfd_t v;

	pthread_mutex_lock(&p->lock);
	j = p->done_head;
	if (j) {
		p->done_head = j->next;
		if (!p->done_head)
			p->done_tail = NULL;
		j->next = NULL;
	} else
		(void)eventfd_read(p->efd, &v);
	pthread_mutex_unlock(&p->lock);
	return j;
}
