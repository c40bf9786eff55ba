/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * krdma: drive RDMA devices through the in-kernel verbs API from userspace.
 */

/**
 * DOC: General ioctl format
 *
 * Every command is an ioctl on ``/dev/krdma`` whose argument is a pointer to
 * a struct that starts with ``__u32 size; __u32 flags;``.  The layout rules
 * are those of ``include/uapi/linux/iommufd.h``:
 *
 * - ``size`` is sizeof() the struct as the caller knows it.  A kernel that
 *   knows a longer struct treats the missing tail as zero; a kernel that
 *   knows a shorter one accepts the call only if every byte past its own
 *   struct is zero (otherwise %E2BIG).  A ``size`` below the first version
 *   of the struct is %EINVAL; one above %KRDMA_MAX_CMD_SIZE is %E2BIG, as
 *   openat2()'s (no struct will grow past it, and the kernel does not scan
 *   a caller's gigabytes for a non-zero byte).
 * - Every ``__reserved`` field and every unknown ``flags`` bit must be zero:
 *   non-zero reserved is %EINVAL, an unknown flag is %EOPNOTSUPP.
 * - A field documented "out" is written by the kernel and ignored on the
 *   way in, so a struct can be passed again as it came back (a CM_CONNECT
 *   retried after %ECONNREFUSED wrote its reject reason).
 * - A value wider than its wire field (a QP number or PSN over 24 bits, a
 *   LID over 16) is %EINVAL, never cut to another one.  A field nothing
 *   reads in the case at hand must be 0 (%EINVAL), so that it can be given
 *   a meaning later: a &struct krdma_wr field its opcode does not use, a
 *   %KRDMA_BENCH's peer buffer on a SEND run.
 * - 64-bit values and user pointers are __aligned_u64; no field is a long.
 * - Output arrays are described by (uptr, num, entry_size): the kernel
 *   writes min(entry_size, its entry size) bytes per entry and zero-fills
 *   the rest, so old and new callers keep working.  A too-small array is
 *   %EMSGSIZE with the needed count written back and nothing else written.
 *   (An array of rkeys has no entry_size: an rkey is a __u32 in every RDMA
 *   transport.)
 *   An input array (WRs) is read the same way: the tail past the kernel's
 *   entry must be zero (%E2BIG).  An entry_size below the entry's first
 *   version or above %KRDMA_MAX_ENTRY_SIZE is %EINVAL: no entry will grow
 *   past it, and the kernel does not scan gigabytes of a caller's stride.
 */

/**
 * DOC: Errors
 *
 * The errno contract common to all commands:
 *
 * - %ENOTTY: unknown command (or a command this build does not implement;
 *   see &struct krdma_info.features).
 * - %EFAULT: an address the kernel had to read or write was not mapped; a
 *   create command whose answer cannot be written back leaves no object
 *   behind, GET_EVENTS keeps the events it could not deliver, and a POST
 *   that posted every WR succeeds (it has nothing to write back).
 * - %EINVAL: ``size`` too small, reserved field non-zero, bad field value.
 * - %E2BIG: non-zero bytes past the struct this kernel knows, or a ``size``
 *   above %KRDMA_MAX_CMD_SIZE.
 * - %EOPNOTSUPP: unknown flag, or an operation the transport or device
 *   lacks.
 * - %EPROTONOSUPPORT: a connection the device's transport cannot carry:
 *   UC or UD, or one made by hand, on iWARP (see "Transports and what they
 *   refuse").
 * - %ENOENT: unknown handle.
 * - %ENODEV: the RDMA device was removed (or never existed, or is not one
 *   of the opener's network namespace).
 * - %EPERM: missing privilege.
 * - %EACCES: a port below 1024 without CAP_NET_BIND_SERVICE (CM_LISTEN,
 *   CM_CONNECT's source).
 * - %EMSGSIZE: output array too small (count written back), or a message
 *   larger than the transport allows.
 * - %ENOMEM: out of memory, or RLIMIT_MEMLOCK exceeded by what is charged
 *   to it (without CAP_IPC_LOCK): buffers' pages, and the queues of
 *   connections and SRQs, estimated from their depths; POST: the send or
 *   receive queue is full (poll, then post again from
 *   &struct krdma_post.num_wrs).
 * - %EDQUOT: a create past the module's max_objects_per_user: the objects
 *   alive in all sessions opened by the same user as this one (the opener's
 *   real uid; none for a session opened with CAP_SYS_ADMIN).
 * - %EAGAIN: a create past the rdma cgroup limit (rdma.max on the device)
 *   of the caller's cgroup: its hca_object, which each buffer (a user
 *   buffer of several MRs: each MR), connection, SRQ and address handle
 *   is charged to, or its hca_handle, which a
 *   session's first such object on the device charges, as uverbs charges
 *   its objects and contexts; BENCH: see &struct krdma_bench.
 * - %ENOBUFS, %ENFILE: the RDMA core or the network stack under it ran out
 *   of buffers (route or neighbour entries) or of files: as %ENOMEM, passed
 *   on unchanged so that it says which.
 * - %EBUSY: DESTROY of an object another one still uses (an SRQ); POST,
 *   POLL or BENCH on a connection a BENCH run has.
 * - %EINTR: a signal ended a call that waits (POLL and GET_EVENTS with a
 *   timeout, CM_CONNECT, CM_ACCEPT, BENCH, a POST whose WRs' pages are being
 *   faulted in); nothing is left half done (an accepted connection stays:
 *   CM_ACCEPT; such a POST posted nothing).
 * - %ENETDOWN: the device has no active port (a buffer's fast registration
 *   runs on one).
 *
 * Commands that resolve a RoCE peer's MAC from its GID (CONN_MODIFY,
 * AH_CREATE, CM_CONNECT) also pass on the neighbour resolution's
 * %ETIMEDOUT, %ENETUNREACH or %EHOSTUNREACH.
 */
#ifndef _UAPI_KRDMA_H
#define _UAPI_KRDMA_H

#include <linux/types.h>
#include <linux/const.h>
#include <linux/ioctl.h>

#define KRDMA_DEVICE_PATH "/dev/krdma"

/* Bumped only on an incompatible change, which the rules above avoid. */
#define KRDMA_ABI_VERSION 4

#define KRDMA_TYPE 0xE5
#define KRDMA_MAX_CMD_SIZE 4096	/* largest @size of any command */
#define KRDMA_MAX_ENTRY_SIZE 4096	/* largest entry_size of any array */
#define KRDMA_NAME_MAX 64	/* IB_DEVICE_NAME_MAX */
#define KRDMA_IFNAME_MAX 16	/* IFNAMSIZ */

enum {
	KRDMA_CMD_BASE = 0x80,
	KRDMA_CMD_GET_INFO = KRDMA_CMD_BASE,
	KRDMA_CMD_QUERY_DEVICES,
	KRDMA_CMD_DESTROY,
	KRDMA_CMD_BUF_ALLOC,
	KRDMA_CMD_BUF_REG_USER,
	KRDMA_CMD_BUF_RW,
	KRDMA_CMD_CONN_CREATE,
	KRDMA_CMD_CONN_MODIFY,
	KRDMA_CMD_CONN_QUERY,
	KRDMA_CMD_CM_LISTEN,
	KRDMA_CMD_CM_CONNECT,
	KRDMA_CMD_CM_ACCEPT,
	KRDMA_CMD_CM_REJECT,
	KRDMA_CMD_CM_DISCONNECT,
	KRDMA_CMD_GET_EVENTS,
	KRDMA_CMD_POST,
	KRDMA_CMD_POLL,
	KRDMA_CMD_AH_CREATE,
	KRDMA_CMD_SRQ_CREATE,
	KRDMA_CMD_BENCH,
	KRDMA_CMD_QUERY_SESSIONS,
};

/**
 * DOC: Discovery
 *
 * %KRDMA_GET_INFO tells the ABI version, the feature bits, the supported
 * opcodes and transports, and how many devices and sessions there are.
 * %KRDMA_QUERY_DEVICES lists the devices of the opener's network namespace
 * (name, GUIDs, limits, atomic capability), their ports (state, MTU, link
 * layer, largest message) and their valid GID table entries with type and
 * network device.
 */

/**
 * enum krdma_feature - bits of &struct krdma_info.features
 * @KRDMA_FEATURE_QUERY_DEVICES: %KRDMA_QUERY_DEVICES is implemented
 * @KRDMA_FEATURE_BUFFERS: %KRDMA_BUF_ALLOC / %KRDMA_BUF_RW and mmap
 * @KRDMA_FEATURE_USER_BUFFERS: %KRDMA_BUF_REG_USER (pinned, fast-registered)
 * @KRDMA_FEATURE_MANUAL_CONN: %KRDMA_CONN_CREATE / %KRDMA_CONN_MODIFY
 * @KRDMA_FEATURE_RDMA_CM: the %KRDMA_CM_* commands and %KRDMA_GET_EVENTS
 * @KRDMA_FEATURE_SRQ: %KRDMA_SRQ_CREATE
 * @KRDMA_FEATURE_MEMORY_WINDOWS: memory windows; never set by the kernels
 *	tested (5.10 to 7.2): the in-kernel verbs API exports no ib_alloc_mw() and
 *	struct ib_send_wr has no bind-MW fields, so only user verbs can bind
 *	windows.  Fast registration plus LOCAL_INV / SEND_WITH_INV is the
 *	kernel's way to hand out and revoke a remote key.
 * @KRDMA_FEATURE_BENCH: %KRDMA_BENCH
 * @KRDMA_FEATURE_POST_POLL: %KRDMA_POST takes %KRDMA_POST_POLL
 * @KRDMA_FEATURE_ACCEPT_ASYNC: %KRDMA_CM_ACCEPT takes %KRDMA_CONN_ACCEPT_ASYNC
 * @KRDMA_FEATURE_QUERY_SESSIONS: %KRDMA_QUERY_SESSIONS
 * @KRDMA_FEATURE_EVENT_DEVICE: a CONNECT_REQUEST names its device in
 *	&struct krdma_event.dev_index
 * @KRDMA_FEATURE_BUFFER_MRS: %KRDMA_BUF_REG_USER registers memory one MR
 *	does not map as several (&struct krdma_buf_reg_user.num_mrs)
 *
 * A command whose feature bit is clear answers %ENOTTY.
 */
enum krdma_feature {
	KRDMA_FEATURE_QUERY_DEVICES = 1 << 0,
	KRDMA_FEATURE_BUFFERS = 1 << 1,
	KRDMA_FEATURE_USER_BUFFERS = 1 << 2,
	KRDMA_FEATURE_MANUAL_CONN = 1 << 3,
	KRDMA_FEATURE_RDMA_CM = 1 << 4,
	KRDMA_FEATURE_SRQ = 1 << 5,
	KRDMA_FEATURE_MEMORY_WINDOWS = 1 << 6,
	KRDMA_FEATURE_BENCH = 1 << 7,
	KRDMA_FEATURE_POST_POLL = 1 << 8,
	KRDMA_FEATURE_ACCEPT_ASYNC = 1 << 9,
	KRDMA_FEATURE_QUERY_SESSIONS = 1 << 10,
	KRDMA_FEATURE_EVENT_DEVICE = 1 << 11,
	KRDMA_FEATURE_BUFFER_MRS = 1 << 12,
};

/**
 * enum krdma_transport - transport of a connection (IB_QPT_*)
 * @KRDMA_TRANSPORT_RC: reliable connected
 * @KRDMA_TRANSPORT_UC: unreliable connected (no READ, no atomics)
 * @KRDMA_TRANSPORT_UD: unreliable datagram (SEND only, one packet, Q_Key)
 */
enum krdma_transport {
	KRDMA_TRANSPORT_RC = 0,
	KRDMA_TRANSPORT_UC = 1,
	KRDMA_TRANSPORT_UD = 2,
};

/**
 * enum krdma_opcode - work request opcodes (IB_WR_* / IB_WC_*)
 * @KRDMA_OP_SEND: two-sided send
 * @KRDMA_OP_SEND_WITH_IMM: send carrying 32 bits of immediate data
 * @KRDMA_OP_RECV: receive buffer for a SEND or WRITE_WITH_IMM
 * @KRDMA_OP_RDMA_WRITE: one-sided write into the peer's buffer
 * @KRDMA_OP_RDMA_WRITE_WITH_IMM: write that also consumes a peer RECV
 * @KRDMA_OP_RDMA_READ: one-sided read from the peer's buffer
 * @KRDMA_OP_ATOMIC_FETCH_ADD: 64-bit fetch-and-add at the peer
 * @KRDMA_OP_ATOMIC_CMP_SWP: 64-bit compare-and-swap at the peer
 * @KRDMA_OP_SEND_WITH_INV: send that invalidates the peer's rkey
 *	(@imm_data), RC only; the peer's receive completes with
 *	IB_WC_WITH_INVALIDATE and the key in its @imm_data.  Needs
 *	CAP_NET_ADMIN (%EPERM) on a device whose receiving side invalidates
 *	a key of any PD (rxe): there it would revoke other users' keys
 * @KRDMA_OP_LOCAL_INV: invalidate the key @imm_data of one of the session's
 *	own buffers (any other key is %EINVAL), RC and UC; afterwards the
 *	key fails every access until the buffer is destroyed (a buffer of
 *	several MRs has a key each: one LOCAL_INV revokes one MR)
 * @KRDMA_OP_MAX: the number of opcodes (not one)
 */
