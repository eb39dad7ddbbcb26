// ping_pong, customer_ring and skynet on CAF 0.17 with the definitions and
// work checks of takt-bench-agents' peers. Event-based (class-based) actors,
// fire-and-forget `send`/`anon_send`, one actor_system per run.
//
// A `board` is the one object shared by all actors of a run: touched in the
// start hook (`make_behavior`, or the link message that makes an actor ready),
// the exit hook (`on_exit`) and when a unit of measured work completes, never
// per message. The calling thread waits on it with a deadline.

#include "peer.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <caf/all.hpp>

#if CAF_VERSION < 1700 || CAF_VERSION >= 1800
#error "takt-peer-caf is written against CAF 0.17"
#endif

namespace {

using clock_type = std::chrono::steady_clock;
using next_atom = caf::atom_constant<caf::atom("next")>;

constexpr uint64_t fanout = 10;

/// How long actors get to stop after an exit message, even past the deadline.
constexpr std::chrono::seconds stop_grace{10};

/// A small number unique to the calling thread, for counting deliveries
/// whose sender ran on another thread.
uint32_t thread_tag() {
  static std::atomic<uint32_t> next{1};
  // Relaxed: only uniqueness matters.
  thread_local const uint32_t tag = next.fetch_add(1, std::memory_order_relaxed);
  return tag;
}

uint64_t ns_between(clock_type::time_point from, clock_type::time_point to) {
  auto d = std::chrono::duration_cast<std::chrono::nanoseconds>(to - from);
  return d.count() < 0 ? 0 : static_cast<uint64_t>(d.count());
}

/// Why a wait ended.
enum class waited { done, failed, timed_out };

/// Counters and completion of one run.
class board {
public:
  board(uint64_t actors, uint64_t units) : actors_(actors), remaining_(units) {}

  /// An actor is ready to handle work.
  void started() {
    if (started_.fetch_add(1, std::memory_order_acq_rel) + 1 == actors_)
      notify();
  }

  /// An actor's exit hook ran after `handled` deliveries (`crossed` of them
  /// sent from another thread).
  void stopped(uint64_t handled, uint64_t crossed) {
    handled_.fetch_add(handled, std::memory_order_relaxed);
    crossed_.fetch_add(crossed, std::memory_order_relaxed);
    // AcqRel: once the driver sees all actors stopped it sees every sum.
    if (stopped_.fetch_add(1, std::memory_order_acq_rel) + 1 == actors_)
      notify();
  }

  /// One unit of work completed with `value`; the last one records the time.
  void complete(uint64_t value) {
    auto at = clock_type::now();
    completed_.fetch_add(1, std::memory_order_relaxed);
    uint64_t r = remaining_.load(std::memory_order_acquire);
    do {
      if (r == 0) {
        fail("more units of work completed than were started");
        return;
      }
    } while (!remaining_.compare_exchange_weak(r, r - 1,
                                               std::memory_order_acq_rel,
                                               std::memory_order_acquire));
    if (r == 1) {
      std::lock_guard<std::mutex> guard{mtx_};
      finish_at_ = at;
      value_ = value;
      finished_ = true;
      cv_.notify_all();
    }
  }

  /// An actor hit an error; the driver's next wait reports it.
  void fail(const char* reason) {
    std::lock_guard<std::mutex> guard{mtx_};
    if (failure_.empty())
      failure_ = reason;
    cv_.notify_all();
  }

  waited all_started(clock_type::time_point deadline) {
    return wait(deadline, [this] { return started_count() >= actors_; });
  }

  waited all_stopped(clock_type::time_point deadline) {
    return wait(deadline, [this] { return stopped_count() >= actors_; });
  }

  waited finished(clock_type::time_point deadline) {
    return wait(deadline, [this] { return finished_; });
  }

  uint64_t started_count() const {
    return started_.load(std::memory_order_acquire);
  }

  uint64_t stopped_count() const {
    return stopped_.load(std::memory_order_acquire);
  }

  clock_type::time_point finish_at() {
    std::lock_guard<std::mutex> guard{mtx_};
    return finish_at_;
  }

  std::string failure() {
    std::lock_guard<std::mutex> guard{mtx_};
    return failure_;
  }

  /// `what` and the counters, for a timeout message.
  std::string describe(const char* what) {
    return std::string{what} + " (" + std::to_string(started_count()) + " of "
           + std::to_string(actors_) + " actors started, "
           + std::to_string(stopped_count()) + " stopped, "
           + std::to_string(remaining_.load(std::memory_order_relaxed))
           + " units of work outstanding)";
  }

