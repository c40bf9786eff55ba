/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krdma's tracepoints, krdma:* in tracefs: each ioctl's command and
 * result, what a POST handed the device and each completion reaped, the
 * rdma_cm events of each connection and listener, devices added and
 * removed, and bench runs.  Connections are named by their handles, as
 * their users know them, and by QPN, as `rdma resource show qp` lists
 * them.  Off, each costs a static branch.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM krdma

#if !defined(_KRDMA_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _KRDMA_TRACE_H

#include <linux/tracepoint.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#include "conn.h"
#include "krdma.h"

/*
 * Each table names its values once: expanded here into TRACE_DEFINE_ENUM()s,
 * so that perf and trace-cmd can read the names of the values in the
 * events' formats, and in the events into __print_symbolic() pairs.
 */
#undef EM
#undef EMe
#define EM(a, b) TRACE_DEFINE_ENUM(a);
#define EMe(a, b) TRACE_DEFINE_ENUM(a);

#define KRDMA_CMD_LIST							\
	EM(KRDMA_CMD_GET_INFO, "GET_INFO")				\
	EM(KRDMA_CMD_QUERY_DEVICES, "QUERY_DEVICES")			\
	EM(KRDMA_CMD_DESTROY, "DESTROY")				\
	EM(KRDMA_CMD_BUF_ALLOC, "BUF_ALLOC")				\
	EM(KRDMA_CMD_BUF_REG_USER, "BUF_REG_USER")			\
	EM(KRDMA_CMD_BUF_RW, "BUF_RW")					\
	EM(KRDMA_CMD_CONN_CREATE, "CONN_CREATE")			\
	EM(KRDMA_CMD_CONN_MODIFY, "CONN_MODIFY")			\
	EM(KRDMA_CMD_CONN_QUERY, "CONN_QUERY")				\
	EM(KRDMA_CMD_CM_LISTEN, "CM_LISTEN")				\
	EM(KRDMA_CMD_CM_CONNECT, "CM_CONNECT")				\
	EM(KRDMA_CMD_CM_ACCEPT, "CM_ACCEPT")				\
	EM(KRDMA_CMD_CM_REJECT, "CM_REJECT")				\
	EM(KRDMA_CMD_CM_DISCONNECT, "CM_DISCONNECT")			\
	EM(KRDMA_CMD_GET_EVENTS, "GET_EVENTS")				\
	EM(KRDMA_CMD_POST, "POST")					\
	EM(KRDMA_CMD_POLL, "POLL")					\
	EM(KRDMA_CMD_AH_CREATE, "AH_CREATE")				\
	EM(KRDMA_CMD_SRQ_CREATE, "SRQ_CREATE")				\
	EM(KRDMA_CMD_BENCH, "BENCH")					\
	EMe(KRDMA_CMD_QUERY_SESSIONS, "QUERY_SESSIONS")

KRDMA_CMD_LIST

#define show_krdma_cmd(nr) __print_symbolic(nr, KRDMA_CMD_LIST)

#define IB_WR_OPCODE_LIST						\
	EM(IB_WR_RDMA_WRITE, "RDMA_WRITE")				\
	EM(IB_WR_RDMA_WRITE_WITH_IMM, "RDMA_WRITE_WITH_IMM")		\
	EM(IB_WR_SEND, "SEND")						\
	EM(IB_WR_SEND_WITH_IMM, "SEND_WITH_IMM")			\
	EM(IB_WR_RDMA_READ, "RDMA_READ")				\
	EM(IB_WR_ATOMIC_CMP_AND_SWP, "ATOMIC_CMP_AND_SWP")		\
	EM(IB_WR_ATOMIC_FETCH_AND_ADD, "ATOMIC_FETCH_AND_ADD")		\
	EM(IB_WR_SEND_WITH_INV, "SEND_WITH_INV")			\
	EMe(IB_WR_LOCAL_INV, "LOCAL_INV")

IB_WR_OPCODE_LIST

#define show_ib_wr_opcode(op) __print_symbolic(op, IB_WR_OPCODE_LIST)

#define IB_WC_OPCODE_LIST						\
	EM(IB_WC_SEND, "SEND")						\
	EM(IB_WC_RDMA_WRITE, "RDMA_WRITE")				\
	EM(IB_WC_RDMA_READ, "RDMA_READ")				\
	EM(IB_WC_COMP_SWAP, "COMP_SWAP")				\
	EM(IB_WC_FETCH_ADD, "FETCH_ADD")				\
	EM(IB_WC_LOCAL_INV, "LOCAL_INV")				\
	EM(IB_WC_REG_MR, "REG_MR")					\
	EM(IB_WC_RECV, "RECV")						\
	EMe(IB_WC_RECV_RDMA_WITH_IMM, "RECV_RDMA_WITH_IMM")

