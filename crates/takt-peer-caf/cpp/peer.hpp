// The C ABI between takt-peer-caf's Rust side and its C++ benchmarks on CAF
// 0.17. Every function runs one measured repetition in an actor_system of its
// own and has torn that system down (threads joined) when it returns. No C++
// exception crosses it. A run that failed or timed out gives its actors an
// exit message and a grace period, then shuts the system down without
// waiting for actors that did not stop (their memory is leaked, never freed
// while in use).
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {

/// Status codes of the takt_caf_* functions.
enum takt_caf_status : int {
  TAKT_CAF_OK = 0,
  /// The actor system or an actor could not be created (`err` says why).
  TAKT_CAF_SETUP = 1,
  /// An actor reported a failure while the benchmark ran.
  TAKT_CAF_FAILED = 2,
  /// A phase did not finish before the deadline (`err` names it).
  TAKT_CAF_TIMEOUT = 3,
};

/// What one run observed. Every field is written on every return; on a
/// timeout `elapsed_ns` is the time the run had been going.
struct takt_caf_result {
  /// The measured phase, ns (see each function).
  uint64_t elapsed_ns;
  /// customer_ring: creating the N actors until all of them are ready, ns.
  uint64_t registration_ns;
  /// ping_pong: the last delivery's number; skynet: the root's sum; else 0.
  uint64_t value;
  /// Units of measured work completed (exchanges, ring tokens, root sums).
  uint64_t completed;
  /// Deliveries handled, summed from every actor's exit hook.
  uint64_t handled;
  /// ping_pong: deliveries whose sender ran on another thread.
  uint64_t crossed;
  /// Actors whose start hook ran.
  uint64_t started;
  /// Actors whose exit hook (`on_exit`) ran.
  uint64_t stopped;
};

/// CAF_VERSION of the headers these functions were compiled against.
uint32_t takt_caf_version(void);

/// Two event-based actors bounce one message `messages` times. `threads`
/// scheduler threads; with `detached` != 0 each player is spawned detached
/// (a thread of its own). `elapsed_ns` runs from the first send to the
/// handler of the last delivery.
int takt_caf_ping_pong(uint64_t messages, uint32_t threads, int detached,
                       uint64_t deadline_ns, takt_caf_result* out, char* err,
                       size_t err_len);

/// `agents` actors in a ring carry `tokens` tokens once around (token j
/// injected at agent j*N/M). `elapsed_ns` is the ringing phase alone.
int takt_caf_customer_ring(uint64_t agents, uint64_t tokens, uint32_t threads,
                           uint64_t deadline_ns, takt_caf_result* out,
                           char* err, size_t err_len);

/// The skynet tree of `leaves` leaves (a power of ten), fan-out 10.
/// `elapsed_ns` runs from spawning the root to the root's sum.
int takt_caf_skynet(uint64_t leaves, uint32_t threads, uint64_t deadline_ns,
                    takt_caf_result* out, char* err, size_t err_len);

} // extern "C"