  /// Copies the counters into `out` (after all actors stopped).
  void fill(takt_caf_result* out) {
    std::lock_guard<std::mutex> guard{mtx_};
    out->value = value_;
    out->completed = completed_.load(std::memory_order_relaxed);
    out->handled = handled_.load(std::memory_order_relaxed);
    out->crossed = crossed_.load(std::memory_order_relaxed);
    out->started = started_count();
    out->stopped = stopped_count();
  }

private:
  void notify() {
    // Taking the lock orders this notification after a waiter's check of
    // its predicate (made under the lock), so it cannot be lost.
    { std::lock_guard<std::mutex> guard{mtx_}; }
    cv_.notify_all();
  }

  template <class Pred>
  waited wait(clock_type::time_point deadline, Pred done) {
    std::unique_lock<std::mutex> guard{mtx_};
    for (;;) {
      if (!failure_.empty())
        return waited::failed;
      if (done())
        return waited::done;
      if (cv_.wait_until(guard, deadline) == std::cv_status::timeout) {
        if (!failure_.empty())
          return waited::failed;
        return done() ? waited::done : waited::timed_out;
      }
    }
  }

  const uint64_t actors_;
  std::atomic<uint64_t> started_{0};
  std::atomic<uint64_t> stopped_{0};
  std::atomic<uint64_t> handled_{0};
  std::atomic<uint64_t> crossed_{0};
  std::atomic<uint64_t> completed_{0};
  std::atomic<uint64_t> remaining_;
  std::mutex mtx_;
  std::condition_variable cv_;
  bool finished_ = false;
  clock_type::time_point finish_at_;
  uint64_t value_ = 0;
  std::string failure_;
};

/// The driver's side of one run: its board, deadline, result and error text.
struct run_ctx {
  board& b;
  clock_type::time_point since;
  clock_type::time_point deadline;
  takt_caf_result* out;
  char* err;
  size_t err_len;

  int error(int status, const std::string& msg) {
    if (err != nullptr && err_len > 0) {
      size_t n = msg.size() < err_len - 1 ? msg.size() : err_len - 1;
      std::memcpy(err, msg.data(), n);
      err[n] = '\0';
    }
    return status;
  }

  /// Turns a wait's outcome into a status (TAKT_CAF_OK when done).
  int check(waited w, const char* what) {
    switch (w) {
      case waited::done:
        return TAKT_CAF_OK;
      case waited::failed:
        return error(TAKT_CAF_FAILED, b.failure());
      case waited::timed_out:
        out->elapsed_ns = ns_between(since, clock_type::now());
        return error(TAKT_CAF_TIMEOUT, b.describe(what));
    }
    return error(TAKT_CAF_FAILED, "unknown wait outcome");
  }
};

/// The config of a run's actor system: `threads` scheduler threads.
void configure(caf::actor_system_config& cfg, uint32_t threads) {
  cfg.set("scheduler.max-threads", static_cast<caf::config_value::integer>(threads));
}

/// Runs `body(sys, ctx)` in an actor system of its own; catches every
/// exception (a status, never an unwinding across the C ABI). `body` returns
/// a status; when it is not OK the system is told not to wait for actors at
/// shutdown (a stuck run must not hang its teardown).
template <class Body>
int with_system(uint32_t threads, board& b, uint64_t deadline_ns,
                takt_caf_result* out, char* err, size_t err_len, Body body) {
  *out = takt_caf_result{};
  if (err != nullptr && err_len > 0)
    err[0] = '\0';
  auto now = clock_type::now();
  run_ctx ctx{b, now, now + std::chrono::nanoseconds(deadline_ns), out, err,
              err_len};
  if (threads == 0)
    return ctx.error(TAKT_CAF_SETUP, "scheduler threads must be at least 1");
  try {
    caf::actor_system_config cfg;
    configure(cfg, threads);
    caf::actor_system sys{cfg};
    int status = TAKT_CAF_OK;
    try {
      status = body(sys, ctx);
    } catch (const std::exception& e) {
      status = ctx.error(TAKT_CAF_FAILED, std::string{"exception: "} + e.what());
    } catch (...) {
      status = ctx.error(TAKT_CAF_FAILED, "unknown exception");
    }
    if (status != TAKT_CAF_OK)
      sys.await_actors_before_shutdown(false);
    b.fill(out);
    return status;
  } catch (const std::exception& e) {
    return ctx.error(TAKT_CAF_SETUP, std::string{"actor system: "} + e.what());
  } catch (...) {
    return ctx.error(TAKT_CAF_SETUP, "actor system: unknown exception");
  }
}

/// Sends every actor in `actors` an exit message and waits for all exit
/// hooks; `status` is the measured phase's, kept if it already failed.
int stop_all(run_ctx& ctx, std::vector<caf::actor>& actors, int status) {
  for (auto& a : actors)
    caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  actors.clear();
  // A run that failed or timed out still gets a grace period to stop.
  auto until = std::max(ctx.deadline, clock_type::now() + stop_grace);
  waited stopped = ctx.b.all_stopped(until);
  // The first failure's status and message are the ones reported.
  return status != TAKT_CAF_OK ? status : ctx.check(stopped, "all actors to stop");
}

// ------------------------------------------------------------------ ping_pong

/// One player: learns its partner from a `next` message, then answers every
/// ball (delivery number, sender's thread tag) with the next number.
class player : public caf::event_based_actor {
public:
  player(caf::actor_config& cfg, board* b, uint64_t target)
      : caf::event_based_actor(cfg), board_(b), target_(target) {}

