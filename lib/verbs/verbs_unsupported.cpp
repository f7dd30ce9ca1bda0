/* SPDX-License-Identifier: BSD-3-Clause */
/* Every verb Debian 12's libibverbs exports that droce does not implement yet: it fails
 * the way the verb documents failure (NULL or -1 with errno, or the error number
 * returned) with EOPNOTSUPP, never a crash or an unresolved symbol. README.md lists them. */
#include <cerrno>

#include "verbs_objects.h"

namespace droce::verbs {

ibv_mw *unsupported_alloc_mw(ibv_pd *, ibv_mw_type) {
    errno = EOPNOTSUPP;
    return nullptr;
}
int unsupported_dealloc_mw(ibv_mw *) { return errno = EOPNOTSUPP; }
int unsupported_bind_mw(ibv_qp *, ibv_mw *, ibv_mw_bind *) { return errno = EOPNOTSUPP; }

} // namespace droce::verbs

namespace {
template <class T = void *> T null_unsupported() {
    errno = EOPNOTSUPP;
    return nullptr;
}
int minus_one_unsupported() {
    errno = EOPNOTSUPP;
    return -1;
}
int errno_unsupported() { return errno = EOPNOTSUPP; }
} // namespace

extern "C" {

/* ---- CQ resize, SRQ limits, multicast ---- */
int ibv_resize_cq(ibv_cq *, int) { return errno_unsupported(); }
int ibv_modify_srq(ibv_srq *, ibv_srq_attr *, int) { return errno_unsupported(); }
int ibv_attach_mcast(ibv_qp *, const ibv_gid *, uint16_t) { return errno_unsupported(); }
int ibv_detach_mcast(ibv_qp *, const ibv_gid *, uint16_t) { return errno_unsupported(); }
int ibv_resolve_eth_l2_from_gid(ibv_context *, ibv_ah_attr *, uint8_t *, uint16_t *) {
    return minus_one_unsupported();
}

/* ---- MRs beyond ibv_reg_mr ---- */
int ibv_rereg_mr(ibv_mr *, int, ibv_pd *, void *, size_t, int) {
    errno = EOPNOTSUPP;
    return IBV_REREG_MR_ERR_INPUT; /* the old MR stays valid */
}
ibv_mr *ibv_reg_dmabuf_mr(ibv_pd *, uint64_t, size_t, uint64_t, int, int) {
    return null_unsupported<ibv_mr *>();
}

/* ---- ECE, ordering ---- */
int ibv_set_ece(ibv_qp *, ibv_ece *) { return errno_unsupported(); }
int ibv_query_ece(ibv_qp *, ibv_ece *) { return errno_unsupported(); }
int ibv_query_qp_data_in_order(ibv_qp *, ibv_wr_opcode, uint32_t) {
    return 0; /* "not guaranteed in order": the answer for any QP that cannot promise it */
}

/* ---- sharing objects between processes through the kernel's uverbs fd: n/a ---- */
ibv_context *ibv_import_device(int) { return null_unsupported<ibv_context *>(); }
ibv_pd *ibv_import_pd(ibv_context *, uint32_t) { return null_unsupported<ibv_pd *>(); }
void ibv_unimport_pd(ibv_pd *) {}
ibv_mr *ibv_import_mr(ibv_pd *, uint32_t) { return null_unsupported<ibv_mr *>(); }
void ibv_unimport_mr(ibv_mr *) {}
ibv_dm *ibv_import_dm(ibv_context *, uint32_t) { return null_unsupported<ibv_dm *>(); }
void ibv_unimport_dm(ibv_dm *) {}

} // extern "C"

/* ---- libibverbs' private interface (IBVERBS_PRIVATE_34, driver.h): what rdma-core's
 * providers call into. The DPDK mlx4/mlx5 drivers the EAL loads link libmlx4/libmlx5,
 * which need these symbols to load at all (they are bound at load time); no droce
 * device ever reaches a provider, so each only fails. The signatures do not matter to
 * the linker and no installed header declares them. ---- */
#define DROCE_PRIVATE_INT(name)                                                                    \
    extern "C" int name() { return errno_unsupported(); }
#define DROCE_PRIVATE_VOID(name)                                                                   \
    extern "C" void name() {}

