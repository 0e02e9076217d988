/*
 * orr_rpc_absl.cc - the one C++ file of Orrery: orr_rpc_grpc_init(), which
 * switches off abseil's mutex deadlock detection and starts the gRPC core.
 *
 * The gRPC core locks absl::Mutex on every call. Debian builds abseil
 * without NDEBUG, and there every absl::Mutex lock and unlock also runs the
 * debug-only deadlock detection: it records the lock in a global graph
 * under a global spin lock, shared by every thread of the process. That is
 * a debugging aid for abseil's own users, not a check Orrery relies on (its
 * own locks are pthread mutexes). Off, a trivial unary call cost client and
 * server together 12 % less CPU in bench_rpc, halleyd's GetTask a few
 * percent (docs/benchmarks.md, "GetTask from one client thread, and
 * abseil's deadlock detection"). A build of abseil with NDEBUG has it off
 * already; the call then changes nothing.
 */
#include <absl/synchronization/mutex.h>
#include <grpc/grpc.h>

/* declared for C in orr_rpc_codec.h */
extern "C" void orr_rpc_grpc_init(void);

void orr_rpc_grpc_init(void)
{
    /* an atomic store of the same value on every call after the first */
    absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
    grpc_init();
}