  caf::behavior make_behavior() override {
    return {
      [this](next_atom, caf::actor partner) {
        partner_ = std::move(partner);
        board_->started();
      },
      [this](uint64_t n, uint32_t from) {
        uint32_t here = thread_tag();
        ++handled_;
        crossed_ += from != here ? 1 : 0;
        if (n >= target_)
          board_->complete(n);
        else if (partner_)
          send(partner_, n + 1, here);
        else
          board_->fail("a ball arrived before the player was linked");
      },
    };
  }

  void on_exit() override {
    board_->stopped(handled_, crossed_);
    // The players hold each other: break the cycle so both are freed.
    partner_ = nullptr;
  }

private:
  board* board_;
  uint64_t target_;
  uint64_t handled_ = 0;
  uint64_t crossed_ = 0;
  caf::actor partner_;
};

// -------------------------------------------------------------- customer_ring

/// One ring member: forwards a token (its hop count) to the next member, or
/// retires it after `agents` hops.
class customer : public caf::event_based_actor {
public:
  customer(caf::actor_config& cfg, board* b, uint64_t agents, caf::actor next)
      : caf::event_based_actor(cfg), board_(b), agents_(agents),
        next_(std::move(next)) {}

  caf::behavior make_behavior() override {
    // Ready once it knows its successor (the first member learns it from
    // a `next` message, handled before any token: mailboxes are FIFO).
    if (next_)
      board_->started();
    return {
      [this](next_atom, caf::actor next) {
        next_ = std::move(next);
        board_->started();
      },
      [this](uint64_t hops) {
        ++handled_;
        ++hops;
        if (hops == agents_)
          board_->complete(0);
        else if (next_)
          send(next_, hops);
        else
          board_->fail("a token arrived before the ring was closed");
      },
    };
  }

  void on_exit() override {
    board_->stopped(handled_, 0);
    // The ring is a reference cycle: break it so every member is freed.
    next_ = nullptr;
  }

private:
  board* board_;
  uint64_t agents_;
  uint64_t handled_ = 0;
  caf::actor next_;
};

// --------------------------------------------------------------------- skynet

/// One skynet node: a leaf reports its number; an inner node spawns ten
/// children, sums their ten reports and reports the sum. The root (no
/// parent) completes the run with its sum.
class node : public caf::event_based_actor {
public:
  node(caf::actor_config& cfg, board* b, caf::actor parent, uint64_t base,
       uint64_t leaves)
      : caf::event_based_actor(cfg), board_(b), parent_(std::move(parent)),
        base_(base), leaves_(leaves) {}

  caf::behavior make_behavior() override {
    board_->started();
    if (leaves_ == 1) {
      report(base_);
      quit();
      return {};
    }
    uint64_t child = leaves_ / fanout;
    auto self = caf::actor_cast<caf::actor>(this);
    for (uint64_t i = 0; i < fanout; ++i)
      spawn<node>(board_, self, base_ + i * child, child);
    pending_ = fanout;
    return {
      [this](uint64_t value) {
        ++handled_;
        sum_ += value;
        if (--pending_ == 0) {
          report(sum_);
          quit();
        }
      },
    };
  }

  void on_exit() override {
    board_->stopped(handled_, 0);
    parent_ = nullptr;
  }

private:
  void report(uint64_t value) {
    if (parent_)
      send(parent_, value);
    else
      board_->complete(value);
  }

  board* board_;
  caf::actor parent_;
  uint64_t base_;
  uint64_t leaves_;
  uint64_t sum_ = 0;
  uint64_t pending_ = 0;
  uint64_t handled_ = 0;
};

uint64_t skynet_nodes(uint64_t leaves) {
  uint64_t total = 0;
  for (uint64_t level = leaves;; level /= fanout) {
    total += level;
    if (level <= 1)
      return total;
  }
}

bool power_of_ten(uint64_t n) {
  if (n == 0)
    return false;
  while (n % fanout == 0)
    n /= fanout;
  return n == 1;
}

} // namespace

