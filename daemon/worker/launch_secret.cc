#include "daemon/worker/launch_secret.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace dtrain::worker {

Result<nlohmann::json> ReadLaunchSecret() {
  constexpr std::size_t kMaxSecret = 4096;
  std::string text;
  char buffer[512];
  for (;;) {
    const ssize_t n = ::read(STDIN_FILENO, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::Error(std::string("reading the launch secret: ") + std::strerror(errno));
    if (n == 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
    if (text.size() > kMaxSecret) return Status::Error("the launch secret is too large");
  }
  // Standard input becomes /dev/null: fd 0 is never handed to something opened later.
  const int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null >= 0) {
    ::dup2(null, STDIN_FILENO);
    if (null != STDIN_FILENO) ::close(null);
  }
  nlohmann::json secret = nlohmann::json::parse(text, nullptr, false);
  if (!secret.is_object()) {
    return Status::Error("no launch secret on standard input: job processes are started by "
                         "dtraind or dtrain run, never by hand");
  }
  return secret;
}

std::optional<std::string> SecretString(const nlohmann::json& secret, const char* name) {
  const auto it = secret.find(name);
  if (it == secret.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

}  // namespace dtrain::worker
