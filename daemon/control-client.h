/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The client side of wbguardd's control API, for wbguardctl and the hook. */
#pragma once

#include <systemd/sd-bus.h>

#define WBG_BUS_NAME "io.wbguard1"
#define WBG_BUS_PATH "/io/wbguard1"
#define WBG_BUS_IFACE "io.wbguard1.Manager"
#define WBG_CONTROL_SOCKET "/run/wbguard/control"

/* A peer-to-peer connection to wbguardd's control socket. */
int control_connect(const char *socket_path, sd_bus **ret);
