#include "compiler_pool.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>

#include "launcher_thread.h"

namespace hipdnn_ep {
namespace {

constexpr size_t kMaxInterpreters = 4;
constexpr int kReapPeriodSeconds = 5;

struct Registry {
  std::mutex mu;
  std::map<std::string, std::pair<std::shared_ptr<CompilerPool>, uint64_t>> pools;  // python -> (pool, last use)
  uint64_t clock = 0;
  pid_t owner = -1;
};

// Never destroyed (at exit the pipes close and each process ends on its
// own); replaced, not destroyed, in a child forked from the host, whose
// inherited processes are its parent's.
Registry& Pools() {
  static std::mutex mu;
  static Registry* registry = nullptr;
  std::lock_guard<std::mutex> lock(mu);
  if (registry == nullptr || registry->owner != getpid()) {
    registry = new Registry();
    registry->owner = getpid();
    EveryFewSeconds(
        [] {
          Registry& r = Pools();
          std::vector<std::shared_ptr<CompilerPool>> pools;
          {
            std::lock_guard<std::mutex> lock(r.mu);
            for (auto& [python, entry] : r.pools) pools.push_back(entry.first);
          }
          for (auto& pool : pools) pool->ReapIdle(std::chrono::steady_clock::now());
        },
        kReapPeriodSeconds);
  }
  return *registry;
}

}  // namespace

std::shared_ptr<CompilerPool> CompilerPool::For(const std::string& python) {
  Registry& r = Pools();
  std::shared_ptr<CompilerPool> evicted;  // stopped after the lock is released
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.pools.find(python);
  if (it != r.pools.end()) {
    it->second.second = ++r.clock;
    return it->second.first;
  }
  if (r.pools.size() >= kMaxInterpreters) {
    auto oldest = r.pools.end();
    for (auto p = r.pools.begin(); p != r.pools.end(); ++p) {
      const bool idle = p->second.first.use_count() == 1;  // no lease, no caller holds it
      if (idle && (oldest == r.pools.end() || p->second.second < oldest->second.second)) oldest = p;
    }
    if (oldest != r.pools.end()) {  // else all busy: keep one more for now
      evicted = std::move(oldest->second.first);
      r.pools.erase(oldest);
    }
  }
  auto pool = std::make_shared<CompilerPool>(python);
  r.pools[python] = {pool, ++r.clock};
  return pool;
}

CompilerPool::Lease CompilerPool::Acquire(bool compile) {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    Slot* best = nullptr;
    size_t compiles = 0;
    for (const auto& s : slots_) {
      if (s->busy) {
        compiles += s->compile ? 1 : 0;
        continue;
      }
      if (best == nullptr || s->last_used > best->last_used) best = s.get();
    }
    const bool allowed = !compile || compiles + 1 < kMaxProcesses;
    if (allowed && best == nullptr && slots_.size() < kMaxProcesses) {
      slots_.push_back(std::make_unique<Slot>(python_));
      best = slots_.back().get();
    }
    if (allowed && best != nullptr) {
      best->busy = true;
      best->compile = compile;
      return Lease(shared_from_this(), best);
    }
    freed_.wait(lock);
  }
}

void CompilerPool::Release(Slot* slot) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    slot->busy = false;
    slot->compile = false;
    slot->last_used = std::chrono::steady_clock::now();
  }
  freed_.notify_all();
}

void CompilerPool::ReapIdle(std::chrono::steady_clock::time_point now) {
  std::vector<std::unique_ptr<Slot>> stopped;  // stopped after the lock is released
  {
    std::lock_guard<std::mutex> lock(mu_);
    const Slot* newest = nullptr;
    for (const auto& s : slots_) {
      if (newest == nullptr || s->busy || (!newest->busy && s->last_used > newest->last_used)) newest = s.get();
    }
    for (auto it = slots_.begin(); it != slots_.end();) {
      Slot* s = it->get();
      if (s != newest && !s->busy && now - s->last_used >= std::chrono::seconds(kIdleSeconds)) {
        stopped.push_back(std::move(*it));
        it = slots_.erase(it);
      } else {
        ++it;
      }
    }
  }
}

size_t CompilerPool::Size() {
  std::lock_guard<std::mutex> lock(mu_);
  return slots_.size();
}

CompilerPool::Lease::~Lease() {
  if (slot_ != nullptr) pool_->Release(slot_);
}

CompilerProcess* CompilerPool::Lease::operator->() const { return &slot_->process; }

}  // namespace hipdnn_ep
