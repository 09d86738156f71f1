/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The OCI annotation a container asks its dirty expiry with. Here in base
 * because two folders that stand beside each other name it: runtime reads
 * it from a container's state or NRI, config's expiry policy judges its
 * value.
 */
#pragma once

#define WBG_EXPIRY_ANNOTATION "wbguard.io/dirty-expire"