enum krdma_opcode {
	KRDMA_OP_SEND = 0,
	KRDMA_OP_SEND_WITH_IMM,
	KRDMA_OP_RECV,
	KRDMA_OP_RDMA_WRITE,
	KRDMA_OP_RDMA_WRITE_WITH_IMM,
	KRDMA_OP_RDMA_READ,
	KRDMA_OP_ATOMIC_FETCH_ADD,
	KRDMA_OP_ATOMIC_CMP_SWP,
	KRDMA_OP_SEND_WITH_INV,
	KRDMA_OP_LOCAL_INV,
	KRDMA_OP_MAX,
};

/**
 * struct krdma_info - ioctl(KRDMA_GET_INFO)
 * @size: sizeof(struct krdma_info)
 * @flags: must be 0
 * @abi_version: out, %KRDMA_ABI_VERSION of the running module
 * @num_devices: out, RDMA devices the module serves that the session sees
 *	(&struct krdma_query_devices)
 * @features: out, &enum krdma_feature bits this build and kernel implement
 * @ops: out, bit (1 << &enum krdma_opcode) for each opcode that can be posted
 * @transports: out, bit (1 << &enum krdma_transport) for each transport
 * @num_device_contexts: out, per-device contexts still allocated, including
 *	those of removed devices that an open session still references
 * @module_version: out, NUL-terminated version string of the module
 * @bench_protocol: out, %KRDMA_BENCH_PROTOCOL of the running module: a
 *	%KRDMA_BENCH run talks to the peer's run, which must speak the same
 *	(a module without the field leaves it as it was passed: pass 0)
 * @__reserved: must be 0
 */
struct krdma_info {
	__u32 size;
	__u32 flags;
	__u32 abi_version;
	__u32 num_devices;
	__aligned_u64 features;
	__aligned_u64 ops;
	__u32 transports;
	__u32 num_device_contexts;
	char module_version[32];
	__u32 bench_protocol;
	__u32 __reserved;
};

#define KRDMA_GET_INFO _IO(KRDMA_TYPE, KRDMA_CMD_GET_INFO)

/** enum krdma_node_type - &struct krdma_device_info.node_type (RDMA_NODE_*) */
enum krdma_node_type {
	KRDMA_NODE_UNKNOWN = 0,
	KRDMA_NODE_IB_CA = 1,
	KRDMA_NODE_IB_SWITCH = 2,
	KRDMA_NODE_IB_ROUTER = 3,
	KRDMA_NODE_RNIC = 4,
	KRDMA_NODE_USNIC = 5,
	KRDMA_NODE_USNIC_UDP = 6,
	KRDMA_NODE_UNSPECIFIED = 7,
};

/** enum krdma_atomic_cap - &struct krdma_device_info.atomic_cap (IB_ATOMIC_*) */
enum krdma_atomic_cap {
	KRDMA_ATOMIC_NONE = 0,
	KRDMA_ATOMIC_HCA = 1,
	KRDMA_ATOMIC_GLOB = 2,
};

/**
 * struct krdma_device_info - one RDMA device, an entry of %KRDMA_QUERY_DEVICES
 * @dev_index: krdma's id for the device, used by every later command; ids
 *	are not reused while the module is loaded, so a removed device's id
 *	stays dead (%ENODEV) even after a device of the same name returns
 * @node_type: &enum krdma_node_type
 * @name: NUL-terminated device name ("rxe0", "mlx5_0")
 * @node_guid: node GUID, in host byte order
 * @sys_image_guid: system image GUID, in host byte order
 * @max_mr_size: the longest buffer, in bytes, krdma registers on the device
 *	as one MR (a kernel buffer's limit; a user buffer may be several
 *	MRs): the device's own limit, or less where its page list
 *	(@max_fast_reg_page_list_len pages of a size in @page_size_cap, up to
 *	4 MiB) or its driver maps less (rxe: 1022 MiB)
 * @page_size_cap: bitmask of supported page sizes
 * @device_cap_flags: IB_DEVICE_* capability bits as the kernel reports them
 * @vendor_id: IEEE vendor id
 * @vendor_part_id: vendor part id
 * @hw_ver: hardware version
 * @phys_port_cnt: number of ports (first port is 1)
 * @max_qp: QPs per device
 * @max_qp_wr: work requests per queue
 * @max_send_sge: scatter/gather entries per send WR
 * @max_recv_sge: scatter/gather entries per receive WR
 * @max_sge_rd: scatter/gather entries per RDMA READ
 * @max_cq: CQs per device
 * @max_cqe: entries per CQ
 * @max_mr: memory regions per device
 * @max_pd: protection domains per device
 * @max_mw: memory windows per device (0: no memory windows)
 * @max_srq: shared receive queues (0: no SRQ)
 * @max_srq_wr: work requests per SRQ
 * @max_qp_rd_atom: incoming READ/atomic requests in flight per QP
 * @max_qp_init_rd_atom: outgoing READ/atomic requests in flight per QP
 * @max_fast_reg_page_list_len: pages one fast registration can map
 * @max_inline_data: inline bytes a send WR may carry on a QP krdma creates
 * @atomic_cap: &enum krdma_atomic_cap
 * @first_port: index of this device's first entry in the ports array
 */
struct krdma_device_info {
	__u32 dev_index;
	__u32 node_type;
	char name[KRDMA_NAME_MAX];
	__aligned_u64 node_guid;
	__aligned_u64 sys_image_guid;
	__aligned_u64 max_mr_size;
	__aligned_u64 page_size_cap;
	__aligned_u64 device_cap_flags;
	__u32 vendor_id;
	__u32 vendor_part_id;
	__u32 hw_ver;
	__u32 phys_port_cnt;
	__u32 max_qp;
	__u32 max_qp_wr;
	__u32 max_send_sge;
	__u32 max_recv_sge;
	__u32 max_sge_rd;
	__u32 max_cq;
	__u32 max_cqe;
	__u32 max_mr;
	__u32 max_pd;
	__u32 max_mw;
	__u32 max_srq;
	__u32 max_srq_wr;
	__u32 max_qp_rd_atom;
	__u32 max_qp_init_rd_atom;
	__u32 max_fast_reg_page_list_len;
	__u32 max_inline_data;
	__u32 atomic_cap;
	__u32 first_port;
};

/** enum krdma_port_state - &struct krdma_port_info.state (IB_PORT_*) */
enum krdma_port_state {
	KRDMA_PORT_NOP = 0,
	KRDMA_PORT_DOWN = 1,
	KRDMA_PORT_INIT = 2,
	KRDMA_PORT_ARMED = 3,
	KRDMA_PORT_ACTIVE = 4,
	KRDMA_PORT_ACTIVE_DEFER = 5,
};

/** enum krdma_link_layer - &struct krdma_port_info.link_layer */
enum krdma_link_layer {
	KRDMA_LINK_LAYER_UNSPECIFIED = 0,
	KRDMA_LINK_LAYER_INFINIBAND = 1,
	KRDMA_LINK_LAYER_ETHERNET = 2,
};

/**
 * struct krdma_port_info - one port, an entry of %KRDMA_QUERY_DEVICES
 * @dev_index: the device the port belongs to
 * @port_num: port number, from 1
 * @state: &enum krdma_port_state
 * @phys_state: physical port state (IB_PORT_PHYS_STATE_*)
 * @active_mtu: active path MTU in bytes (256 ... 4096)
 * @max_mtu: largest path MTU in bytes
 * @link_layer: &enum krdma_link_layer
 * @lid: base LID (InfiniBand; 0 on RoCE)
 * @sm_lid: subnet manager LID
 * @lmc: LID mask control
 * @max_msg_sz: largest message in bytes
 * @gid_tbl_len: size of the GID table
 * @pkey_tbl_len: size of the P_Key table
 * @active_speed: IB_SPEED_* of the link
 * @active_width: IB_WIDTH_* of the link
 * @first_gid: index of this port's first entry in the GIDs array
 * @num_gids: valid GID entries this port has
 * @netdev: NUL-terminated name of the port's net device ("" if none), as
 *	the RDMA core knows it (an iWARP port's too, which has no RoCE GIDs
 *	to name it)
 * @__reserved: zero
 */
struct krdma_port_info {
	__u32 dev_index;
	__u32 port_num;
	__u32 state;
	__u32 phys_state;
	__u32 active_mtu;
	__u32 max_mtu;
	__u32 link_layer;
	__u32 lid;
	__u32 sm_lid;
	__u32 lmc;
	__u32 max_msg_sz;
	__u32 gid_tbl_len;
	__u32 pkey_tbl_len;
	__u32 active_speed;
	__u32 active_width;
	__u32 first_gid;
	__u32 num_gids;
	char netdev[KRDMA_IFNAME_MAX];
	__u32 __reserved;
};

/** enum krdma_gid_type - &struct krdma_gid_info.gid_type (IB_GID_TYPE_*) */
enum krdma_gid_type {
	KRDMA_GID_TYPE_IB = 0,
	KRDMA_GID_TYPE_ROCE = 1,	/* RoCE v1 */
	KRDMA_GID_TYPE_ROCE_UDP_ENCAP = 2,	/* RoCE v2 */
};

/**
 * struct krdma_gid_info - one valid GID table entry
 * @dev_index: the device
 * @port_num: the port
 * @gid_index: index in the port's GID table (what QPs are given)
 * @gid_type: &enum krdma_gid_type
 * @gid: the GID, network byte order
 * @netdev: NUL-terminated net device the GID belongs to ("" if none)
 */
struct krdma_gid_info {
	__u32 dev_index;
	__u32 port_num;
	__u32 gid_index;
	__u32 gid_type;
	__u8 gid[16];
	char netdev[KRDMA_IFNAME_MAX];
};

/**
 * enum krdma_query_devices_flags - &struct krdma_query_devices.flags
 * @KRDMA_QUERY_DEVICES_ONE: report only the device @dev_index (%ENODEV if it
 *	is not there)
 */
enum krdma_query_devices_flags {
	KRDMA_QUERY_DEVICES_ONE = 1 << 0,
};

/**
 * struct krdma_query_devices - ioctl(KRDMA_QUERY_DEVICES)
 * @size: sizeof(struct krdma_query_devices)
 * @flags: &enum krdma_query_devices_flags
 * @dev_index: with %KRDMA_QUERY_DEVICES_ONE, the device; else must be 0
 * @__reserved: must be 0
 * @num_devices: in, capacity of @devices_uptr; out, devices reported
 * @device_entry_size: in, sizeof(struct krdma_device_info) of the caller
 * @num_ports: in, capacity of @ports_uptr; out, ports reported
 * @port_entry_size: in, sizeof(struct krdma_port_info) of the caller
 * @num_gids: in, capacity of @gids_uptr; out, GID entries reported
 * @gid_entry_size: in, sizeof(struct krdma_gid_info) of the caller
 * @devices_uptr: array of &struct krdma_device_info
 * @ports_uptr: array of &struct krdma_port_info
 * @gids_uptr: array of &struct krdma_gid_info
 *
 * One consistent snapshot: if any capacity is too small the call fails with
 * %EMSGSIZE, writes the three needed counts and nothing else; call with zero
 * capacities first to size the arrays, and again if a device appeared
 * in between.  An entry size below the first version of its struct is
 * %EINVAL.
 *
 * What a session sees and uses is its opener's network namespace's, as
 * for uverbs and rdma_cm: with the RDMA core's namespaces exclusive (rdma
 * system set netns exclusive) only the devices of that namespace, which
 * every command that names another one answers %ENODEV; in any mode only
 * the GIDs on a netdev of that namespace (or on none: InfiniBand), so a
 * connection made with another's GID index is %EINVAL.  The file keeps
 * the namespace it was opened in, wherever it is used from.
 */
struct krdma_query_devices {
	__u32 size;
	__u32 flags;
	__u32 dev_index;
	__u32 __reserved;
	__u32 num_devices;
	__u32 device_entry_size;
	__u32 num_ports;
	__u32 port_entry_size;
	__u32 num_gids;
	__u32 gid_entry_size;
	__aligned_u64 devices_uptr;
	__aligned_u64 ports_uptr;
	__aligned_u64 gids_uptr;
};

#define KRDMA_QUERY_DEVICES _IO(KRDMA_TYPE, KRDMA_CMD_QUERY_DEVICES)

