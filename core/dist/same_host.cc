#include "core/dist/same_host.h"

#include <errno.h>
#include <sys/stat.h>

#include <cstring>
#include <fstream>
#include <string>

namespace dtrain::dist {
namespace {

Result<std::uint64_t> NamespaceInode(const char* path) {
  struct stat st {};
  if (::stat(path, &st) != 0) {
    return Status::Error(std::string("cannot stat ") + path + ": " + std::strerror(errno));
  }
  return static_cast<std::uint64_t>(st.st_ino);
}

}  // namespace

Result<HostIdentity> ThisHost() {
  HostIdentity id;
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  if (!(boot >> id.boot_id) || id.boot_id.empty()) {
    return Status::Error("cannot read /proc/sys/kernel/random/boot_id");
  }
  Result<std::uint64_t> net = NamespaceInode("/proc/self/ns/net");
  if (!net.ok()) return net.status();
  Result<std::uint64_t> ipc = NamespaceInode("/proc/self/ns/ipc");
  if (!ipc.ok()) return ipc.status();
  id.net_ns = net.value();
  id.ipc_ns = ipc.value();
  return id;
}

bool SameHost(const HostIdentity& a, const HostIdentity& b) {
  return !a.boot_id.empty() && a.net_ns != 0 && a.ipc_ns != 0 && a == b;
}

}  // namespace dtrain::dist