DROCE_PRIVATE_INT(execute_ioctl)
DROCE_PRIVATE_INT(ibv_cmd_advise_mr)
DROCE_PRIVATE_INT(ibv_cmd_alloc_dm)
DROCE_PRIVATE_INT(ibv_cmd_alloc_mw)
DROCE_PRIVATE_INT(ibv_cmd_alloc_pd)
DROCE_PRIVATE_INT(ibv_cmd_attach_mcast)
DROCE_PRIVATE_INT(ibv_cmd_close_xrcd)
DROCE_PRIVATE_INT(ibv_cmd_create_ah)
DROCE_PRIVATE_INT(ibv_cmd_create_counters)
DROCE_PRIVATE_INT(ibv_cmd_create_cq)
DROCE_PRIVATE_INT(ibv_cmd_create_cq_ex)
DROCE_PRIVATE_INT(ibv_cmd_create_flow)
DROCE_PRIVATE_INT(ibv_cmd_create_flow_action_esp)
DROCE_PRIVATE_INT(ibv_cmd_create_qp)
DROCE_PRIVATE_INT(ibv_cmd_create_qp_ex)
DROCE_PRIVATE_INT(ibv_cmd_create_qp_ex2)
DROCE_PRIVATE_INT(ibv_cmd_create_rwq_ind_table)
DROCE_PRIVATE_INT(ibv_cmd_create_srq)
DROCE_PRIVATE_INT(ibv_cmd_create_srq_ex)
DROCE_PRIVATE_INT(ibv_cmd_create_wq)
DROCE_PRIVATE_INT(ibv_cmd_dealloc_mw)
DROCE_PRIVATE_INT(ibv_cmd_dealloc_pd)
DROCE_PRIVATE_INT(ibv_cmd_dereg_mr)
DROCE_PRIVATE_INT(ibv_cmd_destroy_ah)
DROCE_PRIVATE_INT(ibv_cmd_destroy_counters)
DROCE_PRIVATE_INT(ibv_cmd_destroy_cq)
DROCE_PRIVATE_INT(ibv_cmd_destroy_flow)
DROCE_PRIVATE_INT(ibv_cmd_destroy_flow_action)
DROCE_PRIVATE_INT(ibv_cmd_destroy_qp)
DROCE_PRIVATE_INT(ibv_cmd_destroy_rwq_ind_table)
DROCE_PRIVATE_INT(ibv_cmd_destroy_srq)
DROCE_PRIVATE_INT(ibv_cmd_destroy_wq)
DROCE_PRIVATE_INT(ibv_cmd_detach_mcast)
DROCE_PRIVATE_INT(ibv_cmd_free_dm)
DROCE_PRIVATE_INT(ibv_cmd_get_context)
DROCE_PRIVATE_INT(ibv_cmd_modify_cq)
DROCE_PRIVATE_INT(ibv_cmd_modify_flow_action_esp)
DROCE_PRIVATE_INT(ibv_cmd_modify_qp)
DROCE_PRIVATE_INT(ibv_cmd_modify_qp_ex)
DROCE_PRIVATE_INT(ibv_cmd_modify_srq)
DROCE_PRIVATE_INT(ibv_cmd_modify_wq)
DROCE_PRIVATE_INT(ibv_cmd_open_qp)
DROCE_PRIVATE_INT(ibv_cmd_open_xrcd)
DROCE_PRIVATE_INT(ibv_cmd_poll_cq)
DROCE_PRIVATE_INT(ibv_cmd_post_recv)
DROCE_PRIVATE_INT(ibv_cmd_post_send)
DROCE_PRIVATE_INT(ibv_cmd_post_srq_recv)
DROCE_PRIVATE_INT(ibv_cmd_query_context)
DROCE_PRIVATE_INT(ibv_cmd_query_device_any)
DROCE_PRIVATE_INT(ibv_cmd_query_mr)
DROCE_PRIVATE_INT(ibv_cmd_query_port)
DROCE_PRIVATE_INT(ibv_cmd_query_qp)
DROCE_PRIVATE_INT(ibv_cmd_query_srq)
DROCE_PRIVATE_INT(ibv_cmd_read_counters)
DROCE_PRIVATE_INT(ibv_cmd_reg_dm_mr)
DROCE_PRIVATE_INT(ibv_cmd_reg_dmabuf_mr)
DROCE_PRIVATE_INT(ibv_cmd_reg_mr)
DROCE_PRIVATE_INT(ibv_cmd_req_notify_cq)
DROCE_PRIVATE_INT(ibv_cmd_rereg_mr)
DROCE_PRIVATE_INT(ibv_cmd_resize_cq)
DROCE_PRIVATE_VOID(verbs_init_cq)
DROCE_PRIVATE_VOID(verbs_set_ops)
DROCE_PRIVATE_VOID(verbs_uninit_context)
/* A provider's constructor registers itself here; droce lists its own devices only. */
DROCE_PRIVATE_VOID(verbs_register_driver_34)
/* Kernel-structure copies (librdmacm uses them after a kernel rdma_cm call: none here). */
DROCE_PRIVATE_VOID(ibv_copy_ah_attr_from_kern)
DROCE_PRIVATE_VOID(ibv_copy_path_rec_from_kern)
DROCE_PRIVATE_VOID(ibv_copy_path_rec_to_kern)
DROCE_PRIVATE_VOID(ibv_copy_qp_attr_from_kern)

extern "C" {
void *_verbs_init_and_alloc_context() { return null_unsupported(); }
void *verbs_open_device() { return null_unsupported(); }
unsigned int __ioctl_final_num_attrs(unsigned int num_attrs, void *) { return num_attrs; }
void __verbs_log(void *, unsigned int, const char *, ...) {}
int ibv_read_ibdev_sysfs_file() { return minus_one_unsupported(); }
/* RDMAV_ALLOW_DISASSOC_DESTROY in the real library; providers read it. */
bool verbs_allow_disassociate_destroy = false;
}
