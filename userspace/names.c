// SPDX-License-Identifier: GPL-2.0
/*
 * Names of the uAPI's enum values.
 */
#include <stdio.h>

#include <krdma.h>

#include "krdmactl.h"
#include "names.h"

/* bit numbers of enum krdma_feature */
const char *const feature_names[] = {
	"query_devices",
	"buffers",
	"user_buffers",
	"manual_conn",
	"rdma_cm",
	"srq",
	"memory_windows",
	"bench",
	"post_poll",
	"accept_async",
	"query_sessions",
	"event_device",
	"buffer_mrs",
};
const unsigned int nr_feature_names = ARRAY_SIZE(feature_names);

const char *const opcode_names[] = {
	[KRDMA_OP_SEND] = "send",
	[KRDMA_OP_SEND_WITH_IMM] = "send_with_imm",
	[KRDMA_OP_RECV] = "recv",
	[KRDMA_OP_RDMA_WRITE] = "rdma_write",
	[KRDMA_OP_RDMA_WRITE_WITH_IMM] = "rdma_write_with_imm",
	[KRDMA_OP_RDMA_READ] = "rdma_read",
	[KRDMA_OP_ATOMIC_FETCH_ADD] = "atomic_fetch_add",
	[KRDMA_OP_ATOMIC_CMP_SWP] = "atomic_cmp_swp",
	[KRDMA_OP_SEND_WITH_INV] = "send_with_inv",
	[KRDMA_OP_LOCAL_INV] = "local_inv",
};
const unsigned int nr_opcode_names = ARRAY_SIZE(opcode_names);

const char *const transport_names[] = {
	[KRDMA_TRANSPORT_RC] = "rc",
	[KRDMA_TRANSPORT_UC] = "uc",
	[KRDMA_TRANSPORT_UD] = "ud",
};
const unsigned int nr_transport_names = ARRAY_SIZE(transport_names);

/* bit numbers of enum krdma_conn_info_flags */
const char *const conn_info_flag_names[] = {
	"cm",
	"established",
	"disconnected",
	"error",
	"bench",
	"notify",
	"gone",
	"state_unknown",
};
const unsigned int nr_conn_info_flag_names = ARRAY_SIZE(conn_info_flag_names);

/*
 * The name of @val in @names, or "unknown(N)".  The fallback lives in a
 * small ring so that a few of them can appear in one printf().
 */
static const char *lookup(const char *const *names, unsigned int nr_names,
			  uint32_t val)
{
	static char ring[4][24];
	static unsigned int next;
	char *buf;

	if (val < nr_names && names[val])
		return names[val];
	buf = ring[next++ % ARRAY_SIZE(ring)];
	snprintf(buf, sizeof(ring[0]), "unknown(%u)", val);
	return buf;
}

#define LOOKUP(names, val) lookup(names, ARRAY_SIZE(names), val)

const char *node_type_name(uint32_t type)
{
	static const char *const names[] = {
		[KRDMA_NODE_UNKNOWN] = "unknown",
		[KRDMA_NODE_IB_CA] = "ca",
		[KRDMA_NODE_IB_SWITCH] = "switch",
		[KRDMA_NODE_IB_ROUTER] = "router",
		[KRDMA_NODE_RNIC] = "rnic",
		[KRDMA_NODE_USNIC] = "usnic",
		[KRDMA_NODE_USNIC_UDP] = "usnic_udp",
		[KRDMA_NODE_UNSPECIFIED] = "unspecified",
	};

	return LOOKUP(names, type);
}

const char *atomic_cap_name(uint32_t cap)
{
	static const char *const names[] = {
		[KRDMA_ATOMIC_NONE] = "none",
		[KRDMA_ATOMIC_HCA] = "hca",
		[KRDMA_ATOMIC_GLOB] = "glob",
	};

	return LOOKUP(names, cap);
}

const char *port_state_name(uint32_t state)
{
	static const char *const names[] = {
		[KRDMA_PORT_NOP] = "NOP",
		[KRDMA_PORT_DOWN] = "DOWN",
		[KRDMA_PORT_INIT] = "INIT",
		[KRDMA_PORT_ARMED] = "ARMED",
		[KRDMA_PORT_ACTIVE] = "ACTIVE",
		[KRDMA_PORT_ACTIVE_DEFER] = "ACTIVE_DEFER",
	};

	return LOOKUP(names, state);
}