/**
 * DOC: Objects
 *
 * Every object a session creates is named by a __u32 handle that is only
 * meaningful on the fd that created it; closing the fd destroys all.  A
 * handle that an unfetched event names is not given to a new object, even
 * after its own object was destroyed: an event always means the object it
 * happened to.
 *
 * %KRDMA_DESTROY destroys any handle; of two racing destroyers one wins, the
 * other gets %ENOENT.  %KRDMA_BUF_ALLOC makes a kernel buffer, DMA-mapped
 * and fast-registered with the access asked for and no more, filled and
 * read with %KRDMA_BUF_RW or mapped with mmap() (``MAP_SHARED`` only: a
 * private copy would not see what the device writes).
 * %KRDMA_BUF_REG_USER registers the caller's own pages (zero copy), pinned
 * and charged to ``RLIMIT_MEMLOCK``.
 *
 * Memory windows are not offered: %KRDMA_FEATURE_MEMORY_WINDOWS stays
 * clear and the ``MW_BIND`` access flag is %EOPNOTSUPP.  A buffer's access
 * is revoked with ``LOCAL_INV`` or the peer's ``SEND_WITH_INV``, an MR's
 * key at a time.
 */

/**
 * struct krdma_destroy - ioctl(KRDMA_DESTROY)
 * @size: sizeof(struct krdma_destroy)
 * @flags: must be 0
 * @handle: any handle (buffer, connection, listener, AH, SRQ); exactly one
 *	of two racing destroyers succeeds, the other gets %ENOENT, as does
 *	any call on the handle that the winner overtakes.  An SRQ a
 *	connection still receives from is %EBUSY (destroy the connection
 *	first).  Destroying
 *	a buffer deregisters its MR first: WRs still posted with its keys end
 *	in error completions, never in freed memory.  Closing the fd destroys
 *	connections (their QPs) before the buffers they used.
 * @__reserved: must be 0
 */
struct krdma_destroy {
	__u32 size;
	__u32 flags;
	__u32 handle;
	__u32 __reserved;
};

#define KRDMA_DESTROY _IO(KRDMA_TYPE, KRDMA_CMD_DESTROY)

/**
 * enum krdma_access - access flags of a buffer (IB_ACCESS_*)
 * @KRDMA_ACCESS_LOCAL_WRITE: the device may write it (RECV, READ target)
 * @KRDMA_ACCESS_REMOTE_WRITE: peers may RDMA WRITE it (needs LOCAL_WRITE)
 * @KRDMA_ACCESS_REMOTE_READ: peers may RDMA READ it
 * @KRDMA_ACCESS_REMOTE_ATOMIC: peers may run atomics on it (needs LOCAL_WRITE)
 * @KRDMA_ACCESS_MW_BIND: memory windows may be bound to it
 */
enum krdma_access {
	KRDMA_ACCESS_LOCAL_WRITE = 1 << 0,
	KRDMA_ACCESS_REMOTE_WRITE = 1 << 1,
	KRDMA_ACCESS_REMOTE_READ = 1 << 2,
	KRDMA_ACCESS_REMOTE_ATOMIC = 1 << 3,
	KRDMA_ACCESS_MW_BIND = 1 << 4,
};

/**
 * struct krdma_buf_alloc - ioctl(KRDMA_BUF_ALLOC): a kernel buffer
 * @size: sizeof(struct krdma_buf_alloc)
 * @flags: must be 0
 * @dev_index: device whose PD registers the buffer
 * @access: &enum krdma_access bits, least privilege: an unknown bit, or
 *	remote write or atomic access without local write, is %EINVAL;
 *	%KRDMA_ACCESS_MW_BIND %EOPNOTSUPP (as for %KRDMA_BUF_REG_USER)
 * @length: bytes, 1 ... the device's max_mr_size, and at most
 *	max_fast_reg_page_list_len chunks of up to 4 MiB each (one MR maps
 *	the buffer), else %EINVAL
 * @handle: out, the buffer's handle
 * @lkey: out, local key
 * @rkey: out, remote key (0 unless a REMOTE_* access was asked for)
 * @__reserved: must be 0
 * @addr: out, the address peers use with @rkey
 * @mmap_offset: out, offset to mmap(2) the buffer through the fd: a
 *	%MAP_SHARED mapping of at most the buffer's pages from offset 0
 *	(%EINVAL otherwise: a private copy would not see what the device
 *	writes), %ENOENT for an offset that names no buffer of the session
 */
struct krdma_buf_alloc {
	__u32 size;
	__u32 flags;
	__u32 dev_index;
	__u32 access;
	__aligned_u64 length;
	__u32 handle;
	__u32 lkey;
	__u32 rkey;
	__u32 __reserved;
	__aligned_u64 addr;
	__aligned_u64 mmap_offset;
};

#define KRDMA_BUF_ALLOC _IO(KRDMA_TYPE, KRDMA_CMD_BUF_ALLOC)

/**
 * enum krdma_buf_reg_flags - &struct krdma_buf_reg_user.flags
 * @KRDMA_BUF_REG_WINDOW: also allocate a type-2 memory window bound to the
 *	region and hand out the window's rkey instead of the region's;
 *	%EOPNOTSUPP while %KRDMA_FEATURE_MEMORY_WINDOWS is clear (see
 *	there), as is %KRDMA_ACCESS_MW_BIND
 */
enum krdma_buf_reg_flags {
	KRDMA_BUF_REG_WINDOW = 1 << 0,
};

/* The most MRs behind one %KRDMA_BUF_REG_USER buffer. */
#define KRDMA_BUF_REG_MAX_MRS 4096

/**
 * struct krdma_buf_reg_user - ioctl(KRDMA_BUF_REG_USER): zero-copy buffer
 * @size: sizeof(struct krdma_buf_reg_user)
 * @flags: &enum krdma_buf_reg_flags
 * @dev_index: device whose PD registers the buffer
 * @access: &enum krdma_access bits
 * @uaddr: start of the caller's memory; pages are pinned and charged to
 *	RLIMIT_MEMLOCK unless the caller has CAP_IPC_LOCK (%ENOMEM past it)
 * @length: bytes; @uaddr + @length must not wrap (%EINVAL).  One MR maps
 *	the pages it spans when one fast registration can: at most the
 *	device's max_fast_reg_page_list_len MR pages, of the smallest size in
 *	its page_size_cap (up to 1024 pages) that leaves few enough, and at
 *	most &struct krdma_device_info.max_mr_size bytes.  An MR page larger
 *	than a page needs memory that holds it whole: physically contiguous
 *	and aligned as the address is, as huge pages are (hugetlbfs, or
 *	transparent huge pages).  Other memory is registered as several MRs
 *	(%KRDMA_FEATURE_BUFFER_MRS, and a caller whose struct has @num_mrs:
 *	for an older one it is %EINVAL) of the largest pages it is in runs
 *	of, each but the last mapping as many as one registration does (at
 *	most max_fast_reg_page_list_len and max_mr_size; small pages: 2 MiB
 *	on rxe, 1 MiB on siw), up to %KRDMA_BUF_REG_MAX_MRS MRs (%EINVAL
 *	past them).  Those checks come after the pages are pinned and
 *	charged: a length too long may fail with %ENOMEM (RLIMIT_MEMLOCK) or
 *	%EFAULT before its %EINVAL, and its memory is faulted in
 * @handle: out, the buffer's handle
 * @lkey: out, local key (of the first MR)
 * @rkey: out, remote key (of the first MR)
 * @__reserved: must be 0
 * @addr: out, the address peers use with @rkey
 * @mr_length: out, the bytes of the buffer's addresses each MR maps: MR i
 *	maps [i * @mr_length, (i + 1) * @mr_length), clipped to [@addr,
 *	@addr + @length).  Peers address byte n of the buffer at @addr + n
 *	with the rkey of the MR that holds it.  A local SGE's range must lie
 *	in one MR (%EINVAL at post), and so must a WR's remote range (the
 *	peer's device refuses it: a remote access error)
 * @rkeys_uptr: in, an array of @num_rkeys __u32 that receives every MR's
 *	rkey, in order, when the array holds them all (else it is left
 *	alone); without a REMOTE_* access it and @num_rkeys must be 0
 * @num_rkeys: in, entries of @rkeys_uptr.  A buffer of more than one MR
 *	with a REMOTE_* access needs room for all: fewer is %EMSGSIZE, with
 *	@num_mrs written back and nothing registered (its pages were pinned
 *	and are unpinned again).  The count follows the memory's physical
 *	layout, which may change before a second call (huge pages split or
 *	made, pages migrated): a caller retries with the count it is given,
 *	or passes room for %KRDMA_BUF_REG_MAX_MRS.  An entry is a __u32, an
 *	rkey in every RDMA transport, and has no entry_size
 * @num_mrs: out, the buffer's MRs, 1 when one maps it
 */
struct krdma_buf_reg_user {
	__u32 size;
	__u32 flags;
	__u32 dev_index;
	__u32 access;
	__aligned_u64 uaddr;
	__aligned_u64 length;
	__u32 handle;
	__u32 lkey;
	__u32 rkey;
	__u32 __reserved;
	__aligned_u64 addr;
	__aligned_u64 mr_length;
	__aligned_u64 rkeys_uptr;
	__u32 num_rkeys;
	__u32 num_mrs;
};

#define KRDMA_BUF_REG_USER _IO(KRDMA_TYPE, KRDMA_CMD_BUF_REG_USER)

/**
 * enum krdma_buf_rw_flags - &struct krdma_buf_rw.flags
 * @KRDMA_BUF_RW_WRITE: copy from @data_uptr into the buffer (else out of it)
 */
enum krdma_buf_rw_flags {
	KRDMA_BUF_RW_WRITE = 1 << 0,
};

/**
 * struct krdma_buf_rw - ioctl(KRDMA_BUF_RW): copy to or from a kernel buffer
 * @size: sizeof(struct krdma_buf_rw)
 * @flags: &enum krdma_buf_rw_flags
 * @handle: a buffer from %KRDMA_BUF_ALLOC (one of %KRDMA_BUF_REG_USER is
 *	the caller's own memory: %EINVAL)
 * @__reserved: must be 0
 * @offset: byte offset in the buffer
 * @length: bytes; @offset + @length beyond the buffer is %EINVAL
 * @data_uptr: the caller's memory
 */
struct krdma_buf_rw {
	__u32 size;
	__u32 flags;
	__u32 handle;
	__u32 __reserved;
	__aligned_u64 offset;
	__aligned_u64 length;
	__aligned_u64 data_uptr;
};

#define KRDMA_BUF_RW _IO(KRDMA_TYPE, KRDMA_CMD_BUF_RW)

/**
 * DOC: Connections
 *
 * A connection is a QP and its CQ on one device, port and GID, of one
 * transport (RC, UC or UD).  It is made either by hand, with
 * %KRDMA_CONN_CREATE and %KRDMA_CONN_MODIFY's steps RESET, INIT, RTR and
 * RTS with the peer's QPN, PSN and GID, or through rdma_cm over IPv4 or
 * IPv6 with %KRDMA_CM_LISTEN, %KRDMA_CM_CONNECT and %KRDMA_CM_ACCEPT (RC
 * and UC: a CM REQ/REP; UD: SIDR, after which sends that name no address
 * handle go to the server).  %KRDMA_CONN_QUERY reads its state back.
 *
 * %KRDMA_GET_EVENTS returns the session's events, with poll() readiness:
 * the CM events of its rdma_cm ids, and one %KRDMA_EVENT_CONN_ERROR when a
 * connection's QP enters the error state.  %KRDMA_AH_CREATE makes a UD
 * address handle from a peer's GID, %KRDMA_SRQ_CREATE a shared receive
 * queue that connections bind with %KRDMA_CONN_SRQ.
 */