IB_WC_OPCODE_LIST

#define show_ib_wc_opcode(op) __print_symbolic(op, IB_WC_OPCODE_LIST)

#define IB_WC_STATUS_LIST						\
	EM(IB_WC_SUCCESS, "SUCCESS")					\
	EM(IB_WC_LOC_LEN_ERR, "LOC_LEN_ERR")				\
	EM(IB_WC_LOC_QP_OP_ERR, "LOC_QP_OP_ERR")			\
	EM(IB_WC_LOC_EEC_OP_ERR, "LOC_EEC_OP_ERR")			\
	EM(IB_WC_LOC_PROT_ERR, "LOC_PROT_ERR")				\
	EM(IB_WC_WR_FLUSH_ERR, "WR_FLUSH_ERR")				\
	EM(IB_WC_MW_BIND_ERR, "MW_BIND_ERR")				\
	EM(IB_WC_BAD_RESP_ERR, "BAD_RESP_ERR")				\
	EM(IB_WC_LOC_ACCESS_ERR, "LOC_ACCESS_ERR")			\
	EM(IB_WC_REM_INV_REQ_ERR, "REM_INV_REQ_ERR")			\
	EM(IB_WC_REM_ACCESS_ERR, "REM_ACCESS_ERR")			\
	EM(IB_WC_REM_OP_ERR, "REM_OP_ERR")				\
	EM(IB_WC_RETRY_EXC_ERR, "RETRY_EXC_ERR")			\
	EM(IB_WC_RNR_RETRY_EXC_ERR, "RNR_RETRY_EXC_ERR")		\
	EM(IB_WC_LOC_RDD_VIOL_ERR, "LOC_RDD_VIOL_ERR")			\
	EM(IB_WC_REM_INV_RD_REQ_ERR, "REM_INV_RD_REQ_ERR")		\
	EM(IB_WC_REM_ABORT_ERR, "REM_ABORT_ERR")			\
	EM(IB_WC_INV_EECN_ERR, "INV_EECN_ERR")				\
	EM(IB_WC_INV_EEC_STATE_ERR, "INV_EEC_STATE_ERR")		\
	EM(IB_WC_FATAL_ERR, "FATAL_ERR")				\
	EM(IB_WC_RESP_TIMEOUT_ERR, "RESP_TIMEOUT_ERR")			\
	EMe(IB_WC_GENERAL_ERR, "GENERAL_ERR")

IB_WC_STATUS_LIST

#define show_ib_wc_status(status) __print_symbolic(status, IB_WC_STATUS_LIST)

#define RDMA_CM_EVENT_LIST						\
	EM(RDMA_CM_EVENT_ADDR_RESOLVED, "ADDR_RESOLVED")		\
	EM(RDMA_CM_EVENT_ADDR_ERROR, "ADDR_ERROR")			\
	EM(RDMA_CM_EVENT_ROUTE_RESOLVED, "ROUTE_RESOLVED")		\
	EM(RDMA_CM_EVENT_ROUTE_ERROR, "ROUTE_ERROR")			\
	EM(RDMA_CM_EVENT_CONNECT_REQUEST, "CONNECT_REQUEST")		\
	EM(RDMA_CM_EVENT_CONNECT_RESPONSE, "CONNECT_RESPONSE")		\
	EM(RDMA_CM_EVENT_CONNECT_ERROR, "CONNECT_ERROR")		\
	EM(RDMA_CM_EVENT_UNREACHABLE, "UNREACHABLE")			\
	EM(RDMA_CM_EVENT_REJECTED, "REJECTED")				\
	EM(RDMA_CM_EVENT_ESTABLISHED, "ESTABLISHED")			\
	EM(RDMA_CM_EVENT_DISCONNECTED, "DISCONNECTED")			\
	EM(RDMA_CM_EVENT_DEVICE_REMOVAL, "DEVICE_REMOVAL")		\
	EM(RDMA_CM_EVENT_MULTICAST_JOIN, "MULTICAST_JOIN")		\
	EM(RDMA_CM_EVENT_MULTICAST_ERROR, "MULTICAST_ERROR")		\
	EM(RDMA_CM_EVENT_ADDR_CHANGE, "ADDR_CHANGE")			\
	EMe(RDMA_CM_EVENT_TIMEWAIT_EXIT, "TIMEWAIT_EXIT")

RDMA_CM_EVENT_LIST

#define show_rdma_cm_event(ev) __print_symbolic(ev, RDMA_CM_EVENT_LIST)

