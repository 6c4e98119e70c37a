#include "daemon/worker/exit_status.h"

#include <cstdio>

namespace dtrain::worker {

int ExitFailed(const std::string& message) {
  std::fprintf(stderr, "%s\n", message.c_str());
  return kExitFailed;
}

}  // namespace dtrain::worker
