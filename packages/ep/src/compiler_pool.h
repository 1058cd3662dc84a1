// The compiler processes of one interpreter, shared by every session of the
// host process.  Several requests are in flight at once, each on a process
// of its own: a compile that runs for minutes holds one process, and the
// support checks and compiles of other sessions go to others.
//
// Bounds: at most kMaxProcesses per interpreter, and compiles take at most
// kMaxProcesses - 1 of them, so a support check (or capabilities query)
// always finds a process while compiles hang.  A request that finds none
// free waits for one.  Processes beyond the most recently used one are
// stopped after kIdleSeconds unused (each costs 150+ MB once it has
// imported the compiler).  At most kMaxInterpreters interpreters keep
// processes; another one stops the least recently used idle pool.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "compiler_process.h"

namespace hipdnn_ep {

class CompilerPool : public std::enable_shared_from_this<CompilerPool> {
 public:
  static constexpr size_t kMaxProcesses = 4;
  static constexpr int kIdleSeconds = 60;

  // The pool of `python` in this process (created on first use).
  static std::shared_ptr<CompilerPool> For(const std::string& python);

  explicit CompilerPool(std::string python) : python_(std::move(python)) {}

  struct Slot;

  // A process reserved for one caller until the lease ends.
  class Lease {
   public:
    Lease(Lease&& other) noexcept : pool_(std::move(other.pool_)), slot_(other.slot_) { other.slot_ = nullptr; }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    Lease& operator=(Lease&&) = delete;
    ~Lease();
    CompilerProcess* operator->() const;

   private:
    friend class CompilerPool;
    Lease(std::shared_ptr<CompilerPool> pool, Slot* slot) : pool_(std::move(pool)), slot_(slot) {}
    std::shared_ptr<CompilerPool> pool_;
    Slot* slot_;
  };

  // A free process (the one used last, so that a compile usually meets the
  // process that checked the same graph and kept its lowering), or a new
  // slot within the bounds; waits while there is none.  `compile`: the
  // request is a compile (see the bounds above).
  Lease Acquire(bool compile);

  // Stops the processes unused for kIdleSeconds, but the most recently used.
  void ReapIdle(std::chrono::steady_clock::time_point now);

  // Slots (started or not) and how many are in use now.
  size_t Size();

  struct Slot {
    explicit Slot(const std::string& python) : process(python) {}
    CompilerProcess process;
    bool busy = false;
    bool compile = false;
    std::chrono::steady_clock::time_point last_used{};
  };
 private:
  void Release(Slot* slot);

  std::string python_;
  std::mutex mu_;
  std::condition_variable freed_;
  std::vector<std::unique_ptr<Slot>> slots_;
};

}  // namespace hipdnn_ep