#define KRDMA_CONN_STATE_LIST						\
	EM(KRDMA_CONN_CONNECTED, "CONNECTED")				\
	EM(KRDMA_CONN_ESTABLISHED, "ESTABLISHED")			\
	EM(KRDMA_CONN_DISCONNECTED, "DISCONNECTED")			\
	EMe(KRDMA_CONN_QP_ERROR, "ERROR")

KRDMA_CONN_STATE_LIST

#define show_krdma_conn_state(bit) __print_symbolic(bit, KRDMA_CONN_STATE_LIST)

#undef EM
#undef EMe
#define EM(a, b) { a, b },
#define EMe(a, b) { a, b }

TRACE_EVENT(krdma_ioctl_enter,
	TP_PROTO(u32 session, unsigned int nr, u32 size),
	TP_ARGS(session, nr, size),
	TP_STRUCT__entry(
		__field(u32, session)
		__field(unsigned int, nr)
		__field(u32, size)
	),
	TP_fast_assign(
		__entry->session = session;
		__entry->nr = nr;
		__entry->size = size;
	),
	TP_printk("session=%u cmd=%s size=%u", __entry->session,
		  show_krdma_cmd(__entry->nr), __entry->size)
);

TRACE_EVENT(krdma_ioctl_exit,
	TP_PROTO(u32 session, unsigned int nr, u32 handle, int ret),
	TP_ARGS(session, nr, handle, ret),
	TP_STRUCT__entry(
		__field(u32, session)
		__field(unsigned int, nr)
		__field(u32, handle)
		__field(int, ret)
	),
	TP_fast_assign(
		__entry->session = session;
		__entry->nr = nr;
		__entry->handle = handle;
		__entry->ret = ret;
	),
	/* handle: the one made or used (0: none, or the command has none) */
	TP_printk("session=%u cmd=%s ret=%d handle=%u", __entry->session,
		  show_krdma_cmd(__entry->nr), __entry->ret, __entry->handle)
);

/* A send chain (@opcode its first WR's) or, @opcode -1, a receive chain. */
TRACE_EVENT(krdma_post,
	TP_PROTO(u32 handle, u32 qpn, int opcode, u32 num_wrs, u64 bytes,
		 int ret),
	TP_ARGS(handle, qpn, opcode, num_wrs, bytes, ret),
	TP_STRUCT__entry(
		__field(u32, handle)
		__field(u32, qpn)
		__field(int, opcode)
		__field(u32, num_wrs)
		__field(u64, bytes)
		__field(int, ret)
	),
	TP_fast_assign(
		__entry->handle = handle;
		__entry->qpn = qpn;
		__entry->opcode = opcode;
		__entry->num_wrs = num_wrs;
		__entry->bytes = bytes;
		__entry->ret = ret;
	),
	TP_printk("handle=%u qpn=%u opcode=%s wrs=%u bytes=%llu ret=%d",
		  __entry->handle, __entry->qpn,
		  __entry->opcode < 0 ? "RECV" :
		  show_ib_wr_opcode(__entry->opcode),
		  __entry->num_wrs, __entry->bytes, __entry->ret)
);

TRACE_EVENT(krdma_completion,
	TP_PROTO(u32 handle, const struct ib_wc *wc),
	TP_ARGS(handle, wc),
	TP_STRUCT__entry(
		__field(u32, handle)
		__field(u32, qpn)
		__field(u64, wr_id)
		__field(int, status)
		__field(int, opcode)
		__field(u32, byte_len)
	),
	TP_fast_assign(
		__entry->handle = handle;
		__entry->qpn = wc->qp ? wc->qp->qp_num : 0;
		__entry->wr_id = wc->wr_id;
		__entry->status = wc->status;
		__entry->opcode = wc->opcode;
		__entry->byte_len = wc->byte_len;
	),
	TP_printk("handle=%u qpn=%u wr_id=%#llx status=%s opcode=%s len=%u",
		  __entry->handle, __entry->qpn, __entry->wr_id,
		  show_ib_wc_status(__entry->status),
		  show_ib_wc_opcode(__entry->opcode), __entry->byte_len)
);

/*
 * A connection's step: connected by KRDMA_CONN_MODIFY, established or
 * disconnected by rdma_cm (either side), in error (once).
 */
TRACE_EVENT(krdma_conn_state,
	TP_PROTO(const struct krdma_conn *conn, int state),
	TP_ARGS(conn, state),
	TP_STRUCT__entry(
		__field(u32, session)
		__field(u32, handle)
		__field(u32, qpn)
		__field(int, state)
	),
	TP_fast_assign(
		__entry->session = conn->obj.session->id;
		__entry->handle = conn->obj.handle;
		__entry->qpn = conn->qp_num;
		__entry->state = state;
	),
	TP_printk("session=%u handle=%u qpn=%u state=%s",
		  __entry->session, __entry->handle, __entry->qpn,
		  show_krdma_conn_state(__entry->state))
);