/**
 * DOC: Transports and what they refuse
 *
 * A device's transport is a property of its ports, which krdma reads as
 * the RDMA core's rdma_protocol_*() do, never from the driver's name:
 * InfiniBand (&struct krdma_port_info.link_layer INFINIBAND), RoCE v1 or
 * v2 (link layer Ethernet, by the GIDs' &struct krdma_gid_info.gid_type)
 * or iWARP (&struct krdma_device_info.node_type %KRDMA_NODE_RNIC: an RDMA
 * protocol over a TCP stream, RFC 5040; soft-iWARP, siw, is one).
 * ``krdmactl devices`` shows it, and what the device supports, as the
 * checks below decide it.
 *
 * What a transport or device lacks is refused before anything reaches
 * the device, with:
 *
 * - %EPROTONOSUPPORT: on iWARP, a UC or UD connection (%KRDMA_CM_CONNECT,
 *   %KRDMA_CM_ACCEPT of a UC or UD listener's request, %KRDMA_CONN_CREATE),
 *   and any %KRDMA_CONN_CREATE: an iWARP QP reaches RTS only through the
 *   iWARP CM, which rdma_cm drives, so iWARP connections are RC and made
 *   with %KRDMA_CM_CONNECT and %KRDMA_CM_ACCEPT alone.
 * - %EOPNOTSUPP: on iWARP, immediate data (%KRDMA_OP_SEND_WITH_IMM,
 *   %KRDMA_OP_RDMA_WRITE_WITH_IMM in %KRDMA_POST and %KRDMA_BENCH, and a
 *   %KRDMA_BENCH_SERVER run without %KRDMA_BENCH_CREDITS, whose
 *   protocol's messages are immediate data): iWARP carries none (siw
 *   refuses both at post); on any device
 *   whose &struct krdma_device_info.atomic_cap is NONE (iWARP's), the
 *   atomics.
 * - %EINVAL: an RDMA READ into more SGEs than the device's
 *   &struct krdma_device_info.max_sge_rd (siw: 1), as any WR past its
 *   queue's SGE count.
 *
 * A kernel buffer is one MR, so %KRDMA_BUF_ALLOC of more than
 * &struct krdma_device_info.max_mr_size bytes (at most
 * max_fast_reg_page_list_len pages of the largest page size in
 * page_size_cap, up to 1024 pages; siw: 256 pages of 4 KiB, 1 MiB) is
 * %EINVAL; a %KRDMA_BUF_REG_USER that one MR does not map is several
 * (see there).  On iWARP the buffers of
 * a session are fast-registered on a QP of an rdma_cm connection the
 * module makes, on the first registration,
 * from the device's own IPv4 address (the first address of the netdev of
 * the first active port that has one) to an ephemeral port of it.  There
 * %KRDMA_BUF_ALLOC and %KRDMA_BUF_REG_USER may also fail with %ENETDOWN
 * (no active port with a netdev), %EADDRNOTAVAIL (no IPv4 address on
 * them), %ENETUNREACH (rdma_cm resolves the address to another device:
 * one netdev under two RDMA devices), what binding, listening, resolving
 * or connecting met (%EADDRINUSE, %ETIMEDOUT, %ECONNREFUSED,
 * %EHOSTUNREACH, ...), %EINTR (a signal interrupted the connect), %ENOMEM,
 * or %EIO (the registration failed or timed out; the connection is made
 * anew); a later call tries again.
 */

/**
 * struct krdma_qp_caps - queue sizes of a connection (0 picks a default)
 * @max_send_wr: send queue depth
 * @max_recv_wr: receive queue depth (ignored with an SRQ)
 * @max_send_sge: SGEs per send WR
 * @max_recv_sge: SGEs per receive WR
 * @max_inline_data: inline bytes per send WR
 * @cq_depth: entries of the connection's completion queue (0: room for
 *	both queues as granted; out, what the device made)
 */
struct krdma_qp_caps {
	__u32 max_send_wr;
	__u32 max_recv_wr;
	__u32 max_send_sge;
	__u32 max_recv_sge;
	__u32 max_inline_data;
	__u32 cq_depth;
};

/**
 * enum krdma_conn_flags - flags of %KRDMA_CONN_CREATE, %KRDMA_CM_CONNECT and
 *	%KRDMA_CM_ACCEPT
 * @KRDMA_CONN_NOTIFY: completions wake poll(2) through ib_req_notify_cq
 *	instead of being busy-polled by %KRDMA_POLL
 * @KRDMA_CONN_SRQ: receives come from the SRQ @srq_handle (of this
 *	session, on the connection's device, else %EINVAL; %ENOENT if no such
 *	SRQ); the connection then has no receive queue of its own, so a RECV
 *	posted to it is %EINVAL, and its CQ has room for the whole SRQ
 * @KRDMA_CONN_CM_TIMERS: %KRDMA_CM_CONNECT on RC only (UC or UD %EINVAL,
 *	another command %EOPNOTSUPP): take
 *	@ack_timeout, @retry_cnt, @rnr_retry and @min_rnr_timer as given
 *	instead of the defaults (with the flag clear they must be 0)
 * @KRDMA_CONN_ACCEPT_ASYNC: %KRDMA_CM_ACCEPT only (elsewhere %EOPNOTSUPP),
 *	with @timeout_ms 0 (else %EINVAL): return once the reply is sent
 *	instead of waiting for the handshake to end.  The QP can then take
 *	receives and sends (rdma_cm moved it to RTS); the outcome arrives
 *	as an event of the connection, for %KRDMA_GET_EVENTS: ESTABLISHED,
 *	or REJECTED, UNREACHABLE (the peer never answered the reply; the CM
 *	gives up after its retries, about a minute), CONNECT_ERROR,
 *	DISCONNECTED or DEVICE_REMOVAL.  A peer whose answer to the reply
 *	(the RTU) is lost is connected all the same: the first receive
 *	%KRDMA_POLL returns on the connection (or the QP's COMM_EST event)
 *	ends the handshake as the RTU would, and ESTABLISHED follows.  UD
 *	has no outcome to wait for (the SIDR reply is the whole handshake):
 *	there the flag changes nothing and no event follows.  A server
 *	taking many clients uses it so that one peer whose RTU is lost does
 *	not hold up the rest; how long to wait for the outcome is its own
 *	choice (DESTROY ends it)
 */
enum krdma_conn_flags {
	KRDMA_CONN_NOTIFY = 1 << 0,
	KRDMA_CONN_SRQ = 1 << 1,
	KRDMA_CONN_CM_TIMERS = 1 << 2,
	KRDMA_CONN_ACCEPT_ASYNC = 1 << 3,
};

/**
 * struct krdma_conn_create - ioctl(KRDMA_CONN_CREATE): a QP set up by hand
 * @size: sizeof(struct krdma_conn_create)
 * @flags: &enum krdma_conn_flags
 * @dev_index: device
 * @port_num: port, from 1
 * @gid_index: source GID index (RoCE)
 * @transport: &enum krdma_transport
 * @caps: queue sizes; out, what the device granted
 * @srq_handle: with %KRDMA_CONN_SRQ, the SRQ; without it 0 (else %EINVAL)
 * @handle: out, the connection's handle
 * @qp_num: out, QP number to give the peer
 * @psn: out, initial packet sequence number to give the peer
 * @lid: out, port LID to give the peer (0 on RoCE)
 * @__reserved: must be 0
 * @gid: out, source GID to give the peer
 */
struct krdma_conn_create {
	__u32 size;
	__u32 flags;
	__u32 dev_index;
	__u32 port_num;
	__u32 gid_index;
	__u32 transport;
	struct krdma_qp_caps caps;
	__u32 srq_handle;
	__u32 handle;
	__u32 qp_num;
	__u32 psn;
	__u32 lid;
	__u32 __reserved;
	__u8 gid[16];
};

#define KRDMA_CONN_CREATE _IO(KRDMA_TYPE, KRDMA_CMD_CONN_CREATE)

/**
 * enum krdma_conn_modify_flags - &struct krdma_conn_modify.flags
 * @KRDMA_CONN_MODIFY_RC_ATTRS: take @timeout, @retry_cnt, @rnr_retry,
 *	@min_rnr_timer and @access as given instead of the defaults (with the
 *	flag clear they must be 0)
 */
enum krdma_conn_modify_flags {
	KRDMA_CONN_MODIFY_RC_ATTRS = 1 << 0,
};

/**
 * struct krdma_conn_modify - ioctl(KRDMA_CONN_MODIFY): RESET->INIT->RTR->RTS
 * @size: sizeof(struct krdma_conn_modify)
 * @flags: &enum krdma_conn_modify_flags
 * @handle: a connection from %KRDMA_CONN_CREATE, still in RESET
 * @dest_qp_num: the peer's QP number (RC/UC), 24 bits (else %EINVAL)
 * @dest_psn: the peer's initial PSN (RC/UC), 24 bits (else %EINVAL)
 * @dest_lid: the peer's LID (InfiniBand), 16 bits (else %EINVAL); UD
 *	ignores these three
 * @dest_gid: the peer's GID (RoCE, or IB across subnets)
 * @path_mtu: bytes, 256 ... 4096; 0 takes the port's active MTU
 * @timeout: local ACK timeout exponent, 4.096 us * 2^@timeout, 1 ... 31;
 *	0, which the IB encoding makes "wait forever", is refused (%EINVAL);
 *	default 14 (67 ms)
 * @retry_cnt: transport retries, 0 ... 7; default 7
 * @rnr_retry: RNR retries, 0 ... 7 (7 = forever); default 7
 * @min_rnr_timer: IB_RNR_TIMER_* code, 0 ... 31; default 12 (0.64 ms)
 * @max_rd_atomic: outgoing READ/atomic in flight; 0 takes the device's max
 * @max_dest_rd_atomic: incoming READ/atomic in flight; 0 takes the max
 * @access: remote &enum krdma_access bits the QP allows; default all that
 *	the transport supports (RC: write, read, atomic; UC: write)
 * @qkey: UD Q_Key; 0 takes 0x11111111; values with bit 31 set are
 *	controlled Q_Keys and need CAP_NET_RAW (%EPERM)
 * @__reserved: must be 0
 */
struct krdma_conn_modify {
	__u32 size;
	__u32 flags;
	__u32 handle;
	__u32 dest_qp_num;
	__u32 dest_psn;
	__u32 dest_lid;
	__u8 dest_gid[16];
	__u32 path_mtu;
	__u8 timeout;
	__u8 retry_cnt;
	__u8 rnr_retry;
	__u8 min_rnr_timer;
	__u32 max_rd_atomic;
	__u32 max_dest_rd_atomic;
	__u32 access;
	__u32 qkey;
	__u32 __reserved;
};

#define KRDMA_CONN_MODIFY _IO(KRDMA_TYPE, KRDMA_CMD_CONN_MODIFY)

/** enum krdma_conn_state - &struct krdma_conn_query.state (IB_QPS_*) */
enum krdma_conn_state {
	KRDMA_CONN_RESET = 0,
	KRDMA_CONN_INIT = 1,
	KRDMA_CONN_RTR = 2,
	KRDMA_CONN_RTS = 3,
	KRDMA_CONN_SQD = 4,
	KRDMA_CONN_SQE = 5,
	KRDMA_CONN_ERR = 6,
};

/**
 * struct krdma_conn_query - ioctl(KRDMA_CONN_QUERY)
 * @size: sizeof(struct krdma_conn_query)
 * @flags: must be 0
 * @handle: a connection
 * @state: out, &enum krdma_conn_state; %KRDMA_CONN_ERR after a failed WR.
 *	On iWARP, whose drivers may not report a stream's state, what the
 *	connection knows overrides the driver: %KRDMA_CONN_ERR once the QP
 *	or its CQ failed (a failed WR, an asynchronous error); where the
 *	driver reports none (%KRDMA_CONN_RESET), %KRDMA_CONN_RTS from the
 *	connection's establishment until either side disconnected, then
 *	%KRDMA_CONN_ERR
 * @transport: out, &enum krdma_transport
 * @qp_num: out, local QP number
 * @dest_qp_num: out, the peer's QP number (UD: the one rdma_cm resolved
 *	for a connect, or a %KRDMA_BENCH server run learned, else 0); always
 *	0 on iWARP, whose peers never learn each other's
 * @path_mtu: out, bytes: the connected path's MTU (0 before RTR); UD: the
 *	port's active MTU, the largest message a send may carry
 * @last_wc_status: out, status of the last failed completion that was not
 *	a flush, whoever reaped it (%KRDMA_POLL or a %KRDMA_BENCH run); 0 if none
 * @__reserved: must be 0
 * @sq_psn: out, the PSN of the next packet the QP sends (RC and UC from
 *	RTS on, the error states included; else 0, and always 0 on iWARP,
 *	which has no PSNs): before its first send, the PSN it started from,
 *	which the peer's QP expects (rdma_cm chooses it for a connection it
 *	makes)
 * @rq_psn: out, the PSN the QP expects next from the peer (RC and UC from
 *	RTR on; else 0, and on iWARP): before the peer's first send, the
 *	peer's starting PSN
 */
struct krdma_conn_query {
	__u32 size;
	__u32 flags;
	__u32 handle;
	__u32 state;
	__u32 transport;
	__u32 qp_num;
	__u32 dest_qp_num;
	__u32 path_mtu;
	__u32 last_wc_status;
	__u32 __reserved;
	__u32 sq_psn;
	__u32 rq_psn;
};

#define KRDMA_CONN_QUERY _IO(KRDMA_TYPE, KRDMA_CMD_CONN_QUERY)

/**
 * struct krdma_sockaddr - an IPv4 or IPv6 address and port, host byte order
 * for @family and @port, network byte order for @addr
 * @family: AF_INET or AF_INET6
 * @port: port (rdma_cm port space RDMA_PS_TCP)
 * @scope_id: IPv6 scope id (link-local addresses)
 * @addr: 4 bytes for AF_INET, 16 for AF_INET6; the rest zero
 */
struct krdma_sockaddr {
	__u16 family;
	__u16 port;
	__u32 scope_id;
	__u8 addr[16];
};