extern "C" {

uint32_t takt_caf_version(void) {
  return CAF_VERSION;
}

int takt_caf_ping_pong(uint64_t messages, uint32_t threads, int detached,
                       uint64_t deadline_ns, takt_caf_result* out, char* err,
                       size_t err_len) {
  board b{2, 1};
  return with_system(
    threads, b, deadline_ns, out, err, err_len,
    [&](caf::actor_system& sys, run_ctx& ctx) {
      if (messages == 0)
        return ctx.error(TAKT_CAF_SETUP, "messages must be at least 1");
      std::vector<caf::actor> players;
      if (detached != 0) {
        players.push_back(sys.spawn<player, caf::detached>(&b, messages));
        players.push_back(sys.spawn<player, caf::detached>(&b, messages));
      } else {
        players.push_back(sys.spawn<player>(&b, messages));
        players.push_back(sys.spawn<player>(&b, messages));
      }
      caf::anon_send(players[0], next_atom::value, players[1]);
      caf::anon_send(players[1], next_atom::value, players[0]);
      int status = ctx.check(b.all_started(ctx.deadline), "both players to link");
      if (status == TAKT_CAF_OK) {
        auto t0 = clock_type::now();
        caf::anon_send(players[0], uint64_t{1}, thread_tag());
        status = ctx.check(b.finished(ctx.deadline), "the last delivery");
        if (status == TAKT_CAF_OK)
          out->elapsed_ns = ns_between(t0, b.finish_at());
      }
      return stop_all(ctx, players, status);
    });
}

int takt_caf_customer_ring(uint64_t agents, uint64_t tokens, uint32_t threads,
                           uint64_t deadline_ns, takt_caf_result* out,
                           char* err, size_t err_len) {
  board b{agents, tokens};
  return with_system(
    threads, b, deadline_ns, out, err, err_len,
    [&](caf::actor_system& sys, run_ctx& ctx) {
      if (agents == 0 || tokens == 0 || tokens > agents)
        return ctx.error(TAKT_CAF_SETUP, "need 1 <= tokens <= agents");
      std::vector<caf::actor> ring(agents);
      auto since = clock_type::now();
      // Member 0 first, without a successor; then N-1 down to 1, each
      // knowing its successor; then member 0 learns member 1 (itself if N=1).
      ring[0] = sys.spawn<customer>(&b, agents, caf::actor{});
      for (uint64_t k = agents - 1; k >= 1; --k)
        ring[k] = sys.spawn<customer>(&b, agents, ring[k + 1 == agents ? 0 : k + 1]);
      caf::anon_send(ring[0], next_atom::value, ring[agents == 1 ? 0 : 1]);
      int status = ctx.check(b.all_started(ctx.deadline), "all ring members to start");
      if (status == TAKT_CAF_OK) {
        out->registration_ns = ns_between(since, clock_type::now());
        auto t0 = clock_type::now();
        for (uint64_t j = 0; j < tokens; ++j) {
          auto start = static_cast<uint64_t>(
            (static_cast<unsigned __int128>(j) * agents) / tokens);
          caf::anon_send(ring[start], uint64_t{0});
        }
        status = ctx.check(b.finished(ctx.deadline), "every token to retire");
        if (status == TAKT_CAF_OK)
          out->elapsed_ns = ns_between(t0, b.finish_at());
      }
      return stop_all(ctx, ring, status);
    });
}

int takt_caf_skynet(uint64_t leaves, uint32_t threads, uint64_t deadline_ns,
                    takt_caf_result* out, char* err, size_t err_len) {
  bool valid = power_of_ten(leaves);
  board b{valid ? skynet_nodes(leaves) : 1, 1};
  return with_system(
    threads, b, deadline_ns, out, err, err_len,
    [&](caf::actor_system& sys, run_ctx& ctx) {
      if (!valid)
        return ctx.error(TAKT_CAF_SETUP, "leaves must be a power of ten");
      auto since = clock_type::now();
      // The root's handle is dropped at once: the tree keeps itself alive
      // (every child holds its parent) and every node quits on its own.
      sys.spawn<node>(&b, caf::actor{}, uint64_t{0}, leaves);
      int status = ctx.check(b.finished(ctx.deadline), "the root's sum");
      if (status == TAKT_CAF_OK)
        out->elapsed_ns = ns_between(since, b.finish_at());
      if (status != TAKT_CAF_OK)
        return status;
      return ctx.check(b.all_stopped(ctx.deadline), "all nodes to stop");
    });
}

} // extern "C"