/*
 * A connection's QP drained before it went: the caller's WRs flushed
 * (their completions are traced too), and 0 or -ETIMEDOUT.
 */
TRACE_EVENT(krdma_conn_drain,
	TP_PROTO(const struct krdma_conn *conn, u32 flushed, int ret),
	TP_ARGS(conn, flushed, ret),
	TP_STRUCT__entry(
		__field(u32, session)
		__field(u32, handle)
		__field(u32, qpn)
		__field(u32, flushed)
		__field(int, ret)
	),
	TP_fast_assign(
		__entry->session = conn->obj.session->id;
		__entry->handle = conn->obj.handle;
		__entry->qpn = conn->qp_num;
		__entry->flushed = flushed;
		__entry->ret = ret;
	),
	TP_printk("session=%u handle=%u qpn=%u flushed=%u ret=%d",
		  __entry->session, __entry->handle, __entry->qpn,
		  __entry->flushed, __entry->ret)
);

/* An rdma_cm event of a connection or a listener (handle @handle). */
TRACE_EVENT(krdma_cm_event,
	TP_PROTO(u32 handle, int event, int status),
	TP_ARGS(handle, event, status),
	TP_STRUCT__entry(
		__field(u32, handle)
		__field(int, event)
		__field(int, status)
	),
	TP_fast_assign(
		__entry->handle = handle;
		__entry->event = event;
		__entry->status = status;
	),
	TP_printk("handle=%u event=%s status=%d", __entry->handle,
		  show_rdma_cm_event(__entry->event), __entry->status)
);

TRACE_EVENT(krdma_device_add,
	TP_PROTO(const struct ib_device *ibdev, u32 index),
	TP_ARGS(ibdev, index),
	TP_STRUCT__entry(
		__array(char, name, IB_DEVICE_NAME_MAX)
		__field(u32, index)
	),
	TP_fast_assign(
		strscpy(__entry->name, dev_name(&ibdev->dev),
			IB_DEVICE_NAME_MAX);
		__entry->index = index;
	),
	TP_printk("device=%s index=%u", __entry->name, __entry->index)
);

TRACE_EVENT(krdma_device_remove,
	TP_PROTO(const struct ib_device *ibdev, u32 index, u32 objects),
	TP_ARGS(ibdev, index, objects),
	TP_STRUCT__entry(
		__array(char, name, IB_DEVICE_NAME_MAX)
		__field(u32, index)
		__field(u32, objects)
	),
	TP_fast_assign(
		strscpy(__entry->name, dev_name(&ibdev->dev),
			IB_DEVICE_NAME_MAX);
		__entry->index = index;
		__entry->objects = objects;
	),
	TP_printk("device=%s index=%u objects=%u", __entry->name,
		  __entry->index, __entry->objects)
);

TRACE_EVENT(krdma_bench_start,
	TP_PROTO(const struct krdma_bench *cmd),
	TP_ARGS(cmd),
	TP_STRUCT__entry(
		__field(u32, opcode)
		__field(u32, num_conns)
		__field(u32, flags)
		__field(u64, msg_size)
		__field(u64, iters)
		__field(u32, duration_ms)
	),
	TP_fast_assign(
		__entry->opcode = cmd->opcode;
		__entry->num_conns = cmd->num_conns;
		__entry->flags = cmd->flags;
		__entry->msg_size = cmd->msg_size;
		__entry->iters = cmd->iters;
		__entry->duration_ms = cmd->duration_ms;
	),
	TP_printk("opcode=%u conns=%u flags=%#x size=%llu iters=%llu duration_ms=%u",
		  __entry->opcode, __entry->num_conns, __entry->flags,
		  __entry->msg_size, __entry->iters, __entry->duration_ms)
);

TRACE_EVENT(krdma_bench_end,
	TP_PROTO(const struct krdma_bench *cmd, int ret),
	TP_ARGS(cmd, ret),
	TP_STRUCT__entry(
		__field(u64, ops)
		__field(u64, bytes)
		__field(u64, elapsed_ns)
		__field(u64, peak_bps)
		__field(int, ret)
	),
	TP_fast_assign(
		__entry->ops = cmd->ops_done;
		__entry->bytes = cmd->bytes_done;
		__entry->elapsed_ns = cmd->elapsed_ns;
		__entry->peak_bps = cmd->peak_bps;
		__entry->ret = ret;
	),
	TP_printk("ops=%llu bytes=%llu elapsed_ns=%llu peak_bps=%llu ret=%d",
		  __entry->ops, __entry->bytes, __entry->elapsed_ns,
		  __entry->peak_bps, __entry->ret)
);

#endif /* _KRDMA_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH module
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE trace
#include <trace/define_trace.h>