/**
 * struct krdma_cm_listen - ioctl(KRDMA_CM_LISTEN)
 * @size: sizeof(struct krdma_cm_listen)
 * @flags: must be 0
 * @addr: local address; the any-address listens on every device; an
 *	address no local interface has is %EADDRNOTAVAIL, a local one no RDMA
 *	device serves (127.0.0.1) %ENODEV, one in use %EADDRINUSE, a family
 *	other than AF_INET/AF_INET6 %EAFNOSUPPORT; a port below 1024 without
 *	CAP_NET_BIND_SERVICE is %EACCES (so is CM_CONNECT's @src port)
 * @backlog: pending CONNECT_REQUESTs (0: default 128; above 1024, 1024,
 *	rdma_ucm's default max_backlog; above 2^31 - 1 %EINVAL)
 * @transport: &enum krdma_transport of the connections it accepts: RC and
 *	UC share the rdma_cm TCP port space (a request of the other transport
 *	is rejected), UD listens in the UDP port space (SIDR)
 * @handle: out, the listener's handle
 * @port: out, the port bound (useful when @addr.port was 0)
 *
 * A listener bound to one device's address ends with that device: its
 * removal queues a DEVICE_REMOVAL event for the listener, as for each
 * rdma_cm connection on it, and stops it; DESTROY then frees the handle.
 */
struct krdma_cm_listen {
	__u32 size;
	__u32 flags;
	struct krdma_sockaddr addr;
	__u32 backlog;
	__u32 transport;
	__u32 handle;
	__u32 port;
};

#define KRDMA_CM_LISTEN _IO(KRDMA_TYPE, KRDMA_CMD_CM_LISTEN)

/**
 * struct krdma_cm_connect - ioctl(KRDMA_CM_CONNECT): resolve and connect
 * @size: sizeof(struct krdma_cm_connect)
 * @flags: &enum krdma_conn_flags
 * @dst: peer address
 * @src: local address, or family 0 to let routing choose
 * @transport: &enum krdma_transport.  RC and UC connect with a CM
 *	REQ/REP exchange.  UD resolves the peer with SIDR: the connect returns
 *	once the peer's reply named its QP and Q_Key, and sends on the
 *	connection that name no address handle go to that peer
 * @timeout_ms: bound on each step: address and route resolution, and the
 *	connection handshake (0: 5000).  On iWARP a handshake that times out
 *	may return later: once the driver ends its MPA exchange
 *	(docs/known-problems.rst)
 * @caps: queue sizes; out, what the device granted
 * @srq_handle: with %KRDMA_CONN_SRQ, the SRQ; without it 0 (else %EINVAL)
 * @private_data_len: bytes of @private_data sent with the request (<= 56)
 * @private_data: up to 56 bytes for the peer's CONNECT_REQUEST event
 * @handle: out, the connection's handle
 * @dev_index: out, the device routing chose
 * @qp_num: out, the local QP number
 * @reject_reason: out, with %ECONNREFUSED: the peer's reject reason
 *	(IB_CM_REJ_*; 28 is a consumer reject, with its private data in
 *	the REJECTED event).  On iWARP the iWARP CM's status, a negative
 *	errno: -ECONNREFUSED for a peer's reject, with its private data in
 *	the REJECTED event; a driver may say otherwise (siw: -ECONNRESET,
 *	without the data, as when the peer went away; see
 *	docs/known-problems.rst); 0 when nobody listens (the TCP connection
 *	itself was refused)
 * @ack_timeout: with %KRDMA_CONN_CM_TIMERS, the local ACK timeout exponent
 *	(4.096 us * 2^n), 1 ... 31; default 14 (67 ms)
 * @retry_cnt: with %KRDMA_CONN_CM_TIMERS, transport retries, 0 ... 7, sent
 *	in the REQ so both QPs use it; default 7.  A device may retry
 *	forever at 7; a smaller count ends in %IB_WC_RETRY_EXC_ERR after
 *	(@retry_cnt + 1) ACK timeouts
 * @rnr_retry: with %KRDMA_CONN_CM_TIMERS, RNR retries, 0 ... 7 (7 =
 *	forever); default 7
 * @min_rnr_timer: with %KRDMA_CONN_CM_TIMERS, IB_RNR_TIMER_* code the
 *	local QP answers RNR NAKs with, 0 ... 31; default 12 (0.64 ms)
 * @__reserved: must be 0
 *
 * A caller whose struct ends before @ack_timeout (its first version) gets
 * the defaults.
 *
 * The call returns once the connection is established (0), or fails:
 * %ETIMEDOUT, %EHOSTUNREACH (address, route, or peer unreachable),
 * %ENETUNREACH or %EADDRNOTAVAIL (no route or source address, from address
 * resolution at once; %EADDRNOTAVAIL also for a wildcard or loopback @dst,
 * 0.0.0.0, 127/8, ::, ::1 or their IPv4-mapped forms, on a RoCE port:
 * rdma_cm would send its messages to that address itself), %ECONNREFUSED
 * (rejected; no listener gives reason 8, invalid service id), %EINTR (a
 * signal; nothing is left behind),
 * %ECONNABORTED (the connection was destroyed meanwhile: a DESTROY that
 * guessed its handle, or its device removed), %ECONNRESET (the peer
 * disconnected before the step ended), %EAFNOSUPPORT (a family other than
 * AF_INET/AF_INET6), %EADDRINUSE (@src's port is taken; on iWARP also a
 * local TCP port the kernel could not bind).
 * Each CM event along the way is also queued for %KRDMA_GET_EVENTS.
 */
struct krdma_cm_connect {
	__u32 size;
	__u32 flags;
	struct krdma_sockaddr dst;
	struct krdma_sockaddr src;
	__u32 transport;
	__u32 timeout_ms;
	struct krdma_qp_caps caps;
	__u32 srq_handle;
	__u32 private_data_len;
	__u8 private_data[56];
	__u32 handle;
	__u32 dev_index;
	__u32 qp_num;
	__s32 reject_reason;
	__u8 ack_timeout;
	__u8 retry_cnt;
	__u8 rnr_retry;
	__u8 min_rnr_timer;
	__u32 __reserved;
};

#define KRDMA_CM_CONNECT _IO(KRDMA_TYPE, KRDMA_CMD_CM_CONNECT)

/**
 * struct krdma_cm_accept - ioctl(KRDMA_CM_ACCEPT) and ioctl(KRDMA_CM_REJECT)
 * @size: sizeof(struct krdma_cm_accept)
 * @flags: &enum krdma_conn_flags (accept only)
 * @handle: the connection handle a CONNECT_REQUEST event carried; until it
 *	is answered it takes ACCEPT, REJECT and DESTROY (any other command
 *	on it is %EINVAL)
 * @srq_handle: with %KRDMA_CONN_SRQ, the SRQ; without it 0 (else %EINVAL)
 * @caps: queue sizes (accept only); out, what the device granted
 * @private_data_len: bytes of @private_data for the peer (accept <= 196,
 *	reject <= 148; UD, whose SIDR reply carries less: <= 136); more is
 *	%EINVAL, and the request can still be answered
 * @timeout_ms: accept waits this long for ESTABLISHED (0: 5000); 0 with
 *	%KRDMA_CONN_ACCEPT_ASYNC.  A reject has no use for @flags
 *	(%EOPNOTSUPP), @srq_handle, @caps or @timeout_ms (%EINVAL unless 0)
 * @qp_num: out (accept), the local QP number
 * @__reserved: must be 0
 * @private_data: reply private data, or the reject's consumer data
 *
 * Accept returns once the connection is established (UD: once the SIDR
 * reply is sent, as no ESTABLISHED follows on the passive side; the
 * connection learns no peer, so its sends name an address handle and QP),
 * or fails with the handshake's outcome: %ETIMEDOUT, %ECONNREFUSED (the
 * peer rejected), %ECONNRESET (it disconnected first), %EHOSTUNREACH,
 * %ECONNABORTED (the connection was destroyed meanwhile), %EINTR.
 * %ETIMEDOUT and %EINTR end the wait, not the handshake: the reply went,
 * the connection stays, and its outcome comes as an event (a second
 * accept is %EINVAL).  With %KRDMA_CONN_ACCEPT_ASYNC it returns
 * once the reply is sent, and the outcome comes as an event; a request its
 * peer already withdrew (its REJ came first) is %EINVAL at once.  On
 * iWARP, whose CM tells the passive side nothing of a peer that leaves
 * before the answer, it is %ECONNRESET once the driver has seen the
 * peer's TCP connection close; before, the accept goes and a
 * DISCONNECTED event follows.
 * Reject answers the request and destroys the handle, also when it fails
 * (the RC/UC CM has ended the request before it sends; a UD reject the CM
 * could not send leaves both); a UD peer sees %ECONNREFUSED with reject reason 2
 * (IB_SIDR_REJECT).
 */
struct krdma_cm_accept {
	__u32 size;
	__u32 flags;
	__u32 handle;
	__u32 srq_handle;
	struct krdma_qp_caps caps;
	__u32 private_data_len;
	__u32 timeout_ms;
	__u32 qp_num;
	__u32 __reserved;
	__u8 private_data[196];
};

#define KRDMA_CM_ACCEPT _IO(KRDMA_TYPE, KRDMA_CMD_CM_ACCEPT)
#define KRDMA_CM_REJECT _IO(KRDMA_TYPE, KRDMA_CMD_CM_REJECT)

/**
 * struct krdma_cm_disconnect - ioctl(KRDMA_CM_DISCONNECT)
 * @size: sizeof(struct krdma_cm_disconnect)
 * @flags: must be 0
 * @handle: a connected rdma_cm connection (RC or UC; UD has nothing to
 *	disconnect: %EOPNOTSUPP, DESTROY ends it)
 * @__reserved: must be 0
 */
struct krdma_cm_disconnect {
	__u32 size;
	__u32 flags;
	__u32 handle;
	__u32 __reserved;
};

#define KRDMA_CM_DISCONNECT _IO(KRDMA_TYPE, KRDMA_CMD_CM_DISCONNECT)

/** enum krdma_event_type - &struct krdma_event.type (RDMA_CM_EVENT_*) */
enum krdma_event_type {
	KRDMA_EVENT_ADDR_RESOLVED = 0,
	KRDMA_EVENT_ADDR_ERROR = 1,
	KRDMA_EVENT_ROUTE_RESOLVED = 2,
	KRDMA_EVENT_ROUTE_ERROR = 3,
	KRDMA_EVENT_CONNECT_REQUEST = 4,
	KRDMA_EVENT_CONNECT_RESPONSE = 5,
	KRDMA_EVENT_CONNECT_ERROR = 6,
	KRDMA_EVENT_UNREACHABLE = 7,
	KRDMA_EVENT_REJECTED = 8,
	KRDMA_EVENT_ESTABLISHED = 9,
	KRDMA_EVENT_DISCONNECTED = 10,
	KRDMA_EVENT_DEVICE_REMOVAL = 11,
	KRDMA_EVENT_MULTICAST_JOIN = 12,
	KRDMA_EVENT_MULTICAST_ERROR = 13,
	KRDMA_EVENT_ADDR_CHANGE = 14,
	KRDMA_EVENT_TIMEWAIT_EXIT = 15,
	/*
	 * krdma's own: a connection's QP entered the error state, seen by
	 * krdma in a failed completion (POLL, POST with KRDMA_POST_POLL,
	 * BENCH) or the device's asynchronous QP error; once per connection
	 */
	KRDMA_EVENT_CONN_ERROR = 64,
	/* krdma's own: events were lost (the queue was full) */
	KRDMA_EVENT_OVERFLOW = 65,
};

/**
 * struct krdma_event - one event, an entry of %KRDMA_GET_EVENTS
 * @type: &enum krdma_event_type
 * @status: the event's status (negative errno, or for REJECTED the reject
 *	reason); CONN_ERROR: the first failed completion's status
 *	(&struct krdma_wc.status, positive), or the device's asynchronous
 *	QP error: -EIO (fatal), -EPROTO (invalid request), -EACCES (access
 *	violation); OVERFLOW: how many events were lost
 * @handle: the connection (for CONNECT_REQUEST: a new one to accept);
 *	0 for OVERFLOW
 * @listener: the listener for CONNECT_REQUEST, else 0
 * @peer: the peer's address
 * @private_data_len: bytes of @private_data the CM delivered; the CM pads
 *	what the peer sent to its message's fixed size (CONNECT_REQUEST 56,
 *	ESTABLISHED 196, REJECTED 148), so a protocol carries its own length
 * @dev_index: CONNECT_REQUEST, with %KRDMA_FEATURE_EVENT_DEVICE: the
 *	device the request came on, whose buffers the new connection's work
 *	requests must use (a listener on a wildcard address hears every
 *	device of the namespace).  Other events, and a module without the
 *	feature: 0, which is also a device's id
 * @private_data: the peer's private data
 */
struct krdma_event {
	__u32 type;
	__s32 status;
	__u32 handle;
	__u32 listener;
	struct krdma_sockaddr peer;
	__u32 private_data_len;
	__u32 dev_index;
	__u8 private_data[196];
};