/* IB_QPS_* without the prefix, as `rdma resource show qp` spells them */
const char *conn_state_name(uint32_t state)
{
	static const char *const names[] = {
		[KRDMA_CONN_RESET] = "RESET",
		[KRDMA_CONN_INIT] = "INIT",
		[KRDMA_CONN_RTR] = "RTR",
		[KRDMA_CONN_RTS] = "RTS",
		[KRDMA_CONN_SQD] = "SQD",
		[KRDMA_CONN_SQE] = "SQE",
		[KRDMA_CONN_ERR] = "ERR",
	};

	return LOOKUP(names, state);
}

/* IB_PORT_PHYS_STATE_* without the prefix */
const char *phys_state_name(uint32_t state)
{
	static const char *const names[] = {
		[0] = "NOP",
		[1] = "SLEEP",
		[2] = "POLLING",
		[3] = "DISABLED",
		[4] = "PORT_CONFIGURATION_TRAINING",
		[5] = "LINK_UP",
		[6] = "LINK_ERROR_RECOVERY",
		[7] = "PHY_TEST",
	};

	return LOOKUP(names, state);
}

/* spelled like sysfs link_layer and ibv_devinfo */
const char *link_layer_name(uint32_t layer)
{
	static const char *const names[] = {
		[KRDMA_LINK_LAYER_UNSPECIFIED] = "Unspecified",
		[KRDMA_LINK_LAYER_INFINIBAND] = "InfiniBand",
		[KRDMA_LINK_LAYER_ETHERNET] = "Ethernet",
	};

	return LOOKUP(names, layer);
}

const char *gid_type_name(uint32_t type)
{
	static const char *const names[] = {
		[KRDMA_GID_TYPE_IB] = "IB",
		[KRDMA_GID_TYPE_ROCE] = "RoCEv1",
		[KRDMA_GID_TYPE_ROCE_UDP_ENCAP] = "RoCEv2",
	};

	return LOOKUP(names, type);
}

/* IB_SPEED_* are bits; each value has exactly one set */
const char *speed_name(uint32_t speed)
{
	static const char *const names[] = {
		"SDR", "DDR", "QDR", "FDR10", "FDR", "EDR", "HDR", "NDR", "XDR",
	};
	unsigned int bit;

	for (bit = 0; bit < ARRAY_SIZE(names); bit++)
		if (speed == 1U << bit)
			return names[bit];
	return lookup(NULL, 0, speed);
}

/* IB_WIDTH_* are bits too */
const char *width_name(uint32_t width)
{
	static const char *const names[] = { "1X", "4X", "8X", "12X", "2X" };
	unsigned int bit;

	for (bit = 0; bit < ARRAY_SIZE(names); bit++)
		if (width == 1U << bit)
			return names[bit];
	return lookup(NULL, 0, width);
}

/* IB_WC_* completion status, without the prefix, as ib_verbs.h numbers it */
const char *wc_status_name(uint32_t status)
{
	static const char *const names[] = {
		"SUCCESS",
		"LOC_LEN_ERR",
		"LOC_QP_OP_ERR",
		"LOC_EEC_OP_ERR",
		"LOC_PROT_ERR",
		"WR_FLUSH_ERR",
		"MW_BIND_ERR",
		"BAD_RESP_ERR",
		"LOC_ACCESS_ERR",
		"REM_INV_REQ_ERR",
		"REM_ACCESS_ERR",
		"REM_OP_ERR",
		"RETRY_EXC_ERR",
		"RNR_RETRY_EXC_ERR",
		"LOC_RDD_VIOL_ERR",
		"REM_INV_RD_REQ_ERR",
		"REM_ABORT_ERR",
		"INV_EECN_ERR",
		"INV_EEC_STATE_ERR",
		"FATAL_ERR",
		"RESP_TIMEOUT_ERR",
		"GENERAL_ERR",
	};

	return LOOKUP(names, status);
}

const char *transport_name(uint32_t transport)
{
	return transport < nr_transport_names ? transport_names[transport] :
						"?";
}
