/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Names of the uAPI's enum values, for output (and later for parsing).
 */
#ifndef KRDMACTL_NAMES_H
#define KRDMACTL_NAMES_H

#include <stdint.h>

/* Tables indexed by bit number, for pr_bits(). */
extern const char *const feature_names[];
extern const unsigned int nr_feature_names;
extern const char *const opcode_names[];	/* enum krdma_opcode */
extern const unsigned int nr_opcode_names;
extern const char *const transport_names[];	/* enum krdma_transport */
extern const unsigned int nr_transport_names;
extern const char *const conn_info_flag_names[];	/* krdma_conn_info */
extern const unsigned int nr_conn_info_flag_names;

/* Each returns a static string; an unknown value is "unknown(N)". */
const char *node_type_name(uint32_t type);
const char *atomic_cap_name(uint32_t cap);
const char *port_state_name(uint32_t state);
const char *conn_state_name(uint32_t state);	/* enum krdma_conn_state */
const char *phys_state_name(uint32_t state);
const char *link_layer_name(uint32_t layer);
const char *gid_type_name(uint32_t type);
const char *speed_name(uint32_t speed);
const char *width_name(uint32_t width);
const char *wc_status_name(uint32_t status);	/* struct krdma_wc.status */
/* enum krdma_transport's lowercase name, or "?" */
const char *transport_name(uint32_t transport);

#endif /* KRDMACTL_NAMES_H */