/**
 * struct krdma_get_events - ioctl(KRDMA_GET_EVENTS)
 * @size: sizeof(struct krdma_get_events)
 * @flags: must be 0
 * @num_events: in, capacity of @events_uptr; out, events returned
 * @event_entry_size: sizeof(struct krdma_event) of the caller
 * @timeout_ms: wait this long for the first event (0: do not wait); the
 *	wait is interruptible (%EINTR).  A device's removal ends it with the
 *	DEVICE_REMOVAL events of the session's rdma_cm objects on it; a session
 *	with none there has no event for it (its calls on the device's objects
 *	answer %ENODEV)
 * @__reserved: must be 0
 * @events_uptr: array of &struct krdma_event
 *
 * poll(2) reports EPOLLIN while an event or completion is pending.
 *
 * Events come in the order they happened.  A session holds at most the
 * module parameter max_events (default 4096) unfetched events; one that
 * finds the queue full is lost, and the first loss queues an OVERFLOW
 * event in its place, whose @status counts the losses until it is fetched
 * or an event is queued behind it (a later loss queues another).  A
 * GET_EVENTS that fails with %EFAULT fetched nothing: the events stay as
 * they were, a marker among them included.
 * (A CONNECT_REQUEST that finds the queue full, or the listener's user at
 * max_objects_per_user (%EDQUOT above), is rejected instead, with no
 * event; CONN_ERROR is queued regardless.)
 *
 * A handle that an unfetched event names is not given to a new object,
 * even once its own object is destroyed (by DESTROY, REJECT, or a CM_CONNECT
 * that failed): events always name the object they happened to, and the
 * handle is free again once the last of them is fetched.
 */
struct krdma_get_events {
	__u32 size;
	__u32 flags;
	__u32 num_events;
	__u32 event_entry_size;
	__u32 timeout_ms;
	__u32 __reserved;
	__aligned_u64 events_uptr;
};

#define KRDMA_GET_EVENTS _IO(KRDMA_TYPE, KRDMA_CMD_GET_EVENTS)

/**
 * DOC: Work requests and completions
 *
 * %KRDMA_POST posts an array of &struct krdma_wr as one chain on a
 * connection (or receives on an SRQ); what the connection's transport lacks
 * is refused before anything is posted.  %KRDMA_POLL reaps the
 * connection's completions in batches, busy or, per connection, after a CQ
 * notification with poll() readiness; %KRDMA_POST_POLL does both in one
 * call.  A WR holds its place in its queue until its completion (or, if
 * unsignaled, a later signaled WR's) is reaped, so a connection's CQ never
 * overruns.
 *
 * An RDMA WRITE's successful completion says that its source may be
 * reused.  On RC, that the data is in the peer's memory the peer learns
 * from its receive of a message posted behind the WRITE on the same
 * connection (a SEND, or where the transport has immediate data a WRITE
 * with it): an iWARP completion may come as soon as the data has left
 * (siw's does).  UC has no acknowledgements: a WRITE the peer refuses or
 * loses is dropped without an error on either side, and the message
 * behind it says only that the WRITE was placed or dropped.
 */

/**
 * struct krdma_sge - one scatter/gather entry
 * @buf_handle: a buffer of this session
 * @__reserved: must be 0
 * @offset: byte offset in the buffer
 * @length: bytes; must stay inside the buffer, and inside one of its MRs
 *	(a user buffer may be several: &struct krdma_buf_reg_user.mr_length)
 * @__reserved2: must be 0
 */
struct krdma_sge {
	__u32 buf_handle;
	__u32 __reserved;
	__aligned_u64 offset;
	__u32 length;
	__u32 __reserved2;
};

/**
 * enum krdma_wr_flags - &struct krdma_wr.flags (IB_SEND_*)
 * @KRDMA_WR_SIGNALED: generate a completion (always for RECV)
 * @KRDMA_WR_INLINE: copy the payload into the WR: SEND, SEND_WITH_IMM,
 *	SEND_WITH_INV, RDMA_WRITE and RDMA_WRITE_WITH_IMM only, up to the
 *	connection's max_inline_data (%EINVAL otherwise: a READ or atomic
 *	result has to land in a buffer)
 * @KRDMA_WR_FENCE: wait for earlier READ/atomics first
 * @KRDMA_WR_SOLICITED: wake a peer that asked for solicited events only
 */
enum krdma_wr_flags {
	KRDMA_WR_SIGNALED = 1 << 0,
	KRDMA_WR_INLINE = 1 << 1,
	KRDMA_WR_FENCE = 1 << 2,
	KRDMA_WR_SOLICITED = 1 << 3,
};

#define KRDMA_MAX_SGE 16

/**
 * struct krdma_wr - one work request
 * @wr_id: returned in the completion
 * @opcode: &enum krdma_opcode
 * @flags: &enum krdma_wr_flags
 * @num_sge: valid entries of @sge, 0 ... %KRDMA_MAX_SGE
 * @imm_data: immediate data (host order), or the rkey for SEND_WITH_INV
 *	and LOCAL_INV
 * @remote_addr: peer address (WRITE, READ, atomics: 8-byte aligned)
 * @rkey: the peer's rkey (one-sided ops)
 * @ah_handle: UD: the address handle of the destination; 0 on a UD
 *	connection made by %KRDMA_CM_CONNECT: the peer rdma_cm resolved (or
 *	on one a %KRDMA_BENCH server run learned its client on)
 * @remote_qpn: UD: destination QP number, 24 bits (else %EINVAL); 0 with
 *	the CM peer: its QP
 * @remote_qkey: UD: destination Q_Key (0: the connection's)
 * @compare_add: atomics: the value to add, or to compare with
 * @swap: compare-and-swap: the value to store on match
 * @sge: scatter/gather list
 *
 * A field the opcode does not use must be 0 (else %EINVAL): @imm_data but
 * for SEND_WITH_IMM, RDMA_WRITE_WITH_IMM, SEND_WITH_INV and LOCAL_INV;
 * @remote_addr and @rkey but for the RDMA and atomic opcodes; @compare_add
 * but for atomics; @swap but for compare-and-swap; @ah_handle, @remote_qpn
 * and @remote_qkey but for SEND and SEND_WITH_IMM on UD; and for a RECV,
 * all of them and @flags.  SGEs past @num_sge are not read.
 *
 * An opcode the transport lacks, or an atomic on a device without atomics
 * (&struct krdma_device_info.atomic_cap NONE), is %EOPNOTSUPP; an atomic
 * whose @remote_addr is not 8-byte aligned is %EINVAL; a UD message over
 * the path MTU is %EMSGSIZE; all are refused before anything is posted.
 * A device whose driver gathers a payload's SGEs in order only (siw; see
 * docs/known-problems.rst) takes, in a send or RDMA WRITE without
 * %KRDMA_WR_INLINE, an SGE after one of another buffer only if that one
 * ends within its buffer's first chunk (for a user buffer: within the
 * page of its first byte), and after one of the same buffer only from
 * its end on: else %EINVAL.  SGEs without bytes are left out there.
 */
struct krdma_wr {
	__aligned_u64 wr_id;
	__u32 opcode;
	__u32 flags;
	__u32 num_sge;
	__u32 imm_data;
	__aligned_u64 remote_addr;
	__u32 rkey;
	__u32 ah_handle;
	__u32 remote_qpn;
	__u32 remote_qkey;
	__aligned_u64 compare_add;
	__aligned_u64 swap;
	struct krdma_sge sge[KRDMA_MAX_SGE];
};

/**
 * enum krdma_post_flags - &struct krdma_post.flags
 * @KRDMA_POST_POLL: once the WRs are posted, poll the connection's CQ as
 *	%KRDMA_POLL would, with &struct krdma_post's num_wcs, wc_entry_size,
 *	timeout_ms and wcs_uptr: one system call to post an operation and reap what
 *	completed (a ping-pong's send and its reply), where %KRDMA_POST then
 *	%KRDMA_POLL make two.  Connections only (%EINVAL for an SRQ).
 */
enum krdma_post_flags {
	KRDMA_POST_POLL = 1 << 0,
};

/**
 * struct krdma_post - ioctl(KRDMA_POST): post WRs as one chain
 * @size: sizeof(struct krdma_post); up to the end of @wrs_uptr is enough
 *	without %KRDMA_POST_POLL
 * @flags: &enum krdma_post_flags
 * @handle: the connection, or an SRQ (RECVs only; %EINVAL for sends)
 * @num_wrs: in, WRs in @wrs_uptr; out, on an error, the index of the WR
 *	the call stopped at.  krdma checks every WR before it posts any: one
 *	it refuses leaves the whole chain unposted.  A WR the device refused
 *	(its queue full: %ENOMEM) comes after WRs it took, which went.  A
 *	call refused as a whole (flags, sizes, handle, too many WRs) gives 0.
 *	On success it is left as it was
 * @wr_entry_size: sizeof(struct krdma_wr) of the caller
 * @__reserved: must be 0
 * @wrs_uptr: array of &struct krdma_wr
 * @num_wcs: %KRDMA_POST_POLL: in, capacity of @wcs_uptr (at least 1); out,
 *	completions returned; without the flag it must be 0, as must every
 *	field after it
 * @wc_entry_size: %KRDMA_POST_POLL: sizeof(struct krdma_wc) of the caller
 * @timeout_ms: %KRDMA_POST_POLL: wait for the first completion this long
 *	(0: do not wait); none by then, or a signal first, is success with
 *	@num_wcs 0 (the WRs went: %EINTR would have the caller post again)
 * @__reserved2: must be 0
 * @wcs_uptr: %KRDMA_POST_POLL: array of &struct krdma_wc
 *
 * With %KRDMA_POST_POLL every check of both halves is made before anything
 * is posted.  An error after the post (%ENODEV or %ENOENT: the device or
 * the connection went while waiting; %EFAULT writing a completion) leaves
 * @num_wrs as it was, which says all the WRs went; their completions are
 * for a later poll, but for those an %EFAULT call had taken from the CQ
 * already (as with %KRDMA_POLL).
 *
 * A queue is full when it holds its depth of WRs (max_send_wr, max_recv_wr,
 * an SRQ's max_wr) whose completions have not been polled: a WR keeps its
 * place until %KRDMA_POLL takes its completion, and a send without
 * %KRDMA_WR_SIGNALED until the completion of a signaled send posted after
 * it is taken.  Devices free a place earlier, when the WR completes; krdma
 * does not, so that the connection's CQ, which holds both queues, cannot
 * overflow.  Posting to a full queue is %ENOMEM for the WRs that did not
 * fit, as a device's full queue is.  Once a completion has failed, every
 * WR queued completes (flushed), and both queues together hold their two
 * depths until those are polled.
 */
struct krdma_post {
	__u32 size;
	__u32 flags;
	__u32 handle;
	__u32 num_wrs;
	__u32 wr_entry_size;
	__u32 __reserved;
	__aligned_u64 wrs_uptr;
	__u32 num_wcs;
	__u32 wc_entry_size;
	__u32 timeout_ms;
	__u32 __reserved2;
	__aligned_u64 wcs_uptr;
};

#define KRDMA_POST _IO(KRDMA_TYPE, KRDMA_CMD_POST)

/**
 * enum krdma_wc_flags - &struct krdma_wc.wc_flags (the values of verbs'
 * IB_WC_* flags of the same names; no other bit is ever set)
 * @KRDMA_WC_GRH: UD: the first 40 bytes received are the GRH
 * @KRDMA_WC_WITH_IMM: @imm_data holds the immediate data
 * @KRDMA_WC_WITH_INVALIDATE: @imm_data holds the rkey the sender
 *	invalidated (SEND_WITH_INV)
 */
enum krdma_wc_flags {
	KRDMA_WC_GRH = 1 << 0,
	KRDMA_WC_WITH_IMM = 1 << 1,
	KRDMA_WC_WITH_INVALIDATE = 1 << 2,
};

/* The GRH in front of every UD receive (%KRDMA_WC_GRH), in bytes. */
#define KRDMA_GRH_LEN 40

/**
 * struct krdma_wc - one completion (struct ib_wc)
 * @wr_id: the WR's @wr_id
 * @status: IB_WC_* status (0: success)
 * @opcode: &enum krdma_opcode of the completion as verbs reports it: a
 *	sender sees SEND for SEND_WITH_IMM and RDMA_WRITE for
 *	RDMA_WRITE_WITH_IMM; a receiver sees RECV, or RDMA_WRITE_WITH_IMM for a
 *	receive consumed by one; valid only with status 0
 * @byte_len: bytes received (RECV; includes the 40-byte GRH on UD)
 * @imm_data: immediate data or invalidated rkey, host order
 * @src_qp: UD: the sender's QP number
 * @wc_flags: &enum krdma_wc_flags
 * @vendor_err: device-specific error
 * @__reserved: zero
 */
struct krdma_wc {
	__aligned_u64 wr_id;
	__u32 status;
	__u32 opcode;
	__u32 byte_len;
	__u32 imm_data;
	__u32 src_qp;
	__u32 wc_flags;
	__u32 vendor_err;
	__u32 __reserved;
};

