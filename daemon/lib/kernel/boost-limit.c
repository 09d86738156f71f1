/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "boost-limit.h"
#include "wbg-base.h"

bool boost_limit_take(struct boost_limit *l, uint64_t tenant, uint64_t now)
{
	size_t i, lru = 0;

	for (i = 0; i < ELEMENTSOF(l->t); i++) {
		if (l->t[i].tenant == tenant)
			break;
		if (l->t[i].seen < l->t[lru].seen)
			lru = i;
	}
	if (i == ELEMENTSOF(l->t)) {
		/* new here: the least recently seen makes room */
		i = lru;
		if (l->t[i].tenant)
			l->evicted++;
		l->t[i].tenant = tenant;
		l->t[i].tokens = BOOST_LIMIT_BURST;
		l->t[i].refilled = now;
	}
	l->t[i].seen = now;
	while (l->t[i].tokens < BOOST_LIMIT_BURST && now - l->t[i].refilled >= BOOST_LIMIT_REFILL_USEC) {
		l->t[i].tokens++;
		l->t[i].refilled += BOOST_LIMIT_REFILL_USEC;
	}
	if (l->t[i].tokens == BOOST_LIMIT_BURST)
		l->t[i].refilled = now;
	if (!l->t[i].tokens) {
		l->refused++;
		return false;
	}
	l->t[i].tokens--;
	return true;
}
