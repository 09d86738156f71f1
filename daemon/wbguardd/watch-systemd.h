/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * systemd over the system bus: a stop job for a unit, or its ActiveState
 * turning "deactivating", is the earliest sign that its cgroup is about to
 * be emptied and removed (systemd removes a scope's cgroup as soon as it is
 * empty). Mapped to the unit's ControlGroup, it starts the handover before
 * the processes are even gone. Without a bus, inotify alone does the job;
 * when the bus goes away it is reconnected with backoff.
 */
#pragma once

struct manager;

int watch_systemd_start(struct manager *m);
void watch_systemd_stop(struct manager *m);
