/* SPDX-License-Identifier: BSD-3-Clause */
/* lib/api internals for other parts of lib/api: the engine objects behind public ones. */
#pragma once

#include <droce/droce.h>

#include "engine.h"

namespace droce::api {

/** The runtime and engine device behind dev, a device opened by engine. False when dev
 * is not one of engine's. */
bool engine_of(Engine &engine, Device &dev, engine::Runtime **rt, engine::Dev **d);

/** The engine CQ behind cq (tests: which completion path it takes); nullptr when cq is
 * not droce's. */
engine::CqCtx *cq_of(CompletionQueue &cq);

} // namespace droce::api
