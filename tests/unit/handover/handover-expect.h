/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the handover tests expect of a cell (handover-phase.h), for
 * test-handover-phase's specification and the cells test-handover-steps
 * carries out. */
#pragma once

#include "handover-phase.h"

#define P(x) WBG_PHASE_##x
#define E(x) WBG_EVENT_##x
#define A(x) WBG_ACT_##x
#define G(x) WBG_GUARD_##x
#define END(x) WBG_END_##x

/* In phase, event with guards (the route's and the state's among them)
 * goes to next doing actions; one that ends names its outcome. */
struct expect {
	enum wbg_phase phase;
	enum wbg_event event;
	unsigned guards;
	enum wbg_phase next;
	unsigned actions;
	enum wbg_end end;
};
