#include "launcher_thread.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <mutex>
#include <thread>

extern char** environ;

namespace hipdnn_ep {
namespace {

// `name` as execvp would find it: itself when it has a slash, else the
// first executable file of that name on PATH ("" when there is none).
std::string Resolve(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = getenv("PATH");
  const std::string dirs = path && *path ? path : "/usr/local/bin:/usr/bin:/bin";
  for (size_t start = 0; start <= dirs.size();) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    const std::string dir = end > start ? dirs.substr(start, end - start) : ".";
    const std::string candidate = dir + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return {};
}

// A descriptor at 3 or above (and close-on-exec), so that placing the
// child's stdin, stdout and stderr cannot overwrite another of them.
int AboveStdio(int fd, std::vector<int>& opened) {
  if (fd < 0 || fd > 2) return fd;
  const int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  if (moved >= 0) opened.push_back(moved);
  return moved;
}

// Runs on the launcher thread.  vfork: the child shares our memory until it
// execs, so it only makes system calls on data prepared here (no malloc, no
// locks), as posix_spawn does; fork would copy the page tables of a host
// holding gigabytes of weights and run its atfork handlers.
pid_t Spawn(const ChildSpec& spec, int* error) {
  std::string path = Resolve(spec.argv.empty() ? std::string() : spec.argv[0]);
  if (path.empty()) {
    *error = ENOENT;
    return -1;
  }
  if (path[0] != '/') {  // relative to our working directory, not the child's ("/")
    std::error_code ec;
    path = std::filesystem::absolute(path, ec).string();
  }
  std::vector<char*> argv;
  for (const std::string& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<int> opened;
  const int fds[3] = {AboveStdio(spec.stdin_fd, opened), AboveStdio(spec.stdout_fd, opened),
                      AboveStdio(spec.stderr_fd, opened)};
  const pid_t parent = getpid();
  volatile int child_error = 0;  // written by the child before it gives up (shared memory)
  const pid_t pid = vfork();
  if (pid == 0) {
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    // Killed when the launcher thread ends, which is when the process ends.
    // The parent may have died before the call: then getppid() differs.
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) {
      child_error = errno ? errno : ESRCH;
      _exit(127);
    }
    for (int target = 0; target < 3; ++target) {
      if (fds[target] >= 0 && dup2(fds[target], target) < 0) {  // dup2 clears close-on-exec
        child_error = errno;
        _exit(127);
      }
    }
    // `python -m` puts the working directory first on sys.path: run from "/"
    // so that a folder named like the compiler in the host's cwd cannot shadow it.
    if (chdir("/") != 0) {
      child_error = errno;
      _exit(127);
    }
    execve(path.c_str(), argv.data(), environ);
    child_error = errno;
    _exit(127);
  }
  const int vfork_errno = errno;
  for (int fd : opened) close(fd);
  if (pid < 0) {
    *error = vfork_errno;
    return -1;
  }
  if (child_error != 0) {  // it never ran the program: reap it and report why
    *error = child_error;
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return -1;
  }
  return pid;
}

struct Periodic {
  std::function<void()> fn;
  std::chrono::seconds period;
  std::chrono::steady_clock::time_point next;
};

struct Job {
  const ChildSpec* spec;
  pid_t pid = -1;
  int error = 0;
  bool done = false;
};

// Never destroyed: the thread may still wait on it while static destructors
// run at exit.
struct Launcher {
  std::mutex mu;
  std::condition_variable wake, finished;
  std::deque<Job*> jobs;
  std::vector<Periodic> periodic;
  pid_t owner = -1;  // the process the thread runs in

  void Loop() {
    std::unique_lock<std::mutex> lock(mu);
    for (;;) {
      auto next = std::chrono::steady_clock::now() + std::chrono::hours(1);
      for (const Periodic& p : periodic) next = std::min(next, p.next);
      wake.wait_until(lock, next, [&] { return !jobs.empty() || std::chrono::steady_clock::now() >= next; });
      while (!jobs.empty()) {
        Job* job = jobs.front();
        jobs.pop_front();
        lock.unlock();
        job->pid = Spawn(*job->spec, &job->error);
        lock.lock();
        job->done = true;
        finished.notify_all();
      }
      const auto now = std::chrono::steady_clock::now();
      for (size_t i = 0; i < periodic.size(); ++i) {
        if (periodic[i].next > now) continue;
        periodic[i].next = now + periodic[i].period;
        std::function<void()> fn = periodic[i].fn;
        lock.unlock();
        try {
          fn();
        } catch (...) {  // housekeeping never ends the thread
        }
        lock.lock();
      }
    }
  }
};

// The launcher of this process, its thread started on first use (again in
// a child forked from the host: fork copies only the forking thread).
Launcher& Get() {
  static std::mutex start_mu;
  static Launcher* launcher = nullptr;
  std::lock_guard<std::mutex> lock(start_mu);
  if (launcher == nullptr || launcher->owner != getpid()) {
    launcher = new Launcher();  // one forked from the host is left as it is
    launcher->owner = getpid();
    // The thread runs this library's code until the process ends: keep the
    // library loaded even if the host unloads it.
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&LaunchChild), &info) != 0 && info.dli_fname != nullptr) {
      dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
    }
    Launcher* l = launcher;
    std::thread([l] { l->Loop(); }).detach();
  }
  return *launcher;
}

}  // namespace

pid_t LaunchChild(const ChildSpec& spec, int* error) {
  Launcher& l = Get();
  Job job{&spec};
  std::unique_lock<std::mutex> lock(l.mu);
  l.jobs.push_back(&job);
  l.wake.notify_all();
  l.finished.wait(lock, [&] { return job.done; });
  *error = job.error;
  return job.pid;
}

void EveryFewSeconds(std::function<void()> fn, int period_s) {
  Launcher& l = Get();
  std::lock_guard<std::mutex> lock(l.mu);
  l.periodic.push_back({std::move(fn), std::chrono::seconds(period_s),
                        std::chrono::steady_clock::now() + std::chrono::seconds(period_s)});
  l.wake.notify_all();
}

}  // namespace hipdnn_ep