/**
 * struct krdma_poll - ioctl(KRDMA_POLL): fetch completions
 * @size: sizeof(struct krdma_poll)
 * @flags: must be 0
 * @handle: the connection
 * @num_wcs: in, capacity of @wcs_uptr; out, completions returned
 * @wc_entry_size: sizeof(struct krdma_wc) of the caller
 * @timeout_ms: wait for the first completion this long (0: do not wait)
 * @wcs_uptr: array of &struct krdma_wc
 */
struct krdma_poll {
	__u32 size;
	__u32 flags;
	__u32 handle;
	__u32 num_wcs;
	__u32 wc_entry_size;
	__u32 timeout_ms;
	__aligned_u64 wcs_uptr;
};

#define KRDMA_POLL _IO(KRDMA_TYPE, KRDMA_CMD_POLL)

/**
 * struct krdma_ah_create - ioctl(KRDMA_AH_CREATE): UD address handle
 * @size: sizeof(struct krdma_ah_create)
 * @flags: must be 0
 * @conn_handle: a UD connection (gives device, port and source GID)
 * @dest_lid: the peer's LID (InfiniBand), 16 bits (else %EINVAL)
 * @dest_gid: the peer's GID
 * @handle: out, the address handle
 * @__reserved: must be 0
 *
 * As in verbs, keep an address handle until the completions of the sends
 * that name it: DESTROY waits only for a POST in progress, and a send the
 * device takes up after it may complete in error (and its QP with it).
 */
struct krdma_ah_create {
	__u32 size;
	__u32 flags;
	__u32 conn_handle;
	__u32 dest_lid;
	__u8 dest_gid[16];
	__u32 handle;
	__u32 __reserved;
};

#define KRDMA_AH_CREATE _IO(KRDMA_TYPE, KRDMA_CMD_AH_CREATE)

/**
 * struct krdma_srq_create - ioctl(KRDMA_SRQ_CREATE): shared receive queue
 * @size: sizeof(struct krdma_srq_create)
 * @flags: must be 0
 * @dev_index: device
 * @max_wr: receive WRs (0: 256, or the device's max_srq_wr if smaller),
 *	at most max_srq_wr (%EINVAL); out, what the device granted
 * @max_sge: SGEs per receive WR (0: 1), at most max_srq_sge and
 *	%KRDMA_MAX_SGE (%EINVAL); out, what the device granted
 * @handle: out, the SRQ's handle
 *
 * Connections of the session bind it with %KRDMA_CONN_SRQ.  RECVs are
 * posted with %KRDMA_POST on the SRQ's handle; each completes on the CQ of
 * the connection whose QP consumed it.  A device without SRQs answers
 * %EOPNOTSUPP.
 */
struct krdma_srq_create {
	__u32 size;
	__u32 flags;
	__u32 dev_index;
	__u32 max_wr;
	__u32 max_sge;
	__u32 handle;
};

#define KRDMA_SRQ_CREATE _IO(KRDMA_TYPE, KRDMA_CMD_SRQ_CREATE)

/**
 * DOC: Benchmarks
 *
 * %KRDMA_BENCH runs one measurement in the kernel: the loop that posts and
 * reaps runs there, one ioctl per run, over connections the session has
 * already made.  The peer runs a server or its own client over the wire
 * protocol %KRDMA_BENCH_PROTOCOL names.
 */

/**
 * DOC: Benchmark wire protocol
 *
 * A %KRDMA_BENCH run with %KRDMA_BENCH_SERVER and the client's run on the
 * other end speak a protocol of their own, %KRDMA_BENCH_PROTOCOL, apart
 * from the ABI: both ends' must be the same
 * (&struct krdma_info.bench_protocol).  Its messages are zero-length
 * SEND_WITH_IMMs, named by their immediate data (but with credits, last
 * below).
 *
 * Once its receives are posted the server sends %KRDMA_BENCH_READY_IMM on
 * each connection (UC, UD: once the client asked, below): a client that
 * waits for it never meets an empty receive queue (an RNR NAK, which
 * rdma_cm connections answer with a 655 ms back-off).  It answers the end
 * message, %KRDMA_BENCH_END_IMM (and, with %KRDMA_BENCH_VALIDATE, the last
 * of @iters messages), with a report: immediate data that is how many of
 * that connection's payloads failed the check (0 without
 * %KRDMA_BENCH_VALIDATE; at most %KRDMA_BENCH_REPORT_MAX), and ends once
 * that answer is acknowledged (UC, UD: below).  The client posts a receive
 * for it after its own run (one posted before would be a completion that
 * run did not post: %EBUSY; the server's RNR retries cover the wait) and
 * before it sends the end message, and waits for the answer, not for the
 * end message's completion: the server's QP enters the error state when
 * the run ends, and an RC responder may deliver a message before it sends
 * its acknowledgment.
 *
 * UC and UD drop a message that finds no receive posted, and nothing is
 * resent.  A server on a UC or UD connection answers, instead of saying it
 * is ready unasked, the client's hello: a %KRDMA_BENCH_READY_IMM that the
 * client's caller posts before its run and repeats until the answer comes
 * (the first ones may come before the server's receives).  Hellos before
 * the first payload are answered, one READY for those a step of the loop
 * found (a UD server's first only once the client's address handle is
 * made, see &struct krdma_bench); a ping-pong client's run takes a late
 * READY for what it is, and posts the receive it took again.  The server
 * reports when done (end message, or @iters, validating or not), and
 * answers each repeated end message (the caller repeats it until the
 * report comes: it may have found no receive, or the report may have been
 * lost) until a second (at most half @timeout_ms) after its last report,
 * when the run ends.  A lost ping ends a ping-pong with %ETIMEDOUT; a
 * server counts what arrived, which may be less than what was sent.
 *
 * iWARP has no immediate data, and no RNR retry: a message that finds no
 * receive fails both QPs.  There a SEND run speaks with credits
 * (%KRDMA_BENCH_CREDITS), by RDMA WRITEs into the client's control area
 * (&struct krdma_bench_ctl, one per connection, at the end of the client's
 * @local_buf; its address and rkey are the server's @remote_addr and
 * @remote_rkey).  Once its receives are posted the server writes
 * &struct krdma_bench_ctl.credits, the receives it has posted on the
 * connection so far: that is its READY; and again each time it has posted
 * a quarter of its ring more.  A client's run sends a message only while
 * &struct krdma_bench_ctl.sent, which it keeps, is below the credits: it
 * never outruns the receives, though on iWARP a send completes once it
 * has left, received or not.  The end message is a zero-length SEND (a
 * payload never is), which the client's caller sends once the credits
 * allow; the server writes its answer to &struct krdma_bench_ctl.report,
 * and ends once that write completes (on iWARP: once its bytes have
 * left).  A credits server runs until the end message (@iters 0).  The
 * words are aligned, each written whole by one RDMA WRITE.
 */

/**
 * struct krdma_bench_ctl - a connection's control area of a credits run
 * @credits: written by the server: receives it has posted so far
 * @report: written by the server in answer to the end message:
 *	%KRDMA_BENCH_REPORTED, or'ed with how many payloads failed the check
 *	(at most %KRDMA_BENCH_REPORT_MAX); 0 until then
 * @sent: kept by the client's runs: messages sent so far, by every run on
 *	the connection (the caller zeroes the area before the first, and
 *	adds the end message)
 * @__reserved: reserved, ignored
 *
 * The server's writes come from its kernel; the client's caller reads the
 * area where it mapped the buffer.
 */
struct krdma_bench_ctl {
	__aligned_le64 credits;
	__aligned_le64 report;
	__aligned_le64 sent;
	__aligned_le64 __reserved;
};

/* &struct krdma_bench_ctl.report once the server has answered */
#define KRDMA_BENCH_REPORTED _BITULL(63)

/**
 * enum krdma_bench_flags - &struct krdma_bench.flags
 * @KRDMA_BENCH_LATENCY: latency instead of bandwidth: one operation at a
 *	time; SEND and SEND_WITH_IMM are a ping-pong with a %KRDMA_BENCH_SERVER
 *	peer (a sample is half the round trip), the
 *	other opcodes post one WR and wait for its completion
 * @KRDMA_BENCH_NOTIFY: sleep on CQ notifications instead of busy polling
 *	(every connection must have been created with %KRDMA_CONN_NOTIFY)
 * @KRDMA_BENCH_VALIDATE: the receiving side checks every payload against
 *	krdma_bench_pattern(): the SEND server its receives, the READ client
 *	what it read; the source of every message is then offset 0 of its
 *	buffer, which the caller fills with the pattern
 * @KRDMA_BENCH_SERVER: the passive side of SEND, SEND_WITH_IMM and
 *	RDMA_WRITE_WITH_IMM: keep receives of @msg_size bytes posted, count
 *	(and in latency mode echo) what arrives, until @iters messages per
 *	connection or the client's end message, speaking the protocol of
 *	"Benchmark wire protocol" above
 * @KRDMA_BENCH_PER_CPU: share the connections out among as many threads as
 *	the caller may use online CPUs (its affinity; at most one per
 *	connection): the caller's thread runs the first share, a kernel
 *	thread bound to each other of those CPUs one more, each polling its
 *	own connections' CQs; the figures, @timeout_ms and the failure
 *	reported are the run's.  The kernel threads are the caller's CPU time:
 *	in its cgroups, at its nice.  All runs' kernel threads together are
 *	at most the module's bench_max_threads (default one per CPU): past
 *	it, %EAGAIN.  Where a kernel thread would escape the caller's
 *	cpu.max (5.10 puts it in no cgroup v2 cgroup; from 6.18 cpu.max
 *	throttles no kernel thread), a caller outside the root cpu cgroup
 *	needs CAP_SYS_ADMIN: else %EPERM
 * @KRDMA_BENCH_CREDITS: a SEND run on RC connections, client or server,
 *	that speaks with credits ("Benchmark wire protocol"), as it must on
 *	iWARP.  A client's @local_buf ends in a control area, a &struct
 *	krdma_bench_ctl per connection in the order of @conns_uptr; the slots
 *	are before it.  A server's @remote_addr, @remote_length (at least a
 *	&struct krdma_bench_ctl per connection) and @remote_rkey are its
 *	client's control area
 *
 * UD connections run SEND and SEND_WITH_IMM, all of a run's connections UD,
 * messages of one packet (@msg_size at most the port's MTU).  @local_buf
 * ends in a GRH area, %KRDMA_GRH_LEN bytes per connection in the order of
 * @conns_uptr, where the connection's receives put their GRH (two SGEs a
 * receive: the connections need max_recv_sge 2 where the run receives);
 * the slots are before it.  A client's messages go to the peer the CM
 * resolved (a connection made by %KRDMA_CM_CONNECT).  A server's replies
 * go where the connection's sends go by default; a connection without such
 * a peer (an accepted one: a SIDR request carries no path back) gets the
 * sender of the first hello the run receives, from its GRH, for good
 * (%EHOSTUNREACH if no address handle can be made to it; it is made
 * outside the connection's lock, and a device removal meanwhile waits
 * for it, as for %KRDMA_AH_CREATE).
 */
enum krdma_bench_flags {
	KRDMA_BENCH_LATENCY = 1 << 0,
	KRDMA_BENCH_NOTIFY = 1 << 1,
	KRDMA_BENCH_VALIDATE = 1 << 2,
	KRDMA_BENCH_SERVER = 1 << 3,
	KRDMA_BENCH_PER_CPU = 1 << 4,
	KRDMA_BENCH_CREDITS = 1 << 5,
};

#define KRDMA_BENCH_MAX_CONNS 256
/* Immediate data of the SEND_WITH_IMM that ends a server run. */
#define KRDMA_BENCH_END_IMM 0xffffffffU
/* Immediate data of the message a server sends once it is ready. */
#define KRDMA_BENCH_READY_IMM 0xfffffffeU
/* The largest count a validating server's report carries. */
#define KRDMA_BENCH_REPORT_MAX 0xfffffff0U
/* Latency samples a run can return. */
#define KRDMA_BENCH_MAX_SAMPLES 1048576
/* The version of the benchmark wire protocol (above). */
#define KRDMA_BENCH_PROTOCOL 2

/* Byte @i of every benchmark message, for %KRDMA_BENCH_VALIDATE. */
static inline __u8 krdma_bench_pattern(__u64 i)
{
	return (__u8)(i % 251 + 1);
}

/**
 * struct krdma_bench_progress - what a running benchmark publishes
 * @ops_done: operations completed so far
 * @bytes_done: bytes moved so far
 * @elapsed_ns: time since the run started
 * @updates: incremented at each update (about once a second)
 * @__reserved: zero
 */
struct krdma_bench_progress {
	__aligned_u64 ops_done;
	__aligned_u64 bytes_done;
	__aligned_u64 elapsed_ns;
	__u32 updates;
	__u32 __reserved;
};

