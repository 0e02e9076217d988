/*
 * orr_rpc_absl.cc - the one C++ file of Orrery: orr_rpc_grpc_init(), which
 * switches off abseil's mutex deadlock detection and starts the gRPC core.
 *
 * The gRPC core locks absl::Mutex on every call. Debian builds abseil
 * without NDEBUG, and there every absl::Mutex lock and unlock also runs the
 * debug-only deadlock detection: it records the lock in a global graph
 * under a global spin lock, shared by every thread of the process. That is
 * a debugging aid for abseil's own users, not a check Orrery relies on (its
 * own locks are pthread mutexes). Off, a small unary call costs halleyd
 * and its client about a tenth less CPU (docs/benchmarks.md, "GetTask from
 * one client thread, and abseil's deadlock detection"). A build of abseil
 * with NDEBUG has it off already; the call then changes nothing.
 */
#include <absl/synchronization/mutex.h>
#include <grpc/grpc.h>

extern "C" {
#include "orr_rpc_codec.h"
}

void orr_rpc_grpc_init(void)
{
    /* an atomic store of the same value on every call after the first */
    absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
    grpc_init();
}
