/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The commands main.c dispatches, one handler each (iommufd's model).
 */
#ifndef KRDMA_IOCTL_H
#define KRDMA_IOCTL_H

#include "object.h"

int krdma_get_info(struct krdma_session *session, struct krdma_ucmd *ucmd);
int krdma_query_devices(struct krdma_session *session,
			struct krdma_ucmd *ucmd);
int krdma_destroy(struct krdma_session *session, struct krdma_ucmd *ucmd);
int krdma_buf_alloc(struct krdma_session *session, struct krdma_ucmd *ucmd);
int krdma_buf_rw(struct krdma_session *session, struct krdma_ucmd *ucmd);
int krdma_buf_reg_user(struct krdma_session *session,
		       struct krdma_ucmd *ucmd);
int krdma_conn_create(struct krdma_session *session, struct krdma_ucmd *ucmd);
int krdma_conn_modify(struct krdma_session *session, struct krdma_ucmd *ucmd);
int krdma_conn_query(struct krdma_session *session, struct krdma_ucmd *ucmd);
int krdma_post(struct krdma_session *session, struct krdma_ucmd *ucmd);
int krdma_poll(struct krdma_session *session, struct krdma_ucmd *ucmd);
int krdma_ah_create(struct krdma_session *session, struct krdma_ucmd *ucmd);
int krdma_srq_create(struct krdma_session *session, struct krdma_ucmd *ucmd);
int krdma_get_events(struct krdma_session *session, struct krdma_ucmd *ucmd);
int krdma_cm_listen(struct krdma_session *session, struct krdma_ucmd *ucmd);
int krdma_cm_connect(struct krdma_session *session, struct krdma_ucmd *ucmd);
int krdma_cm_accept(struct krdma_session *session, struct krdma_ucmd *ucmd);
int krdma_cm_reject(struct krdma_session *session, struct krdma_ucmd *ucmd);
int krdma_cm_disconnect(struct krdma_session *session,
			struct krdma_ucmd *ucmd);
int krdma_bench(struct krdma_session *session, struct krdma_ucmd *ucmd);
int krdma_query_sessions(struct krdma_session *session,
			 struct krdma_ucmd *ucmd);

#endif /* KRDMA_IOCTL_H */
