// Lets go of connections that hold a civetweb worker without a request to
// serve, when workers run short.
//
// civetweb serves each connection on one worker thread from the moment it
// takes it from its queue until the connection closes: through the TLS
// handshake, while the request head arrives, and between keep-alive
// requests. A client that sends its head a byte a second, or stays silent
// after a request, holds a worker all that time, and with as many such
// connections as workers a probe waits in civetweb's queue until one lets
// go (3 s for a head, 0.5 s for a keep-alive wait). More workers only move
// the number an attacker needs; civetweb has no way to read heads before a
// worker takes the connection, nor to hand it one that was accepted and
// read elsewhere.
//
// HeadGuard watches what each worker does. A worker is "waiting" from when
// it takes a connection (or a TLS handshake starts) until a whole request is
// handed to memtrimd's handler, and again from the end of each request until
// the next one (keep-alive). While fewer than `reserve` workers are doing
// anything else (serving, or free for the next connection), every worker
// that has waited at least `min_age` is interrupted: a signal with a handler
// that does nothing and no SA_RESTART makes civetweb's poll() fail with
// EINTR, and civetweb closes that connection. Its worker takes the next
// connection from the queue, where probes and scrapes arrive with their
// whole request at once and are served as soon as a worker takes them.
// A client that finishes its head within `min_age` of a worker taking its
// connection is never let go; without pressure nothing changes at all.
// What is left: the queue moves at up to workers / min_age connections a
// second (192 with the default 48), so a probe that arrives behind more
// than that many slow connections per second of its timeout still waits
// too long (docs/benchmarks.md, section 14).
#pragma once

#include <pthread.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "collectors/common/status.h"

namespace memtrimd {

struct HeadGuardOptions {
  // Interrupt waiting workers while fewer than this many do anything else.
  int reserve = 6;
  // A connection that has waited less than this is left alone: honest
  // clients send a whole head (and finish a TLS handshake) well within it.
  std::chrono::milliseconds min_age{250};
  // After a signal that found its worker between two system calls (and so
  // interrupted nothing), the worker is signalled again after this long.
  std::chrono::milliseconds resignal{100};
};

// What the watchdog knows of one worker (pure, for DueForRelease).
struct WorkerView {
  bool waiting = false;
  std::chrono::steady_clock::time_point since{};         // waiting since
  std::chrono::steady_clock::time_point signalled_at{};  // last signal (epoch: none)
};

// Which workers to interrupt now: none while at least `reserve` of them are
// not waiting; else those that have waited at least min_age and were not
// signalled within `resignal`. Also the time to look again (max() when
// nothing is waiting long enough to become due).
struct ReleaseDecision {
  std::vector<std::size_t> release;
  std::chrono::steady_clock::time_point next_check = std::chrono::steady_clock::time_point::max();
};
ReleaseDecision DueForRelease(const std::vector<WorkerView>& workers,
                              std::chrono::steady_clock::time_point now,
                              const HeadGuardOptions& options);

class HeadGuard {
 public:
  explicit HeadGuard(HeadGuardOptions options) : options_(options) {}
  ~HeadGuard() { Stop(); }
  HeadGuard(const HeadGuard&) = delete;
  HeadGuard& operator=(const HeadGuard&) = delete;

  // Installs the signal's handler (once per process) and starts the
  // watchdog thread.
  Status Start();
  // Joins the watchdog; no signal is sent after it returns.
  void Stop();

  // On a civetweb worker thread: when it starts and ends (civetweb's
  // init_thread and exit_thread callbacks).
  void WorkerStarted();
  void WorkerExiting();
  // On the worker: a connection waits for its head from now on (a
  // connection taken, a TLS handshake begun, a keep-alive request answered).
  // Kept as is when already waiting, so that a handshake and the head after
  // it count as one wait.
  void Waiting();
  // On the worker: a whole request reached the handler; it is not
  // interrupted until the handler returns.
  void Serving();
  // On the worker: the connection ends; the worker is free.
  void Closed();

  // How many times a waiting worker has been interrupted so far (a worker
  // signalled again after a signal that interrupted nothing counts twice).
  uint64_t interrupts() const;

 private:
  struct Worker {
    pthread_t thread;
    WorkerView view;
  };
  Worker* Self();  // REQUIRES: mu_ held
  void Set(bool waiting, bool keep_since);
  void Run();

  const HeadGuardOptions options_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::vector<Worker> workers_;  // GUARDED_BY(mu_)
  bool stop_ = false;            // GUARDED_BY(mu_)
  bool watchdog_busy_ = false;   // GUARDED_BY(mu_): in a timed wait, will look again
  uint64_t interrupts_ = 0;      // GUARDED_BY(mu_)
  std::thread watchdog_;
};

}  // namespace memtrimd
