/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The client side of wbguardd's control API, for wbguardctl and the hook.
 * Every step is bounded by one deadline (CLOCK_MONOTONIC microseconds), so a
 * wbguardd that is stopped or stuck costs a caller its timeout, never more.
 */
#pragma once

#include <stdint.h>
#include <systemd/sd-bus.h>

#define WBG_BUS_NAME "io.wbguard1"
#define WBG_BUS_PATH "/io/wbguard1"
#define WBG_BUS_IFACE "io.wbguard1.Manager"
#define WBG_CONTROL_SOCKET WBG_RUN_DIR "/control"

uint64_t control_now_usec(void);
/* A peer-to-peer connection to wbguardd's control socket, authenticated by
 * the deadline, else -ETIMEDOUT. */
int control_connect(const char *socket_path, uint64_t deadline, sd_bus **ret);
/* A method call whose reply must come by the deadline. */
int control_call(sd_bus *bus, sd_bus_message *m, uint64_t deadline, sd_bus_error *error, sd_bus_message **ret_reply);
