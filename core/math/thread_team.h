// ThreadTeam: a fixed set of threads that run the parts of one task together, what a worker
// with several cores uses to split its batch and its passes over the parameters. The calling
// thread runs part 0 and the team's own threads parts 1..size()-1; Run returns when every part
// has returned, so everything a part wrote is visible to the caller afterwards.
//
//   ThreadTeam team(2);
//   team.Run([&](int part) { Work(slice[part]); });   // both slices done here
//
// Threads are started once, in the constructor; between tasks they spin for up to a millisecond
// (the gaps within and between training steps) and then sleep on a futex. A task must not throw.
// Run may be called by one thread at a time; a team of size 1 runs the task inline.
#pragma once

#include <atomic>
#include <functional>
#include <thread>
#include <vector>

namespace dtrain::math {

class ThreadTeam {
 public:
  explicit ThreadTeam(int size);  // size >= 1: size - 1 threads are started
  ~ThreadTeam();
  ThreadTeam(const ThreadTeam&) = delete;
  ThreadTeam& operator=(const ThreadTeam&) = delete;

  int size() const { return static_cast<int>(threads_.size()) + 1; }

  // Calls part(i) for every i in [0, size()), concurrently, and returns when all have returned.
  void Run(const std::function<void(int)>& part);

 private:
  void Serve(int index);

  std::vector<std::thread> threads_;
  const std::function<void(int)>* task_ = nullptr;
  std::atomic<unsigned> generation_{0};  // bumped once per task; the threads wait on it
  std::atomic<int> pending_{0};          // team threads still running the current task
  std::atomic<bool> stopping_{false};
};

}  // namespace dtrain::math
