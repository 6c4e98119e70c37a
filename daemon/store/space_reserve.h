// SpaceReserve: a file of fixed size kept beside the store (`dtrain.db-reserve`), so that when the
// disk fills up the store can give that space back and still record what happened — a job's
// state change and its reason, the log lines before it — instead of losing those too. Large
// writes (checkpoints) never use it: they fail with the disk full, and the previous checkpoint
// stays.
//
//   SpaceReserve reserve(db_path + "-reserve", 4 << 20);
//   reserve.Make();                               // at start
//   reserve.MakeIfRoom();                         // again once space is back
//   if (DiskFull(code) && reserve.Release()) ...  // retry the small write once
//
// The file survives restarts (a daemon that starts on a full disk still finds it). One thread at
// a time (the store's writer thread).
#pragma once

#include <cstdint>
#include <string>

namespace dtrain::store {

class SpaceReserve {
 public:
  // `bytes` 0: no reserve is kept (Make and Release do nothing).
  SpaceReserve(std::string path, std::uint64_t bytes);

  // Allocates the file to its full size unless it already is. False, leaving no partial file,
  // when the space is not there (or the directory cannot hold the file).
  bool Make();
  // Make, but only when the file system has room for the reserve twice over: space that came
  // back, not the little that giving the reserve back left free (one statvfs when there is not).
  bool MakeIfRoom();
  // Removes the file, giving its space back. False when no reserve was held.
  bool Release();
  bool held() const { return held_; }
  std::uint64_t bytes() const { return bytes_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::uint64_t bytes_;
  bool held_ = false;
};

}  // namespace dtrain::store
