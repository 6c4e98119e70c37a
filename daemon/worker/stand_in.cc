#include "daemon/worker/stand_in.h"

#include <signal.h>

#include <cstdio>

namespace dtrain::worker {

int EndLike(int exit_status, int signal, const std::string& where) {
  if (signal == 0) return exit_status;
  std::fprintf(stderr, "%s was killed by signal %d\n", where.c_str(), signal);
  std::fflush(stderr);
  ::signal(signal, SIG_DFL);
  ::raise(signal);
  return 128 + signal;
}

}  // namespace dtrain::worker