/**
 * struct krdma_bench - ioctl(KRDMA_BENCH): run one measurement in the kernel
 * @size: sizeof(struct krdma_bench)
 * @flags: &enum krdma_bench_flags
 * @opcode: &enum krdma_opcode measured: SEND, SEND_WITH_IMM, RDMA_WRITE,
 *	RDMA_WRITE_WITH_IMM, RDMA_READ, ATOMIC_FETCH_ADD, ATOMIC_CMP_SWP
 * @num_conns: entries of @conns_uptr, 1 ... %KRDMA_BENCH_MAX_CONNS; all on
 *	one device, connected, each named once
 * @conns_uptr: array of __u32 connection handles of this session
 * @local_buf: buffer (of the connections' device) used as source or target,
 *	one MR (a user buffer of several is %EINVAL);
 *	messages go to and from consecutive @msg_size slots of it, wrapping
 * @msg_size: bytes per operation, 1 ... the buffer's length (atomics: 8)
 * @remote_addr: the peer buffer's address (one-sided operations)
 * @remote_length: the peer buffer's length; one-sided operations use
 *	consecutive @msg_size slots of it, wrapping (atomics: all at
 *	@remote_addr)
 * @remote_rkey: the peer buffer's rkey.  The three are a one-sided
 *	client's, and a %KRDMA_BENCH_CREDITS server's (its client's control
 *	area): else 0 for SEND, SEND_WITH_IMM and a server (%EINVAL)
 * @tx_depth: WRs in flight per connection (0: 128), at most the send
 *	queue (receive queue for a server)
 * @iters: operations per connection; 0: run for @duration_ms (a server:
 *	until the end message)
 * @duration_ms: run time when @iters is 0
 * @signal_every: request a completion every N send WRs (0: 1; at most
 *	@tx_depth); the last WR of a run is always signaled
 * @inline_size: SEND and RDMA_WRITE payloads up to this size go inline
 *	(at most the connections' max_inline_data)
 * @timeout_ms: give up when nothing completes for this long (0: 5000)
 * @progress_uptr: 0, or a &struct krdma_bench_progress the kernel updates
 *	about once a second while the run goes on
 * @ops_done: out, operations completed (a server: messages received)
 * @bytes_done: out, payload bytes moved
 * @elapsed_ns: out, wall time from the first post to the last completion
 * @peak_bps: out, best bandwidth over 10 ms windows, bytes per second
 * @lat_samples: out, latency samples written to @samples_uptr (0 if they
 *	could not be: %EFAULT, and the array's content is undefined)
 * @__reserved_figures: out, zeroed
 * @cq_polls: out, ib_poll_cq() calls
 * @empty_polls: out, those that found nothing
 * @post_calls: out, ib_post_send() and ib_post_recv() calls
 * @validate_errors: out, messages that failed validation
 * @wc_status: out, IB_WC_* status of the first failed completion (0: none)
 * @failed_conn: out, the connection it came from
 * @samples_uptr: a latency client's: an array of @max_samples
 *	__aligned_u64 where the run writes each operation's latency in ns, in
 *	order (the first @max_samples), for the caller's figures; or 0.  0 in
 *	any other run (%EINVAL)
 * @max_samples: entries of @samples_uptr (0 with it), at most
 *	%KRDMA_BENCH_MAX_SAMPLES (%EINVAL)
 *
 * The run holds the connections and the buffer for its duration, polls
 * their CQs directly and posts WR chains, with no system call per
 * operation.  It stops, with the figures of what was done written back and
 * everything it took released, on a signal (%EINTR), after @timeout_ms
 * without a completion (%ETIMEDOUT), on a failed completion (%EIO, see
 * @wc_status), or when the device goes or one of the objects is destroyed
 * (%ENODEV).  A client's connections are then moved to the error state and
 * their queues flushed; a normal end leaves them connected and idle.  A
 * server's connections always end in the error state, their remaining
 * receives flushed.  While a run has a connection, every completion of its
 * CQ is the run's: %KRDMA_POST, %KRDMA_POLL and another %KRDMA_BENCH on it
 * are %EBUSY (a POLL waiting when the run starts ends so; a POST_POLL's
 * WRs are posted, and it returns what it had), and a completion of a WR
 * the run did not post (one posted before it and not yet reaped) ends the
 * run with %EBUSY, as a failure.  (The run's wr_ids have bit 63, receives,
 * or bit 62, sends, set: a caller's WR with those bits may pass for one.)
 * Other failures: %EINVAL (a value above, a connection of another device,
 * not connected, or receiving from an SRQ in a run that receives;
 * %KRDMA_BENCH_CREDITS: a client's @local_buf that is not a whole number
 * of &struct krdma_bench_ctl long, has no room for the slots before its
 * control areas, lacks %KRDMA_ACCESS_REMOTE_WRITE, or whose memory puts
 * one off an 8-byte boundary or across a page; a server's @iters, a
 * @remote_length short of an area per connection, a connection of less
 * than 8 bytes of max_inline_data, which its words go as;
 * %KRDMA_BENCH_NOTIFY on a busy-polled connection, on UD what
 * &enum krdma_bench_flags asks of UD connections), %EHOSTUNREACH (UD, above),
 * %EOPNOTSUPP (an opcode
 * the transport lacks, or that cannot be measured in the mode asked;
 * %KRDMA_BENCH_CREDITS but on SEND over RC),
 * %ENOMEM (latency samples, the threads of %KRDMA_BENCH_PER_CPU), %EAGAIN
 * and %EPERM (the threads of %KRDMA_BENCH_PER_CPU, above), %EFAULT
 * (@samples_uptr).
 */
struct krdma_bench {
	__u32 size;
	__u32 flags;
	__u32 opcode;
	__u32 num_conns;
	__aligned_u64 conns_uptr;
	__u32 local_buf;
	__u32 msg_size;
	__aligned_u64 remote_addr;
	__aligned_u64 remote_length;
	__u32 remote_rkey;
	__u32 tx_depth;
	__aligned_u64 iters;
	__u32 duration_ms;
	__u32 signal_every;
	__u32 inline_size;
	__u32 timeout_ms;
	__aligned_u64 progress_uptr;
	__aligned_u64 ops_done;
	__aligned_u64 bytes_done;
	__aligned_u64 elapsed_ns;
	__aligned_u64 peak_bps;
	__aligned_u64 lat_samples;
	__aligned_u64 __reserved_figures[7];
	__aligned_u64 cq_polls;
	__aligned_u64 empty_polls;
	__aligned_u64 post_calls;
	__aligned_u64 validate_errors;
	__u32 wc_status;
	__u32 failed_conn;
	__aligned_u64 samples_uptr;
	__aligned_u64 max_samples;
};

#define KRDMA_BENCH _IO(KRDMA_TYPE, KRDMA_CMD_BENCH)

/**
 * DOC: Sessions
 *
 * %KRDMA_QUERY_SESSIONS lists who uses krdma, and with what connections:
 * the sessions of the caller's network namespace opened by a process its
 * PID namespace sees, as ``rdma resource show`` lists resources.
 */

#define KRDMA_COMM_MAX 16	/* TASK_COMM_LEN */

/**
 * struct krdma_session_info - one session (an open /dev/krdma)
 * @session_id: the session's id, unique among open sessions; ids are
 *	handed out cyclically, so a closed session's is not soon reused
 * @pid: the process that opened it, in the caller's PID namespace; 0 once
 *	that process has exited (the file lives on in another)
 * @uid: its real uid, in the caller's user namespace (overflowuid if it
 *	has none there)
 * @num_objects: objects the session holds (every handle's)
 * @num_conns: of them, connections (listed in &struct krdma_conn_info)
 * @__reserved: 0
 * @comm: NUL-terminated name of the opener, as it was at open()
 */
struct krdma_session_info {
	__u32 session_id;
	__u32 pid;
	__u32 uid;
	__u32 num_objects;
	__u32 num_conns;
	__u32 __reserved;
	char comm[KRDMA_COMM_MAX];
};

/**
 * enum krdma_conn_info_flags - &struct krdma_conn_info.flags
 * @KRDMA_CONN_INFO_CM: made by rdma_cm (a connect or an accepted request)
 * @KRDMA_CONN_INFO_ESTABLISHED: rdma_cm: the connection was established
 * @KRDMA_CONN_INFO_DISCONNECTED: rdma_cm: a disconnect was sent or came
 * @KRDMA_CONN_INFO_ERROR: the connection entered the error state (a failed
 *	completion or an asynchronous error; its CONN_ERROR event was queued)
 * @KRDMA_CONN_INFO_BENCH: a %KRDMA_BENCH run has it now
 * @KRDMA_CONN_INFO_NOTIFY: completions are interrupt-driven
 *	(%KRDMA_CONN_NOTIFY), else busy-polled
 * @KRDMA_CONN_INFO_GONE: its verbs objects are gone (its device was
 *	removed, or it is being destroyed): the other fields but
 *	@session_id and @handle are 0
 * @KRDMA_CONN_INFO_STATE_UNKNOWN: the device did not answer a query of the
 *	QP: @state and @dest_qp_num are not known
 */
enum krdma_conn_info_flags {
	KRDMA_CONN_INFO_CM = 1 << 0,
	KRDMA_CONN_INFO_ESTABLISHED = 1 << 1,
	KRDMA_CONN_INFO_DISCONNECTED = 1 << 2,
	KRDMA_CONN_INFO_ERROR = 1 << 3,
	KRDMA_CONN_INFO_BENCH = 1 << 4,
	KRDMA_CONN_INFO_NOTIFY = 1 << 5,
	KRDMA_CONN_INFO_GONE = 1 << 6,
	KRDMA_CONN_INFO_STATE_UNKNOWN = 1 << 7,
};

/**
 * struct krdma_conn_info - one connection of a session
 * @session_id: its session (&struct krdma_session_info.session_id)
 * @handle: its handle in that session
 * @flags: &enum krdma_conn_info_flags
 * @dev_index: the device (&struct krdma_device_info.dev_index)
 * @port_num: the local port
 * @transport: &enum krdma_transport
 * @state: &enum krdma_conn_state, as for %KRDMA_CONN_QUERY
 *	(%KRDMA_CONN_RESET for an rdma_cm request not yet accepted, which has
 *	no QP)
 * @qp_num: the local QP number, as `rdma resource show qp` prints it
 * @dest_qp_num: the peer's QP number, as for %KRDMA_CONN_QUERY
 * @last_wc_status: as for %KRDMA_CONN_QUERY
 * @peer: rdma_cm: the peer's address; else family 0
 * @wrs_posted: work requests handed to the QP, send and receive, by
 *	%KRDMA_POST or a %KRDMA_BENCH run
 * @wcs_reaped: completions taken off its CQ, by %KRDMA_POLL or a
 *	%KRDMA_BENCH run.  With every send signaled, @wrs_posted -
 *	@wcs_reaped is what the device still holds; an unsignaled send
 *	completes with no completion of its own
 */
struct krdma_conn_info {
	__u32 session_id;
	__u32 handle;
	__u32 flags;
	__u32 dev_index;
	__u32 port_num;
	__u32 transport;
	__u32 state;
	__u32 qp_num;
	__u32 dest_qp_num;
	__u32 last_wc_status;
	struct krdma_sockaddr peer;
	__aligned_u64 wrs_posted;
	__aligned_u64 wcs_reaped;
};

/**
 * struct krdma_query_sessions - ioctl(KRDMA_QUERY_SESSIONS)
 * @size: sizeof(struct krdma_query_sessions)
 * @flags: must be 0
 * @num_sessions: in, capacity of @sessions_uptr; out, sessions reported
 * @session_entry_size: in, sizeof(struct krdma_session_info) of the caller
 * @num_conns: in, capacity of @conns_uptr; out, connections reported
 * @conn_entry_size: in, sizeof(struct krdma_conn_info) of the caller
 * @sessions_uptr: array of &struct krdma_session_info, by session id
 * @conns_uptr: array of &struct krdma_conn_info, by session id and handle
 *
 * The sessions the caller may see, as `rdma resource show` shows resources:
 * those opened in the caller's session's network namespace by a process
 * its PID namespace sees (so the caller's own session, if the caller
 * opened it), with their connections.  Sizing follows %KRDMA_QUERY_DEVICES: if a capacity
 * is too small the call fails with %EMSGSIZE and writes only the needed
 * counts; sessions come and go, so call again if they changed in between.
 * An entry size below the first version of its struct is %EINVAL.
 */
struct krdma_query_sessions {
	__u32 size;
	__u32 flags;
	__u32 num_sessions;
	__u32 session_entry_size;
	__u32 num_conns;
	__u32 conn_entry_size;
	__aligned_u64 sessions_uptr;
	__aligned_u64 conns_uptr;
};

#define KRDMA_QUERY_SESSIONS _IO(KRDMA_TYPE, KRDMA_CMD_QUERY_SESSIONS)

#endif /* _UAPI_KRDMA_H */
