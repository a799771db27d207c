#include "tests/support/cgroup.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

namespace vigil::support {

std::string cgroup2_root() {
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    // "<id> <parent> <major:minor> <root> <mount point> ... - cgroup2 ..."
    const auto sep = line.find(" - cgroup2 ");
    if (sep == std::string::npos) continue;
    std::istringstream ls(line.substr(0, sep));
    std::string f[5];
    for (auto& x : f) ls >> x;
    if (f[3] == "/") return f[4];
  }
  return {};
}

PodCgroup::PodCgroup(const std::string& pod_uid, const std::string& container_id, QosClass qos) {
  const std::string root = cgroup2_root();
  if (root.empty()) {
    error_ = "no cgroup v2 mount in /proc/self/mountinfo";
    return;
  }
  std::string uid_part = pod_uid;  // the systemd driver writes the uid's dashes as '_'
  for (char& c : uid_part)
    if (c == '-') c = '_';
  std::vector<std::string> levels = {root + "/kubepods.slice"};
  if (qos == QosClass::kBestEffort) {
    levels.push_back(levels.back() + "/kubepods-besteffort.slice");
    levels.push_back(levels.back() + "/kubepods-besteffort-pod" + uid_part + ".slice");
  } else {
    levels.push_back(levels.back() + "/kubepods-pod" + uid_part + ".slice");
  }
  levels.push_back(levels.back() + "/cri-containerd-" + container_id + ".scope");
  for (const std::string& l : levels) {
    if (::mkdir(l.c_str(), 0755) == 0) {
      created_.push_back(l);
    } else if (errno != EEXIST) {
      error_ = "cannot create " + l + ": " + std::strerror(errno);
      return;
    }
  }
  scope_ = levels.back();
  struct stat st {};
  if (::stat(scope_.c_str(), &st) == 0) {
    id_ = st.st_ino;
  } else {
    error_ = "cannot stat " + scope_ + ": " + std::strerror(errno);
  }
}

PodCgroup::~PodCgroup() {
  using namespace std::chrono_literals;
  for (auto it = created_.rbegin(); it != created_.rend(); ++it) {
    // A process that just exited may still be on its way out: retry briefly.
    for (int i = 0; i < 50 && ::rmdir(it->c_str()) != 0 && errno == EBUSY; ++i) std::this_thread::sleep_for(20ms);
  }
}

}  // namespace vigil::support
