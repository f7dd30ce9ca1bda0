/* SPDX-License-Identifier: BSD-3-Clause */
/* lib/api, UD part: the QueuePair and AddressHandle of a UD QP (api_ud.cpp). */
#pragma once

#include <memory>

#include <droce/droce.h>

#include "engine.h"

namespace droce::api {

/** ProtectionDomain::create_qp for QpType::Ud. pd_qps points at the PD's live-QP count
 * (and keeps the PD's state alive while the QP lives). */
Result<std::unique_ptr<QueuePair>> create_ud_qp(engine::Runtime &rt, engine::Dev &dev, uint32_t pd,
                                                std::shared_ptr<uint32_t> pd_qps,
                                                const QpInitAttr &attr, engine::CqCtx *scq,
                                                engine::CqCtx *rcq);
/** ProtectionDomain::create_ah. */
Result<std::unique_ptr<AddressHandle>> create_ah(engine::Runtime &rt, engine::Dev &dev,
                                                 const AhAttr &attr);

} // namespace droce::api
